"""The commands but ``extract``: each imports what it uses when it runs, so a command pays for its
own dependencies only (``info`` and ``bounds`` load no planner, ``solve`` the planner it runs)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from optplan.cli.output import EXIT_NO_PLAN, EXIT_OK, console, say, warn
from optplan.cli.report import num, plan_table, print_json, report_plan, report_verdict

if TYPE_CHECKING:
    from optplan.core.bounds import Bounds
    from optplan.core.deadline import Deadline
    from optplan.core.objective import Objective
    from optplan.core.plan import Plan
    from optplan.core.problem import Problem
    from optplan.graph.model import Graph


def capped(problem: Problem, capacity: int) -> Problem:
    """``problem`` with its one memory's capacity set (``--capacity``)."""
    from optplan.core.errors import OptplanError

    if capacity < 0:
        raise OptplanError(f"--capacity must be >= 0, got {capacity}")
    return problem.with_capacity(capacity)


def hierarchy(problem: Problem, args: argparse.Namespace) -> Problem:
    """The problem in the memories of ``--memory`` (if given)."""
    if not getattr(args, "memory", None):
        return problem
    from optplan.formats.memspec import parse_memories

    return problem.with_memories(parse_memories(args.memory))


def load(args: argparse.Namespace) -> Problem:
    """The problem of ``args.problem`` (a graph's: under its given order, no reuse taken) with
    ``--memory`` and ``--capacity`` applied; the output path checked against it (CSV: one memory)
    before any work."""
    from optplan.core.problem import Problem

    found = load_input(args)
    return found if isinstance(found, Problem) else found.base


def load_input(args: argparse.Namespace) -> Problem | Graph:
    """The problem or graph of ``args.problem``, in the memories of ``--memory``, capped by
    ``--capacity``; the output path checked before any work (a graph's plan is JSON only)."""
    from optplan.core.errors import OptplanError
    from optplan.core.problem import Problem
    from optplan.formats import check_output, read_input
    from optplan.formats.memspec import parse_memories

    found = read_input(args.problem)
    if getattr(args, "memory", None):
        found = found.with_memories(parse_memories(args.memory))
    if getattr(args, "capacity", None) is not None:
        if args.capacity < 0:
            raise OptplanError(f"--capacity must be >= 0, got {args.capacity}")
        found = found.with_capacity(args.capacity)
    if getattr(args, "output", None):  # what the problem decides (CSV: one memory), before any solve
        check_output(args.output, args.output_kind, len(found.memories), isinstance(found, Problem) and bool(found.relative))
        if not isinstance(found, Problem) and args.output_kind == "plan" and str(args.output).lower().endswith(".csv"):
            raise OptplanError(f"{args.output}: a graph's plan carries its order: write it as .json")
    return found


def _deadline(args: argparse.Namespace) -> Deadline:
    """The run's one Deadline, made before the problem is read: reading counts against the limit
    (and for the program, everything since the process started)."""
    from optplan.cli.started import program_age
    from optplan.core.deadline import Deadline
    from optplan.core.errors import OptplanError

    try:  # the program (``command()``): counted from the process's start, the imports included
        elapsed = program_age() if getattr(args, "whole_process", False) and args.time_limit is not None else 0.0
        return Deadline(args.time_limit, getattr(args, "deterministic", False), elapsed=elapsed)
    except ValueError as e:
        raise OptplanError(f"--time-limit: {e}") from None


def solve(args: argparse.Namespace) -> int:
    from optplan import registry
    from optplan.core.errors import OptplanError
    from optplan.core.lifecycle import interruptible
    from optplan.core.problem import Problem
    from optplan.formats import write_plan

    deadline = _deadline(args)
    watch = _Watchdog(args, deadline)
    with interruptible(deadline) as signals, watch:
        try:
            found = load_input(args)
        except KeyboardInterrupt as e:  # (``Interrupted``): nothing to keep yet
            warn("optplan: interrupted while reading the problem: no plan yet, nothing written")
            return getattr(e, "code", 130)
        if isinstance(found, Problem) and (args.reorder or not args.reuse):
            raise OptplanError("--reorder and --no-reuse apply to graphs (optplan-graph files)")
        signals.solving = True  # from here a signal stops the planners, and their best plan is kept
        planning = watch.planning(len(found.buffers) if isinstance(found, Problem) else len(found.base.buffers))
        progress, stop = _progress_printer(found, args) if not args.json else (None, lambda: None)
        hint = _no_limit_hint(args, progress)
        options = dict(deadline=planning, workers=args.workers, seed=args.seed, objective=args.objective, progress=progress)
        try:
            if isinstance(found, Problem):
                problem, plan, doc = found, registry.solve(found, args.planner, **options), None
            else:
                from optplan.cli import graph as graphs

                problem, plan, doc = graphs.solve(args, found, options)
        finally:
            hint.cancel()
            stop()
        watch.writing()
        if progress is not None:
            progress.answer(plan)  # the last line: the answer, on the report's clock
        if args.output and plan.found and doc is None:
            write_plan(problem, plan, args.output, times=not args.deterministic)  # (its times: the report's)
    report_plan(args, problem, plan, doc)
    if signals.exit_code is not None:
        kept = f"; the best plan found is in {args.output}" if args.output and plan.found else ""
        warn("optplan: interrupted" + (kept or ("" if plan.found else ": no plan yet, nothing written")))
        return signals.exit_code
    return EXIT_OK if plan.found else EXIT_NO_PLAN


class _Watchdog:
    """The program's promise (``command()``, a wall-clock ``--time-limit T``): the process ends
    within max(1.1 T, T + 1 s) of its start. A planner that does not poll its deadline often
    enough on a huge problem, or a problem that takes longer than the limit to read, would break
    it. So a thread watches. A planner still running at the limit (late: the registry gave it
    less) has its deadline cancelled ("time limit reached"): what polls the deadline stopped
    already, but cancelling also runs the hooks that stop CP-SAT and a portfolio's members at
    once (not after their grace), and they hand back their best plan. Once the plan could no
    longer be written and reported in time
    (reading: ``READING_MARGIN`` before that end, the margin a thread may wait for the GIL while
    numpy parses; planning: ``PLANNING_MARGIN`` plus ``TAIL_PER_BUFFER`` per buffer before it),
    if the plan is not being written yet, the process says so in one line and leaves (exit 1, no
    plan; children killed, temporary directories removed). Off for ``main()`` called in Python
    and for ``--deterministic`` (whose runs end by their own measure, not the clock)."""

    READING_MARGIN = 0.6
    PLANNING_MARGIN = 0.3
    TAIL_PER_BUFFER = 3e-6  # writing and reporting a plan, and the exit (10^6 buffers: 2.5-3 s at load 4)

    def __init__(self, args: argparse.Namespace, deadline: Deadline) -> None:
        import threading

        self.lock, self.phase, self.buffers = threading.Lock(), "reading the problem", 0
        self.deadline, self.done = deadline, threading.Event()
        self.part = deadline  # (``planning``: the planners' part of it)
        self.thread: threading.Thread | None = None
        if getattr(args, "whole_process", False) and deadline.limited and not deadline.deterministic:
            self.limit = float(args.time_limit)
            self.end = deadline.end + max(0.1 * self.limit, 1.0)  # (perf_counter time)
            self.thread = threading.Thread(target=self._watch, daemon=True, name="optplan-watchdog")

    def __enter__(self) -> _Watchdog:
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()

    def planning(self, buffers: int) -> Deadline:
        """The problem is read: the deadline the planners get, ending early enough for the plan to
        be written and reported in time (``TAIL_PER_BUFFER``); the whole deadline when not watching."""
        self.buffers = buffers
        self.phase = "planning"
        if self.thread is None or not self.deadline.limited:
            return self.deadline
        self.part = self.deadline.part(self.deadline.left() - self.TAIL_PER_BUFFER * buffers)
        return self.part

    def writing(self) -> None:
        """From here the plan is written and reported: the watchdog lets it finish."""
        with self.lock:
            self.phase = ""

    def _watch(self) -> None:
        import time

        from optplan.core.lifecycle import leave_now

        while not self.done.wait(0.05):
            with self.lock:
                if not self.phase:
                    return
                reading = self.phase.startswith("reading")
                last = self.end - (self.READING_MARGIN if reading else
                                   self.PLANNING_MARGIN + self.TAIL_PER_BUFFER * self.buffers)
                now = time.perf_counter()
                if not reading and now >= self.part.end + 0.05 and self.deadline.cancelled is None:
                    self.deadline.cancel("time limit reached")  # (its hooks only set flags and stop solvers)
                if now >= last:
                    warn(f"optplan: the time limit of {self.limit:g} s ran out while {self.phase}: no plan written")
                    leave_now(EXIT_NO_PLAN)


def _no_limit_hint(args: argparse.Namespace, progress, delay: float | None = None):  # type: ignore[no-untyped-def]
    """Without ``--time-limit``: a line on stderr (above the live display, if any) after ``delay``
    seconds (default ``HINT_SECONDS``) unless the solve ended first; a stand-in to cancel otherwise."""
    from optplan.report.hint import HINT_SECONDS, Hint

    if args.time_limit is not None:
        return argparse.Namespace(cancel=lambda: None)
    say = warn if progress is None else lambda text: progress.console.print(text, markup=False, highlight=False)
    return Hint(say, HINT_SECONDS if delay is None else delay)


def _progress_printer(found: Problem | Graph, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """(SolveProgress, its stop): each memory's peak, the bound and gap in bytes and a ticking elapsed
    time: a live line on a terminal, plain lines elsewhere. The planner is imported first, so that
    the display's clock starts with the planner's (``Plan.seconds``, the report's)."""
    from optplan import registry
    from optplan.core.objective import Objective
    from optplan.core.problem import Problem
    from optplan.report.progress import Reading, SolveProgress

    problem = found if isinstance(found, Problem) else found.base
    registry.get(args.planner)
    progress = SolveProgress(console(stderr=True), Reading(problem, Objective.parse(args.objective, problem)))
    return progress, progress.stop


def validate(args: argparse.Namespace) -> int:
    from optplan.core.bounds import lower_bounds
    from optplan.core.problem import Problem
    from optplan.formats import validate_plan_file

    problem = load_input(args)  # --capacity: check a plan for MiniMalloc's fixed-capacity problems
    if not isinstance(problem, Problem):
        from optplan.cli import graph as graphs

        return graphs.validate(args, problem)
    placements, violations = validate_plan_file(args.plan, problem)  # and what the plan claims
    valid = report_verdict(args, problem, placements, violations, lambda: lower_bounds(problem).lower)
    return EXIT_OK if valid else EXIT_NO_PLAN


def bounds(args: argparse.Namespace) -> int:
    """The lower bound per memory that holds for any plan, or (``--time-limit``) the one ``solve``
    reports: auto runs and its Plan.lower_bound is printed with what proves each number."""
    from optplan.core.bounds import lower_bounds
    from optplan.core.objective import Objective
    from optplan.core.problem import Problem

    found = load_input(args)
    problem = found if isinstance(found, Problem) else found.base
    b = lower_bounds(problem)
    if not isinstance(found, Problem):  # a graph: its given order with any reuses it allows; and every order
        from optplan.cli import graph as graphs

        b = graphs.bounds(args, found, b)
    if b.infeasible:
        return _infeasible_bounds(args, problem, b.infeasible)
    objective = Objective.parse(args.objective, problem)
    if args.time_limit is not None:
        return _planned_bounds(args, found, b, objective)
    source = {m: b.source.get(m, "live load") for m in problem.memory_names}
    return _print_bounds(args, problem, b.lower, b.step, source, objective, None, _lift_note(problem, objective))


def _infeasible_bounds(args: argparse.Namespace, problem: Problem, why: str) -> int:
    """No plan, so no peak to bound: the proof alone (as a plan's report says it), null bounds."""
    from optplan.core.bounds import infeasible_words

    why = infeasible_words(problem, why)
    if args.json:
        nulls = {m: None for m in problem.memory_names}
        say(json.dumps({"lower_bound": nulls, "step": nulls, "source": nulls, "infeasible": why,
                        "objective": None, "status": "INFEASIBLE", "note": None}))
    else:
        say(f"INFEASIBLE: {why}")
    return EXIT_NO_PLAN


def _planned_bounds(args: argparse.Namespace, found: Problem | Graph, free: Bounds, objective: Objective) -> int:
    """``bounds --time-limit``: auto's Plan.lower_bound (``registry.finish``, as ``solve`` reports
    it), each number with its source; a step only where the number is the planner-free bound's."""
    from optplan import registry
    from optplan.core.bounds import reported_sources
    from optplan.core.plan import Status
    from optplan.core.problem import Problem

    deadline = _deadline(args)
    if isinstance(found, Problem):
        problem, plan = found, registry.solve(found, "auto", deadline=deadline, objective=objective)
    else:  # a graph: its given order with any reuses it allows, as solve plans it
        from optplan.graph.planner import solve_graph

        gp = solve_graph(found, "auto", deadline=deadline, objective=objective)
        problem, plan = gp.problem or found.base, gp.plan
    if plan.status is Status.INFEASIBLE:
        return _infeasible_bounds(args, problem, plan.message)
    optimal = plan.status is Status.OPTIMAL and objective.optimizes
    source = reported_sources(problem, plan.placements, plan.lower_bound, plan.peak, free,
                              objective.weights(problem), optimal, plan.planner)
    step = {m: free.step.get(m) if v == free.lower.get(m) else None for m, v in plan.lower_bound.items()}
    return _print_bounds(args, problem, plan.lower_bound, step, source, objective, plan, None)


def _print_bounds(args: argparse.Namespace, problem: Problem, lower: Mapping[str, int], step: Mapping[str, int | None],
                  source: Mapping[str, str], objective: Objective, plan: Plan | None, note: str | None) -> int:
    """``bounds``' table (and the planner's status, or the note) or its JSON object."""
    if args.json:
        say(json.dumps({"lower_bound": dict(lower), "step": dict(step), "source": dict(source), "infeasible": None,
                        "objective": str(objective), "status": None if plan is None else plan.status.value,
                        "note": note}))
        return EXIT_OK
    rows = [(m.name, num(m.capacity), num(lower[m.name]), "-" if step.get(m.name) is None else f"{step[m.name]:,}",
             source[m.name]) for m in problem.memories]
    _table(("memory", "capacity", "lower bound", "at step", "source"), rows, left=("source",))
    if plan is not None:
        say(f"{plan.planner}: {plan.status.value} in {plan.seconds:.2f} s ({objective})"
            + (f": {plan.message}" if plan.message else ""))
    if note:
        say(f"note: {note}")
    return EXIT_OK


def _lift_note(problem: Problem, objective: Objective) -> str | None:
    """What ``solve`` may report above the planner-free bounds under ``objective``, in one line
    (``core.bounds.reported_bounds``): the peak of a memory the objective weighs where its plan
    is proven optimal, and the bytes its plan holds live at once where the objective does not
    weigh the memory (a capacitated memory with a slower one behind it: no plan need use it)."""
    weights = objective.weights(problem)
    lifted = [m for m in problem.memory_names if weights[m] > 0] if objective.optimizes else []
    held = [m for m in problem.memory_names if weights[m] == 0]
    parts = ([f"{', '.join(lifted)} to the peak where it proves its plan optimal"] if lifted else []) + (
        [f"{', '.join(held)} to the bytes its plan holds live at once ({objective} does not weigh that peak)"] if held else [])
    if not parts:
        return None
    return (f"solve may report more ({objective}): {'; '.join(parts)}. "
            "--time-limit SECONDS runs auto and reports solve's bound")


def _table(columns: tuple[str, ...], rows: Sequence[tuple[str, ...]], no_wrap: bool = True,
           left: tuple[str, ...] = ()) -> None:
    """A table of ``rows`` under ``columns``, the first (and ``left``) left-aligned, the others right."""
    from rich import box
    from rich.table import Table

    t = Table(box=box.SIMPLE_HEAD)
    for col in columns:
        t.add_column(col, justify="left" if col == columns[0] or col in left else "right", no_wrap=no_wrap)
    for row in rows:
        t.add_row(*row)
    console().print(t)


def info(args: argparse.Namespace) -> int:
    problem = load(args)
    facts = _facts(problem)
    if args.json:
        say(json.dumps(facts))
        return EXIT_OK
    for k, v in facts.items():
        if k != "memories":
            say(f"{k.replace('_', ' ')}: {num(v) if isinstance(v, int) else v}")
    _table(("memory", "capacity", "alignment"), [(m.name, num(m.capacity), str(m.alignment)) for m in problem.memories],
           no_wrap=False)
    return EXIT_OK


def _facts(problem: Problem) -> dict[str, object]:
    """What ``info`` says of a problem: sizes, time span, the peak live load and where it is."""
    import numpy as np

    from optplan.core.bounds import peak_load

    bufs = problem.buffers
    rects = [r for b in bufs for r in b.footprint()]  # bytes in use over time: gaps excluded
    start, end = (np.array([r[k] for r in rects], np.int64) for k in (0, 1))
    load, step = peak_load(start, end, np.array([r[3] - r[2] for r in rects], np.int64))
    if problem.concurrent:  # vector clocks: the heaviest set of pairwise concurrent buffers
        from optplan.core.clocks import antichain_bound

        load, step = antichain_bound(problem, [u.root for u in problem.units]), None
    lo, hi = problem.time_span
    return {
        "buffers": len(bufs), "streams": problem.streams, "time_span": [lo, hi], "total_bytes": sum(b.size for b in bufs),
        "peak_live_load": load, "peak_step": step, "largest_buffer": max((b.size for b in bufs), default=0),
        "zero_size_buffers": sum(b.size == 0 for b in bufs),
        "fixed_buffers": sum(b.fixed_offset is not None or b.fixed_memory is not None for b in bufs),
        "buffers_with_gaps": sum(bool(b.gaps) for b in bufs),
        "relative_placements": len(problem.relative),
        "memories": [{"name": m.name, "capacity": m.capacity, "alignment": m.alignment} for m in problem.memories],
    }


def convert(args: argparse.Namespace) -> int:
    from optplan.formats import check_output, read_problem, write_problem

    problem = hierarchy(read_problem(args.input), args)
    check_output(args.output, "problem", len(problem.memories), bool(problem.relative))
    write_problem(problem, args.output)
    return EXIT_OK


def compare(args: argparse.Namespace) -> int:
    from optplan.study.command import compare_command

    return compare_command(args, console(), lambda p: (lambda h: h if args.capacity is None else capped(h, args.capacity))(
        hierarchy(p, args)))


def study(args: argparse.Namespace) -> int:
    from optplan.study.command import memories_from_specs, study_command

    args.memories = memories_from_specs(args.memory)
    return study_command(args, console(), console(stderr=True))


def plot(args: argparse.Namespace) -> int:
    from optplan.study.command import plot_command

    return plot_command(args, console())


def export_model(args: argparse.Namespace) -> int:
    from optplan.formats.lp_io import export_model as export

    info = export(load(args), args.output, args.objective)
    say(f"model written to {args.output}: {info.variables} variables ({info.binaries} binary, "
        f"{info.integers} integer), {info.constraints} constraints; offsets o_<i> in units of {info.scale} bytes")
    return EXIT_OK


def import_solution(args: argparse.Namespace) -> int:
    from optplan.formats import write_plan
    from optplan.formats.lp_io import import_solution as read_solution
    from optplan.report.summary import memory_rows

    problem = load(args)
    plan = read_solution(problem, args.solution)
    write_plan(problem, plan, args.output)
    if args.json:
        print_json(plan, problem)
    else:
        console().print(plan_table(problem, plan, memory_rows(problem, plan)))
        say(f"{plan.message}; plan written to {args.output}")
    return EXIT_OK


def planners(args: argparse.Namespace) -> int:
    """A row per registered planner from the registry's metadata: what it is, what it handles."""
    from optplan import registry

    heuristics = set(registry.heuristic_names())
    rows = []
    for name in registry.names():
        fn = registry.get(name)
        exact = name not in heuristics
        rows.append((name, "heuristic" if not exact else "portfolio" if name == registry.ROUTE else "exact",
                     "any" if getattr(fn, "declines", None) is None else f"decided (else: {registry.ROUTE})",
                     "yes" if getattr(fn, "clocks", False) else "no",
                     "proves infeasible" if exact else "kept; proves nothing",
                     _first_sentence(fn.__doc__) + (" Improves until its time limit." if getattr(fn, "anytime", False) else "")))
    _table(("planner", "kind", "memory choice", "vector clocks", "capacities", "what it does"), rows, no_wrap=False,
           left=("what it does",))
    return EXIT_OK


def _first_sentence(doc: str | None) -> str:
    """A docstring's first sentence on one line, without its asides (parentheses, stats) and
    reStructuredText's literal quotes."""
    import re

    text = " ".join((doc or "").split("\n\n")[0].split()).replace("``", "")
    text = re.sub(r"\s*\([^()]*\)", "", text)
    text = text[:text.find(". ") + 1] if ". " in text else text
    return re.sub(r"[;,] stats:? [^.;]*", "", text).rstrip(".") + "."


def warmup(args: argparse.Namespace) -> int:
    from optplan.core import jit
    from optplan.warmup import warm

    for group, seconds in warm().items():
        say(f"{group}: {'compiled' if jit.compiled(group) else 'NOT compiled'} in {seconds:.1f} s")
    say(f"numba's cache: {jit.cache_dir()}")
    return EXIT_OK if all(jit.compiled(g) for g in jit.GROUPS) else EXIT_NO_PLAN
