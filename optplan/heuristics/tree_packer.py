"""The greedy packer of ``packer.py`` as kernels over flat arrays: same placements, much faster.

``packer.Packer`` is the readable reference; ``pack`` does exactly what ``greedy`` does with it
(the tests compare them plan for plan on random problems with hypothesis) for the whole
constraint model: several memories tried fastest first, alignment (per-memory modulus), fixed
offsets, relative placements (units with several members and a low edge), gaps (units with
several pieces), capacities, and the three policies. The kernels (``@kernel``) run as plain Python
on small problems and compiled by numba otherwise (``kernels``, ``compiled``).

The time index differs from the reference's (same answers, less to read). A placed rectangle
over the elementary time slots ``[a, b)`` meets a query's slots ``[l, r)`` iff it covers slot
``l`` or starts inside ``(l, r)``, so each memory keeps two trees over the slots (``Tree``):

* ``stab`` (fan-out ``STAB_FANOUT``): a rectangle goes into its canonical nodes; the ones
  covering slot ``l`` are those stored on ``l``'s path to the root, a handful of nodes. With a
  binary tree they were spread over ~17 nodes per path, each a fragment of what is alive
  there, and reading them dominated.
* ``start`` (fan-out ``START_FANOUT``): a rectangle goes into every node on its first slot's
  path; the ones starting in ``(l, r)`` are read at that range's canonical nodes.

Each node (a *store*) keeps the union of the byte ranges stored there as a sorted list of
disjoint, non-touching ranges in one shared arena ``ar`` (pairs ``lo, hi``; ``meta`` holds each
store's arena start, length and room; a store's block moves to the arena's end, twice as large,
when it fills). A query turns the lists it reads into runs of forbidden root offsets; first fit
walks the runs side by side up to the lowest gap, the other policies merge them into one sorted
list first (walking them to the top instead, as first fit does to its gap, was slower on S_1-shaped
buffers: best fit 10.4-12.9 -> 14.9-16.0 s on a million). A query's buffers are the scratch list ``sc`` (``_scratch``).
"""

from __future__ import annotations

from collections import namedtuple
from functools import lru_cache

import numpy as np

from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.heuristics.arrays import NONE, Units, arrays
from optplan.heuristics.kernels import kernel, pick

POLICY = {"first": 0, "best": 1, "heap": 2}
STAB_FANOUT, START_FANOUT = 16, 4  # measured on S_1-shaped instances of 28k-62k buffers
MAX_IDS = 512  # stores one piece's query reads: far more than both trees' depths need
# the scratch list: a query's runs and their union (0-4), the stores it reads and per store its
# piece and position in the walk (5-9)
FLO, FHI, TLO, THI, RUNS, Q0, Q1, PTR, END, IDS = range(10)

Tree = namedtuple("Tree", ["stab_level", "stab_fanout", "start_level", "start_fanout", "stores"])
Tree.__doc__ = """The two trees over a problem's time slots: where each level starts among a memory's
stores and its fan-out (the root's a dummy 2), for the stab tree and the start tree, and the stores
per memory (memory i's are ``i * stores`` onwards)."""


@lru_cache(maxsize=64)
def layout(slots: int) -> Tree:
    """The trees over ``slots`` leaves (a power of two)."""
    out: list[np.ndarray] = []
    first = 0
    for fanout in (STAB_FANOUT, START_FANOUT):
        offsets, fans, width = [], [], slots
        while True:
            offsets.append(first)
            first += width
            if width == 1:
                fans.append(2)
                break
            fans.append(fanout)
            width = -(-width // fanout)
        out += [np.array(offsets, np.int64), np.array(fans, np.int64)]
    return Tree(out[0], out[1], out[2], out[3], first)


@kernel()
def _room(ar, need):
    """The arena with room for ``need`` ranges (doubled when short)."""
    if 2 * need <= len(ar):
        return ar
    bigger = np.empty(max(2 * len(ar), 2 * need), np.int64)
    bigger[:len(ar)] = ar
    return bigger


@kernel(inline="always")
def _insert(s, y0, y1, meta, ar, used):
    """Add ``[y0, y1)`` to the union kept at store ``s``, the arena having room for a new or moved
    block (``_store`` saw to it); returns the arena's new fill. It returns no array: numba counts
    references to an array passed back, two atomic (fencing) operations per insert that took 20-25 %
    of ``_store`` (1M short-lived buffers, replayed: 3.6-4.3 -> 2.8-3.3 s)."""
    n = meta[3 * s + 1]
    if meta[3 * s + 2] == 0:
        meta[3 * s], meta[3 * s + 2] = used, 4
        used += 4
    base = meta[3 * s]
    a, b = 0, n
    while a < b:  # first range reaching y0 (touching ranges merge)
        mid = (a + b) >> 1
        if ar[2 * (base + mid) + 1] < y0:
            a = mid + 1
        else:
            b = mid
    i = j = a
    while j < n and ar[2 * (base + j)] <= y1:
        j += 1
    nlo, nhi = y0, y1
    if j > i:
        nlo, nhi = min(ar[2 * (base + i)], y0), max(ar[2 * (base + j) - 1], y1)
    size = n - (j - i) + 1
    if size > meta[3 * s + 2]:  # move the block to the arena's end, twice as large
        c = 2 * meta[3 * s + 2]
        ar[2 * used:2 * (used + n)] = ar[2 * base:2 * (base + n)]
        meta[3 * s], meta[3 * s + 2] = used, c
        base = used
        used += c
    if j - i != 1:  # shift the tail by one range less than it merged
        d = 2 * (1 - (j - i))
        if d > 0:
            for k in range(2 * (base + n) - 1, 2 * (base + j) - 1, -1):
                ar[k + d] = ar[k]
        else:
            for k in range(2 * (base + j), 2 * (base + n)):
                ar[k + d] = ar[k]
    ar[2 * (base + i)] = nlo
    ar[2 * (base + i) + 1] = nhi
    meta[3 * s + 1] = size
    return used


@kernel(inline="always")
def _lists(tree, base, l, r, ids, k):
    """Append to ``ids[k:]`` the stores a query for slots ``[l, r)`` reads: the stab path of slot
    ``l`` and the start tree's canonical nodes of ``(l, r)``; returns the new end."""
    so, sf, to, tf = tree.stab_level, tree.stab_fanout, tree.start_level, tree.start_fanout
    j = l
    for lv in range(len(so)):
        ids[k] = base + so[lv] + j
        k += 1
        j //= sf[lv]
    a, b, lv = l + 1, r, 0
    while a < b:
        f = tf[lv]
        while a < b and a % f:
            ids[k] = base + to[lv] + a
            k += 1
            a += 1
        while a < b and b % f:
            b -= 1
            ids[k] = base + to[lv] + b
            k += 1
        a //= f
        b //= f
        lv += 1
    return k


@kernel(inline="always")
def _targets(tree, base, l, r, ids):
    """Put in ``ids`` the stores a rectangle over slots ``[l, r)`` goes into: its canonical nodes
    in the stab tree, its first slot's path in the start tree; returns how many."""
    so, sf, to, tf = tree.stab_level, tree.stab_fanout, tree.start_level, tree.start_fanout
    a, b, lv, k = l, r, 0, 0
    while a < b:
        f = sf[lv]
        while a < b and a % f:
            ids[k] = base + so[lv] + a
            k += 1
            a += 1
        while a < b and b % f:
            b -= 1
            ids[k] = base + so[lv] + b
            k += 1
        a //= f
        b //= f
        lv += 1
    j = l
    for lv in range(len(to)):
        ids[k] = base + to[lv] + j
        k += 1
        j //= tf[lv]
    return k


@kernel()
def _store(tree, base, l, r, y0, y1, meta, ar, used, ids):
    """Index the rectangle slots ``[l, r)`` x bytes ``[y0, y1)`` at its stores (``_targets``, listed
    in the scratch ``ids``); returns the (maybe moved) arena and its fill. The arena grows once,
    up front, by what its stores could need (a new block, or a full one moved twice as large), so
    that ``_insert`` never replaces it."""
    k = _targets(tree, base, l, r, ids)
    need = used
    for q in range(k):
        c = meta[3 * ids[q] + 2]
        if c == 0:
            need += 4
        elif meta[3 * ids[q] + 1] == c:
            need += 2 * c
    ar = _room(ar, need)
    for q in range(k):
        used = _insert(ids[q], y0, y1, meta, ar, used)
    return ar, used


@kernel()
def _gather(sc, k, py0, py1, low_edge, meta, ar, cnt, nruns):
    """Append to the runs in ``sc``, one sorted run per store in ``sc[IDS][:k]``, the root offsets
    its ranges forbid to a piece ``[py0, py1)`` (collision iff y0 - py1 < o < y1 - py0), those
    reaching ``low_edge``; returns the new counts of ranges and runs."""
    ids, flo, fhi, runs = sc[IDS], sc[FLO], sc[FHI], sc[RUNS]
    need = cnt
    for q in range(k):
        need += meta[3 * ids[q] + 1]
    if need > len(flo):
        c = max(2 * len(flo), need)
        bigger = np.empty(c, np.int64)
        bigger[:cnt] = flo[:cnt]
        flo = bigger
        sc[FLO] = flo
        bigger = np.empty(c, np.int64)
        bigger[:cnt] = fhi[:cnt]
        fhi = bigger
        sc[FHI] = fhi
    if nruns + k + 1 > len(runs):
        bigger = np.zeros(2 * (nruns + k + 1), np.int64)
        bigger[:nruns + 1] = runs[:nruns + 1]
        runs = bigger
        sc[RUNS] = runs
    for q in range(k):
        s = ids[q]
        start = cnt
        b = 2 * meta[3 * s]
        for x in range(b, b + 2 * meta[3 * s + 1], 2):
            f1 = ar[x + 1] - py0 - 1
            if f1 >= low_edge:
                flo[cnt] = ar[x] - py1 + 1
                fhi[cnt] = f1
                cnt += 1
        if cnt > start:
            runs[nruns] = start
            nruns += 1
            runs[nruns] = cnt
    return cnt, nruns


@kernel()
def _union(flo, fhi, runs, nruns, tlo, thi):
    """Merge the sorted runs ``flo/fhi[runs[k]:runs[k+1]]`` pairwise into one sorted list of
    disjoint ranges (overlapping or adjacent ranges coalesce); returns it and its length.
    Cheaper than sorting: the runs come sorted, and coalescing shrinks every pass."""
    if len(tlo) < runs[nruns]:
        tlo, thi = np.empty(runs[nruns], np.int64), np.empty(runs[nruns], np.int64)
    while nruns > 1:
        out = 0
        k = 0
        while k < nruns:
            a, a_end = runs[k], runs[k + 1]
            b, b_end = a_end, (runs[k + 2] if k + 1 < nruns else a_end)
            runs[k // 2] = out
            first = True
            cl = ch = 0
            while a < a_end or b < b_end:
                if b >= b_end or (a < a_end and flo[a] <= flo[b]):
                    x0, x1 = flo[a], fhi[a]
                    a += 1
                else:
                    x0, x1 = flo[b], fhi[b]
                    b += 1
                if first:
                    cl, ch, first = x0, x1, False
                elif x0 <= ch + 1:
                    ch = max(ch, x1)
                else:
                    tlo[out], thi[out] = cl, ch
                    out += 1
                    cl, ch = x0, x1
            if not first:
                tlo[out], thi[out] = cl, ch
                out += 1
            k += 2
        nruns = (nruns + 1) // 2
        runs[nruns] = out
        flo, tlo = tlo, flo
        fhi, thi = thi, fhi
    return flo, fhi, tlo, thi


@kernel()
def _choose(flo, fhi, cnt, low_edge, limit, m, r, policy, heap_top, fixed):
    """The offset the reference's ``Packer.fit`` picks among the gaps between the sorted,
    disjoint forbidden ranges ``[flo, fhi]`` (none below ``low_edge``), or NONE."""
    best, best_room = NONE, NONE
    free = low_edge
    for i in range(cnt):
        if flo[i] - 1 >= free:  # the gap [free, flo[i] - 1]
            glo, ghi = free, flo[i] - 1
            if fixed != NONE:
                if glo <= fixed <= ghi:
                    return fixed
            else:
                o = glo + (r - glo) % m
                h = min(ghi, limit)
                if o <= h:
                    if policy == 0:
                        return o
                    if h - glo < best_room:
                        best, best_room = o, h - glo
        free = max(free, fhi[i] + 1)
    glo = free  # the region above everything
    if fixed != NONE:
        return fixed if fixed >= glo else NONE
    otop = glo + (r - glo) % m
    if otop > limit:
        return best
    if policy == 2 and otop <= heap_top and heap_top - glo < best_room:
        return otop
    return best if best != NONE else otop


@kernel()
def _walk(sc, k, low_edge, limit, m, r, meta, ar):
    """``_choose`` for first fit straight off the stores ``sc[IDS][:k]`` (a piece
    ``[sc[Q0][q], sc[Q1][q])`` each): their lists are walked side by side only up to the lowest
    gap that takes the unit, usually far below the top of what they hold, without copying or
    merging them."""
    ids, q0, q1, ptr, end = sc[IDS], sc[Q0], sc[Q1], sc[PTR], sc[END]
    for q in range(k):
        s = ids[q]
        b, n = meta[3 * s], meta[3 * s + 1]
        lo, hi = 0, n  # skip the ranges wholly below low_edge (hi - q0 - 1 < low_edge), if any
        if n and ar[2 * b + 1] - q0[q] - 1 >= low_edge:
            hi = 0
        while lo < hi:
            mid = (lo + hi) >> 1
            if ar[2 * (b + mid) + 1] - q0[q] - 1 < low_edge:
                lo = mid + 1
            else:
                hi = mid
        ptr[q], end[q] = b + lo, b + n
    free = low_edge
    while True:
        moved = True
        while moved:  # raise ``free`` past every range starting at or below it
            moved = False
            for q in range(k):
                i, e, d0, d1 = ptr[q], end[q], q0[q] + 1, q1[q] - 1
                if i < e and ar[2 * i] - d1 <= free:
                    while i < e and ar[2 * i] - d1 <= free:
                        free = max(free, ar[2 * i + 1] - d0 + 1)
                        i += 1
                    ptr[q] = i
                    moved = True
        if free > limit:
            return NONE
        nxt = NONE  # the gap [free, nxt - 1]
        for q in range(k):
            if ptr[q] < end[q]:
                nxt = min(nxt, ar[2 * ptr[q]] - q1[q] + 1)
        o = free + (r - free) % m
        if o <= min(nxt - 1, limit):
            return o
        if nxt == NONE:
            return NONE
        free = nxt


@kernel()
def _fit(tree, units, u, option, limit, policy, heap_top, meta, ar, sc):
    """The root offset for unit ``u`` under its memory option ``option`` (memory, modulus,
    residue), at most ``limit``, or NONE."""
    base = units.m_mem[option] * tree.stores
    m, r, low_edge, fixed = units.m_mod[option], units.m_res[option], -units.low[u], units.fixed[u]
    p_ptr, p_l, p_r, p_y0, p_y1 = units.p_ptr, units.p_l, units.p_r, units.p_y0, units.p_y1
    ids = sc[IDS]
    if policy == 0 and fixed == NONE:
        q0, q1 = sc[Q0], sc[Q1]
        k = 0
        for p in range(p_ptr[u], p_ptr[u + 1]):
            k0 = k
            k = _lists(tree, base, p_l[p], p_r[p], ids, k)
            q0[k0:k] = p_y0[p]
            q1[k0:k] = p_y1[p]
        return _walk(sc, k, low_edge, limit, m, r, meta, ar)
    cnt = nruns = 0
    sc[RUNS][0] = 0
    for p in range(p_ptr[u], p_ptr[u + 1]):
        k = _lists(tree, base, p_l[p], p_r[p], ids, 0)
        cnt, nruns = _gather(sc, k, p_y0[p], p_y1[p], low_edge, meta, ar, cnt, nruns)
    flo, fhi = sc[FLO], sc[FHI]
    if nruns > 1:
        runs = sc[RUNS]
        flo, fhi, tlo, thi = _union(flo, fhi, runs, nruns, sc[TLO], sc[THI])
        cnt = runs[1]
        sc[FLO], sc[FHI], sc[TLO], sc[THI] = flo, fhi, tlo, thi
    return _choose(flo, fhi, cnt, low_edge, limit, m, r, policy, heap_top, fixed)


@kernel()
def _scratch():
    """Growable buffers of a query (FLO-RUNS: runs and their union) and per-store ones (Q0-IDS)."""
    return [np.empty(4096 if i < Q0 else MAX_IDS, np.int64) for i in range(IDS + 1)]


@kernel()
def _in_order(units, order):
    """``units`` with unit ``order[i]`` as unit i, its pieces and memory options with it. A pass
    then reads the units' fields in sequence: in the problem's order, a unit placed by size costs a
    cache miss per field it reads (a dozen arrays), the hottest loads of ``_fit`` and ``_pack``
    once the index's own are gone (perf, 200k short-lived buffers)."""
    n = len(order)
    p_ptr, m_ptr = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
    for i in range(n):
        u = order[i]
        p_ptr[i + 1] = p_ptr[i] + units.p_ptr[u + 1] - units.p_ptr[u]
        m_ptr[i + 1] = m_ptr[i] + units.m_ptr[u + 1] - units.m_ptr[u]
    p_l, p_r, p_y0, p_y1 = np.empty(p_ptr[n], np.int64), np.empty(p_ptr[n], np.int64), np.empty(p_ptr[n], np.int64), \
        np.empty(p_ptr[n], np.int64)
    m_mem, m_mod, m_res = np.empty(m_ptr[n], np.int64), np.empty(m_ptr[n], np.int64), np.empty(m_ptr[n], np.int64)
    for i in range(n):
        u = order[i]
        d = units.p_ptr[u] - p_ptr[i]
        for p in range(p_ptr[i], p_ptr[i + 1]):
            p_l[p], p_r[p], p_y0[p], p_y1[p] = units.p_l[p + d], units.p_r[p + d], units.p_y0[p + d], units.p_y1[p + d]
        d = units.m_ptr[u] - m_ptr[i]
        for k in range(m_ptr[i], m_ptr[i + 1]):
            m_mem[k], m_mod[k], m_res[k] = units.m_mem[k + d], units.m_mod[k + d], units.m_res[k + d]
    return Units(p_ptr, p_l, p_r, p_y0, p_y1, units.low[order], units.high[order], units.top[order],
                 units.fixed[order], m_ptr, m_mem, m_mod, m_res, units.capacity, units.start[order], units.end[order])


@kernel(nogil=True)  # threads of the portfolio run heuristics side by side
def _pack(order, tree, units, policy, only, skip, weight, stop):
    """Place units in ``order``; returns (offset, memory index) per unit and the failed unit or -1
    (-2: stopped, the peaks weighted by ``weight`` reached ``stop``; NONE: never).
    ``only`` >= 0: that memory alone; ``skip``: a unit that fits nowhere is left out (-1), not fatal."""
    n, n_mem, capacity = len(units.low), len(units.capacity), units.capacity
    off = np.full(n, -1, np.int64)
    where = np.full(n, -1, np.int64)
    meta = np.zeros(n_mem * tree.stores * 3, np.int64)  # per store: arena start, length, capacity
    ar, used = np.empty(1 << 17, np.int64), 0
    heap = np.zeros(n_mem, np.int64)
    sc = _scratch()
    if stop != NONE and stop <= 0:  # the peaks start at 0
        return off, where, -2
    units = _in_order(units, order)  # unit i is order[i] from here on
    p_ptr, p_l, p_r, p_y0, p_y1 = units.p_ptr, units.p_l, units.p_r, units.p_y0, units.p_y1
    low, high, top, fixed = units.low, units.high, units.top, units.fixed
    for i in range(len(order)):
        u = order[i]
        for k in range(units.m_ptr[i], units.m_ptr[i + 1]):
            mem = units.m_mem[k]
            if only >= 0 and mem != only:
                continue
            limit = NONE if capacity[mem] < 0 else capacity[mem] - high[i]
            if limit != NONE and (limit < -low[i] or (fixed[i] != NONE and fixed[i] > limit)):
                continue
            o = _fit(tree, units, i, k, limit, policy, heap[mem] - high[i], meta, ar, sc)
            if o == NONE:
                continue
            off[u], where[u] = o, mem
            base = mem * tree.stores
            ids = sc[IDS]
            for p in range(p_ptr[i], p_ptr[i + 1]):
                ar, used = _store(tree, base, p_l[p], p_r[p], o + p_y0[p], o + p_y1[p], meta, ar, used, ids)
            if p_ptr[i + 1] > p_ptr[i] and o + top[i] > heap[mem]:
                heap[mem] = o + top[i]
                if stop != NONE and np.sum(weight * heap) >= stop:
                    return off, where, -2
            break
        if off[u] < 0 and not skip:
            return off, where, u
    return off, where, -1


@kernel()
def _idle(tree, units, objects, u, option, meta, ar, sc):
    """The first object (creation order) of the banked packer's ``objects`` in the memory of
    ``option`` with nobody alive with ``u`` that holds it at offset 0 (large enough, aligned), or
    -1: the lowest free ids in that memory's object-id index (object j is the range [j, j + 1):
    it forbids "offset" j)."""
    mem, m, r = units.m_mem[option], units.m_mod[option], units.m_res[option]
    base, obj_base, obj_size, nobj = mem * tree.stores, objects.base[mem], objects.size[mem], objects.count[mem]
    q0, q1, ids = sc[Q0], sc[Q1], sc[IDS]
    low, high = units.low, units.high
    k = 0
    for p in range(units.p_ptr[u], units.p_ptr[u + 1]):
        k = _lists(tree, base, units.p_l[p], units.p_r[p], ids, k)
    q0[:k] = 0
    q1[:k] = 1
    j = 0
    while True:
        j = _walk(sc, k, j, nobj - 1, 1, 0, meta, ar)
        if j == NONE:
            return -1
        if obj_size[j] >= high[u] - low[u] and (obj_base[j] - low[u] - r) % m == 0:
            return j
        j += 1


def pack(problem: Problem, order: np.ndarray, policy: str, memory: str | None = None, skip: bool = False,
         compiled: bool | None = None) -> tuple[np.ndarray, np.ndarray, Unit | None]:
    """Offsets and memory indices per unit (problem order) after placing the units ``order``
    (indices, see ``arrays.indices``) in turn; the unit that found no room (its and later units'
    entries are -1), or None. ``memory``: place in that one only; ``skip``: a unit that finds no
    room is left out (-1) and the rest still placed. ``compiled``: which form runs (``kernels.pick``)."""
    a = arrays(problem)
    run = pick(_pack, len(order), compiled)
    off, where, failed = run(order, layout(a.size), a.units, POLICY[policy], -1 if memory is None else a.names.index(memory),
                             skip, np.zeros(len(a.names), np.int64), NONE)
    return off, where, None if failed < 0 else problem.units[failed]


def pack_below(problem: Problem, order: np.ndarray, policy: str, weights: dict[str, int], stop: int,
               compiled: bool | None = None) -> tuple[np.ndarray, np.ndarray, Unit | None] | None:
    """``pack``, or None as soon as the memories' peaks weighted by ``weights`` reach ``stop``
    (they only grow as units are placed: the plan could not weigh less than ``stop``)."""
    a = arrays(problem)
    run = pick(_pack, len(order), compiled)
    off, where, failed = run(order, layout(a.size), a.units, POLICY[policy], -1, False,
                             np.array([weights[m] for m in a.names], np.int64), stop)
    if failed == -2:
        return None
    return off, where, None if failed < 0 else problem.units[failed]
