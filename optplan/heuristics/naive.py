"""No reuse: every buffer gets bytes of its own (the baseline every other planner must beat).

A bump allocator per memory, fastest memory first: each unit goes at the next legal offset
above everything placed before it in that memory, hopping over units pinned to fixed offsets.
"""

from __future__ import annotations

from optplan.heuristics.packer import Packer, Pinned
from optplan.plan import Placement
from optplan.planners import Result, planner
from optplan.problem import INT64_MAX, Problem


@planner("naive", clocks=True)
def naive(problem: Problem) -> Result:
    """Units in problem order, stacked end to end in the fastest memory with room."""
    packer = Packer(problem)
    pinned = Pinned(problem, packer)
    if pinned.failed:
        return Result(None, message=f"could not place buffer {pinned.failed!r} at its fixed offset")
    cursor = {m: 0 for m in problem.memory_names}
    for u in problem.units:
        if u.fixed_offset is not None:
            continue
        for memory in u.memories:
            o = pinned.above(u, memory, cursor[memory])
            cap = packer.capacity[memory]
            if o + u.high <= (INT64_MAX if cap is None else cap):  # stacking may pass what int64 holds
                for bid, rel in u.members:
                    packer.placements[bid] = Placement(memory, o + rel)
                if u.pieces:
                    cursor[memory] = max(cursor[memory], o + u.high)
                break
        else:
            return Result(None, message=f"could not place buffer {u.root!r}: no memory it may use has room without reuse")
    return Result(packer.placements)
