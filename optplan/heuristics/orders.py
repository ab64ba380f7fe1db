"""Static placement orders of units, computed with numpy (no pairwise Python loops).

Most production heuristics are one of these orders fed to the shared greedy packer; keeping
them here lets the families (and first fit under several orders, and hill climbing) share them.
Ties always fall back to the problem's unit order, so every order is deterministic.
"""

from __future__ import annotations

import numpy as np

from optplan.heuristics.compiled import arrays
from optplan.problem import Problem, Unit


def _fields(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Height, start, end (0, 0 for a unit storing nothing) and time x bytes area of every unit,
    from the problem's cached flat arrays (no Python pass over a million units per order)."""
    a = arrays(problem)
    return a.high - a.low, a.start, a.end, a.area


def _sorted(units: list[Unit], *keys: np.ndarray) -> list[Unit]:
    """Units sorted by ``keys`` (first key most significant, ascending), ties by unit order."""
    idx: np.ndarray | list[int] = np.lexsort((np.arange(len(units)),) + tuple(reversed(keys))) if units else []
    return [units[i] for i in idx]


def by_size(problem: Problem) -> list[Unit]:
    """Decreasing height; ties: longer lifetime, then earlier start (XLA's spatial order too)."""
    units = list(problem.units)
    h, s, e, _ = _fields(problem)
    return _sorted(units, -h, -(e - s), s)


def by_size_stable(problem: Problem) -> list[Unit]:
    """Decreasing height, ties in the problem's order (ExecuTorch sorts specs by size, stably)."""
    units = list(problem.units)
    h, _, _, _ = _fields(problem)
    return _sorted(units, -h)


def by_area(problem: Problem) -> list[Unit]:
    """Decreasing time x bytes area; ties: larger first."""
    units = list(problem.units)
    h, _, _, a = _fields(problem)
    return _sorted(units, -a, -h)


def by_length(problem: Problem) -> list[Unit]:
    """Longest lifetime first; ties: larger first."""
    units = list(problem.units)
    h, s, e, _ = _fields(problem)
    return _sorted(units, -(e - s), -h)


def by_start(problem: Problem) -> list[Unit]:
    """Execution order: earliest start first; ties: longer lifetime, then larger first."""
    units = list(problem.units)
    h, s, e, _ = _fields(problem)
    return _sorted(units, s, -(e - s), -h)


def by_conflicts(problem: Problem) -> list[Unit]:
    """Most time-overlapping bytes first (TVM USMP's greedy by conflicts); ties: larger first.
    Vector clocks: the bytes of the conflicting units (``Problem.clock_graph``).

    The bytes overlapping unit i are those of units starting before i ends, minus those that
    ended by the time i starts (they also started before i ends): two sorted prefix sums.
    """
    units = list(problem.units)
    h, s, e, _ = _fields(problem)
    if not units:
        return []
    if problem.concurrent:  # vector clocks: the bytes of the units it conflicts with
        near = np.array([sum(int(h[j]) for j in row) for row in problem.clock_graph.apart], np.int64)
        return _sorted(units, -near, -h)
    s_order, e_order = np.argsort(s, kind="stable"), np.argsort(e, kind="stable")
    s_sorted, e_sorted = s[s_order], e[e_order]
    s_cum = np.concatenate([[0], np.cumsum(h[s_order])])
    e_cum = np.concatenate([[0], np.cumsum(h[e_order])])
    started = s_cum[np.searchsorted(s_sorted, e, side="left")]  # start < end_i
    ended = e_cum[np.searchsorted(e_sorted, s, side="right")]  # end <= start_i
    conflicts = started - ended - h  # minus itself
    return _sorted(units, -conflicts, -h)


def by_breadth(problem: Problem) -> list[Unit]:
    """Greedy by operator breadth (Pisarchyk & Lee 2020): time steps with the largest live total
    first, and within a step its largest units first; each unit where it is first met.

    A unit is first met at the best-ranked step of its lifetime, so the order is: rank of that
    step (a range minimum, answered for all units at once with a sparse table), then size.
    """
    units = list(problem.units)
    if not units:
        return []
    h, s, e, _ = _fields(problem)
    a = arrays(problem)
    pt0, pt1, ph = a.p_t0, a.p_t1, a.p_y1 - a.p_y0
    times = np.unique(np.concatenate([s, e, pt0, pt1]))
    live = np.zeros(len(times), np.int64)
    if len(pt0):
        np.add.at(live, np.searchsorted(times, pt0), ph)
        np.add.at(live, np.searchsorted(times, pt1), -ph)
    live = np.cumsum(live)[:-1]  # live bytes in slot [times[k], times[k+1])
    rank = np.empty(len(live), np.int64)
    rank[np.lexsort((np.arange(len(live)), -live))] = np.arange(len(live))
    # sparse table of range minima over slots
    table = [rank]
    while 2 ** len(table) <= len(rank):
        prev, half = table[-1], 2 ** (len(table) - 1)
        table.append(np.minimum(prev[:-half], prev[half:]))
    first = np.full(len(units), len(rank), np.int64)  # units that store nothing: last
    sized = np.flatnonzero(np.diff(a.p_ptr) > 0)
    lo = np.searchsorted(times, s[sized])
    hi = np.searchsorted(times, e[sized])  # slots [lo, hi), never empty for a unit with pieces
    k = np.floor(np.log2(hi - lo)).astype(np.int64)
    for level in np.unique(k):
        sel = np.flatnonzero(k == level)
        t = table[level]
        first[sized[sel]] = np.minimum(t[lo[sel]], t[hi[sel] - 2 ** level])
    return _sorted(units, first, -h)
