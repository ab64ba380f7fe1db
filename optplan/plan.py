"""A plan: where every buffer lives, how good that is, and how sure we are."""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from optplan import jit
from optplan.objective import BENEFIT, Objective
from optplan.problem import INT64_MAX, distinct, gc_paused

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


class Layout(Mapping[str, Placement]):
    """Placements as arrays in a problem's buffer order: each buffer's memory (an index into
    ``names``) and offset, as the compiled packers make them. ``Placement`` objects are made only
    when one is read: a million of them take seconds to build, and ``offsets``, ``peaks``, the
    validator and the CSV writer read the arrays instead. The arrays are read-only, so a check
    passed once holds (``checked``, ``mark_checked``)."""

    __slots__ = ("ids", "names", "where", "offset", "_index", "_checked")

    def __init__(self, ids: list[str], names: tuple[str, ...], where: np.ndarray, offset: np.ndarray) -> None:
        if not len(ids) == len(where) == len(offset):
            raise ValueError(f"{len(ids)} ids, {len(where)} memories and {len(offset)} offsets")
        self.ids, self.names = ids, tuple(names)
        self.where, self.offset = np.asarray(where, np.int64), np.asarray(offset, np.int64)
        self.where.setflags(write=False)
        self.offset.setflags(write=False)
        self._index: dict[str, int] | None = None
        self._checked: weakref.ref[Problem] | None = None

    def _position(self) -> dict[str, int]:
        if self._index is None:
            with gc_paused():
                self._index = dict(zip(self.ids, range(len(self.ids))))
        return self._index

    def __getitem__(self, key: str) -> Placement:
        k = self._position()[key]
        return Placement(self.names[int(self.where[k])], int(self.offset[k]))

    def __contains__(self, key: object) -> bool:
        return key in self._position()

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def items(self):  # type: ignore[override]
        """All (id, Placement) pairs, built in one pass (not a look-up per id)."""
        with gc_paused():
            return list(zip(self.ids, self.values()))

    def values(self):  # type: ignore[override]
        with gc_paused():
            return list(map(Placement, map(self.names.__getitem__, self.where.tolist()), self.offset.tolist()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Layout) and other.ids == self.ids:
            names = np.array(self.names, object)
            return bool((names[self.where] == np.array(other.names, object)[other.where]).all()
                        and (self.offset == other.offset).all())
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return Layout, (self.ids, self.names, np.array(self.where), np.array(self.offset))  # (unchecked)

    def checked(self, problem: Problem) -> bool:
        """The validator passed this plan for ``problem`` (the same object) already."""
        return self._checked is not None and self._checked() is problem

    def mark_checked(self, problem: Problem) -> None:
        self._checked = weakref.ref(problem)

    def on(self, problem: Problem) -> bool:
        """Its arrays are in ``problem``'s buffer order (made for that problem's buffers)."""
        return self.ids is problem.columns.ids or self.ids == problem.columns.ids


@dataclass
class Plan:
    """The answer of a planner. Built by ``optplan.planners`` after the validator passed it."""

    placements: Mapping[str, Placement]
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
    layout = layout_of(problem, placements)
    if layout is not None:  # the arrays themselves (read-only)
        return None if layout.where.any() else layout.offset
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


def layout_of(problem: Problem, placements: Mapping[str, Placement]) -> Layout | None:
    """``placements`` if it is a ``Layout`` of ``problem``'s buffers and memories, else None."""
    if isinstance(placements, Layout) and placements.names == problem.memory_names and placements.on(problem):
        return placements
    return None


def peaks(problem: Problem, placements: Mapping[str, Placement]) -> dict[str, int]:
    """Highest byte used + 1 in each memory (0 for an empty one)."""
    out = {m: 0 for m in problem.memory_names}
    size = problem.columns.size
    layout = layout_of(problem, placements)
    if layout is not None and len(problem.memories) > 1 and len(size) and (
            int(layout.offset.max()) <= INT64_MAX - int(size.max())):
        top = np.zeros(len(out), np.int64)
        held = size > 0
        np.maximum.at(top, layout.where[held], (layout.offset + size)[held])
        return dict(zip(out, map(int, top)))
    off = offsets(problem, placements)
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
