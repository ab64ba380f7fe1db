"""The shared placement engine of the greedy heuristics.

A Packer holds what is placed so far in each memory as absolute rectangles (time x bytes).
For a unit (a buffer plus everything placed relative to it) it computes the root offsets that
collide with nothing, then a policy picks one: the lowest (first fit), the one in the tightest
hole (best fit, Pisarchyk & Lee), or the tightest hole where the space between the highest
time-overlapping rectangle and the current heap top counts as a hole too (XLA's heap simulator).
``greedy`` walks units in a given order, fastest memory first, which is what most production
heuristics are, differing only in the order and policy.

Finding the placed rectangles that overlap a unit in time must not scan everything placed
(quadratic on 100k buffers): each memory keeps a segment tree over the problem's elementary
time slots (see ``_TimeIndex``), so a query touches O(log T) nodes plus the answer.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

import numpy as np

from optplan.core.clocks import clock_graph
from optplan.core.deadline import current
from optplan.core.objective import Objective
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.heuristics import kernels
from optplan.heuristics.arrays import indices
from optplan.heuristics.arrays import placements as unit_placements
from optplan.heuristics.arrays import value as plan_value
from optplan.heuristics.tree_packer import pack, pack_below
from optplan.registry import POLL_EVERY, Result, cut

Policy = Literal["first", "best", "heap"]
_EMPTY = np.zeros(0, np.int64)


class _Spans:
    """The byte ranges ``[y0, y1)`` stored at one tree node.

    Collision tests only need their union, so a read merges new ranges into it (sorted,
    disjoint, non-touching). In a packed memory the union stays small however many rectangles
    went in, which keeps queries cheap when thousands of buffers are alive at once. New ranges
    wait in plain lists (cheap appends) until the next read.
    """

    __slots__ = ("new0", "new1", "y0", "y1")

    def __init__(self) -> None:
        self.y0 = self.y1 = _EMPTY
        self.new0: list[int] = []
        self.new1: list[int] = []

    def view(self) -> tuple[np.ndarray, np.ndarray]:
        if self.new0:
            self.y0, self.y1 = _union(np.concatenate([self.y0, np.array(self.new0, np.int64)]),
                                      np.concatenate([self.y1, np.array(self.new1, np.int64)]))
            self.new0, self.new1 = [], []
        return self.y0, self.y1


def _union(y0: np.ndarray, y1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of ranges ``[y0, y1)`` as sorted, disjoint, non-touching ranges."""
    order = np.argsort(y0, kind="stable")  # mostly sorted runs: near-linear
    y0, reach = y0[order], np.maximum.accumulate(y1[order])
    first = np.empty(len(y0), bool)
    first[:1] = True
    np.greater(y0[1:], reach[:-1], out=first[1:])  # a new range starts past everything before it
    last = np.empty(len(y0), bool)
    last[:-1] = first[1:]
    last[-1:] = True
    return y0[first], reach[last]


class _TimeIndex:
    """Placed rectangles of one memory, indexed by time.

    A segment tree over elementary time slots. A rectangle spanning slots ``[l, r)`` is stored in
    ``own`` of its O(log T) canonical nodes and in ``sub`` of those nodes and all their ancestors
    (O(log T) more: they lie on the two boundary paths). A query for ``[l, r)`` reads ``sub``
    of its canonical nodes (rectangles inside them) and ``own`` of their ancestors (rectangles
    covering them): exactly the time-overlapping rectangles are found, as per-node unions.
    """

    def __init__(self, times: Sequence[int]) -> None:
        self.times = list(times)
        size = 1
        while size < max(len(self.times) - 1, 1):
            size *= 2
        self.size = size
        self.own: dict[int, _Spans] = {}
        self.sub: dict[int, _Spans] = {}

    def _slots(self, t0: int, t1: int) -> tuple[int, int]:
        """Elementary slots covering ``[t0, t1)`` (exactly, for the times the index was built on)."""
        times = self.times
        if not times or t0 < times[0] or t1 > times[-1]:
            raise ValueError(f"time span [{t0}, {t1}) is outside the problem this packer was built for")
        return bisect_right(times, t0) - 1, bisect_left(times, t1)

    def _canonical(self, l: int, r: int) -> list[int]:
        l += self.size
        r += self.size
        out = []
        while l < r:
            if l & 1:
                out.append(l)
                l += 1
            if r & 1:
                r -= 1
                out.append(r)
            l >>= 1
            r >>= 1
        return out

    def add(self, t0: int, t1: int, y0: int, y1: int) -> None:
        l, r = self._slots(t0, t1)
        canonical = self._canonical(l, r)
        touched = set(canonical)
        for node in canonical:
            x = node >> 1
            while x and x not in touched:
                touched.add(x)
                x >>= 1
        for store, nodes in ((self.own, canonical), (self.sub, touched)):
            for node in nodes:
                s = store.get(node)
                if s is None:
                    s = store[node] = _Spans()
                s.new0.append(y0)
                s.new1.append(y1)

    def overlapping(self, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
        """Byte ranges ``(y0, y1)`` whose union is exactly the bytes occupied at some time in
        ``[t0, t1)``: one sorted run per tree node read (runs may overlap each other)."""
        l, r = self._slots(t0, t1)
        parts: list[_Spans] = []
        above: set[int] = set()
        for node in self._canonical(l, r):
            s = self.sub.get(node)
            if s is not None:
                parts.append(s)
            x = node >> 1
            while x and x not in above:
                above.add(x)
                x >>= 1
        for node in above:
            s = self.own.get(node)
            if s is not None:
                parts.append(s)
        if not parts:
            return _EMPTY, _EMPTY
        if len(parts) == 1:
            return parts[0].view()
        views = [s.view() for s in parts]
        return np.concatenate([v[0] for v in views]), np.concatenate([v[1] for v in views])


class Packer:
    def __new__(cls, problem: Problem) -> Packer:
        if cls is Packer and problem.concurrent:  # vector clocks: conflicts from the conflict graph
            return super().__new__(ConflictPacker)
        return super().__new__(cls)

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.capacity = {m.name: m.capacity for m in problem.memories}
        times = sorted({t for u in problem.units for p in u.pieces for t in p[:2]})
        self.index = {m: _TimeIndex(times) for m in problem.memory_names}
        self.placements: dict[str, Placement] = {}
        self.top = {m: 0 for m in problem.memory_names}

    def extent_fits(self, unit: Unit) -> str | None:
        """The fastest memory allowed to a unit that stores nothing whose capacity covers the unit's
        extent at its lowest legal offset (None: none does)."""
        return next((m for m in unit.memories
                     if (cap := self.capacity[m]) is None or unit.lowest_offset(m) + unit.high <= cap), None)

    def _free(self, unit: Unit, memory: str) -> tuple[np.ndarray, np.ndarray, int]:
        """Free root offsets ignoring capacity and alignment: bounded gaps ``[lo, hi]`` in
        increasing order, and the lowest offset of the unbounded region above everything."""
        lo = -unit.low
        forb_lo, forb_hi = [], []
        index = self.index[memory]
        for a, b, py0, py1 in unit.pieces:
            y0, y1 = index.overlapping(a, b)
            if len(y0):
                # collision iff y0 - py1 < o < y1 - py0: forbidden integers [y0-py1+1, y1-py0-1]
                forb_lo.append(y0 - (py1 - 1))
                forb_hi.append(y1 - (py0 + 1))
        return _free_offsets(lo, forb_lo, forb_hi)

    def free(self, unit: Unit, memory: str) -> list[tuple[int, int | None]]:
        """Closed ranges ``[lo, hi]`` of root offsets where ``unit`` collides with nothing
        (``hi`` None: unbounded), ignoring alignment; capacity and the unit's low edge applied."""
        glo, ghi, top_lo = self._free(unit, memory)
        out: list[tuple[int, int | None]] = list(zip(glo.tolist(), ghi.tolist()))
        out.append((top_lo, None))
        cap = self.capacity[memory]
        if cap is None:
            return out
        hi = cap - unit.high
        return [(a, hi if b is None else min(b, hi)) for a, b in out if a <= hi]

    def fit(self, unit: Unit, memory: str, policy: Policy = "first") -> int | None:
        """A legal root offset for ``unit`` in ``memory`` chosen by ``policy``, or None."""
        m, r = unit.modulus[memory]
        cap = self.capacity[memory]
        limit = None if cap is None else cap - unit.high  # highest root offset under the capacity
        if limit is not None and limit < -unit.low:
            return None
        glo, ghi, top_lo = self._free(unit, memory)
        if unit.fixed_offset is not None:
            f = unit.fixed_offset
            if limit is not None and f > limit:
                return None
            if f >= top_lo:
                return f
            i = int(np.searchsorted(glo, f, side="right")) - 1
            return f if i >= 0 and ghi[i] >= f else None
        otop = top_lo + (r - top_lo) % m
        top_ok = limit is None or otop <= limit
        o = glo + (r - glo) % m
        hi = ghi if limit is None else np.minimum(ghi, limit)
        ok = o <= hi
        if policy == "first":
            idx = np.flatnonzero(ok)
            if len(idx):
                return int(o[idx[0]])
            return otop if top_ok else None
        cand_o, cand_room = o[ok], (hi - glo)[ok]
        if policy == "heap" and top_ok:
            heap_top = self.top[memory] - unit.high  # XLA: the space up to the heap top is a hole too
            if otop <= heap_top:
                cand_o = np.append(cand_o, otop)
                cand_room = np.append(cand_room, heap_top - top_lo)
        if len(cand_o):
            return int(cand_o[int(np.argmin(cand_room))])  # tightest hole, lowest on ties
        return otop if top_ok else None  # the open region above everything

    def place(self, unit: Unit, memory: str, offset: int) -> None:
        for bid, rel in unit.members:
            self.placements[bid] = Placement(memory, offset + rel)
        index = self.index[memory]
        for a, b, y0, y1 in unit.pieces:
            index.add(a, b, offset + y0, offset + y1)
        if unit.pieces:
            self.top[memory] = max(self.top[memory], offset + unit.top)

    def place_first_memory(self, unit: Unit, policy: Policy = "first") -> bool:
        """Place ``unit`` in the fastest memory where it fits; False if none."""
        for memory in unit.memories:
            o = self.fit(unit, memory, policy)
            if o is not None:
                self.place(unit, memory, o)
                return True
        return False


def _free_offsets(lo: int, forb_lo: list[np.ndarray], forb_hi: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, int]:
    """Gaps ``[lo, hi]`` between the forbidden closed ranges of root offsets, and the lowest
    offset above them all (see ``Packer._free``)."""
    if not forb_lo:
        return _EMPTY, _EMPTY, lo
    flo = np.concatenate(forb_lo) if len(forb_lo) > 1 else forb_lo[0]
    fhi = np.concatenate(forb_hi) if len(forb_hi) > 1 else forb_hi[0]
    keep = fhi >= lo
    flo, fhi = flo[keep], fhi[keep]
    if len(flo) == 0:
        return _EMPTY, _EMPTY, lo
    order = np.argsort(flo, kind="stable")  # merges the index's sorted runs
    flo, reach = flo[order], np.maximum.accumulate(fhi[order])
    # the gap before forbidden run i spans from past everything before it to just below it
    gap_lo = np.empty(len(flo), np.int64)
    gap_lo[0] = lo
    np.maximum(reach[:-1] + 1, lo, out=gap_lo[1:])
    gap_hi = flo - 1
    ok = gap_hi >= gap_lo
    return gap_lo[ok], gap_hi[ok], max(lo, int(reach[-1]) + 1)


class ConflictPacker(Packer):
    """The Packer for vector clocks (``Problem.concurrent``): a unit collides with the placed
    units it conflicts with (``clock_graph(Problem)``: at the relative offsets where concurrent
    spans share a byte), not with those overlapping it on a time axis."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.capacity = {m.name: m.capacity for m in problem.memories}
        self.placements: dict[str, Placement] = {}
        self.top = {m: 0 for m in problem.memory_names}
        graph = clock_graph(problem)
        self.apart = graph.apart
        self.number = {r: i for i, r in enumerate(graph.roots)}
        self.at: dict[int, tuple[str, int]] = {}  # placed unit -> (memory, root offset)

    def _free(self, unit: Unit, memory: str) -> tuple[np.ndarray, np.ndarray, int]:
        lo = -unit.low
        forb: list[tuple[int, int]] = []
        for other, ranges in self.apart[self.number[unit.root]].items():
            where = self.at.get(other)
            if where is not None and where[0] == memory:
                forb.extend((where[1] + a, where[1] + b) for a, b in ranges)
        if not forb:
            return _EMPTY, _EMPTY, lo
        y = np.array(forb, np.int64)
        return _free_offsets(lo, [y[:, 0]], [y[:, 1]])

    def place(self, unit: Unit, memory: str, offset: int) -> None:
        for bid, rel in unit.members:
            self.placements[bid] = Placement(memory, offset + rel)
        if unit.pieces:
            self.at[self.number[unit.root]] = (memory, offset)
            self.top[memory] = max(self.top[memory], offset + unit.top)


class Pinned:
    """Units pinned to fixed offsets, for the allocators that lay bytes end to end (no reuse,
    recycling, shared objects): it places the pinned units in ``packer`` (they may share bytes
    over time with each other) and then finds, for any other unit, the lowest legal offset
    above a cursor that keeps clear of every pinned byte range."""

    def __init__(self, problem: Problem, packer: Packer) -> None:
        self.failed: str | None = None  # root of a pinned unit that collides with another
        self.ranges: dict[str, list[tuple[int, int]]] = {m: [] for m in problem.memory_names}
        for u in problem.units:
            if u.fixed_offset is None:
                continue
            if not packer.place_first_memory(u):
                self.failed = self.failed or u.root
                continue
            if u.pieces:
                memory = packer.placements[u.root].memory
                self.ranges[memory].append((u.fixed_offset + u.low, u.fixed_offset + u.high))
        for ranges in self.ranges.values():
            ranges.sort()
        self.longest = {m: max((b - a for a, b in r), default=0) for m, r in self.ranges.items()}

    def above(self, u: Unit, memory: str, cursor: int) -> int:
        """The lowest legal root offset putting ``u`` wholly at or above ``cursor`` and off
        the pinned ranges (a unit storing nothing: simply the lowest legal offset)."""
        if not u.pieces:
            return u.lowest_offset(memory)
        o = u.lowest_offset(memory, cursor - u.low)
        ranges = self.ranges[memory]
        i = bisect_left(ranges, (o + u.low - self.longest[memory],))  # earlier ranges end below us
        while i < len(ranges):
            f0, f1 = ranges[i]
            if f0 >= o + u.high:
                break
            if f1 > o + u.low:  # overlaps: hop above it
                o = u.lowest_offset(memory, f1 - u.low)
            i += 1
        return o


def fixed_first(units: Iterable[Unit]) -> list[Unit]:
    """Units with a fixed offset go first: they cannot move out of anyone's way."""
    units = list(units)
    return [u for u in units if u.fixed_offset is not None] + [u for u in units if u.fixed_offset is None]


def units_of(problem: Problem, order: Sequence[Unit] | Sequence[int] | np.ndarray) -> list[Unit]:
    """``order`` (units, or indices into ``problem.units`` as the ``orders`` give them) as units."""
    if len(order) and isinstance(order[0], Unit):
        return list(order)  # type: ignore[arg-type]
    units = problem.units
    return [units[i] for i in np.asarray(order, dtype=np.int64).tolist()]


def greedy(problem: Problem, order: Sequence[Unit] | Sequence[int] | np.ndarray, policy: Policy = "first") -> Result:
    """Place units in ``order`` (units or their indices; fixed ones first), each in the fastest
    memory where it fits.

    Runs the tree packer (``tree_packer.pack``), which places exactly as ``greedy_reference``;
    vector clocks (``Problem.concurrent``) go to the reference's ``ConflictPacker``, and so does
    everything while the kernels are not compiled under a time limit (``optplan.core.jit``)."""
    _, plan = greedy_scored(problem, order, policy)
    assert plan is not None  # nothing to beat: never stopped
    return plan()


def greedy_scored(problem: Problem, order: Sequence[Unit] | Sequence[int] | np.ndarray, policy: Policy = "first",
                  objective: Objective | None = None,
                  beat: float = float("inf")) -> tuple[float, Callable[[], Result] | None]:
    """``greedy``'s plan as its ``score`` and the plan on demand: heuristics that keep the best of
    several passes build the placements (a dict of a million entries at scale) of one only.

    ``beat``: the value of the best pass so far. When the value is the weighted peaks alone (one
    memory, or benefit not counted), the pass stops as soon as the peaks reach it: the answer is
    then ``beat`` itself (a bound: this pass could not be better) and None for the plan."""
    if problem.concurrent or not kernels.ready(problem.unit_count):
        result = greedy_reference(problem, order, policy)
        return score(problem, result.placements, objective), lambda: result
    objective = Objective.parse(objective, problem)
    idx = indices(problem, order)
    if beat < float("inf") and (len(problem.memories) == 1 or not objective.counts_benefit):
        packed = pack_below(problem, idx, policy, objective.weights(problem), int(beat))
        if packed is None:
            return beat, None
        off, where, failed = packed
    else:
        off, where, failed = pack(problem, idx, policy)
    if failed is not None:
        message = f"could not place buffer {failed.root!r} in any memory it may use"
        return float("inf"), lambda: Result(None, message=message)
    value = plan_value(problem, off, where, objective)
    return value, lambda: Result(unit_placements(problem, off, where))


def greedy_reference(problem: Problem, order: Sequence[Unit] | Sequence[int] | np.ndarray, policy: Policy = "first") -> Result:
    """``greedy`` with the pure-Python ``Packer``: the readable reference the compiled one is tested
    against. It polls the running planner's deadline (``cut`` when it runs out)."""
    packer = Packer(problem)
    deadline = current()
    units = fixed_first(units_of(problem, order))
    for k, unit in enumerate(units):
        if k and k % POLL_EVERY == 0 and deadline.expired():
            return cut(f"placing {k} of {len(units)} units", deadline)
        if not packer.place_first_memory(unit, policy):
            return Result(None, message=f"could not place buffer {unit.root!r} in any memory it may use")
    return Result(packer.placements)


def score(problem: Problem, placements: Mapping[str, Placement] | None, objective: Objective | None = None) -> float:
    """The value of a plan under ``objective`` (the problem's default if None; inf for no plan):
    what heuristics that try several plans keep the best by."""
    return float("inf") if placements is None else Objective.parse(objective, problem).value(problem, placements)
