"""What the commands do with a graph (an ``optplan-graph`` file): plan its given order or choose
one (``--reorder``), check a plan under its order and reuses, bound every order, write an
extracted graph. Imported only when the file read is a graph."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from optplan.cli.output import EXIT_NO_PLAN, EXIT_OK, say
from optplan.cli.report import num, report_verdict

if TYPE_CHECKING:
    from optplan.core.bounds import Bounds
    from optplan.core.plan import Plan
    from optplan.core.problem import Problem
    from optplan.graph.model import Graph


def solve(args: argparse.Namespace, graph: Graph, options: dict) -> tuple[Problem, Plan, dict]:
    """Plan a graph (its given order, or ``--reorder``); the plan file and ``--json`` carry the
    order and the reuses taken."""
    from optplan.formats import write_graph_plan
    from optplan.formats.graph_json import graph_plan_to_dict
    from optplan.graph.planner import solve_graph

    gp = solve_graph(graph, args.planner, reorder=args.reorder, reuse=args.reuse, **options)
    if args.output and gp.found:
        write_graph_plan(gp, args.output, times=not args.deterministic)
    return gp.problem or graph.base, gp.plan, graph_plan_to_dict(gp)


def validate(args: argparse.Namespace, graph: Graph) -> int:
    """A graph's plan: its order (default: the given one), the reuses it takes, its placements."""
    from optplan.formats import read_plan_file
    from optplan.formats.graph_json import order_and_reuses, plan_problem
    from optplan.graph.bounds import order_bound
    from optplan.graph.loads import Loads

    placements, doc = read_plan_file(args.plan, graph.base)
    problem, violations = plan_problem(graph, doc, args.plan, placements)
    order, reuses = order_and_reuses(graph, doc or {}, args.plan)
    valid = report_verdict(args, problem, placements, violations,
                           lambda: order_bound(graph, graph.order_of(order), Loads(graph.structure)).lower,
                           "lower bound in this order", f"VALID ({len(order)} ops in order, {len(reuses)} reuse(s))")
    return EXIT_OK if valid else EXIT_NO_PLAN


def bounds(args: argparse.Namespace, graph: Graph, like: Bounds) -> Bounds:
    """The bounds of the given order with any reuses it allows (as ``like``'s type); the bound over
    every order is printed first (not in ``--json``)."""
    from optplan.graph.bounds import graph_bounds

    given, every = graph_bounds(graph)
    if not args.json:
        say(f"any order: {', '.join(f'{m} {num(v)}' for m, v in every.lower.items())}"
            + (f" (at {every.at})" if every.at else ""))
    source = {m: "live load in the given order" if v else "no buffer must be here" for m, v in given.lower.items()}
    return type(like)(given.lower, {m: None for m in given.lower}, given.infeasible, source)


def write(args: argparse.Namespace, graph: Graph) -> int:
    """``extract --graph``: the graph, in the memories of ``--memory``."""
    from optplan.formats import write_graph
    from optplan.formats.memspec import parse_memories

    if args.memory:
        graph = graph.with_memories(parse_memories(args.memory))
    write_graph(graph, args.output)
    say(f"{len(graph.ops)} ops, {len(graph.tensors)} tensors, {len(graph.candidates)} possible reuses "
        f"written to {args.output}")
    return EXIT_OK
