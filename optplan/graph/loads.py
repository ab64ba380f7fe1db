"""The live load of an order, fast: what every order method scores before any packing.

``Loads`` evaluates an order in a few numpy passes: each tensor's lifetime under it, the bytes
live at every step, less what the best reuses save (at a step, an input whose last reader declares
reuses saves its largest declared output's bytes: each output names one input, so choosing per
input is the best matching). ``Relations`` holds which ops must run before or after which (bit
masks over op indices), and the *articulation* ops: those every other op runs before or after in
every order, which cut any order into independent segments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optplan.core.load import live_load
from optplan.graph.model import Structure


class Loads:
    """Live-load evaluation of orders of one graph (numpy arrays over tensors and reuses)."""

    def __init__(self, st: Structure) -> None:
        self.st = st
        self.n = st.ops
        self.steps = st.steps
        self.size = np.array(st.size, np.int64)
        self.producer = np.array(st.producer, np.int64)
        self.output = np.array(st.output, bool)
        counts = np.array([len(c) for c in st.consumers], np.int64)
        self.consumers = np.array([c for cs in st.consumers for c in cs], np.int64)
        self.read = counts > 0
        self.first = (np.cumsum(counts) - counts)[self.read]  # reduceat starts, tensors that are read
        pairs = [(k, y, x) for k, rs in enumerate(st.reuse) for y, x in rs]
        self.r_op, self.r_out, self.r_in = (np.array([p[j] for p in pairs], np.int64) for j in range(3))

    def positions(self, order: Sequence[int]) -> np.ndarray:
        pos = np.empty(self.n, np.int64)
        pos[np.asarray(order, np.int64)] = np.arange(len(order))
        return pos

    def spans(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(start, end, last)`` per tensor: its lifetime and the step of its last reader (-1: none)."""
        start = np.where(self.producer >= 0, pos[np.maximum(self.producer, 0)], 0) if self.n else np.zeros(len(self.size), np.int64)
        last = np.full(len(self.size), -1, np.int64)
        if len(self.consumers):
            last[self.read] = np.maximum.reduceat(pos[self.consumers], self.first)
        end = np.where(self.output, self.steps, np.where(last >= 0, last + 1, start + 1))
        return start, end, last

    def savings(self, pos: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Per tensor: the bytes its best reuse saves under ``pos`` (0: none holds)."""
        best = np.zeros(len(self.size), np.int64)
        if len(self.r_op):
            holds = last[self.r_in] == pos[self.r_op]
            np.maximum.at(best, self.r_in[holds], self.size[self.r_out[holds]])
        return best

    def curve(self, order: Sequence[int], reuse: bool = True) -> np.ndarray:
        """Bytes live at each step of ``order`` (with the best reuses, unless ``reuse`` is False)."""
        pos = self.positions(order)
        start, end, last = self.spans(pos)
        load = live_load(start, end, self.size, self.steps)
        if reuse and len(self.r_op):
            best = self.savings(pos, last)
            hit = best > 0
            np.add.at(load, last[hit], -best[hit])
        return load

    def score(self, order: Sequence[int], reuse: bool = True) -> tuple[int, int]:
        """``(peak, area)``: the peak live load, then the sum over steps (the tie-break: less
        area leaves the packer more room)."""
        load = self.curve(order, reuse)
        return (int(load.max()) if len(load) else 0), int(load.sum())

    def best_reuses(self, order: Sequence[int]) -> list[tuple[int, int, int]]:
        """``(op, output, input)`` indices of the reuses that save the most under ``order``: per
        input whose last reader declares some, the largest output (the first of equal ones)."""
        pos = self.positions(order)
        _, _, last = self.spans(pos)
        chosen: dict[int, tuple[int, int, int]] = {}
        for k, y, x in zip(self.r_op.tolist(), self.r_out.tolist(), self.r_in.tolist()):
            if last[x] == pos[k] and (x not in chosen or self.size[y] > self.size[chosen[x][1]]):
                chosen[x] = (k, y, x)
        return sorted(chosen.values())


@dataclass(frozen=True, eq=False)
class Relations:
    """Which ops must precede or follow which in every order (bit masks over op indices)."""

    before: tuple[int, ...]  # per op: its ancestors
    after: tuple[int, ...]  # per op: its descendants
    topological: tuple[int, ...]  # one topological order (Kahn's, smallest index first)

    @classmethod
    def of(cls, st: Structure) -> Relations:
        topo = kahn(st)
        after = [0] * st.ops
        for k in reversed(topo):
            m = 0
            for s in st.succs[k]:
                m |= after[s] | (1 << s)
            after[k] = m
        before = [0] * st.ops
        for k in topo:
            m = 0
            for p in st.preds[k]:
                m |= before[p] | (1 << p)
            before[k] = m
        return cls(tuple(before), tuple(after), tuple(topo))

    def articulations(self) -> list[int]:
        """Ops every other op runs before or after, in their (forced) order."""
        n = len(self.before)
        cut = [k for k in range(n) if self.before[k].bit_count() + self.after[k].bit_count() + 1 == n]
        return sorted(cut, key=lambda k: self.before[k].bit_count())

    def segments(self) -> list[list[int]]:
        """The ops cut into runs at the articulations: every order runs the runs one after
        another, each articulation a run of its own; each run listed in topological order."""
        cuts = self.articulations()
        rank = {k: i for i, k in enumerate(self.topological)}
        out: list[list[int]] = []
        done = 0
        for c in cuts:
            inner = self.before[c] & ~done
            if inner:
                out.append(sorted(bits(inner), key=rank.__getitem__))
            out.append([c])
            done |= inner | (1 << c)
        rest = ((1 << len(self.before)) - 1) & ~done
        if rest:
            out.append(sorted(bits(rest), key=rank.__getitem__))
        return out


def kahn(st: Structure) -> list[int]:
    """A topological order: among ready ops the smallest index first (the given order when it is one)."""
    import heapq

    indegree = [len(p) for p in st.preds]
    ready = [k for k, d in enumerate(indegree) if d == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        k = heapq.heappop(ready)
        out.append(k)
        for s in st.succs[k]:
            indegree[s] -= 1
            if indegree[s] == 0:
                heapq.heappush(ready, s)
    return out


def bits(mask: int) -> list[int]:
    """The indices of ``mask``'s set bits, lowest first (sets of ops as Python ints)."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def is_topological(st: Structure, order: Sequence[int]) -> bool:
    pos = [0] * st.ops
    for i, k in enumerate(order):
        pos[k] = i
    return all(pos[p] < pos[k] for k in range(st.ops) for p in st.preds[k])
