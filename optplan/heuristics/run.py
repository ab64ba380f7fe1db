"""Every registered heuristic on one problem: the warm start of the portfolio and of the MILP.

It lives with the heuristics (not in the portfolio) so that solvers can use it without
importing the portfolio, which sits above them.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace

import numpy as np

from optplan import registry
from optplan.core import jit
from optplan.core.deadline import Deadline
from optplan.core.lifecycle import fork_member, report
from optplan.core.objective import Objective
from optplan.core.plan import Layout, Plan, Status, layout_of
from optplan.core.problem import Problem
from optplan.heuristics import kernels
from optplan.heuristics.hill_climb import expected_passes
from optplan.registry import heuristic_names

CHEAP = 1.0  # CPU seconds: while the constructive heuristics together took less, every one runs whatever the limit
# above this many units, with a time limit, the constructive heuristics run best first as ranked on a
# slice of PILOT_SLICE buffers (``pilot_order``; 62k buffers: each about a second, all of them fit)
PILOT_UNITS, PILOT_SLICE = 200_000, 3_000
# up to this many units (from ``StageParams.apart_units`` on) a run under a wall-clock limit runs the
# heuristics in a process killed at the deadline (``apart``); above it a plan's way back (its
# placements to arrays, 12 MB through the pipe, a million Placements rebuilt here: several CPU s)
# and the fork's start outlast the limit. A million S_1-shaped buffers at 60 s, load 5-6: forked,
# greedy-conflicts' plan (OPTIMAL) was made but not handed over before the kill (auto: UNKNOWN);
# here, OPTIMAL (greedy-size) in 63 s in all
APART_MAX_UNITS = PILOT_UNITS
# seconds past its deadline before the heuristics' process is killed: passes about to end finish (the
# time kept after auto's stage to check and write the plan absorbs it). idealloc/S_1 at 5 s, load 6:
# with 0.05 s auto kept naive's plan (13.7 x the bound) in 3 runs of 5; with 0.5 s greedy-size's
# (1.0249, as in-process) in 3 of 3, main 4.2-4.6 s (in-process: 5.2-5.7 s, and +2.8 s at load 6.6)
APART_GRACE = 0.5
# what runs here when the heuristics' process finished nothing in time: as cheap as naive (0.1 CPU s
# on idealloc/S_1) and there at the load bound, where naive's plan is 13.7 x it (auto S_1 at 5 s, load 8)
FALLBACK = "peak-stack"
CONSTRUCTIVE_SHARE = 0.5  # without compiled kernels: of a limited deadline, after which no heuristic starts


def pilot_order(problem: Problem, names: list[str], seed: int = 0) -> list[str]:
    """``names`` best first by their plans on a slice of the problem: the ``PILOT_SLICE`` buffers
    of consecutive starts around the step where the load bound is reached (ties in ``names``'
    order: the slice's milliseconds are noise on a loaded machine, and ordered by them the first
    heuristic changed from run to run).
    On a million buffers each heuristic costs seconds and only some fit the limit: the slice
    says which to run first, for a second or two."""
    from optplan.core.bounds import lower_bounds

    order = np.argsort(problem.columns.start, kind="stable")
    step = next((s for s in lower_bounds(problem).step.values() if s is not None), 0)
    at = int(np.searchsorted(problem.columns.start[order], step))
    lo = max(0, min(at - PILOT_SLICE // 2, len(order) - PILOT_SLICE))
    sample = problem.with_buffers(problem.buffers[i] for i in np.sort(order[lo:lo + PILOT_SLICE]))
    rank = {}
    for k, name in enumerate(names):
        try:
            plan = registry.solve(sample, name, seed=seed)
            rank[name] = (not plan.found, plan.objective_value or 0, k)
        except Exception:  # noqa: BLE001 - it fails on the whole problem too: last
            rank[name] = (True, 0, k)
    return sorted(names, key=rank.__getitem__)


@dataclass(frozen=True)
class StageParams:
    """Settings of the heuristic stage (``run_heuristics``) a caller may change (tests do).

    ``improving_seconds``: what an improving heuristic (hill-climb) takes when run on its own
    without a limit, its default; the stage gives it at least that if the limit leaves it.
    ``apart_units``: above this many units, under a wall-clock limit, the heuristics run in a
    process killed at the deadline (``apart``): a compiled pass cannot be interrupted, and on
    idealloc/S_1 (28.5k units) one of 0.3-0.5 CPU s took 4.2 s wall at load 6 (auto 2.8 s over a
    5 s limit); below it a pass takes under 0.1 s, less than a fork and the plans' transfer."""

    improving_seconds: float = 1.0
    apart_units: int = 5000


DEFAULT = StageParams()


def improving(name: str) -> bool:
    """Heuristics that improve for as long as their budget allows (registered ``anytime``)."""
    return bool(registry.get(name).anytime)  # type: ignore[attr-defined]


def run_heuristics(problem: Problem, deadline: Deadline, seed: int = 0, workers: int = 1, improve: bool = True,
                   objective: Objective | None = None,
                   params: StageParams = DEFAULT) -> tuple[list[Plan], dict[str, str]]:
    """``_run`` (below), in a forked process killed at ``deadline`` (``apart``) when a compiled pass
    could outlast it: every plan finished by then is kept, the heuristics not finished are
    reported as stopped. Otherwise here."""
    if not apart(problem, deadline, params):
        return _run(problem, deadline, seed, workers, improve, objective, params=params)
    return _run_apart(problem, deadline, seed, workers, improve, objective, params)


def apart(problem: Problem, deadline: Deadline, params: StageParams = DEFAULT) -> bool:
    """Whether the heuristics run in a member process: under a wall-clock limit, on more than
    ``params.apart_units`` units and at most ``APART_MAX_UNITS``, where processes fork, with the
    kernels compiled (the pure-Python references poll the deadline themselves)."""
    return (params.apart_units < problem.unit_count <= APART_MAX_UNITS and deadline.limited
            and not deadline.deterministic and "fork" in mp.get_all_start_methods() and not jit.not_compiled())


def _run_apart(problem: Problem, deadline: Deadline, seed: int, workers: int, improve: bool,
               objective: Objective | None, params: StageParams) -> tuple[list[Plan], dict[str, str]]:
    """``_run`` in a forked member that hands over each plan as it is finished (its placements as
    two arrays: a plan of 28.5k buffers pickles in 0.15 CPU s, its arrays in 6 ms), killed
    ``APART_GRACE`` seconds after ``deadline``. If none was finished by then, ``FALLBACK`` (or the first
    constructive heuristic when it does not take the problem) runs here to its end: the caller needs a plan to
    start from (at load 7, with little of a 5 s limit left after reading idealloc/S_1, auto had
    none and answered UNKNOWN)."""
    for group in ("validate", "heuristics"):  # loaded here, once, before the fork: numba's start costs 0.5 CPU s
        if jit.compiled(group):
            jit.warmup([group])
    if jit.compiled("heuristics"):
        from optplan.heuristics.arrays import arrays

        arrays(problem)  # the time index every heuristic reads, built once here (1M buffers: 3-4 CPU s)
    plans: dict[str, Plan] = {}
    gc.freeze()  # the child's collections leave this process's objects alone: touching them would copy their pages
    try:
        member = fork_member(lambda d: _run(problem, d, seed, workers, improve, objective, params=params,
                                            deliver=lambda plan: report(_packed(problem, plan)))[1],  # (the plans are sent)
                             deadline, grace=APART_GRACE, partial=lambda packed: _take(problem, packed, plans))
    finally:
        gc.unfreeze()
    errors: dict[str, str] = member.result() or {}
    why = f"{deadline.cancelled or 'time limit reached'} before it ended (stopped with the heuristics' process)" \
        if member.error is None or deadline.expired() else f"the heuristics' process failed: {member.error}"
    names = names_for(problem)
    constructive = [n for n in names if not improving(n)]
    first = FALLBACK if FALLBACK in constructive else constructive[0]
    if not plans and not deadline.cancelled:  # nothing in time (a loaded machine): the first anyway, here, as ``_run`` does
        errors.pop(first, None)
        plans[first] = registry.solve(problem, first, seed=seed, objective=objective)
    for name in names:
        if name not in plans and name not in errors:
            errors[name] = why
    return [plans[n] for n in names if n in plans], errors


def _packed(problem: Problem, plan: Plan) -> tuple[Plan, np.ndarray | None, np.ndarray | None]:
    """``plan`` without its placements, and its memory indices and offsets in buffer order."""
    if not plan.placements:
        return plan, None, None
    layout = layout_of(problem, plan.placements)
    if layout is not None:
        return replace(plan, placements={}), layout.where, layout.offset
    index = {m: i for i, m in enumerate(problem.memory_names)}
    got = [plan.placements[b] for b in problem.columns.ids]
    return (replace(plan, placements={}), np.fromiter((index[p.memory] for p in got), np.int32, len(got)),
            np.fromiter((p.offset for p in got), np.int64, len(got)))


def _take(problem: Problem, packed: tuple[Plan, np.ndarray | None, np.ndarray | None], plans: dict[str, Plan]) -> None:
    plan, where, offset = packed
    if where is not None and offset is not None:
        plan = replace(plan, placements=Layout(problem.columns.ids, problem.memory_names, where, offset))
    plans[plan.planner] = plan


def names_for(problem: Problem) -> list[str]:
    """The heuristics that take ``problem``, in registry order (the stage's, and ``auto``'s first look's)."""
    names = heuristic_names()
    if problem.concurrent:  # vector clocks: only the heuristics that handle them
        names = [n for n in names if registry.get(n).clocks]  # type: ignore[attr-defined]
    return names


def _run(problem: Problem, deadline: Deadline, seed: int = 0, workers: int = 1, improve: bool = True,
         objective: Objective | None = None, deliver: Callable[[Plan], None] | None = None,
         params: StageParams = DEFAULT) -> tuple[list[Plan], dict[str, str]]:
    """The constructive heuristics on ``workers`` threads (the compiled kernels release the GIL),
    in registry order (above ``PILOT_UNITS`` units with a limit: best first on a slice, one at a
    time: a million S_1-shaped buffers, two side by side each took 40-50 s wall at load 6), each on
    ``deadline`` as if run alone with it (a pass that would end late is not started), budgeted by
    what they cost here: each starts while the time left covers the slowest one measured so far,
    and every one starts while they are cheap (all together within ``CHEAP`` CPU seconds: on small
    problems all of them, whatever the limit and the load; on a million buffers as many as the
    limit pays for). Then, if ``improve``, the improving ones (hill-climb) one after the other,
    each on a part of ``deadline`` set by what the constructive ones cost: as much again, but no
    more than half of what is left, and at least what it takes when run on its own without a
    limit (``params.improving_seconds``) if that fits; none when that would not cover one packing.

    While the kernels are not compiled under a time limit (``optplan.core.jit``: pure-Python packing,
    seconds per heuristic on 30k buffers) the limit comes first: a heuristic starts only while
    ``CONSTRUCTIVE_SHARE`` of ``deadline`` lasts (the first always), is cut short at its end, and
    hill-climb runs only if time is left. Once a plan is proven optimal (at the lower bound) no
    other heuristic starts (idealloc/S_1: peak-stack's).

    Every plan is judged by ``objective`` (default: the problem's), the one the caller optimises:
    its ``objective_value`` is what picks the warm start.

    Plans come back in registry order whatever finished first. A heuristic that raises, or that
    the time did not reach, is reported in the second value instead. A deterministic deadline:
    every constructive heuristic runs, and the improving ones get the same parts in deterministic
    seconds, with the constructive ones' cost counted as 0 (their wall time varies with the load;
    the result must not). A cancelled deadline stops the improving ones at once. ``deliver`` is
    given each plan as it is made (on the thread that made it).
    """
    stage = _Stage(problem, deadline, seed, objective, deliver)
    names = names_for(problem)
    constructive = [n for n in names if not improving(n)]
    climbs = sum(improving(n) for n in names) if improve else 0  # each packs as often as hill-climb
    kernels.expect(problem.unit_count * (len(constructive) + climbs * expected_passes(problem.unit_count)))
    if (problem.unit_count > PILOT_UNITS and deadline.limited and not deadline.deterministic and not problem.concurrent
            and stage.first is deadline):
        constructive = pilot_order(problem, constructive, seed)
        workers = 1  # the best on the slice alone: it ends sooner, and a plan at the bound ends the stage
    cost = stage.run_constructive(constructive, workers)
    for name in (n for n in names if improving(n)):
        if not improve:
            stage.errors[name] = "skipped: only constructive heuristics in this mode"
        else:
            stage.run_improving(name, cost, params.improving_seconds)
    return [stage.results[n] for n in names if n in stage.results], stage.errors


class _Stage:
    """One run of ``_run``: the plans made so far, the heuristics not run (and why), and what each
    one cost, which decides whether the next one starts."""

    def __init__(self, problem: Problem, deadline: Deadline, seed: int, objective: Objective | None,
                 deliver: Callable[[Plan], None] | None) -> None:
        self.problem, self.deadline, self.seed, self.objective, self.deliver = problem, deadline, seed, objective, deliver
        # the constructive heuristics' deadline: a share of the limit while the kernels are not compiled
        self.first = deadline.share(CONSTRUCTIVE_SHARE) if deadline.limited and not kernels.ready(problem.unit_count) else deadline
        self.results: dict[str, Plan] = {}
        self.errors: dict[str, str] = {}
        self.costs: list[float] = []  # wall seconds each took (what the time left must cover)
        self.cpu: list[float] = []  # CPU seconds of each one's thread (what "cheap" means: a loaded machine slows the wall clock)

    def run_constructive(self, names: list[str], workers: int) -> float:
        """Run ``names`` on ``workers`` threads, each as long as it is affordable; the seconds they
        took together (0 on a deterministic deadline)."""
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            running: set[Future[None]] = set()
            for name in names:
                if len(running) >= max(1, workers) or (running and not self.costs and time.perf_counter() - t0 >= CHEAP):
                    done, running = wait(running, return_when=FIRST_COMPLETED)  # a cost to judge the next one by
                if self.affordable(name, names[0]):
                    running.add(pool.submit(self.one, name, self.first))
            wait(running)
        return 0.0 if self.deadline.deterministic else time.perf_counter() - t0

    def run_improving(self, name: str, cost: float, alone: float) -> None:
        """Run the improving heuristic ``name`` on its part of the deadline: ``cost`` (what the
        constructive ones took) again, at most half of what is left, at least ``alone`` (what it
        takes on its own) if that fits; not when a plan is optimal, the time is up or its part
        would not cover one packing."""
        deadline = self.deadline
        if self.settled(name):
            return
        if self.first is not deadline and self.results and deadline.expired():  # it would evaluate its first orders all the same
            self.errors[name] = f"not run: {deadline.cancelled or 'time limit reached'}"
            return
        left = deadline.left()
        seconds = max(alone, cost) if not deadline.limited else max(min(alone, left), min(cost, left / 2))
        if deadline.limited and not deadline.deterministic and sum(self.cpu) >= CHEAP and seconds < max(self.costs, default=0.0):
            self.errors[name] = f"not run: its {seconds:.1f} s would not cover one packing ({max(self.costs):.1f} s measured)"
            return
        self.one(name, deadline.part(seconds))

    def one(self, name: str, budget: Deadline) -> None:
        """Run ``name`` on ``budget``: its plan, or the error it raised, and what it cost."""
        t, c = time.perf_counter(), time.thread_time()
        try:
            plan = self.results[name] = registry.solve(self.problem, name, seed=self.seed, objective=self.objective,
                                                       deadline=budget)
            if self.deliver is not None:
                self.deliver(plan)
        except Exception as e:  # noqa: BLE001 - reported in the plan's stats
            self.errors[name] = f"{type(e).__name__}: {e}"
        self.cpu.append(time.thread_time() - c)
        self.costs.append(time.perf_counter() - t)

    def settled(self, name: str) -> bool:
        """A plan proven optimal ends the stage (none can beat it); not on a deterministic
        deadline, where which finished first must not decide the plan."""
        done = None if self.deadline.deterministic else next(
            (p.planner for p in list(self.results.values()) if p.status is Status.OPTIMAL), None)
        if done is not None:
            self.errors[name] = f"not run: {done}'s plan is optimal"
        return done is not None

    def affordable(self, name: str, first_name: str) -> bool:
        """Whether the constructive heuristic ``name`` starts now (``first_name``, the first one,
        always does unless a plan is optimal): see ``_run``."""
        deadline, first = self.deadline, self.first
        if self.settled(name):
            return False
        if first is not deadline and first.expired() and name != first_name:
            self.errors[name] = f"not run: {deadline.cancelled or 'time limit reached'}"
            return False
        if deadline.deterministic and first.expired():  # its wall-clock guard (they cost no deterministic time)
            self.errors[name] = f"not run: {deadline.cancelled or 'time limit reached'}"
            return False
        if deadline.deterministic or not deadline.limited or sum(self.cpu) < CHEAP:
            return True
        if deadline.left() >= max(self.costs, default=0.0):
            return True
        self.errors[name] = (f"not run: the time left ({deadline.left():.1f} s) does not cover the slowest heuristic "
                             f"measured ({max(self.costs):.1f} s)")
        return False
