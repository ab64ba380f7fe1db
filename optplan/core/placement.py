"""Where buffers live: a ``Placement`` per buffer, or a ``Layout`` (the same as arrays), and the
peaks they reach. Below the objective and the plan, which both read peaks."""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from optplan.core.buffer import INT64_MAX
from optplan.core.columns import gc_paused

if TYPE_CHECKING:
    from optplan.core.problem import Problem


@dataclass(frozen=True)
class Placement:
    """Where one buffer lives: a memory's name and a byte offset from that memory's start."""

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


