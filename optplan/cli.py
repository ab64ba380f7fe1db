"""The ``optplan`` command.

Exit codes: 0 a valid plan was found (or the checked plan is valid), 1 infeasible / no plan /
invalid plan, 2 bad input or usage. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from rich import box
from rich.console import Console
from rich.table import Table

from optplan import registry
from optplan.core.bounds import lower_bounds, peak_load
from optplan.core.deadline import Deadline
from optplan.core.errors import OptplanError, PlannerBug
from optplan.core.lifecycle import interruptible
from optplan.core.objective import Objective
from optplan.core.plan import Plan, Status, peaks
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.formats import check_output, read_input, read_placements, read_problem, write_plan, write_problem
from optplan.formats.memspec import parse_memories
from optplan.formats.native_json import plan_to_dict
from optplan.graph.model import Graph
from optplan.report.summary import MemoryRow, gap_words, infeasible_proof, memory_rows, objective_words, percent

EXIT_OK, EXIT_NO_PLAN, EXIT_USAGE = 0, 1, 2

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)
if not out.is_terminal:  # logs and pipes: never truncate a column
    out.width = 200


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        err.print(f"{self.prog}: error: {message} (see {self.prog} --help)", markup=False)
        raise SystemExit(EXIT_USAGE)


def _option(name: str, parse: type[int] | type[float], seconds: bool = False) -> Callable[[str], object]:
    """An argparse type: the value is parsed, then checked as ``optplan.solve`` checks it
    (``seconds``: a time limit, which on the command line must be more than 0)."""
    def convert(text: str) -> object:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if parse is int else 'a number'}: {text!r}") from None
        why = registry.option_error(name, value)
        if seconds and not (math.isfinite(value) and value > 0):
            why = "must be a finite number of seconds > 0"
        if why:
            raise argparse.ArgumentTypeError(f"{why}, got {text!r}")
        return value
    return convert


def _bytes(n: int | None) -> str:
    return "unbounded" if n is None else f"{n:,}"


def _capped(problem: Problem, capacity: int) -> Problem:
    if capacity < 0:
        raise OptplanError(f"--capacity must be >= 0, got {capacity}")
    return problem.with_capacity(capacity)


def _load(args: argparse.Namespace) -> Problem:
    """The problem (a graph's: under its given order, no reuse taken)."""
    found = _load_input(args)
    return found.base if isinstance(found, Graph) else found


def _load_input(args: argparse.Namespace) -> Problem | Graph:
    """The problem or graph, in the memories of ``--memory``, capped by ``--capacity``."""
    found: Problem | Graph = read_input(args.problem)
    if getattr(args, "memory", None):
        found = found.with_memories(parse_memories(args.memory))
    if getattr(args, "capacity", None) is not None:
        if args.capacity < 0:
            raise OptplanError(f"--capacity must be >= 0, got {args.capacity}")
        found = found.with_capacity(args.capacity)
    if getattr(args, "output", None):  # what the problem decides (CSV: one memory), before any solve
        relative = isinstance(found, Problem) and bool(found.relative)
        check_output(args.output, args.output_kind, len(found.memories), relative)
        if isinstance(found, Graph) and args.output_kind == "plan" and Path(args.output).suffix.lower() == ".csv":
            raise OptplanError(f"{args.output}: a graph's plan carries its order: write it as .json")
    return found


def _hierarchy(problem: Problem, args: argparse.Namespace) -> Problem:
    """The problem in the memories of ``--memory`` (if given)."""
    if not getattr(args, "memory", None):
        return problem
    return problem.with_memories(parse_memories(args.memory))


def _plan_table(problem: Problem, plan: Plan, rows: list[MemoryRow]) -> Table:
    t = Table(title=f"{plan.planner}: {plan.status.value} in {plan.seconds:.2f} s", title_justify="left", box=box.SIMPLE_HEAD)
    two = len(problem.memories) > 1
    cols = ("memory", "capacity", "peak", "lower bound", "gap", "step of peak", "buffers") + (("bytes", "benefit") if two else ())
    for col in cols:
        t.add_column(col, justify="left" if col == "memory" else "right", no_wrap=True)
    for r in rows:
        t.add_row(r.name, _bytes(r.capacity), _bytes(r.peak), _bytes(r.bound), percent(r.gap),
                  "-" if r.step is None else str(r.step), str(r.buffers), *((_bytes(r.bytes), _bytes(r.benefit)) if two else ()))
    return t


def _print_plan(problem: Problem, plan: Plan) -> None:
    """The report: the per-memory table and the objective in words, or the proof of infeasibility."""
    if plan.status is Status.INFEASIBLE:
        out.print(f"{plan.planner}: INFEASIBLE in {plan.seconds:.2f} s: {infeasible_proof(problem, plan)}", markup=False)
        return
    if not plan.found:
        out.print(f"{plan.planner}: {plan.status.value} in {plan.seconds:.2f} s: {plan.message or 'no plan found'}", markup=False)
        return
    rows = memory_rows(problem, plan)
    out.print(_plan_table(problem, plan, rows))
    if plan.message:
        out.print(plan.message, markup=False)
    gap = "" if plan.gap is None and plan.gap_of is None else f" ({gap_words(problem, plan)})"
    out.print(objective_words(problem, plan, rows) + gap, markup=False)


def _progress_printer() -> tuple[Callable[[dict], None] | None, Callable[[], None]]:
    """Best, bound, gap and a ticking elapsed time: a live line on a terminal, plain lines elsewhere."""
    from optplan.report.progress import SolveProgress

    progress = SolveProgress(err)
    return progress, progress.stop


def _deadline(args: argparse.Namespace) -> Deadline:
    """The run's one Deadline, made before the problem is read: reading counts against the limit."""
    try:
        return Deadline(args.time_limit, getattr(args, "deterministic", False))
    except ValueError as e:
        raise OptplanError(f"--time-limit: {e}") from None


def cmd_solve(args: argparse.Namespace) -> int:
    deadline = _deadline(args)
    with interruptible(deadline) as signals:
        found = _load_input(args)
        if not isinstance(found, Graph) and (args.reorder or not args.reuse):
            raise OptplanError("--reorder and --no-reuse apply to graphs (optplan-graph files)")
        signals.solving = True  # from here a signal stops the planners, and their best plan is kept
        progress, stop = _progress_printer() if not args.json else (None, lambda: None)
        options = dict(deadline=deadline, workers=args.workers, seed=args.seed, objective=args.objective, progress=progress)
        try:
            if isinstance(found, Graph):
                problem, plan, extra = _solve_graph(args, found, options)
            else:
                problem, extra = found, None
                plan = registry.solve(problem, args.planner, **options)  # type: ignore[arg-type]
        finally:
            stop()
        if args.output and plan.found and extra is None:
            write_plan(problem, plan, args.output)
    _report_plan(args, problem, plan, extra)
    if signals.exit_code is not None:
        err.print("optplan: interrupted" + (f"; the best plan found is in {args.output}" if args.output and plan.found
                                            else ""), markup=False)
        return signals.exit_code
    return EXIT_OK if plan.found else EXIT_NO_PLAN


def _solve_graph(args: argparse.Namespace, graph: Graph, options: dict) -> tuple[Problem, Plan, dict]:
    """Plan a graph (its given order, or ``--reorder``); the plan file and ``--json`` carry the
    order and the reuses taken."""
    from optplan.formats import write_graph_plan
    from optplan.formats.graph_json import graph_plan_to_dict
    from optplan.graph.planner import solve_graph

    gp = solve_graph(graph, args.planner, reorder=args.reorder, reuse=args.reuse, **options)
    if args.output and gp.found:
        write_graph_plan(gp, args.output)
    return gp.problem or graph.base, gp.plan, graph_plan_to_dict(gp)


def _report_plan(args: argparse.Namespace, problem: Problem, plan: Plan, doc: dict | None = None) -> None:
    if args.json:
        out.print(json.dumps(doc if doc is not None else plan_to_dict(plan)), markup=False)
    else:
        _print_plan(problem, plan)
        if args.output and plan.found:
            out.print(f"plan written to {args.output}", markup=False)


def cmd_validate(args: argparse.Namespace) -> int:
    found = _load_input(args)  # --capacity: check a plan for MiniMalloc's fixed-capacity problems
    if isinstance(found, Graph):
        return _validate_graph(args, found)
    problem = found
    placements = read_placements(args.plan, problem)
    violations = validate(problem, placements)
    if args.json:
        out.print(json.dumps({"valid": not violations, "violations": [str(v) for v in violations],
                              "peak": peaks(problem, placements) if not violations else None}), markup=False)
    elif violations:
        for v in violations:
            out.print(str(v), markup=False)
        out.print(f"INVALID: {len(violations)} violation(s)")
    else:
        bounds = lower_bounds(problem)
        for m, peak in peaks(problem, placements).items():
            out.print(f"{m}: peak {_bytes(peak)}, lower bound {_bytes(bounds.lower[m])}", markup=False)
        out.print("VALID")
    return EXIT_NO_PLAN if violations else EXIT_OK


def _validate_graph(args: argparse.Namespace, graph: Graph) -> int:
    """A graph's plan: its order (default: the given one), the reuses it takes, its placements."""
    from optplan.formats import read_plan_file
    from optplan.formats.graph_json import order_and_reuses, plan_problem
    from optplan.graph.bounds import order_bound
    from optplan.graph.loads import Loads

    placements, doc = read_plan_file(args.plan, graph.base)
    problem, violations = plan_problem(graph, doc, args.plan, placements)
    order, reuses = order_and_reuses(graph, doc or {}, args.plan)
    if args.json:
        out.print(json.dumps({"valid": not violations, "violations": [str(v) for v in violations],
                              "peak": peaks(problem, placements) if not violations else None}), markup=False)
    elif violations:
        for v in violations:
            out.print(str(v), markup=False)
        out.print(f"INVALID: {len(violations)} violation(s)")
    else:
        bound = order_bound(graph, graph.order_of(order), Loads(graph.structure)).lower
        for m, peak in peaks(problem, placements).items():
            out.print(f"{m}: peak {_bytes(peak)}, lower bound in this order {_bytes(bound[m])}", markup=False)
        out.print(f"VALID ({len(order)} ops in order, {len(reuses)} reuse(s))")
    return EXIT_NO_PLAN if violations else EXIT_OK


def cmd_bounds(args: argparse.Namespace) -> int:
    found = _load_input(args)
    problem = found.base if isinstance(found, Graph) else found
    b = lower_bounds(problem)
    if isinstance(found, Graph):  # the given order with any reuses it allows; and every order
        from optplan.graph.bounds import graph_bounds

        given, every = graph_bounds(found)
        b = type(b)(given.lower, {m: None for m in given.lower}, given.infeasible)
        if not args.json:
            out.print(f"any order: {', '.join(f'{m} {_bytes(v)}' for m, v in every.lower.items())}"
                      + (f" (at {every.at})" if every.at else ""), markup=False)
    if args.json:
        out.print(json.dumps({"lower_bound": b.lower, "step": b.step, "infeasible": b.infeasible}), markup=False)
    else:
        t = Table(box=box.SIMPLE_HEAD)
        for col in ("memory", "capacity", "lower bound", "at step"):
            t.add_column(col, justify="left" if col == "memory" else "right", no_wrap=True)
        for m in problem.memories:
            step = b.step[m.name]
            t.add_row(m.name, _bytes(m.capacity), _bytes(b.lower[m.name]), "-" if step is None else str(step))
        out.print(t)
        if b.infeasible:
            out.print(f"INFEASIBLE: {b.infeasible}", markup=False)
    return EXIT_NO_PLAN if b.infeasible else EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    import numpy as np

    problem = _load(args)
    bufs = problem.buffers
    rects = [r for b in bufs for r in b.footprint()]  # bytes in use over time: gaps excluded
    start, end = (np.array([r[k] for r in rects], np.int64) for k in (0, 1))
    load, step = peak_load(start, end, np.array([r[3] - r[2] for r in rects], np.int64))
    if problem.concurrent:  # vector clocks: the heaviest set of pairwise concurrent buffers
        from optplan.core.clocks import clique_bound

        load, step = clique_bound(problem, [u.root for u in problem.units])[0], None
    lo, hi = problem.time_span
    info = {
        "buffers": len(bufs), "streams": problem.streams, "time_span": [lo, hi], "total_bytes": sum(b.size for b in bufs),
        "peak_live_load": load, "peak_step": step, "largest_buffer": max((b.size for b in bufs), default=0),
        "zero_size_buffers": sum(b.size == 0 for b in bufs),
        "fixed_buffers": sum(b.fixed_offset is not None or b.fixed_memory is not None for b in bufs),
        "buffers_with_gaps": sum(bool(b.gaps) for b in bufs),
        "relative_placements": len(problem.relative),
        "memories": [{"name": m.name, "capacity": m.capacity, "alignment": m.alignment} for m in problem.memories],
    }
    if args.json:
        out.print(json.dumps(info), markup=False)
        return EXIT_OK
    for k, v in info.items():
        if k != "memories":
            out.print(f"{k.replace('_', ' ')}: {_bytes(v) if isinstance(v, int) else v}", markup=False)
    t = Table(box=box.SIMPLE_HEAD)
    for col in ("memory", "capacity", "alignment"):
        t.add_column(col, justify="left" if col == "memory" else "right")
    for m in problem.memories:
        t.add_row(m.name, _bytes(m.capacity), str(m.alignment))
    out.print(t)
    return EXIT_OK


def cmd_convert(args: argparse.Namespace) -> int:
    problem = _hierarchy(read_problem(args.input), args)
    check_output(args.output, "problem", len(problem.memories), bool(problem.relative))
    write_problem(problem, args.output)
    return EXIT_OK


def cmd_extract(args: argparse.Namespace) -> int:
    source = str(args.program)
    if source.endswith(".onnx"):
        problem = _extract_onnx(args)
    elif args.dim or args.include_weights or not args.views_alias:
        raise OptplanError("--dim, --include-weights and --view-copies apply to .onnx models only")
    elif ".py:" in source:
        problem = _extract_module(args)
    elif args.training:
        raise OptplanError("--training needs a module given as path.py:factory")
    else:
        problem = _extract_torch(args)
    if isinstance(problem, Graph):
        return _write_graph(args, problem)
    problem = _hierarchy(problem, args)
    check_output(args.output, "problem", len(problem.memories), bool(problem.relative))
    write_problem(problem, args.output)
    out.print(f"{len(problem.buffers)} buffers over {problem.metadata['steps']} steps written to {args.output}", markup=False)
    return EXIT_OK


def _write_graph(args: argparse.Namespace, graph: Graph) -> int:
    from optplan.formats import write_graph

    if args.memory:
        graph = graph.with_memories(parse_memories(args.memory))
    write_graph(graph, args.output)
    out.print(f"{len(graph.ops)} ops, {len(graph.tensors)} tensors, {len(graph.candidates)} possible reuses "
              f"written to {args.output}", markup=False)
    return EXIT_OK


def _extract_torch(args: argparse.Namespace) -> Problem | Graph:
    _extract_torch_available()
    from optplan.frontends.torch_export import extract
    from optplan.frontends.torch_graph import extract_graph

    return (extract_graph if args.graph else extract)(args.program, plan_inputs=args.plan_inputs,
                                                      plan_outputs=args.plan_outputs, alignment=args.alignment)


def _extract_module(args: argparse.Namespace) -> Problem | Graph:
    """``path.py:factory`` returning (model, example_inputs[, loss]): one training step with
    ``--training``, else the inference program through torch.export."""
    _extract_torch_available()
    import torch

    from optplan.frontends.torch_export import problem_from_program
    from optplan.frontends.torch_graph import graph_from_program
    from optplan.frontends.training import extract_training, load_factory

    model, inputs, *loss = load_factory(args.program)
    name = Path(args.program.rpartition(":")[0]).stem
    if args.training:
        return extract_training(model, tuple(inputs), loss[0] if loss else None, plan_inputs=args.plan_inputs,
                                alignment=args.alignment, name=name, graph=args.graph)
    with torch.no_grad():
        ep = torch.export.export(model.eval(), tuple(inputs))
    return (graph_from_program if args.graph else problem_from_program)(
        ep, plan_inputs=args.plan_inputs, plan_outputs=args.plan_outputs, alignment=args.alignment, name=name)


def _extract_torch_available() -> None:
    try:
        import torch  # noqa: F401 - an optional extra
    except ImportError as e:
        raise OptplanError(f"extract needs torch: pip install 'optplan[torch]' ({e})") from None


def _extract_onnx(args: argparse.Namespace) -> Problem | Graph:
    try:
        import onnx  # noqa: F401 - an optional extra
    except ImportError as e:
        raise OptplanError(f"extracting an ONNX model needs onnx: pip install 'optplan[onnx]' ({e})") from None
    from optplan.frontends.onnx_model import extract_onnx

    dims: dict[str, int] = {}
    for item in args.dim:
        key, sep, value = item.partition("=")
        if not sep or not key or not value.strip().isdigit():
            raise OptplanError(f"--dim {item}: expected name=value with a non-negative integer value")
        dims[key] = int(value)
    return extract_onnx(args.program, dims=dims, include_weights=args.include_weights, views_alias=args.views_alias,
                        plan_inputs=args.plan_inputs, plan_outputs=args.plan_outputs, alignment=args.alignment, graph=args.graph)


def cmd_compare(args: argparse.Namespace) -> int:
    from optplan.study.command import compare_command

    return compare_command(args, out, lambda p: (lambda h: h if args.capacity is None else _capped(h, args.capacity))(
        _hierarchy(p, args)))


def cmd_study(args: argparse.Namespace) -> int:
    from optplan.study.command import memories_from_specs, study_command

    args.memories = memories_from_specs(args.memory)
    return study_command(args, out, err)


def cmd_plot(args: argparse.Namespace) -> int:
    from optplan.study.command import plot_command

    return plot_command(args, out)


def cmd_export_model(args: argparse.Namespace) -> int:
    from optplan.formats.lp_io import export_model

    info = export_model(_load(args), args.output, args.objective)
    out.print(f"model written to {args.output}: {info.variables} variables ({info.binaries} binary, "
              f"{info.integers} integer), {info.constraints} constraints; offsets o_<i> in units of "
              f"{info.scale} bytes", markup=False)
    return EXIT_OK


def cmd_import_solution(args: argparse.Namespace) -> int:
    from optplan.formats.lp_io import import_solution

    problem = _load(args)
    plan = import_solution(problem, args.solution)
    write_plan(problem, plan, args.output)
    if args.json:
        out.print(json.dumps(plan_to_dict(plan)), markup=False)
    else:
        out.print(_plan_table(problem, plan, memory_rows(problem, plan)))
        out.print(f"{plan.message}; plan written to {args.output}", markup=False)
    return EXIT_OK


def _objective_arg(s: argparse.ArgumentParser) -> None:
    s.add_argument("--objective", choices=Objective.NAMES, default=None,
                   help="min-peak: minimize the peaks, slowest memory first; weighted: the weighted sum of "
                        "the peaks; feasible: any plan within the capacities (default: min-peak)")


def _graph_args(s: argparse.ArgumentParser) -> None:
    s.add_argument("--reorder", action="store_true", help="graphs: choose the order of the ops too (default: the given order)")
    s.add_argument("--reuse", action=argparse.BooleanOptionalAction, default=True,
                   help="graphs: let an op write an output into an input it reads last, where it declares so (default: yes)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="optplan", description="Optimal static memory plans for machine-learning models.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def problem_arg(s: argparse.ArgumentParser, capacity: bool = True) -> None:
        s.add_argument("problem", help="problem file: .csv (MiniMalloc) or .json (optplan problem or graph)")
        if capacity:
            s.add_argument("--capacity", type=int, help="cap a single-memory problem at N bytes")
            memory_arg(s)

    def memory_arg(s: argparse.ArgumentParser) -> None:
        s.add_argument("--memory", action="append", metavar="NAME[:SIZE][:align=N]",
                       help="declare a memory, fastest first (repeat): e.g. --memory sram:4KiB:align=64 "
                            "--memory dram; replaces the problem's memories")

    s = sub.add_parser("solve", help="plan a problem")
    problem_arg(s)
    s.add_argument("-o", "--output", help="write the plan: .json (optplan) or .csv (MiniMalloc, one memory)")
    s.add_argument("--planner", default="auto", help="planner name (see `optplan planners`); default: auto")
    s.add_argument("--time-limit", type=_option("time_limit", float, seconds=True), default=None,
                   help="seconds (finite, > 0), model building included")
    s.add_argument("--workers", type=_option("workers", int), default=None, help="solver threads (1 to 1024)")
    s.add_argument("--seed", type=_option("seed", int), default=None, help="random seed (0 to 2^31-1)")
    s.add_argument("--deterministic", action="store_true",
                   help="repeatable results: solver time in deterministic units, every heuristic run")
    _objective_arg(s)
    s.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    _graph_args(s)
    s.set_defaults(run=cmd_solve, output_kind="plan")

    s = sub.add_parser("validate", help="check a plan against a problem")
    problem_arg(s)
    s.add_argument("plan", help="plan file: .json or .csv (id,lower,upper,size,offset)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=cmd_validate)

    s = sub.add_parser("bounds", help="lower bounds per memory, or a proof of infeasibility")
    problem_arg(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=cmd_bounds)

    s = sub.add_parser("info", help="buffers, time span, peak live load, memories")
    problem_arg(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=cmd_info)

    s = sub.add_parser("convert", help="convert a problem between .csv and .json")
    s.add_argument("input")
    s.add_argument("output")
    memory_arg(s)
    s.set_defaults(run=cmd_convert, output_kind="problem")

    s = sub.add_parser("extract", help="buffers and lifetimes of a torch.export program (.pt2) or an ONNX model (.onnx)")
    s.add_argument("program", help="a saved ExportedProgram (.pt2, torch.export.save), an ONNX model (.onnx), or path.py:factory "
                   "(a function returning (model, example_inputs[, loss]))")
    s.add_argument("-o", "--output", required=True, help="problem file: .json or .csv")
    s.add_argument("--plan-inputs", action=argparse.BooleanOptionalAction, default=True,
                   help="plan user inputs (default: yes, as ExecuTorch)")
    s.add_argument("--plan-outputs", action=argparse.BooleanOptionalAction, default=True,
                   help="plan user outputs (default: yes, as ExecuTorch)")
    s.add_argument("--alignment", type=int, default=16, help="offset alignment in bytes (default 16, ExecuTorch's)")
    s.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="ONNX: the value of a dynamic input dimension (repeatable); every one must be given")
    s.add_argument("--include-weights", action="store_true", help="ONNX: plan initializers and constants (default: not planned)")
    s.add_argument("--training", action="store_true",
                   help="path.py:factory only: one training step (forward, backward, SGD step) instead of inference")
    s.add_argument("--view-copies", dest="views_alias", action="store_false",
                   help="ONNX: Reshape, Flatten, Squeeze, Unsqueeze and Identity copy (default: they alias their input)")
    s.add_argument("--graph", action="store_true", help="write the graph (ops and tensors, .json) instead of the problem of its order")
    memory_arg(s)
    s.set_defaults(run=cmd_extract, output_kind="problem")

    s = sub.add_parser("compare", help="run every heuristic on problems and rank them by peak")
    s.add_argument("paths", nargs="+", metavar="PATH", help="problem files, or directories of .json/.csv problems")
    s.add_argument("--capacity", type=int, help="cap single-memory problems at N bytes")
    memory_arg(s)
    s.add_argument("--planners", help="comma-separated planner names (default: all heuristics)")
    s.add_argument("--time-limit", type=_option("time_limit", float, seconds=True), default=None,
                   help="seconds for all planners together, reading included; each takes a share of what is left")
    s.add_argument("--seed", type=_option("seed", int), default=None)
    s.add_argument("--json", action="store_true", help="print a JSON list, one plan object per run")
    s.set_defaults(run=cmd_compare)

    s = sub.add_parser("study", help="every planner on every problem: runs.csv, summary.md and plots in a directory")
    s.add_argument("paths", nargs="+", metavar="PATH", help="problem files, or directories of .json/.csv problems")
    s.add_argument("-o", "--output", dest="out_dir", required=True, metavar="DIR", help="directory for runs.csv, summary.md, plots")
    s.add_argument("--planners", help="comma-separated planner names (default: every heuristic and auto)")
    s.add_argument("--time-limit", type=_option("time_limit", float, seconds=True), default=60.0,
                   help="seconds per run (default 60)")
    s.add_argument("--memory", action="append", metavar="SPEC",
                   help="replace every problem's memories: NAME[:CAPACITY][:align=N], fastest first, repeatable")
    s.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="local process pool (default) or dask.distributed (pip install 'optplan[dask]')")
    s.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler, e.g. tcp://host:8786 (default: a LocalCluster)")
    s.add_argument("--jobs", type=int, default=None, help="runs at a time (default: one per core)")
    s.add_argument("--workers", type=_option("workers", int), default=1, help="solver threads of each run (default 1)")
    s.set_defaults(run=cmd_study)

    s = sub.add_parser("plot", help="draw a plan (time x address per memory) to PNG/SVG/PDF/HTML")
    problem_arg(s, capacity=False)
    s.add_argument("plan", help="plan file: .json or .csv")
    s.add_argument("-o", "--output", required=True, help="picture file: .png, .svg, .pdf or .html (hover: id, size, lifetime, offset)")
    s.add_argument("--width", type=int, default=1600, help="picture width in pixels (default 1600)")
    s.add_argument("--dpi", type=int, default=100, help="dots per inch (default 100)")
    s.set_defaults(run=cmd_plot, output_kind="picture")

    s = sub.add_parser("export-model", help="write the MILP model (.lp or .mps) for Gurobi, CPLEX or any MIP solver")
    problem_arg(s)
    s.add_argument("-o", "--output", required=True, help="model file: .lp (CPLEX LP format) or .mps")
    _objective_arg(s)
    s.set_defaults(run=cmd_export_model, output_kind="model")

    s = sub.add_parser("import-solution", help="validate a MIP solver's solution of export-model's model and write the plan")
    problem_arg(s)
    s.add_argument("solution", help="solution file: Gurobi .sol or 'name value' lines")
    s.add_argument("-o", "--output", required=True, help="plan file: .json or .csv")
    s.add_argument("--json", action="store_true", help="print the plan as JSON instead of a table")
    s.set_defaults(run=cmd_import_solution, output_kind="plan")

    s = sub.add_parser("planners", help="list the registered planners")
    s.set_defaults(run=cmd_planners)

    s = sub.add_parser("warmup", help="compile the numba kernels into numba's on-disk cache (once after an install)")
    s.set_defaults(run=cmd_warmup)
    return p


def cmd_planners(args: argparse.Namespace) -> int:
    out.print("\n".join(registry.names()), markup=False)
    return EXIT_OK


def cmd_warmup(args: argparse.Namespace) -> int:
    from optplan.core import jit
    from optplan.warmup import warm

    for group, seconds in warm().items():
        out.print(f"{group}: {'compiled' if jit.compiled(group) else 'NOT compiled'} in {seconds:.1f} s", markup=False)
    out.print(f"numba's cache: {jit.cache_dir()}", markup=False)
    return EXIT_OK if all(jit.compiled(g) for g in jit.GROUPS) else EXIT_NO_PLAN


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # a study records how it was started
    try:
        if getattr(args, "output", None):  # a bad output path fails now, not after the work
            check_output(args.output, args.output_kind)
        return args.run(args)
    except OptplanError as e:
        err.print(f"optplan: error: {e}", markup=False)
        return EXIT_USAGE
    except PlannerBug as e:
        err.print(f"optplan: internal error: {e}", markup=False)
        return EXIT_NO_PLAN
    except KeyboardInterrupt as e:  # before the solve started (reading): nothing to keep
        err.print("optplan: interrupted", markup=False)
        return getattr(e, "code", 130)


if __name__ == "__main__":
    sys.exit(main())
