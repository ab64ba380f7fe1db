"""The plan report of ``solve`` and ``import-solution``: a table per memory and the objective in words,
or the proof of infeasibility; or the plan as one JSON object."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from optplan.cli.output import console, say

if TYPE_CHECKING:
    from rich.table import Table

    from optplan.core.placement import Placement
    from optplan.core.plan import Plan
    from optplan.core.problem import Problem
    from optplan.report.summary import MemoryRow


def num(n: int | None) -> str:
    """Bytes with thousands separators; None is a memory without a capacity."""
    return "unbounded" if n is None else f"{n:,}"


def plan_table(problem: Problem, plan: Plan, rows: list[MemoryRow]) -> Table:
    from rich import box
    from rich.table import Table

    from optplan.report.summary import percent

    t = Table(title=f"{plan.planner}: {plan.status.value} in {plan.seconds:.2f} s", title_justify="left", box=box.SIMPLE_HEAD)
    two, gap = len(problem.memories) > 1, plan.objective.optimizes  # feasible: no quantity, so no gap
    cols = ("memory", "capacity", "peak", "lower bound") + (("gap",) if gap else ()) + ("step of peak", "buffers") + (
        ("bytes", "benefit") if two else ())
    for col in cols:
        t.add_column(col, justify="left" if col == "memory" else "right", no_wrap=True)
    for r in rows:
        t.add_row(r.name, num(r.capacity), num(r.peak), num(r.bound), *((percent(r.gap),) if gap else ()),
                  "-" if r.step is None else f"{r.step:,}", f"{r.buffers:,}", *((num(r.bytes), num(r.benefit)) if two else ()))
    return t


def print_plan(problem: Problem, plan: Plan) -> None:
    """The report: the per-memory table and the objective in words, or the proof of infeasibility."""
    from optplan.core.plan import Status
    from optplan.report.summary import gap_words, memory_rows, objective_words

    if plan.status is Status.INFEASIBLE:  # the message names the memory (registry.infeasible_words)
        say(f"{plan.planner}: INFEASIBLE in {plan.seconds:.2f} s: {plan.message or 'proven infeasible'}")
        return
    if not plan.found:
        say(f"{plan.planner}: {plan.status.value} in {plan.seconds:.2f} s: {plan.message or 'no plan found'}")
        return
    rows = memory_rows(problem, plan)
    console().print(plan_table(problem, plan, rows))
    if plan.message:
        say(plan.message)
    gap = "" if plan.gap is None and plan.gap_of is None else f" ({gap_words(problem, plan)})"
    say(objective_words(problem, plan, rows) + gap)


def print_json(plan: Plan, problem: Problem | None = None) -> None:
    """The plan as one JSON object; without a plan, each memory of ``problem`` has a null peak
    (and a null bound where no plan can exist), never 0."""
    from optplan.formats.native_json import plan_to_dict, plan_to_json

    head = with_nulls(plan_to_dict(plan, placements=False), plan, problem)
    say(plan_to_json(plan, pretty=False, doc=head)[:-1])


def with_nulls(doc: dict, plan: Plan, problem: Problem | None) -> dict:
    """``doc`` (a plan object) with a null peak for every memory of ``problem`` that has none (no
    plan), and a null bound where no plan can exist: never 0, never a missing memory."""
    if problem is not None:
        for key, values in (("peak", plan.peak), ("lower_bound", plan.lower_bound)):
            doc[key] = {m: values.get(m) for m in problem.memory_names}
    return doc


def report_plan(args: argparse.Namespace, problem: Problem, plan: Plan, doc: dict | None = None) -> None:
    """``solve``'s output: the plan as JSON (``--json``; ``doc`` where a graph's plan carries its
    order) or the report, and where it was written."""
    if args.json:
        if doc is not None:
            say(json.dumps(with_nulls(doc, plan, problem)))
        else:
            print_json(plan, problem)
    else:
        print_plan(problem, plan)
        if args.output and plan.found:
            say(f"plan written to {args.output}")


def report_verdict(args: argparse.Namespace, problem: Problem, placements: Mapping[str, Placement],
                   violations: Sequence[object], bound: Callable[[], Mapping[str, int]], bound_words: str = "lower bound",
                   valid: str = "VALID") -> bool:
    """``validate``'s output for a problem or a graph: JSON, the violations, or each memory's peak
    beside its lower bound (``bound``: computed only for a valid plan) and ``valid``; True if valid."""
    from optplan.core.plan import peaks

    if args.json:
        say(json.dumps({"valid": not violations, "violations": [str(v) for v in violations],
                        "peak": peaks(problem, placements) if not violations else None}))
    elif violations:
        for v in violations:
            say(str(v))
        say(f"INVALID: {len(violations)} violation(s)")
    else:
        lower = bound()
        for m, peak in peaks(problem, placements).items():
            say(f"{m}: peak {num(peak)}, {bound_words} {num(lower[m])}")
        say(valid)
    return not violations
