"""The problem: buffers, memories and relative placements, checked on construction (raises
ProblemError naming the buffer or memory and the field), with the units planners place and the
arrays passes over every buffer read."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from optplan.core.buffer import Buffer, Memory, RelativePlacement
from optplan.core.checks import (
    check_buffer,
    check_ids,
    check_live_load,
    check_memories,
    check_parts,
    is_plain,
    items_of,
    one_stream,
    stream_count,
)
from optplan.core.columns import ColumnBuffers, Columns, gc_paused
from optplan.core.errors import ProblemError
from optplan.core.units import Unit, build_units, plain_units


@dataclass(frozen=True, eq=False)
class Problem:
    """A complete planning instance. Construction validates it (raises ProblemError).

    Attributes:
        buffers: the buffers to place, ids unique.
        memories: fastest first; default: one unbounded memory named ``mem``.
        relative: buffers placed at a fixed delta from another (same memory).
        metadata: free-form (front ends record their source, steps, versions).
        streams: 1 for scalar lifetimes; k for vector clocks of k streams (derived).
    """

    buffers: Sequence[Buffer]  # a tuple, or (read from columns) a ColumnBuffers
    memories: tuple[Memory, ...] = (Memory("mem"),)
    relative: tuple[RelativePlacement, ...] = ()
    metadata: Mapping[str, object] = field(default_factory=dict)
    streams: int = field(init=False, default=1)  # 1: scalar lifetimes; k: vector clocks of k streams

    def __post_init__(self) -> None:
        buffers, memories, relative = check_parts(self.buffers, self.memories, self.relative, self.metadata)
        object.__setattr__(self, "buffers", tuple(one_stream(b) for b in buffers))
        object.__setattr__(self, "memories", memories)
        object.__setattr__(self, "relative", relative)
        check_memories(self.memories)
        mems = {m.name: m for m in self.memories}
        by_id: dict[str, Buffer] = {}
        for b in self.buffers:
            if not is_plain(b):
                check_buffer(b, mems)
            if b.id in by_id:
                raise ProblemError(f"buffer {b.id!r}: field 'id': duplicate id")
            by_id[b.id] = b
        check_ids(list(by_id))
        object.__setattr__(self, "_buffer_by_id", by_id)
        object.__setattr__(self, "_mems", mems)
        object.__setattr__(self, "streams", stream_count(self.buffers))
        object.__setattr__(self, "_units", build_units(self))
        check_live_load(self.buffers)

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
        check_ids(ids)
        align = np.ones(n, np.int64) if alignment is None else alignment
        metadata = dict(metadata or {})
        # sums in floats: an int64 sum could wrap; below 2^62 the general checks all pass
        if n and not ((size >= 0).all() and (start >= 0).all() and (start < end).all() and (align >= 1).all()
                      and float(size.sum(dtype=np.float64)) < 2.0**62 and float(end.max()) < 2.0**62 and "" not in ids):
            return cls(tuple(Buffer(i, z, s, e, alignment=a) for i, s, e, z, a in
                             zip(ids, start.tolist(), end.tolist(), size.tolist(), align.tolist())), memories, (), metadata)
        memories = tuple(memories)
        check_memories(memories)
        columns = Columns(ids, start, end, size, align, size, True)
        if len(set(ids)) != n:
            return cls(tuple(ColumnBuffers(columns)), memories, (), metadata)  # names the duplicate
        return cls._columnar(columns, memories, metadata)

    @classmethod
    def _columnar(cls, columns: Columns, memories: tuple[Memory, ...], metadata: dict[str, object]) -> Problem:
        """The problem of ``columns`` (plain buffers, checked) in ``memories`` (checked): its
        buffers, their index by id and its units are made when first asked for."""
        self = object.__new__(cls)
        for k, v in (("buffers", ColumnBuffers(columns)), ("memories", memories), ("relative", ()),
                     ("metadata", metadata), ("streams", 1), ("_mems", {m.name: m for m in memories})):
            object.__setattr__(self, k, v)
        self.__dict__["columns"] = columns
        return self

    @cached_property
    def columns(self) -> Columns:
        """The buffers as arrays, for passes over every buffer (bounds, validation, peaks)."""
        return Columns.of(self.buffers, self.concurrent, bool(self.relative))

    # -- lookups ---------------------------------------------------------------------------
    @property
    def _by_id(self) -> dict[str, Buffer]:
        by_id = self.__dict__.get("_buffer_by_id")
        if by_id is None:
            with gc_paused():
                by_id = self.__dict__.setdefault("_buffer_by_id", {b.id: b for b in self.buffers})
        return by_id

    def buffer(self, buffer_id: str) -> Buffer:
        return self._by_id[buffer_id]

    def has_buffer(self, buffer_id: str) -> bool:
        return buffer_id in self._by_id

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
                made = plain_units(self, cols.ids, cols.start.tolist(), cols.end.tolist(), cols.size.tolist(),
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
        return self.with_memories((replace(self.memories[0], capacity=capacity),))

    def with_memories(self, memories: Iterable[Memory]) -> Problem:
        """The same buffers in another hierarchy (fastest first): e.g. a CSV problem, which
        carries one memory, given an SRAM in front of a DRAM. A problem read in bulk stays in its
        columns (its buffers' checks do not depend on the memories): the general constructor took
        18 s over a million buffers to add a capacity."""
        memories = items_of("memories", memories, Memory)
        if isinstance(self.buffers, ColumnBuffers):
            check_memories(memories)
            return Problem._columnar(self.columns, memories, dict(self.metadata))
        return Problem(self.buffers, memories, self.relative, dict(self.metadata))

    def with_buffers(self, buffers: Iterable[Buffer]) -> Problem:
        """The same memories with another set of buffers (relative placements among them kept)."""
        buffers = items_of("buffers", buffers, Buffer)
        ids = {b.id for b in buffers}
        rel = tuple(r for r in self.relative if r.buffer in ids and r.base in ids)
        return Problem(buffers, self.memories, rel, dict(self.metadata))


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
