"""ExecuTorch 1.5's banked greedy (``exir.banked_memory_planning.BankedGreedy``), as a named
baseline for memory hierarchies. Described and re-implemented in our own words.

ExecuTorch's greedy packs buffers into *shared objects*: buffers by decreasing size; each goes,
at offset 0, into the first object (in creation order) that is large enough and none of whose
buffers is alive with it; failing that, into the first object with room above the highest
buffer alive with it; failing that, into a new object of its own size. Objects are laid end to
end, so a bank's size is the sum of its objects. The banked version offers every buffer to the
banks fastest first: a bank takes it if an existing object holds it for free, or if a new
object still fits under the bank's capacity; otherwise the next bank is tried. With one bank
this is ExecuTorch's plain greedy.

Our additions for the Problem model: units (a buffer and its relative members) move as one,
a unit's offset must meet its alignment in the object it joins, and units pinned to fixed
offsets keep their bytes (objects are laid out around them). Ties in size go in reverse
problem order, as ExecuTorch's insertion sort followed by a reversal leaves them.

Vector clocks: "alive with it" is "conflicts with it" (``clock_graph(Problem)``), and a unit
reaches its whole extent in its object (``_ClockBank``).

Speed: which objects hold a buffer alive with a new one, and how high they reach, comes from
one time-index query per bank: each object owns a band of the index's byte axis (object k's
buffers at ``k * band + offset``), so the answer is per-object maxima of a short list instead
of a scan over every object's buffers.
"""

from __future__ import annotations

import numpy as np

from optplan.core.clocks import clock_graph
from optplan.core.deadline import current
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.heuristics import kernels
from optplan.heuristics.arrays import placements as unit_placements
from optplan.heuristics.packer import Packer, Pinned, _TimeIndex
from optplan.heuristics.skyline import banked
from optplan.registry import POLL_EVERY, Result, cut, planner


def _choose(base: np.ndarray, size: np.ndarray, busy: np.ndarray, reach: np.ndarray, u: Unit, memory: str) -> int | None:
    """ExecuTorch's two rules, given which objects hold a unit alive with ``u`` (``busy``) and how
    high the highest reaches above the object's base (``reach``): the root offset of ``u``, or None."""
    m, r = u.modulus[memory]
    # 1) the first object large enough with nobody alive in it: offset 0
    ok = ~busy & (size >= u.height) & ((base - u.low - r) % m == 0)
    hit = np.flatnonzero(ok)
    if len(hit):
        return int(base[hit[0]] - u.low)
    # 2) the first object with room above everything alive in it (aligned)
    x = base + reach - u.low
    root = x + (r - x) % m
    ok = busy & (reach > 0) & (root + u.high <= base + size)
    hit = np.flatnonzero(ok)
    return int(root[hit[0]]) if len(hit) else None


class _Bank:
    """The shared objects of one memory."""

    def __init__(self, times: list[int], band: int) -> None:
        self.index = _TimeIndex(times)
        self.band = band
        self.base: list[int] = []  # lowest byte of each object
        self.size: list[int] = []

    def reuse(self, u: Unit, memory: str) -> int | None:
        """The root offset of ``u`` inside an existing object, ExecuTorch's way, or None."""
        if not self.base:
            return None
        reach = np.zeros(len(self.base), np.int64)  # highest byte of an object alive with u, relative
        busy = np.zeros(len(self.base), bool)
        for a, b, _, _ in u.pieces:
            y0, y1 = self.index.overlapping(a, b)
            if len(y0):
                obj = y0 // self.band
                busy[obj] = True
                np.maximum.at(reach, obj, y1 - obj * self.band)
        return _choose(np.array(self.base, np.int64), np.array(self.size, np.int64), busy, reach, u, memory)

    def record(self, u: Unit, root: int) -> None:
        """Note ``u`` at ``root`` inside the object that holds its bytes."""
        k = int(np.searchsorted(np.array(self.base, np.int64), root + u.low, side="right")) - 1
        shift = k * self.band - self.base[k]
        for a, b, y0, y1 in u.pieces:
            self.index.add(a, b, root + y0 + shift, root + y1 + shift)


class _ClockBank(_Bank):
    """The shared objects of one memory under vector clocks: a unit is alive with ``u`` when they
    conflict (``clock_graph(Problem)``); the height it reaches in its object is its whole extent."""

    def __init__(self, problem: Problem) -> None:
        graph = clock_graph(problem)
        self.apart = graph.apart
        self.number = {r: i for i, r in enumerate(graph.roots)}
        self.holds: dict[int, tuple[int, int]] = {}  # unit -> (object, one past its highest byte)
        self.base, self.size = [], []

    def reuse(self, u: Unit, memory: str) -> int | None:
        if not self.base:
            return None
        reach = np.zeros(len(self.base), np.int64)
        busy = np.zeros(len(self.base), bool)
        for other in self.apart[self.number[u.root]]:
            held = self.holds.get(other)
            if held is not None:
                k, top = held
                busy[k] = True
                reach[k] = max(reach[k], top - self.base[k])
        return _choose(np.array(self.base, np.int64), np.array(self.size, np.int64), busy, reach, u, memory)

    def record(self, u: Unit, root: int) -> None:
        k = int(np.searchsorted(np.array(self.base, np.int64), root + u.low, side="right")) - 1
        self.holds[self.number[u.root]] = (k, root + u.high)


@planner("banked-greedy", clocks=True)
def banked_greedy(problem: Problem) -> Result:
    """Decreasing size; each unit reuses an object of the fastest bank that holds it for free,
    else opens a new object in the fastest bank with room; stats: objects per memory.

    Runs the banked packer's kernels (``skyline.banked``, same plans) unless some unit is pinned
    to a fixed offset or lifetimes are vector clocks: those problems, and any while the kernels
    are not compiled under a time limit, take the pure-Python reference below."""
    if not problem.concurrent and all(u.fixed_offset is None for u in problem.units) and kernels.ready(problem.unit_count):
        off, where, failed, nobj = banked(problem)
        if failed is not None:
            why = ("no memory has room for its extent" if not failed.pieces else
                   "no bank holds it in an existing object or has room for a new one")
            return Result(None, message=f"could not place buffer {failed.root!r}: {why}")
        return Result(unit_placements(problem, off, where),
                      stats={"objects": {m: int(c) for m, c in zip(problem.memory_names, nobj)}})
    return banked_greedy_reference(problem)


def banked_greedy_reference(problem: Problem) -> Result:
    """``banked_greedy`` in pure Python with pinned units or vector clocks: the readable reference
    (it polls the running planner's deadline)."""
    deadline = current()
    packer = Packer(problem)
    pinned = Pinned(problem, packer)
    if pinned.failed:
        return Result(None, message=f"could not place buffer {pinned.failed!r} at its fixed offset")
    banks: dict[str, _Bank]
    if problem.concurrent:
        banks = {m: _ClockBank(problem) for m in problem.memory_names}
    else:
        times = sorted({t for u in problem.units for p in u.pieces for t in p[:2]})
        band = 2 * max((u.height for u in problem.units), default=0) + 1
        banks = {m: _Bank(times, band) for m in problem.memory_names}
    cursor = {m: 0 for m in problem.memory_names}
    placements = packer.placements
    units = [u for u in problem.units if u.fixed_offset is None]
    order = sorted(range(len(units)), key=lambda i: (-units[i].height, -i))
    for k, i in enumerate(order):
        if k and k % POLL_EVERY == 0 and deadline.expired():
            return cut(f"placing {k} of {len(order)} units", deadline)
        u = units[i]
        if not u.pieces:  # stores nothing: the lowest legal offset of the fastest memory that allows it
            memory = packer.extent_fits(u)
            if memory is None:
                return Result(None, message=f"could not place buffer {u.root!r}: no memory has room for its extent")
            for bid, rel in u.members:
                placements[bid] = Placement(memory, u.lowest_offset(memory) + rel)
            continue
        for memory in u.memories:
            bank = banks[memory]
            root = bank.reuse(u, memory)
            if root is None:  # a new object, if the bank has room for it
                root = pinned.above(u, memory, cursor[memory])
                cap = packer.capacity[memory]
                if cap is not None and root + u.high > cap:
                    continue
                bank.base.append(root + u.low)
                bank.size.append(u.height)
                cursor[memory] = root + u.high
            bank.record(u, root)
            for bid, rel in u.members:
                placements[bid] = Placement(memory, root + rel)
            break
        else:
            return Result(None, message=f"could not place buffer {u.root!r}: no bank holds it in an existing object or has room for a new one")
    return Result(placements, stats={"objects": {m: len(b.base) for m, b in banks.items()}})
