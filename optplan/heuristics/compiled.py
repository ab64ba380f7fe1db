"""The greedy packer of ``packer.py`` compiled with numba: same placements, much faster.

``packer.Packer`` is the readable reference; this module does exactly what ``greedy`` does with
it (the tests compare them plan for plan on random problems with hypothesis) for the whole
constraint model: several memories tried fastest first, alignment (per-memory modulus),
fixed offsets, relative placements (units with several members and a low edge), gaps (units
with several pieces), capacities, and the three policies.

The time index differs from the reference's (same answers, less to read). A placed rectangle
over the elementary time slots ``[a, b)`` meets a query's slots ``[l, r)`` iff it covers slot
``l`` or starts inside ``(l, r)``, so each memory keeps two trees over the slots:

* ``stab`` (fan-out ``STAB_FANOUT``): a rectangle goes into its canonical nodes; the ones
  covering slot ``l`` are those stored on ``l``'s path to the root, a handful of nodes. With a
  binary tree they were spread over ~17 nodes per path, each a fragment of what is alive
  there, and reading them dominated.
* ``start`` (fan-out ``START_FANOUT``): a rectangle goes into every node on its first slot's
  path; the ones starting in ``(l, r)`` are read at that range's canonical nodes.

Each node keeps the union of the byte ranges stored there as a sorted list of disjoint,
non-touching ranges in one shared arena (pairs ``lo, hi``; a node's block moves to the arena's
end, twice as large, when it fills). A query turns the lists it reads into runs of forbidden
root offsets; first fit walks the runs side by side up to the lowest gap, the other policies
merge them into one sorted list first.
"""

from __future__ import annotations

import heapq
import itertools
import weakref
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np
from numba import njit

from optplan.core.columns import distinct, gc_paused
from optplan.core.objective import Objective
from optplan.core.plan import Layout, Placement
from optplan.core.problem import Problem
from optplan.core.units import Unit

_POLICY = {"first": 0, "best": 1, "heap": 2}
_NONE = np.iinfo(np.int64).max  # no capacity / nothing found
STAB_FANOUT, START_FANOUT = 16, 4  # measured on S_1-shaped instances of 28k-62k buffers
SKY_CHUNK = 32  # breakpoints per chunk of an object's skyline (banked-greedy)
_MAX_IDS = 512  # lists one piece's query reads: far more than both trees' depths need


@lru_cache(maxsize=64)
def _layout(slots: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Where each level of the two trees over ``slots`` leaves starts among a memory's stores,
    each level's fan-out (the root's is a dummy 2), and the stores per memory."""
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
    return out[0], out[1], out[2], out[3], first


@njit(cache=True)
def _room(ar: np.ndarray, need: int) -> np.ndarray:
    """The arena with room for ``need`` ranges (doubled when short)."""
    if 2 * need <= len(ar):
        return ar
    bigger = np.empty(max(2 * len(ar), 2 * need), np.int64)
    bigger[:len(ar)] = ar
    return bigger


@njit(cache=True, inline="always")
def _insert(s, y0, y1, meta, ar, used):
    """Add ``[y0, y1)`` to the union kept at store ``s``; returns the (maybe moved) arena."""
    n = meta[3 * s + 1]
    if meta[3 * s + 2] == 0:
        ar = _room(ar, used + 4)
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
        ar = _room(ar, used + c)
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
    return ar, used


@njit(cache=True, inline="always")
def _lists(base, so, sf, to, tf, l, r, ids, k):
    """Append to ``ids[k:]`` the stores a query for slots ``[l, r)`` reads: the stab path of slot
    ``l`` and the start tree's canonical nodes of ``(l, r)``; returns the new end."""
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


@njit(cache=True)
def _store(base, so, sf, to, tf, l, r, y0, y1, meta, ar, used):
    """Index the rectangle slots ``[l, r)`` x bytes ``[y0, y1)``: at its canonical nodes in the
    stab tree, on its first slot's path in the start tree."""
    a, b, lv = l, r, 0
    while a < b:
        f = sf[lv]
        while a < b and a % f:
            ar, used = _insert(base + so[lv] + a, y0, y1, meta, ar, used)
            a += 1
        while a < b and b % f:
            b -= 1
            ar, used = _insert(base + so[lv] + b, y0, y1, meta, ar, used)
        a //= f
        b //= f
        lv += 1
    j = l
    for lv in range(len(to)):
        ar, used = _insert(base + to[lv] + j, y0, y1, meta, ar, used)
        j //= tf[lv]
    return ar, used


@njit(cache=True)
def _gather(ids, k, py0, py1, low_edge, meta, ar, flo, fhi, cnt, runs, nruns):
    """Append, one sorted run per store in ``ids[:k]``, the root offsets its ranges forbid to a
    piece ``[py0, py1)`` (collision iff y0 - py1 < o < y1 - py0), those reaching ``low_edge``."""
    need = cnt
    for q in range(k):
        need += meta[3 * ids[q] + 1]
    if need > len(flo):
        c = max(2 * len(flo), need)
        bigger = np.empty(c, np.int64)
        bigger[:cnt] = flo[:cnt]
        flo = bigger
        bigger = np.empty(c, np.int64)
        bigger[:cnt] = fhi[:cnt]
        fhi = bigger
    if nruns + k + 1 > len(runs):
        bigger = np.zeros(2 * (nruns + k + 1), np.int64)
        bigger[:nruns + 1] = runs[:nruns + 1]
        runs = bigger
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
    return flo, fhi, cnt, runs, nruns


@njit(cache=True)
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


@njit(cache=True)
def _choose(flo, fhi, cnt, low_edge, limit, m, r, policy, heap_top, fixed):
    """The offset the reference's ``Packer.fit`` picks among the gaps between the sorted,
    disjoint forbidden ranges ``[flo, fhi]`` (none below ``low_edge``), or _NONE."""
    best, best_room = _NONE, _NONE
    free = low_edge
    for i in range(cnt):
        if flo[i] - 1 >= free:  # the gap [free, flo[i] - 1]
            glo, ghi = free, flo[i] - 1
            if fixed != _NONE:
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
    if fixed != _NONE:
        return fixed if fixed >= glo else _NONE
    otop = glo + (r - glo) % m
    if otop > limit:
        return best
    if policy == 2 and otop <= heap_top and heap_top - glo < best_room:
        return otop
    return best if best != _NONE else otop


@njit(cache=True)
def _walk(ids, q0, q1, k, low_edge, limit, m, r, meta, ar, ptr, end):
    """``_choose`` for first fit straight off the stores ``ids[:k]`` (a piece ``[q0, q1)`` each):
    their lists are walked side by side only up to the lowest gap that takes the unit, usually
    far below the top of what they hold, without copying or merging them."""
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
            return _NONE
        nxt = _NONE  # the gap [free, nxt - 1]
        for q in range(k):
            if ptr[q] < end[q]:
                nxt = min(nxt, ar[2 * ptr[q]] - q1[q] + 1)
        o = free + (r - free) % m
        if o <= min(nxt - 1, limit):
            return o
        if nxt == _NONE:
            return _NONE
        free = nxt


@njit(cache=True)
def _fit(base, so, sf, to, tf, u, p_ptr, p_l, p_r, p_y0, p_y1, low_edge, limit, m, r, policy, heap_top, fixed,
         meta, ar, sc, ids):
    """The root offset for unit ``u`` in the memory whose stores start at ``base``, or _NONE."""
    if policy == 0 and fixed == _NONE:
        q0, q1, ptr, end = sc[5], sc[6], sc[7], sc[8]
        k = 0
        for p in range(p_ptr[u], p_ptr[u + 1]):
            k0 = k
            k = _lists(base, so, sf, to, tf, p_l[p], p_r[p], ids, k)
            q0[k0:k] = p_y0[p]
            q1[k0:k] = p_y1[p]
        return _walk(ids, q0, q1, k, low_edge, limit, m, r, meta, ar, ptr, end)
    flo, fhi, tlo, thi, runs = sc[0], sc[1], sc[2], sc[3], sc[4]
    cnt = nruns = 0
    runs[0] = 0
    for p in range(p_ptr[u], p_ptr[u + 1]):
        k = _lists(base, so, sf, to, tf, p_l[p], p_r[p], ids, 0)
        flo, fhi, cnt, runs, nruns = _gather(ids, k, p_y0[p], p_y1[p], low_edge, meta, ar, flo, fhi, cnt, runs, nruns)
    if nruns > 1:
        flo, fhi, tlo, thi = _union(flo, fhi, runs, nruns, tlo, thi)
        cnt = runs[1]
    sc[0], sc[1], sc[2], sc[3], sc[4] = flo, fhi, tlo, thi, runs
    return _choose(flo, fhi, cnt, low_edge, limit, m, r, policy, heap_top, fixed)


@njit(cache=True)
def _scratch():
    """Growable buffers of a query (0-4: runs and their union) and per-store ones (5-8)."""
    return [np.empty(4096 if i < 5 else _MAX_IDS, np.int64) for i in range(9)]


@njit(cache=True, nogil=True)  # threads of the portfolio run heuristics side by side
def _pack(order, so, sf, to, tf, stores, n_mem, p_ptr, p_l, p_r, p_y0, p_y1, low, high, top, fixed,
          m_ptr, m_mem, m_mod, m_res, capacity, policy, only, skip, weight, stop):
    """Place units in ``order``; returns (offset, memory index) per unit and the failed unit or -1
    (-2: stopped, the peaks weighted by ``weight`` reached ``stop``; _NONE: never).
    ``only`` >= 0: that memory alone; ``skip``: a unit that fits nowhere is left out (-1), not fatal."""
    n = len(low)
    off = np.full(n, -1, np.int64)
    where = np.full(n, -1, np.int64)
    meta = np.zeros(n_mem * stores * 3, np.int64)  # per store: arena start, length, capacity
    ar, used = np.empty(1 << 17, np.int64), 0
    heap = np.zeros(n_mem, np.int64)
    sc = _scratch()
    ids = np.empty(_MAX_IDS, np.int64)
    if stop != _NONE and stop <= 0:  # the peaks start at 0
        return off, where, -2
    for u in order:
        for k in range(m_ptr[u], m_ptr[u + 1]):
            mem = m_mem[k]
            if only >= 0 and mem != only:
                continue
            limit = _NONE if capacity[mem] < 0 else capacity[mem] - high[u]
            if limit != _NONE and (limit < -low[u] or (fixed[u] != _NONE and fixed[u] > limit)):
                continue
            base = mem * stores
            o = _fit(base, so, sf, to, tf, u, p_ptr, p_l, p_r, p_y0, p_y1, -low[u], limit, m_mod[k], m_res[k], policy,
                     heap[mem] - high[u], fixed[u], meta, ar, sc, ids)
            if o == _NONE:
                continue
            off[u], where[u] = o, mem
            for p in range(p_ptr[u], p_ptr[u + 1]):
                ar, used = _store(base, so, sf, to, tf, p_l[p], p_r[p], o + p_y0[p], o + p_y1[p], meta, ar, used)
            if p_ptr[u + 1] > p_ptr[u] and o + top[u] > heap[mem]:
                heap[mem] = o + top[u]
                if stop != _NONE and np.sum(weight * heap) >= stop:
                    return off, where, -2
            break
        if off[u] < 0 and not skip:
            return off, where, u
    return off, where, -1


@njit(cache=True)
def _idle(base, so, sf, to, tf, u, obj_base, obj_size, nobj, m, r, p_ptr, p_l, p_r, low, high, meta, ar, sc, ids):
    """The first object (creation order) with nobody alive with ``u`` that holds it at offset 0
    (large enough, aligned), or -1: the lowest free ids in the object-id index at ``base``."""
    q0, q1, ptr, end = sc[5], sc[6], sc[7], sc[8]
    k = 0
    for p in range(p_ptr[u], p_ptr[u + 1]):  # object j is the range [j, j + 1): forbids "offset" j
        k = _lists(base, so, sf, to, tf, p_l[p], p_r[p], ids, k)
    q0[:k] = 0
    q1[:k] = 1
    j = 0
    while True:
        j = _walk(ids, q0, q1, k, j, nobj - 1, 1, 0, meta, ar, ptr, end)
        if j == _NONE:
            return -1
        if obj_size[j] >= high[u] - low[u] and (obj_base[j] - low[u] - r) % m == 0:
            return j
        j += 1


@njit(cache=True)
def _move(a, lo, hi, d):
    """Shift ``a[lo:hi]`` by ``d`` places (overlapping)."""
    if d > 0:
        for k in range(hi - 1, lo - 1, -1):
            a[k + d] = a[k]
    elif d < 0:
        for k in range(lo, hi):
            a[k + d] = a[k]


@njit(cache=True, inline="always")
def _chunk(g, ci, dm, dr):
    """The start in ``cs`` of chunk ``ci`` (directory position) of object ``g``."""
    return dm[4 * g + 3] if ci == 0 else dr[3 * (dm[4 * g] + ci) + 1]


@njit(cache=True, inline="always")
def _sky_find(g, x, dm, dr, cs):
    """The first breakpoint of object ``g`` at a slot >= ``x``: (directory position, position in
    that chunk); (chunks, 0) past the end."""
    d0, nd = dm[4 * g], dm[4 * g + 1]
    if nd < 2:  # one chunk: no directory to read
        lo = nd if nd and cs[dm[4 * g + 3] + 2] <= x else 0
    else:
        lo, hi = 0, nd  # the chunks starting at or before x
        while lo < hi:
            mid = (lo + hi) >> 1
            if dr[3 * (d0 + mid)] <= x:
                lo = mid + 1
            else:
                hi = mid
    if lo == 0:
        return 0, 0
    c = _chunk(g, lo - 1, dm, dr)
    a, b = 0, cs[c]
    while a < b:
        mid = (a + b) >> 1
        if cs[c + 2 + 2 * mid] < x:
            a = mid + 1
        else:
            b = mid
    return (lo, 0) if a == cs[c] else (lo - 1, a)


@njit(cache=True, inline="always")
def _sky_before(g, ci, pos, dm, dr, cs):
    """The top just before breakpoint (``ci``, ``pos``) of object ``g`` (0 before the first)."""
    if pos:
        return cs[_chunk(g, ci, dm, dr) + 1 + 2 * pos]
    if ci:
        c = _chunk(g, ci - 1, dm, dr)
        return cs[c + 1 + 2 * cs[c]]
    return 0


@njit(cache=True, inline="always")
def _sky_max(g, l, r, dm, dr, cs):
    """The highest top in object ``g`` over slots ``[l, r)`` (0: nothing there).

    An object's skyline is a sorted list of breakpoints (slot, top from that slot on) in chunks
    of 1 to ``ch`` (in ``cs``: its length, its room, then the pairs; the room doubles up to ``ch``,
    so that objects with a few breakpoints stay small). Object g's directory at
    ``dr[3 * dm[4 * g]:]`` holds (first slot, chunk, highest top) per chunk in order
    (``dm[4 * g + 1]`` of them, room for ``dm[4 * g + 2]``; the first chunk also at
    ``dm[4 * g + 3]``): a query over many chunks reads the directory only. A change touches a
    chunk or two, where one sorted array would shift thousands of breakpoints per unit in the
    objects that hold many units (the first objects take most small units: 5,202 of 62k)."""
    d0, nd = dm[4 * g], dm[4 * g + 1]
    if nd < 2:  # one chunk (or none): a sorted array
        c, n = dm[4 * g + 3], cs[dm[4 * g + 3]] if nd else 0
        a, b = 0, n  # the first breakpoint after l
        while a < b:
            mid = (a + b) >> 1
            if cs[c + 2 + 2 * mid] <= l:
                a = mid + 1
            else:
                b = mid
        best = cs[c + 1 + 2 * a] if a else 0
        while a < n and cs[c + 2 + 2 * a] < r:
            best = max(best, cs[c + 3 + 2 * a])
            a += 1
        return best
    ci, pos = _sky_find(g, l + 1, dm, dr, cs)
    best = _sky_before(g, ci, pos, dm, dr, cs)
    while ci < nd:
        if pos == 0 and ci + 1 < nd and dr[3 * (d0 + ci + 1)] <= r:  # the whole chunk is before r
            best = max(best, dr[3 * (d0 + ci) + 2])
        else:
            c = _chunk(g, ci, dm, dr)
            while pos < cs[c]:
                if cs[c + 2 + 2 * pos] >= r:
                    return best
                best = max(best, cs[c + 3 + 2 * pos])
                pos += 1
        ci, pos = ci + 1, 0
    return best


@njit(cache=True)
def _sky_top(g, ci, dm, dr, cs):
    """Note chunk ``ci``'s first slot and highest top in object ``g``'s directory."""
    c = _chunk(g, ci, dm, dr)
    top = 0
    for k in range(cs[c]):
        top = max(top, cs[c + 3 + 2 * k])
    e = 3 * (dm[4 * g] + ci)
    dr[e], dr[e + 2] = cs[c + 2], top


@njit(cache=True)
def _sky_cut(g, ci, pos, w, dm, dr, cs):
    """Remove ``w`` breakpoints of object ``g`` from (``ci``, ``pos``) on; emptied chunks leave
    the directory."""
    d0 = dm[4 * g]
    while w:
        c = _chunk(g, ci, dm, dr)
        k = min(w, cs[c] - pos)
        _move(cs, c + 2 + 2 * (pos + k), c + 2 + 2 * cs[c], -2 * k)
        cs[c] -= k
        w -= k
        if cs[c] == 0:
            _move(dr, 3 * (d0 + ci + 1), 3 * (d0 + dm[4 * g + 1]), -3)
            dm[4 * g + 1] -= 1
            dm[4 * g + 3] = dr[3 * d0 + 1]
        else:
            _sky_top(g, ci, dm, dr, cs)
            ci += 1
        pos = 0


@njit(cache=True)
def _sky_alloc(cs, dm, cap):
    """Room for a chunk of ``cap`` breakpoints at the end of ``cs`` (``dm[-2]``: its use);
    returns the (maybe grown) array and the chunk's start."""
    c = dm[-2]
    if c + 2 + 2 * cap > len(cs):
        bigger = np.empty(max(2 * len(cs), c + 2 + 2 * cap), np.int64)
        bigger[:c] = cs[:c]
        cs = bigger
    dm[-2] = c + 2 + 2 * cap
    cs[c], cs[c + 1] = 0, cap
    return cs, c


@njit(cache=True)
def _sky_chunk(g, at, dm, dr, cs, cap):
    """A new, empty chunk of room ``cap`` at directory position ``at`` of object ``g`` (the caller
    fills it and its directory entry); returns the (maybe grown) arrays. ``dm[-1]``: directory
    entries in use."""
    cs, c = _sky_alloc(cs, dm, cap)
    nd = dm[4 * g + 1]
    if nd == dm[4 * g + 2]:  # the directory moves to the arena's end, twice as large
        room, used = max(2, 2 * nd), dm[-1]
        if 3 * (used + room) > len(dr):
            bigger = np.empty(max(2 * len(dr), 3 * (used + room)), np.int64)
            bigger[:3 * used] = dr[:3 * used]
            dr = bigger
        dr[3 * used:3 * (used + nd)] = dr[3 * dm[4 * g]:3 * (dm[4 * g] + nd)]
        dm[4 * g], dm[4 * g + 2] = used, room
        dm[-1] = used + room
    d0 = dm[4 * g]
    _move(dr, 3 * (d0 + at), 3 * (d0 + nd), 3)
    dr[3 * (d0 + at) + 1] = c
    dm[4 * g + 3] = dr[3 * d0 + 1]
    dm[4 * g + 1] = nd + 1
    return dr, cs


@njit(cache=True)
def _sky_put(g, x, v, dm, dr, cs, ch):
    """Insert the breakpoint (``x``, ``v``) into object ``g``'s skyline (none at ``x`` there);
    a full chunk splits in two. Returns the (maybe grown) arrays."""
    ci, pos = _sky_find(g, x, dm, dr, cs)
    nd = dm[4 * g + 1]
    if ci == nd:  # past the end: the last chunk, or a new one
        if nd and cs[_chunk(g, nd - 1, dm, dr)] < ch:
            ci, pos = nd - 1, cs[_chunk(g, nd - 1, dm, dr)]
        else:
            dr, cs = _sky_chunk(g, nd, dm, dr, cs, min(ch, 2))
    c = _chunk(g, ci, dm, dr)
    if cs[c] == cs[c + 1] < ch:  # a full chunk below ``ch`` moves to the end, twice as large
        n = cs[c]
        cs, c2 = _sky_alloc(cs, dm, min(ch, 2 * n))
        cs[c2 + 2:c2 + 2 + 2 * n] = cs[c + 2:c + 2 + 2 * n]
        cs[c2] = n
        dr[3 * (dm[4 * g] + ci) + 1] = c = c2
        dm[4 * g + 3] = dr[3 * dm[4 * g] + 1]
    if cs[c] == ch:  # split: the upper half moves to a new chunk after it
        dr, cs = _sky_chunk(g, ci + 1, dm, dr, cs, ch)
        c2, half = _chunk(g, ci + 1, dm, dr), ch // 2
        cs[c2 + 2:c2 + 2 + 2 * (ch - half)] = cs[c + 2 + 2 * half:c + 2 + 2 * ch]
        cs[c2], cs[c] = ch - half, half
        _sky_top(g, ci, dm, dr, cs)
        _sky_top(g, ci + 1, dm, dr, cs)
        if pos > half:
            c, pos, ci = c2, pos - half, ci + 1
    _move(cs, c + 2 + 2 * pos, c + 2 + 2 * cs[c], 2)
    cs[c + 2 + 2 * pos], cs[c + 3 + 2 * pos] = x, v
    cs[c] += 1
    _sky_top(g, ci, dm, dr, cs)
    return dr, cs


@njit(cache=True)
def _sky_raise(g, l, r, v, dm, dr, cs, ch, tmp):
    """Raise object ``g``'s skyline to at least ``v`` over slots ``[l, r)``: its breakpoints in
    ``[l, r]`` are rewritten, equal neighbours merged. Returns the (maybe grown) arrays."""
    ci, pos = _sky_find(g, l, dm, dr, cs)
    old = last = _sky_before(g, ci, pos, dm, dr, cs)  # the old top, and the new one last written
    cnt = w = 0
    nd = dm[4 * g + 1]
    i, p = ci, pos
    c = _chunk(g, i, dm, dr) if i < nd else 0
    while True:  # the old breakpoints in [l, r] (w of them); new ones at l, in between and at r
        if i < nd and p == cs[c]:
            i, p = i + 1, 0
            c = _chunk(g, i, dm, dr) if i < nd else 0
            continue
        x = cs[c + 2 + 2 * p] if i < nd else r + 1
        if len(tmp) < 2 * cnt + 4:
            bigger = np.empty(2 * len(tmp), np.int64)
            bigger[:2 * cnt] = tmp[:2 * cnt]
            tmp = bigger
        if w == 0 and x > l and max(old, v) != last:  # no breakpoint at l: the new top from l on
            tmp[0], tmp[1], last, cnt = l, max(old, v), max(old, v), 1
        if x > r:
            if old != last:  # from r on: the old top again
                tmp[2 * cnt], tmp[2 * cnt + 1], cnt = r, old, cnt + 1
            break
        old = cs[c + 3 + 2 * p]
        new = old if x == r else max(old, v)
        if new != last:
            tmp[2 * cnt], tmp[2 * cnt + 1], last, cnt = x, new, new, cnt + 1
        w += 1
        p += 1
        if x == r:
            break
    _sky_cut(g, ci, pos, w, dm, dr, cs)
    for k in range(cnt):
        dr, cs = _sky_put(g, tmp[2 * k], tmp[2 * k + 1], dm, dr, cs, ch)
    return dr, cs, tmp


@njit(cache=True)
def _above(g0, nobj, u, obj_base, obj_size, m, r, p_ptr, p_l, p_r, low, high, dm, dr, cs):
    """The root offset of ``u`` in the first busy object (creation order) with room above what is
    alive in it with ``u`` (the objects' skylines from ``g0`` on), or _NONE."""
    for k in range(nobj):
        reach = 0
        for p in range(p_ptr[u], p_ptr[u + 1]):
            reach = max(reach, _sky_max(g0 + k, p_l[p], p_r[p], dm, dr, cs))
        if reach == 0:  # idle (too small or misaligned)
            continue
        x = obj_base[k] + reach - low[u]
        o = x + (r - x) % m
        if o + high[u] <= obj_base[k] + obj_size[k]:
            return o
    return _NONE


@njit(cache=True, nogil=True)
def _banked(order, so, sf, to, tf, stores, n_mem, p_ptr, p_l, p_r, p_y0, p_y1, low, high, m_ptr, m_mem,
            m_mod, m_res, capacity, ch):
    """``banked_greedy`` without pinned units: (offset, memory index) per unit, failed unit or -1.
    Each bank keeps an index of object ids over time (which objects are idle) and each object
    its skyline (how high it is filled over time: the highest top of its units alive then)."""
    n = len(low)
    off = np.full(n, -1, np.int64)
    where = np.full(n, -1, np.int64)
    meta = np.zeros(n_mem * stores * 3, np.int64)  # id index of memory i at i
    ar, used = np.empty(1 << 17, np.int64), 0
    dm = np.zeros(4 * n_mem * (n + 1) + 2, np.int64)  # skylines (``_sky_max``): object k of memory i at i * (n + 1) + k
    dr, cs, tmp = np.empty(1536, np.int64), np.empty(1 << 16, np.int64), np.empty(64, np.int64)
    obj_base = np.zeros((n_mem, n + 1), np.int64)
    obj_size = np.zeros((n_mem, n + 1), np.int64)
    nobj = np.zeros(n_mem, np.int64)
    cursor = np.zeros(n_mem, np.int64)
    sc = _scratch()
    ids = np.empty(_MAX_IDS, np.int64)
    for u in order:
        for k in range(m_ptr[u], m_ptr[u + 1]):
            mem, m, r = m_mem[k], m_mod[k], m_res[k]
            x = -low[u]
            lowest = x + (r - x) % m
            if p_ptr[u + 1] == p_ptr[u]:  # stores nothing: the lowest legal offset where it fits
                if capacity[mem] < 0 or lowest + high[u] <= capacity[mem]:
                    off[u], where[u] = lowest, mem
                    break
                continue
            ids_at, g0 = mem * stores, mem * (n + 1)
            j = -1 if nobj[mem] == 0 else _idle(ids_at, so, sf, to, tf, u, obj_base[mem], obj_size[mem], nobj[mem],
                                                m, r, p_ptr, p_l, p_r, low, high, meta, ar, sc, ids)
            if j >= 0:
                root = obj_base[mem, j] - low[u]
            else:
                root = _above(g0, nobj[mem], u, obj_base[mem], obj_size[mem], m, r, p_ptr, p_l, p_r, low, high, dm, dr, cs)
            if root == _NONE:  # a new object, if the bank has room for it
                x = max(cursor[mem] - low[u], -low[u])
                root = x + (r - x) % m
                if capacity[mem] >= 0 and root + high[u] > capacity[mem]:
                    continue
                obj_base[mem, nobj[mem]], obj_size[mem, nobj[mem]] = root + low[u], high[u] - low[u]
                nobj[mem] += 1
                cursor[mem] = root + high[u]
            j = np.searchsorted(obj_base[mem, :nobj[mem]], root + low[u], side="right") - 1
            for p in range(p_ptr[u], p_ptr[u + 1]):
                dr, cs, tmp = _sky_raise(g0 + j, p_l[p], p_r[p], root + p_y1[p] - obj_base[mem, j], dm, dr, cs, ch, tmp)
                ar, used = _store(ids_at, so, sf, to, tf, p_l[p], p_r[p], j, j + 1, meta, ar, used)
            off[u], where[u] = root, mem
            break
        if off[u] < 0:
            return off, where, u, nobj
    return off, where, -1, nobj


@njit(cache=True)
def _heap_push(keys, vals, lo, n, key, val):
    """Push into the binary min-heap ``keys/vals[lo:lo + n]``."""
    i = n
    while i > 0:
        parent = (i - 1) >> 1
        if keys[lo + parent] <= key:
            break
        keys[lo + i], vals[lo + i] = keys[lo + parent], vals[lo + parent]
        i = parent
    keys[lo + i], vals[lo + i] = key, val


@njit(cache=True)
def _heap_pop(keys, vals, lo, n):
    """Pop the least of the binary min-heap ``keys/vals[lo:lo + n]``: (key, value)."""
    key, val = keys[lo], vals[lo]
    n -= 1
    lk, lv = keys[lo + n], vals[lo + n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and keys[lo + c + 1] < keys[lo + c]:
            c += 1
        if keys[lo + c] >= lk:
            break
        keys[lo + i], vals[lo + i] = keys[lo + c], vals[lo + c]
        i = c
    keys[lo + i], vals[lo + i] = lk, lv
    return key, val


@njit(cache=True)
def _count(tree, leaf, delta):
    """Add ``delta`` free slots at size rank ``leaf`` of a count tree (leaves at len(tree) // 2)."""
    i = leaf + len(tree) // 2
    while i >= 1:
        tree[i] += delta
        i >>= 1


@njit(cache=True)
def _next_rank(tree, leaf):
    """The least size rank >= ``leaf`` holding a free slot, or -1."""
    half = len(tree) // 2
    i = leaf + half
    if tree[i]:
        return leaf
    while i > 1:  # climb until a right sibling holds one
        if i & 1 == 0 and tree[i + 1]:
            i += 1
            while i < half:
                i = 2 * i if tree[2 * i] else 2 * i + 1
            return i - half
        i >>= 1
    return -1


@njit(cache=True)
def _take(mem, rank0, s_base, low, m, r, tree, hk, hv, hstart, hlen, spare_k, spare_v):
    """Remove and return the free slot of ``mem`` least by (size, tie) among those of size rank
    >= ``rank0`` where a root lands aligned (base - low = r mod m), or -1. Free slots of one size
    wait in a heap by tie; misaligned ones met on the way go back."""
    rank = _next_rank(tree[mem], rank0)
    while rank >= 0:
        lo, found, kept = hstart[rank], -1, 0
        while hlen[mem, rank] and found < 0:
            key, sl = _heap_pop(hk[mem], hv[mem], lo, hlen[mem, rank])
            hlen[mem, rank] -= 1
            if (s_base[sl] - low - r) % m == 0:
                found = sl
            else:
                spare_k[kept], spare_v[kept] = key, sl
                kept += 1
        for q in range(kept):
            _heap_push(hk[mem], hv[mem], lo, hlen[mem, rank], spare_k[q], spare_v[q])
            hlen[mem, rank] += 1
        if found >= 0:
            _count(tree[mem], rank, -1)
            return found
        rank = _next_rank(tree[mem], rank + 1) if rank + 1 < len(tree[mem]) // 2 else -1
    return -1


@njit(cache=True, nogil=True)
def _recycle(order, start, end, p_ptr, low, high, m_ptr, m_mem, m_mod, m_res, capacity, rank, hstart):
    """``recycle`` without pinned units or vector clocks: (root offset, memory index) per unit,
    bytes kept per memory, and the failed unit or -1 (and 0: no room for an extent, 1: no slot).
    ``rank``: each unit's size rank among the distinct unit heights; a rank's free slots (at most
    as many as units of that height) live in ``hstart[rank]`` onwards of the heap arrays."""
    n, n_mem, ranks = len(low), len(capacity), len(hstart)
    off = np.full(n, -1, np.int64)
    where = np.full(n, -1, np.int64)
    kept, cursor = np.zeros(n_mem, np.int64), np.zeros(n_mem, np.int64)
    s_base, s_mem, s_rank = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    ns = 0
    half = 1
    while half < ranks:
        half *= 2
    tree = np.zeros((n_mem, 2 * half), np.int64)  # free slots per size rank, summed up the tree
    hk, hv = np.empty((n_mem, n), np.int64), np.empty((n_mem, n), np.int64)
    hlen = np.zeros((n_mem, ranks), np.int64)
    spare_k, spare_v = np.empty(n, np.int64), np.empty(n, np.int64)
    busy = [(np.int64(0), np.int64(0), np.int64(0)) for _ in range(0)]  # (end, tie, slot) of slots in use
    for pos in range(len(order)):
        u = order[pos]
        empty = p_ptr[u + 1] == p_ptr[u]
        if not empty:  # slots whose user has ended return to the free lists
            while len(busy) and busy[0][0] <= start[u]:
                _, tie, sl = heapq.heappop(busy)
                mem, rk = s_mem[sl], s_rank[sl]
                _heap_push(hk[mem], hv[mem], hstart[rk], hlen[mem, rk], tie, sl)
                hlen[mem, rk] += 1
                _count(tree[mem], rk, 1)
        for k in range(m_ptr[u], m_ptr[u + 1]):
            mem, m, r = m_mem[k], m_mod[k], m_res[k]
            if empty:  # nothing to store: the lowest legal offset, if the extent fits
                x = -low[u]
                o = x + (r - x) % m
                if capacity[mem] < 0 or o + high[u] <= capacity[mem]:
                    off[u], where[u] = o, mem
                    break
                continue
            sl = _take(mem, rank[u], s_base, low[u], m, r, tree, hk, hv, hstart, hlen, spare_k, spare_v)
            if sl < 0:  # a new slot above the others, if the memory has room for it
                x = max(cursor[mem] - low[u], -low[u])
                o = x + (r - x) % m
                if capacity[mem] >= 0 and o + high[u] > capacity[mem]:
                    continue
                sl = ns
                ns += 1
                s_base[sl], s_mem[sl], s_rank[sl] = o + low[u], mem, rank[u]
                cursor[mem] = o + high[u]
                kept[mem] += high[u] - low[u]
            off[u], where[u] = s_base[sl] - low[u], mem
            heapq.heappush(busy, (end[u], np.int64(pos), sl))
            break
        if off[u] < 0:
            return off, where, kept, u, 0 if empty else 1
    return off, where, kept, -1, 0


def recycle(problem: Problem, order: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, Unit | None, int]:
    """``recycle`` for problems without pinned units or vector clocks, units in ``order`` (indices)."""
    a = arrays(problem)
    sizes, rank, count = np.unique(a.high - a.low, return_inverse=True, return_counts=True)
    hstart = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    off, where, kept, failed, why = _recycle(order, a.start, a.end, a.p_ptr, a.low, a.high, a.m_ptr, a.m_mem, a.m_mod,
                                             a.m_res, a.capacity, rank.astype(np.int64), hstart)
    return off, where, kept, None if failed < 0 else problem.units[failed], why


def banked(problem: Problem, chunk: int = SKY_CHUNK) -> tuple[np.ndarray, np.ndarray, Unit | None, np.ndarray]:
    """``banked_greedy`` for problems without pinned units (those stay with the reference);
    ``chunk``: breakpoints per chunk of the skylines (tests split chunks often with a small one)."""
    a = arrays(problem)
    units = problem.units
    height = a.high - a.low
    order = np.lexsort((-np.arange(len(units)), -height)).astype(np.int64)  # (-height, -i)
    off, where, failed, nobj = _banked(order, *_layout(a.size), len(a.names), a.p_ptr, a.p_l, a.p_r, a.p_y0, a.p_y1,
                                       a.low, a.high, a.m_ptr, a.m_mem, a.m_mod, a.m_res, a.capacity, chunk)
    return off, where, None if failed < 0 else units[failed], nobj


class Arrays:
    """A problem's units as flat arrays for the kernels and the orders (built once per problem,
    kept weakly): pieces in unit order, slots of the time index, per-unit fields."""

    def __init__(self, problem: Problem) -> None:
        self.problem = weakref.ref(problem)
        n = problem.unit_count
        self._index: dict[int, int] | None = None
        names = problem.memory_names
        if problem.columns.plain:
            counts = self._plain(problem)
        else:
            counts = self._units(problem)
        self.capacity = np.array([-1 if m.capacity is None else m.capacity for m in problem.memories], np.int64)
        self.names = names
        self.root_rank: np.ndarray | None = None  # ``root_rank``, on first use
        self.times = times = distinct(np.concatenate([self.p_t0, self.p_t1]))  # slot k: [times[k], times[k + 1])
        size = 1
        while size < max(len(times) - 1, 1):
            size *= 2
        self.size = size
        self.p_l = np.searchsorted(times, self.p_t0).astype(np.int64)
        self.p_r = np.searchsorted(times, self.p_t1).astype(np.int64)
        # per unit, as the orders read them: lifetime span (0, 0 if it stores nothing) and area
        sized = counts > 0
        first = self.p_ptr[:-1][sized]
        self.start = np.zeros(n, np.int64)
        self.end = np.zeros(n, np.int64)
        self.area = np.zeros(n, np.int64)
        if len(first):
            self.start[sized] = np.minimum.reduceat(self.p_t0, first)
            self.end[sized] = np.maximum.reduceat(self.p_t1, first)
            spans, heights = self.p_t1 - self.p_t0, self.p_y1 - self.p_y0
            rough = np.add.reduceat(spans.astype(np.float64) * heights, first)
            if rough.max() >= 2.0**62:  # int64 products would wrap: areas only order units, floats do
                self.area = self.area.astype(np.float64)
                self.area[sized] = rough
            else:
                self.area[sized] = np.add.reduceat(spans * heights, first)

    @property
    def index(self) -> dict[int, int]:
        """``id(unit)`` -> its index in ``problem.units`` (made on first use: the orders are index
        arrays, and a problem read from columns makes its units only when asked)."""
        if self._index is None:
            problem = self.problem()
            assert problem is not None  # (kept weakly by the cache, while the problem lives)
            self._index = {id(u): i for i, u in enumerate(problem.units)}
        return self._index

    def _plain(self, problem: Problem) -> np.ndarray:
        """The fields of plain units (one per buffer, one piece if it has bytes, any memory) from
        the problem's columns, without a pass over the units."""
        cols, n, k = problem.columns, len(problem.buffers), len(problem.memories)
        counts = (cols.size > 0).astype(np.int64)
        self.p_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=self.p_ptr[1:])
        held = counts > 0
        self.p_t0, self.p_t1 = cols.start[held], cols.end[held]
        self.p_y0, self.p_y1 = np.zeros(int(held.sum()), np.int64), cols.size[held]
        self.low, self.high, self.top = np.zeros(n, np.int64), cols.size.copy(), cols.size.copy()
        self.fixed = np.full(n, _NONE, np.int64)
        self.m_ptr = np.arange(0, k * (n + 1), k, dtype=np.int64)
        self.m_mem = np.tile(np.arange(k, dtype=np.int64), n)
        self.m_mod = np.lcm(cols.alignment[:, None], np.array([m.alignment for m in problem.memories], np.int64)).ravel()
        self.m_res = np.zeros(k * n, np.int64)
        return counts

    def _units(self, problem: Problem) -> np.ndarray:
        units, n = problem.units, len(problem.units)
        mem_of = {m: i for i, m in enumerate(problem.memory_names)}
        counts = np.fromiter((len(u.pieces) for u in units), np.int64, n)
        self.p_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=self.p_ptr[1:])
        pa = np.fromiter((x for u in units for p in u.pieces for x in p), np.int64, 4 * int(self.p_ptr[-1]))
        pa = pa.reshape(-1, 4)
        self.p_t0, self.p_t1 = pa[:, 0].copy(), pa[:, 1].copy()
        self.p_y0, self.p_y1 = pa[:, 2].copy(), pa[:, 3].copy()
        self.low = np.fromiter((u.low for u in units), np.int64, n)
        self.high = np.fromiter((u.high for u in units), np.int64, n)
        self.top = np.fromiter((u.top for u in units), np.int64, n)
        self.fixed = np.fromiter((_NONE if u.fixed_offset is None else u.fixed_offset for u in units), np.int64, n)
        self.m_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.fromiter((len(u.memories) for u in units), np.int64, n), out=self.m_ptr[1:])
        ma = np.fromiter((x for u in units for m in u.memories for x in (mem_of[m], *u.modulus[m])), np.int64,
                         3 * int(self.m_ptr[-1])).reshape(-1, 3)
        self.m_mem, self.m_mod, self.m_res = ma[:, 0].copy(), ma[:, 1].copy(), ma[:, 2].copy()
        return counts


_CACHE: weakref.WeakKeyDictionary[Problem, Arrays] = weakref.WeakKeyDictionary()


def arrays(problem: Problem) -> Arrays:
    a = _CACHE.get(problem)
    if a is None:
        a = _CACHE[problem] = Arrays(problem)
    return a


def indices(problem: Problem, order: Sequence[Unit] | Sequence[int] | np.ndarray) -> np.ndarray:
    """``order`` (units, or indices into ``problem.units``) as an index array, the units with a
    fixed offset first (they cannot move out of anyone's way; ``packer.fixed_first``)."""
    a = arrays(problem)
    if len(order) and isinstance(order[0], Unit):
        idx = np.fromiter((a.index[id(u)] for u in order), np.int64, len(order))  # type: ignore[arg-type]
    else:
        idx = np.asarray(order, dtype=np.int64)
    pinned = a.fixed[idx] != _NONE
    return np.concatenate([idx[pinned], idx[~pinned]]) if pinned.any() else idx


def pack(problem: Problem, order: np.ndarray, policy: str, memory: str | None = None,
         skip: bool = False) -> tuple[np.ndarray, np.ndarray, Unit | None]:
    """Offsets and memory indices per unit (problem order) after placing the units ``order``
    (indices, see ``indices``) in turn; the unit that found no room (its and later units' entries
    are -1), or None. ``memory``: place in that one only; ``skip``: a unit that finds no room is
    left out (-1) and the rest still placed."""
    a = arrays(problem)
    off, where, failed = _run(problem, order, policy, -1 if memory is None else a.names.index(memory), skip,
                              np.zeros(len(a.names), np.int64), _NONE)
    return off, where, None if failed < 0 else problem.units[failed]


def pack_below(problem: Problem, order: np.ndarray, policy: str, weights: dict[str, int],
               stop: int) -> tuple[np.ndarray, np.ndarray, Unit | None] | None:
    """``pack``, or None as soon as the memories' peaks weighted by ``weights`` reach ``stop``
    (they only grow as units are placed: the plan could not weigh less than ``stop``)."""
    a = arrays(problem)
    off, where, failed = _run(problem, order, policy, -1, False, np.array([weights[m] for m in a.names], np.int64),
                              stop)
    if failed == -2:
        return None
    return off, where, None if failed < 0 else problem.units[failed]


def _run(problem: Problem, order: np.ndarray, policy: str, only: int, skip: bool, weight: np.ndarray,
         stop: int) -> tuple[np.ndarray, np.ndarray, int]:
    a = arrays(problem)
    return _pack(order, *_layout(a.size), len(a.names), a.p_ptr, a.p_l, a.p_r, a.p_y0, a.p_y1, a.low, a.high, a.top,
                 a.fixed, a.m_ptr, a.m_mem, a.m_mod, a.m_res, a.capacity, _POLICY[policy], only, skip, weight, stop)


def placements(problem: Problem, off: np.ndarray, where: np.ndarray, only: np.ndarray | None = None) -> Mapping[str, Placement]:
    """The placements of the units (all, or the indices ``only``) at ``off`` in memories ``where``:
    the arrays themselves (``Layout``) when every buffer is a unit of its own and all are placed."""
    names = arrays(problem).names
    if problem.columns.plain and only is None:
        return Layout(problem.columns.ids, names, where, off)
    with gc_paused():
        if problem.columns.plain:  # a unit per buffer, in buffer order
            ids = problem.columns.ids
            if only is not None:
                ids, off, where = [ids[i] for i in only.tolist()], off[only], where[only]
            return dict(zip(ids, map(Placement, map(names.__getitem__, where.tolist()), off.tolist())))
        out = {}
        units = problem.units if only is None else [problem.units[i] for i in only.tolist()]
        if only is not None:
            off, where = off[only], where[only]
        for u, o, w in zip(units, off.tolist(), where.tolist()):
            memory = names[w]
            for bid, rel in u.members:
                out[bid] = Placement(memory, o + rel)
        return out


def value(problem: Problem, off: np.ndarray, where: np.ndarray, objective: Objective) -> int:
    """``objective``'s value of the plan with every unit at ``off`` in memory ``where``, as
    ``Objective.value`` reads it from the placements (which need not be built to compare plans)."""
    a = arrays(problem)
    stored = np.diff(a.p_ptr) > 0
    weights = objective.weights(problem)
    weighted = 0
    for k, m in enumerate(a.names):
        here = where == k
        tops = (off + a.top)[here & stored]  # unit top: its highest byte + 1 above the root
        weighted += weights[m] * (int(tops.max()) if len(tops) else 0)
    lost = 0
    if objective.counts_benefit and len(a.names) > 1:
        tiers = objective.tier_weights(problem)
        gains = [u.gain for u in problem.units]
        for k, m in enumerate(a.names):
            lost += tiers[m] * sum(itertools.compress(gains, (where == k).tolist()))
    return objective.combine(problem, weighted, lost)


def root_rank(problem: Problem) -> np.ndarray:
    """Each unit's rank among the units' root ids (string order), for orders that break ties by id."""
    a = arrays(problem)
    if a.root_rank is None:
        roots = [u.root for u in problem.units]
        rank = np.empty(len(roots), np.int64)
        rank[sorted(range(len(roots)), key=roots.__getitem__)] = np.arange(len(roots))
        a.root_rank = rank
    return a.root_rank
