"""The data model: buffers with sizes and half-open lifetimes, memories, relative placements.

Everything is checked on construction so planners can trust a Problem; every error names the
buffer (or memory) and the field. Lifetimes are half-open integer intervals ``[start, end)``:
two buffers conflict in time exactly when ``a.start < b.end and b.start < a.end``, unless gaps
(spans when a buffer is inactive, or holds only a window of its bytes) keep them apart: then
their footprints decide.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from optplan.errors import ProblemError

if TYPE_CHECKING:
    from optplan.clocks import ClockGraph

# A step (int) or a vector clock (tuple[int, ...], see optplan.clocks). Typed Any: the planners
# for scalar lifetimes read ints; only Problem.concurrent ones see tuples.
Time = Any

# Every size, time, offset and every sum of them (live loads, peaks) must fit a signed 64-bit
# integer: the planners, numpy and the solvers compute in int64.
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Memory:
    """One address space. Memories of a Problem are listed fastest first."""

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

    start: Time  # an int, or a vector clock like the buffer's (see optplan.clocks)
    end: Time
    window: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("start", "end", "window"):
            if isinstance(getattr(self, name), list):  # as read from JSON
                object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True)
class Buffer:
    """A tensor to place: ``size`` bytes live during ``[start, end)`` except in its ``gaps``."""

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
        happens before the other (``optplan.clocks``)."""
        if isinstance(self.start, tuple):
            from optplan.clocks import concurrent

            return concurrent(self, other)
        return self.start < other.end and other.start < self.end  # type: ignore[operator]

    def footprint(self) -> tuple[tuple[int, int, int, int], ...]:
        """The rectangles ``(t0, t1, y0, y1)`` the buffer occupies, bytes relative to its offset:
        ``[0, size)`` while active, a gap's window during a partial gap, nothing in a full gap.
        In time order; neighbours with the same bytes are merged. Empty for size 0."""
        if self.size == 0:
            return ()
        if isinstance(self.start, tuple):  # vector clocks: a scalar stand-in (see optplan.clocks)
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


@dataclass(frozen=True)
class RelativePlacement:
    """``buffer`` lives in the memory of ``base`` at ``offset(base) + delta``."""

    buffer: str
    base: str
    delta: int


@dataclass(frozen=True)
class Unit:
    """Buffers that move as one: a root buffer and every buffer placed relative to it.

    Planners place units, not buffers. The unit's offset is the root's offset; ``pieces`` is its
    footprint as disjoint rectangles ``(t0, t1, y0, y1)`` relative to that offset (members of one
    unit may overlap each other on purpose, e.g. concat inputs inside the output).
    """

    root: str
    members: tuple[tuple[str, int], ...]  # (buffer id, offset relative to the root)
    memories: tuple[str, ...]  # where the unit may go, fastest first
    modulus: Mapping[str, tuple[int, int]]  # memory -> (m, r): root offset % m == r
    low: int  # lowest member byte relative to the root (<= 0): root offset >= -low
    high: int  # one past the highest member byte relative to the root
    fixed_offset: int | None
    pieces: tuple[tuple[int, int, int, int], ...]
    # one past the highest byte of a member that stores bytes, relative to the root: what the
    # peak counts (0 if none). A gap's window may leave it above every piece.
    top: int
    gain: int = 0  # the members' benefit (Buffer.gain): what keeping the unit in faster memory is worth

    @property
    def start(self) -> int:
        return min((p[0] for p in self.pieces), default=0)

    @property
    def end(self) -> int:
        return max((p[1] for p in self.pieces), default=0)

    @property
    def height(self) -> int:
        return self.high - self.low

    def lowest_offset(self, memory: str, at_least: int = 0) -> int:
        """The smallest legal root offset >= ``at_least`` in ``memory`` (alignment and low edge)."""
        m, r = self.modulus[memory]
        x = max(at_least, -self.low)
        return x + (r - x) % m


@dataclass(frozen=True, eq=False)
class Problem:
    """A complete planning instance. Construction validates it (raises ProblemError)."""

    buffers: tuple[Buffer, ...]
    memories: tuple[Memory, ...] = (Memory("mem"),)
    relative: tuple[RelativePlacement, ...] = ()
    metadata: Mapping[str, object] = field(default_factory=dict)
    streams: int = field(init=False, default=1)  # 1: scalar lifetimes; k: vector clocks of k streams

    def __post_init__(self) -> None:
        object.__setattr__(self, "buffers", tuple(_one_stream(b) for b in self.buffers))
        object.__setattr__(self, "memories", tuple(self.memories))
        object.__setattr__(self, "relative", tuple(self.relative))
        _check_memories(self.memories)
        mems = {m.name: m for m in self.memories}
        by_id: dict[str, Buffer] = {}
        for b in self.buffers:
            if not _plain(b):
                _check_buffer(b, mems)
            if b.id in by_id:
                raise ProblemError(f"buffer {b.id!r}: field 'id': duplicate id")
            by_id[b.id] = b
        object.__setattr__(self, "_by_id", by_id)
        object.__setattr__(self, "_mems", mems)
        object.__setattr__(self, "streams", _streams(self))
        object.__setattr__(self, "_units", _build_units(self))
        _check_live_load(self.buffers)

    @classmethod
    def from_columns(cls, ids: list[str], start: np.ndarray, end: np.ndarray, size: np.ndarray,
                     alignment: np.ndarray | None = None, memories: tuple[Memory, ...] = (Memory("mem"),),
                     metadata: Mapping[str, object] | None = None) -> Problem:
        """The problem of plain buffers (id, lifetime, size, alignment: nothing else) given as
        columns, as a bulk reader has them: checked as arrays, buffers and units built without a
        check per object (a million buffers in seconds, not tens of seconds). Anything the
        array checks do not pass (an empty lifetime, a duplicate id, sums near 2^63) goes
        through the general constructor, whose error names the buffer and field."""
        n = len(ids)
        align = np.ones(n, np.int64) if alignment is None else alignment
        metadata = dict(metadata or {})
        # sums in floats: an int64 sum could wrap; below 2^62 the general checks all pass
        if n and not ((size >= 0).all() and (start >= 0).all() and (start < end).all() and (align >= 1).all()
                      and float(size.sum(dtype=np.float64)) < 2.0**62 and float(end.max()) < 2.0**62 and "" not in ids):
            return cls(tuple(Buffer(i, z, s, e, alignment=a) for i, s, e, z, a in
                             zip(ids, start.tolist(), end.tolist(), size.tolist(), align.tolist())), memories, (), metadata)
        memories = tuple(memories)
        _check_memories(memories)
        with gc_paused():
            return cls._from_checked_columns(ids, start, end, size, align, memories, metadata)

    @classmethod
    def _from_checked_columns(cls, ids: list[str], start: np.ndarray, end: np.ndarray, size: np.ndarray,
                              align: np.ndarray, memories: tuple[Memory, ...], metadata: dict[str, object]) -> Problem:
        n = len(ids)
        starts, ends, sizes, aligns = start.tolist(), end.tolist(), size.tolist(), align.tolist()
        buffers = tuple(_fast(Buffer, {"id": i, "size": z, "start": s, "end": e} if a == 1 else
                              {"id": i, "size": z, "start": s, "end": e, "alignment": a})
                        for i, s, e, z, a in zip(ids, starts, ends, sizes, aligns))
        by_id = dict(zip(ids, buffers))
        if len(by_id) != n:
            return cls(buffers, memories, (), metadata)  # names the duplicate
        self = object.__new__(cls)
        for k, v in (("buffers", buffers), ("memories", memories), ("relative", ()), ("metadata", metadata),
                     ("streams", 1), ("_by_id", by_id), ("_mems", {m.name: m for m in memories})):
            object.__setattr__(self, k, v)
        self.__dict__["columns"] = Columns(ids, start, end, size, align, size, True)
        return self  # its units are made when first asked for (``units``)

    @cached_property
    def columns(self) -> Columns:
        """The buffers as arrays, for passes over every buffer (bounds, validation, peaks)."""
        return Columns.of(self)

    # -- lookups ---------------------------------------------------------------------------
    def buffer(self, buffer_id: str) -> Buffer:
        return self._by_id[buffer_id]  # type: ignore[attr-defined]

    def has_buffer(self, buffer_id: str) -> bool:
        return buffer_id in self._by_id  # type: ignore[attr-defined]

    def memory(self, name: str) -> Memory:
        return self._mems[name]  # type: ignore[attr-defined]

    @property
    def memory_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.memories)

    @property
    def units(self) -> tuple[Unit, ...]:
        """Placement units in buffer order of their roots. A problem read from columns makes them
        when first asked for (a million take seconds, and the heuristics' arrays, the bounds and
        the validator read the columns instead); threads asking at once get the same ones."""
        units = self.__dict__.get("_units")
        if units is None:
            cols = self.columns
            with gc_paused():
                made = _plain_units(self, cols.ids, cols.start.tolist(), cols.end.tolist(), cols.size.tolist(),
                                    cols.alignment.tolist())
            units = self.__dict__.setdefault("_units", made)
        return units

    @property
    def unit_count(self) -> int:
        """``len(self.units)``, without making them."""
        units = self.__dict__.get("_units")
        return len(self.buffers) if units is None else len(units)  # (made from columns: a unit per buffer)

    @cached_property
    def unit_of(self) -> dict[str, Unit]:
        """Buffer id -> the unit it belongs to."""
        return {bid: u for u in self.units for bid, _ in u.members}

    def candidate_memories(self, b: Buffer) -> tuple[str, ...]:
        """Memories ``b`` may use on its own (fixed, allowed, blocked), fastest first."""
        if b.fixed_memory is not None:
            return (b.fixed_memory,)
        allowed = set(b.allowed) if b.allowed is not None else set(self._mems)  # type: ignore[attr-defined]
        return tuple(m.name for m in self.memories if m.name in allowed and m.name not in b.blocked)

    def alignment(self, b: Buffer, memory: str) -> int:
        """The modulus of ``b``'s offset in ``memory``: lcm of both alignments."""
        return math.lcm(b.alignment, self.memory(memory).alignment)

    @property
    def concurrent(self) -> bool:
        """Lifetimes are vector clocks over several streams (only partly ordered)."""
        return self.streams > 1

    @cached_property
    def clock_graph(self) -> ClockGraph:
        """Vector clocks: which units conflict and at which relative offsets they would share a
        byte (``optplan.clocks.ClockGraph``). Derived once, for the planners that handle clocks."""
        from optplan.clocks import ClockGraph

        return ClockGraph(self)

    @property
    def time_span(self) -> tuple[int, int]:
        if not self.buffers:
            return (0, 0)
        if self.concurrent:  # the scalar stand-ins of Buffer.footprint
            return (min(sum(b.start) for b in self.buffers), max(sum(b.end) for b in self.buffers))  # type: ignore[arg-type]
        cols = self.columns  # (a pass over the buffers per call cost compare 0.1 s on idealloc/S_1)
        return int(cols.start.min()), int(cols.end.max())

    # -- derived problems ------------------------------------------------------------------
    def with_capacity(self, capacity: int) -> Problem:
        """Cap a single-memory problem (the MiniMalloc CSV format carries no capacity)."""
        if len(self.memories) != 1:
            raise ProblemError("--capacity applies to single-memory problems; set capacities per memory in the JSON problem")
        return replace(self, memories=(replace(self.memories[0], capacity=capacity),))

    def with_memories(self, memories: Iterable[Memory]) -> Problem:
        """The same buffers in another hierarchy (fastest first): e.g. a CSV problem, which
        carries one memory, given an SRAM in front of a DRAM."""
        return Problem(self.buffers, tuple(memories), self.relative, dict(self.metadata))

    def with_buffers(self, buffers: Iterable[Buffer]) -> Problem:
        """The same memories with another set of buffers (relative placements among them kept)."""
        buffers = tuple(buffers)
        ids = {b.id for b in buffers}
        rel = tuple(r for r in self.relative if r.buffer in ids and r.base in ids)
        return Problem(buffers, self.memories, rel, dict(self.metadata))


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
    def of(cls, problem: Problem) -> Columns:
        bufs, n = problem.buffers, len(problem.buffers)

        def col(values: Iterable[int]) -> np.ndarray:
            return np.fromiter(values, np.int64, n)

        clocks = problem.concurrent
        start = col(sum(b.start) if clocks else b.start for b in bufs)
        end = col(sum(b.end) if clocks else b.end for b in bufs)
        size = col(b.size for b in bufs)
        gain = size if all(b.benefit is None for b in bufs) else np.array([b.gain for b in bufs], object)
        if gain.dtype == object and max(gain.tolist(), default=0) <= INT64_MAX:
            gain = gain.astype(np.int64)  # (a benefit may pass 2^63-1: then Python integers)
        plain = not problem.relative and not clocks and all(
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


def _fast(cls: type, fields: dict[str, object]) -> Any:
    """A frozen dataclass instance holding ``fields``, without ``__init__`` and its checks; every
    field left out reads the class's default (dataclasses keep defaults as class attributes)."""
    obj: Any = object.__new__(cls)
    object.__setattr__(obj, "__dict__", fields)
    return obj


def _plain_units(p: Problem, ids: list[str], starts: list[int], ends: list[int], sizes: list[int],
                 aligns: list[int]) -> tuple[Unit, ...]:
    """``_single_units`` for checked plain buffers given as columns."""
    every = p.memory_names
    moduli: dict[int, dict[str, tuple[int, int]]] = {}  # read-only, shared
    for a in set(aligns):
        moduli[a] = {m.name: (math.lcm(a, m.alignment), 0) for m in p.memories}
    return tuple(_fast(Unit, {"root": i, "members": ((i, 0),), "memories": every, "modulus": moduli[a], "low": 0,
                              "high": z, "fixed_offset": None, "pieces": ((s, e, 0, z),) if z else (), "top": z,
                              "gain": z})
                 for i, s, e, z, a in zip(ids, starts, ends, sizes, aligns))


def objective_weights(problem: Problem) -> dict[str, int]:
    """Weights of the per-memory peaks in the objective.

    Explicit ``Memory.weight`` values are used as given. By default the objective is
    lexicographic with the *slowest* memory most important: bytes spilled to slower storage
    cost more than any amount of faster storage. A memory with a capacity that has a slower
    memory behind it weighs 0: its size is fixed by the chip, so shrinking its peak is worth
    nothing, and a positive weight would push buffers out of fast storage whenever that does not
    raise the slower peaks.
    """
    total = Columns.total(problem.columns.size) + 1
    last = len(problem.memories) - 1
    weights = {}
    for i, m in enumerate(problem.memories):
        if m.weight is not None:
            weights[m.name] = int(m.weight)
        elif m.capacity is not None and i < last:
            weights[m.name] = 0
        else:
            weights[m.name] = total**i
    return weights


# -- checks -----------------------------------------------------------------------------------

def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_range(where: str, values: Iterable[tuple[str, object]]) -> None:
    """Integers must lie in [-2^63, 2^63 - 1] (non-integers are reported by the other checks)."""
    for name, v in values:
        if _is_int(v) and not -INT64_MAX - 1 <= v <= INT64_MAX:  # type: ignore[operator]
            raise ProblemError(f"{where}: field '{name}': {v} does not fit a 64-bit integer (at most 2^63-1)")


def _check_live_load(buffers: tuple[Buffer, ...]) -> None:
    """The bytes live at one time (all memories together) must fit int64. Exact in Python
    integers; the sweep runs only when the sizes together exceed 2^63-1."""
    if sum(b.size for b in buffers) <= INT64_MAX or any(isinstance(b.start, tuple) for b in buffers):
        return  # (vector clocks order steps only partly: their loads are the clocks module's)
    events = sorted((t, d, i) for i, b in enumerate(buffers) if b.size for t, d in ((b.start, 1), (b.end, -1)))
    load = 0
    for t, d, i in events:  # ends (-1) sort before starts at equal times: half-open lifetimes
        load += d * buffers[i].size
        if load > INT64_MAX:
            raise ProblemError(f"buffer {buffers[i].id!r}: field 'size': with it the live load at step {t} is "
                               f"{load} bytes, more than 2^63-1")


def _check_memories(memories: tuple[Memory, ...]) -> None:
    if not memories:
        raise ProblemError("problem: field 'memories': at least one memory is required")
    seen = set()
    for m in memories:
        where = f"memory {m.name!r}"
        if not isinstance(m.name, str) or not m.name:
            raise ProblemError(f"{where}: field 'name': must be a non-empty string")
        if m.name in seen:
            raise ProblemError(f"{where}: field 'name': duplicate memory name")
        seen.add(m.name)
        _check_range(where, ((f, getattr(m, f)) for f in ("capacity", "alignment", "weight", "base_address")))
        if m.capacity is not None and (not _is_int(m.capacity) or m.capacity < 0):
            raise ProblemError(f"{where}: field 'capacity': must be a non-negative integer or null, got {m.capacity!r}")
        if not _is_int(m.alignment) or m.alignment < 1:
            raise ProblemError(f"{where}: field 'alignment': must be a positive integer, got {m.alignment!r}")
        if m.weight is not None and (not _is_int(m.weight) or m.weight < 0):
            raise ProblemError(f"{where}: field 'weight': must be a non-negative integer, got {m.weight!r}")
        if not _is_int(m.base_address) or m.base_address < 0:
            raise ProblemError(f"{where}: field 'base_address': must be a non-negative integer, got {m.base_address!r}")


def _plain(b: Buffer) -> bool:
    """A buffer that ``_check_buffer`` passes for certain, tested cheaply: only its plain fields
    set, each valid (a million buffers are checked in a second instead of five)."""
    return (type(b.size) is int and type(b.start) is int and type(b.end) is int and type(b.alignment) is int
            and type(b.id) is str and b.id != "" and 0 <= b.size <= INT64_MAX and b.start < b.end
            and -INT64_MAX <= b.start and b.end <= INT64_MAX and b.end - b.start <= INT64_MAX and 1 <= b.alignment <= INT64_MAX
            and b.gaps == () and b.allowed is None and b.blocked == () and b.fixed_memory is None
            and b.fixed_offset is None and b.hint_memory is None and b.hint_offset is None)


def _check_buffer(b: Buffer, mems: Mapping[str, Memory]) -> None:
    where = f"buffer {b.id!r}"
    if not isinstance(b.id, str) or not b.id:
        raise ProblemError(f"{where}: field 'id': must be a non-empty string")
    for name in ("size", "alignment"):
        if not _is_int(getattr(b, name)):
            raise ProblemError(f"{where}: field '{name}': must be an integer, got {getattr(b, name)!r}")
    _check_range(where, ((f, getattr(b, f)) for f in ("size", "start", "end", "alignment", "fixed_offset", "hint_offset")))
    if b.size < 0:
        raise ProblemError(f"{where}: field 'size': must be >= 0, got {b.size}")
    if isinstance(b.start, tuple) or isinstance(b.end, tuple):
        _check_clock(b, where)
    else:
        for name in ("start", "end"):
            if not _is_int(getattr(b, name)):
                raise ProblemError(f"{where}: field '{name}': must be an integer, got {getattr(b, name)!r}")
        if b.start >= b.end:
            raise ProblemError(f"{where}: field 'end': lifetime [{b.start}, {b.end}) is empty (start must be < end)")
        if b.end - b.start > INT64_MAX:
            raise ProblemError(f"{where}: field 'end': lifetime [{b.start}, {b.end}) is longer than 2^63-1 steps")
    if b.alignment < 1:
        raise ProblemError(f"{where}: field 'alignment': must be >= 1, got {b.alignment}")
    if b.benefit is not None and (not _is_int(b.benefit) or b.benefit < 0):
        raise ProblemError(f"{where}: field 'benefit': must be a non-negative integer, got {b.benefit!r}")
    if b.gaps != ():
        _check_gaps(b, where)
    for name in ("allowed", "blocked"):
        for m in getattr(b, name) or ():
            if m not in mems:
                raise ProblemError(f"{where}: field '{name}': unknown memory {m!r}")
    for name in ("fixed_memory", "hint_memory"):
        m = getattr(b, name)
        if m is not None and m not in mems:
            raise ProblemError(f"{where}: field '{name}': unknown memory {m!r}")
    if b.hint_offset is not None and (not _is_int(b.hint_offset) or b.hint_offset < 0):
        raise ProblemError(f"{where}: field 'hint_offset': must be a non-negative integer, got {b.hint_offset!r}")
    allowed = set(b.allowed) if b.allowed is not None else set(mems)
    usable = [m for m in mems if m in allowed and m not in b.blocked]
    if b.fixed_memory is not None and b.fixed_memory not in usable:
        raise ProblemError(f"{where}: field 'fixed_memory': {b.fixed_memory!r} is not allowed for this buffer")
    if not usable:
        raise ProblemError(f"{where}: field 'allowed': no memory is left after the blocklist")
    if b.fixed_offset is not None:
        if not _is_int(b.fixed_offset) or b.fixed_offset < 0:
            raise ProblemError(f"{where}: field 'fixed_offset': must be a non-negative integer, got {b.fixed_offset!r}")
        if b.fixed_offset + b.size > INT64_MAX:
            raise ProblemError(f"{where}: field 'fixed_offset': {b.fixed_offset} + size {b.size} passes 2^63-1")
        targets = [b.fixed_memory] if b.fixed_memory is not None else usable
        for m in targets:
            mem = mems[m]
            align = math.lcm(b.alignment, mem.alignment)
            if b.fixed_offset % align:
                raise ProblemError(f"{where}: field 'fixed_offset': {b.fixed_offset} is not a multiple of the alignment {align} in memory {m!r}")
            if mem.capacity is not None and b.fixed_offset + b.size > mem.capacity:
                raise ProblemError(f"{where}: field 'fixed_offset': [{b.fixed_offset}, {b.fixed_offset + b.size}) exceeds the capacity {mem.capacity} of memory {m!r}")


def _check_clock(b: Buffer, where: str) -> None:
    for name in ("start", "end"):
        v = getattr(b, name)
        if not isinstance(v, tuple) or not v or not all(_is_int(x) for x in v):
            raise ProblemError(f"{where}: field '{name}': a vector clock must be a non-empty list of integers, got {v!r}")
    if len(b.start) != len(b.end):  # type: ignore[arg-type]
        raise ProblemError(f"{where}: field 'end': {len(b.end)} streams, but 'start' has {len(b.start)}")  # type: ignore[arg-type]
    if any(s > e for s, e in zip(b.start, b.end)) or b.start == b.end:  # type: ignore[arg-type]
        raise ProblemError(f"{where}: field 'end': lifetime {list(b.start)} -> {list(b.end)} is empty or reversed "  # type: ignore[arg-type]
                           "(end must be >= start in every stream and > in one)")


def _one_stream(b: Buffer) -> Buffer:
    """A one-stream vector clock is a scalar lifetime (its gaps' clocks too)."""
    if isinstance(b.start, (tuple, list)) and isinstance(b.end, (tuple, list)) and len(b.start) == len(b.end) == 1:
        gaps = tuple(replace(g, start=g.start[0], end=g.end[0]) if isinstance(g, Gap) and isinstance(g.start, tuple)
                     and isinstance(g.end, tuple) and len(g.start) == len(g.end) == 1 else g for g in b.gaps)
        return replace(b, start=b.start[0], end=b.end[0], gaps=gaps)
    return b


def _streams(p: Problem) -> int:
    """1 for scalar lifetimes; the clock length when every buffer has a vector clock."""
    lengths = {len(b.start) if isinstance(b.start, tuple) else 0 for b in p.buffers}
    if lengths <= {0}:
        return 1
    if len(lengths) > 1:
        def streams(b: Buffer) -> int:
            return len(b.start) if isinstance(b.start, tuple) else 0

        first = p.buffers[0]
        culprit = next(b for b in p.buffers if streams(b) != streams(first))
        raise ProblemError(f"buffer {culprit.id!r}: field 'start': every buffer needs a vector clock of "
                           f"{streams(first) or 'as many'} streams like buffer {first.id!r} (a scalar is the one-stream case)")
    return lengths.pop()


def _check_gaps(b: Buffer, where: str) -> None:
    where = f"{where}: field 'gaps'"
    if not isinstance(b.gaps, tuple):
        raise ProblemError(f"{where}: must be a tuple of Gap, got {b.gaps!r}")
    for g in b.gaps:
        if not isinstance(g, Gap):
            raise ProblemError(f"{where}: must hold Gap(start, end, window) entries, got {g!r}")
        _check_window(b, g, where)
    if isinstance(b.start, tuple):
        _check_clock_gaps(b, where)
        return
    previous, idle = None, 0
    for g in b.gaps:
        if not _is_int(g.start) or not _is_int(g.end):
            raise ProblemError(f"{where}: start and end must be integers, got {g.start!r} and {g.end!r}")
        _check_range(where, (("start", g.start), ("end", g.end)))
        span = f"gap [{g.start}, {g.end})"
        if g.start >= g.end:
            raise ProblemError(f"{where}: {span} is empty (start must be < end)")
        if g.start < b.start or g.end > b.end:
            raise ProblemError(f"{where}: {span} is not inside the lifetime [{b.start}, {b.end})")
        if previous is not None and g.start < previous.end:
            raise ProblemError(f"{where}: {span} starts before the previous gap [{previous.start}, {previous.end}) ends "
                               "(gaps must be sorted and must not overlap)")
        if g.window is None:
            idle += g.end - g.start
        previous = g
    if b.gaps and idle == b.end - b.start:
        raise ProblemError(f"{where}: full gaps cover the whole lifetime [{b.start}, {b.end}); a buffer must be active at some step")


def _span(g: Gap) -> str:
    if isinstance(g.start, tuple) and isinstance(g.end, tuple):
        return f"gap {list(g.start)} -> {list(g.end)}"
    return f"gap [{g.start}, {g.end})"


def _check_window(b: Buffer, g: Gap, where: str) -> None:
    w = g.window
    if w is None:
        return
    if not isinstance(w, tuple) or len(w) != 2 or not all(_is_int(x) for x in w):
        raise ProblemError(f"{where}: {_span(g)}: window must be a pair of integers (lo, hi), got {w!r}")
    if w[0] == w[1]:
        raise ProblemError(f"{where}: {_span(g)}: window [{w[0]}, {w[1]}) is empty (leave the window out for a full gap)")
    if not 0 <= w[0] < w[1] <= b.size:
        raise ProblemError(f"{where}: {_span(g)}: window [{w[0]}, {w[1]}) must satisfy 0 <= lo < hi <= size {b.size}")


def _check_clock_gaps(b: Buffer, where: str) -> None:
    """Vector clocks: a gap is a span of clocks inside the lifetime, after the previous gap
    (``optplan.clocks``); the buffer must hold bytes in some span."""
    def le(x: tuple[int, ...], y: tuple[int, ...]) -> bool:
        return all(a <= c for a, c in zip(x, y))

    k, t, active = len(b.start), b.start, False
    for g in b.gaps:
        for name in ("start", "end"):
            v = getattr(g, name)
            if not isinstance(v, tuple) or len(v) != k or not all(_is_int(x) for x in v):
                raise ProblemError(f"{where}: a gap's {name} must be a vector clock of {k} integers like the "
                                   f"buffer's lifetime {list(b.start)} -> {list(b.end)}, got {v!r}")
            _check_range(where, ((name, x) for x in v))
        if not le(g.start, g.end) or g.start == g.end:
            raise ProblemError(f"{where}: {_span(g)} is empty or reversed (end must be >= start in every stream and > in one)")
        if not le(b.start, g.start) or not le(g.end, b.end):
            raise ProblemError(f"{where}: {_span(g)} is not inside the lifetime {list(b.start)} -> {list(b.end)} in every stream")
        if not le(t, g.start):
            raise ProblemError(f"{where}: {_span(g)} starts before the previous gap ends in some stream "
                               "(gaps must follow one another)")
        active = active or t != g.start or g.window is not None
        t = g.end
    if not active and t == b.end:
        raise ProblemError(f"{where}: full gaps cover the whole lifetime {list(b.start)} -> {list(b.end)}; "
                           "a buffer must be active in some span")


def _crt(m1: int, r1: int, m2: int, r2: int) -> tuple[int, int] | None:
    """Combine x = r1 (mod m1) and x = r2 (mod m2); None when no x satisfies both."""
    g = math.gcd(m1, m2)
    if (r2 - r1) % g:
        return None
    lcm = m1 // g * m2
    # x = r1 + m1 * k with m1 * k = r2 - r1 (mod m2)
    k = ((r2 - r1) // g * pow(m1 // g, -1, m2 // g)) % (m2 // g) if m2 // g > 1 else 0
    return lcm, (r1 + m1 * k) % lcm


def _footprint(members: list[tuple[Buffer, int]]) -> tuple[tuple[int, int, int, int], ...]:
    """Disjoint rectangles covering the union of the members' footprints (``Buffer.footprint``)."""
    if len(members) == 1 and members[0][1] == 0:
        return members[0][0].footprint()  # disjoint and merged already
    rects = [(t0, t1, rel + y0, rel + y1) for b, rel in members for t0, t1, y0, y1 in b.footprint()]
    if sum(b.size > 0 for b, _ in members) == 1:
        return tuple(rects)
    times = sorted({t for r in rects for t in r[:2]})
    strips: list[tuple[int, int, tuple[tuple[int, int], ...]]] = []
    for t0, t1 in zip(times, times[1:]):
        spans = sorted((y0, y1) for a, b, y0, y1 in rects if a <= t0 and t1 <= b)
        merged: list[list[int]] = []
        for y0, y1 in spans:
            if merged and y0 <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], y1)
            else:
                merged.append([y0, y1])
        key = tuple((a, c) for a, c in merged)
        if strips and strips[-1][1] == t0 and strips[-1][2] == key:
            strips[-1] = (strips[-1][0], t1, key)
        elif key:
            strips.append((t0, t1, key))
    return tuple((t0, t1, y0, y1) for t0, t1, spans in strips for y0, y1 in spans)


def _single_units(p: Problem) -> tuple[Unit, ...]:
    """``_build_units`` without relative placements: one unit per buffer, built directly (the
    buffer checks already ensure every candidate memory can hold it at its fixed offset)."""
    mems = p._mems  # type: ignore[attr-defined]
    every = p.memory_names
    shared: dict[tuple[int, tuple[str, ...]], dict[str, tuple[int, int]]] = {}  # read-only, shared
    units = []
    for b in p.buffers:
        memories = every if b.allowed is None and not b.blocked and b.fixed_memory is None else p.candidate_memories(b)
        modulus = shared.get((b.alignment, memories))
        if modulus is None:
            modulus = shared[(b.alignment, memories)] = {m: (math.lcm(b.alignment, mems[m].alignment), 0) for m in memories}
        units.append(Unit(b.id, ((b.id, 0),), memories, modulus, 0, b.size, b.fixed_offset, b.footprint(),
                          b.size if b.size > 0 else 0, b.gain))
    return tuple(units)


def _build_units(p: Problem) -> tuple[Unit, ...]:
    return _single_units(p) if not p.relative else _grouped_units(p)


def _grouped_units(p: Problem) -> tuple[Unit, ...]:
    by_id: dict[str, Buffer] = p._by_id  # type: ignore[attr-defined]
    parent: dict[str, tuple[str, int]] = {}
    for r in p.relative:
        where = f"buffer {r.buffer!r}"
        if r.buffer not in by_id:
            raise ProblemError(f"{where}: field 'relative.buffer': unknown buffer")
        if r.base not in by_id:
            raise ProblemError(f"{where}: field 'relative.base': unknown buffer {r.base!r}")
        if not _is_int(r.delta):
            raise ProblemError(f"{where}: field 'relative.delta': must be an integer, got {r.delta!r}")
        _check_range(where, (("relative.delta", r.delta),))
        if r.buffer == r.base:
            raise ProblemError(f"{where}: field 'relative.base': a buffer cannot be placed relative to itself")
        if r.buffer in parent:
            raise ProblemError(f"{where}: field 'relative.buffer': placed relative to two bases")
        parent[r.buffer] = (r.base, r.delta)

    def root_of(bid: str) -> tuple[str, int]:
        rel, seen = 0, set()
        while bid in parent:
            if bid in seen:
                raise ProblemError(f"buffer {bid!r}: field 'relative': relative placements form a cycle")
            seen.add(bid)
            base, delta = parent[bid]
            rel += delta
            bid = base
        return bid, rel

    groups: dict[str, list[tuple[Buffer, int]]] = {}
    for b in p.buffers:
        root, rel = root_of(b.id)
        groups.setdefault(root, []).append((by_id[b.id], rel))

    mems = p._mems  # type: ignore[attr-defined]
    units = []
    for root, members in groups.items():
        members.sort(key=lambda m: (m[0].id != root,))
        culprit = members[-1][0].id  # the buffer named when the group as a whole is inconsistent
        memories = set(p.candidate_memories(members[0][0]))
        for b, _ in members[1:]:
            memories &= set(p.candidate_memories(b))
        if not memories:
            raise ProblemError(f"buffer {culprit!r}: field 'relative': no memory is allowed for it and its base {root!r} together")
        low = min(rel for _, rel in members)
        high = max(rel + b.size for b, rel in members)
        if high - low > INT64_MAX:
            raise ProblemError(f"buffer {culprit!r}: field 'relative.delta': it and its base {root!r} span "
                               f"{high - low} bytes, more than 2^63-1")
        fixed: int | None = None
        for b, rel in members:
            if b.fixed_offset is not None:
                if fixed is not None and fixed != b.fixed_offset - rel:
                    raise ProblemError(f"buffer {b.id!r}: field 'fixed_offset': contradicts the fixed offset implied by its relative placement")
                fixed = b.fixed_offset - rel
        if fixed is not None and fixed + low < 0:
            raise ProblemError(f"buffer {culprit!r}: field 'relative.delta': places it below offset 0 given the fixed offsets")
        modulus: dict[str, tuple[int, int]] = {}
        for m in memories:
            mr: tuple[int, int] | None = (1, 0)
            for b, rel in members:
                a = math.lcm(b.alignment, mems[m].alignment)
                mr = _crt(mr[0], mr[1], a, (-rel) % a) if mr else None
            if mr is None:
                continue
            cap = mems[m].capacity
            lowest = -low + (mr[1] + low) % mr[0]  # the group's lowest legal root offset
            if cap is not None and lowest + high > cap and len(members) > 1:
                continue
            if fixed is not None and (fixed % mr[0] != mr[1] or (cap is not None and fixed + high > cap)):
                continue
            modulus[m] = mr
        if not modulus:
            raise ProblemError(f"buffer {culprit!r}: field 'relative.delta': no memory can hold it and its base {root!r} (alignment or capacity)")
        ordered = tuple(m.name for m in p.memories if m.name in modulus)
        top = max((rel + b.size for b, rel in members if b.size > 0), default=0)
        units.append(Unit(root, tuple((b.id, rel) for b, rel in members), ordered, modulus,
                          low, high, fixed, _footprint(members), top, sum(b.gain for b, _ in members)))
    return tuple(units)
