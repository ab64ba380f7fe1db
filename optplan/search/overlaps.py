"""Which units share a time step: the adjacency lists the search's instance builder needs (compiled).

``count_overlaps`` first (a sort and binary searches, no list built) so that an instance with
too many pairs for the lists (``SearchParams.max_overlap_pairs``) never builds them.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def overlap_graph(s0, s1):
    """CSR adjacency of buffers whose section spans intersect (they share a time step)."""
    n = s0.shape[0]
    order = np.argsort(s0, kind="mergesort")
    deg = np.zeros(n, np.int64)
    for a in range(n):
        i = order[a]
        for b in range(a + 1, n):
            j = order[b]
            if s0[j] >= s1[i]:
                break
            deg[i] += 1
            deg[j] += 1
    ptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        ptr[i + 1] = ptr[i] + deg[i]
    idx = np.empty(ptr[n], np.int64)
    fill = ptr[:n].copy()
    for a in range(n):
        i = order[a]
        for b in range(a + 1, n):
            j = order[b]
            if s0[j] >= s1[i]:
                break
            idx[fill[i]] = j
            fill[i] += 1
            idx[fill[j]] = i
            fill[j] += 1
    return ptr, idx


@njit(cache=True)
def count_overlaps(s0, s1):
    """Number of overlapping pairs (to decide whether the adjacency lists are affordable)."""
    n = s0.shape[0]
    order = np.argsort(s0, kind="mergesort")
    a0 = s0[order]
    total = 0
    for a in range(n):
        i = order[a]
        total += np.searchsorted(a0, s1[i], side="left") - a - 1
    return total
