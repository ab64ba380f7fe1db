"""Buffer recycling without offsets (Caffe2's memonger): the "share buffers, no offsets" baseline.

Walk units in execution order; a unit reuses a slot (a kept buffer) whose last user has ended
and that is large enough (the smallest such), else a new slot is kept. The cost is the sum of
the distinct slots kept. To give the validator offsets, slots are laid end to end in each
memory in the order they are created (hopping over units pinned to fixed offsets), and a unit
recycling a slot takes its offset. Memories are tried fastest first; a new slot must fit under
the capacity. Pinned units keep their own bytes.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from dataclasses import dataclass

from optplan.heuristics.orders import by_start
from optplan.heuristics.packer import Packer, Pinned
from optplan.plan import Placement
from optplan.planners import Result, planner
from optplan.problem import Problem, Unit


@dataclass
class _Slot:
    memory: str
    base: int  # lowest byte of the slot
    size: int


@planner("recycle")
def recycle(problem: Problem) -> Result:
    """Execution order; reuse the smallest freed slot that is large enough and lets the unit keep
    its alignment, else keep a new slot; stats report the bytes kept per memory."""
    packer = Packer(problem)
    pinned = Pinned(problem, packer)
    if pinned.failed:
        return Result(None, message=f"could not place buffer {pinned.failed!r} at its fixed offset")
    cursor = {m: 0 for m in problem.memory_names}
    kept = {m: 0 for m in problem.memory_names}
    busy: list[tuple[int, int, _Slot]] = []  # (end, tie, slot) of slots in use
    free: dict[str, list[tuple[int, int, _Slot]]] = {m: [] for m in problem.memory_names}  # (size, tie, slot)
    placements = packer.placements

    def put(u: Unit, memory: str, root: int) -> None:
        for bid, rel in u.members:
            placements[bid] = Placement(memory, root + rel)

    for n, u in enumerate(by_start(problem)):
        if u.fixed_offset is not None:
            continue
        if not u.pieces:  # nothing to store: the lowest legal offset
            memory = packer.extent_fits(u)
            if memory is None:
                return Result(None, message=f"could not place buffer {u.root!r}: no memory has room for its extent")
            put(u, memory, u.lowest_offset(memory))
            continue
        while busy and busy[0][0] <= u.start:  # slots whose user has ended return to the free lists
            _, tie, freed = heapq.heappop(busy)
            insort(free[freed.memory], (freed.size, tie, freed))
        placed = False
        for memory in u.memories:
            m, r = u.modulus[memory]
            pool = free[memory]
            i = bisect_left(pool, (u.height,))
            slot: _Slot | None = None
            while i < len(pool):  # smallest adequate slot where the unit's root lands aligned
                slot = pool[i][2]
                if (slot.base - u.low - r) % m == 0:
                    del pool[i]
                    break
                i += 1
            else:
                slot = None
            if slot is None:
                o = pinned.above(u, memory, cursor[memory])
                cap = packer.capacity[memory]
                if cap is not None and o + u.high > cap:
                    continue
                slot = _Slot(memory, o + u.low, u.height)
                cursor[memory] = o + u.high
                kept[memory] += u.height
            put(u, memory, slot.base - u.low)
            heapq.heappush(busy, (u.end, n, slot))
            placed = True
            break
        if not placed:
            return Result(None, message=f"could not place buffer {u.root!r}: no free slot fits and no memory has room for a new one")
    return Result(placements, stats={"kept_bytes": kept})
