"""Memory-aware topological orders, and a local search over orders.

The simple orders are the three PyTorch Inductor tries in ``reorder_for_peak_memory`` (its choice
is the least estimated peak of the three and the given order), written here from their published
descriptions:

- ``bfs``: among ready ops, the one whose predecessors ran earliest (FIFO: short lifetimes);
- ``dfs``: ops visited by ascending bytes read and written, each after its predecessors,
  depth-first;
- ``greedy``: least peak memory first (LPMF, after Gupta et al., DAC 2006, as Inductor
  describes it): while some ready op fits under the peak so far, the one that leaves the fewest
  bytes live after it (frees the most); else the one that raises the peak least.

``local_search`` moves one op at a time inside the window its predecessors and successors
leave, keeping any move that does not worsen the score (peak first, so plateaus are crossed),
with most moves near the step of the peak.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable, Sequence

from optplan.graph.loads import kahn
from optplan.graph.model import Structure


def bfs(st: Structure) -> list[int]:
    """Ready ops by the steps their predecessors ran at (earliest first), then by index."""
    step = [-1] * st.ops
    indegree = [len(p) for p in st.preds]
    heap: list[tuple[list[int], int]] = [([], k) for k in range(st.ops) if indegree[k] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        _, k = heapq.heappop(heap)
        step[k] = len(out)
        out.append(k)
        for s in st.succs[k]:
            indegree[s] -= 1
            if indegree[s] == 0:
                heapq.heappush(heap, (sorted(step[p] for p in st.preds[s]), s))
    return out


def dfs(st: Structure) -> list[int]:
    """Ops by ascending bytes touched (outputs and inputs), each preceded by its predecessors,
    visited depth-first in the same priority."""
    touched = [sum(st.size[y] for y in st.writes[k]) + sum(st.size[x] for x in st.reads[k]) for k in range(st.ops)]
    key = [(touched[k], k) for k in range(st.ops)]
    seen = [False] * st.ops
    out: list[int] = []
    for root in sorted(range(st.ops), key=key.__getitem__):
        stack = [(root, iter(sorted(st.preds[root], key=key.__getitem__)))]
        if seen[root]:
            continue
        seen[root] = True
        while stack:  # iterative post-order: long chains must not hit the recursion limit
            k, preds = stack[-1]
            p = next((p for p in preds if not seen[p]), None)
            if p is None:
                stack.pop()
                out.append(k)
            else:
                seen[p] = True
                stack.append((p, iter(sorted(st.preds[p], key=key.__getitem__))))
    return out


def greedy(st: Structure, reuse: bool = True) -> list[int]:
    """Least peak memory first (see the module docstring), in-place reuses counted as saving."""
    left = [len(c) + st.output[t] for t, c in enumerate(st.consumers)]  # readers (and the end) to come
    indegree = [len(p) for p in st.preds]
    ready = {k for k in range(st.ops) if indegree[k] == 0}
    live = sum(s for t, s in enumerate(st.size) if st.producer[t] < 0)
    peak = live
    out: list[int] = []
    while ready:
        gap = peak - live
        k = min(ready, key=lambda k: _lpmf_key(st, k, left, gap, reuse))
        alloc, free = _alloc_free(st, k, left, reuse)
        ready.discard(k)
        out.append(k)
        peak = max(peak, live + alloc)
        live += alloc - free
        for x in st.reads[k]:
            left[x] -= 1
        for s in st.succs[k]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.add(s)
    return out


def _alloc_free(st: Structure, k: int, left: list[int], reuse: bool) -> tuple[int, int]:
    """Bytes op ``k`` allocates (less what a holding reuse saves) and frees (inputs it reads
    last, outputs nobody reads) if it runs now."""
    alloc = sum(st.size[y] for y in st.writes[k])
    free = sum(st.size[x] for x in st.reads[k] if left[x] == 1) + sum(st.size[y] for y in st.writes[k] if left[y] == 0)
    if reuse and st.reuse[k]:
        best: dict[int, int] = {}
        for y, x in st.reuse[k]:
            if left[x] == 1:
                best[x] = max(best.get(x, 0), st.size[y])
        alloc -= sum(best.values())
        free -= sum(best.values())
    return alloc, free


def _lpmf_key(st: Structure, k: int, left: list[int], gap: int, reuse: bool) -> tuple[int, int, int]:
    alloc, free = _alloc_free(st, k, left, reuse)
    return (alloc if alloc > gap else 0, alloc - free, k)


SIMPLE: dict[str, Callable[..., list[int]]] = {"given": lambda st, reuse=True: kahn(st), "bfs": lambda st, reuse=True: bfs(st),
                                                "dfs": lambda st, reuse=True: dfs(st), "greedy": greedy}


def local_search(st: Structure, order: Sequence[int], score: Callable[[list[int]], tuple[int, ...]],
                 stop: Callable[[], bool], rng: random.Random, peak_step: Callable[[list[int]], int] | None = None,
                 moves: int = 10_000) -> tuple[list[int], tuple[int, ...]]:
    """Improve ``order`` by single-op moves (``score``: smaller is better; ``peak_step``: where
    most moves aim). At most ``moves`` moves, until ``stop()`` or ``max(5000, 20 n)`` moves in a
    row bring no strict improvement."""
    cur = list(order)
    best = score(cur)
    n = len(cur)
    if n < 2:
        return cur, best
    focus = peak_step(cur) if peak_step else 0
    patience = max(5000, 20 * n)  # moves without a strict improvement before it gives up
    last = 0
    for it in range(moves):
        if stop() or it - last > patience:
            break
        i = min(max(focus + rng.randint(-8, 8), 0), n - 1) if peak_step and rng.random() < 0.7 else rng.randrange(n)
        lo, hi = _window(st, cur, i)
        if hi <= lo:
            continue
        j = rng.randint(lo, hi - 1)
        j = j + 1 if j >= i else j  # a position other than i
        cand = _moved(cur, i, j)
        s = score(cand)
        if s <= best:
            if s < best:
                last = it
                if peak_step:
                    focus = peak_step(cand)
            cur, best = cand, s
    return cur, best


def _window(st: Structure, order: list[int], i: int) -> tuple[int, int]:
    """Where op ``order[i]`` may be put back once taken out: ``[lo, hi]``, after its last
    predecessor and before its first successor (``i`` itself gives the same order)."""
    k = order[i]
    lo = max((order.index(p) + 1 for p in st.preds[k]), default=0)
    hi = min((order.index(s) - 1 for s in st.succs[k]), default=len(order) - 1)
    return lo, hi


def _moved(order: list[int], i: int, j: int) -> list[int]:
    """``order`` with the op at ``i`` taken out and put back at index ``j``."""
    out = order[:i] + order[i + 1:]
    out.insert(j, order[i])
    return out
