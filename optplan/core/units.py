"""Placement units: a buffer and every buffer placed relative to it, moving as one. Planners place
units, not buffers."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from optplan.core.buffer import INT64_MAX, Buffer, Memory, RelativePlacement
from optplan.core.checks import check_range, is_int
from optplan.core.columns import fast_instance
from optplan.core.errors import ProblemError


class Model(Protocol):
    """What the unit builders read of a Problem (which is built on them)."""

    @property
    def buffers(self) -> Sequence[Buffer]: ...

    @property
    def memories(self) -> tuple[Memory, ...]: ...

    @property
    def relative(self) -> tuple[RelativePlacement, ...]: ...

    @property
    def memory_names(self) -> tuple[str, ...]: ...

    def candidate_memories(self, b: Buffer) -> tuple[str, ...]: ...


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


def plain_units(p: Model, ids: list[str], starts: list[int], ends: list[int], sizes: list[int],
                 aligns: list[int]) -> tuple[Unit, ...]:
    """``single_units`` for checked plain buffers given as columns."""
    every = p.memory_names
    moduli: dict[int, dict[str, tuple[int, int]]] = {}  # read-only, shared
    for a in set(aligns):
        moduli[a] = {m.name: (math.lcm(a, m.alignment), 0) for m in p.memories}
    return tuple(fast_instance(Unit, {"root": i, "members": ((i, 0),), "memories": every, "modulus": moduli[a], "low": 0,
                              "high": z, "fixed_offset": None, "pieces": ((s, e, 0, z),) if z else (), "top": z,
                              "gain": z})
                 for i, s, e, z, a in zip(ids, starts, ends, sizes, aligns))


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


def single_units(p: Model) -> tuple[Unit, ...]:
    """``build_units`` without relative placements: one unit per buffer, built directly (the
    buffer checks already ensure every candidate memory can hold it at its fixed offset)."""
    mems = {m.name: m for m in p.memories}
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


def build_units(p: Model) -> tuple[Unit, ...]:
    return single_units(p) if not p.relative else grouped_units(p)


def grouped_units(p: Model) -> tuple[Unit, ...]:
    by_id = {b.id: b for b in p.buffers}
    parent: dict[str, tuple[str, int]] = {}
    for r in p.relative:
        where = f"buffer {r.buffer!r}"
        if r.buffer not in by_id:
            raise ProblemError(f"{where}: field 'relative.buffer': unknown buffer")
        if r.base not in by_id:
            raise ProblemError(f"{where}: field 'relative.base': unknown buffer {r.base!r}")
        if not is_int(r.delta):
            raise ProblemError(f"{where}: field 'relative.delta': must be an integer, got {r.delta!r}")
        check_range(where, (("relative.delta", r.delta),))
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

    mems = {m.name: m for m in p.memories}
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
