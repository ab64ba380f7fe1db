"""The greedy packer of ``packer.py`` compiled with numba: same placements, ~20-50x faster.

``packer.Packer`` is the readable reference; this module does exactly what ``greedy`` does with
it (the tests compare them plan for plan on random problems with hypothesis) for the whole
constraint model: several memories tried fastest first, alignment (per-memory modulus),
fixed offsets, relative placements (units with several members and a low edge), gaps (units
with several pieces), capacities, and the three policies.

The time index is the reference's segment tree over elementary time slots. Each tree node keeps
the union of the byte ranges stored there as a sorted list of disjoint, non-touching ranges in
one shared arena (a node's block is moved to the arena's end, twice as large, when it fills).
A rectangle goes into ``own`` of its canonical nodes and into ``sub`` of those and of every node
on the root paths of its first and last slot (all of which it intersects). A query reads
``sub`` of its canonical nodes and ``own`` of the nodes on the root paths of its first and last
slot: every rectangle met intersects the query, and every rectangle that does is met (one lying
inside the query sits under a canonical node; one reaching outside it covers an end slot).
"""

from __future__ import annotations

import weakref

import numpy as np
from numba import njit

from optplan.plan import Placement
from optplan.problem import Problem, Unit, gc_paused

_POLICY = {"first": 0, "best": 1, "heap": 2}
_NONE = np.iinfo(np.int64).max  # no capacity / nothing found


@njit(cache=True)
def _grow(lo: np.ndarray, hi: np.ndarray, need: int) -> tuple[np.ndarray, np.ndarray]:
    if need <= len(lo):
        return lo, hi
    size = max(2 * len(lo), need)
    nlo, nhi = np.empty(size, np.int64), np.empty(size, np.int64)
    nlo[:len(lo)] = lo
    nhi[:len(hi)] = hi
    return nlo, nhi


@njit(cache=True)
def _insert(s, y0, y1, meta, lo, hi, used):
    """Add ``[y0, y1)`` to the union kept at store ``s``; returns the (maybe moved) arena."""
    n = meta[3 * s + 1]
    if meta[3 * s + 2] == 0:
        lo, hi = _grow(lo, hi, used + 4)
        meta[3 * s], meta[3 * s + 2] = used, 4
        used += 4
    base = meta[3 * s]
    a, b = 0, n
    while a < b:  # first range reaching y0 (touching ranges merge)
        mid = (a + b) >> 1
        if hi[base + mid] < y0:
            a = mid + 1
        else:
            b = mid
    i = a
    j = i
    while j < n and lo[base + j] <= y1:
        j += 1
    nlo, nhi = y0, y1
    if j > i:
        nlo, nhi = min(lo[base + i], y0), max(hi[base + j - 1], y1)
    size = n - (j - i) + 1
    if size > meta[3 * s + 2]:  # move the block to the arena's end, twice as large
        c = 2 * meta[3 * s + 2]
        lo, hi = _grow(lo, hi, used + c)
        lo[used:used + n] = lo[base:base + n]
        hi[used:used + n] = hi[base:base + n]
        meta[3 * s], meta[3 * s + 2] = used, c
        base = used
        used += c
    shift = 1 - (j - i)
    if shift > 0:
        for k in range(n - 1, j - 1, -1):
            lo[base + k + shift] = lo[base + k]
            hi[base + k + shift] = hi[base + k]
    elif shift < 0:
        for k in range(j, n):
            lo[base + k + shift] = lo[base + k]
            hi[base + k + shift] = hi[base + k]
    lo[base + i] = nlo
    hi[base + i] = nhi
    meta[3 * s + 1] = size
    return lo, hi, used


@njit(cache=True)
def _collect(s, py0, py1, low_edge, meta, lo, hi, flo, fhi, cnt):
    """Root offsets forbidden by the ranges at store ``s`` for a piece ``[py0, py1)``: one run
    sorted by both ends (the ranges there are sorted and disjoint)."""
    base = meta[3 * s]
    for k in range(meta[3 * s + 1]):
        f1 = hi[base + k] - py0 - 1
        if f1 >= low_edge:
            if cnt == len(flo):
                flo, fhi = _grow(flo, fhi, 2 * cnt)
            flo[cnt] = lo[base + k] - py1 + 1
            fhi[cnt] = f1
            cnt += 1
    return flo, fhi, cnt


@njit(cache=True)
def _run(s, py0, py1, low_edge, meta, lo, hi, flo, fhi, cnt, runs, nruns):
    """``_collect`` as one more run in ``runs`` (start offsets; ``runs[nruns]`` is the end)."""
    start = cnt
    flo, fhi, cnt = _collect(s, py0, py1, low_edge, meta, lo, hi, flo, fhi, cnt)
    if cnt > start:
        if nruns + 2 > len(runs):
            bigger = np.zeros(2 * len(runs), np.int64)
            bigger[:len(runs)] = runs
            runs = bigger
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
        tlo, thi = _grow(tlo, thi, runs[nruns])
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
def _query(base, size, l, r, py0, py1, low_edge, meta, lo, hi, flo, fhi, cnt, runs, nruns):
    """Add the runs of root offsets forbidden for a piece ``[py0, py1)`` over slots ``[l, r)``
    in the tree at ``base`` (``sub`` of canonical nodes, ``own`` on both end slots' paths)."""
    a, b = l + size, r + size
    while a < b:
        if a & 1:
            flo, fhi, cnt, runs, nruns = _run(base + 2 * a + 1, py0, py1, low_edge, meta, lo, hi, flo, fhi, cnt, runs, nruns)
            a += 1
        if b & 1:
            b -= 1
            flo, fhi, cnt, runs, nruns = _run(base + 2 * b + 1, py0, py1, low_edge, meta, lo, hi, flo, fhi, cnt, runs, nruns)
        a >>= 1
        b >>= 1
    x, y = l + size, r - 1 + size
    while x >= 1:
        flo, fhi, cnt, runs, nruns = _run(base + 2 * x, py0, py1, low_edge, meta, lo, hi, flo, fhi, cnt, runs, nruns)
        if y != x:
            flo, fhi, cnt, runs, nruns = _run(base + 2 * y, py0, py1, low_edge, meta, lo, hi, flo, fhi, cnt, runs, nruns)
        x >>= 1
        y >>= 1
    return flo, fhi, cnt, runs, nruns


@njit(cache=True)
def _add(base, size, l, r, y0, y1, meta, lo, hi, used):
    """Store the rectangle slots ``[l, r)`` x bytes ``[y0, y1)`` in the tree at ``base``."""
    a, b = l + size, r + size
    while a < b:
        if a & 1:
            lo, hi, used = _insert(base + 2 * a, y0, y1, meta, lo, hi, used)
            lo, hi, used = _insert(base + 2 * a + 1, y0, y1, meta, lo, hi, used)
            a += 1
        if b & 1:
            b -= 1
            lo, hi, used = _insert(base + 2 * b, y0, y1, meta, lo, hi, used)
            lo, hi, used = _insert(base + 2 * b + 1, y0, y1, meta, lo, hi, used)
        a >>= 1
        b >>= 1
    x, y = l + size, r - 1 + size
    while x >= 1:
        lo, hi, used = _insert(base + 2 * x + 1, y0, y1, meta, lo, hi, used)
        if y != x:
            lo, hi, used = _insert(base + 2 * y + 1, y0, y1, meta, lo, hi, used)
        x >>= 1
        y >>= 1
    return lo, hi, used


@njit(cache=True, nogil=True)  # threads of the portfolio run heuristics side by side
def _pack(order, size, n_mem, p_ptr, p_l, p_r, p_y0, p_y1, low, high, top, fixed,
          m_ptr, m_mem, m_mod, m_res, capacity, policy):
    """Place units in ``order``; returns (offset, memory index) per unit and the failed unit or -1."""
    n = len(low)
    off = np.full(n, -1, np.int64)
    where = np.full(n, -1, np.int64)
    nodes = 2 * size
    meta = np.zeros(n_mem * 2 * nodes * 3, np.int64)  # per store: arena start, length, capacity
    lo, hi, used = np.empty(1 << 16, np.int64), np.empty(1 << 16, np.int64), 0
    heap = np.zeros(n_mem, np.int64)
    flo, fhi = np.empty(1024, np.int64), np.empty(1024, np.int64)
    tlo, thi = np.empty(1024, np.int64), np.empty(1024, np.int64)
    runs = np.zeros(1024, np.int64)
    for u in order:
        for k in range(m_ptr[u], m_ptr[u + 1]):
            mem = m_mem[k]
            base = mem * 2 * nodes  # node x: own at base + 2x, sub at base + 2x + 1 (adjacent)
            limit = _NONE if capacity[mem] < 0 else capacity[mem] - high[u]
            if limit != _NONE and (limit < -low[u] or (fixed[u] != _NONE and fixed[u] > limit)):
                continue
            cnt = nruns = 0
            for p in range(p_ptr[u], p_ptr[u + 1]):
                flo, fhi, cnt, runs, nruns = _query(base, size, p_l[p], p_r[p], p_y0[p], p_y1[p], -low[u],
                                                    meta, lo, hi, flo, fhi, cnt, runs, nruns)
            if nruns > 1:
                flo, fhi, tlo, thi = _union(flo, fhi, runs, nruns, tlo, thi)
                cnt = runs[1]
            o = _choose(flo, fhi, cnt, -low[u], limit, m_mod[k], m_res[k], policy,
                        heap[mem] - high[u], fixed[u])
            if o == _NONE:
                continue
            off[u], where[u] = o, mem
            for p in range(p_ptr[u], p_ptr[u + 1]):
                lo, hi, used = _add(base, size, p_l[p], p_r[p], o + p_y0[p], o + p_y1[p], meta, lo, hi, used)
            if p_ptr[u + 1] > p_ptr[u]:
                heap[mem] = max(heap[mem], o + top[u])
            break
        if off[u] < 0:
            return off, where, u
    return off, where, -1


@njit(cache=True)
def _reuse(base, size, band, u, obj_base, obj_size, nobj, m, r, p_ptr, p_l, p_r, low, high,
           meta, lo, hi, scratch):
    """``banked_greedy._Bank.reuse``: the root offset of unit ``u`` inside an existing object
    of the bank whose tree is at ``base``, or _NONE."""
    if nobj == 0:
        return _NONE
    flo, fhi, tlo, thi, runs = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4]
    cnt = nruns = 0
    for p in range(p_ptr[u], p_ptr[u + 1]):  # raw byte ranges: piece [0, 1) gives [y0, y1 - 1]
        flo, fhi, cnt, runs, nruns = _query(base, size, p_l[p], p_r[p], 0, 1, -_NONE, meta, lo, hi,
                                            flo, fhi, cnt, runs, nruns)
    if nruns > 1:
        flo, fhi, tlo, thi = _union(flo, fhi, runs, nruns, tlo, thi)
        cnt = runs[1]
    scratch[0], scratch[1], scratch[2], scratch[3], scratch[4] = flo, fhi, tlo, thi, runs
    reach = np.zeros(nobj, np.int64)  # highest byte alive with u, relative to the object; 0: idle
    for q in range(cnt):
        k = flo[q] // band
        reach[k] = max(reach[k], fhi[q] + 1 - k * band)
    for k in range(nobj):  # 1) the first idle object large enough: offset 0 in it
        if reach[k] == 0 and obj_size[k] >= high[u] - low[u] and (obj_base[k] - low[u] - r) % m == 0:
            return obj_base[k] - low[u]
    for k in range(nobj):  # 2) the first busy object with room above what is alive in it
        if reach[k] > 0:
            x = obj_base[k] + reach[k] - low[u]
            root = x + (r - x) % m
            if root + high[u] <= obj_base[k] + obj_size[k]:
                return root
    return _NONE


@njit(cache=True, nogil=True)
def _banked(order, size, n_mem, band, p_ptr, p_l, p_r, p_y0, p_y1, low, high, m_ptr, m_mem, m_mod,
            m_res, capacity):
    """``banked_greedy`` without pinned units: (offset, memory index) per unit, failed unit or -1."""
    n = len(low)
    off = np.full(n, -1, np.int64)
    where = np.full(n, -1, np.int64)
    nodes = 2 * size
    meta = np.zeros(n_mem * 2 * nodes * 3, np.int64)
    lo, hi, used = np.empty(1 << 16, np.int64), np.empty(1 << 16, np.int64), 0
    obj_base = np.zeros((n_mem, n + 1), np.int64)
    obj_size = np.zeros((n_mem, n + 1), np.int64)
    nobj = np.zeros(n_mem, np.int64)
    cursor = np.zeros(n_mem, np.int64)
    scratch = [np.empty(1024, np.int64) for _ in range(5)]
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
            base = mem * 2 * nodes
            root = _reuse(base, size, band, u, obj_base[mem], obj_size[mem], nobj[mem], m, r, p_ptr, p_l,
                          p_r, low, high, meta, lo, hi, scratch)
            if root == _NONE:  # a new object, if the bank has room for it
                x = max(cursor[mem] - low[u], -low[u])
                root = x + (r - x) % m
                if capacity[mem] >= 0 and root + high[u] > capacity[mem]:
                    continue
                obj_base[mem, nobj[mem]], obj_size[mem, nobj[mem]] = root + low[u], high[u] - low[u]
                nobj[mem] += 1
                cursor[mem] = root + high[u]
            j = np.searchsorted(obj_base[mem, :nobj[mem]], root + low[u], side="right") - 1
            shift = j * band - obj_base[mem, j]
            for p in range(p_ptr[u], p_ptr[u + 1]):
                lo, hi, used = _add(base, size, p_l[p], p_r[p], root + p_y0[p] + shift,
                                    root + p_y1[p] + shift, meta, lo, hi, used)
            off[u], where[u] = root, mem
            break
        if off[u] < 0:
            return off, where, u, nobj
    return off, where, -1, nobj


def banked(problem: Problem) -> tuple[np.ndarray, np.ndarray, Unit | None, np.ndarray]:
    """``banked_greedy`` for problems without pinned units (those stay with the reference)."""
    a = arrays(problem)
    units = problem.units
    height = a.high - a.low
    order = np.lexsort((-np.arange(len(units)), -height)).astype(np.int64)  # (-height, -i)
    band = 2 * int(height.max(initial=0)) + 1
    off, where, failed, nobj = _banked(order, a.size, len(a.names), band, a.p_ptr, a.p_l, a.p_r, a.p_y0,
                                       a.p_y1, a.low, a.high, a.m_ptr, a.m_mem, a.m_mod, a.m_res, a.capacity)
    return off, where, None if failed < 0 else units[failed], nobj


class Arrays:
    """A problem's units as flat arrays for the kernels and the orders (built once per problem,
    kept weakly): pieces in unit order, slots of the time index, per-unit fields."""

    def __init__(self, problem: Problem) -> None:
        units = problem.units
        n = len(units)
        self.index = {id(u): i for i, u in enumerate(units)}
        names = problem.memory_names
        if problem.columns.plain:
            counts = self._plain(problem)
        else:
            counts = self._units(problem)
        self.capacity = np.array([-1 if m.capacity is None else m.capacity for m in problem.memories], np.int64)
        self.names = names
        times = np.unique(np.concatenate([self.p_t0, self.p_t1]))
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


def pack(problem: Problem, order: list[Unit], policy: str) -> tuple[np.ndarray, np.ndarray, Unit | None]:
    """Offsets and memory indices per unit (problem order) after placing ``order``; the unit that
    found no room (its and later units' entries are -1), or None."""
    a = arrays(problem)
    idx = np.fromiter((a.index[id(u)] for u in order), np.int64, len(order))
    off, where, failed = _pack(idx, a.size, len(a.names), a.p_ptr, a.p_l, a.p_r, a.p_y0, a.p_y1, a.low,
                               a.high, a.top, a.fixed, a.m_ptr, a.m_mem, a.m_mod, a.m_res, a.capacity,
                               _POLICY[policy])
    return off, where, None if failed < 0 else problem.units[failed]


def placements(problem: Problem, off: np.ndarray, where: np.ndarray) -> dict[str, Placement]:
    names = arrays(problem).names
    with gc_paused():
        if problem.columns.plain:  # a unit per buffer, in buffer order
            return dict(zip(problem.columns.ids, map(Placement, map(names.__getitem__, where.tolist()), off.tolist())))
        out = {}
        for u, o, w in zip(problem.units, off.tolist(), where.tolist()):
            memory = names[w]
            for bid, rel in u.members:
                out[bid] = Placement(memory, o + rel)
        return out
