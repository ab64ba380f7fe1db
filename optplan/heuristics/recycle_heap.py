"""The recycle heap of ``recycle`` as kernels: freed slots reused smallest first.

``recycle`` (PyTorch's caching allocator, TFLite's simple arena) walks the units in execution
order; a unit takes the smallest freed slot that is large enough and keeps its alignment, else a
new slot above the others. Free slots wait per size rank in binary heaps (by the order they were
freed), and a count tree over the ranks finds the least rank holding one. ``recycle`` does
exactly what ``recycle_reference`` does (the tests compare them) for problems without pinned
units or vector clocks. The kernels (``@kernel``) run as plain Python on small problems and
compiled by numba otherwise (``kernels``, ``compiled``).
"""

from __future__ import annotations

import heapq
from collections import namedtuple

import numpy as np

from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.heuristics.arrays import arrays
from optplan.heuristics.kernels import kernel, pick

Heaps = namedtuple("Heaps", ["counts", "keys", "slots", "start", "length", "spare_keys", "spare_slots"])
Heaps.__doc__ = """The free slots per memory (row) and size rank: rank k's heap is ``keys``/``slots``
``[start[k]:start[k] + length[mem, k]]`` (tie, slot); ``counts`` a tree of free slots per rank (leaves
at half its length); ``spare_*``: the misaligned slots ``_take`` puts back."""


@kernel()
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


@kernel()
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


@kernel()
def _count(tree, leaf, delta):
    """Add ``delta`` free slots at size rank ``leaf`` of a count tree (leaves at len(tree) // 2)."""
    i = leaf + len(tree) // 2
    while i >= 1:
        tree[i] += delta
        i >>= 1


@kernel()
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


@kernel()
def _take(heaps, mem, rank0, s_base, low, m, r):
    """Remove and return the free slot of ``mem`` least by (size, tie) among those of size rank
    >= ``rank0`` where a root lands aligned (base - low = r mod m), or -1. Free slots of one size
    wait in a heap by tie; misaligned ones met on the way go back."""
    tree, hk, hv, hstart, hlen = heaps.counts, heaps.keys, heaps.slots, heaps.start, heaps.length
    spare_k, spare_v = heaps.spare_keys, heaps.spare_slots
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


@kernel(nogil=True)
def _recycle(order, units, rank, hstart):
    """``recycle`` without pinned units or vector clocks: (root offset, memory index) per unit,
    bytes kept per memory, and the failed unit or -1 (and 0: no room for an extent, 1: no slot).
    ``rank``: each unit's size rank among the distinct unit heights; a rank's free slots (at most
    as many as units of that height) live in ``hstart[rank]`` onwards of the heap arrays."""
    start, end, p_ptr, low, high, capacity = units.start, units.end, units.p_ptr, units.low, units.high, units.capacity
    n, n_mem, ranks = len(low), len(capacity), len(hstart)
    off = np.full(n, -1, np.int64)
    where = np.full(n, -1, np.int64)
    kept, cursor = np.zeros(n_mem, np.int64), np.zeros(n_mem, np.int64)
    s_base, s_mem, s_rank = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    ns = 0
    half = 1
    while half < ranks:
        half *= 2
    heaps = Heaps(np.zeros((n_mem, 2 * half), np.int64), np.empty((n_mem, n), np.int64), np.empty((n_mem, n), np.int64),
                  hstart, np.zeros((n_mem, ranks), np.int64), np.empty(n, np.int64), np.empty(n, np.int64))
    tree, hk, hv, hlen = heaps.counts, heaps.keys, heaps.slots, heaps.length
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
        for k in range(units.m_ptr[u], units.m_ptr[u + 1]):
            mem, m, r = units.m_mem[k], units.m_mod[k], units.m_res[k]
            if empty:  # nothing to store: the lowest legal offset, if the extent fits
                x = -low[u]
                o = x + (r - x) % m
                if capacity[mem] < 0 or o + high[u] <= capacity[mem]:
                    off[u], where[u] = o, mem
                    break
                continue
            sl = _take(heaps, mem, rank[u], s_base, low[u], m, r)
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


def recycle(problem: Problem, order: np.ndarray,
            compiled: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, Unit | None, int]:
    """``recycle`` for problems without pinned units or vector clocks, units in ``order`` (indices);
    ``compiled``: which form runs (``kernels.pick``)."""
    a = arrays(problem)
    _, rank, count = np.unique(a.high - a.low, return_inverse=True, return_counts=True)
    hstart = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    run = pick(_recycle, len(order), compiled)
    off, where, kept, failed, why = run(order, a.units, rank.astype(np.int64), hstart)
    return off, where, kept, None if failed < 0 else problem.units[failed], why
