"""The lowest-offset-first dive for instances too large for the search's adjacency lists (compiled).

Past ``SearchParams.max_overlap_pairs`` overlapping pairs (idealloc/S_1: 28,526 buffers) the search
cannot afford its neighbour lists; a dive places every buffer once, lowest canonical offset first,
in O(n log n): floors live in a segment tree over sections (range raise, range max) and a lazy
min-heap keyed (offset, rank) finds the next buffer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from optplan.core import jit
from optplan.search.state import align

# numba stamps a cached kernel with its own file only: the dive inlines state's ``align``
jit.key_cache(__file__, [str(Path(__file__).with_name("state.py"))])


@njit(cache=True)
def _sift_down(heap, hn, j):
    """Restore the min-heap order of ``heap[:hn]`` below position ``j``."""
    while True:
        c = 2 * j + 1
        if c >= hn:
            return
        if c + 1 < hn and heap[c + 1] < heap[c]:
            c += 1
        if heap[j] <= heap[c]:
            return
        heap[j], heap[c] = heap[c], heap[j]
        j = c


@njit(cache=True, inline="always")
def _floor_over(t, tag, lo_, hi_, base):
    """The highest floor over the leaves ``[lo_, hi_)`` (tree positions), at least ``base``: the
    maxima of the nodes that cover the range, and the raises tagged on their ancestors."""
    best = base
    a = lo_
    b = hi_
    while a < b:
        if a & 1:
            best = max(best, t[a])
            a += 1
        if b & 1:
            b -= 1
            best = max(best, t[b])
        a >>= 1
        b >>= 1
    p = lo_ >> 1
    while p >= 1:
        best = max(best, tag[p])
        p >>= 1
    p = (hi_ - 1) >> 1
    while p >= 1:
        best = max(best, tag[p])
        p >>= 1
    return best


@njit(cache=True, inline="always")
def _raise_to(t, tag, lo_, hi_, top):
    """Raise every floor over the leaves ``[lo_, hi_)`` to at least ``top``: tag the nodes that
    cover the range, then bring their ancestors' maxima up."""
    a = lo_
    b = hi_
    while a < b:
        if a & 1:
            t[a] = max(t[a], top)
            tag[a] = max(tag[a], top)
            a += 1
        if b & 1:
            b -= 1
            t[b] = max(t[b], top)
            tag[b] = max(tag[b], top)
        a >>= 1
        b >>= 1
    p = lo_ >> 1
    while p >= 1:
        t[p] = max(t[p], max(t[2 * p], t[2 * p + 1]))
        p >>= 1
    p = (hi_ - 1) >> 1
    while p >= 1:
        t[p] = max(t[p], max(t[2 * p], t[2 * p + 1]))
        p >>= 1


@njit(cache=True)
def skyline_dive(size, s0, s1, mod, res, lo, rank, nsec, offsets):
    """Place every buffer once, repeatedly the unplaced one with the lowest canonical offset (ties
    by ``rank``), into ``offsets``. A heap key may be stale (floors only rise): the popped buffer
    goes back with its true key unless that is still the lowest."""
    n = size.shape[0]
    width = 1
    while width < max(nsec, 1):
        width *= 2
    t = np.zeros(2 * width, np.int64)  # max over the node's range, tags included
    tag = np.zeros(2 * width, np.int64)  # raise applying to the node's whole range
    byrank = np.empty(n, np.int64)
    for i in range(n):
        byrank[rank[i]] = i
    heap = np.empty(n, np.int64)
    for r in range(n):
        i = byrank[r]
        heap[r] = align(lo[i], mod[i], res[i]) * n + r
    hn = n
    for k in range(hn // 2 - 1, -1, -1):  # heapify
        _sift_down(heap, hn, k)
    while hn > 0:
        key = heap[0]
        r = key % n
        i = byrank[r]
        lo_ = s0[i] + width
        hi_ = s1[i] + width
        o = align(_floor_over(t, tag, lo_, hi_, lo[i]), mod[i], res[i])
        newkey = o * n + r
        # pop the top, then either place it or push it back with its true key
        hn -= 1
        last = heap[hn]
        if newkey > key:
            last_val = newkey
            heap[hn] = last  # keep the element count; reinsert below
            hn += 1
            heap[0] = last_val
        else:
            heap[0] = last
            offsets[i] = o
            _raise_to(t, tag, lo_, hi_, o + size[i])
        _sift_down(heap, hn, 0)
