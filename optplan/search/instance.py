"""One memory's placement problem as the integer arrays the compiled search works on.

A unit's offset here is that of its lowest footprint byte; its footprint is a list of pieces
(CSR arrays: sections, byte offset above the unit's, height). Offsets, heights and alignments are
divided by their greatest common divisor (a canonical plan's offsets are sums of piece tops and
offsets rounded up to alignments, so nothing is lost) and time is compressed to sections. A
static ordering is a permutation: the search tries candidates in rank order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from optplan.core.columns import distinct
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.search.compiled import kernels
from optplan.search.layout import Arrays
from optplan.search.params import DEFAULTS

NO_LIMIT = 1 << 61  # no capacity: an offset bound nothing reaches


@dataclass
class Instance:
    memory: str
    units: list[Unit]  # the units the search places (a footprint of size > 0)
    others: list[Unit]  # zero-size units: placed at their lowest legal offset
    scale: int
    size: np.ndarray  # what the peak counts above the unit's offset (members' offset + size; pieces may be lower)
    s0: np.ndarray  # span in sections: first piece's start to last piece's end
    s1: np.ndarray
    pp: np.ndarray  # pieces of unit i: pp[i]:pp[i + 1]
    ps0: np.ndarray
    ps1: np.ndarray
    py0: np.ndarray  # piece bottom above the unit's offset
    ph: np.ndarray  # piece height
    mod: np.ndarray
    res: np.ndarray
    lo: np.ndarray
    hi: np.ndarray  # highest offset the memory's capacity allows (zero-size members count)
    fixed: np.ndarray  # scaled fixed offset of the rectangle, -1 when free
    hint: np.ndarray  # unscaled hint offset of the rectangle, -1 when none
    start: np.ndarray  # raw times, for orderings
    end: np.ndarray
    area: np.ndarray  # footprint area in raw units, for orderings
    y0: list[int]  # offset of each unit's lowest footprint byte relative to its root
    nsec: int
    nb_ptr: np.ndarray  # span overlap adjacency (CSR); empty for a large instance
    nb_idx: np.ndarray
    large: bool = False  # too many overlapping pairs for the search: greedy dive only
    twins: np.ndarray | None = None  # twin_groups, computed on first use
    totals: np.ndarray | None = None  # orderings.section_totals, computed on first use

    @property
    def exact(self) -> bool:
        """Every piece starts at its unit's lowest byte: the search's floors are exact and its
        INFEASIBLE is a proof (kernel docstring). Otherwise holes under raised pieces are not reused."""
        return not self.py0.any()

    @property
    def single(self) -> bool:
        """One rectangle per unit."""
        return len(self.ps0) == self.n

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
    reach = sum(u.height + max(m for m, _ in u.modulus.values()) for u in problem.units)
    area = max((u.height * (u.end - u.start) for u in problem.units), default=0)
    if reach >= NO_LIMIT // 2 or area >= 1 << 62:  # offsets and areas stay far from int64's end
        return (f"the buffers' sizes add up to {reach} bytes, and one covers {area} bytes x steps; the search "
                "kernel computes offsets below 2^60 and areas below 2^62")
    for u in problem.units:
        if len(u.memories) > 1:
            return (f"buffer {u.root!r} may go to several memories; the search planner handles problems "
                    "whose memory assignment is decided (the 'auto' portfolio splits them)")
    return None


def _arr(xs: list[int]) -> np.ndarray:
    return np.array(xs, np.int64).reshape(-1)


def build(problem: Problem, memory: str, units: list[Unit], max_overlap_pairs: int = DEFAULTS.max_overlap_pairs) -> Instance:
    """The arrays for ``units`` (all bound to ``memory``); ``large`` (no adjacency lists, dives only)
    beyond ``max_overlap_pairs`` overlapping pairs (``SearchParams``)."""
    placed = [u for u in units if u.pieces]
    others = [u for u in units if not u.pieces]
    capacity = problem.memory(memory).capacity
    size, t0, t1, mod, res, lo, hi, fixed, hint, y0, area = [], [], [], [], [], [], [], [], [], [], []
    pp, pt0, pt1, py0, ph = [0], [], [], [], []
    for u in placed:
        ya = min(p[2] for p in u.pieces)
        m, r = u.modulus[memory]
        size.append(u.top - ya)  # the peak counts offset + size even where a gap's window is lower
        t0.append(u.start)
        t1.append(u.end)
        for a, b, y, yb in sorted(u.pieces):
            pt0.append(a)
            pt1.append(b)
            py0.append(y - ya)
            ph.append(yb - y)
        pp.append(len(ph))
        area.append(sum((b - a) * (yb - y) for a, b, y, yb in u.pieces))
        mod.append(m)
        res.append((r + ya) % m)
        lo.append(ya - u.low)
        hi.append(NO_LIMIT if capacity is None else capacity - u.high + ya)
        fixed.append(-1 if u.fixed_offset is None else u.fixed_offset + ya)
        root = problem.buffer(u.root)
        h = root.hint_offset if root.hint_memory in (None, memory) else None
        hint.append(-1 if h is None else h + ya)
        y0.append(ya)
    # a canonical plan's offsets are sums of piece offsets and heights rounded up to alignments:
    # multiples of g when every modulus either divides g (rounding a multiple of g is then a
    # no-op) or is a multiple of it
    g = 0
    for v in (*size, *py0, *ph, *res, *lo, *(f for f in fixed if f >= 0)):
        g = math.gcd(g, v)
    while g > 1 and any(g % m and m % g for m in set(mod)):
        for m in set(mod):
            if g % m:
                g = math.gcd(g, m)
    g = max(g, 1)
    mod = [1 if g % m == 0 else m // g for m in mod]
    start, end = _arr(t0), _arr(t1)
    times = distinct(np.concatenate([_arr(pt0), _arr(pt1)]))
    s0 = np.searchsorted(times, start).astype(np.int64)
    s1 = np.searchsorted(times, end).astype(np.int64)
    ps0 = np.searchsorted(times, _arr(pt0)).astype(np.int64)
    ps1 = np.searchsorted(times, _arr(pt1)).astype(np.int64)
    large = kernels.count_overlaps(s0, s1) > max_overlap_pairs
    if large:
        nb_ptr, nb_idx = np.zeros(len(placed) + 1, np.int64), np.zeros(0, np.int64)
    else:
        nb_ptr, nb_idx = kernels.overlap_graph(s0, s1)
    fx = _arr(fixed)
    return Instance(memory, placed, others, g, _arr(size) // g, s0, s1, _arr(pp), ps0, ps1, _arr(py0) // g,
                    _arr(ph) // g, _arr(mod), _arr(res) // g, _arr(lo) // g,
                    _arr([h // g for h in hi]), np.where(fx >= 0, fx // g, -1),
                    _arr(hint), start, end, _arr(area), y0, max(len(times) - 1, 0), nb_ptr, nb_idx, large)


class Ordered:
    """An instance relabelled so that index = rank in one static ordering. The search's arrays
    are built on first use: most decisions end within the first ordering or two, and building one
    costs more than a short run on a small part."""

    def __init__(self, inst: Instance, name: str, perm: np.ndarray) -> None:
        self.inst = inst
        self.name = name
        self.perm = perm  # rank -> index in the Instance
        self._arrays: Arrays | None = None
        self.table: np.ndarray | None = None  # the search's failed-state table and its random words (orderings.table_of)
        self.zob: np.ndarray | None = None
        self.seed: tuple[int, ...] = (0,)  # of the random words: a run repeats with the same seed
        self.forced = True  # the kernel's forced-section rule on for this ordering's runs (orderings.fresh)
        self._of: Ordered | None = None  # the ordering whose arrays this one shares
        # capacity -> nodes of this ordering's runs at it while none has branched on a forced section (-1 once one
        # has): up to that many nodes the twin without the rule would search the same tree, so its run is skipped
        # (engine._decide)
        self.alike: dict[int, int] = {}

    def unforced(self) -> Ordered:
        """This ordering without the forced-section rule: its own failed-state table (twins race in two
        threads), the same arrays."""
        twin = Ordered(self.inst, self.name + "-unforced", self.perm)
        twin.forced = False
        twin._of = self
        return twin

    @property
    def forced_twin(self) -> Ordered | None:
        """The ordering this one is the twin of without the forced-section rule (``unforced``)."""
        return None if self.forced else self._of

    @property
    def arrays(self) -> Arrays:
        """The search's static arrays, in rank order."""
        if self._arrays is None:
            self._arrays = self._of.arrays if self._of is not None else _arrays(self.inst, self.perm)
        return self._arrays

    def unpermute(self, offsets: np.ndarray) -> np.ndarray:
        out = np.empty_like(offsets)
        out[self.perm] = offsets
        return out


def twin_groups(inst: Instance) -> np.ndarray:
    """Per unit, a group number shared by units with the same footprint, span and alignment
    (twins: the search places them in rank order), -1 for fixed units. Computed once per instance."""
    if inst.twins is None:
        groups: dict[tuple[int, ...], int] = {}
        gid = np.full(inst.n, -1, np.int64)
        for i in range(inst.n):
            if inst.fixed[i] >= 0:
                continue
            key: tuple[int, ...] = (int(inst.size[i]), int(inst.s0[i]), int(inst.s1[i]), int(inst.mod[i]), int(inst.res[i]),
                                    int(inst.lo[i]))
            a, b = int(inst.pp[i]), int(inst.pp[i + 1])
            if b - a > 1:  # twins share the whole footprint
                key += tuple(int(v) for q in range(a, b) for v in (inst.ps0[q], inst.ps1[q], inst.py0[q], inst.ph[q]))
            gid[i] = groups.setdefault(key, len(groups))
        inst.twins = gid
    return inst.twins


def _twins(inst: Instance, perm: np.ndarray) -> np.ndarray:
    """Per rank, the rank of the previous twin in this ordering, -1 when none."""
    n = inst.n
    g = twin_groups(inst)[perm]
    order = np.lexsort((np.arange(n), g))  # ranks by group, then rank
    go = g[order]
    twin = np.full(n, -1, np.int64)
    same = np.zeros(n, bool)
    same[1:] = (go[1:] == go[:-1]) & (go[1:] >= 0)
    twin[order[same]] = order[np.flatnonzero(same) - 1]
    return twin


def _arrays(inst: Instance, perm: np.ndarray) -> Arrays:
    n = inst.n
    inv = np.empty(n, np.int64)
    inv[perm] = np.arange(n)
    deg = np.diff(inst.nb_ptr)[perm]
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=ptr[1:])
    gather = np.repeat(inst.nb_ptr[:-1][perm] - ptr[:-1], deg) + np.arange(ptr[-1])
    idx = inv[inst.nb_idx[gather]].astype(np.int64)
    # each unit's neighbours by height, lowest first: the kernel's lift rule takes the first unplaced one
    height = np.append(inst.ph, 0)[inst.pp[:-1]][perm]  # first piece; 0 for a unit without one
    idx = idx[np.lexsort((idx, height[idx], np.repeat(np.arange(n), deg)))]
    fixed = inst.fixed[perm]
    fmask = fixed[idx] >= 0
    fdeg = np.bincount(np.repeat(np.arange(n), deg)[fmask], minlength=n).astype(np.int64)
    fptr = np.zeros(n + 1, np.int64)
    np.cumsum(fdeg, out=fptr[1:])
    fidx = idx[fmask].astype(np.int64)
    size, s0, s1 = inst.size[perm], inst.s0[perm], inst.s1[perm]
    mod, res, lo, hi = inst.mod[perm], inst.res[perm], inst.lo[perm], inst.hi[perm]
    npc = np.diff(inst.pp)[perm]
    pp = np.zeros(n + 1, np.int64)
    np.cumsum(npc, out=pp[1:])
    pg = np.repeat(inst.pp[:-1][perm] - pp[:-1], npc) + np.arange(pp[-1])
    ps0, ps1, py0, ph = inst.ps0[pg], inst.ps1[pg], inst.py0[pg], inst.ph[pg]
    return Arrays(size, s0, s1, pp, ps0, ps1, py0, ph, mod, res, lo, hi, fixed, ptr, idx.astype(np.int64), fptr,
                         fidx, _twins(inst, perm), np.int64(inst.nsec))
