"""Driving the compiled search: decisions over orderings, restarts, worker threads, minimization.

A decision ("does a plan fit under cap?") runs the search round-robin over several static
orderings with node limits that grow fourfold each round: the ordering decides most of the run time,
and restarts keep one bad ordering from eating the budget. A run that ends without hitting its
node limit is complete, so its INFEASIBLE is a proof. With several workers the orderings are
dealt out to threads (the kernel releases the GIL) that stop each other through a shared flag.

Minimization searches upward from the lower bound: every capacity proven infeasible raises the
bound, and the first capacity that admits a plan is the optimum. The budgets, shares and rules
come in one ``SearchParams`` (``params``), passed down from the planner.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from optplan.core.deadline import Deadline, Pacer
from optplan.core.objective import Objective
from optplan.search.compiled import kernels
from optplan.search.instance import Instance, Ordered
from optplan.search.layout import Arrays
from optplan.search.orderings import NO_TABLE, fresh, orderings, section_totals, table_of
from optplan.search.params import ALL_RULES, DEFAULTS, Rules, SearchParams

TIMER_NODES = 1024  # a dive of fewer nodes runs without a timer thread (``_stopped_at``)
_compile_seconds: float | None = None


def ensure_compiled() -> float:
    """Load (or compile, the first time on this machine) the kernels; seconds it took in this process.
    The planner runs this before its search starts: built ahead of time (``compiled``) the kernels
    load in milliseconds; numba's load pulls in its array and BLAS support (scipy), seconds of
    imports under load, and its first compile after an install takes 18 s unloaded (231 s measured
    on a 2-core machine at load 12)."""
    global _compile_seconds
    if _compile_seconds is None:
        t0 = time.perf_counter()
        s0 = np.array([0, 1], np.int64)
        s1 = np.array([2, 3], np.int64)
        ptr, idx = kernels.overlap_graph(s0, s1)
        one = np.ones(2, np.int64)
        zero = np.zeros(2, np.int64)
        pp = np.arange(3, dtype=np.int64)
        arrays = Arrays(one, s0, s1, pp, s0, s1, zero, one, one, zero, zero, one, -one, ptr, idx,
                        np.zeros(3, np.int64), np.zeros(0, np.int64), -one, np.int64(3))
        kernels.search(arrays, ALL_RULES, np.int64(2), np.int64(100), np.zeros(1, np.int64), np.zeros(2, np.int64), *NO_TABLE)
        _compile_seconds = time.perf_counter() - t0
    return _compile_seconds


# -- decisions -------------------------------------------------------------------------------

@dataclass
class Stats:
    """The search's work, summed over kernel runs (a plan's ``stats``), and which orderings found plans."""

    nodes: int = 0
    seconds: float = 0.0  # time inside the search kernel
    runs: int = 0
    winners: dict[str, int] = field(default_factory=dict)

    def add(self, other: Stats) -> None:
        self.nodes += other.nodes
        self.seconds += other.seconds
        self.runs += other.runs
        for k, v in other.winners.items():
            self.winners[k] = self.winners.get(k, 0) + v

    @property
    def rate(self) -> float:
        return self.nodes / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Decision:
    """The answer to "does a plan fit under this capacity?" from the kernel's runs (``decide``)."""

    status: int  # kernels.FOUND, kernels.INFEASIBLE or kernels.LIMIT (time ran out)
    offsets: np.ndarray | None  # scaled rectangle offsets in Instance order
    stats: Stats


def dive(ords: list[Ordered], n: int, lb: int = 0, clock: Deadline | None = None,
         rules: Rules = ALL_RULES) -> tuple[np.ndarray | None, int, Stats]:
    """The search without backtracking and without a capacity: one canonical plan per ordering
    (milliseconds; seconds on thousands of units: after the first plan, only while ``clock`` has
    room for another at the mean so far, and a dive still running when a wall-clock ``clock``
    ends is stopped); the lowest peak wins, and one at ``lb`` ends the dives. Returns (offsets, scaled peak, stats)."""
    stats, best, best_top = Stats(), None, 0
    stop = np.zeros(1, np.int64)
    pace = None if clock is None else Pacer(clock)
    for k, o in enumerate(o for o in ords if o.forced):  # without a capacity no section is tight: a twin dives alike
        if k and pace is not None and not pace.another() and best is not None:
            break
        out = np.zeros(n, np.int64)
        t0 = time.perf_counter()
        with _stopped_at(clock, stop, n + 1):
            status, nodes, _ = kernels.search(o.arrays, rules, np.int64(1) << 60, np.int64(n + 1), stop, out, *NO_TABLE)
        stats.seconds += time.perf_counter() - t0
        stats.nodes += nodes
        stats.runs += 1
        if status == kernels.FOUND:
            top = int((out + o.arrays.size).max()) if n else 0
            if best is None or top < best_top:
                best, best_top = o.unpermute(out), top
            if top <= lb:
                break
        elif stop[0]:
            break
    return best, best_top, stats


def first_descent(inst: Instance, cap: int, clock: Deadline, seed: int = 0,
                  params: SearchParams = DEFAULTS) -> tuple[np.ndarray | None, Stats]:
    """The first ordering's search at ``cap`` (scaled) with room for one descent and a little
    backtracking (``2n`` nodes): on an instance of many easy time parts it packs them all in one
    kernel call, where part by part each pays its own arrays, orderings and dives in Python
    (guillotine cuts: 12 parts on average, the first descent of the whole packs 71 of 140).
    Returns (offsets in Instance order or None, stats)."""
    stats = Stats()
    if inst.large or inst.n == 0:
        return None, stats
    o = orderings(inst, seed)[0]
    status, out = _run(o, inst.n, cap, clock, np.zeros(1, np.int64), 2 * inst.n, stats,
                       replace(params, table_slots=0))  # no failed-state table
    return (o.unpermute(out) if status == kernels.FOUND else None), stats


@contextmanager
def _stopped_at(clock: Deadline | None, stop: np.ndarray, nodes: int) -> Iterator[None]:
    """Within the block, ``stop[0]`` is set when a wall-clock ``clock`` ends or is cancelled (a
    deterministic one: at its wall-clock guard, reported by ``hit_guard``). A run of fewer than
    ``TIMER_NODES`` nodes (milliseconds) gets no timer: starting its thread cost more than the
    dive on small parts (1.5 ms a start at load 4)."""
    if clock is None or not clock.limited or nodes < TIMER_NODES or clock.wall_left() == math.inf:
        yield
        return
    if clock.deterministic:
        timer = threading.Timer(clock.wall_left(), _guard_stop, (clock, stop))
    else:
        timer = threading.Timer(clock.left(), stop.__setitem__, (0, 1))
    timer.daemon = True
    timer.start()
    try:
        with clock.on_cancel(lambda: stop.__setitem__(0, 1)):
            yield
    finally:
        timer.cancel()


def _guard_stop(clock: Deadline, stop: np.ndarray) -> None:
    """A deterministic run reached its wall-clock guard: stop the kernel and say so."""
    clock.hit_guard()
    stop[0] = 1


@dataclass
class Schedule:
    """Where a decision's round robin stands: the node limit of the next round (it starts at
    ``SearchParams.first_limit``) and this worker's next restart ordering (``fresh``, then every
    ``step``-th: workers share them out). A decision whose clock ran out resumes within its round:
    at fixed ordering ``at`` (a run cut short counts as that ordering's turn: retried, it would stall
    wherever a slice is shorter than the round's node limit), with ``owed`` nodes for restart orderings."""
    limit: int
    fresh: int = 0
    step: int = 1
    at: int = 0
    owed: int = 0


def decide(ords: list[Ordered], n: int, cap: int, clock: Deadline, stop: np.ndarray, exact: bool = True,
           schedule: Schedule | None = None, params: SearchParams = DEFAULTS) -> Decision:
    """Round-robin over ``ords`` with node limits growing fourfold until a plan, a proof, or the
    ``clock`` runs out; after each round as many nodes again go to restart orderings (``fresh``),
    each run once with at most ``params.restart_nodes``. Not ``exact``: an ordering's INFEASIBLE only
    retires it (another ordering's canonical plans may differ); INFEASIBLE once all are retired.
    Each ordering keeps its failed-state table (``params.table_slots`` slots) across its restarts: a
    restart skips what failed before. A wall clock spent before the first run (a time part's share of a
    few milliseconds, used up at load by the parts before it) still gets one run of
    ``node_budget``'s minimum while the whole limit lasts: most such decisions end in it. A wall
    clock's end sets ``stop`` (a timer): a run's node budget comes from the rate measured so far,
    and a later round's run, slower per node, overran a 60 s limit by 7 s (guillotine-52)."""
    timed = n >= params.race_min_units and clock.left() >= params.race_min_seconds  # as for a race: else runs are short
    with clock.on_cancel(lambda: stop.__setitem__(0, 1)), _stopped_at(clock, stop, TIMER_NODES if timed else 0):
        return _decide(ords, n, cap, clock, stop, exact, schedule or Schedule(params.first_limit), params)


def node_budget(clock: Deadline, limit: int, rate: float, nodes_per_second: int) -> int:
    """Nodes for the next kernel run, at most ``limit``: the nodes left (deterministic, at
    ``nodes_per_second``), or what the measured ``rate`` (nodes/s) gets done in the time left, at
    least 1000 so that a nearly spent budget still moves."""
    if clock.deterministic:
        return max(0, int(min(limit, clock.left() * nodes_per_second)))
    return max(1000, int(min(limit, rate * clock.left() + 1)))


def _run(o: Ordered, n: int, cap: int, clock: Deadline, stop: np.ndarray, limit: int, stats: Stats,
         params: SearchParams) -> tuple[int, np.ndarray]:
    """One kernel run of ``o`` with at most ``limit`` nodes; (status, offsets in rank order). A
    deterministic ``clock``'s node budget is stopped at its wall-clock guard (a wall-clock one's
    budget is what the measured rate does in the time left)."""
    budget = node_budget(clock, limit, stats.rate or 2e5, params.nodes_per_second)
    out = np.zeros(n, np.int64)
    t0 = time.perf_counter()
    rules = params.rules if o.forced else params.rules._replace(forced=False)
    with _stopped_at(clock if clock.deterministic else None, stop, budget):
        status, nodes, forced = kernels.search(o.arrays, rules, np.int64(cap), np.int64(budget), stop, out,
                                              *table_of(o, params.table_slots, budget))
    if o.forced and status != kernels.FOUND and o.alike.get(cap, 0) >= 0:
        # a run that branched once is never alike again: a later run may skip that branch in its failed-state table
        o.alike[cap] = -1 if forced else max(o.alike.get(cap, 0), int(nodes))
    stats.seconds += time.perf_counter() - t0
    stats.nodes += nodes
    stats.runs += 1
    clock.spend(nodes / params.nodes_per_second)
    if status == kernels.FOUND:
        stats.winners[o.name] = 1
    return int(status), out


def _decide(ords: list[Ordered], n: int, cap: int, clock: Deadline, stop: np.ndarray, exact: bool,
            sched: Schedule, params: SearchParams) -> Decision:
    """``decide``'s round robin, within the stop flag's timer and the clock's cancel hook."""
    stats = Stats()
    ords = list(ords)
    inst, seed = (ords[0].inst, ords[0].seed[0]) if ords else (None, 0)
    while ords:
        while sched.at < len(ords):
            o = ords[sched.at]
            if stop[0] or clock.left() <= 0 and (stats.runs or clock.deterministic or clock.root.left() <= 0):
                return Decision(kernels.LIMIT, None, stats)  # but a share spent before its first run still runs once
            twin = o.forced_twin
            if twin is not None and twin.alike.get(cap, 0) >= sched.limit:
                # its twin searched this tree without branching on a forced section: the same run. Its nodes go
                # to the restart orderings (minimalloc E: 305k nodes, won by restarts; 814k when they went unspent)
                sched.at += 1
                sched.owed += sched.limit
                continue
            before = stats.nodes
            status, out = _run(o, n, cap, clock, stop, sched.limit, stats, params)
            if status == kernels.FOUND:
                return Decision(status, o.unpermute(out), stats)
            if status == kernels.INFEASIBLE and exact:
                return Decision(status, None, stats)
            sched.owed += stats.nodes - before
            if status == kernels.INFEASIBLE:
                ords.remove(o)
            else:
                sched.at += 1
        while inst is not None and sched.owed > 0 and clock.left() > 0 and not stop[0]:
            o = fresh(inst, seed, sched.fresh)
            sched.fresh += sched.step
            before = stats.nodes
            status, out = _run(o, n, cap, clock, stop, min(sched.limit, params.restart_nodes), stats, params)
            sched.owed -= stats.nodes - before
            if status == kernels.FOUND:
                return Decision(status, o.unpermute(out), stats)
            if status == kernels.INFEASIBLE and exact:  # the search within any ordering is complete
                return Decision(status, None, stats)
        if sched.owed > 0:  # the clock ran out or another worker stopped this one
            return Decision(kernels.LIMIT, None, stats)
        sched.at = 0
        sched.limit *= 4  # with 4+ orderings per worker, doubling spent most of the time on early rounds
    return Decision(kernels.INFEASIBLE, None, stats)


def decide_parallel(ords: list[Ordered], n: int, cap: int, clock: Deadline, workers: int, exact: bool = True,
                    schedule: Schedule | None = None, params: SearchParams = DEFAULTS) -> Decision:
    """``decide`` with the orderings and restarts dealt out to ``workers`` threads, the others
    joining the first after ``params.race_delay`` (the kernel runs without the GIL, and a thread starts in
    microseconds where a fork cost more than most decisions: the first ordering and its unforced
    twin race from the first round); the first plan or proof stops the others, and each
    ordering's failed-state table stays in this process for its later decisions. Which one wins
    depends on timing, so a deterministic ``clock`` runs everything in this thread, and so does a
    decision too small to pay for a thread (``params.race_min_units``, ``race_min_seconds``). ``schedule``:
    where the decision resumes and stops, in this thread only (threads start their shares afresh)."""
    workers = min(workers, len(ords))
    if workers <= 1 or clock.deterministic or n < params.race_min_units or clock.left() < params.race_min_seconds:
        return decide(ords, n, cap, clock, np.zeros(1, np.int64), exact, schedule, params)
    stop = np.zeros(1, np.int64)
    outs: list[Decision | BaseException | None] = [None] * workers
    decided = threading.Event()  # set with stop[0]: the others need not start

    def work(k: int) -> None:
        if k and decided.wait(params.race_delay):
            outs[k] = Decision(kernels.LIMIT, None, Stats())
            return
        try:
            out: Decision | BaseException = decide(ords[k::workers], n, cap, clock, stop, exact,
                                                   Schedule(params.first_limit, k, workers), params)
        except BaseException as e:  # re-raised in the caller's thread
            out = e
        if not isinstance(out, Decision) or out.status == kernels.FOUND or (exact and out.status == kernels.INFEASIBLE):
            stop[0] = 1
            decided.set()
        outs[k] = out

    threads = [threading.Thread(target=work, args=(k,), daemon=True, name=f"optplan-search-{k}") for k in range(1, workers)]
    for t in threads:
        t.start()
    work(0)
    for t in threads:
        t.join()
    return _combined(outs, exact)


def _combined(outs: list[Decision | BaseException | None], exact: bool) -> Decision:
    """One outcome of the workers' outcomes: a plan, else a proof (or every ordering retired), else LIMIT."""
    stats = Stats()
    done: list[Decision] = []
    for o in outs:
        if isinstance(o, BaseException):
            raise o
        assert o is not None
        stats.add(o.stats)
        done.append(o)
    for o in done:
        if o.status == kernels.FOUND:
            return Decision(o.status, o.offsets, stats)
    if any(o.status == kernels.INFEASIBLE for o in done) and (exact or all(o.status == kernels.INFEASIBLE for o in done)):
        return Decision(kernels.INFEASIBLE, None, stats)
    return Decision(kernels.LIMIT, None, stats)


# -- minimization ----------------------------------------------------------------------------

@dataclass
class Answer:
    """What ``solve`` found for one instance: a plan (scaled offsets) or none, and what is proven."""

    offsets: np.ndarray | None  # scaled, Instance order; None: no plan
    peak: int | None  # bytes
    bound: int  # proven lower bound on the peak, bytes
    optimal: bool
    infeasible: bool  # proven: nothing fits under the capacity
    timed_out: bool
    stats: Stats
    dive_peak: int | None = None
    note: str = ""  # how the answer was reached when that is not the full search


def _large(inst: Instance, capacity: int | None, lower: int, clock: Deadline, params: SearchParams = DEFAULTS) -> Answer:
    """Too many overlapping pairs for the search's adjacency lists: the lowest-offset-first dive
    (segment tree and heap), under a few tie-breaking orders; no proof beyond the load bound.
    A dive costs seconds here (S_1: 0.85 CPU s, 5 s at load 12 on 2 cores) and the kernel cannot be
    interrupted: after the first, a dive starts only while ``clock`` has room for one at the mean
    so far (deterministic: ``params.dive_seconds_per_unit``), and under a wall-clock limit each runs in a
    forked process killed when ``clock`` ends."""
    stats = Stats()
    best, best_top = None, 0
    if (inst.fixed >= 0).any():
        return Answer(None, None, lower, False, False, False, stats, None,
                      f"{inst.n} buffers with more than {params.max_overlap_pairs} overlapping pairs and fixed offsets: "
                      "not supported")
    size = inst.size
    width = inst.end - inst.start
    total = section_totals(inst)
    area = size * width
    # on idealloc/S_1: area first 1.0018 x the bound, total first 1.0023, size first 1.024
    keys = (np.lexsort((-size, -area)), np.lexsort((-size, -width, -total)), np.lexsort((-area, -total)),
            np.lexsort((-width, -size)))
    cost = inst.n * params.dive_seconds_per_unit
    pace = Pacer(clock, cost)
    cut = ""
    for k, key in enumerate(keys):
        if k and not pace.another():
            cut = f"; {clock.cancelled or 'time limit reached'}: {len(keys) - k} of {len(keys)} dives not run"
            break
        rank = np.empty(inst.n, np.int64)
        rank[key] = np.arange(inst.n)
        t0 = time.perf_counter()
        out = _skyline(inst, rank, clock)
        clock.spend(cost)
        stats.seconds += time.perf_counter() - t0
        if out is None:  # stopped at the deadline
            cut = f"; {clock.cancelled or 'time limit reached'} during dive {k + 1} of {len(keys)}"
            break
        stats.nodes += inst.n
        stats.runs += 1
        top = int((out + size).max()) if inst.n else 0
        if best is None or top < best_top:
            best, best_top = out, top
    note = (f"{inst.n} buffers with more than {params.max_overlap_pairs} overlapping pairs: lowest-offset dive only, "
            "no search (bound from live load)")
    if not inst.single:
        note += "; multi-piece units placed as their bounding boxes"
    if best is None:
        return Answer(None, None, lower, False, False, True, stats, None, note + cut)
    peak = best_top * inst.scale
    fits = capacity is None or (peak <= capacity and bool((best <= inst.hi).all()))
    return Answer(best if fits else None, peak if fits else None, lower, fits and peak <= lower, False,
                  False, stats, peak, note + cut)


def _skyline(inst: Instance, rank: np.ndarray, clock: Deadline) -> np.ndarray | None:
    """One lowest-offset dive (``kernels.skyline_dive``); under a wall-clock limit in a forked
    process killed when ``clock`` ends (None then), unless this process is a forked portfolio
    member (daemonic: it may not fork, and its parent kills it when it is late)."""
    def run(_: Deadline | None = None) -> np.ndarray:
        out = np.zeros(inst.n, np.int64)
        kernels.skyline_dive(inst.size, inst.s0, inst.s1, inst.mod, inst.res, inst.lo, rank, np.int64(inst.nsec), out)
        return out

    if (not clock.limited or clock.deterministic or "fork" not in mp.get_all_start_methods()
            or mp.current_process().daemon):  # a portfolio member already: its parent kills it when late
        return run()
    from optplan.core.lifecycle import fork_member

    return fork_member(run, clock, grace=0.0).result()


INEXACT_NOTE = ("a piece starts above its unit's lowest byte (a relative member above a dead root, or a gap "
                "window): the search does not reuse the hole below such a piece, so it proves nothing; "
                "bound from live load")


def solve(inst: Instance, capacity: int | None, lower: int, objective: Objective, clock: Deadline,
          workers: int = 1, seed: int = 0, progress: Callable[[dict], None] | None = None,
          goal: int | None = None, params: SearchParams = DEFAULTS) -> Answer:
    """Feasibility at ``capacity`` ("feasible") or the optimal peak <= ``capacity`` ("min-peak").

    ``lower`` is a proven bound on this instance's peak. ``goal``: a peak (bytes) that is good
    enough, because the memory's peak cannot go below it anyway (a time part of a memory whose
    proven bound is ``goal``): minimization stops at a plan under it and proves capacities upward
    only from the highest one under it (proofs below could not raise the memory's bound).
    When ``inst.exact`` is false the kernel's INFEASIBLE only says that the search cannot find a
    plan under that capacity (``floor``), not that none exists: the proven bound stays ``lower``.
    ``clock``: the time (a deterministic one makes the answer repeatable, and runs in one process);
    ``params``: budgets, shares, table size and rules. The phases are ``_Minimization``'s."""
    t_start = time.perf_counter()
    g = inst.scale
    lb = inst.scaled_bound(lower)  # proven
    cap = None if capacity is None else inst.scaled_capacity(capacity)
    good = -1 if goal is None else goal // g  # a top at most this is good enough
    if cap is not None:
        good = min(good, cap)
    if inst.large:
        return _large(inst, capacity, lower, clock, params)
    ords = orderings(inst, seed)
    m = _Minimization(inst, ords, clock, workers, params, objective.optimizes, lower, lb, good, max(lb, good), cap,
                      progress, t_start)
    # a decision at a capacity does not dive: the search's first descent in each ordering is that
    # ordering's dive with the capacity's pruning (offsets are bounded by the capacity either way),
    # so a dive would only repeat it (2.4 of 9 ms on a 195-buffer part)
    if cap is None or objective.optimizes:
        m.best, m.best_top, m.stats = dive(ords, inst.n, m.floor, clock, params.rules)
        m.dive_peak = None if m.best is None else m.best_top * g
    if m.best is not None and cap is not None and m.best_top > cap:
        m.best = None
    if inst.n == 0:
        return Answer(np.zeros(0, np.int64), 0, lower, True, False, False, m.stats, 0)
    m.report()
    if cap is not None and lb > cap:
        return m.answer(False, infeasible=True)
    if m.best is not None and (not objective.optimizes or m.best_top <= m.floor):
        return m.answer(False)
    for phase in (m.bound_first, m.floor_probe, m.at_capacity, m.upward):
        ans = phase()
        if ans is not None:
            return ans
    return m.slices()


@dataclass
class _Minimization:
    """One ``solve``'s state and its phases: the best plan so far (scaled ``best`` offsets, top
    ``best_top``), the proven bound ``lb`` and the ``floor`` below which no plan is sought (both
    scaled), and how a decision is run (``ords``, ``workers``, ``params``)."""

    inst: Instance
    ords: list[Ordered]
    clock: Deadline
    workers: int
    params: SearchParams
    optimizes: bool
    lower: int  # proven bound, bytes
    lb: int  # proven bound, scaled (raised by refutations when the instance is exact)
    good: int  # a top at most this is good enough (the goal, the capacity)
    floor: int  # the search looks for no plan below this (proven too when the instance is exact)
    cap: int | None
    progress: Callable[[dict], None] | None
    t_start: float
    stats: Stats = field(default_factory=Stats)
    best: np.ndarray | None = None
    best_top: int = 0
    dive_peak: int | None = None
    resume: dict[int, Schedule] = field(default_factory=dict)  # per capacity: where its decision stopped

    def report(self) -> None:
        """Tell ``progress`` the best peak and the proven bound so far (bytes), and the best plan's
        scaled offsets (``offsets``: the planner makes them placements)."""
        if self.progress is not None:
            g = self.inst.scale
            peak = None if self.best is None else self.best_top * g
            self.progress({"best": peak, "bound": self.lb * g,
                           "gap": None if peak is None or self.lb == 0 else peak / (self.lb * g) - 1,
                           "elapsed": time.perf_counter() - self.t_start, "offsets": self.best})

    def answer(self, timed_out: bool, infeasible: bool = False) -> Answer:
        """The ``Answer`` as things stand; without a proof on an inexact instance, it says why."""
        g = self.inst.scale
        peak = None if self.best is None else self.best_top * g
        optimal = self.best is not None and self.best_top <= max(self.lb, self.good)
        why = "" if self.inst.exact or optimal else INEXACT_NOTE
        if why and self.best is None and not timed_out:
            why = "the search found no plan under the capacity, but " + why
        return Answer(self.best, peak, max(self.lower, self.lb * g), optimal, infeasible, timed_out, self.stats,
                      self.dive_peak, why)

    def refuted(self, target: int) -> None:
        """The search found no plan with peak <= ``target``."""
        self.floor = max(self.floor, target + 1)
        if self.inst.exact:
            self.lb = self.floor

    def decide(self, target: int, clock: Deadline, resume: bool = False) -> Decision:
        """Does a plan fit under ``target``? A plan found becomes the best. ``resume``: go on where
        the last decision at ``target`` stopped."""
        schedule = self.resume.setdefault(target, Schedule(self.params.first_limit)) if resume else None
        out = decide_parallel(self.ords, self.inst.n, target, clock, self.workers, self.inst.exact, schedule, self.params)
        self.stats.add(out.stats)
        if out.status == kernels.FOUND:
            assert out.offsets is not None
            self.best, self.best_top = out.offsets, int((out.offsets + self.inst.size).max())
        return out

    def bound_first(self) -> Answer | None:
        """With the bound's share above 1 (auto's race), the bound is decided before the capacity
        too, on half the time: a plan there is optimal, and often the quicker decision (minimalloc
        C at 1 MiB: 209 nodes at its bound, 101k at the capacity)."""
        if (self.best is not None or self.cap is None or not self.optimizes or self.params.floor_share <= 1
                or self.floor >= self.cap):
            return None
        out = self.decide(self.floor, self.clock.part(0.5 * self.clock.left()), resume=True)
        if out.status == kernels.FOUND:
            return self.answer(False)
        if out.status == kernels.INFEASIBLE:
            self.refuted(self.floor)
            if self.lb > self.cap:  # (raised by the refutation only when the instance is exact)
                return self.answer(False, infeasible=True)
        return None

    def floor_probe(self) -> Answer | None:
        """Feasibility at a capacity above the proven bound: decisions at the bound and at the
        capacity in turn, each resuming where it stopped, the bound's slice ``floor_probe_share`` of
        the capacity's (the first ``floor_probe_seconds``), slices doubling: a plan under the bound is
        one under the capacity, and a tight capacity prunes far more than room to spare (generated
        cuts at 3 % above their optimum: the search at the capacity packed 5 of 12 in 20 s, at the
        bound 10 of 12 in under 0.1 s), while an unreachable bound (minimalloc D) costs a share.
        A refuted bound ends the turns: the capacity gets the rest."""
        if (self.optimizes or self.best is not None or self.cap is None or self.params.floor_probe_seconds <= 0
                or self.floor >= self.cap):
            return None
        floor, slice_s = self.floor, self.params.floor_probe_seconds / self.params.floor_probe_share
        while self.clock.left() > 0:
            for target, share in ((floor, self.params.floor_probe_share), (self.cap, 1.0)):
                out = self.decide(target, self.clock.part(share * slice_s), resume=True)
                if out.status == kernels.FOUND:
                    self.report()
                    return self.answer(False)
                if out.status == kernels.INFEASIBLE:
                    self.refuted(target)
                    if target == self.cap:
                        return self.answer(False, infeasible=self.inst.exact)
                    return None  # the bound refuted: the capacity alone (``at_capacity``)
            slice_s *= 2
        return self.answer(True)

    def at_capacity(self) -> Answer | None:
        """A plan under the capacity first (half the time when minimizing): upward steps alone may
        not reach it in time. The decision goes on where ``floor_probe``'s turns at the capacity
        stopped, when a refuted bound ended them: their nodes are not searched again."""
        if self.best is not None or self.cap is None:
            return None
        whole = not self.optimizes or self.lb >= self.cap
        out = self.decide(self.cap, self.clock if whole else self.clock.part(0.5 * self.clock.left()), resume=True)
        if out.status == kernels.INFEASIBLE:
            self.refuted(self.cap)
            return self.answer(False, infeasible=self.inst.exact)
        if out.status == kernels.FOUND:
            self.report()
            if not self.optimizes:
                return self.answer(False)
        elif whole:
            return self.answer(True)
        return None

    def upward(self) -> Answer | None:
        """No plan under the capacity yet: prove capacities upward until one admits a plan."""
        if self.best is not None:
            return None
        while self.floor <= (self.cap if self.cap is not None else 1 << 60):
            out = self.decide(self.floor, self.clock)
            if out.status == kernels.FOUND:
                return self.answer(False)
            if out.status != kernels.INFEASIBLE:
                return self.answer(True)
            self.refuted(self.floor)
            self.report()
        return self.answer(False, infeasible=self.inst.exact)

    def slices(self) -> Answer:
        """Alternate time slices between improving the plan below best (a step that halves whenever
        that decision ends without an answer) and proving the bound upward (floor). The floor gets
        ``floor_share`` of the slice while the two differ (a quarter: a proof above the load bound is
        rare on real instances, none on minimalloc/D in 10 minutes, and the plan is what the user
        keeps: D, 60 s: 1011 -> 1005 units). The step halves when the decision below is the floor's
        too: else a floor that cannot be decided took every slice while a plan one unit above it was a
        decision of 0.2 s (generated tight-3, 10 s: 76 units at a bound of 72, now 73-74). A decision
        tried again resumes where it stopped (in one thread: the orderings keep their failed-state
        tables per capacity, and the round robin its node limit, next ordering and restart orderings),
        so the floor's proof builds up over the slices instead of starting over at ``first_limit`` in
        each (13 generated decisions in doubling slices: 0.97 x the nodes of one uninterrupted run in
        all, 3 x when each slice started over)."""
        slice_s = 0.25
        step = max(1, (self.best_top - self.floor) // 4)
        bound_first = self.params.floor_share > 1  # the larger share goes first (auto's race)
        while self.floor < self.best_top:
            below = max(self.floor, self.best_top - step)
            pair = ((below, 1.0), (self.floor, 1.0 if below == self.floor else self.params.floor_share))
            for target, share in dict.fromkeys(pair[::-1] if bound_first else pair):
                if share <= 0:
                    continue
                if self.clock.left() <= 0:
                    return self.answer(True)
                out = self.decide(target, self.clock.part(share * slice_s), resume=True)
                if out.status == kernels.INFEASIBLE:
                    self.refuted(target)
                elif out.status != kernels.FOUND and target == below:
                    step = max(1, step // 2)
                self.report()
                if self.floor >= self.best_top:
                    break
            slice_s *= 2
        return self.answer(False)
