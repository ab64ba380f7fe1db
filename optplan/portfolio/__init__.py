"""The planning portfolio ``auto``: heuristics for a warm start, then exact search per part.

Pipeline: every registered heuristic (planners defined in ``optplan.heuristics``; the improving
ones not before a staging relaxation) on the whole problem -> the best plan is the incumbent -> ``reduce`` into independent scaled parts -> per part,
in its share of the time: stop if the incumbent meets the lower bound; where units choose between
memories, the staging relaxation (``optplan.solvers.selection``: bounds on the benefit kept in
faster memories and on the peaks) and its selections packed exactly by the search engine, then
CP-SAT, on the selected units of each memory alone, which proves the optimum when a selection packs at its live loads; the exact search engine
(planner ``search``, looked up by name, used when registered) on single-memory parts; CP-SAT on
the full part model with the incumbent as hint, stopped when it stalls; then large-neighbourhood
search (free the units alive in a time window around a unit at the peak, re-solve with all other
units fixed) while time is left. The merged plan goes back through the registry's validator.
"""

from __future__ import annotations

import contextvars
import functools
import multiprocessing as mp
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from optplan import registry
from optplan.core import jit
from optplan.core.clocks import clock_graph
from optplan.core.deadline import Deadline
from optplan.core.lifecycle import Member, fork_member
from optplan.core.objective import Goal, Objective
from optplan.core.plan import Placement, Plan, Status, peaks
from optplan.core.problem import Problem, objective_weights
from optplan.core.sizes import exact_size, sizes_text
from optplan.heuristics.run import run_heuristics
from optplan.parts import Choice, Part, Reduction, columns_only, merge, reduce, settle
from optplan.portfolio.quick import quick_look
from optplan.registry import Result, planner

# The exact stages (CP-SAT and its models, the staging relaxation, the search engine) are imported by
# the functions that run them: a problem the heuristics settle needs neither OR-Tools nor the
# search's kernels (``quick_look``).
if TYPE_CHECKING:
    from optplan.portfolio.incumbent import Incumbent
    from optplan.search.params import SearchParams
    from optplan.solvers.cpsat import PartModel, Settings

# of a single-memory part's time, for the exact search engine when it is registered (CP-SAT and LNS
# get the rest): on minimalloc/D in 20 s, 0.8 gave 1.0498 x the bound and 0.4 gave 1.0644; equal in 60 s
SEARCH_SHARE = 0.8
SEARCH_MEMBERS = ("search",)  # exact engines for single-memory parts, used if registered
# larger parts take a member only when its share of the time covers this per unit: a member cannot be
# interrupted from here, and on very large parts its set-up and first dives are not (idealloc/S_1,
# 28,526 buffers: about 0.25 ms per unit for the search's dives)
SEARCH_MAX_UNITS = 5000
SEARCH_SECONDS_PER_UNIT = 1e-3
# seconds the search runs alone on a part before it races CP-SAT and LNS from a forked process: most
# parts are answered sooner than a fork (0.1 s) and CP-SAT's model (guillotine-2 at 1 MiB: three parts
# of milliseconds each; auto 1.7 s wall where search alone took 0.24 s at load 12)
SEARCH_FIRST = 0.2
# a dive of the search costs about this per overlapping pair (S_1, 48M pairs: 0.6-1 s; 62k S_1-shaped,
# 114M: 2.6-3.9 s; 1M, 1.7G: > 95 s)
DIVE_SECONDS_PER_PAIR = 3e-8


@functools.cache
def search_params() -> SearchParams:
    """The search's settings for the searches auto starts (the races change its floor share): beyond
    their ``max_overlap_pairs`` the search only dives (lowest offset first, four orders). A function,
    not a constant: the search's package loads its kernels, which a problem the heuristics settle
    never needs."""
    from optplan.search.params import SearchParams

    return SearchParams()


# steps of lower priority (nice) for what races beside the search in feasibility mode (``_SearchRace``):
# the rest takes the CPU the search leaves (an idle core), not the search's. Nice 5 was not enough where
# the kernel groups a session's processes (autogroup: the search child and the rest share one group's
# CPU): minimalloc C at load 6.5, auto - search +1.0 s with nice 5, -0.2/-0.3 s with 19
RACE_NICE = 19
# of the time, for the search minimizing beside the rest in minimize mode (``_SearchRace``), and the share of its
# time slices that goes to deciding the proven bound (first), against 1 for a plan below its best. Generated
# families at 10 s, one memory (experiments/results/minimize.md), against deciding the bound alone for 0.8 of the
# time: proofs 95 -> 96 of 110 (cuts 66/70, tight 18/20, perturbed A-E 11 -> 12/20), perturbed A-E's 9 unproven
# 1.0579 -> 1.0422 x the load bound; 1 and 0.25 (the search alone's) lost pinwheel-12, a 3.8 s decision
FLOOR_RACE_SHARE = 0.9
RACE_FLOOR_SHARE = 4.0
_FLOOR_RACE = threading.local()  # ``on`` in the thread of the rest of auto that races the search at the bound
RACE_GRACE = 1.0  # seconds past the deadline the answer waits for a rest starved at that priority
EARLY_SHARE = 0.85  # of the time left: the early search's limit (validating and sending 28k placements back takes seconds at load 15)
# of a part's time where units choose memories: the staging relaxation and its selections packed exactly
STAGING_SHARE = 0.8
PACK_SEARCH_SHARE = 0.4  # of the time for one memory's selected units, for the search (CP-SAT gets the rest)
LNS_FREE, LNS_BAND = 40, 0.05  # units freed by the first move, and the height of its band (fraction of the peak)
# of an exact member's time, for CP-SAT's decisions at the proven bound before it minimizes (one memory).
# They prove most of what auto proves on tight generated instances and several cuts: at 10 s, load 3-7,
# instance by instance against 0.3: tight 15 -> 16 of 20, held-out tight 7 -> 8 of 10, cuts 64 -> 65 of 70,
# held-out cuts 66 -> 67 of 70 (experiments/results/minimize.md); the search at the bound with both
# workers instead slowed these decisions (tight 18 -> 17, held-out 9 -> 8)
FLOOR_DECISION_SHARE = 0.5
LNS_MOVE_DTIME = 0.01  # deterministic seconds an LNS move costs at least (building it, reading it back)
# CPU seconds per unit of ``reduce`` (the problem split into parts, a sub-problem each, in Python; load 5:
# S_1-shaped 62k in 2 parts 1.4 s, 1M in 48 parts 42.5 s): at a million units the parts' stage is not
# started unless the time left covers twice that (with no heuristic plan at 1M, 60 s, auto ran 218 s)
REDUCE_SECONDS_PER_UNIT = 4e-5
REDUCE_ONE_PART_SECONDS_PER_UNIT = 5e-6  # one part: no sub-problem to build (idealloc/S_1: 0.13 CPU s)
REDUCE_COLUMNS_SECONDS_PER_UNIT = 1e-5  # split on the arrays (``reduce.columns_only``; 1M in 48 parts: 5.5 CPU s at load 5)


def _auto_clocks(problem: Problem, best: Plan | None, objective: Objective, deadline: Deadline,
                 workers: int, seed: int, stats: dict[str, object]) -> Result:
    """Concurrent lifetimes: CP-SAT's pairwise model from the best heuristic plan; the better wins."""
    from optplan.solvers.clock_models import MAX_CLOCK_PAIRS, cpsat_clocks
    from optplan.solvers.cpsat import Settings

    hint = best.placements if best is not None and best.found else None
    pairs = clock_graph(problem).pairs()
    if hint is not None and pairs > MAX_CLOCK_PAIRS:
        return Result(hint, stats=stats, message=f"{pairs:,} conflicting pairs: too many for the pairwise exact model; "
                                                 "the best heuristic plan stands")
    exact = cpsat_clocks(problem, objective, deadline, Settings(workers, seed), hint)
    exact.stats.update(stats, exact="cpsat (vector clocks)")
    if exact.placements is None or (hint is not None and not exact.proven_optimal
                                    and objective.value(problem, hint) < objective.value(problem, exact.placements)):
        return Result(hint, bound=exact.bound, proven_infeasible=exact.proven_infeasible and hint is None,
                      message=exact.message, stats=exact.stats)
    return exact


def _value(plan: Plan) -> tuple[int, float]:
    return (0 if plan.found else 1, plan.objective_value if plan.objective_value is not None else float("inf"))


@planner("auto", clocks=True)
def auto(problem: Problem, deadline: Deadline, workers: int | None = None, seed: int = 0,
         objective: Objective | str | None = None, progress=None) -> Result:
    """Heuristics -> best as warm start -> exact search engine / CP-SAT / LNS per part; never
    worse than the best heuristic (its plan is returned when the rest does not beat it).
    In feasibility mode at a capacity, and in minimize mode on one memory at its proven bound, the
    search starts at once on the whole problem beside all of that (``_SearchRace``). A small problem
    that a heuristic settles ends before any of it, in this thread (``quick_look``).

    ``workers`` (default: every core) run the heuristics side by side and the solvers' threads."""
    objective = Objective.parse(objective, problem)
    workers = workers or os.cpu_count() or 1
    quick = quick_look(problem, deadline, seed, objective, progress)
    if quick is not None:
        return quick
    race = _SearchRace.start(problem, deadline, objective, seed, workers, progress)
    if race is None:
        return _auto(problem, deadline, workers, seed, objective, progress)
    return race.settle(race.beside(lambda: _auto(problem, race.rest, workers, seed, objective, progress)))


def _auto(problem: Problem, deadline: Deadline, workers: int, seed: int, objective: Objective, progress) -> Result:
    """``auto`` but for the search's race."""
    t0 = time.perf_counter()
    left = deadline.left()  # keep time to merge and validate the plan (about 1 s per 30k buffers)
    work = deadline.part(left - min(0.1 * left, 0.2 + 1e-4 * len(problem.buffers))) if deadline.limited else deadline
    early = _early_search(problem, work, objective, seed, workers)
    # every constructive heuristic always runs; the improving ones only when the peak matters
    # (at a capacity in feasibility mode the exact search answers sooner) and no staging relaxation
    # follows (benefit first with memory choices: its selections, packed, are the plans that count,
    # and hill-climb's seconds, about as many as the constructive ones took, are the relaxation's)
    staging = objective.benefit_first and any(len(u.memories) > 1 for u in problem.units)
    heur, errors = run_heuristics(problem, work, seed, workers - (early is not None),
                                  improve=objective.optimizes and not staging, objective=objective)
    stats: dict[str, object] = {"heuristics": {p.planner: p.objective_value for p in heur},
                                "heuristics_seconds": {p.planner: round(p.seconds, 2) for p in heur}}
    if early is not None:
        heur += _early_plan(*early, heur, stats)
    best = min(heur, key=_value) if heur else None
    if errors:
        stats["heuristics_not_run"] = errors
    if best is not None and best.found:
        stats["warm_start"] = best.planner
        if progress is not None:
            progress({"best": best.objective_value, "bound": best.objective_bound, "gap": best.gap,
                      "elapsed": time.perf_counter() - t0, "peak": best.peak, "lower": best.lower_bound})
    if best is not None and best.status == Status.OPTIMAL:
        return Result(best.placements, proven_optimal=True, bound=best.lower_bound,
                      message=f"{best.planner} reached the lower bound", stats=stats)
    from optplan.solvers.cpsat import Settings

    settings = Settings(workers, seed)
    if problem.concurrent:  # vector clocks: the pairwise CP-SAT model; the search is routed around
        return _auto_clocks(problem, best, objective, work, workers, seed, stats)
    elastic = best is None or not best.found
    if elastic and _elastic_ok(problem) and objective.optimizes and _parts_affordable(problem, work):
        # every heuristic hit a capacity: descend from a plan without capacities instead (in
        # feasibility mode the search answers the capacity question directly, sooner: B 10.2 s -> ~1 s)
        relaxed = Problem(problem.buffers, tuple(replace(m, capacity=None) for m in problem.memories),
                          problem.relative, dict(problem.metadata))
        peaks_first = Objective(Goal.MIN_PEAK)  # what the descent minimises
        rheur, _ = run_heuristics(relaxed, work, seed, workers, improve=True, objective=peaks_first)
        rbest = min(rheur, key=_value) if rheur else None
        stats["elastic_start"] = None if rbest is None else f"{rbest.planner}: {rbest.objective_value}"
        red = reduce(relaxed, peaks_first)
        merged = _solve_parts(red, rbest, work, t0, settings, red.objective, seed, progress, goal=problem)
        merged.stats.update(stats)
        peak = peaks(problem, merged.placements or {})
        over = [m.name for m in problem.memories if m.capacity is not None and merged.placements is not None
                and peak[m.name] > m.capacity]
        if merged.placements is not None and not over:
            return merged
        proven = [m.name for m in problem.memories if m.capacity is not None
                  and (merged.bound or {}).get(m.name, 0) > m.capacity]
        if proven:
            return Result(None, proven_infeasible=True, stats=merged.stats,
                          message=f"memory {proven[0]!r}: every plan needs {exact_size(merged.bound[proven[0]])}, "
                                  f"its capacity is {exact_size(problem.memory(proven[0]).capacity or 0)}")
        where = over[0] if over else problem.memory_names[0]
        return Result(None, stats=merged.stats, message=f"no plan within the capacity of {where!r} found in time"
                      + (f" (best found needs {exact_size(peak[where])})" if over else ""))
    if not _parts_affordable(problem, work):
        stats["parts_not_run"] = (f"splitting {problem.unit_count:,} units into parts takes about "
                                  f"{_reduce_seconds(problem):.0f} s, {work.left():.1f} s left")
        if best is None or not best.found:
            return Result(None, message="no heuristic plan, and no time to split the problem into parts", stats=stats)
        stats["kept_heuristic"] = best.planner
        return Result(best.placements, bound=best.lower_bound, stats=stats)
    red = reduce(problem, objective)
    merged = _solve_parts(red, best, work, t0, settings, objective, seed, progress, dived=early is not None)
    merged.stats.update(stats)
    if best is not None and best.found and not merged.proven_infeasible and (
            merged.placements is None
            or objective.value(problem, merged.placements) > objective.value(problem, best.placements)):
        merged.stats["kept_heuristic"] = best.planner  # nothing after it did better
        return Result(best.placements, bound=_max_bound(merged.bound, best.lower_bound), message=merged.message,
                      stats=merged.stats)
    return merged


def _reduce_seconds(problem: Problem, one_part: bool = False) -> float:
    """Wall seconds ``reduce`` would take on ``problem`` now (``REDUCE_*SECONDS_PER_UNIT``)."""
    per_unit = REDUCE_ONE_PART_SECONDS_PER_UNIT if one_part else \
        REDUCE_COLUMNS_SECONDS_PER_UNIT if columns_only(problem) else REDUCE_SECONDS_PER_UNIT
    return per_unit * problem.unit_count * registry.slowdown()


def _parts_affordable(problem: Problem, work: Deadline) -> bool:
    """Whether the time left covers splitting the problem into parts (a pass in Python that
    cannot be interrupted), with time to spare for the parts: at the cost of several parts, or of
    one when the buffers of a plain problem form one time section. Deterministic deadlines: always
    (their seconds do not count it, and the plan must not depend on the load)."""
    if not work.limited or work.deterministic or work.left() >= 2 * _reduce_seconds(problem):
        return True
    cols = problem.columns
    held = cols.size > 0  # (units without bytes are no part's)
    return (cols.plain and len(problem.memories) == 1 and _one_section(cols.start[held], cols.end[held])
            and work.left() >= 2 * _reduce_seconds(problem, one_part=True))


def _one_section(start: np.ndarray, end: np.ndarray) -> bool:
    """No time step splits these lifetimes (``reduce.time_sections`` would find one section)."""
    order = np.argsort(start, kind="stable")
    s, reach = start[order], np.maximum.accumulate(end[order])
    return not (s[1:] >= reach[:-1]).any()


def _pairs(start: np.ndarray, end: np.ndarray) -> int:
    """How many pairs of lifetimes ``[start, end)`` overlap."""
    s = np.sort(start)
    return int((np.searchsorted(s, end) - np.searchsorted(s, start)).sum()) - len(s)


def _dives_only(start: np.ndarray, end: np.ndarray) -> bool:
    """The search only dives on these lifetimes: too many overlapping pairs for its adjacency lists."""
    return _pairs(start, end) > search_params().max_overlap_pairs


def _early_search(problem: Problem, work: Deadline, objective: Objective, seed: int,
                  workers: int) -> tuple[Member, Deadline] | None:
    """The search engine on the whole problem in a process of its own, beside the heuristics,
    when it would only dive there (too many overlapping pairs) and its four dives cost less than
    half the time: at that scale its dives (lowest offset first) are the best constructive plans
    (idealloc/S_1: 1.0018 x the bound in about 3 CPU s, the best heuristic 1.0071; 18.7k
    S_1-shaped: 1.0000, greedy-conflicts 1.0015), and they cannot be interrupted, so they must
    not wait for the heuristics' time to run out (they did: S_1 ended at 1.0423)."""
    name = SEARCH_MEMBERS[0] if SEARCH_MEMBERS else ""
    if (problem.unit_count <= SEARCH_MAX_UNITS or problem.concurrent or not _can_race(workers, work)
            or not work.limited or not registry.registered(name) or not jit.usable("search")):
        return None
    start, end = problem.columns.start, problem.columns.end
    pairs = _pairs(start, end)
    if pairs <= search_params().max_overlap_pairs or 4 * DIVE_SECONDS_PER_PAIR * pairs > 0.5 * work.left():
        return None
    # after the pairs: a pass over every unit (a million S_1-shaped buffers: seconds, for a search not run)
    declines = getattr(registry.get(name), "declines", None)
    if declines is not None and declines(problem):
        return None
    searching = work.part(EARLY_SHARE * work.left())  # it ends in time to check and send back its plan
    member = fork_member(lambda d: registry.solve(problem, name, deadline=d, seed=seed, objective=objective,
                                                  workers=1, params=search_params()), searching, grace=1.0)
    return member, searching


def _early_plan(member: Member, searching: Deadline, heur: list[Plan], stats: dict[str, object]) -> list[Plan]:
    """The early search's plan (waited for unless a heuristic reached the bound), as a warm start."""
    if any(p.status == Status.OPTIMAL for p in heur):
        searching.halt()
    plan = member.result()
    if not isinstance(plan, Plan):
        stats["early_search"] = member.error or "no answer"
        return []
    stats["early_search"] = f"{plan.status.value} {plan.objective_value} in {plan.seconds:.1f} s"
    return [plan] if plan.found else []


class _SearchRace:
    """The search on the whole problem in a process of its own from the start, with half the
    workers (one on two cores, as ``--planner search`` runs), while the rest of auto (heuristics,
    then per part the search, CP-SAT and LNS) runs here on ``rest`` at a lower priority
    (``beside``). Whichever settles the question first stops the other.

    Feasibility mode at a capacity: the question is a plan within the capacities, or a proof that
    none exists. So auto takes about the search's time (minimalloc A at 1 MiB: the search alone
    1.8 s; auto 2.1-2.8 s at load ~1 when it ran the heuristics, then the search 0.2 s alone, then
    forked it afresh beside CP-SAT), and CP-SAT still packs what the search does not (E: auto 1.7 s
    where the search took 7.5 s).

    Minimize mode, one memory (``floor``): the search minimizes (``_minimize_search``), its proven
    bound (the load bound, one grid unit higher after each refutation) getting ``RACE_FLOOR_SHARE``
    times the slice of the decision below its best plan, first: a plan at the bound is optimal and
    settles the race. Most instances with a known optimum have it at the load bound, and the rest of
    auto got there later than the search alone at a capacity. Where the optimum lies above the
    bound and the bound cannot be decided (minimalloc D; perturbed A-E), deciding the bound alone
    left this core idle for the plan: the race's plan now comes down too, and the answer is the
    better of the two plans, with the higher of the two bounds. The race ends after
    ``FLOOR_RACE_SHARE`` of the time. Here the rest keeps the caller's priority, but for its own
    search members (``RACE_NICE``: they repeat much of this one's work). At nice 19 (after its
    heuristics; before them it was left without any plan in 10 s) its CP-SAT decisions at the
    bound, which pack or refute what the search does not, starved on a busy machine (load 6,
    generated cuts at 10 s: 63/70 proven against 65/70 at equal priority; tight, 15 s: 6/10
    against 7/10), and so did its plan where the optimum lies above the bound (minimalloc D). With
    its search members at equal priority too, this search got a third of the CPU (E not proven in
    60 s at load 8, the search alone 16.8 s)."""

    def __init__(self, problem: Problem, objective: Objective, member: Member, searching: Deadline, rest: Deadline,
                 floor: bool = False) -> None:
        self.problem, self.objective = problem, objective
        self.member, self.searching, self.rest, self.floor = member, searching, rest, floor
        self.plan: Plan | None = None
        self.thread: threading.Thread | None = None  # the rest's (``beside``)
        self.proven: dict[str, int] = {}  # floor: the bound the search proved
        self.done = threading.Event()  # the rest returned, or the search settled the question
        self.watcher = threading.Thread(target=self._wait, daemon=True, name="optplan-search-race")
        self.watcher.start()

    @classmethod
    def start(cls, problem: Problem, deadline: Deadline, objective: Objective, seed: int,
              workers: int, progress: Callable[[dict], None] | None = None) -> _SearchRace | None:
        name = SEARCH_MEMBERS[0] if SEARCH_MEMBERS else ""
        floor = objective.optimizes and len(problem.memories) == 1 and deadline.limited and FLOOR_RACE_SHARE > 0
        if ((objective.optimizes and not floor) or problem.concurrent or problem.unit_count > SEARCH_MAX_UNITS
                or (not floor and all(m.capacity is None for m in problem.memories))
                or not _can_race(workers, deadline) or not registry.registered(name) or not jit.usable("search")):
            return None
        declines = getattr(registry.get(name), "declines", None)
        if declines is not None and declines(problem):
            return None
        mine = max(1, workers // 2)
        searching = deadline.part(FLOOR_RACE_SHARE * deadline.left() if floor else None)
        if floor:
            relay = _relay(problem, objective) if progress is not None else None  # its plans, as it finds them
            extra = () if relay is None else (relay,)
            member = fork_member(lambda d: _minimize_search(problem, name, d, seed, mine, objective, *extra), searching,
                                 grace=1.0, partial=progress)
        else:
            member = fork_member(lambda d: registry.solve(problem, name, deadline=d, seed=seed, objective=objective,
                                                          workers=mine), searching, grace=1.0)
        return cls(problem, objective, member, searching, deadline.part(None), floor)

    def beside(self, rest: Callable[[], Result]) -> Result | None:
        """``rest()`` on a thread of lower priority (``RACE_NICE``; not in minimize mode), and the
        threads it starts (CP-SAT's, the heuristics'): on a busy machine the search keeps the core it
        has when run alone (on minimalloc A at load 1.5-2.7 the search took 3.4-4.0 s beside CP-SAT
        at equal priority, 1.8 s alone). None when the search settled first, or (feasibility mode)
        the rest is still running ``RACE_GRACE`` after the deadline: halted or out of time, it winds
        down on its own (a model being built, a member's answer) instead of holding the answer back."""
        out: list[Result | BaseException] = []

        def run() -> None:
            if self.floor:  # minimize mode: the rest's CP-SAT proves what the search does not (see start)
                _FLOOR_RACE.on = True  # its own search members give way (``_race``)
            else:
                _lower_priority(RACE_NICE)
            try:
                out.append(rest())
            except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
                out.append(e)
            finally:
                self.done.set()

        # in this planner's context: the kernel gate decides on its deadline there too (``jit.usable``)
        self.thread = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True,
                                       name="optplan-race-rest")
        self.thread.start()
        # minimize mode: the rest's plan is the answer unless the search's is optimal, so it is waited for
        self.done.wait(self.rest.left() + RACE_GRACE if self.rest.limited and not self.floor else None)
        if not out:
            return None
        if isinstance(out[0], BaseException):
            raise out[0]
        return out[0]

    def _wait(self) -> None:
        plan = self.member.result()
        self.plan = plan if isinstance(plan, Plan) else None
        if self.floor and self.plan is not None:
            self.proven = dict(self.plan.lower_bound)
        if self.plan is not None and (self.plan.status in (Status.OPTIMAL, Status.INFEASIBLE)
                                      or (self.plan.found and not self.floor)):
            self.rest.halt()  # settled: CP-SAT, LNS and the heuristics stop
            self.done.set()

    def settle(self, result: Result | None) -> Result:
        """The answer: ``result`` (the rest's) if it settled the question, else the search's.
        Floor: the search's plan when it found one (optimal), else the rest's with the bound the
        search proved."""
        if result is None:
            result = Result(None, message=self.rest.cancelled or "time limit reached")  # (or the search's answer below)
        if result.placements is not None or result.proven_infeasible:
            self.searching.halt()
        self.watcher.join()
        plan = self.plan
        stats = dict(result.stats)
        stats["search_race"] = (self.member.error or "no answer") if plan is None else \
            f"{plan.status.value} in {plan.seconds:.2f} s, {plan.stats.get('nodes', 0):,} nodes" + (f" at {sizes_text(self.proven)}" if self.floor else "")
        if self.floor and plan is not None and plan.status == Status.OPTIMAL:
            # the halted rest winds down first: a CP-SAT solve still running when the interpreter
            # exits aborts it ("terminate called without an active exception", seen once in 70 runs)
            if self.thread is not None:
                self.thread.join(RACE_GRACE)
            return Result(plan.placements, proven_optimal=True, bound=self.proven,
                          message=f"search: a plan at the proven bound ({sizes_text(self.proven)})", stats=stats)
        if self.floor and (plan is None or plan.status != Status.INFEASIBLE):
            bound = {**self.proven, **{m: max(v, self.proven.get(m, 0)) for m, v in (result.bound or {}).items()}}
            if plan is not None and plan.found and (result.placements is None or
                                                    self.objective.value(self.problem, plan.placements)
                                                    < self.objective.value(self.problem, result.placements)):
                stats["kept_search_race"] = True  # the race's minimization beat the rest
                return Result(plan.placements, bound=bound, message=result.message, stats=stats)
            return replace(result, bound=bound or None, stats=stats)
        if result.placements is not None or result.proven_infeasible or plan is None:
            return replace(result, stats=stats)
        if plan.found:
            return Result(plan.placements, bound=plan.lower_bound, message=plan.message, stats=stats)
        if plan.status == Status.INFEASIBLE:
            return Result(None, proven_infeasible=True, message=plan.message, stats=stats)
        return replace(result, stats=stats)


def _minimize_search(problem: Problem, name: str, deadline: Deadline, seed: int, workers: int,
                     objective: Objective, progress: Callable[[dict], None] | None = None) -> Plan:
    """Search planner ``name`` minimizing a one-memory ``problem``, in a forked process (the race):
    its time slices alternate between the proven bound and a plan below its best, the bound's slice
    ``RACE_FLOOR_SHARE`` times the other's, first. A plan at the bound is optimal (most instances
    with a known optimum have it at the load bound); where the optimum lies above (minimalloc/D)
    the plan keeps coming down on this process's core."""
    return registry.solve(problem, name, deadline=deadline, seed=seed, objective=objective, workers=workers,
                          params=replace(search_params(), floor_share=RACE_FLOOR_SHARE), progress=progress)


def _relay(problem: Problem, objective: Objective) -> Callable[[dict], None]:
    """In the race's member: the search's progress (the one memory's peak and bound in bytes) as
    ``auto`` reports it (the objective's value and bound, and the bytes), sent to the parent's
    display as the search finds it (``lifecycle.report``), not when the race ends."""
    from optplan.core.lifecycle import report

    m = problem.memory_names[0]
    weight = objective.weights(problem)[m]

    def send(info: dict) -> None:
        best, bound = info.get("best"), info.get("bound")
        report({**info, "best": None if best is None else weight * best, "bound": None if bound is None else weight * bound,
                "peak": None if best is None else {m: best}, "lower": None if bound is None else {m: bound}})
    return send


def _lower_priority(nice: int) -> None:
    """This thread, and the threads it starts, ``nice`` steps lower in priority (Linux: nice values
    are per thread; elsewhere nothing is changed)."""
    if sys.platform != "linux":
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:
        pass


def _max_bound(a: dict[str, int] | None, b: dict[str, int]) -> dict[str, int]:
    return {m: max(v, (a or {}).get(m, 0)) for m, v in b.items()}


def _elastic_ok(problem: Problem) -> bool:
    """Relaxing capacities keeps the question when memories are decided: each memory's peak
    then only has to come down below its capacity."""
    return (any(m.capacity is not None for m in problem.memories)
            and all(len(u.memories) == 1 for u in problem.units))


def _solve_parts(red: Reduction, best: Plan | None, deadline: Deadline, t0: float, settings: Settings,
                 objective: Objective, seed: int, progress, goal: Problem | None = None, dived: bool = False) -> Result:
    """``solve_part`` on every part, smallest first, each with its share of the time; merged.

    ``goal``: stop a part as soon as its peaks fit the capacities of this problem. ``dived``: the
    search ran on the whole problem (``_early_search``): parts where it only dives do without it."""
    from optplan.solvers.cpsat import part_result
    from optplan.solvers.parts_loop import Tracker

    tracker = Tracker(red, progress, t0)
    results: list[Result | None] = [None] * len(red.parts)
    # smallest first: time they leave unused goes to the larger parts after them
    order = sorted(range(len(red.parts)), key=lambda i: len(red.parts[i].units))
    # a memory's peak is the max over its sections: a section below the others' best bound is done
    floor: dict[str, int] = {}
    for part in red.parts:
        if len(part.memories) == 1:
            m = part.memories[0]
            floor[m] = max(floor.get(m, 0), part.lower[m] * part.scale)
    left_units = sum(len(p.units) for p in red.parts)
    starts = [settle(part, best.placements) if best is not None and best.found else None for part in red.parts]
    for i, part in enumerate(red.parts):  # progress reports the whole plan from the start
        if starts[i] is not None:
            tracker.latest[i] = part_result(part, None, starts[i], False, False, None)
    for i in order:
        part = red.parts[i]
        share = deadline.share(len(part.units) / max(left_units, 1))
        left_units -= len(part.units)
        incumbent = starts[i]
        caps = None
        if goal is not None:
            caps = {m: goal.memory(m).capacity // part.scale for m in part.memories
                    if goal.memory(m).capacity is not None}
        elif objective.optimizes and len(part.memories) == 1:
            caps = {part.memories[0]: floor[part.memories[0]] // part.scale}
        results[i] = solve_part(part, share, settings, objective, incumbent, seed,
                                functools.partial(tracker.update, i), goal=caps, dived=dived)
        tracker.update(i, results[i])
        if results[i].proven_infeasible:
            break
    done = [r if r is not None else Result(None, message="not solved: an earlier part is infeasible") for r in results]
    return merge(red, done)


def solve_part(part: Part, deadline: Deadline, settings: Settings, objective: Objective,
               incumbent: list[Choice] | None, seed: int, report: Callable[[Result], None],
               goal: dict[str, int] | None = None, dived: bool = False) -> Result:
    """The portfolio on one part: the staging relaxation where units choose memories (its
    selections packed exactly, which may already prove the optimum), then the search engine,
    CP-SAT until it stalls, then LNS.

    ``goal`` (per-memory peaks in grid units): good enough, stop there (elastic capacities).
    The bound a search member proved before its share ran out (capacities it refuted) is kept:
    a plan found later at that bound is then proven optimal."""
    from optplan.solvers.cpsat import part_result

    proven: dict[str, int] = {}
    staged = Staged()
    if len(part.memories) > 1 and objective.counts_benefit and goal is None:
        # the staging relaxation's time counts against the part's (the deadline runs on)
        incumbent = _staging(part, objective, incumbent, deadline.share(STAGING_SHARE), settings, seed, staged)
        if staged.proven and incumbent is not None:
            return replace(part_result(part, None, incumbent, True, False, None, "", {"staging": staged.stats}),
                           lost_bound=staged.lost, objective_bound=staged.weighted)
    res = _solve_part(part, deadline, settings, objective, incumbent, seed, report, goal, proven, dived)
    if staged.stats and res.placements is not None:
        lost, weighted = staged.join(objective, res.lost_bound, res.objective_bound)
        res = replace(res, stats={**res.stats, "staging": staged.stats}, lost_bound=lost, objective_bound=weighted)
    if res.placements is None or not proven:
        return res
    bound = dict(res.bound or {})
    for m in part.memories:
        bound[m] = max(bound.get(m, 0), proven.get(m, 0))
    peak = peaks(part.sub_problem, res.placements)
    optimal = res.proven_optimal or (objective.optimizes and all(peak[m] <= bound[m] for m in part.memories)
                                     and (len(part.memories) == 1 or not objective.counts_benefit))
    return replace(res, bound=bound, proven_optimal=optimal)


@dataclass
class Staged:
    """What the staging relaxation proved for a part: ``lost`` bounds its ``L``; ``weighted``
    bounds ``W`` among plans with ``L`` at ``lost`` (fast-first); ``proven``: a plan reached both."""

    lost: int | None = None
    weighted: int | None = None
    proven: bool = False
    stats: dict[str, object] = field(default_factory=dict)

    def join(self, objective: Objective, lost: int | None, weighted: int | None) -> tuple[int | None, int | None]:
        """Ours with a solver's (``L`` bound, ``W`` bound). fast-first: the stronger pair, the
        larger ``L`` and at equal ``L`` the larger ``W`` (a ``W`` bound given a smaller ``L`` says
        nothing about plans that lose more). min-peak: the solver's ``W`` (it holds for every
        plan) with the larger ``L`` (ours holds for every plan, so for those at that ``W`` too)."""
        if not objective.benefit_first:
            return max(self.lost or 0, lost or 0) or None, weighted
        mine, theirs = (self.lost or 0, self.weighted or 0), (lost or 0, weighted or 0)
        best = max(mine, theirs) if mine[0] != theirs[0] else (mine[0], max(mine[1], theirs[1]))
        return best[0] or None, best[1] or None


def _staging(part: Part, objective: Objective, incumbent: list[Choice] | None, deadline: Deadline,
             settings: Settings, seed: int, staged: Staged) -> list[Choice] | None:
    """The staging relaxation (``optplan.solvers.selection``) and its selections packed: returns
    the better of ``incumbent`` and the packed selections; fills ``staged``.

    Relax and verify (fast-first): the relaxation's best selection, with the least peaks among
    those that lose no more, is packed exactly, memory by memory, by the search engine. If it
    packs at its live loads, the plan meets both bounds: optimal. A memory's units that provably
    do not pack there are cut off for good (``Staging.forbid``: the bounds rise); ones not packed
    in time are excluded to try another selection (the bounds proven so far stay)."""
    from optplan.solvers.selection import Staging, pack_selection

    model = Staging(objective, part)
    lost, chosen, optimal = model.least_lost(deadline.share(0.6), settings)
    staged.lost = lost
    staged.stats = {"relaxation": "optimal" if optimal else "feasible" if chosen else "nothing in time"}
    if chosen is None:
        return incumbent
    incumbent = _keep_better(objective, part, incumbent, pack_selection(part, chosen))
    tries = cuts = 0
    misses: list[str] = []
    while registry.registered("search") and objective.benefit_first and optimal and not deadline.expired():
        tries += 1
        weighted, chosen = model.least_peaks(model.lost_of(chosen), deadline.share(0.5), settings)
        if chosen is None:
            misses.append("least peaks: nothing in time")
            break
        incumbent = _keep_better(objective, part, incumbent, pack_selection(part, chosen))
        if model.exact:  # no selection excluded without proof yet
            staged.weighted = weighted
        packed, failed = _pack_exactly(part, objective, chosen, deadline.share(0.7), settings, seed)
        incumbent = _keep_better(objective, part, incumbent, packed)
        if packed is not None:
            staged.proven = _meets(objective, part, packed, staged)
            misses += [] if staged.proven else ["packed above the bounds"]
            break
        if failed is None:
            break
        misses.append(f"{failed[0]}: {len(failed[1])} units {'proven not to pack' if failed[2] else 'not packed in time'}")
        model.forbid(*failed)
        if failed[2] and model.exact:  # a proven cut: the bound on L may rise
            cuts += 1
            lost, chosen, optimal = model.least_lost(deadline.share(0.3), settings)
            if chosen is None:
                break
            staged.lost, staged.weighted = max(staged.lost or 0, lost or 0), None
    staged.stats.update(tries=tries, proven_cuts=cuts, misses=misses[-5:], proven=staged.proven,
                        lost_bound=staged.lost)
    return incumbent


def _keep_better(objective: Objective, part: Part, incumbent: list[Choice] | None,
                 mine: list[Choice] | None) -> list[Choice] | None:
    return mine if mine is not None and (incumbent is None or _better(objective, part, mine, incumbent)) else incumbent


def _meets(objective: Objective, part: Part, choices: list[Choice], staged: Staged) -> bool:
    """The part's plan reaches the staged bounds on ``L`` and ``W``."""
    if staged.lost is None or staged.weighted is None:
        return False
    placements = part.placements(choices)
    weights = objective.weights(part.problem)
    peak = peaks(part.sub_problem, placements)
    return (objective.lost(part.problem, placements) <= staged.lost
            and sum(weights[m] * peak[m] for m in part.memories) <= staged.weighted)


def _pack_exactly(part: Part, objective: Objective, chosen: list[str], deadline: Deadline, settings: Settings,
                  seed: int) -> tuple[list[Choice] | None, tuple[str, list[int], bool] | None]:
    """Each memory's selected units packed alone in that memory (a weight-0 memory only within its
    capacity, the others at their least peak): the part's plan, or None and (memory, unit
    indices, whether they were proven not to pack there)."""
    from optplan.solvers.selection import alone

    weights = objective.weights(part.problem)
    placements: dict[str, Placement] = {}
    groups = [(m, [k for k, c in enumerate(chosen) if c == m]) for m in part.memories]
    left = len(part.units)
    for m, ks in (g for g in groups if g[1]):  # fastest first: capacitated memories are the ones that may not pack
        goal = Objective(Goal.MIN_PEAK if weights[m] else Goal.FEASIBLE)
        plan = _pack_alone(alone(part, m, ks), goal, deadline.share(len(ks) / max(left, 1)), settings, seed)
        left -= len(ks)
        if not plan.found:
            return None, (m, ks, plan.status is Status.INFEASIBLE)
        placements.update(plan.placements)
    return settle(part, placements), None


def _pack_alone(problem: Problem, goal: Objective, deadline: Deadline, settings: Settings, seed: int) -> Plan:
    """One memory's selected units: the search engine first (``PACK_SEARCH_SHARE`` of the time),
    then, when it neither proved nor refuted, CP-SAT on the rest (it packs some 80-unit sets
    at 50 % of the load that the search does not: generated and MiniMalloc-style instances);
    the better plan."""
    plan = registry.solve(problem, "search", deadline=deadline.share(PACK_SEARCH_SHARE), seed=seed,
                          workers=settings.workers, objective=goal)
    settled = plan.status in (Status.OPTIMAL, Status.INFEASIBLE) or (plan.found and not goal.optimizes)
    if settled or not registry.registered("cpsat") or deadline.expired():
        return plan
    other = registry.solve(problem, "cpsat", deadline=deadline, seed=seed, workers=settings.workers, objective=goal)
    if other.found and (not plan.found or other.objective_value < plan.objective_value):
        return other
    return plan if plan.found or other.status is not Status.INFEASIBLE else other


def _solve_part(part: Part, clock: Deadline, settings: Settings, objective: Objective,
                incumbent: list[Choice] | None, seed: int, report: Callable[[Result], None],
                goal: dict[str, int] | None, proven: dict[str, int], dived: bool = False) -> Result:
    """``solve_part``'s members on one shared ``Incumbent``: the search engine (single-memory
    parts) and CP-SAT until it stalls, then LNS. With several workers on a wall clock they race
    (``_race``): the search in a process of its own, the others here, the first proof or a plan
    at ``goal`` stops the rest. Otherwise (one worker, or a deterministic deadline: one process,
    repeatable) one after the other, the search first on ``SEARCH_SHARE`` of the time.
    ``proven`` receives the search's per-memory bounds (bytes)."""
    from optplan.portfolio.incumbent import Incumbent
    from optplan.solvers.cpsat import part_result
    from optplan.solvers.part_plans import at_floor, part_peaks

    stats: dict[str, object] = {}
    if incumbent is not None and objective.optimizes and at_floor(objective, part, incumbent):
        return part_result(part, None, incumbent, True, False, None, "", stats)
    if not objective.optimizes and incumbent is not None:
        return part_result(part, None, incumbent, False, False, None, "", stats)
    inc = Incumbent(part, objective, incumbent, report)

    def reached(choices: list[Choice] | None) -> bool:
        return goal is not None and choices is not None and all(
            v <= goal.get(m, v) for m, v in part_peaks(part, choices).items())

    if reached(incumbent):
        return part_result(part, None, incumbent, False, False, None, "", stats)
    members = _search_members(part, clock, settings, dived)
    if members and _can_race(settings.workers, clock):
        if SEARCH_FIRST > 0 and len(part.units) <= SEARCH_MAX_UNITS:  # alone first: a fork and CP-SAT's model cost more than most answers
            plan = _run_search(members[0], part, clock.part(min(SEARCH_FIRST, clock.left())), 1, objective, seed,
                               goal, stats)
            verdict = _take_search(plan, members[0], part, inc, proven, reached, stats)
            if verdict is not None:
                return verdict
        return _race(part, clock, settings, objective, inc, seed, goal, proven, members, reached, stats)
    for name in members:
        plan = _run_search(name, part, clock.share(SEARCH_SHARE), settings.workers, objective, seed, goal, stats)
        verdict = _take_search(plan, name, part, inc, proven, reached, stats)
        if verdict is not None:
            return verdict
    exact = _exact(part, clock, settings, objective, inc, seed, reached, stats, proven)
    return exact.result(part, inc, stats)


def _search_members(part: Part, clock: Deadline, settings: Settings, dived: bool = False) -> list[str]:
    """The registered exact search engines that take this part (one memory; a large part only
    when its time covers the search's set-up and first dives, and not when the search only dives
    there and has dived on the whole problem already: ``dived``)."""
    members = [name for name in SEARCH_MEMBERS if registry.registered(name)]  # (imports the search: its kernel group)
    if len(part.memories) != 1 or not members or not jit.usable("search"):  # no compiled kernels: it would run heuristics
        return []
    if dived and len(part.units) > SEARCH_MAX_UNITS and _dives_only(
            np.array([u.start for u in part.units], np.int64), np.array([u.end for u in part.units], np.int64)):
        return []
    share = 1.0 if _can_race(settings.workers, clock) else SEARCH_SHARE
    if (len(part.units) > SEARCH_MAX_UNITS and clock.limited
            and clock.left() * share < SEARCH_SECONDS_PER_UNIT * len(part.units)):
        return []
    return members


def _can_race(workers: int, clock: Deadline) -> bool:
    return workers > 1 and not clock.deterministic and "fork" in mp.get_all_start_methods()


def _run_search(name: str, part: Part, clock: Deadline, workers: int, objective: Objective, seed: int,
                goal: dict[str, int] | None, stats: dict[str, object]) -> Plan | None:
    """The search engine on the part (its work counts against ``clock``, deterministic mode too);
    None if it failed (reported in ``stats``: a failing member must not sink the portfolio)."""
    try:
        return registry.solve(part.sub_problem, name, deadline=clock, seed=seed, objective=objective, workers=workers,
                              goal=None if goal is None else {m: v * part.scale for m, v in goal.items()})
    except Exception as e:  # noqa: BLE001 - reported
        stats[f"{name}_error"] = f"{type(e).__name__}: {e}"
        return None


def _take_search(plan: Plan | None, name: str, part: Part, inc: Incumbent, proven: dict[str, int],
                 reached: Callable[[list[Choice] | None], bool], stats: dict[str, object]) -> Result | None:
    """Offer the search's plan and keep its bounds; the part's answer if that settles it."""
    from optplan.solvers.cpsat import part_result

    if plan is None:
        return None
    stats[f"{name}_status"] = plan.status.value
    for m, v in plan.lower_bound.items():
        proven[m] = max(proven.get(m, 0), v)
    if plan.status == Status.INFEASIBLE:
        return Result(None, proven_infeasible=True, message=plan.message, stats=stats)
    if not plan.found:
        return None
    mine = settle(part, plan.placements)
    inc.offer(mine, name)
    best, _ = inc.get()
    if plan.status == Status.OPTIMAL and mine is not None:
        return part_result(part, None, best, True, False, None, "", stats)
    if reached(best) or not inc.objective.optimizes:
        return part_result(part, None, best, False, False, None, "", stats)
    return None


def _race(part: Part, clock: Deadline, settings: Settings, objective: Objective, inc: Incumbent, seed: int,
          goal: dict[str, int] | None, proven: dict[str, int], members: list[str],
          reached: Callable[[list[Choice] | None], bool], stats: dict[str, object]) -> Result:
    """The search engine in a forked process beside CP-SAT and LNS here, on the whole part's
    time and half the workers each; whichever settles the part first halts the other. A plan
    the search returns enters the incumbent that LNS reads before each move."""
    from optplan.solvers.cpsat import part_result

    name = members[0]
    mine = max(1, settings.workers // 2)
    searching, exact_clock = clock.part(None), clock.part(None)
    caps = None if goal is None else {m: v * part.scale for m, v in goal.items()}
    quiet = getattr(_FLOOR_RACE, "on", False)  # the search at the bound runs beside: this one gives way to it

    def searching_member(d: Deadline) -> Plan:
        options = {}
        if quiet:  # (a forked process)
            _lower_priority(RACE_NICE)
            # the race decides the bound: all of this one's time goes to a better plan
            options["params"] = replace(search_params(), floor_share=0.0)
        return registry.solve(part.sub_problem, name, deadline=d, seed=seed, objective=objective, workers=mine, goal=caps,
                              **options)

    member = fork_member(searching_member, searching)
    verdict: list[Result | None] = [None]

    def wait() -> None:
        plan = member.result()
        if member.error:
            stats[f"{name}_error"] = member.error
        verdict[0] = _take_search(plan, name, part, inc, proven, reached, stats)
        if verdict[0] is not None:
            exact_clock.halt()

    watcher = threading.Thread(target=wait, daemon=True, name=f"optplan-{name}")
    watcher.start()
    exact = _exact(part, exact_clock, replace(settings, workers=max(1, settings.workers - mine)), objective, inc,
                   seed, reached, stats, proven)
    if exact.settled:
        searching.halt()
    watcher.join()
    if verdict[0] is not None:
        return verdict[0] if verdict[0].placements is None else part_result(
            part, None, inc.get()[0], verdict[0].proven_optimal, False, None, "", stats)
    return exact.result(part, inc, stats)


class _Exact:
    """What CP-SAT and LNS concluded on a part (their plans are in the incumbent)."""

    def __init__(self, pm: PartModel | None = None, optimal: bool = False, infeasible: bool = False,
                 bound: int | None = None, message: str = "") -> None:
        self.pm, self.optimal, self.infeasible, self.bound, self.message = pm, optimal, infeasible, bound, message

    @property
    def settled(self) -> bool:
        return self.optimal or self.infeasible

    def result(self, part: Part, inc: Incumbent, stats: dict[str, object]) -> Result:
        from optplan.solvers.cpsat import part_result

        best, _ = inc.get()
        if self.infeasible and best is None:
            return Result(None, proven_infeasible=True, message="CP-SAT proved that no plan fits the capacities", stats=stats)
        if best is None:
            return Result(None, message=self.message or "no plan found", stats=stats)
        return part_result(part, self.pm, best, self.optimal, False, self.bound, self.message, stats)


def _exact(part: Part, clock: Deadline, settings: Settings, objective: Objective, inc: Incumbent, seed: int,
           reached: Callable[[list[Choice] | None], bool], stats: dict[str, object],
           proven: dict[str, int] | None = None) -> _Exact:
    """CP-SAT on the whole part: decisions at the proven bound first (``_floor_decisions``), then
    minimization warm-started from the incumbent until it stalls; then LNS while time is left, and
    CP-SAT once more if LNS improved the plan. Parts too large for the full model get LNS only.
    Stops early at a proof, a plan at the goal, or a halt. ``proven``: per-memory bounds (bytes)
    proven so far, raised here by refuted decisions."""
    from optplan.solvers.cpsat import FULL_MODEL_MAX_UNITS, PartModel, run
    from optplan.solvers.outcome import stop_reason
    from optplan.solvers.part_plans import part_peaks

    left = clock.left
    incumbent, _ = inc.get()
    if reached(incumbent):
        return _Exact(message=stop_reason(clock))
    if (len(part.units) <= FULL_MODEL_MAX_UNITS and proven is not None
            and _floor_decisions(part, clock, settings, objective, inc, proven, stats)):
        return _Exact(optimal=True)
    incumbent, _ = inc.get()
    if reached(incumbent):
        return _Exact(message=stop_reason(clock))
    if len(part.units) > FULL_MODEL_MAX_UNITS:  # too large for the full model: LNS only
        if incumbent is None:
            return _Exact(message="no plan found for a part too large for the full model")
        stats.update(lns(part, inc, settings, objective, clock, seed, goal=reached))
        return _Exact(message=stop_reason(clock))
    # only a plan at least as good is of interest; per memory that holds for one memory only
    single = incumbent is not None and objective.optimizes and len(part.memories) == 1
    ceiling = part_peaks(part, incumbent) if single else None
    try:
        pm = PartModel(part, objective, ceiling=ceiling)
    except OverflowError as e:
        return _Exact(message=str(e))
    if incumbent is not None:
        pm.hint(dict(enumerate(incumbent)))

    def relay(choices, value, bound):
        if choices is not None:
            inc.offer([c for _, c in sorted(choices.items())], "cpsat")

    # stop on a stall only with a plan to improve: a model still looking for its first plan is not stalled
    stall = max(2.0, 0.2 * left()) if clock.limited and objective.optimizes and incumbent is not None else None
    # deterministic runs cannot stop on a stall (wall-clock): they give the full model half
    out = run(pm, settings, clock.share(0.5) if clock.deterministic else clock, relay, stall=stall)
    stats["cpsat_status"] = out.status
    inc.offer(out.solution, "cpsat")
    if out.infeasible and ceiling is None:
        return _Exact(pm, infeasible=True)
    if inc.get()[0] is None:
        return _Exact(message=f"no plan found: {stop_reason(clock)}")
    if out.optimal or not objective.optimizes or reached(inc.get()[0]):
        return _Exact(pm, out.optimal, bound=out.bound)
    if not clock.limited:  # without a limit the full model ran to its proof
        return _Exact(pm, bound=out.bound)
    lns_stats = lns(part, inc, settings, objective, clock, seed, goal=reached)
    stats.update(lns_stats)
    best_bound = out.bound
    incumbent, _ = inc.get()
    if left() > 1.0 and lns_stats.get("lns_improved") and not reached(incumbent):
        # with a better hint, the full model may now close the gap
        ceiling = part_peaks(part, incumbent) if len(part.memories) == 1 else None  # type: ignore[arg-type]
        pm = PartModel(part, objective, ceiling=ceiling)
        pm.hint(dict(enumerate(incumbent)))  # type: ignore[arg-type]
        out = run(pm, settings, clock, relay)
        stats["cpsat_final_status"] = out.status
        inc.offer(out.solution, "cpsat")
        if out.optimal:
            return _Exact(pm, True, bound=out.bound)
        best_bound = max(best_bound or 0, out.bound or 0) or None
    return _Exact(pm, bound=best_bound, message=stop_reason(clock))


def _floor_decisions(part: Part, clock: Deadline, settings: Settings, objective: Objective, inc: Incumbent,
                     proven: dict[str, int], stats: dict[str, object]) -> bool:
    """Minimizing one memory on a wall clock, CP-SAT decides "a plan with peak <= the proven bound?"
    on up to ``FLOOR_DECISION_SHARE`` of the time: no plan raises the bound by one grid unit and the next
    decision follows; a plan is optimal (True); an undecided one ends the decisions. Minimization
    rarely proves a bound above the live load, while a decision at it often refutes it or finds the
    perfect packing (tight generated instances: experiments/bench_minimize.py)."""
    from optplan.solvers.cpsat import PartModel, run
    from optplan.solvers.part_plans import part_peaks

    # not in deterministic mode: on minimalloc A at 2 deterministic seconds the decisions left LNS no
    # move (5 without them), and the CP-SAT runs there are short shares already
    if not objective.optimizes or len(part.memories) != 1 or not clock.limited or clock.deterministic:
        return False
    if FLOOR_DECISION_SHARE <= 0:
        return False
    m = part.memories[0]
    floor = max(part.lower.get(m, 0), -(-proven.get(m, 0) // part.scale))
    budget = clock.share(FLOOR_DECISION_SHARE)
    decided = 0
    while budget.left() > 0 and not clock.expired():
        best, _ = inc.get()
        if best is not None and part_peaks(part, best)[m] <= floor:
            return True
        try:
            pm = PartModel(part, Objective.parse("feasible", part.problem), ceiling={m: floor})
        except OverflowError:
            return False
        out = run(pm, settings, budget)
        if out.solution is not None:
            inc.offer(out.solution, "cpsat-floor")
            stats["cpsat_floor"] = {"decisions": decided + 1, "found_at": floor * part.scale}
            return True  # at a proven bound
        if not out.infeasible:
            break
        decided += 1
        floor += 1
        proven[m] = max(proven.get(m, 0), floor * part.scale)
    stats["cpsat_floor"] = {"decisions": decided, "bound": floor * part.scale}
    return False


def _better(objective: Objective, part: Part, a: list[Choice], b: list[Choice]) -> bool:
    """Plan ``a`` is better than ``b`` under ``objective`` (the objective of the whole problem)."""
    from optplan.solvers.part_plans import part_value

    return part_value(objective, part, a) < part_value(objective, part, b)


def lns(part: Part, inc: Incumbent, settings: Settings, objective: Objective, clock: Deadline, seed: int,
        goal: Callable[[list[Choice]], bool] = lambda c: False) -> dict[str, int]:
    """Free some units near a unit at the peak, re-solve them with CP-SAT around the others, keep
    the move if it helps; repeat, each move from the incumbent as it is then (other members may
    have replaced it). Odd moves free the highest units anywhere (a long thin unit on top needs
    room at all times), even ones the highest units nearest in time to the peak unit.

    Single memory: only units in a band of addresses below the peak are freed, and only the
    units reaching into the band are obstacles (a floor keeps the freed ones in it), so a move
    stays small on parts of tens of thousands of units with thousands alive at once; the band
    and the number freed grow while moves are solved quickly and shrink on timeouts.
    A move is kept when the freed region's highest top goes down without any peak going up, so
    the number of units at the peak shrinks until the peak itself drops.
    """
    from optplan.solvers.cpsat import PartModel, run

    rng = random.Random(seed)
    left = clock.left
    w = objective_weights(part.problem)
    hood = _Neighbourhood(part)
    size = min(hood.n, LNS_FREE)  # units freed per move
    band = LNS_BAND  # single memory: height of the band, as a fraction of the peak
    iters = improved = 0
    while left() > 0.5 and hood.n > 1:
        cur, version = inc.get()
        if cur is None or goal(cur):
            break
        move = hood.pick(cur, rng, size, band if len(part.memories) == 1 else None, iters % 2 == 1)
        if move is None:
            break
        free, fixed, floor, peak, region_top = move
        pm = PartModel(part, objective if objective.optimizes else Objective(), active=free, fixed=fixed,
                       ceiling=peak, fixed_count=False, floor=floor)
        pm.hint({i: cur[i] for i in free})
        budget = clock.part(max(1.0, 0.1 * left()))
        out = run(pm, settings, budget)
        budget.spend(max(0.0, LNS_MOVE_DTIME - out.dtime))  # deterministic: a small model's solve is not all a move costs
        iters += 1
        if out.solution is not None:
            new = list(cur)
            for i, c in zip(pm.active, out.solution):
                new[i] = c
            new_top: dict[str, int] = {}
            for i in free:
                m = new[i][0]
                new_top[m] = max(new_top.get(m, 0), new[i][1] + hood.units[i].top)
            gain = sum(w[m] * v for m, v in new_top.items()) < sum(w[m] * v for m, v in region_top.items())
            if gain and inc.offer(new, "lns", ties=True, expect=version):
                improved += 1
        if out.optimal:
            size, band = min(hood.n, int(size * 1.3) + 1), min(1.0, band * 1.3)
        elif out.solution is None or (out.dtime if clock.deterministic else out.seconds) >= budget.seconds * 0.9:
            size, band = max(8, int(size * 0.7)), max(0.002, band * 0.7)
    return {"lns_moves": iters, "lns_improved": improved}


class _Neighbourhood:
    """LNS moves on a part: which units to free around a unit at the peak, which stay as obstacles."""

    def __init__(self, part: Part) -> None:
        self.part, self.units = part, part.scaled
        self.n = len(self.units)
        self.start = np.array([u.start for u in self.units], np.int64)
        self.end = np.array([u.end for u in self.units], np.int64)
        self.top = np.array([u.top for u in self.units], np.int64)
        self.low = np.array([u.low for u in self.units], np.int64)
        self.high = np.array([u.high for u in self.units], np.int64)

    def pick(self, cur: list[Choice], rng: random.Random, size: int, band: float | None, anywhere: bool):
        """(free, fixed, floor, peak, region top) of the next move, or None when no unit is above
        its memory's bound. ``band``: free only units in the top ``band`` x peak addresses."""
        names = self.part.memories
        where = np.array([names.index(m) for m, _ in cur], np.int64) if len(names) > 1 else np.zeros(self.n, np.int64)
        off = np.array([o for _, o in cur], np.int64)
        tops = off + self.top
        peaks = np.zeros(len(names), np.int64)
        np.maximum.at(peaks, where, tops)
        lower = np.array([self.part.lower[m] for m in names], np.int64)
        hot = np.flatnonzero((tops >= peaks[where]) & (peaks[where] > lower[where]))
        if not len(hot):
            return None
        c = int(hot[rng.randrange(len(hot))])
        noise = np.array([rng.random() for _ in range(self.n)]) if self.n <= 4096 else \
            np.random.default_rng(rng.getrandbits(32)).random(self.n)
        floor = None
        ok = np.ones(self.n, bool)
        if band is not None:
            y_lo = int(peaks[0] - max(1, int(band * peaks[0])))
            ok = off + self.low >= y_lo
            ok[c] = True
            y_lo = min(y_lo, int(off[c] + self.low[c]))
            floor = {names[0]: y_lo}
        distance = np.maximum(np.maximum(self.start - self.end[c], self.start[c] - self.end), 0)
        keys = (noise, -tops) if anywhere else (noise, -tops, distance)
        ranked = np.lexsort(keys)
        ranked = ranked[ok[ranked]]
        free = np.sort(ranked[:size])
        touch = np.zeros(self.n, bool)  # units alive together with some freed unit: obstacles
        for i in free:
            touch |= (self.start < self.end[i]) & (self.start[i] < self.end)
        if floor is not None:
            touch &= off + self.high > next(iter(floor.values()))  # below the band: out of the freed units' reach
        touch[free] = False
        fixed = {int(i): cur[i] for i in np.flatnonzero(touch)}
        region_top: dict[str, int] = {}
        for i in free:
            m = cur[i][0]
            region_top[m] = max(region_top.get(m, 0), int(tops[i]))
        peak = {m: int(peaks[k]) for k, m in enumerate(names)}
        return [int(i) for i in free], fixed, floor, peak, region_top
