"""Live load over time: the one sweep that bounds, checks and reports read."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from optplan.core import jit, sweeps
from optplan.core.placement import Placement, offsets

if TYPE_CHECKING:
    from optplan.core.problem import Problem


@dataclass(frozen=True)
class UsageCurve:
    """Step function over time for one memory: at ``times[i] <= t < times[i+1]``, ``live[i]``
    bytes are live and the highest used byte is ``top[i]``."""

    times: np.ndarray
    live: np.ndarray
    top: np.ndarray

    @property
    def peak_step(self) -> int | None:
        """The first time step at which the highest used byte is reached."""
        if len(self.top) == 0 or self.top.max() == 0:
            return None
        return int(self.times[int(np.argmax(self.top))])


def usage_curve(problem: Problem, placements: Mapping[str, Placement], memory: str) -> UsageCurve:
    """Live bytes and highest used byte over time in ``memory`` (for reports and plots).

    Live bytes leave out gaps and count only a gap's window; an active buffer's highest byte is
    ``offset + size`` even inside a window, as in the peak."""
    off = offsets(problem, placements) if problem.columns.plain and problem.memory_names == (memory,) else None
    if off is not None:  # one rectangle per buffer with bytes: the columns
        cols, held = problem.columns, problem.columns.size > 0
        start, end, size, top = cols.start[held], cols.end[held], cols.size[held], (off + cols.size)[held]
    else:
        bufs = [b for b in problem.buffers if b.size > 0 and b.id in placements and placements[b.id].memory == memory]
        rects = [(t0, t1, y1 - y0, placements[b.id].offset + b.size) for b in bufs for t0, t1, y0, y1 in b.footprint()]
        start, end, size, top = (np.array(c, np.int64) for c in zip(*rects)) if rects else [np.zeros(0, np.int64)] * 4
    if not len(start):
        return UsageCurve(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    times, at_start, at_end = steps(start, end)
    live = _live(problem, placements, memory, times, (at_start, at_end, size))
    highest = _highest_kernel(len(start))(at_start, at_end, top, len(times))
    return UsageCurve(times, live, highest)


def overlapping_pairs(start: np.ndarray, end: np.ndarray) -> int:
    """How many pairs of lifetimes ``[start, end)`` share a time step (a MIP's disjunctions, the
    search's adjacency lists), in O(n log n) without listing them: a lifetime meets every other
    that starts before it ends and ends after it starts. Counted over sorted keys: only the sums
    matter, and numpy's binary search over sorted keys walks memory in order (a million short
    lifetimes: 0.16 s, 2.1 s over the keys as given)."""
    if not len(start):
        return 0
    starts, ends = np.sort(np.asarray(start, np.int64)), np.sort(np.asarray(end, np.int64))
    met = int(np.searchsorted(starts, ends, "left").sum()) - int(np.searchsorted(ends, starts, "right").sum())
    return (met - len(starts)) // 2


def steps(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct times of ``start`` and ``end`` (sorted, as ``columns.distinct``) and the index of each
    start and end among them, from one stable sort: four ``searchsorted`` of a million random
    times into two million took 1.3-1.7 s of the report of a 10^6-buffer plan, this 0.5-0.9 s."""
    both = np.concatenate([start, end])
    order = np.argsort(both, kind="stable")
    ordered = both[order]
    new = np.empty(len(ordered), bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    rank = np.empty(len(both), np.int64)
    rank[order] = np.cumsum(new) - 1
    return ordered[new], rank[:len(start)], rank[len(start):]


def _live(problem: Problem, placements: Mapping[str, Placement], memory: str, times: np.ndarray,
          rects: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """Live bytes at ``times`` from the buffers' ``rects`` (the indices in ``times`` of their start
    and end, bytes); with relative placements from the units' footprints instead, where members
    that overlap on purpose (an output written into its input's bytes) count once."""
    at_start, at_end, size = rects
    if problem.relative:
        pieces = [(t0, t1, y1 - y0) for u in problem.units if placements.get(u.root, _NOWHERE).memory == memory
                  for t0, t1, y0, y1 in u.pieces]
        start, end, size = (np.array(c, np.int64) for c in zip(*pieces)) if pieces else [np.zeros(0, np.int64)] * 3
        at_start, at_end = np.searchsorted(times, start), np.searchsorted(times, end)
    return live_load(at_start, at_end, size, len(times))


def live_load(first: np.ndarray, last: np.ndarray, size: np.ndarray, slots: int) -> np.ndarray:
    """Bytes live in each of ``slots`` time slots, where interval ``i`` holds ``size[i]`` bytes in
    slots ``first[i]`` up to, not including, ``last[i]`` (<= ``slots``): the one live-load sweep
    (a difference array, summed) that the usage curve, the heuristics' and the search's orderings
    and the graph's order methods read, on slots of their own."""
    delta = np.zeros(slots + 1, np.int64)
    np.add.at(delta, first, size)
    np.add.at(delta, last, -size)
    return np.cumsum(delta)[:slots]


_NOWHERE = Placement("", 0)


def _highest_kernel(n: int) -> Callable[..., np.ndarray]:
    """``sweeps.highest`` compiled where it pays (``jit.kernel``), else in Python."""
    return jit.kernel("plan", n, sweeps.highest, "highest")
