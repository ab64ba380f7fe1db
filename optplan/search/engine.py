"""Driving the compiled search: orderings, restarts, worker threads, minimization.

A decision ("does a plan fit under cap?") runs the search round-robin over several static
orderings with node limits that grow fourfold each round: the ordering decides most of the run time,
and restarts keep one bad ordering from eating the budget. A run that ends without hitting its
node limit is complete, so its INFEASIBLE is a proof. With several workers the orderings are
dealt out to threads (the kernel releases the GIL) that stop each other through a shared flag.

Minimization searches upward from the lower bound: every capacity proven infeasible raises the
bound, and the first capacity that admits a plan is the optimum.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from optplan.core.deadline import Deadline, Pacer
from optplan.core.objective import Objective
from optplan.search import kernel
from optplan.search.instance import MAX_PAIRS, Instance, Ordered

# Nodes per deterministic second: one process's rate, measured on a 2-core machine, was 39k nodes/s
# on minimalloc/D and 89k on E, so a deterministic limit takes between half and 1.3x as long.
NODES_PER_SECOND = 50_000
FIRST_LIMIT = 2000
RESTART_NODES = 1 << 16  # the node limit of one restart ordering's single run
RESTART_SEEDS = 1 << 20  # restart orderings' table seeds start here (the fixed orderings' are their index)
# of a minimization slice, for proving the bound while a better plan is sought too; above 1 (auto's race:
# portfolio.RACE_FLOOR_SHARE) the bound goes first, so a bound decided in its first slice does not wait
FLOOR_SHARE = 0.25
# deterministic seconds a lowest-offset dive of a large instance costs per unit (idealloc/S_1:
# 0.85 CPU s for 28,526 units)
DIVE_SECONDS_PER_UNIT = 3e-5
# seconds the other workers of a decision wait before they join the first: most decisions end sooner, and an
# idle thread costs nothing where a running one takes CPU and the GIL from the first (generated cuts, load 5:
# 10 of 140 decisions went from 5-15 ms to 15-30 ms without the wait)
RACE_DELAY = 0.005
# a decision on fewer units, or with less time, runs in one thread: it ends in a few nodes (a time part of
# a generated cut: 1-36 units), and starting a thread under load took longer than its few milliseconds
RACE_MIN_UNITS = 32
RACE_MIN_SECONDS = 0.05
TIMER_NODES = 1024  # a dive of fewer nodes runs without a timer thread (``_stopped_at``)
TABLE_SLOTS = 1 << 20  # failed-state table per ordering and process: 2 words a slot (16 MiB, touched lazily)
NO_TABLE = (np.zeros(0, np.int64), np.zeros((2, 0), np.int64))
RULES = kernel.ALL_RULES  # every pruning rule on (tests switch them off one by one)
_compile_seconds: float | None = None


def ensure_compiled() -> float:
    """Load (or compile, the first time on this machine) the kernels; seconds it took in this process.
    The planner registry runs this before a deadline starts: loading pulls in numba's array and
    BLAS support (scipy), seconds of imports under load, and the first compile after an install
    takes 18 s unloaded (231 s measured on a 2-core machine at load 12)."""
    global _compile_seconds
    if _compile_seconds is None:
        t0 = time.perf_counter()
        s0 = np.array([0, 1], np.int64)
        s1 = np.array([2, 3], np.int64)
        ptr, idx = kernel.overlap_graph(s0, s1)
        one = np.ones(2, np.int64)
        zero = np.zeros(2, np.int64)
        pp = np.arange(3, dtype=np.int64)
        arrays = kernel.Arrays(one, s0, s1, pp, s0, s1, zero, one, one, zero, zero, one, -one, ptr, idx,
                               np.zeros(3, np.int64), np.zeros(0, np.int64), -one, np.int64(3))
        kernel.search(arrays, RULES, np.int64(2), np.int64(100), np.zeros(1, np.int64), np.zeros(2, np.int64), *NO_TABLE)
        _compile_seconds = time.perf_counter() - t0
    return _compile_seconds


# -- static orderings ------------------------------------------------------------------------

def section_totals(inst: Instance) -> np.ndarray:
    """Per unit, the highest live load (pieces) over its span (a sparse table of range maxima:
    linear-time per unit slicing is too slow at tens of thousands of units). Kept on ``inst``."""
    if inst.totals is None:
        inst.totals = _section_totals(inst)
    return inst.totals


def _section_totals(inst: Instance) -> np.ndarray:
    if inst.n == 0:
        return np.zeros(0, np.int64)
    load = np.zeros(inst.nsec + 1, np.int64)
    np.add.at(load, inst.ps0, inst.ph)
    np.add.at(load, inst.ps1, -inst.ph)
    table = [np.cumsum(load)[: max(inst.nsec, 1)]]
    while (1 << len(table)) <= len(table[0]):
        prev, h = table[-1], 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-h], prev[h:]))
    k = np.floor(np.log2(np.maximum(inst.s1 - inst.s0, 1))).astype(np.int64)
    total = np.empty(inst.n, np.int64)
    for j in np.unique(k):
        sel = k == j
        total[sel] = np.maximum(table[j][inst.s0[sel]], table[j][inst.s1[sel] - (1 << int(j))])
    return total


def orderings(inst: Instance, seed: int = 0) -> list[Ordered]:
    """The portfolio: buffers that are hard to fit first, by several measures, plus random ones,
    each followed by its twin without the forced-section rule.
    An ordering equal to an earlier one is left out (on a perfect packing every unit's ``total``
    is the capacity, so "total" is "width"). Each one's arrays are built on its first run."""
    n = inst.n
    size = inst.size
    width = inst.end - inst.start
    total = section_totals(inst)
    area = inst.area
    out = []
    if (inst.hint >= 0).any():
        hint = np.where(inst.hint >= 0, inst.hint, np.iinfo(np.int64).max)
        out.append(("hint", np.lexsort((-size, hint))))
    out += [
        ("total", np.lexsort((-size, -width, -total))),
        ("width", np.lexsort((-size, -width))),
        ("start", np.lexsort((-size, inst.start))),
        # total, area, width: one of MiniMalloc's default preorderings (Moffitt, ASPLOS 2023)
        ("taw", np.lexsort((-width, -area, -total))),
        ("area", np.lexsort((-size, -area))),
    ]
    rng = np.random.default_rng(seed)
    out += [(f"random{k}", rng.permutation(n)) for k in range(3)]
    # the kernel tries candidates lowest offset first, ties by rank: with the hatless cut-off this beat trying them
    # by rank alone on every minimalloc instance (measured per ordering, node limit 200k)
    ords: list[Ordered] = []
    seen: set[bytes] = set()
    for name, perm in out:
        perm = np.asarray(perm, np.int64)
        if perm.tobytes() not in seen:
            seen.add(perm.tobytes())
            ords.append(Ordered(inst, name, perm))
    # every ordering twice, with the forced-section rule and without it: the rule decides which branch comes first,
    # and where it misleads, the same ordering without it packs at once (perturbed-1: taw 3k nodes without it, nothing
    # in 1M with it). tune_search at 400k nodes, 420 generated instances, against twins for the first ordering only:
    # packed 312 -> 324 (perturbed 62 -> 73 of 140, cuts 250 -> 251 of 280), 1.03-1.25x the nodes on those both packed
    ords = [t for o in ords for t in (o, o.unforced())]
    for k, o in enumerate(ords):
        o.seed = (seed, k)
    return ords


# -- decisions -------------------------------------------------------------------------------

def table_of(o: Ordered, slots: int | None = None, nodes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ordering's failed-state table and its random words, allocated on first use in this
    process and kept for its later runs (restarts, other capacities: the key includes the
    capacity), in whichever worker thread runs the ordering. ``slots``: at most this many (None:
    ``TABLE_SLOTS``; < 2: no table); ``nodes``: the next run's budget, which sizes the table
    (twice as many slots, at least 1024), the keys moving into a larger one as budgets grow:
    a large table costs a page fault per page a short run touches. The random words come from the
    ordering's seed: they decide which failures a full bucket forgets, so fresh ones per run would
    make node counts (and plans found) vary between runs."""
    slots = TABLE_SLOTS if slots is None else slots
    if slots < 2:
        return NO_TABLE
    want = 1 << (slots.bit_length() - 1)  # a power of two
    if nodes is not None:
        want = min(want, 1 << max(10, int(2 * nodes - 1).bit_length()))
    if o.table is None or o.zob is None:
        info = np.iinfo(np.int64)
        words = kernel.table_words(len(o.perm), int(o.arrays.nsec))
        o.zob = np.random.default_rng(o.seed).integers(info.min, info.max, size=(2, words), dtype=np.int64, endpoint=True)
    if o.table is None or o.table.shape[0] < 2 + 2 * want:
        table = np.zeros(2 + 2 * want, np.int64)
        if o.table is not None:
            kernel.move_table(o.table, table)
        o.table = table
    return o.table, o.zob


@dataclass
class Stats:
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
class Outcome:
    status: int  # kernel.FOUND, kernel.INFEASIBLE or kernel.LIMIT (time ran out)
    offsets: np.ndarray | None  # scaled rectangle offsets in Instance order
    stats: Stats


def dive(ords: list[Ordered], n: int, lb: int = 0, clock: Deadline | None = None) -> tuple[np.ndarray | None, int, Stats]:
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
            status, nodes = kernel.search(o.arrays, RULES, np.int64(1) << 60, np.int64(n + 1), stop, out, *NO_TABLE)
        stats.seconds += time.perf_counter() - t0
        stats.nodes += nodes
        stats.runs += 1
        if status == kernel.FOUND:
            top = int((out + o.arrays.size).max()) if n else 0
            if best is None or top < best_top:
                best, best_top = o.unpermute(out), top
            if top <= lb:
                break
        elif stop[0]:
            break
    return best, best_top, stats


def first_descent(inst: Instance, cap: int, clock: Deadline, seed: int = 0) -> tuple[np.ndarray | None, Stats]:
    """The first ordering's search at ``cap`` (scaled) with room for one descent and a little
    backtracking (``2n`` nodes): on an instance of many easy time parts it packs them all in one
    kernel call, where part by part each pays its own arrays, orderings and dives in Python
    (guillotine cuts: 12 parts on average, the first descent of the whole packs 71 of 140).
    Returns (offsets in Instance order or None, stats)."""
    stats = Stats()
    if inst.large or inst.n == 0:
        return None, stats
    o = orderings(inst, seed)[0]
    status, out = _run(o, inst.n, cap, clock, np.zeros(1, np.int64), 0, 2 * inst.n, stats)  # no failed-state table
    return (o.unpermute(out) if status == kernel.FOUND else None), stats


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


def fresh(inst: Instance, seed: int, k: int) -> Ordered:
    """The ``k``-th restart ordering: widest first with each width scaled by a random factor in
    [0.7, 1.3] (ties: larger first). A decision's run time is heavy-tailed in the ordering: on
    generated instances the fixed portfolio ran 10M nodes without a plan where one of 16 such
    orderings found it in 8k (experiments/tune_search.py). Every other restart runs without the
    forced-section rule: it changes which branch comes first, and the tail is heavy in that too
    (guillotine-36: nothing in 200k nodes under any of 15 orderings with it, 260 nodes without it)."""
    rng = np.random.default_rng((seed, k))
    width = (inst.end - inst.start) * rng.uniform(0.7, 1.3, inst.n)
    o = Ordered(inst, f"restart{k}", np.lexsort((-inst.size, -width)).astype(np.int64))
    o.seed = (seed, RESTART_SEEDS + k)
    o.forced = k % 2 == 0
    return o


@dataclass
class Schedule:
    """Where a decision's round robin stands: the node limit of the next round and this worker's
    next restart ordering (``fresh``, then every ``step``-th: workers share them out). A decision
    whose clock ran out resumes within its round: at fixed ordering ``at`` (a run cut short counts
    as that ordering's turn: retried, it would stall wherever a slice is shorter than the round's
    node limit), with ``owed`` nodes for restart orderings."""
    limit: int = FIRST_LIMIT
    fresh: int = 0
    step: int = 1
    at: int = 0
    owed: int = 0


def decide(ords: list[Ordered], n: int, cap: int, clock: Deadline, stop: np.ndarray, exact: bool = True,
           slots: int | None = None, schedule: Schedule | None = None) -> Outcome:
    """Round-robin over ``ords`` with node limits growing fourfold until a plan, a proof, or the
    ``clock`` runs out; after each round as many nodes again go to restart orderings (``fresh``),
    each run once with at most ``RESTART_NODES``. Not ``exact``: an ordering's INFEASIBLE only
    retires it (another ordering's canonical plans may differ); INFEASIBLE once all are retired.
    Each ordering keeps its failed-state table (``slots`` slots) across its restarts: a restart
    skips what failed before. A wall clock spent before the first run (a time part's share of a
    few milliseconds, used up at load by the parts before it) still gets one run of
    ``node_budget``'s minimum while the whole limit lasts: most such decisions end in it. A wall
    clock's end sets ``stop`` (a timer): a run's node budget comes from the rate measured so far,
    and a later round's run, slower per node, overran a 60 s limit by 7 s (guillotine-52)."""
    timed = n >= RACE_MIN_UNITS and clock.left() >= RACE_MIN_SECONDS  # as for a race: else its runs are short
    with clock.on_cancel(lambda: stop.__setitem__(0, 1)), _stopped_at(clock, stop, TIMER_NODES if timed else 0):
        return _decide(ords, n, cap, clock, stop, exact, slots, schedule or Schedule())


def node_budget(clock: Deadline, limit: int, rate: float) -> int:
    """Nodes for the next kernel run, at most ``limit``: the nodes left (deterministic), or what the
    measured ``rate`` (nodes/s) gets done in the time left, at least 1000 so that a nearly spent
    budget still moves."""
    if clock.deterministic:
        return max(0, int(min(limit, clock.left() * NODES_PER_SECOND)))
    return max(1000, int(min(limit, rate * clock.left() + 1)))


def _run(o: Ordered, n: int, cap: int, clock: Deadline, stop: np.ndarray, slots: int | None, limit: int,
         stats: Stats) -> tuple[int, np.ndarray]:
    """One kernel run of ``o`` with at most ``limit`` nodes; (status, offsets in rank order). A
    deterministic ``clock``'s node budget is stopped at its wall-clock guard (a wall-clock one's
    budget is what the measured rate does in the time left)."""
    budget = node_budget(clock, limit, stats.rate or 2e5)
    out = np.zeros(n, np.int64)
    t0 = time.perf_counter()
    rules = RULES if o.forced else RULES._replace(forced=False)
    with _stopped_at(clock if clock.deterministic else None, stop, budget):
        status, nodes = kernel.search(o.arrays, rules, np.int64(cap), np.int64(budget), stop, out, *table_of(o, slots, budget))
    stats.seconds += time.perf_counter() - t0
    stats.nodes += nodes
    stats.runs += 1
    clock.spend(nodes / NODES_PER_SECOND)
    if status == kernel.FOUND:
        stats.winners[o.name] = 1
    return int(status), out


def _decide(ords: list[Ordered], n: int, cap: int, clock: Deadline, stop: np.ndarray, exact: bool,
            slots: int | None, sched: Schedule) -> Outcome:
    stats = Stats()
    ords = list(ords)
    inst, seed = (ords[0].inst, ords[0].seed[0]) if ords else (None, 0)
    while ords:
        while sched.at < len(ords):
            o = ords[sched.at]
            if stop[0] or clock.left() <= 0 and (stats.runs or clock.deterministic or clock.root.left() <= 0):
                return Outcome(kernel.LIMIT, None, stats)  # but a share spent before its first run still runs once
            before = stats.nodes
            status, out = _run(o, n, cap, clock, stop, slots, sched.limit, stats)
            if status == kernel.FOUND:
                return Outcome(status, o.unpermute(out), stats)
            if status == kernel.INFEASIBLE and exact:
                return Outcome(status, None, stats)
            sched.owed += stats.nodes - before
            if status == kernel.INFEASIBLE:
                ords.remove(o)
            else:
                sched.at += 1
        while inst is not None and sched.owed > 0 and clock.left() > 0 and not stop[0]:
            o = fresh(inst, seed, sched.fresh)
            sched.fresh += sched.step
            before = stats.nodes
            status, out = _run(o, n, cap, clock, stop, slots, min(sched.limit, RESTART_NODES), stats)
            sched.owed -= stats.nodes - before
            if status == kernel.FOUND:
                return Outcome(status, o.unpermute(out), stats)
            if status == kernel.INFEASIBLE and exact:  # the search within any ordering is complete
                return Outcome(status, None, stats)
        if sched.owed > 0:  # the clock ran out or another worker stopped this one
            return Outcome(kernel.LIMIT, None, stats)
        sched.at = 0
        sched.limit *= 4  # with 4+ orderings per worker, doubling spent most of the time on early rounds
    return Outcome(kernel.INFEASIBLE, None, stats)


def decide_parallel(ords: list[Ordered], n: int, cap: int, clock: Deadline, workers: int,
                    exact: bool = True, slots: int | None = None, schedule: Schedule | None = None) -> Outcome:
    """``decide`` with the orderings and restarts dealt out to ``workers`` threads, the others
    joining the first after ``RACE_DELAY`` (the kernel runs without the GIL, and a thread starts in
    microseconds where a fork cost more than most decisions: the first ordering and its unforced
    twin race from the first round); the first plan or proof stops the others, and each
    ordering's failed-state table stays in this process for its later decisions. Which one wins
    depends on timing, so a deterministic ``clock`` runs everything in this thread, and so does a
    decision too small to pay for a thread (``RACE_MIN_UNITS``, ``RACE_MIN_SECONDS``). ``schedule``:
    where the decision resumes and stops, in this thread only (threads start their shares afresh)."""
    workers = min(workers, len(ords))
    if workers <= 1 or clock.deterministic or n < RACE_MIN_UNITS or clock.left() < RACE_MIN_SECONDS:
        return decide(ords, n, cap, clock, np.zeros(1, np.int64), exact, slots, schedule)
    stop = np.zeros(1, np.int64)
    outs: list[Outcome | BaseException | None] = [None] * workers
    decided = threading.Event()  # set with stop[0]: the others need not start

    def work(k: int) -> None:
        if k and decided.wait(RACE_DELAY):
            outs[k] = Outcome(kernel.LIMIT, None, Stats())
            return
        try:
            out: Outcome | BaseException = decide(ords[k::workers], n, cap, clock, stop, exact, slots,
                                                  Schedule(FIRST_LIMIT, k, workers))
        except BaseException as e:  # re-raised in the caller's thread
            out = e
        if not isinstance(out, Outcome) or out.status == kernel.FOUND or (exact and out.status == kernel.INFEASIBLE):
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


def _combined(outs: list[Outcome | BaseException | None], exact: bool) -> Outcome:
    """One outcome of the workers' outcomes: a plan, else a proof (or every ordering retired), else LIMIT."""
    stats = Stats()
    done: list[Outcome] = []
    for o in outs:
        if isinstance(o, BaseException):
            raise o
        assert o is not None
        stats.add(o.stats)
        done.append(o)
    for o in done:
        if o.status == kernel.FOUND:
            return Outcome(o.status, o.offsets, stats)
    if any(o.status == kernel.INFEASIBLE for o in done) and (exact or all(o.status == kernel.INFEASIBLE for o in done)):
        return Outcome(kernel.INFEASIBLE, None, stats)
    return Outcome(kernel.LIMIT, None, stats)


# -- minimization ----------------------------------------------------------------------------

@dataclass
class Answer:
    offsets: np.ndarray | None  # scaled, Instance order; None: no plan
    peak: int | None  # bytes
    bound: int  # proven lower bound on the peak, bytes
    optimal: bool
    infeasible: bool  # proven: nothing fits under the capacity
    timed_out: bool
    stats: Stats
    dive_peak: int | None = None
    note: str = ""  # how the answer was reached when that is not the full search


def _large(inst: Instance, capacity: int | None, lower: int, clock: Deadline) -> Answer:
    """Too many overlapping pairs for the search's adjacency lists: the lowest-offset-first dive
    (segment tree and heap), under a few tie-breaking orders; no proof beyond the load bound.
    A dive costs seconds here (S_1: 0.85 CPU s, 5 s at load 12 on 2 cores) and the kernel cannot be
    interrupted: after the first, a dive starts only while ``clock`` has room for one at the mean
    so far (deterministic: ``DIVE_SECONDS_PER_UNIT``), and under a wall-clock limit each runs in a
    forked process killed when ``clock`` ends."""
    stats = Stats()
    best, best_top = None, 0
    if (inst.fixed >= 0).any():
        return Answer(None, None, lower, False, False, False, stats, None,
                      f"{inst.n} buffers with more than {MAX_PAIRS} overlapping pairs and fixed offsets: not supported")
    size = inst.size
    width = inst.end - inst.start
    total = section_totals(inst)
    area = size * width
    # on idealloc/S_1: area first 1.0018 x the bound, total first 1.0023, size first 1.024
    keys = (np.lexsort((-size, -area)), np.lexsort((-size, -width, -total)), np.lexsort((-area, -total)),
            np.lexsort((-width, -size)))
    cost = inst.n * DIVE_SECONDS_PER_UNIT
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
    note = (f"{inst.n} buffers with more than {MAX_PAIRS} overlapping pairs: lowest-offset dive only, "
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
    """One lowest-offset dive (``kernel.skyline_dive``); under a wall-clock limit in a forked
    process killed when ``clock`` ends (None then), unless this process is a forked portfolio
    member (daemonic: it may not fork, and its parent kills it when it is late)."""
    def run(_: Deadline | None = None) -> np.ndarray:
        out = np.zeros(inst.n, np.int64)
        kernel.skyline_dive(inst.size, inst.s0, inst.s1, inst.mod, inst.res, inst.lo, rank, np.int64(inst.nsec), out)
        return out

    if (not clock.limited or clock.deterministic or "fork" not in mp.get_all_start_methods()
            or mp.current_process().daemon):  # a portfolio member already: its parent kills it when late
        return run()
    from optplan.core.lifecycle import fork_member

    return fork_member(run, clock, grace=0.0).result()


INEXACT_NOTE = ("a piece starts above its unit's lowest byte (a relative member above a dead root, or a gap "
                "window): the search does not reuse the hole below such a piece, so it proves nothing; "
                "bound from live load")


def solve(inst: Instance, capacity: int | None, lower: int, objective: Objective | str, clock: Deadline,
          workers: int = 1, seed: int = 0, progress: Callable[[dict], None] | None = None,
          table_slots: int | None = None, goal: int | None = None) -> Answer:
    """Feasibility at ``capacity`` ("feasible") or the optimal peak <= ``capacity`` ("min-peak").

    ``lower`` is a proven bound on this instance's peak. ``goal``: a peak (bytes) that is good
    enough, because the memory's peak cannot go below it anyway (a time part of a memory whose
    proven bound is ``goal``): minimization stops at a plan under it and proves capacities upward
    only from the highest one under it (proofs below could not raise the memory's bound).
    When ``inst.exact`` is false the kernel's INFEASIBLE only says that the search cannot find a
    plan under that capacity (``floor``), not that none exists: the proven bound stays ``lower``.
    ``table_slots``: size of each ordering's failed-state table (None: ``TABLE_SLOTS``; 0: none).
    ``clock``: the time (a deterministic one makes the answer repeatable, and runs in one process)."""
    t_start = time.perf_counter()
    objective = Objective.parse(objective)
    g = inst.scale
    lb = inst.scaled_bound(lower)  # proven
    cap = None if capacity is None else inst.scaled_capacity(capacity)
    good = -1 if goal is None else goal // g  # a top at most this is good enough
    if cap is not None:
        good = min(good, cap)
    floor = max(lb, good)  # the search looks for no plan below this (proven too when the instance is exact)
    if inst.large:
        return _large(inst, capacity, lower, clock)
    exact = inst.exact
    ords = orderings(inst, seed)
    # a decision at a capacity does not dive: the search's first descent in each ordering is that
    # ordering's dive with the capacity's pruning (offsets are bounded by the capacity either way),
    # so a dive would only repeat it (2.4 of 9 ms on a 195-buffer part)
    decision = cap is not None and not objective.optimizes
    best, best_top, stats = (None, 0, Stats()) if decision else dive(ords, inst.n, floor, clock)
    dive_peak = None if best is None else best_top * g
    if best is not None and cap is not None and best_top > cap:
        best = None
    if inst.n == 0:
        return Answer(np.zeros(0, np.int64), 0, lower, True, False, False, stats, 0)

    def report() -> None:
        if progress is not None:
            peak = None if best is None else best_top * g
            progress({"best": peak, "bound": lb * g, "gap": None if peak is None or lb == 0 else peak / (lb * g) - 1,
                      "elapsed": time.perf_counter() - t_start})

    def answer(timed_out: bool, infeasible: bool = False) -> Answer:
        peak = None if best is None else best_top * g
        optimal = best is not None and best_top <= max(lb, good)
        why = "" if exact or optimal else INEXACT_NOTE
        if why and best is None and not timed_out:
            why = "the search found no plan under the capacity, but " + why
        return Answer(best, peak, max(lower, lb * g), optimal, infeasible, timed_out, stats, dive_peak, why)

    def refuted(target: int) -> None:
        """The search found no plan with peak <= ``target``."""
        nonlocal lb, floor
        floor = max(floor, target + 1)
        if exact:
            lb = floor

    report()
    if cap is not None and lb > cap:
        return answer(False, infeasible=True)
    if best is not None and (not objective.optimizes or best_top <= floor):
        return answer(False)
    resume: dict[int, Schedule] = {}
    bound_first = FLOOR_SHARE > 1  # the larger share goes first (auto's race)
    if best is None and cap is not None and objective.optimizes and bound_first and floor < cap:
        # the bound first (auto's race) before the capacity too: a plan there is optimal, and often
        # the quicker decision (minimalloc C at 1 MiB: 209 nodes at its bound, 101k at the capacity)
        out = decide_parallel(ords, inst.n, floor, clock.part(0.5 * clock.left()), workers, exact, table_slots,
                              resume.setdefault(floor, Schedule()))
        stats.add(out.stats)
        if out.status == kernel.FOUND:
            best, best_top = out.offsets, int((out.offsets + inst.size).max())
            return answer(False)
        if out.status == kernel.INFEASIBLE:
            refuted(floor)
            if lb > cap:  # (raised by the refutation only when the instance is exact)
                return answer(False, infeasible=True)
    if best is None and cap is not None:
        # a plan under the capacity first: upward steps alone may not reach it in time
        first = clock if not objective.optimizes or lb >= cap else clock.part(0.5 * clock.left())
        out = decide_parallel(ords, inst.n, cap, first, workers, exact, table_slots)
        stats.add(out.stats)
        if out.status == kernel.INFEASIBLE:
            refuted(cap)
            return answer(False, infeasible=exact)
        if out.status == kernel.FOUND:
            best, best_top = out.offsets, int((out.offsets + inst.size).max())
            report()
            if not objective.optimizes:
                return answer(False)
        elif not objective.optimizes or lb >= cap:
            return answer(True)
    if best is None:
        # no plan under the capacity yet: prove capacities upward until one admits a plan
        while floor <= (cap if cap is not None else 1 << 60):
            out = decide_parallel(ords, inst.n, floor, clock, workers, exact, table_slots)
            stats.add(out.stats)
            if out.status == kernel.FOUND:
                best, best_top = out.offsets, int((out.offsets + inst.size).max())
                return answer(False)
            if out.status != kernel.INFEASIBLE:
                return answer(True)
            refuted(floor)
            report()
        return answer(False, infeasible=exact)
    # alternate time slices between improving the plan below best (a step that halves whenever that
    # decision ends without an answer) and proving the bound upward (floor). The floor gets a quarter of
    # the slice while the two differ: a proof above the load bound is rare on real instances (none on
    # minimalloc/D in 10 minutes) and the plan is what the user keeps (D, 60 s: 1011 -> 1005 units).
    # The step halves when the decision below is the floor's too: else a floor that cannot be decided
    # took every slice while a plan one unit above it was a decision of 0.2 s (generated tight-3, 10 s:
    # 76 units at a bound of 72, now 73-74). A decision tried again resumes where it stopped (in one
    # thread: the orderings keep their failed-state tables per capacity, and the round robin its node
    # limit, next ordering and restart orderings), so the floor's proof builds up over the slices
    # instead of starting over at FIRST_LIMIT in each (13 generated decisions in doubling slices:
    # 0.97 x the nodes of one uninterrupted run in all, 3 x when each slice started over).
    slice_s = 0.25
    step = max(1, (best_top - floor) // 4)
    while floor < best_top:
        below = max(floor, best_top - step)
        pair = ((below, 1.0), (floor, 1.0 if below == floor else FLOOR_SHARE))
        for target, share in dict.fromkeys(pair[::-1] if bound_first else pair):
            if share <= 0:
                continue
            if clock.left() <= 0:
                return answer(True)
            out = decide_parallel(ords, inst.n, target, clock.part(share * slice_s), workers, exact, table_slots,
                                  resume.setdefault(target, Schedule()))
            stats.add(out.stats)
            if out.status == kernel.FOUND:
                best, best_top = out.offsets, int((out.offsets + inst.size).max())
            elif out.status == kernel.INFEASIBLE:
                refuted(target)
            elif target == below:
                step = max(1, step // 2)
            report()
            if floor >= best_top:
                break
        slice_s *= 2
    return answer(False)
