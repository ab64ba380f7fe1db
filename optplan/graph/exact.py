"""The order with the lowest peak live load, exactly, by a search over the sets of ops already run.

The bytes live at an op's step depend only on the set ``S`` of ops run before it (a tensor is live
when its producer has run and a reader has not, or it is a graph output), so the least peak over
all orders is a bottleneck path from the empty set to all ops in the lattice of such sets (the
dynamic program of Serenity, Ahn et al. 2020, over zero-indegree sets). It runs per segment
between articulation ops (``Relations.segments``): what is live inside a segment does not depend on
the order of the others. Best-first (Dijkstra on the largest step so far): the first full set
reached is optimal; stopped by its state budget, the least open key is still a lower bound on the
segment's optimum. A beam over the same states (the best ``width`` sets of each size) gives
good orders where the exact search runs out of budget.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from optplan.graph.loads import Relations, bits
from optplan.graph.model import Structure


@dataclass(frozen=True)
class SegmentOrder:
    """An order of a segment's ops, its peak live load, and a proven lower bound on the least
    peak any order of the segment reaches (``exact``: equal to the peak)."""

    order: list[int]
    peak: int
    bound: int

    @property
    def exact(self) -> bool:
        return self.bound >= self.peak


class Segment:
    """One segment's ops as local bit positions, with what running each op allocates, keeps
    and frees; states are bit masks of the ops run."""

    def __init__(self, st: Structure, rel: Relations, ops: Sequence[int], reuse: bool = True) -> None:
        self.ops = list(ops)
        local = {k: j for j, k in enumerate(self.ops)}
        seg = sum(1 << k for k in self.ops)
        done = 0
        for k in self.ops:
            done |= rel.before[k]
        done &= ~seg  # every op before the segment is an ancestor of its ops
        self.first_step = done == 0
        self.full = (1 << len(self.ops)) - 1
        self.pred = [sum(1 << local[p] for p in st.preds[k] if p in local) for k in self.ops]
        self.succ = [[local[s] for s in st.succs[k] if s in local] for k in self.ops]
        self.start, self.step0 = 0, 0
        self.alloc = [sum(st.size[y] for y in st.writes[k]) for k in self.ops]
        self.keep = [0] * len(self.ops)
        self.frees: list[list[tuple[int, int]]] = [[] for _ in self.ops]  # (other readers' mask, bytes)
        self.saves: list[list[tuple[int, int]]] = [[] for _ in self.ops]
        self._tensors(st, local, done, seg, reuse)

    def _tensors(self, st: Structure, local: dict[int, int], done: int, seg: int, reuse: bool) -> None:
        for t, size in enumerate(st.size):
            p = st.producer[t]
            inside = p >= 0 and seg >> p & 1
            before = p < 0 or done >> p & 1
            readers = [local[c] for c in st.consumers[t] if c in local]
            if not (inside or before):
                continue  # produced after the segment
            stays = st.output[t] or any(not (seg >> c & 1) and not (done >> c & 1) for c in st.consumers[t])
            if before:
                if readers or stays:
                    self.start += size  # live when the segment starts
                elif p < 0 and not st.consumers[t] and self.first_step:
                    self.step0 += size  # an input nobody reads: live at step 0 only
                if not readers or stays:
                    continue
            elif readers or stays:
                self.keep[local[p]] += size
            if stays:
                continue
            mask = sum(1 << j for j in readers)
            for j in readers:
                self.frees[j].append((mask & ~(1 << j), size))
        if reuse:
            for k in self.ops:
                best: dict[int, int] = {}
                for y, x in st.reuse[k]:
                    best[x] = max(best.get(x, 0), st.size[y])
                for x, saved in best.items():
                    mask = sum(1 << local[c] for c in st.consumers[x] if c in local)
                    self.saves[local[k]].append((mask & ~(1 << local[k]), saved))

    def ready(self) -> int:
        return sum(1 << j for j, p in enumerate(self.pred) if p == 0)

    def run(self, state: int, held: int, ready: int, j: int) -> tuple[int, int, int, int]:
        """Run local op ``j`` after ``state``: (the bytes live at its step, the new state, the
        bytes held after it, the ops ready then)."""
        load = held + self.alloc[j]
        for m, b in self.saves[j]:
            if not m & ~state:
                load -= b
        if not state:
            load += self.step0
        after = held + self.keep[j]
        for m, b in self.frees[j]:
            if not m & ~state:
                after -= b
        bit = 1 << j
        new = state | bit
        nxt = ready & ~bit
        for s in self.succ[j]:
            if not self.pred[s] & ~new:
                nxt |= 1 << s
        return load, new, after, nxt


def best_first(seg: Segment, upper: int | None, max_states: int, stop: Callable[[], bool]) -> SegmentOrder | None:
    """The segment's least-peak order, or None if no order beats ``upper`` (which is then
    optimal). Past ``max_states`` states or once ``stop()`` holds it raises Unfinished."""
    ceiling = upper if upper is not None else 1 << 62
    best = {0: 0}
    parent: dict[int, tuple[int, int]] = {}
    heap = [(0, 0, seg.start, 0, seg.ready())]
    pops = 0
    while heap:
        peak, _, held, state, ready = heapq.heappop(heap)
        if state == seg.full:
            return SegmentOrder(_path(seg, parent, state), peak, peak)
        if peak > best.get(state, ceiling):
            continue
        pops += 1
        if len(best) > max_states or (pops & 255 == 0 and stop()):
            raise Unfinished(min(peak, ceiling))  # popped in order: no open key is lower
        for j in bits(ready):
            load, new, after, nxt = seg.run(state, held, ready, j)
            top = max(peak, load)
            if top < ceiling and top < best.get(new, ceiling + 1):
                best[new] = top
                parent[new] = (state, j)
                heapq.heappush(heap, (top, -new.bit_count(), after, new, nxt))
    return None


class Unfinished(Exception):
    """The exact search stopped early; ``bound``: its proven lower bound on the segment's peak."""

    def __init__(self, bound: int) -> None:
        super().__init__(bound)
        self.bound = bound


def _path(seg: Segment, parent: dict[int, tuple[int, int]], state: int) -> list[int]:
    out = []
    while state:
        state, j = parent[state]
        out.append(seg.ops[j])
    return out[::-1]


def beam(seg: Segment, width: int, stop: Callable[[], bool]) -> SegmentOrder | None:
    """A good order: the ``width`` best sets of each size (least peak so far, then fewest bytes
    held), extended one op at a time. None if ``stop()`` ends it first."""
    layer = {0: (0, seg.start, seg.ready(), ())}
    for _ in range(len(seg.ops)):
        if stop():
            return None
        nxt: dict[int, tuple[int, int, int, tuple]] = {}
        for state, (peak, held, ready, path) in layer.items():
            for j in bits(ready):
                load, new, after, rdy = seg.run(state, held, ready, j)
                cand = (max(peak, load), after, rdy, (path, j))
                old = nxt.get(new)
                if old is None or cand[:2] < old[:2]:
                    nxt[new] = cand
        layer = dict(sorted(nxt.items(), key=lambda kv: kv[1][:2])[:width])
    peak, _, _, path = layer[seg.full]
    order: list[int] = []
    while path:
        path, j = path
        order.append(seg.ops[j])
    return SegmentOrder(order[::-1], peak, 0)


def peak_of(seg: Segment, order: Sequence[int]) -> int:
    """The peak live load of the segment run in ``order`` (global op indices)."""
    local = {k: j for j, k in enumerate(seg.ops)}
    state, held, ready, peak = 0, seg.start, seg.ready(), 0
    for k in order:
        load, state, held, ready = seg.run(state, held, ready, local[k])
        peak = max(peak, load)
    return peak
