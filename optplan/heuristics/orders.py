"""Static placement orders of units, computed with numpy (no pairwise Python loops).

Most production heuristics are one of these orders fed to the shared greedy packer; keeping
them here lets the families (and first fit under several orders, and hill climbing) share them.
Ties always fall back to the problem's unit order, so every order is deterministic. An order is
an array of indices into ``problem.units`` (no list of a million Unit objects to build and look
up again in the packing kernels).
"""

from __future__ import annotations

import numpy as np

from optplan.core.clocks import clock_graph
from optplan.core.load import live_load
from optplan.core.problem import Problem
from optplan.heuristics.arrays import arrays


def _fields(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Height, start, end (0, 0 for a unit storing nothing) and time x bytes area of every unit,
    from the problem's cached flat arrays (no Python pass over a million units per order)."""
    a = arrays(problem)
    return a.high - a.low, a.start, a.end, a.area


def _sorted(n: int, *keys: np.ndarray) -> np.ndarray:
    """Indices of ``n`` units sorted by ``keys`` (first key most significant, ascending), ties by unit order."""
    return np.lexsort((np.arange(n),) + tuple(reversed(keys))) if n else np.zeros(0, np.int64)


def by_size(problem: Problem) -> np.ndarray:
    """Decreasing height; ties: longer lifetime, then earlier start (XLA's spatial order too)."""
    h, s, e, _ = _fields(problem)
    return _sorted(len(h), -h, -(e - s), s)


def by_size_stable(problem: Problem) -> np.ndarray:
    """Decreasing height, ties in the problem's order (ExecuTorch sorts specs by size, stably)."""
    h, _, _, _ = _fields(problem)
    return _sorted(len(h), -h)


def by_area(problem: Problem) -> np.ndarray:
    """Decreasing time x bytes area; ties: larger first."""
    h, _, _, a = _fields(problem)
    return _sorted(len(h), -a, -h)


def by_length(problem: Problem) -> np.ndarray:
    """Longest lifetime first; ties: larger first."""
    h, s, e, _ = _fields(problem)
    return _sorted(len(h), -(e - s), -h)


def by_start(problem: Problem) -> np.ndarray:
    """Execution order: earliest start first; ties: longer lifetime, then larger first."""
    h, s, e, _ = _fields(problem)
    return _sorted(len(h), s, -(e - s), -h)


def by_peak(problem: Problem) -> np.ndarray:
    """The units alive at the step of most live bytes first, by start (ties: earlier end, then
    larger first); then the others as ``by_size``. Each peak unit is placed when every unit
    placed before it is alive with it, so it lands on top of them: the peak's live set is packed
    without a hole, whatever the policy. By start, the peak units alive at an earlier step are a
    bottom block there, and the room above it is free for the units that die before the peak
    (a training step's forward pass: idealloc/S_1 packs at its load bound, by size at 1.025-1.029).
    Vector clocks order steps only partly: ``by_size`` there."""
    h, s, e, _ = _fields(problem)
    a = arrays(problem)
    if not len(a.p_t0) or problem.concurrent:  # nothing stores bytes; vector clocks: no one peak step
        return by_size(problem)
    live = live_load(a.p_l, a.p_r, a.p_y1 - a.p_y0, len(a.times) - 1)  # in slot [times[k], times[k+1]), from the pieces
    t = a.times[int(np.argmax(live))]
    peak = (s <= t) & (t < e) & (h > 0)
    at = np.flatnonzero(peak)  # the few alive at the peak, sorted alone (a million units: one full sort less)
    first, rest = at[np.lexsort((at, -h[at], e[at], s[at]))], by_size(problem)
    return np.concatenate([first, rest[~peak[rest]]])


def by_conflicts(problem: Problem) -> np.ndarray:
    """Most time-overlapping bytes first (TVM USMP's greedy by conflicts); ties: larger first.
    Vector clocks: the bytes of the conflicting units (``clock_graph(Problem)``).

    The bytes overlapping unit i are those of units starting before i ends, minus those that
    ended by the time i starts (they also started before i ends): two sorted prefix sums.
    """
    h, s, e, _ = _fields(problem)
    if not len(h):
        return np.zeros(0, np.int64)
    if problem.concurrent:  # vector clocks: the bytes of the units it conflicts with
        near = np.array([sum(int(h[j]) for j in row) for row in clock_graph(problem).apart], np.int64)
        return _sorted(len(h), -near, -h)
    s_order, e_order = np.argsort(s, kind="stable"), np.argsort(e, kind="stable")
    s_sorted, e_sorted = s[s_order], e[e_order]
    s_cum = np.concatenate([[0], np.cumsum(h[s_order])])
    e_cum = np.concatenate([[0], np.cumsum(h[e_order])])
    started = s_cum[np.searchsorted(s_sorted, e, side="left")]  # start < end_i
    ended = e_cum[np.searchsorted(e_sorted, s, side="right")]  # end <= start_i
    conflicts = started - ended - h  # minus itself
    return _sorted(len(h), -conflicts, -h)


def by_breadth(problem: Problem) -> np.ndarray:
    """Greedy by operator breadth (Pisarchyk & Lee 2020): time steps with the largest live total
    first, and within a step its largest units first; each unit where it is first met.

    A unit is first met at the best-ranked step of its lifetime, so the order is: rank of that
    step (a range minimum, answered for all units at once with a sparse table), then size.
    """
    h, s, e, _ = _fields(problem)
    if not len(h):
        return np.zeros(0, np.int64)
    a = arrays(problem)
    ph = a.p_y1 - a.p_y0
    times = a.times  # the pieces' ends: every unit's lifetime starts and ends at one (units that store nothing go last)
    live = live_load(a.p_l, a.p_r, ph, max(len(times) - 1, 0))  # live bytes in slot [times[k], times[k+1])
    rank = np.empty(len(live), np.int64)
    rank[np.lexsort((np.arange(len(live)), -live))] = np.arange(len(live))
    # sparse table of range minima over slots
    table = [rank]
    while 2 ** len(table) <= len(rank):
        prev, half = table[-1], 2 ** (len(table) - 1)
        table.append(np.minimum(prev[:-half], prev[half:]))
    first = np.full(len(h), len(rank), np.int64)  # units that store nothing: last
    sized = np.flatnonzero(np.diff(a.p_ptr) > 0)
    lo = np.searchsorted(times, s[sized])
    hi = np.searchsorted(times, e[sized])  # slots [lo, hi), never empty for a unit with pieces
    k = np.floor(np.log2(hi - lo)).astype(np.int64)
    for level in np.unique(k):
        sel = np.flatnonzero(k == level)
        t = table[level]
        first[sized[sel]] = np.minimum(t[lo[sel]], t[hi[sel] - 2 ** level])
    return _sorted(len(h), first, -h)
