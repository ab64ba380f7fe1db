"""No reuse: every buffer gets bytes of its own (the baseline every other planner must beat).

A bump allocator per memory, fastest memory first: each unit goes at the next legal offset
above everything placed before it in that memory, hopping over units pinned to fixed offsets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from optplan.core.buffer import INT64_MAX
from optplan.core.plan import Layout, Placement
from optplan.core.problem import Problem
from optplan.heuristics.packer import Packer, Pinned
from optplan.registry import Result, planner


@planner("naive", clocks=True)
def naive(problem: Problem) -> Result:
    """Units in problem order, stacked end to end in the fastest memory with room."""
    return stack_plain(problem) if problem.columns.plain and len(problem.memories) == 1 else stack(problem)


def _no_room(bid: str) -> Result:
    return Result(None, message=f"could not place buffer {bid!r}: no memory it may use has room without reuse")


def stack(problem: Problem) -> Result:
    """The stack, unit by unit (any problem)."""
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
            return _no_room(u.root)
    return Result(packer.placements)


def stack_plain(problem: Problem) -> Result:
    """``stack`` of a one-memory problem of plain buffers (``Columns.plain``: nothing pinned, a
    unit per buffer) from its columns, as arrays (``Layout``): no Placement, no Unit per buffer
    (idealloc/S_1: 0.2 CPU s less)."""
    cols, memory = problem.columns, problem.memories[0]
    limit = INT64_MAX if memory.capacity is None else memory.capacity
    modulus: Mapping[int, int] = {a: math.lcm(a, memory.alignment) for a in set(cols.alignment.tolist())}
    offset = np.zeros(len(cols.ids), np.int64)  # a buffer storing nothing: at 0, its lowest legal offset
    cursor = 0
    for k, (size, align) in enumerate(zip(cols.size.tolist(), cols.alignment.tolist())):
        if size:
            o = cursor + (-cursor) % modulus[align]
            if o + size > limit:
                return _no_room(cols.ids[k])
            offset[k] = cursor = o
            cursor += size
    return Result(Layout(cols.ids, (memory.name,), np.zeros(len(cols.ids), np.int64), offset))
