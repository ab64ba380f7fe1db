"""Buffer recycling without offsets (Caffe2's memonger): the "share buffers, no offsets" baseline.

Walk units in execution order; a unit reuses a slot (a kept buffer) whose last user has ended
and that is large enough (the smallest such), else a new slot is kept. The cost is the sum of
the distinct slots kept. To give the validator offsets, slots are laid end to end in each
memory in the order they are created (hopping over units pinned to fixed offsets), and a unit
recycling a slot takes its offset. Memories are tried fastest first; a new slot must fit under
the capacity. Pinned units keep their own bytes.

Vector clocks (several streams) are memonger's DAG case: a slot is free for a unit when its
last user happens before the unit in every stream (``ClockGraph.first``/``last``: a whole unit,
gaps and relative members included), so the users of a slot form a chain of the partial order;
execution order is then any linear extension (the sum of a clock's components is one).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass

from optplan.core.clocks import clock_graph
from optplan.core.deadline import current
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.heuristics import kernels
from optplan.heuristics.arrays import placements as unit_placements
from optplan.heuristics.orders import by_start
from optplan.heuristics.packer import Packer, Pinned, units_of
from optplan.heuristics.recycle_heap import recycle as recycle_kernel
from optplan.registry import POLL_EVERY, Result, cut, planner


@dataclass(eq=False)
class _Slot:
    memory: str
    base: int  # lowest byte of the slot
    size: int
    last: tuple[int, ...] = ()  # vector clocks: where its latest user ends


def _aligned(pool: list[tuple[int, int, _Slot]], u: Unit, memory: str,
             free: Callable[[_Slot], bool] | None = None) -> int | None:
    """Index in ``pool`` (sorted by size) of the smallest slot that holds ``u``, lets its root land
    aligned and is ``free`` for it (None: every slot in ``pool`` is); None if none."""
    m, r = u.modulus[memory]
    i = bisect_left(pool, (u.height,))
    while i < len(pool):
        slot = pool[i][2]
        if (slot.base - u.low - r) % m == 0 and (free is None or free(slot)):
            return i
        i += 1
    return None


class _Timeline:
    """Scalar lifetimes: slots in use wait in a heap by their user's end and return to per-memory
    free lists (by size) when a later unit starts."""

    def __init__(self, problem: Problem) -> None:
        self.busy: list[tuple[int, int, _Slot]] = []  # (end, tie, slot) of slots in use
        self.free: dict[str, list[tuple[int, int, _Slot]]] = {m: [] for m in problem.memory_names}  # (size, tie, slot)

    def take(self, u: Unit, memory: str) -> _Slot | None:
        while self.busy and self.busy[0][0] <= u.start:  # slots whose user has ended return to the free lists
            _, tie, freed = heapq.heappop(self.busy)
            insort(self.free[freed.memory], (freed.size, tie, freed))
        pool = self.free[memory]
        i = _aligned(pool, u, memory)
        return None if i is None else pool.pop(i)[2]

    def hold(self, slot: _Slot, u: Unit, n: int, new: bool) -> None:
        heapq.heappush(self.busy, (u.end, n, slot))


class _Clocks:
    """Vector clocks: every slot stays in its memory's list (by size) with the clock at which its
    latest user ends; it is free for a unit that starts after that clock in every stream."""

    def __init__(self, problem: Problem) -> None:
        graph = clock_graph(problem)
        self.first = dict(zip(graph.roots, graph.first))
        self.last = dict(zip(graph.roots, graph.last))
        self.slots: dict[str, list[tuple[int, int, _Slot]]] = {m: [] for m in problem.memory_names}

    def take(self, u: Unit, memory: str) -> _Slot | None:
        start = self.first[u.root]
        pool = self.slots[memory]
        i = _aligned(pool, u, memory, lambda slot: all(a <= b for a, b in zip(slot.last, start)))
        return None if i is None else pool[i][2]

    def hold(self, slot: _Slot, u: Unit, n: int, new: bool) -> None:
        slot.last = self.last[u.root]
        if new:
            insort(self.slots[slot.memory], (slot.size, n, slot))


@planner("recycle", clocks=True)
def recycle(problem: Problem) -> Result:
    """Execution order; reuse the smallest freed slot that is large enough and lets the unit keep
    its alignment, else keep a new slot; stats report the bytes kept per memory.

    Runs the recycle heap's kernels (``recycle_heap.recycle``, same plans) unless some unit is
    pinned to a fixed offset or lifetimes are vector clocks: those problems, and any while the
    kernels are not compiled under a time limit (``optplan.core.jit``), take the pure-Python
    reference below."""
    if not problem.concurrent and all(u.fixed_offset is None for u in problem.units) and kernels.ready(problem.unit_count):
        off, where, kept, failed, why = recycle_kernel(problem, by_start(problem))
        if failed is not None:
            reason = "no memory has room for its extent" if why == 0 else "no free slot fits and no memory has room for a new one"
            return Result(None, message=f"could not place buffer {failed.root!r}: {reason}")
        return Result(unit_placements(problem, off, where),
                      stats={"kept_bytes": {m: int(k) for m, k in zip(problem.memory_names, kept)}})
    return recycle_reference(problem)


def recycle_reference(problem: Problem) -> Result:
    """``recycle`` in pure Python with pinned units or vector clocks: the readable reference (it
    polls the running planner's deadline)."""
    deadline = current()
    packer = Packer(problem)
    pinned = Pinned(problem, packer)
    if pinned.failed:
        return Result(None, message=f"could not place buffer {pinned.failed!r} at its fixed offset")
    cursor = {m: 0 for m in problem.memory_names}
    kept = {m: 0 for m in problem.memory_names}
    slots = _Clocks(problem) if problem.concurrent else _Timeline(problem)
    placements = packer.placements

    def put(u: Unit, memory: str, root: int) -> None:
        for bid, rel in u.members:
            placements[bid] = Placement(memory, root + rel)

    for n, u in enumerate(units_of(problem, by_start(problem))):
        if n and n % POLL_EVERY == 0 and deadline.expired():
            return cut(f"placing {n} of {len(problem.units)} units", deadline)
        if u.fixed_offset is not None:
            continue
        if not u.pieces:  # nothing to store: the lowest legal offset
            memory = packer.extent_fits(u)
            if memory is None:
                return Result(None, message=f"could not place buffer {u.root!r}: no memory has room for its extent")
            put(u, memory, u.lowest_offset(memory))
            continue
        for memory in u.memories:
            slot = slots.take(u, memory)
            new = slot is None
            if slot is None:
                o = pinned.above(u, memory, cursor[memory])
                cap = packer.capacity[memory]
                if cap is not None and o + u.high > cap:
                    continue
                slot = _Slot(memory, o + u.low, u.height)
                cursor[memory] = o + u.high
                kept[memory] += u.height
            put(u, memory, slot.base - u.low)
            slots.hold(slot, u, n, new)
            break
        else:
            return Result(None, message=f"could not place buffer {u.root!r}: no free slot fits and no memory has room for a new one")
    return Result(placements, stats={"kept_bytes": kept})
