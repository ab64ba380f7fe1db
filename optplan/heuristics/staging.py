"""Staging-limit heuristics: choose what stays in fast memory on the usage curve, then pack.

Both decide, memory by memory fastest first, which units a capacitated memory should hold by
looking only at the *usage curve* (bytes live per step against the capacity, the staging
limit), as the production tools they model do. A real packing step follows: the chosen units
are placed at offsets (fixed ones first, then by decreasing size, first fit). A selection whose
load fits the curve may still not pack (fragmentation); the units that do not fit then go to the
next memory, and ``stats["selection_packs"]`` says whether that happened, so a study can count it.

* ``vela-staging``: Arm Vela's rule for feature maps in fast storage, in our own words: evict the
  units that can never fit, keep the units that always fit (the curve stays under the limit over
  their whole lifetime even with every candidate in), and decide the rest exhaustively per
  connected group of competing units (linked by the steps where the curve is over the limit),
  maximising the benefit kept, for groups of up to ``GROUP_LIMIT`` units; larger groups greedily
  by benefit per byte.
* ``executorch-fastest-fit``: ExecuTorch's hierarchical greedy (Cadence backend) as a selection:
  by decreasing size, each unit goes to the fastest memory whose curve still has room for it.

With vector clocks there is no curve (steps are only partly ordered): ``ClockCurve`` counts a unit
against every chosen unit it conflicts with, and Vela's groups are the connected parts of the
conflict graph among the competing units.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from optplan.core.clocks import clock_graph
from optplan.core.deadline import current
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.heuristics import kernels
from optplan.heuristics.arrays import arrays, indices, root_rank
from optplan.heuristics.arrays import placements as unit_placements
from optplan.heuristics.packer import Packer, fixed_first
from optplan.heuristics.tree_packer import pack
from optplan.registry import POLL_EVERY, Result, cut, planner

GROUP_LIMIT = 20  # exhaustive search per group of competing units up to this many (Vela's rule)
NODE_LIMIT = 1 << 20  # per group: the search keeps its best subset after this many nodes

Selector = Callable[[Problem, str, list[Unit], "Curve"], tuple[set[str], dict[str, int]]]


class Curve:
    """Bytes live per elementary step of one memory: a base load plus chosen units."""

    def __init__(self, problem: Problem) -> None:
        self.times = np.array(sorted({t for u in problem.units for p in u.pieces for t in p[:2]}), np.int64)
        self.load = np.zeros(max(len(self.times) - 1, 0), np.int64)

    def copy(self) -> Curve:
        out = Curve.__new__(Curve)
        out.times, out.load = self.times, self.load.copy()
        return out

    def span(self, u: Unit) -> list[tuple[int, int, int]]:
        """(first slot, end slot, bytes) per piece of ``u``."""
        s = np.searchsorted
        return [(int(s(self.times, a)), int(s(self.times, b)), y1 - y0) for a, b, y0, y1 in u.pieces]

    def add(self, u: Unit, sign: int = 1) -> None:
        for i, j, h in self.span(u):
            self.load[i:j] += sign * h

    def room(self, u: Unit, capacity: int) -> bool:
        """Whether adding ``u`` keeps the curve at or under ``capacity`` over its lifetime."""
        return all(int(self.load[i:j].max(initial=0)) + h <= capacity for i, j, h in self.span(u))

    def over(self, u: Unit, capacity: int) -> bool:
        """Whether the curve passes ``capacity`` somewhere in the lifetime of ``u``."""
        return any(int(self.load[i:j].max(initial=0)) > capacity for i, j, _ in self.span(u))

    def groups(self, units: list[Unit], capacity: int) -> list[list[Unit]]:
        """``units`` linked by the steps where the curve is over ``capacity`` that they share."""
        parent = list(range(len(units)))

        def find(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        # each piece covers a run of the over-limit steps (by index): overlapping runs share a step
        steps = np.flatnonzero(self.load > capacity)
        runs = []
        for k, u in enumerate(units):
            for i, j, _ in self.span(u):
                a, b = int(np.searchsorted(steps, i)), int(np.searchsorted(steps, j)) - 1
                if a <= b:
                    runs.append((a, b, k))
        runs.sort()
        reach, head = -1, -1
        for a, b, k in runs:
            if a <= reach:
                parent[find(k)] = find(head)
            else:
                head = k
            reach = max(reach, b)
        groups: dict[int, list[Unit]] = {}
        for k, u in enumerate(units):
            groups.setdefault(find(k), []).append(u)
        return list(groups.values())


class ClockCurve(Curve):
    """The usage "curve" of vector clocks, which order steps only partly: no step holds a load, so a
    unit is counted against every chosen unit it conflicts with (``clock_graph(Problem)``), which is
    at least the load of any set of them live together (on one time axis, at least the curve's
    highest point in the unit's lifetime). A unit weighs its extent."""

    def __init__(self, problem: Problem) -> None:
        graph = clock_graph(problem)
        self.apart = graph.apart
        self.number = {r: i for i, r in enumerate(graph.roots)}
        self.height = [u.height if u.pieces else 0 for u in problem.units]
        self.held: set[int] = set()

    def copy(self) -> ClockCurve:
        out = ClockCurve.__new__(ClockCurve)
        out.apart, out.number, out.height, out.held = self.apart, self.number, self.height, set(self.held)
        return out

    def _load(self, u: Unit) -> int:
        return sum(self.height[o] for o in self.apart[self.number[u.root]] if o in self.held)

    def add(self, u: Unit, sign: int = 1) -> None:
        if sign > 0:
            self.held.add(self.number[u.root])
        else:
            self.held.discard(self.number[u.root])

    def room(self, u: Unit, capacity: int) -> bool:
        return self._load(u) + self.height[self.number[u.root]] <= capacity

    def over(self, u: Unit, capacity: int) -> bool:
        i = self.number[u.root]
        return self._load(u) + (self.height[i] if i in self.held else 0) > capacity

    def groups(self, units: list[Unit], capacity: int) -> list[list[Unit]]:
        """Connected groups of ``units`` in the conflict graph."""
        mine = {self.number[u.root]: u for u in units}
        seen: set[int] = set()
        out = []
        for start in mine:
            if start in seen:
                continue
            seen.add(start)
            group, stack = [], [start]
            while stack:
                i = stack.pop()
                group.append(mine[i])
                for o in self.apart[i]:
                    if o in mine and o not in seen:
                        seen.add(o)
                        stack.append(o)
            out.append(group)
        return out


def make_curve(problem: Problem) -> Curve:
    return ClockCurve(problem) if problem.concurrent else Curve(problem)


def _vela(problem: Problem, memory: str, candidates: list[Unit], curve: Curve) -> tuple[set[str], dict[str, int]]:
    cap = problem.memory(memory).capacity
    assert cap is not None
    fits = [u for u in candidates if u.lowest_offset(memory) + u.high <= cap]  # the rest never fits
    full = curve.copy()
    for u in fits:
        full.add(u)
    keep = {u.root for u in fits if not full.over(u, cap)}
    rest = [u for u in fits if u.root not in keep]
    for u in fits:
        if u.root in keep:
            curve.add(u)
    groups = full.groups(rest, cap)  # competing units, linked where the limit is passed
    exhaustive = 0
    for group in groups:
        chosen = _best_subset(group, curve, cap) if len(group) <= GROUP_LIMIT else _greedy_subset(group, curve, cap)
        exhaustive += len(group) <= GROUP_LIMIT
        keep |= chosen
    stats = {"evicted": len(candidates) - len(fits), "kept_always": len(fits) - len(rest),
             "groups": len(groups), "groups_exhaustive": exhaustive,
             "largest_group": max((len(g) for g in groups), default=0)}
    return keep, stats


def _best_subset(group: list[Unit], curve: Curve, cap: int) -> set[str]:
    """The subset of ``group`` with the most benefit whose units fit the curve together
    (depth-first, by decreasing benefit, pruned by the benefit still available); the chosen
    units are added to ``curve``."""
    group = sorted(group, key=lambda u: -u.gain)
    suffix = np.cumsum([u.gain for u in group][::-1])[::-1].tolist() + [0]
    best: list = [-1, []]
    chosen: list[Unit] = []
    nodes = [0]

    def dfs(k: int, value: int) -> None:
        nodes[0] += 1
        if value + suffix[k] <= best[0] or nodes[0] > NODE_LIMIT:
            return
        if k == len(group):
            best[0], best[1] = value, list(chosen)
            return
        u = group[k]
        if curve.room(u, cap):
            curve.add(u)
            chosen.append(u)
            dfs(k + 1, value + u.gain)
            chosen.pop()
            curve.add(u, -1)
        dfs(k + 1, value)

    dfs(0, 0)
    for u in best[1]:
        curve.add(u)
    return {u.root for u in best[1]}


def _greedy_subset(group: list[Unit], curve: Curve, cap: int) -> set[str]:
    out = set()
    for u in sorted(group, key=lambda u: (-u.gain / max(u.height, 1), -u.gain)):
        if curve.room(u, cap):
            curve.add(u)
            out.add(u.root)
    return out


def _fastest_fit(problem: Problem, memory: str, candidates: list[Unit], curve: Curve) -> tuple[set[str], dict[str, int]]:
    cap = problem.memory(memory).capacity
    assert cap is not None
    keep = set()
    for u in sorted(candidates, key=lambda u: (-u.height, u.start)):
        if u.lowest_offset(memory) + u.high <= cap and curve.room(u, cap):
            curve.add(u)
            keep.add(u.root)
    return keep, {}


def stage(problem: Problem, select: Selector, reference: bool = False) -> Result:
    """Select per capacitated memory (fastest first) on the usage curve, then pack (``reference``:
    with the pure-Python packer the tree packer is tested against)."""
    packer = Packer(problem) if reference or problem.concurrent or not kernels.ready(problem.unit_count) else None
    placements: dict[str, Placement] = {}
    todo = list(problem.units)
    stats: dict[str, object] = {"selection_packs": True, "spilled_after_packing": 0}
    for mi, mem in enumerate(problem.memories):
        last = mi == len(problem.memories) - 1
        here = [u for u in todo if mem.name in u.memories]
        if mem.capacity is None or last:
            chosen = here
        else:
            forced = [u for u in here if u.memories[-1] == mem.name or not u.pieces]  # no slower memory left
            curve = make_curve(problem)
            for u in forced:
                curve.add(u)
            pinned = {id(u) for u in forced}
            free = [u for u in here if id(u) not in pinned]
            keep, info = select(problem, mem.name, free, curve)
            stats.update({f"{mem.name}_{k}": v for k, v in info.items()})
            chosen = forced + [u for u in free if u.root in keep]
        spilled = _pack(problem, placements, packer, mem.name, chosen)
        if spilled is None:
            return cut(f"packing {mem.name!r}")
        failed = [u for u in spilled if u.memories[-1] == mem.name or last]
        if failed:
            return Result(None, message=f"could not place buffer {failed[0].root!r} in memory {mem.name!r} "
                                        "or any slower one", stats=stats)
        if spilled:
            stats["selection_packs"] = False
            stats["spilled_after_packing"] = int(stats["spilled_after_packing"]) + len(spilled)  # type: ignore[call-overload]
        if not last:
            placed = {u.root for u in chosen} - {u.root for u in spilled}
            todo = [u for u in todo if u.root not in placed]
    return Result(packer.placements if packer is not None else placements, stats=stats)


def _pack(problem: Problem, placements: dict[str, Placement], packer: Packer | None, memory: str,
          units: Sequence[Unit]) -> list[Unit] | None:
    """Place ``units`` in ``memory`` (fixed first, then by decreasing size, first fit); the ones
    that do not fit are returned. With a ``packer`` (the reference, vector clocks, and no compiled
    kernels under a time limit) its loop places them, polling the running planner's deadline (None:
    it ran out first); otherwise the tree packer (same placements) does, into ``placements``:
    each memory is packed once, so the pass starts from an empty memory."""
    if packer is not None:
        out = []
        deadline = current()
        for k, u in enumerate(fixed_first(sorted(units, key=lambda u: (-u.height, u.start, u.root)))):
            if k and k % POLL_EVERY == 0 and deadline.expired():
                return None
            o = packer.fit(u, memory, "first")
            if o is None:
                out.append(u)
            else:
                packer.place(u, memory, o)
        return out
    a = arrays(problem)
    idx = indices(problem, units)
    idx = indices(problem, idx[np.lexsort((root_rank(problem)[idx], a.start[idx], a.low[idx] - a.high[idx]))])  # (-height, start, root)
    off, where, _ = pack(problem, idx, "first", memory=memory, skip=True)
    placed = off[idx] >= 0
    placements.update(unit_placements(problem, off, where, idx[placed]))
    return [problem.units[i] for i in idx[~placed].tolist()]


@planner("vela-staging", clocks=True)
def vela_staging(problem: Problem) -> Result:
    """Arm Vela's staging rule per capacitated memory (evict never-fits, keep always-fits,
    exhaustive per group of up to 20), then a real packing; stats: selection_packs."""
    return stage(problem, _vela)


@planner("executorch-fastest-fit", clocks=True)
def executorch_fastest_fit(problem: Problem) -> Result:
    """ExecuTorch's hierarchical greedy: by decreasing size into the fastest memory whose usage
    curve has room, then a real packing; stats: selection_packs."""
    return stage(problem, _fastest_fit)
