"""The independent checker every plan passes before it leaves the library.

It reads only the raw Problem fields (not the planners' derived units and footprints; gaps are
read off the buffers here), so a bug shared by the planners' model of the problem cannot hide here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from optplan.core import jit, sweeps
from optplan.core.buffer import INT64_MAX, Buffer
from optplan.core.errors import OptplanError
from optplan.core.objective import Objective
from optplan.core.plan import Layout, Placement, Plan, Status, offsets, peaks
from optplan.core.problem import Problem


@dataclass(frozen=True)
class Violation:
    # missing, unknown, memory, allowed, capacity, alignment, fixed, relative, overlap; read from a
    # plan file: mismatch (a row that is not its buffer's), duplicate; claim (what the file states)
    kind: str
    buffer: str | None  # None: the plan as a whole (a claim)
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}" if self.buffer is None else f"buffer {self.buffer!r}: {self.kind}: {self.message}"


def validate(problem: Problem, placements: Mapping[str, Placement], limit: int = 100) -> list[Violation]:
    """All violations of the plan (at most ``limit`` overlaps are listed); empty means valid.
    A ``Layout`` (read-only arrays) found valid for this problem is not checked again (auto hands
    its best heuristic's plan on: a million buffers, seconds)."""
    _check_types(problem, placements)
    layout = placements if isinstance(placements, Layout) else None
    if layout is not None and layout.checked(problem):
        return []
    if _plain_valid(problem, placements):
        if layout is not None:
            layout.mark_checked(problem)
        return []
    out: list[Violation] = []
    mems = {m.name: m for m in problem.memories}
    ids = {b.id for b in problem.buffers}
    for bid in placements:
        if bid not in ids:
            out.append(Violation("unknown", bid, "placed but not in the problem"))
    for b in problem.buffers:
        p = placements.get(b.id)
        if p is None:
            out.append(Violation("missing", b.id, "has no placement"))
            continue
        mem = mems.get(p.memory)
        if mem is None:
            out.append(Violation("memory", b.id, f"placed in unknown memory {p.memory!r}"))
            continue
        if (b.allowed is not None and p.memory not in b.allowed) or p.memory in b.blocked:
            out.append(Violation("allowed", b.id, f"memory {p.memory!r} is not allowed for it"))
        if not isinstance(p.offset, (int, np.integer)) or p.offset < 0:
            out.append(Violation("capacity", b.id, f"offset {p.offset!r} is not a non-negative integer"))
            continue
        if p.offset + b.size > INT64_MAX:
            out.append(Violation("capacity", b.id, f"[{p.offset}, {p.offset + b.size}) passes 2^63-1"))
            continue
        if mem.capacity is not None and p.offset + b.size > mem.capacity:
            out.append(Violation("capacity", b.id, f"[{p.offset}, {p.offset + b.size}) exceeds capacity {mem.capacity} of {p.memory!r}"))
        align = math.lcm(b.alignment, mem.alignment)
        if p.offset % align:
            out.append(Violation("alignment", b.id, f"offset {p.offset} is not a multiple of {align}"))
        if b.fixed_memory is not None and p.memory != b.fixed_memory:
            out.append(Violation("fixed", b.id, f"must be in {b.fixed_memory!r}, placed in {p.memory!r}"))
        if b.fixed_offset is not None and p.offset != b.fixed_offset:
            out.append(Violation("fixed", b.id, f"must be at offset {b.fixed_offset}, placed at {p.offset}"))
    for r in problem.relative:
        pb, pa = placements.get(r.buffer), placements.get(r.base)
        if pb is None or pa is None:
            continue
        if pb.memory != pa.memory or pb.offset != pa.offset + r.delta:
            out.append(Violation("relative", r.buffer, f"must be at {r.base!r} + {r.delta} = {pa.memory}:{pa.offset + r.delta}, placed at {pb.memory}:{pb.offset}"))
    out.extend(_overlaps(problem, placements, mems, limit))
    return out


def _check_types(problem: object, placements: object) -> None:
    """What validate reads is a Problem and a mapping of buffer ids to Placements (OptplanError, one
    line: a wrong type is the caller's error, not a violation of the plan)."""
    if not isinstance(problem, Problem):
        raise OptplanError(f"validate() takes a Problem, got {type(problem).__name__} {problem!r:.60}")
    if not isinstance(placements, Mapping):
        raise OptplanError(f"validate() takes a mapping of buffer id -> Placement, got {type(placements).__name__} {placements!r:.60}")
    if not isinstance(placements, Layout) and set(map(type, placements.values())) - {Placement}:
        odd = next((k, v) for k, v in placements.items() if not isinstance(v, Placement))
        raise OptplanError(f"validate(): buffer {odd[0]!r}: a placement must be a Placement(memory, offset), got "
                           f"{type(odd[1]).__name__} {odd[1]!r:.60}")


def _plain_valid(problem: Problem, placements: Mapping[str, Placement]) -> bool:
    """A plan for a single-memory problem of plain buffers (``Columns.plain``) checked as arrays,
    in O(n log n) (a million buffers in about a second): True when it is valid; False sends it
    to the general checks, which list what is wrong."""
    cols = problem.columns
    if not cols.plain:
        return False
    off = offsets(problem, placements)
    if off is None:
        return False
    mem = problem.memories[0]
    size = cols.size
    limit = INT64_MAX if mem.capacity is None else mem.capacity
    if len(off) and ((off < 0).any() or (off > limit - size).any() or (off % np.lcm(cols.alignment, mem.alignment)).any()):
        return False
    held = np.flatnonzero(size > 0)
    order = held[np.argsort(cols.start[held], kind="stable")]
    return not _sweep(len(order))(cols.start[order], cols.end[order], off[order], off[order] + size[order])


def _sweep(n: int) -> Any:
    """``sweeps.any_overlap`` for ``n`` intervals: compiled where it pays (``jit.kernel``), else in Python."""
    return jit.kernel("validate", n, sweeps.any_overlap, "any_overlap")


def _relative_roots(problem: Problem) -> dict[str, str]:
    base = {r.buffer: r.base for r in problem.relative}
    roots = {}
    for b in problem.buffers:
        x, hops = b.id, 0
        while x in base and hops <= len(base):
            x, hops = base[x], hops + 1
        roots[b.id] = x
    return roots


def _overlaps(problem: Problem, placements: Mapping[str, Placement], mems: dict, limit: int) -> list[Violation]:
    """Pairs in one memory that share both a time step and a byte (sweep over sorted starts;
    only pairs whose lifetimes and byte ranges meet get the finer test of their gaps)."""
    if problem.concurrent:
        return _concurrent_overlaps(problem, placements, mems, limit)
    roots = _relative_roots(problem)
    out: list[Violation] = []
    for name in mems:
        bufs = [b for b in problem.buffers if b.size > 0 and b.id in placements and placements[b.id].memory == name
                and isinstance(placements[b.id].offset, (int, np.integer)) and 0 <= placements[b.id].offset <= INT64_MAX - b.size]
        if len(bufs) < 2:
            continue
        bufs.sort(key=lambda b: b.start)
        start = np.array([b.start for b in bufs], np.int64)
        end = np.array([b.end for b in bufs], np.int64)
        lo = np.array([placements[b.id].offset for b in bufs], np.int64)
        hi = lo + np.array([b.size for b in bufs], np.int64)
        if not _sweep(len(bufs))(start, end, lo, hi):
            continue  # no two share a step and a byte even ignoring gaps and relative groups
        stop = np.searchsorted(start, end, side="left")  # j < stop[i] <=> start[j] < end[i]
        for i in range(len(bufs)):
            j = np.arange(i + 1, stop[i])
            if len(j) == 0:
                continue
            hit = j[(lo[j] < hi[i]) & (lo[i] < hi[j])]
            for k in hit:
                a, c = bufs[i], bufs[int(k)]
                if roots[a.id] == roots[c.id]:
                    continue  # their relative position is declared by the user
                clash = _clash(a, int(lo[i]), c, int(lo[k]))
                if clash is None:
                    continue  # their gaps keep them apart
                (t0, t1), (y0, y1) = clash
                out.append(Violation("overlap", a.id, f"overlaps {c.id!r} in {name!r}: time [{t0}, {t1}) and bytes [{y0}, {y1})"))
                if len(out) >= limit:
                    return out
    return out


def _occupied(b: Buffer, offset: int) -> list[tuple[Any, Any, int, int]]:
    """Absolute rectangles ``(t0, t1, y0, y1)`` where ``b`` holds bytes, read off its raw gaps:
    all its bytes between gaps, a gap's window during the gap (rectangles may touch). With
    vector clocks ``t0, t1`` are clocks: the spans of a chain, each ending where the next starts."""
    rects, t = [], b.start
    for g in b.gaps:
        if t != g.start:  # gaps lie inside the lifetime in order: t <= g.start
            rects.append((t, g.start, offset, offset + b.size))
        if g.window is not None:
            rects.append((g.start, g.end, offset + g.window[0], offset + g.window[1]))
        t = g.end
    if t != b.end:
        rects.append((t, b.end, offset, offset + b.size))
    return rects


def _clash(a: Buffer, oa: int, c: Buffer, oc: int) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The first shared (time span, byte span) of two placed buffers, or None."""
    for t0, t1, y0, y1 in _occupied(a, oa):
        for s0, s1, z0, z1 in _occupied(c, oc):
            if t0 < s1 and s0 < t1 and y0 < z1 and z0 < y1:
                return (max(t0, s0), min(t1, s1)), (max(y0, z0), min(y1, z1))
    return None


def _concurrent_overlaps(problem: Problem, placements: Mapping[str, Placement], mems: dict, limit: int) -> list[Violation]:
    """Vector clocks: pairs in one memory sharing a byte in spans whose clocks are concurrent
    (neither ends, in every stream, before the other starts), read off the raw clocks and gaps
    (sweep over sorted offsets; buffers placed relative to one another are the user's layout)."""
    roots = _relative_roots(problem)
    out: list[Violation] = []
    for name in mems:
        bufs = sorted((b for b in problem.buffers if b.size > 0 and b.id in placements and placements[b.id].memory == name),
                      key=lambda b: placements[b.id].offset)
        for i, a in enumerate(bufs):
            oa = placements[a.id].offset
            for c in bufs[i + 1:]:
                oc = placements[c.id].offset
                if oc >= oa + a.size:
                    break
                if roots[a.id] == roots[c.id]:
                    continue
                clash = next(((p, q) for p in _occupied(a, oa) for q in _occupied(c, oc)
                              if p[2] < q[3] and q[2] < p[3] and not _before(p, q) and not _before(q, p)), None)
                if clash is not None:
                    (s0, e0, y0, y1), (s1, e1, z0, z1) = clash
                    out.append(Violation("overlap", a.id, f"overlaps {c.id!r} in {name!r}: concurrent lifetimes "
                                                          f"{list(s0)}->{list(e0)} and {list(s1)}->{list(e1)}, "
                                                          f"bytes [{max(y0, z0)}, {min(y1, z1)})"))
                    if len(out) >= limit:
                        return out
    return out


def _before(p: tuple[Any, Any, int, int], q: tuple[Any, Any, int, int]) -> bool:
    """Span ``p`` happens before span ``q``: it ends, in every stream, by the time ``q`` starts."""
    return all(x <= y for x, y in zip(p[1], q[0]))


def check_claims(problem: Problem, placements: Mapping[str, Placement], claims: Mapping[str, Any]) -> list[Violation]:
    """What a plan file states about its placements (already valid) that they refute, as
    violations of kind ``claim``; ``claims`` are the plan file's fields (``peak``, ``lower_bound``,
    ``status``, ``objective``, ``objective_value``, ``objective_bound``, ``gap``, ...), and only
    those stated are checked (a hand-written plan may state none). The stated peaks must be the
    placements'; a bound can be no higher than what the plan reaches; OPTIMAL needs its bounds
    reached and gap 0; the gap must follow from the peaks, value and bounds as ``Plan.gap`` has it.
    A stated bound is a proof this cannot redo: a weak one passes."""
    real = peaks(problem, placements)
    objective = Objective.parse(claims.get("objective"), problem)
    value = objective.value(problem, placements)
    out: list[str] = []
    out += [f"field 'peak': {m!r} is stated as {_bytes(v)}, but the placements reach {_bytes(real[m])}"
            for m, v in _stated(claims, "peak", real, out) if v != real[m]]
    out += [f"field 'lower_bound': {m!r} is stated as {_bytes(v)}, above the {_bytes(real[m])} the placements reach"
            for m, v in _stated(claims, "lower_bound", real, out) if v > real[m]]
    stated_value, bound = claims.get("objective_value"), claims.get("objective_bound")
    if stated_value is not None and stated_value != value:
        out.append(f"field 'objective_value': {stated_value} is stated, but the placements' {objective} value is {value}")
    if bound is not None and bound > value:
        out.append(f"field 'objective_bound': {bound} is above the placements' {objective} value {value}")
    out += _status_claims(problem, claims, real, value, objective)
    out += _gap_claims(problem, placements, claims, real, objective, value)
    return [Violation("claim", None, m) for m in out]


def _bytes(n: object) -> str:
    return f"{n:,} bytes" if isinstance(n, int) else repr(n)


def _stated(claims: Mapping[str, Any], field: str, real: dict[str, int], out: list[str]) -> list[tuple[str, Any]]:
    """The (memory, value) pairs of a per-memory claim about the problem's memories; a memory the
    problem lacks is reported in ``out``."""
    stated = claims.get(field) or {}
    out += [f"field {field!r}: memory {m!r} is not in the problem" for m in stated if m not in real]
    return [(m, v) for m, v in stated.items() if m in real]


def _status_claims(problem: Problem, claims: Mapping[str, Any], real: dict[str, int], value: int,
                   objective: Objective) -> list[str]:
    """A valid plan is no proof of infeasibility nor a missing plan; OPTIMAL needs its bounds reached
    (and gap 0, but for an objective that optimizes nothing: no gap, null)."""
    status = claims.get("status")
    if status in (Status.INFEASIBLE.value, Status.UNKNOWN.value):
        return [f"field 'status': {status}, but the placements are a valid plan"]
    if status != Status.OPTIMAL.value:
        return []
    out = []
    gap, bound = claims.get("gap", 0.0), claims.get("objective_bound")
    if gap != 0 and not (gap is None and not objective.optimizes):
        out.append(f"field 'status': OPTIMAL, but the stated gap is {gap!r}, not 0")
    if bound is not None and bound != value:
        out.append(f"field 'status': OPTIMAL, but the objective bound {bound} is below the value {value}")
    if len(problem.memories) == 1:  # (with several, a lexicographic optimum need not reach each memory's own bound)
        out += [f"field 'status': OPTIMAL, but the lower bound of {m!r} ({_bytes(v)}) is below its peak ({_bytes(real[m])})"
                for m, v in _stated(claims, "lower_bound", real, []) if v < real[m]]
    return out


def _gap_claims(problem: Problem, placements: Mapping[str, Placement], claims: Mapping[str, Any], real: dict[str, int],
                objective: Objective, value: int) -> list[str]:
    """The stated gap (and ``gap_of``, ``objective_components``) against those ``Plan`` computes from
    the placements' peaks and value and the stated bounds (JSON keeps floats exactly; 1e-9 for rounding)."""
    lower, bound = claims.get("lower_bound"), claims.get("objective_bound")
    if "gap" not in claims or (lower is None and bound is None) or (bound is None and len(problem.memories) > 1):
        return []  # nothing to compute it from (several memories: the gap is the objective's, from its bound)
    components = () if bound is None else objective.components(problem, value, bound)
    plan = Plan(placements, Status(claims.get("status", Status.FEASIBLE.value)), "", real,
                {**{m: 0 for m in real}, **(lower or {})}, objective=objective, objective_value=value,
                objective_bound=bound, components=components)
    gap, want = claims["gap"], plan.gap
    out = []
    if (gap is None) != (want is None) or (want is not None and not math.isclose(gap, want, rel_tol=1e-9, abs_tol=1e-12)):
        out.append(f"field 'gap': {gap!r} is stated, but the peaks and bounds give {want!r}")
    if "gap_of" in claims and claims["gap_of"] != plan.gap_of:
        out.append(f"field 'gap_of': {claims['gap_of']!r} is stated, but the objective's components give {plan.gap_of!r}")
    if components and "objective_components" in claims and claims["objective_components"] != [list(c) for c in components]:
        out.append(f"field 'objective_components': {claims['objective_components']!r} is stated, but the placements give "
                   f"{[list(c) for c in components]!r}")
    return out
