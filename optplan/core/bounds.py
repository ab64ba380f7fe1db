"""Lower bounds on each memory's peak, and infeasibility proofs from load vs. capacity.

The live load at a time step (bytes that must exist then) cannot be packed into less space.
For a hierarchy, the units that can only go to a set T of memories must fit into T's total
capacity at every step; whatever of that load the other memories of T cannot take lands in the
remaining one. Units (a buffer and everything placed relative to it) count with their footprint,
so deliberate overlaps inside a unit are not counted twice and gaps free their bytes (a gap's
window counts only its bytes).
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from optplan.core.buffer import INT64_MAX
from optplan.core.clocks import antichain_bound, clock_graph
from optplan.core.load import usage_curve
from optplan.core.placement import Placement
from optplan.core.problem import Problem
from optplan.core.sizes import exact_size
from optplan.core.units import Unit


@dataclass(frozen=True)
class Bounds:
    lower: dict[str, int]  # memory -> proven lower bound on its peak
    step: dict[str, int | None]  # memory -> a time step where that bound is attained
    infeasible: str | None = None  # why no plan can exist, naming memory/step or buffer
    source: dict[str, str] = field(default_factory=dict)  # memory -> what proves its bound, in words


LOAD, BIGGEST, FIXED, NOTHING = "live load", "largest buffer", "fixed placement", "no buffer must be here"


def peak_load(start: np.ndarray, end: np.ndarray, size: np.ndarray) -> tuple[int, int | None]:
    """Max over time of the summed sizes of intervals ``[start, end)``, and the first step where it occurs."""
    if len(start) == 0:
        return 0, None
    if int(size.max()) > INT64_MAX // len(size):  # int64 sums might wrap: exact Python integers
        return _exact_peak_load(start.tolist(), end.tolist(), size.tolist())
    times = np.concatenate([start, end])
    delta = np.concatenate([size, -size])
    # at equal times, ends (negative deltas) come first: half-open intervals
    order = np.lexsort((delta, times))
    load = np.cumsum(delta[order])
    i = int(np.argmax(load))
    return int(load[i]), int(times[order][i])


def _exact_peak_load(start: list[int], end: list[int], size: list[int]) -> tuple[int, int | None]:
    best, at, live = 0, None, 0
    for t, d in sorted([*zip(start, size), *zip(end, [-x for x in size])]):  # ends first at equal times
        live += d
        if live > best:
            best, at = live, t
    return best, at


def _pieces(units: list[Unit], rounding: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Time spans and heights of the units' footprints; sizes rounded up to ``rounding``.

    Returns the largest rounding slack too: only the topmost buffer escapes the rounding.
    """
    t0: list[int] = []
    t1: list[int] = []
    h: list[int] = []
    slack = 0
    for u in units:
        for a, b, y0, y1 in u.pieces:
            size = y1 - y0
            rounded = min(-(-size // rounding) * rounding, INT64_MAX)  # capped: still a lower bound
            slack = max(slack, rounded - size)
            t0.append(a)
            t1.append(b)
            h.append(rounded)
    return np.array(t0, np.int64), np.array(t1, np.int64), np.array(h, np.int64), slack


_cache: weakref.WeakKeyDictionary[Problem, Bounds] = weakref.WeakKeyDictionary()


def lower_bounds(problem: Problem) -> Bounds:
    """Per-memory lower bounds (cached per Problem object: every planner asks for them)."""
    if problem not in _cache:
        _cache[problem] = _lower_bounds(problem)
    return _cache[problem]


def _plain_bounds(problem: Problem) -> Bounds:
    """``_lower_bounds`` of a single memory holding plain buffers (``Columns.plain``), on the
    columns: the live load (sizes rounded up to the alignment every offset shares, but for the
    top buffer), the largest buffer, the capacity."""
    cols, mem = problem.columns, problem.memories[0]
    m = mem.name
    if len(cols.ids) == 0:
        return Bounds({m: 0}, {m: None}, None, {m: NOTHING})
    held = cols.size > 0
    start, end, size = cols.start[held], cols.end[held], cols.size[held]
    biggest = int(cols.size.max())
    if mem.capacity is not None and biggest > mem.capacity:
        culprit = cols.ids[int(np.argmax(cols.size))]
        return Bounds({m: 0}, {m: None}, f"buffer {culprit!r} needs {exact_size(biggest)}; no memory it may use is that large")
    load, at = peak_load(start, end, size)
    rounding = math.gcd(int(np.gcd.reduce(np.lcm(cols.alignment, mem.alignment))), mem.alignment)
    if rounding > 1 and len(size):
        rounded = np.minimum(-(-size // rounding) * rounding, INT64_MAX)
        r_load, r_at = peak_load(start, end, rounded)
        if r_load - int((rounded - size).max()) > load:
            load, at = r_load - int((rounded - size).max()), r_at
    if mem.capacity is not None and load > mem.capacity:
        return Bounds({m: 0}, {m: None}, f"memory {m!r}: at step {at:,}, {exact_size(load)} must be live but the capacity is {exact_size(mem.capacity)}")
    source = LOAD if load else NOTHING
    if biggest > load:  # a buffer reaches its size above offset 0
        load, at, source = biggest, int(cols.start[int(np.argmax(cols.size))]), BIGGEST
    return Bounds({m: load}, {m: at}, None, {m: source})


def _lower_bounds(problem: Problem) -> Bounds:
    if problem.columns.plain and len(problem.memories) == 1:
        return _plain_bounds(problem)
    names = problem.memory_names
    cap = {m.name: m.capacity for m in problem.memories}
    units = problem.units
    lower = {m: 0 for m in names}
    step: dict[str, int | None] = {m: None for m in names}
    source = {m: NOTHING for m in names}

    for u in units:
        bounded = [c for c in (cap[m] for m in u.memories) if c is not None]
        if len(bounded) == len(u.memories) and u.height > max(bounded):
            return Bounds(lower, step, f"buffer {u.root!r} needs {exact_size(u.height)}; no memory it may use is that large")
        if u.fixed_offset is not None and len(u.memories) == 1 and u.pieces:
            m, top = u.memories[0], u.fixed_offset + u.top  # zero-size members take no bytes
            if top > lower[m]:
                lower[m], step[m], source[m] = top, u.start, FIXED

    msg = _fixed_conflict(problem)
    if msg:
        return Bounds(lower, step, msg)

    bounded_names = [m for m in names if cap[m] is not None]
    subsets: list[tuple[str, ...]]
    if len(names) <= 6:
        subsets = [s for k in range(1, len(names) + 1) for s in itertools.combinations(names, k)]
    else:
        subsets = [(m,) for m in names] + [tuple(bounded_names)] + [
            tuple(sorted(set(bounded_names) | {m}, key=names.index)) for m in names if cap[m] is None]
    for subset in subsets:
        members = [u for u in units if set(u.memories) <= set(subset)]
        if not members:
            continue
        rounding = 1
        if problem.concurrent:  # vector clocks: the heaviest set of pairwise conflicting spans
            load, at = antichain_bound(problem, [u.root for u in members]), None
        elif len(subset) == 1 and all(len(u.members) == 1 for u in members):
            rounding = problem.memory(subset[0]).alignment
            rounding = math.gcd(*[u.modulus[subset[0]][0] for u in members], rounding) if members else rounding
            if rounding > 1 and any(p[2] for u in members for p in u.pieces):
                rounding = 1  # a gap's window may start off the alignment grid
        if not problem.concurrent:
            t0, t1, h, slack = _pieces(members)
            load, at = peak_load(t0, t1, h)
        if rounding > 1:  # every offset is a multiple of `rounding`: all but the top buffer round up
            t0, t1, h, slack = _pieces(members, rounding)
            rounded, rounded_at = peak_load(t0, t1, h)
            if rounded - slack > load:
                load, at = rounded - slack, rounded_at
        free = [m for m in subset if cap[m] is None]
        if not free and load > sum(cap[m] for m in subset):  # type: ignore[misc]
            where = " + ".join(repr(m) for m in subset)
            when = f"at step {at:,}" if at is not None else "in one set of pairwise concurrent buffers"
            return Bounds(lower, step, f"memory {where}: {when}, {exact_size(load)} must be live but the capacity is {exact_size(sum(cap[m] for m in subset))}")  # type: ignore[misc]
        for m in subset:
            others = [o for o in subset if o != m]
            if any(cap[o] is None for o in others):
                continue
            rest = load - sum(cap[o] for o in others)  # type: ignore[misc]
            if rest > lower[m]:
                lower[m], step[m] = rest, at
                source[m] = LOAD if not others else f"{LOAD} beyond the capacity of {', '.join(others)}"
    for u in units:  # a unit reaches at least its top above its lowest legal offset (more than
        # its live load when a gap's window keeps its upper bytes free at every step)
        if u.fixed_offset is None and len(u.memories) == 1 and u.top:
            m = u.memories[0]
            if u.top - min(u.low, 0) + u.modulus[m][0] - 1 > lower[m]:  # else the reach cannot beat it
                reach = u.lowest_offset(m) + u.top
                if reach > lower[m]:
                    lower[m], step[m], source[m] = reach, u.start, BIGGEST
    return Bounds(lower, step, None, source)


def _fixed_conflict(problem: Problem) -> str | None:
    """Two units pinned to the same memory and offset range at the same time cannot both exist."""
    fixed = [u for u in problem.units if u.fixed_offset is not None and len(u.memories) == 1 and u.pieces]
    if problem.concurrent:
        graph = clock_graph(problem)
        number = {r: i for i, r in enumerate(graph.roots)}
    for a, b in itertools.combinations(fixed, 2):
        if a.memories != b.memories or a.fixed_offset is None or b.fixed_offset is None:
            continue
        where = f"buffer {b.root!r}: its fixed placement overlaps the fixed placement of {a.root!r} in memory {a.memories[0]!r}"
        if problem.concurrent:
            d = b.fixed_offset - a.fixed_offset
            if any(lo <= d <= hi for lo, hi in graph.apart[number[b.root]].get(number[a.root], ())):
                return f"{where} (concurrent lifetimes)"
            continue
        for p in a.pieces:
            for q in b.pieces:
                if p[0] < q[1] and q[0] < p[1] and a.fixed_offset + p[2] < b.fixed_offset + q[3] and b.fixed_offset + q[2] < a.fixed_offset + p[3]:
                    return f"{where} at step {max(p[0], q[0])}"
    return None


def reported_bounds(problem: Problem, placements: Mapping[str, Placement], peak: Mapping[str, int],
                    proven: Mapping[str, int], weights: Mapping[str, int], optimal: bool) -> dict[str, int]:
    """The lower bound per memory that every output reports (``Plan.lower_bound``, the CLI's table,
    ``--json``), from the ``proven`` ones: where the plan is ``optimal`` and the objective weighs a
    memory's peak, that peak is proven for the objective; a memory the objective does not weigh
    (weight 0: a capacitated memory with a slower one behind it) is bounded for this plan by the
    most bytes it holds live at one step (the largest buffer under vector clocks), so that the bound
    is never 0 where bytes are held. Sound where planners read it back as proven: a weighed
    memory's bound stays the proven one but for an optimal plan (whose weighted sum is the optimum),
    and a weight-0 memory's bound does not enter the objective's bound."""
    out = {}
    for m, v in proven.items():
        if weights.get(m, 0) > 0:
            out[m] = max(v, peak[m]) if optimal else v
        else:
            out[m] = max(v, _held(problem, placements, m))
    return out


def reported_sources(problem: Problem, placements: Mapping[str, Placement], reported: Mapping[str, int],
                     peak: Mapping[str, int], free: Bounds, weights: Mapping[str, int], optimal: bool,
                     planner: str) -> dict[str, str]:
    """What proves each of ``reported_bounds``' numbers, in words (``optplan bounds --time-limit``):
    the objective-free bound's own source (``free``: live load, largest buffer, ...) where the
    number is that bound; else the optimality ``planner`` proved (a weighed memory of an
    ``optimal`` plan at its peak), the bytes the plan holds live at once (a memory the objective
    does not weigh), or the bound ``planner`` proved."""
    out = {}
    for m, v in reported.items():
        if v == free.lower.get(m):
            out[m] = free.source.get(m, LOAD)
        elif weights.get(m, 0) > 0 and optimal and v == peak.get(m):
            out[m] = f"proved optimal by {planner}"
        elif weights.get(m, 0) == 0 and placements and v == _held(problem, placements, m):
            out[m] = f"bytes {planner}'s plan holds live at once (the objective does not weigh this peak)"
        else:
            out[m] = f"proved by {planner}"
    return out


def _held(problem: Problem, placements: Mapping[str, Placement], memory: str) -> int:
    """The most bytes ``memory`` holds live at one step in this plan (the largest buffer there under
    vector clocks, where steps do not order the buffers)."""
    if problem.concurrent:
        return max((b.size for b in problem.buffers if placements[b.id].memory == memory), default=0)
    curve = usage_curve(problem, placements, memory)
    return int(curve.live.max()) if len(curve.live) else 0


def infeasible_words(problem: Problem, why: str) -> str:
    """Why no plan exists, naming the memory: ``why`` (the proof: memory, step and load against
    the capacity, or the solver that proved it), with the capacities it proved too small where
    ``why`` names no memory, so that every output (the CLI, ``--json``, ``Plan.message``) does."""
    text = why or "proven infeasible"
    if any(f"{m.name!r}" in text or f"memory {m.name}" in text for m in problem.memories):
        return text
    capped = [m for m in problem.memories if m.capacity is not None]
    return text + " (capacities: " + ", ".join(f"memory {m.name!r} {exact_size(m.capacity or 0)}" for m in capped) + ")"
