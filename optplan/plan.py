"""A plan: where every buffer lives, how good that is, and how sure we are."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from optplan import jit
from optplan.objective import BENEFIT, Objective
from optplan.problem import INT64_MAX, distinct

if TYPE_CHECKING:
    from optplan.problem import Problem


class Status(str, Enum):
    OPTIMAL = "OPTIMAL"  # proven: peak equals the lower bound, or the solver proved it
    FEASIBLE = "FEASIBLE"  # a valid plan, optimality not proven
    INFEASIBLE = "INFEASIBLE"  # proven: no plan fits the capacities
    UNKNOWN = "UNKNOWN"  # no plan found and nothing proven (e.g. time limit)


@dataclass(frozen=True)
class Placement:
    memory: str
    offset: int


@dataclass
class Plan:
    """The answer of a planner. Built by ``optplan.planners`` after the validator passed it."""

    placements: dict[str, Placement]
    status: Status
    planner: str
    peak: dict[str, int]  # memory -> highest byte used + 1
    lower_bound: dict[str, int]  # memory -> proven lower bound on that memory's peak
    seconds: float = 0.0
    objective: Objective = field(default_factory=Objective)  # what objective_value measures
    objective_value: int | None = None
    objective_bound: int | None = None
    message: str = ""  # why infeasible, "time limit reached", ...
    stats: dict[str, object] = field(default_factory=dict)
    # the objective's quantities, most important first: (name, value, bound) (Objective.components)
    components: tuple[tuple[str, int, int], ...] = ()

    @property
    def gap(self) -> float | None:
        """Relative distance to the proven bound of the quantity ``gap_of`` names: sum(peak) /
        sum(lower bound) - 1, the weighted objective when one is recorded; for a lexicographic
        objective the first quantity not at its bound (benefit kept: bound / kept - 1). None when
        there is no plan, or the bound is 0 while the plan uses memory.
        """
        if not self.placements and self.status in (Status.INFEASIBLE, Status.UNKNOWN):
            return None
        if len(self.components) > 1:
            short = self._short()
            if short is None:
                return 0.0
            name, v, b = short
            if name == BENEFIT:
                return None if v <= 0 else b / v - 1.0
            return None if b <= 0 else v / b - 1.0
        if self.objective_value is not None and self.objective_bound is not None:
            value, bound = self.objective_value, self.objective_bound
        else:
            value, bound = sum(self.peak.values()), sum(self.lower_bound.values())
        if value <= bound:
            return 0.0
        return None if bound <= 0 else value / bound - 1.0

    @property
    def gap_of(self) -> str | None:
        """Which quantity of a lexicographic objective ``gap`` measures (a name of ``components``:
        ``"benefit kept"`` or ``"peaks"``), so that gaps of different quantities are never compared
        as one number: a plan that keeps more benefit may show a larger gap, on its peaks. None when
        the objective has one quantity or every quantity is at its bound (gap 0)."""
        short = self._short() if len(self.components) > 1 and self.placements else None
        return None if short is None else short[0]

    def _short(self) -> tuple[str, int, int] | None:
        """The first of ``components`` not at its bound."""
        return next(((n, v, b) for n, v, b in self.components if (v < b if n == BENEFIT else v > b)), None)

    def memory_gap(self, memory: str) -> float | None:
        peak, bound = self.peak.get(memory, 0), self.lower_bound.get(memory, 0)
        if peak <= bound:
            return 0.0
        return None if bound <= 0 else peak / bound - 1.0

    @property
    def found(self) -> bool:
        """True when the plan places every buffer (statuses OPTIMAL and FEASIBLE)."""
        return self.status in (Status.OPTIMAL, Status.FEASIBLE)


_OFFSET, _MEMORY = attrgetter("offset"), attrgetter("memory")


def offsets(problem: Problem, placements: Mapping[str, Placement]) -> np.ndarray | None:
    """The offsets of a single-memory problem's buffers in buffer order, as an array; None when a
    buffer is missing, another memory is named, or an offset is not an integer inside int64
    (the callers' general paths handle, or report, those)."""
    if len(problem.memories) != 1 or len(placements) != len(problem.buffers):
        return None
    try:
        got = list(map(placements.__getitem__, problem.columns.ids))
    except KeyError:
        return None
    offs = list(map(_OFFSET, got))  # C-level passes: a million placements in a fraction of a second
    if set(map(_MEMORY, got)) - {problem.memories[0].name} or set(map(type, offs)) - {int}:
        return None
    try:
        return np.array(offs, np.int64)
    except OverflowError:
        return None


def peaks(problem: Problem, placements: Mapping[str, Placement]) -> dict[str, int]:
    """Highest byte used + 1 in each memory (0 for an empty one)."""
    out = {m: 0 for m in problem.memory_names}
    off = offsets(problem, placements)
    size = problem.columns.size
    if off is not None and len(off) and int(off.max()) <= INT64_MAX - int(size.max()):  # no int64 sum wraps
        out[problem.memories[0].name] = int((off + size)[size > 0].max(initial=0))
        return out
    for b in problem.buffers:
        p = placements.get(b.id)
        if p is not None and b.size > 0 and p.memory in out:
            out[p.memory] = max(out[p.memory], p.offset + b.size)
    return out


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


def usage_curve(problem: Problem, placements: dict[str, Placement], memory: str) -> UsageCurve:
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
    times = distinct(np.concatenate([start, end]))
    delta = np.zeros(len(times), np.int64)
    np.add.at(delta, np.searchsorted(times, start), size)
    np.add.at(delta, np.searchsorted(times, end), -size)
    live = np.cumsum(delta)
    highest = (_highest if jit.usable("plan") else _highest.py_func)(  # the same code in Python (optplan.jit)
        np.searchsorted(times, start), np.searchsorted(times, end), top, len(times))
    return UsageCurve(times, live, highest)


@njit(cache=True)
def _highest(first: np.ndarray, last: np.ndarray, top: np.ndarray, slots: int) -> np.ndarray:
    """Per slot the highest ``top`` of the spans ``[first, last)`` over it: spans from the highest
    down, each filling the slots still empty (a pointer to the next empty slot, path-halved), so
    every slot is filled once: O(n log n) for the sort."""
    out = np.zeros(slots, np.int64)
    nxt = np.arange(slots + 1)
    for k in np.argsort(-top, kind="mergesort"):
        i = first[k]
        while True:
            while nxt[i] != i:  # the next empty slot at or after i
                nxt[i] = nxt[nxt[i]]
                i = nxt[i]
            if i >= last[k]:
                break
            out[i] = top[k]
            nxt[i] = i + 1
    return out
