"""Model reduction shared by the exact planners (CP-SAT, MILP): smaller, independent, scaled models.

Exact models pay for every unit, every pair of units that may collide and every distinct
coordinate, so before building one we

* drop units without bytes (they collide with nothing; ``place_empty`` places them);
* split the rest into independent ``Part``s: first into *memory components* (memories linked by
  units that may choose between them; a unit whose memory is decided sits in one), then each
  single-memory component into *time sections* wherever no unit is alive across a time step.
  Peaks of different memories are separate terms of the objective, and the peak of one memory
  is the max over its sections, so solving parts apart loses nothing. A component where units
  still choose their memory is only cut in time for the ``feasible`` objective (under a weighted
  min-peak objective its sections trade bytes between memories through the shared max);
* express every byte quantity of a part in multiples of ``scale``, the gcd of all unit extents,
  member offsets, alignments (> 1) and fixed offsets. Gravity argument: in some optimal plan
  every unit rests on the floor, on a fixed unit or on another unit, at the lowest aligned offset
  above it, so all offsets are multiples of ``scale``; capacities are rounded down and lower
  bounds up. On real instances this shrinks coordinates by 2**k and makes CP-SAT far faster.

The solvers then need the pairs of units that can collide (``conflict_pairs``, a sweep) and
groups of interchangeable units for symmetry breaking (``identical_groups``); ``merge`` turns the
parts' Results back into one Result for the whole problem. ``solve_in_turn`` is the one loop over
the parts (the exact planners' through ``solve_parts``, and the portfolio's).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from optplan.core.bounds import lower_bounds
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective, fastest_fit
from optplan.core.plan import Placement, peaks
from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.registry import Result

Choice = tuple[str, int]  # (memory, root offset) of one unit


@dataclass(frozen=True, eq=False)
class Part:
    """An independent sub-problem: some units of ``problem``, in bytes divided by ``scale``.

    ``units`` are the original units; ``scaled[i]`` is ``units[i]`` with every byte quantity
    (members, pieces, low, high, fixed offset, modulus) divided by ``scale``. ``capacity`` and
    ``lower`` are per memory of the part, scaled (rounded down / up).
    """

    problem: Problem
    units: tuple[Unit, ...]
    scaled: tuple[Unit, ...]
    memories: tuple[str, ...]  # memories the units may use, fastest first
    capacity: dict[str, int | None]
    lower: dict[str, int]
    scale: int
    component: int  # parts of one memory component share this number

    @cached_property
    def sub_problem(self) -> Problem:
        """The part as a Problem in bytes (for heuristics and planners that take Problems)."""
        ids = {bid for u in self.units for bid, _ in u.members}
        return self.problem.with_buffers(b for b in self.problem.buffers if b.id in ids)

    @property
    def span(self) -> tuple[int, int]:
        return min(u.start for u in self.units), max(u.end for u in self.units)

    def placements(self, choices: Sequence[Choice]) -> dict[str, Placement]:
        """Buffer placements in bytes from one scaled (memory, root offset) per unit."""
        out = {}
        for u, (mem, off) in zip(self.units, choices):
            for bid, rel in u.members:
                out[bid] = Placement(mem, off * self.scale + rel)
        return out

    def choices(self, placements: Mapping[str, Placement]) -> list[Choice] | None:
        """Scaled (memory, root offset) per unit from byte placements; None when a root offset
        is off the grid or a root is missing (see ``settle`` to move a plan onto the grid)."""
        out = []
        for u in self.units:
            p = placements.get(u.root)
            if p is None or p.offset % self.scale or p.memory not in u.modulus:
                return None
            out.append((p.memory, p.offset // self.scale))
        return out


@dataclass(frozen=True)
class Reduction:
    """The whole problem as independent parts plus the placements of the empty units."""

    problem: Problem
    parts: tuple[Part, ...]
    empty: dict[str, Placement]  # placements of buffers in units without bytes
    objective: Objective


def reduce(problem: Problem, objective: Objective, split: bool = True) -> Reduction:
    """Drop empty units, split into independent parts (unless ``split`` is False), scale each."""
    if split and columns_only(problem):
        return _reduce_columns(problem, objective)
    sized = [u for u in problem.units if u.pieces]
    empty = place_empty(problem, [u for u in problem.units if not u.pieces])
    groups: list[tuple[int, list[Unit]]] = []
    components = memory_components(sized) if split else ([sized] if sized else [])
    for c, comp in enumerate(components):
        single = len({m for u in comp for m in u.memories}) == 1
        if split and (single or not objective.optimizes):
            groups.extend((c, s) for s in time_sections(comp))
        else:
            groups.append((c, comp))
    parts = tuple(make_part(problem, units, c) for c, units in groups)
    return Reduction(problem, parts, empty, objective)


def columns_only(problem: Problem) -> bool:
    """One memory, and buffers its columns say everything of (``Columns.plain``, no benefit or hint)."""
    return len(problem.memories) == 1 and problem.columns.plain and all(
        b.benefit is None and b.hint_memory is None and b.hint_offset is None for b in problem.buffers)


def _reduce_columns(problem: Problem, objective: Objective) -> Reduction:
    """``reduce`` of a ``columns_only`` problem (a unit per buffer, one memory component) on its
    arrays: the time sections by a sort, each part's sub-problem from columns. A million S_1-shaped
    buffers in 48 parts: 42 CPU s with a Unit-by-Unit split and a Problem checked buffer by buffer per part."""
    cols, units = problem.columns, problem.units
    held = np.flatnonzero(cols.size > 0)
    empty = place_empty(problem, (units[i] for i in np.flatnonzero(cols.size == 0).tolist()))
    order = np.argsort(cols.start[held], kind="stable")
    reach = np.maximum.accumulate(cols.end[held][order])
    label = np.empty(len(held), np.int64)
    label[order] = np.concatenate([[0], np.cumsum(cols.start[held][order][1:] >= reach[:-1])])
    ranked = np.argsort(label, kind="stable")  # by section, each in buffer order
    parts = []
    for idx in np.split(held[ranked], np.flatnonzero(np.diff(label[ranked])) + 1) if len(held) else []:
        sub = None if len(idx) == len(cols.ids) else Problem.from_columns(  # (all of them: the problem's bounds)
            [cols.ids[i] for i in idx.tolist()], cols.start[idx], cols.end[idx], cols.size[idx], cols.alignment[idx],
            problem.memories, dict(problem.metadata))
        parts.append(make_part(problem, [units[i] for i in idx.tolist()], sub=sub))
    return Reduction(problem, tuple(parts), empty, objective)


def make_part(problem: Problem, units: Sequence[Unit], component: int = 0, sub: Problem | None = None) -> Part:
    """A Part of ``units`` (any subset of ``problem.units`` with bytes), scaled by their gcd;
    ``sub``: its sub-problem, if the caller built it (else made when asked for)."""
    units = tuple(units)
    memories = tuple(m for m in problem.memory_names if any(m in u.memories for u in units))
    g = grid(units)
    scaled = tuple(scale_unit(u, g) for u in units)
    capacity = {}
    for m in memories:
        cap = problem.memory(m).capacity
        capacity[m] = None if cap is None else cap // g
    part = Part(problem, units, scaled, memories, capacity, {m: 0 for m in memories}, g, component)
    if sub is not None:
        part.__dict__["sub_problem"] = sub  # (the cached property's value)
    lb = lower_bounds(part.sub_problem).lower if len(units) < len(problem.units) else lower_bounds(problem).lower
    part.lower.update({m: -(-lb[m] // g) for m in memories})
    return part


def place_empty(problem: Problem, units: Iterable[Unit]) -> dict[str, Placement]:
    """Placements for units without bytes: they collide with nothing and raise no peak."""
    out = {}
    for u in units:
        mem = u.memories[0]
        root = u.fixed_offset if u.fixed_offset is not None else u.lowest_offset(mem)
        for bid, rel in u.members:
            out[bid] = Placement(mem, root + rel)
    return out


def memory_components(units: Sequence[Unit]) -> list[list[Unit]]:
    """Groups of units whose memory sets are linked by units that may use several memories."""
    parent: dict[str, str] = {}

    def find(m: str) -> str:
        while parent.setdefault(m, m) != m:
            parent[m] = parent[parent[m]]
            m = parent[m]
        return m

    for u in units:
        first = find(u.memories[0])
        for m in u.memories[1:]:
            parent[find(m)] = first
    out: dict[str, list[Unit]] = {}
    for u in units:
        out.setdefault(find(u.memories[0]), []).append(u)
    return list(out.values())


def time_sections(units: Sequence[Unit]) -> list[list[Unit]]:
    """Split at every time step that no unit is alive across (units keep their given order)."""
    if not units:
        return []
    order = sorted(range(len(units)), key=lambda i: units[i].start)
    label = [0] * len(units)
    section, reach = 0, units[order[0]].end
    for i in order:
        if units[i].start >= reach:
            section += 1
        reach = max(reach, units[i].end)
        label[i] = section
    out: list[list[Unit]] = [[] for _ in range(section + 1)]
    for i, u in enumerate(units):
        out[label[i]].append(u)
    return out


def grid(units: Iterable[Unit]) -> int:
    """The largest g such that some optimal plan has every root offset a multiple of g.

    gcd of member offsets, piece edges, low/high/top, fixed offsets and every alignment modulus > 1
    with its residue (capacities need not divide: they are rounded down to the grid).
    """
    g = 0
    for u in units:
        g = math.gcd(g, u.low, u.high, u.top, *(rel for _, rel in u.members))
        g = math.gcd(g, *(y for p in u.pieces for y in p[2:]))
        if u.fixed_offset is not None:
            g = math.gcd(g, u.fixed_offset)
        for m, r in u.modulus.values():
            if m > 1:
                g = math.gcd(g, m, r)
        if g == 1:
            return 1
    return max(g, 1)


def scale_unit(u: Unit, g: int) -> Unit:
    """``u`` with every byte quantity divided by ``g`` (which must divide them)."""
    if g == 1:
        return u
    modulus = {}
    for mem, (m, r) in u.modulus.items():
        ms = max(m // g, 1) if m > 1 else 1
        modulus[mem] = (ms, (r // g) % ms if m > 1 else 0)
    return replace(u, members=tuple((b, rel // g) for b, rel in u.members), modulus=modulus,
                   low=u.low // g, high=u.high // g, top=u.top // g,
                   fixed_offset=None if u.fixed_offset is None else u.fixed_offset // g,
                   pieces=tuple((a, b, y0 // g, y1 // g) for a, b, y0, y1 in u.pieces))


def conflict_pairs(units: Sequence[Unit]) -> np.ndarray:
    """Index pairs ``(i, j)``, i < j, of units alive at a common step with a memory in common.

    A sweep over sorted starts: the work is proportional to the number of pairs, not n**2.
    Units with several pieces are checked piece by piece (a unit's span may have holes).
    """
    n = len(units)
    if n < 2:
        return np.zeros((0, 2), np.int64)
    start = np.array([u.start for u in units], np.int64)
    end = np.array([u.end for u in units], np.int64)
    order = np.argsort(start, kind="stable")
    s_sorted = start[order]
    stop = np.searchsorted(s_sorted, end[order], side="left")  # sorted k < stop[i]: start_k < end_i
    count = np.maximum(stop - np.arange(1, n + 1), 0)
    first = np.repeat(np.arange(n), count)
    offs = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    a, b = order[first], order[first + 1 + offs]
    names = sorted({m for u in units for m in u.memories})
    if len(names) > 1:
        bit = {m: 1 << i for i, m in enumerate(names)}
        mask = np.array([sum(bit[m] for m in u.memories) for u in units], dtype=object if len(names) > 62 else np.int64)
        keep = (mask[a] & mask[b]) != 0
        a, b = a[keep], b[keep]
    pairs = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)
    multi = np.array([len(u.pieces) > 1 for u in units])
    check = multi[pairs[:, 0]] | multi[pairs[:, 1]]
    if check.any():
        ok = np.ones(len(pairs), bool)
        for k in np.flatnonzero(check):
            ok[k] = pieces_meet(units[pairs[k, 0]], units[pairs[k, 1]])
        pairs = pairs[ok]
    return pairs


def pieces_meet(u: Unit, v: Unit) -> bool:
    """True when some piece of ``u`` and some piece of ``v`` share a time step."""
    return any(a < d and c < b for a, b, _, _ in u.pieces for c, d, _, _ in v.pieces)


def identical_groups(units: Sequence[Unit]) -> list[list[int]]:
    """Indices of interchangeable units (same footprint, memories, alignment, benefit; not fixed).

    Swapping two of them maps a plan to an equally good plan, so a solver may order them
    (e.g. by memory, then offset) without losing an optimum; hints must be ordered the same way
    (``order_choices``).
    """
    groups: dict[tuple, list[int]] = {}
    for i, u in enumerate(units):
        if u.fixed_offset is None:
            key = (u.pieces, u.memories, tuple(sorted(u.modulus.items())), u.low, u.high, u.top, u.gain)
            groups.setdefault(key, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def order_choices(units: Sequence[Unit], choices: list[Choice], groups: list[list[int]]) -> list[Choice]:
    """Permute the choices inside each group of identical units so that (memory rank, offset)
    increases with the index: the same plan, consistent with symmetry breaking."""
    out = list(choices)
    for g in groups:
        rank = {m: i for i, m in enumerate(units[g[0]].memories)}
        vals = sorted((choices[i] for i in g), key=lambda c: (rank[c[0]], c[1]))
        for i, c in zip(g, vals):
            out[i] = c
    return out


def settle(part: Part, placements: Mapping[str, Placement]) -> list[Choice] | None:
    """A plan of the part on its grid, no worse than ``placements`` in any memory.

    Units keep their memories and are re-placed lowest-first by increasing offset (gravity):
    none goes up, and every resulting offset is on the grid. None if ``placements`` lacks a unit.
    """
    direct = part.choices(placements)
    if direct is not None:
        return direct
    from optplan.heuristics.packer import Packer  # the heuristics' placement engine

    if any(u.root not in placements for u in part.units):
        return None
    packer = Packer(part.sub_problem)
    order = sorted(range(len(part.units)),
                   key=lambda i: (part.units[i].fixed_offset is None, placements[part.units[i].root].offset))
    for i in order:
        u = part.units[i]
        mem = placements[u.root].memory
        off = packer.fit(u, mem, "first")
        if off is None or off > placements[u.root].offset:
            return None
        packer.place(u, mem, off)
    return part.choices(packer.placements)


def merge(reduction: Reduction, results: Sequence[Result]) -> Result:
    """One Result for the whole problem from one Result per part (same order as the parts).

    Proven infeasible if any part is. Per-memory bounds combine by max (each part's bound holds
    for the whole). A single-memory component is proven optimal when its peak reaches the best
    section bound, even if some sections were not solved to optimality.
    """
    problem, parts = reduction.problem, reduction.parts
    for part, res in zip(parts, results):
        if res.proven_infeasible:
            return Result(None, proven_infeasible=True, message=res.message, stats=_stats(parts, results))
    missing = [res.message for res in results if res.placements is None]
    if missing:
        return Result(None, message=missing[0], stats=_stats(parts, results))
    placements = dict(reduction.empty)
    for res in results:
        placements.update(res.placements or {})
    weights = reduction.objective.weights(problem)
    peak = peaks(problem, placements)
    bound = {m: 0 for m in problem.memory_names}
    for part, res in zip(parts, results):
        for m in part.memories:
            bound[m] = max(bound[m], part.lower[m] * part.scale, (res.bound or {}).get(m, 0))
    objective = reduction.objective
    optimal, weighted_bound, lost_bound = True, 0, objective.lost_floor(problem)
    for c in sorted({p.component for p in parts}):
        idx = [i for i, p in enumerate(parts) if p.component == c]
        mems = sorted({m for i in idx for m in parts[i].memories})
        by_memory = sum(weights[m] * bound[m] for m in mems)
        if len(idx) == 1:
            res, part = results[idx[0]], parts[idx[0]]
            weighted_bound += max(by_memory, res.objective_bound or 0)
            lost, floor = objective.lost(problem, res.placements or {}), part_lost_floor(objective, part)
            if res.lost_bound is not None:
                lost_bound += max(res.lost_bound - floor, 0)
            optimal &= res.proven_optimal or (all(peak[m] <= bound[m] for m in mems) and lost <= floor)
        else:  # time sections of one memory: no choice, the lost benefit is fixed
            weighted_bound += by_memory
            optimal &= all(peak[m] <= bound[m] for m in mems)
    messages = sorted({res.message for res in results if res.message})
    return Result(placements, proven_optimal=optimal and objective.optimizes, bound=bound,
                  objective_bound=weighted_bound, lost_bound=lost_bound,
                  message="; ".join(messages), stats=_stats(parts, results))


def part_lost_floor(objective: Objective, part: Part) -> int:
    """The lost benefit of ``part``'s buffers with each unit in its fastest memory."""
    tw = objective.tier_weights(part.problem)
    return sum(u.gain * tw[fastest_fit(part.problem, u)] for u in part.units)


def _stats(parts: Sequence[Part], results: Sequence[Result]) -> dict[str, object]:
    out: dict[str, object] = {"parts": len(parts), "scales": sorted({p.scale for p in parts}),
                              "largest_part": max((len(p.units) for p in parts), default=0)}
    if parts:  # the solver's own figures for the largest part
        largest = max(range(len(parts)), key=lambda i: len(parts[i].units))
        out.update(results[largest].stats)
    return out


Progress = Callable[[dict], None]
PartReport = Callable[[Result], None]  # a part's running Result, as a part's solver finds better plans
SolvePart = Callable[[int, Deadline, PartReport], Result]  # part index, its share of the time, its report


def solve_parts(problem: Problem, objective: Objective, deadline: Deadline,
                solve_one: Callable[[Part, Deadline, PartReport], Result], progress: Progress | None = None) -> Result:
    """Reduce, hand each part its share of the remaining time (by size), merge the Results."""
    t0 = time.perf_counter()
    red = reduce(problem, objective)
    return solve_in_turn(red, deadline, lambda i, share, report: solve_one(red.parts[i], share, report), progress, t0)


def solve_in_turn(red: Reduction, deadline: Deadline, solve_one: SolvePart, progress: Progress | None = None,
                  t0: float | None = None, starts: Sequence[Result | None] = ()) -> Result:
    """The one loop over a reduction's parts (the exact planners' and the portfolio's): smallest
    first, each in its share of the time left by size (time a part leaves unused goes to the
    larger ones after it), until a part is proven infeasible; the Results merged. ``progress``
    gets the whole plan's figures whenever a part's plan changes, from ``t0``; ``starts``: the
    parts' plans before the loop (a warm start), so that it reports the whole plan from the start."""
    tracker = Tracker(red, progress, time.perf_counter() if t0 is None else t0)
    for i, start in enumerate(starts):
        if start is not None:
            tracker.latest[i] = start
    results: list[Result | None] = [None] * len(red.parts)
    order = sorted(range(len(red.parts)), key=lambda i: len(red.parts[i].units))
    left_units = sum(len(p.units) for p in red.parts)
    for i in order:
        part = red.parts[i]
        share = deadline.share(len(part.units) / max(left_units, 1))
        left_units -= len(part.units)
        result = results[i] = solve_one(i, share, functools.partial(tracker.update, i))
        tracker.update(i, result)
        if result.proven_infeasible:
            break
    done = [r if r is not None else Result(None, message="not solved: an earlier part is infeasible") for r in results]
    return merge(red, done)


class Tracker:
    """Combines the parts' running results into one progress report for the whole problem: the
    objective's value and bound (on the scale of every other report of the run, the Plan's), the
    gap of the weighted peaks, and the peaks and their bounds in bytes per memory."""

    def __init__(self, red: Reduction, progress: Progress | None, t0: float) -> None:
        self.red, self.progress, self.t0 = red, progress, t0
        self.latest: dict[int, Result] = {}

    def update(self, i: int, result: Result) -> None:
        """Part ``i``'s plan is now ``result``: report the whole plan's figures (values only once
        every part has a plan)."""
        if self.progress is None:
            return
        self.latest[i] = result
        best = bound = gap = None
        peak: dict[str, int] | None = None
        lower: dict[str, int] | None = None
        if len(self.latest) == len(self.red.parts) and all(r.placements is not None for r in self.latest.values()):
            # the values finish() would compute, without re-validating on every report
            problem, objective = self.red.problem, self.red.objective
            merged = merge(self.red, [self.latest[j] for j in range(len(self.red.parts))])
            weights = objective.weights(problem)
            peak = peaks(problem, merged.placements or {})
            lower = {m: max(v, (merged.bound or {}).get(m, 0)) for m, v in lower_bounds(problem).lower.items()}
            weighted = sum(weights[m] * v for m, v in peak.items())
            weighted_bound = max(merged.objective_bound or 0, sum(weights[m] * v for m, v in lower.items()))
            best = objective.value(problem, merged.placements or {})
            bound = objective.combine(problem, weighted_bound, max(objective.lost_floor(problem), merged.lost_bound or 0))
            if merged.proven_optimal:
                bound, weighted_bound = best, weighted
                lower = {m: max(v, peak[m]) if weights[m] > 0 else v for m, v in lower.items()}
            gap = None if not weighted_bound else max(weighted / weighted_bound - 1.0, 0.0)
        self.progress({"best": best, "bound": bound, "gap": gap, "elapsed": time.perf_counter() - self.t0,
                       "peak": peak, "lower": lower})  # bytes per memory, for the display
