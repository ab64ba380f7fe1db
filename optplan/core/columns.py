"""A problem's buffers as arrays, and the helpers that keep passes over millions of them fast."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from optplan.core.buffer import INT64_MAX, Buffer


@dataclass(frozen=True, eq=False)
class Columns:
    """A problem's buffers as arrays in buffer order. ``plain``: scalar lifetimes, a single unit
    per buffer (no relative placements) and no field but id, size, lifetime, alignment and
    benefit set: then the arrays say everything a plan must satisfy but the alignment.
    Vector clocks: ``start``/``end`` are their scalar stand-ins (``Buffer.footprint``)."""

    ids: list[str]
    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    alignment: np.ndarray
    gain: np.ndarray
    plain: bool

    @classmethod
    def of(cls, bufs: Sequence[Buffer], clocks: bool, relative: bool) -> Columns:
        """The columns of ``bufs`` (``clocks``: vector-clock lifetimes; ``relative``: some are placed
        relative to others, so a buffer is not a unit of its own)."""
        n = len(bufs)

        def col(values: Iterable[int]) -> np.ndarray:
            return np.fromiter(values, np.int64, n)

        start = col(sum(b.start) if clocks else b.start for b in bufs)
        end = col(sum(b.end) if clocks else b.end for b in bufs)
        size = col(b.size for b in bufs)
        gain = size if all(b.benefit is None for b in bufs) else np.array([b.gain for b in bufs], object)
        if gain.dtype == object and max(gain.tolist(), default=0) <= INT64_MAX:
            gain = gain.astype(np.int64)  # (a benefit may pass 2^63-1: then Python integers)
        plain = not relative and not clocks and all(
            b.gaps == () and b.allowed is None and b.blocked == () and b.fixed_memory is None and b.fixed_offset is None
            for b in bufs)
        return cls([b.id for b in bufs], start, end, size, col(b.alignment for b in bufs), gain, plain)

    @staticmethod
    def total(values: np.ndarray) -> int:
        """The exact sum (in Python integers once int64 could wrap)."""
        if values.dtype == object or float(np.abs(values).sum(dtype=np.float64)) >= 2.0**62:
            return sum(values.tolist())
        return int(values.sum())


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer array, as ``np.unique`` gives them: numpy 2.4's
    ``np.unique`` hashes integer arrays, 37x slower than a sort (2M step times: 1.76 against
    0.05 CPU s; the time index of a million buffers is built for every heuristic's arrays,
    every usage curve and the search's instance)."""
    s = np.sort(values, kind="stable")
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


@contextmanager
def gc_paused() -> Iterator[None]:
    """While building millions of objects that are no garbage (a problem's buffers, a plan's
    placements), the cyclic collector's passes over them take as long as the building."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ColumnBuffers(Sequence[Buffer]):
    """The buffers of a problem read from columns, made when first iterated: a million
    ``Buffer`` objects take 2-4 s to build, and a plan of plain buffers (heuristics, bounds,
    validator, writers) reads the columns instead. One read by position is made on its own (the
    heuristics' pilot slice). Pickled as its columns; equal to the tuple of its buffers."""

    __slots__ = ("_columns", "_made")

    def __init__(self, columns: Columns) -> None:
        self._columns = columns
        self._made: tuple[Buffer, ...] | None = None

    def __len__(self) -> int:
        return len(self._columns.ids)

    def __getitem__(self, k):  # type: ignore[no-untyped-def,override]
        if self._made is not None or isinstance(k, slice):
            return self.made()[k]
        k, c = range(len(self))[k], self._columns
        return _buffer(c.ids[k], int(c.size[k]), int(c.start[k]), int(c.end[k]), int(c.alignment[k]))

    def __iter__(self) -> Iterator[Buffer]:
        return iter(self.made())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and self.made() == tuple(other)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return ColumnBuffers, (self._columns,)

    def made(self) -> tuple[Buffer, ...]:
        """All the buffers, built once (threads asking at once may both build them; one is kept)."""
        if self._made is None:
            c = self._columns
            with gc_paused():
                made = tuple(map(_buffer, c.ids, c.size.tolist(), c.start.tolist(), c.end.tolist(), c.alignment.tolist()))
            self._made = made
        return self._made


def _buffer(bid: str, size: int, start: int, end: int, alignment: int) -> Buffer:
    """A plain buffer whose fields the columns' checks passed (no ``__init__`` checks)."""
    fields: dict[str, object] = {"id": bid, "size": size, "start": start, "end": end}
    if alignment != 1:
        fields["alignment"] = alignment
    return fast_instance(Buffer, fields)  # type: ignore[no-any-return]


def fast_instance(cls: type, fields: dict[str, object]) -> Any:
    """A frozen dataclass instance holding ``fields``, without ``__init__`` and its checks; every
    field left out reads the class's default (dataclasses keep defaults as class attributes)."""
    obj: Any = object.__new__(cls)
    object.__setattr__(obj, "__dict__", fields)
    return obj
