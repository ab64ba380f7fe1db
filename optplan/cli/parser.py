"""The command line's grammar: one function per command adds its arguments. Building the parser
imports no planner (``optplan --help`` starts at once); a value is checked when it is parsed."""

from __future__ import annotations

import argparse
import math
import textwrap
from collections.abc import Callable, Sequence
from typing import NoReturn

import optplan
from optplan.cli import commands
from optplan.cli.extract import extract
from optplan.cli.output import EXIT_USAGE, warn


class _Formatter(argparse.HelpFormatter):
    """argparse's help, but a line break in a help text starts a new line (one objective a line)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return [line for para in text.splitlines() for line in (textwrap.wrap(para, width) or [""])]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        warn(f"{self.prog}: error: {message} (see {self.prog} --help)")
        raise SystemExit(EXIT_USAGE)


def _option(name: str, parse: type[int] | type[float], seconds: bool = False) -> Callable[[str], object]:
    """An argparse type: the value is parsed, then checked as ``optplan.solve`` checks it
    (``seconds``: a time limit, which on the command line must be more than 0)."""
    def convert(text: str) -> object:
        from optplan import registry

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


def _problem_arg(s: argparse.ArgumentParser, capacity: bool = True) -> None:
    s.add_argument("problem", help="problem file: .csv (MiniMalloc) or .json (optplan problem or graph)")
    if capacity:
        s.add_argument("--capacity", type=int, help="cap a single-memory problem at N bytes (default: the problem's capacity)")
        _memory_arg(s)


MEMORY_SPEC = "NAME[:SIZE][:align=N][:weight=N][:base=N]"
MEMORY_HELP = ("declare a memory, fastest first (repeat); replaces the problem's memories. SIZE: bytes or "
               "a unit (KiB, MiB, GiB; KB, MB, GB), none: unbounded; align: offset alignment in bytes; "
               "weight: the weight of its peak in the weighted objective; base: its base address. "
               "E.g. --memory sram:4KiB:align=64 --memory dram (default: the problem's memories)")
OBJECTIVE_HELP = ("min-peak: the smallest peaks, slowest memory first (ties: the most benefit in faster memories)\n"
                  "fast-first: the most benefit (bytes by default) in the fastest memory, then the next; then the "
                  "smallest peaks\n"
                  "weighted: the smallest sum of the peaks times their weights (--memory ...:weight=N)\n"
                  "feasible: any plan within the capacities, nothing minimised\n"
                  "default: fast-first where a memory with a capacity has a slower memory behind it, else min-peak")
TIME_HELP = ("seconds (finite, > 0), reading and model building included. Default: no limit, the "
             "planner runs until its plan is proven optimal (which may take hours); Ctrl-C stops it and "
             "keeps the best plan found")


def _memory_arg(s: argparse.ArgumentParser) -> None:
    s.add_argument("--memory", action="append", metavar=MEMORY_SPEC, help=MEMORY_HELP)


def _objective_arg(s: argparse.ArgumentParser) -> None:
    from optplan.core.objective import Objective

    s.add_argument("--objective", choices=Objective.NAMES, default=None, help=OBJECTIVE_HELP)


def _solve(s: argparse.ArgumentParser) -> None:
    _problem_arg(s)
    s.add_argument("-o", "--output", help="write the plan: .json (optplan) or .csv (MiniMalloc, one memory) "
                   "(default: not written)")
    s.add_argument("--planner", default="auto", help="planner name (see `optplan planners`; default: auto, "
                   "the portfolio of every planner)")
    s.add_argument("--time-limit", type=_option("time_limit", float, seconds=True), default=None, help=TIME_HELP)
    s.add_argument("--workers", type=_option("workers", int), default=None,
                   help="solver threads, 1 to 1024 (default: the planner's; auto: every core)")
    s.add_argument("--seed", type=_option("seed", int), default=None, help="random seed, 0 to 2^31-1 (default 0)")
    s.add_argument("--deterministic", action="store_true",
                   help="repeatable results: solver time in deterministic units, every heuristic run")
    _objective_arg(s)
    s.add_argument("--json", action="store_true", help="print one JSON object instead of tables (default: tables, "
                   "and progress on stderr)")
    s.add_argument("--reorder", action="store_true", help="graphs: choose the order of the ops too (default: the given order)")
    s.add_argument("--reuse", action=argparse.BooleanOptionalAction, default=True,
                   help="graphs: let an op write an output into an input it reads last, where it declares so (default: yes)")
    s.set_defaults(run=commands.solve, output_kind="plan")


def _validate(s: argparse.ArgumentParser) -> None:
    _problem_arg(s)
    s.add_argument("plan", help="plan file: .json or .csv (id,lower,upper,size,offset)")
    s.add_argument("--json", action="store_true", help="print one JSON object: valid, violations, peak")
    s.set_defaults(run=commands.validate)


def _bounds(s: argparse.ArgumentParser) -> None:
    _problem_arg(s)
    s.add_argument("--time-limit", type=_option("time_limit", float, seconds=True), default=None,
                   help="run auto for up to this many seconds and report the bound solve reports (lifted to the "
                        "peak where the objective proves it, at least the bytes held where the objective does not "
                        "weigh a memory). Default: no planner runs; the bounds that hold for any plan")
    _objective_arg(s)
    s.add_argument("--json", action="store_true", help="print one JSON object: lower_bound, step and source per "
                   "memory (null where infeasibility is proven), infeasible (the proof, or null), objective, "
                   "status (auto's, with --time-limit; else null), note (what solve may report above the bound, or null)")
    s.set_defaults(run=commands.bounds)


def _info(s: argparse.ArgumentParser) -> None:
    _problem_arg(s)
    s.add_argument("--json", action="store_true", help="print one JSON object instead of lines and a table")
    s.set_defaults(run=commands.info)


def _convert(s: argparse.ArgumentParser) -> None:
    s.add_argument("input", help="problem file: .csv (MiniMalloc) or .json (optplan)")
    s.add_argument("output", help="problem file to write: .json, or .csv (MiniMalloc: one memory, no relative placements)")
    _memory_arg(s)
    s.set_defaults(run=commands.convert, output_kind="problem")


def _extract(s: argparse.ArgumentParser) -> None:
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
    _memory_arg(s)
    s.set_defaults(run=extract, output_kind="problem")


def _compare(s: argparse.ArgumentParser) -> None:
    s.add_argument("paths", nargs="+", metavar="PATH", help="problem files, or directories of .json/.csv problems")
    s.add_argument("--capacity", type=int, help="cap single-memory problems at N bytes (default: each problem's)")
    _memory_arg(s)
    s.add_argument("--planners", help="comma-separated planner names (default: all heuristics)")
    s.add_argument("--time-limit", type=_option("time_limit", float, seconds=True), default=None,
                   help="seconds for all planners together, reading included; each takes a share of what is left, "
                        "the exact reference the rest. Default: no limit (heuristics end on their own)")
    s.add_argument("--exact", action=argparse.BooleanOptionalAction, default=None,
                   help="also run auto after the heuristics, as the exact reference that proves the optimum "
                        "(default: on when --time-limit gives each instance 2 s or more; off without a limit)")
    s.add_argument("--seed", type=_option("seed", int), default=None, help="random seed, 0 to 2^31-1 (default 0)")
    s.add_argument("--format", choices=("table", "markdown"), default="table",
                   help="table: a table per instance (default); markdown: the study's Markdown tables")
    s.add_argument("--json", action="store_true", help="print a JSON list, one plan object per run")
    s.set_defaults(run=commands.compare)


def _study(s: argparse.ArgumentParser) -> None:
    s.add_argument("paths", nargs="+", metavar="PATH", help="problem files, or directories of .json/.csv problems")
    s.add_argument("-o", "--output", dest="out_dir", required=True, metavar="DIR", help="directory for runs.csv, summary.md, plots")
    s.add_argument("--planners", help="comma-separated planner names (default: every heuristic and auto)")
    s.add_argument("--time-limit", type=_option("time_limit", float, seconds=True), default=60.0,
                   help="seconds per run (default 60)")
    s.add_argument("--memory", action="append", metavar=MEMORY_SPEC, help=MEMORY_HELP)
    s.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="local process pool (default) or dask.distributed (pip install 'optplan[dask]')")
    s.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler, e.g. tcp://host:8786 (default: a LocalCluster)")
    s.add_argument("--jobs", type=int, default=None, help="runs at a time (default: one per core)")
    s.add_argument("--workers", type=_option("workers", int), default=1, help="solver threads of each run (default 1)")
    s.set_defaults(run=commands.study)


def _plot(s: argparse.ArgumentParser) -> None:
    _problem_arg(s, capacity=False)
    s.add_argument("plan", help="plan file: .json or .csv")
    s.add_argument("-o", "--output", required=True, help="picture file: .png, .svg, .pdf or .html (hover: id, size, lifetime, offset)")
    s.add_argument("--width", type=int, default=1600, help="picture width in pixels (default 1600)")
    s.add_argument("--dpi", type=int, default=100, help="dots per inch (default 100)")
    s.set_defaults(run=commands.plot, output_kind="picture")


def _export_model(s: argparse.ArgumentParser) -> None:
    _problem_arg(s)
    s.add_argument("-o", "--output", required=True, help="model file: .lp (CPLEX LP format) or .mps")
    _objective_arg(s)
    s.set_defaults(run=commands.export_model, output_kind="model")


def _import_solution(s: argparse.ArgumentParser) -> None:
    _problem_arg(s)
    s.add_argument("solution", help="solution file: Gurobi .sol or 'name value' lines")
    s.add_argument("-o", "--output", required=True, help="plan file: .json or .csv")
    s.add_argument("--json", action="store_true", help="print the plan as JSON instead of a table")
    s.set_defaults(run=commands.import_solution, output_kind="plan")


# command -> (its line in ``optplan --help``, the function that adds its arguments), in that help's order
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "solve": ("plan a problem", _solve),
    "validate": ("check a plan against a problem", _validate),
    "bounds": ("lower bounds per memory, or a proof of infeasibility", _bounds),
    "info": ("buffers, time span, peak live load, memories", _info),
    "convert": ("convert a problem between .csv and .json", _convert),
    "extract": ("buffers and lifetimes of a torch.export program (.pt2) or an ONNX model (.onnx)", _extract),
    "compare": ("run every heuristic (and auto, the exact reference, given the time) on problems and rank them", _compare),
    "study": ("every planner on every problem: runs.csv, summary.md and plots in a directory", _study),
    "plot": ("draw a plan (time x address per memory) to PNG/SVG/PDF/HTML", _plot),
    "export-model": ("write the MILP model (.lp or .mps) for Gurobi, CPLEX or any MIP solver", _export_model),
    "import-solution": ("validate a MIP solver's solution of export-model's model and write the plan", _import_solution),
    "planners": ("the registered planners: what each does and handles (memories, clocks, capacities)",
                 lambda s: s.set_defaults(run=commands.planners)),
    "warmup": ("compile the numba kernels into numba's on-disk cache (once after an install)",
               lambda s: s.set_defaults(run=commands.warmup)),
}


def parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``optplan`` command's parser; each command's function is ``run`` in the parsed namespace.
    Given the ``argv`` it will parse, only the command named there gets its arguments (the others
    their line of help): ``optplan --help`` then builds no command's arguments, whose choices import
    the objectives (and numpy). A word that names no command: every command's, as without ``argv``."""
    named = next((a for a in argv if not a.startswith("-")), "") if argv is not None else None  # (no top-level option takes a value)
    p = _Parser(prog="optplan", description="Optimal static memory plans for machine-learning models.",
                epilog="solve has no default time limit: it runs until its plan is proven optimal; Ctrl-C stops "
                       "it and keeps the best plan found (written to -o if given). `optplan COMMAND --help` for "
                       "a command's options and their defaults.")
    p.add_argument("--version", action="version", version=f"optplan {optplan.__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (line, add_arguments) in COMMANDS.items():
        s = sub.add_parser(name, help=line, formatter_class=_Formatter)
        if named is None or named == name or (named and named not in COMMANDS):
            add_arguments(s)
    return p
