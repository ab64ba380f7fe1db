"""The shared placement engine of the greedy heuristics.

A Packer holds what is placed so far in each memory as absolute rectangles
(time x bytes). For a unit (a buffer plus everything placed relative to it) it computes the
root offsets that collide with nothing, then a policy picks one: the lowest (first fit) or the
one in the tightest hole (best fit). ``greedy`` walks units in a given order, fastest memory
first, which is what most production heuristics are, differing only in the order and policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np

from optplan.plan import Placement
from optplan.planners import Result
from optplan.problem import Problem, Unit

Policy = Literal["first", "best"]


class _Rects:
    """Growable arrays of placed rectangles in one memory."""

    def __init__(self) -> None:
        self.n = 0
        self.a = np.zeros((4, 64), np.int64)  # rows: t0, t1, y0, y1

    def add(self, t0: int, t1: int, y0: int, y1: int) -> None:
        if self.n == self.a.shape[1]:
            self.a = np.concatenate([self.a, np.zeros_like(self.a)], axis=1)
        self.a[:, self.n] = (t0, t1, y0, y1)
        self.n += 1


class Packer:
    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.capacity = {m.name: m.capacity for m in problem.memories}
        self.rects = {m: _Rects() for m in problem.memory_names}
        self.placements: dict[str, Placement] = {}
        self.top = {m: 0 for m in problem.memory_names}

    def free(self, unit: Unit, memory: str) -> list[tuple[int, int | None]]:
        """Closed ranges ``[lo, hi]`` of root offsets where ``unit`` collides with nothing
        (``hi`` None: unbounded), ignoring alignment; capacity and the unit's low edge applied."""
        lo = -unit.low
        cap = self.capacity[memory]
        hi = None if cap is None else cap - unit.high
        if hi is not None and hi < lo:
            return []
        r = self.rects[memory]
        forb_lo, forb_hi = [], []
        if r.n:
            t0, t1, y0, y1 = r.a[:, : r.n]
            for a, b, py0, py1 in unit.pieces:
                hit = (t0 < b) & (a < t1)
                # collision iff y0 - py1 < o < y1 - py0: forbidden integers [y0-py1+1, y1-py0-1]
                forb_lo.append(y0[hit] - py1 + 1)
                forb_hi.append(y1[hit] - py0 - 1)
        flo = np.concatenate(forb_lo) if forb_lo else np.zeros(0, np.int64)
        if len(flo) == 0:
            return [(lo, hi)]
        fhi = np.concatenate(forb_hi)
        order = np.argsort(flo, kind="stable")
        flo, reach = flo[order], np.maximum.accumulate(fhi[order])
        # the gap before forbidden run i spans from past everything before it to just below it
        gap_lo = np.concatenate([[lo], np.maximum(reach[:-1] + 1, lo)])
        gap_hi = flo - 1
        ok = gap_hi >= gap_lo
        out: list[tuple[int, int | None]] = [(int(a), int(b)) for a, b in zip(gap_lo[ok], gap_hi[ok])]
        out.append((max(lo, int(reach[-1]) + 1), None))
        if hi is not None:
            out = [(a, hi if b is None else min(b, hi)) for a, b in out if a <= hi]
        return out

    def fit(self, unit: Unit, memory: str, policy: Policy = "first") -> int | None:
        """A legal root offset for ``unit`` in ``memory`` chosen by ``policy``, or None."""
        m, r = unit.modulus[memory]
        best, best_room = None, None
        for lo, hi in self.free(unit, memory):
            o = lo + (r - lo) % m
            if hi is not None and o > hi:
                continue
            if unit.fixed_offset is not None:
                if o <= unit.fixed_offset and (hi is None or unit.fixed_offset <= hi):
                    return unit.fixed_offset
                continue
            if policy == "first":
                return o
            room = None if hi is None else hi - lo
            if best is None or (room is not None and (best_room is None or room < best_room)):
                best, best_room = o, room
        return best

    def place(self, unit: Unit, memory: str, offset: int) -> None:
        for bid, rel in unit.members:
            self.placements[bid] = Placement(memory, offset + rel)
        for a, b, y0, y1 in unit.pieces:
            self.rects[memory].add(a, b, offset + y0, offset + y1)
            self.top[memory] = max(self.top[memory], offset + y1)

    def place_first_memory(self, unit: Unit, policy: Policy = "first") -> bool:
        """Place ``unit`` in the fastest memory where it fits; False if none."""
        for memory in unit.memories:
            o = self.fit(unit, memory, policy)
            if o is not None:
                self.place(unit, memory, o)
                return True
        return False


def fixed_first(units: Iterable[Unit]) -> list[Unit]:
    """Units with a fixed offset go first: they cannot move out of anyone's way."""
    units = list(units)
    return [u for u in units if u.fixed_offset is not None] + [u for u in units if u.fixed_offset is None]


def greedy(problem: Problem, order: Sequence[Unit], policy: Policy = "first") -> Result:
    """Place units in ``order`` (fixed ones first), each in the fastest memory where it fits."""
    packer = Packer(problem)
    for unit in fixed_first(order):
        if not packer.place_first_memory(unit, policy):
            return Result(None, message=f"could not place buffer {unit.root!r} in any memory it may use")
    return Result(packer.placements)
