"""One memory's placement problem as the integer arrays the compiled search works on.

Offsets, sizes and alignments are divided by their greatest common divisor (a canonical plan's
offsets are sums of sizes rounded up to alignments, so nothing is lost) and time is compressed
to sections. A static ordering is a permutation: the search tries candidates in rank order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from optplan.plan import Placement
from optplan.problem import Problem, Unit
from optplan.search import kernel

MAX_PAIRS = 4_000_000  # beyond this many overlapping pairs the adjacency lists cost too much memory


@dataclass
class Instance:
    memory: str
    units: list[Unit]  # the units the search places (one footprint rectangle, size > 0)
    others: list[Unit]  # zero-size units: placed at their lowest legal offset
    scale: int
    size: np.ndarray
    s0: np.ndarray
    s1: np.ndarray
    mod: np.ndarray
    res: np.ndarray
    lo: np.ndarray
    fixed: np.ndarray  # scaled fixed offset of the rectangle, -1 when free
    hint: np.ndarray  # unscaled hint offset of the rectangle, -1 when none
    start: np.ndarray  # raw times, for orderings
    end: np.ndarray
    y0: list[int]  # offset of each unit's rectangle relative to its root
    nsec: int
    nb_ptr: np.ndarray  # overlap adjacency (CSR); empty for a large instance
    nb_idx: np.ndarray
    large: bool = False  # too many overlapping pairs for the search: greedy dive only

    @property
    def n(self) -> int:
        return len(self.units)

    def scaled_capacity(self, capacity: int) -> int:
        return capacity // self.scale

    def scaled_bound(self, bound: int) -> int:
        return -(-bound // self.scale)

    def top(self, offsets: np.ndarray) -> int:
        """Peak in bytes of the scaled rectangle offsets (indexed like ``units``)."""
        if self.n == 0:
            return 0
        return int((offsets + self.size).max()) * self.scale

    def placements(self, offsets: np.ndarray) -> dict[str, Placement]:
        out: dict[str, Placement] = {}
        for k, u in enumerate(self.units):
            root = int(offsets[k]) * self.scale - self.y0[k]
            for bid, rel in u.members:
                out[bid] = Placement(self.memory, root + rel)
        for u in self.others:
            root = u.fixed_offset if u.fixed_offset is not None else u.lowest_offset(self.memory)
            for bid, rel in u.members:
                out[bid] = Placement(self.memory, root + rel)
        return out


def unsupported(problem: Problem) -> str | None:
    """Why the search cannot take this problem on its own, or None."""
    for u in problem.units:
        if len(u.memories) > 1:
            return (f"buffer {u.root!r} may go to several memories; the search planner handles problems "
                    "whose memory assignment is decided (the 'auto' portfolio splits them)")
        if len(u.pieces) > 1:
            return f"buffer {u.root!r} has relative members with a multi-piece footprint; the search places one rectangle per unit"
    return None


def _arr(xs: list[int]) -> np.ndarray:
    return np.array(xs, np.int64).reshape(-1)


def build(problem: Problem, memory: str, units: list[Unit]) -> Instance:
    """The arrays for ``units`` (all bound to ``memory``, one footprint rectangle each)."""
    placed = [u for u in units if u.pieces]
    others = [u for u in units if not u.pieces]
    size, t0, t1, mod, res, lo, fixed, hint, y0 = [], [], [], [], [], [], [], [], []
    for u in placed:
        a, b, ya, yb = u.pieces[0]
        m, r = u.modulus[memory]
        size.append(yb - ya)
        t0.append(a)
        t1.append(b)
        mod.append(m)
        res.append((r + ya) % m)
        lo.append(ya - u.low)
        fixed.append(-1 if u.fixed_offset is None else u.fixed_offset + ya)
        root = problem.buffer(u.root)
        h = root.hint_offset if root.hint_memory in (None, memory) else None
        hint.append(-1 if h is None else h + ya)
        y0.append(ya)
    # a canonical plan's offsets are sums of sizes rounded up to alignments: multiples of g when
    # every modulus either divides g (rounding a multiple of g is then a no-op) or is a multiple of it
    g = 0
    for v in (*size, *res, *lo, *(f for f in fixed if f >= 0)):
        g = math.gcd(g, v)
    while g > 1 and any(g % m and m % g for m in set(mod)):
        for m in set(mod):
            if g % m:
                g = math.gcd(g, m)
    g = max(g, 1)
    mod = [1 if g % m == 0 else m // g for m in mod]
    start, end = _arr(t0), _arr(t1)
    times = np.unique(np.concatenate([start, end]))
    s0 = np.searchsorted(times, start).astype(np.int64)
    s1 = np.searchsorted(times, end).astype(np.int64)
    large = kernel.count_overlaps(s0, s1) > MAX_PAIRS
    if large:
        nb_ptr, nb_idx = np.zeros(len(placed) + 1, np.int64), np.zeros(0, np.int64)
    else:
        nb_ptr, nb_idx = kernel.overlap_graph(s0, s1)
    fx = _arr(fixed)
    return Instance(memory, placed, others, g, _arr(size) // g, s0, s1, _arr(mod), _arr(res) // g,
                    _arr(lo) // g, np.where(fx >= 0, fx // g, -1), _arr(hint), start, end, y0,
                    max(len(times) - 1, 0), nb_ptr, nb_idx, large)


@dataclass
class Ordered:
    """An instance relabelled so that index = rank in one static ordering."""

    name: str
    perm: np.ndarray  # rank -> index in the Instance
    args: tuple  # the search's array arguments, in rank order

    def unpermute(self, offsets: np.ndarray) -> np.ndarray:
        out = np.empty_like(offsets)
        out[self.perm] = offsets
        return out


def ordered(inst: Instance, name: str, perm: np.ndarray) -> Ordered:
    n = inst.n
    inv = np.empty(n, np.int64)
    inv[perm] = np.arange(n)
    deg = np.diff(inst.nb_ptr)[perm]
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=ptr[1:])
    gather = np.repeat(inst.nb_ptr[:-1][perm] - ptr[:-1], deg) + np.arange(ptr[-1])
    idx = inv[inst.nb_idx[gather]].astype(np.int64)
    fixed = inst.fixed[perm]
    fmask = fixed[idx] >= 0
    fdeg = np.bincount(np.repeat(np.arange(n), deg)[fmask], minlength=n).astype(np.int64)
    fptr = np.zeros(n + 1, np.int64)
    np.cumsum(fdeg, out=fptr[1:])
    fidx = idx[fmask].astype(np.int64)
    size, s0, s1 = inst.size[perm], inst.s0[perm], inst.s1[perm]
    mod, res, lo = inst.mod[perm], inst.res[perm], inst.lo[perm]
    twin = np.full(n, -1, np.int64)
    last: dict[tuple[int, ...], int] = {}
    for r in range(n):
        if fixed[r] >= 0:
            continue
        key = (int(size[r]), int(s0[r]), int(s1[r]), int(mod[r]), int(res[r]), int(lo[r]))
        twin[r] = last.get(key, -1)
        last[key] = r
    args = (size, s0, s1, mod, res, lo, fixed, ptr, idx.astype(np.int64), fptr, fidx, twin, np.int64(inst.nsec))
    return Ordered(name, perm, args)
