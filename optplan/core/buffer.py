"""Buffers and memories: what a problem is made of. A buffer's lifetime is a half-open integer
interval ``[start, end)`` (or a vector clock per stream, ``optplan.core.clocks``); two buffers
conflict in time exactly when ``a.start < b.end and b.start < a.end``, unless gaps (spans when a
buffer is inactive, or holds only a window of its bytes) keep them apart: then their footprints
decide."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A step (int) or a vector clock (tuple[int, ...], see optplan.core.clocks). Typed Any: the planners
# for scalar lifetimes read ints; only Problem.concurrent ones see tuples.
Time = Any

# Every size, time, offset and every sum of them (live loads, peaks) must fit a signed 64-bit
# integer: the planners, numpy and the solvers compute in int64.
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Memory:
    """One address space. Memories of a Problem are listed fastest first.

    Attributes:
        name: the memory's name, unique in a problem.
        capacity: bytes; None: unbounded.
        alignment: every offset in this memory is a multiple of it.
        weight: weight of this memory's peak in the objective; None: the default weights
            (``optplan.core.problem.objective_weights``: slower memories weigh more).
        base_address: where offset 0 lives, for reports and front ends.
    """

    name: str
    capacity: int | None = None  # bytes; None means unbounded
    alignment: int = 1  # every offset in this memory is a multiple of it
    weight: int | None = None  # objective weight of this memory's peak; None: see objective_weights
    base_address: int = 0  # where offset 0 lives, for reports and front ends


@dataclass(frozen=True)
class Gap:
    """A span ``[start, end)`` inside a buffer's lifetime when it is inactive (MiniMalloc's gaps).

    With a ``window`` ``(lo, hi)`` it stays partly active and occupies only the bytes
    ``[offset + lo, offset + hi)`` meanwhile. Gaps free bytes for others; the buffer's offset and
    size (hence its reach in the peak and the capacity) do not change.
    """

    start: Time  # an int, or a vector clock like the buffer's (see optplan.core.clocks)
    end: Time
    window: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("start", "end", "window"):
            if isinstance(getattr(self, name), list):  # as read from JSON
                object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True)
class Buffer:
    """A tensor to place: ``size`` bytes live during ``[start, end)`` except in its ``gaps``.

    Attributes:
        id: unique in a problem.
        size: bytes (0: needs no space).
        start: the first step it is live; a tuple: a vector clock, one step per stream.
        end: the first step it is no longer live (half-open).
        alignment: its offset is a multiple of it (and of its memory's alignment).
        allowed: memories it may use; None: all.
        blocked: memories it may not use.
        fixed_memory: pin it to this memory.
        fixed_offset: pin it to this offset.
        hint_memory: a warm-start suggestion, never a constraint.
        hint_offset: a warm-start suggestion, never a constraint.
        gaps: spans inside ``[start, end)`` when it holds no bytes, or only a window; sorted, disjoint.
        benefit: its value in faster memory (what fast-first maximises); None: its size.
    """

    id: str
    size: int
    start: Time  # an int, or a vector clock (tuple, one step per stream) for concurrent lifetimes
    end: Time
    alignment: int = 1
    allowed: tuple[str, ...] | None = None  # memories it may use; None: all
    blocked: tuple[str, ...] = ()  # memories it may not use
    fixed_memory: str | None = None
    fixed_offset: int | None = None
    hint_memory: str | None = None  # a warm-start suggestion, never a constraint
    hint_offset: int | None = None
    gaps: tuple[Gap, ...] = ()  # sorted, disjoint, inside [start, end)
    benefit: int | None = None  # value of keeping it in faster memory; None: its size

    @property
    def gain(self) -> int:
        """``benefit``, or the size when none is given (what the objectives count)."""
        return self.size if self.benefit is None else self.benefit

    def __post_init__(self) -> None:
        if isinstance(self.gaps, list):
            object.__setattr__(self, "gaps", tuple(self.gaps))
        for name in ("start", "end"):
            if isinstance(getattr(self, name), list):  # as read from JSON
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def overlaps(self, other: Buffer) -> bool:
        """Whether the lifetimes intersect, gaps ignored: necessary for two buffers to need
        disjoint bytes, not sufficient (compare ``footprint()`` for that). Vector clocks: neither
        happens before the other (``optplan.core.clocks``)."""
        if isinstance(self.start, tuple):
            return concurrent(self, other)
        return self.start < other.end and other.start < self.end  # type: ignore[operator]

    def footprint(self) -> tuple[tuple[int, int, int, int], ...]:
        """The rectangles ``(t0, t1, y0, y1)`` the buffer occupies, bytes relative to its offset:
        ``[0, size)`` while active, a gap's window during a partial gap, nothing in a full gap.
        In time order; neighbours with the same bytes are merged. Empty for size 0."""
        if self.size == 0:
            return ()
        if isinstance(self.start, tuple):  # vector clocks: a scalar stand-in (see optplan.core.clocks)
            return ((sum(self.start), sum(self.end), 0, self.size),)  # type: ignore[arg-type]
        if not self.gaps:
            return ((self.start, self.end, 0, self.size),)
        out: list[tuple[int, int, int, int]] = []

        def add(t0: int, t1: int, y0: int, y1: int) -> None:
            if t0 >= t1:
                return
            if out and out[-1][1] == t0 and out[-1][2:] == (y0, y1):
                out[-1] = (out[-1][0], t1, y0, y1)
            else:
                out.append((t0, t1, y0, y1))

        t = self.start
        for g in self.gaps:
            add(t, g.start, 0, self.size)
            if g.window is not None:
                add(g.start, g.end, g.window[0], g.window[1])
            t = g.end
        add(t, self.end, 0, self.size)
        return tuple(out)


def happens_before(a: Buffer, b: Buffer) -> bool:
    """Vector clocks: ``a`` ends, in every stream, before ``b`` starts."""
    return all(x <= y for x, y in zip(a.end, b.start))  # type: ignore[call-overload]


def concurrent(a: Buffer, b: Buffer) -> bool:
    """Whether ``a`` and ``b`` need disjoint bytes: neither happens before the other."""
    return not happens_before(a, b) and not happens_before(b, a)


@dataclass(frozen=True)
class RelativePlacement:
    """``buffer`` lives in the memory of ``base`` at ``offset(base) + delta``."""

    buffer: str
    base: str
    delta: int
