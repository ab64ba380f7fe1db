"""An exhaustive reference solver for tiny instances (a handful of buffers, small sizes).

It shares no placement code with the planners it cross-checks: it enumerates, unit by unit,
every allowed memory and every aligned root offset in ``[lowest legal, bound]`` with depth-first
search, keeps the assignment minimizing the weighted sum of peaks
(``optplan.core.problem.objective_weights``) and prunes branches that cannot beat the incumbent.
Units (a buffer plus everything placed relative to it) move as one, as in the Problem model.

Why the default bound is enough (so ``None`` is a proof of infeasibility and the value is the
optimum): take any plan and, in each memory, repeatedly move down by ``M`` (the lcm of all
moduli there) any set of non-fixed units whose bottoms are all at least ``max(F, M)``
(``F``: the highest byte of a fixed unit) while that collides with nothing. Peaks never rise and
capacities stay met. When nothing moves, consecutive unit bottoms above ``max(F, M)`` are less
than ``Hmax + M`` apart (else the set above the gap could drop), so every root offset is at most
``max(F, M) + n * (Hmax + M) - low``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from optplan.core.buffer import Buffer, Gap, Memory, RelativePlacement
from optplan.core.errors import ProblemError
from optplan.core.objective import Objective
from optplan.core.plan import Placement
from optplan.core.problem import Problem, objective_weights
from optplan.core.units import Unit
from optplan.core.validate import validate


def _default_bound(problem: Problem, memory: str) -> int:
    units = [u for u in problem.units if memory in u.memories]
    if not units:
        return 0
    big_m = math.lcm(*(u.modulus[memory][0] for u in units))
    fixed_top = max((u.fixed_offset + u.high for u in units if u.fixed_offset is not None), default=0)
    hmax = max(u.height for u in units)
    return max(fixed_top, big_m) + len(units) * (hmax + big_m) + max(-u.low for u in units)


def _top(problem: Problem, unit: Unit) -> int:
    """The highest reserved byte + 1 relative to the root, as the peak counts it (offset + size;
    zero-size members do not count), from the raw buffers."""
    return max((rel + problem.buffer(bid).size for bid, rel in unit.members if problem.buffer(bid).size > 0), default=0)


def _rectangles(problem: Problem, unit: Unit) -> list[tuple[int, int, int, int]]:
    """The (time x byte) rectangles the unit's members occupy relative to the root, read off
    the raw buffers and their gaps (not ``Unit.pieces``: that is the code under test)."""
    out = []
    for bid, rel in unit.members:
        b = problem.buffer(bid)
        if b.size == 0:
            continue
        t = b.start
        for g in b.gaps:
            out.append((t, g.start, rel, rel + b.size))
            if g.window is not None:
                out.append((g.start, g.end, rel + g.window[0], rel + g.window[1]))
            t = g.end
        out.append((t, b.end, rel, rel + b.size))
    return [r for r in out if r[0] < r[1]]


def brute_force_optimum(problem: Problem, max_offset: int | None = None, objective: Objective | str | None = None
                        ) -> tuple[int, dict[str, Placement]] | None:
    """The optimum ``(objective value, placements)`` of a tiny problem, or None if no plan exists.

    ``objective``: default the problem's (``Objective.default``). The value is recomputed here
    from the weighted peaks ``W`` and the lost benefit ``L`` (``Objective.combine``), both
    monotone as units are added, so a partial assignment's value bounds every completion.

    ``max_offset`` caps every root offset searched (default: the proven-sufficient bound in the
    module docstring; a smaller cap makes the answer "best plan with offsets <= max_offset").
    Exponential: meant for a handful of buffers with small sizes and alignments.
    """
    objective = Objective.parse(objective, problem)
    weights = objective_weights(problem)
    rank = {m: r for r, m in enumerate(problem.memory_names)}
    base = sum(b.size if b.benefit is None else b.benefit for b in problem.buffers) + 1
    n = len(problem.memories)
    tier = {m: sum(base ** (n - 2 - t) for t in range(rank[m])) for m in rank}  # L per unit of benefit
    gain = {u.root: sum(problem.buffer(b).size if problem.buffer(b).benefit is None else problem.buffer(b).benefit
                        for b, _ in u.members) for u in problem.units}
    names = problem.memory_names
    cap = {m.name: m.capacity for m in problem.memories}
    bound = {m: (_default_bound(problem, m) if max_offset is None else max_offset) for m in names}
    # big and fixed units first: conflicts show up early and the first plans are good
    units = sorted(problem.units, key=lambda u: (u.fixed_offset is None, -u.height, u.root))
    placed: dict[str, list[tuple[int, int, int, int]]] = {m: [] for m in names}
    peak = {m: 0 for m in names}
    choice: dict[str, tuple[str, int]] = {}
    best: list = [None, None]  # value, choice
    lost = [0]

    def value(extra_peak: int = 0, extra_lost: int = 0) -> int:
        w = sum(weights[m] * peak[m] for m in names) + extra_peak
        return objective.combine(problem, w, lost[0] + extra_lost if objective.counts_benefit else 0)

    rects = {u.root: _rectangles(problem, u) for u in units}

    def collides(unit: Unit, memory: str, o: int) -> bool:
        for a, b, y0, y1 in rects[unit.root]:
            for c, d, z0, z1 in placed[memory]:
                if a < d and c < b and o + y0 < z1 and z0 < o + y1:
                    return True
        return False

    def dfs(i: int) -> None:
        if best[0] is not None and value() >= best[0]:
            return
        if i == len(units):
            best[0], best[1] = value(), dict(choice)
            return
        unit = units[i]
        top = _top(problem, unit)
        mine = rects[unit.root]
        for memory in unit.memories:
            m = unit.modulus[memory][0]
            here = gain[unit.root] * tier[memory]
            if unit.fixed_offset is not None:
                offsets = range(unit.fixed_offset, unit.fixed_offset + 1)
            else:
                offsets = range(unit.lowest_offset(memory), bound[memory] + 1, m)
            for o in offsets:
                if cap[memory] is not None and o + unit.high > cap[memory]:
                    break
                old = peak[memory]
                new = max(old, o + top) if mine else old
                if best[0] is not None and value(weights[memory] * (new - old), here) >= best[0]:
                    break  # higher offsets only raise this memory's peak further
                if collides(unit, memory, o):
                    continue
                peak[memory] = new
                placed[memory].extend((a, b, o + y0, o + y1) for a, b, y0, y1 in mine)
                choice[unit.root] = (memory, o)
                lost[0] += here
                dfs(i + 1)
                lost[0] -= here
                del choice[unit.root]
                del placed[memory][len(placed[memory]) - len(mine):]
                peak[memory] = old

    dfs(0)
    if best[0] is None:
        return None
    placements = {}
    for unit in problem.units:
        memory, o = best[1][unit.root]
        for bid, rel in unit.members:
            placements[bid] = Placement(memory, o + rel)
    violations = validate(problem, placements)
    assert not violations, f"brute force produced an invalid plan: {violations[0]}"
    return best[0], placements


def _draw_gaps(draw: Callable[[int, int], int], size: int, start: int, end: int) -> tuple[Gap, ...]:
    """Up to two gaps inside ``[start, end)``, full or with a window, never idling the whole lifetime."""
    gaps, t = [], start
    while end - t >= 1 and len(gaps) < 2 and draw(0, 2):
        lo = draw(t, end - 1)
        hi = draw(lo + 1, end)
        window = None
        if size >= 1 and draw(0, 1):
            wlo = draw(0, size - 1)
            window = (wlo, draw(wlo + 1, size))
        gaps.append(Gap(lo, hi, window))
        t = hi
    idle = sum(g.end - g.start for g in gaps if g.window is None)
    return () if idle == end - start else tuple(gaps)


def tiny_problem(draw: Callable[[int, int], int], gaps: bool = False) -> Problem:
    """A random tiny Problem exercising every constraint kind, small enough for brute force.

    ``draw(lo, hi)`` returns an integer in ``[lo, hi]`` (``random.Random.randint``, or
    hypothesis' ``data.draw(st.integers(lo, hi))`` so failures shrink). Up to three memories
    with optional capacities and alignments, per-buffer alignment, allowed lists, blocklists,
    fixed memories and offsets, relative placements and zero-size buffers; with ``gaps``,
    longer lifetimes with gaps and windows too (without, the draws are exactly as before).
    A draw the Problem checks reject (e.g. a relative placement no memory can hold) loses its
    relative placements and fixed offsets, which always leaves a valid problem.
    """
    nmem = draw(1, 3)
    memories = []
    for i in range(nmem):
        cap = None if draw(0, 2) == 0 else draw(4, 14)
        if i == nmem - 1 and draw(0, 1):
            cap = None  # often an unbounded last memory, as in real hierarchies
        memories.append(Memory(f"m{i}", capacity=cap, alignment=(1, 1, 2, 4)[draw(0, 3)]))
    names = [m.name for m in memories]
    buffers, plain = [], []
    for i in range(draw(1, 5)):
        size = (0, 1, 2, 3, 4, 5, 6, 8)[draw(0, 7)]
        start = draw(0, 5)
        end = start + draw(1, 3)
        holes: tuple[Gap, ...] = ()
        if gaps:
            end += draw(0, 2)
            holes = _draw_gaps(draw, size, start, end)
        align = (1, 1, 1, 2, 4)[draw(0, 4)]
        allowed = blocked = None
        kind = draw(0, 5)
        if kind == 1:
            allowed = tuple(m for m in names if draw(0, 1)) or (names[-1],)
        elif kind == 2 and nmem > 1:
            blocked = (names[draw(0, nmem - 1)],)
        fixed_memory = fixed_offset = None
        if draw(0, 5) == 0:
            fixed_memory = names[draw(0, nmem - 1)]
            if blocked and fixed_memory in blocked or allowed and fixed_memory not in allowed:
                fixed_memory = None
            elif draw(0, 1):
                fixed_offset = 4 * draw(0, 2)
        b = Buffer(f"b{i}", size, start, end, alignment=align, allowed=allowed, blocked=blocked or (),
                   fixed_memory=fixed_memory, fixed_offset=fixed_offset, gaps=holes)
        plain.append(Buffer(f"b{i}", size, start, end, alignment=align, allowed=allowed, blocked=blocked or (),
                            fixed_memory=fixed_memory, gaps=holes))
        buffers.append(b)
    relative = []
    for i in range(1, len(buffers)):
        if draw(0, 4) == 0:
            relative.append(RelativePlacement(f"b{i}", f"b{draw(0, i - 1)}", draw(-2, 6)))
    try:
        return Problem(tuple(buffers), tuple(memories), tuple(relative))
    except ProblemError:
        try:
            return Problem(tuple(plain), tuple(memories))
        except ProblemError:  # a fixed memory too small for the buffer: drop the pins too
            return Problem(tuple(replace(b, fixed_memory=None) for b in plain), tuple(memories))
