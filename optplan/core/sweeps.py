"""The core's two sweeps over time, in plain Python and numpy: the validator's overlap test and the
usage curve's highest byte. ``optplan.core.compiled`` compiles these same functions with numba;
small problems and runs whose kernels are not compiled call them here, so checking a plan of a
few buffers never imports numba."""

from __future__ import annotations

import numpy as np


def any_overlap(start: np.ndarray, end: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> bool:
    """Whether two intervals share a time step and a byte, in O(n log n): a sweep over time
    (sorted ``start``; ends first at equal times) keeps the live byte ranges, pairwise disjoint
    while the answer is no, so a new range need only be compared with its neighbours in byte
    order (found with a Fenwick tree over the ranks of ``lo``)."""
    n = len(start)
    by_lo = np.argsort(lo, kind="mergesort")
    rank = np.empty(n, np.int64)
    rank[by_lo] = np.arange(n)
    tree = np.zeros(n + 1, np.int64)
    ends = np.argsort(end, kind="mergesort")
    top = 1
    while top * 2 <= n:
        top *= 2
    j = 0
    for i in range(n):
        while end[ends[j]] <= start[i]:  # ranges that ended leave the sweep
            k = rank[ends[j]] + 1
            while k <= n:
                tree[k] -= 1
                k += k & -k
            j += 1
        k, below = rank[i] + 1, 0  # live ranges at or below rank[i]
        while k > 0:
            below += tree[k]
            k -= k & -k
        for c in (below, below + 1):  # the byte-order neighbours: the c-th live range
            if c == 0:
                continue
            pos, rest, step = 0, c, top
            while step:
                if pos + step <= n and tree[pos + step] < rest:
                    pos += step
                    rest -= tree[pos]
                step >>= 1
            if pos < n:
                other = by_lo[pos]
                if lo[other] < hi[i] and lo[i] < hi[other]:
                    return True
        k = rank[i] + 1
        while k <= n:
            tree[k] += 1
            k += k & -k
    return False


def highest(first: np.ndarray, last: np.ndarray, top: np.ndarray, slots: int) -> np.ndarray:
    """Per slot the highest ``top`` of the spans ``[first, last)`` over it: spans from the highest
    down, each filling the slots still empty (a pointer to the next empty slot, path-halved), so
    every slot is filled once: O(n log n) for the sort."""
    out = np.zeros(slots, np.int64)
    nxt = np.arange(slots + 1)
    for k in np.argsort(-top, kind="mergesort"):
        i = first[k]
        while True:
            while nxt[i] != i:  # the next empty slot at or after i
                nxt[i] = nxt[nxt[i]]
                i = nxt[i]
            if i >= last[k]:
                break
            out[i] = top[k]
            nxt[i] = i + 1
    return out
