"""Concurrent lifetimes: vector clocks, their conflicts, and the heaviest clique as a bound.

A buffer's ``start`` and ``end`` may be vector clocks, one step per stream. ``a`` happens
before ``b`` when ``a.end <= b.start`` in every component; two buffers conflict (must not share
bytes) unless one happens before the other. A scalar lifetime is the one-stream case, where this
is the usual ``[start, end)`` overlap. Scalar problems never come here: their conflicts are
intervals, which the planners handle by sweeping time; a concurrent problem's conflict graph is
derived once (``Problem.conflicts``) and read by the planners that support clocks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

    from optplan.problem import Buffer, Problem

EXACT_CLIQUE_NODES = 200_000  # branch-and-bound nodes before the clique bound settles for the best found
EXACT_CLIQUE_VERTICES = 400  # larger graphs: the greedy cliques only (each still a proven bound)
GREEDY_SEEDS = 64  # on larger graphs, greedy cliques grown from the heaviest and the busiest vertices


def happens_before(a: Buffer, b: Buffer) -> bool:
    return all(x <= y for x, y in zip(a.end, b.start))  # type: ignore[call-overload]


def concurrent(a: Buffer, b: Buffer) -> bool:
    """Whether ``a`` and ``b`` need disjoint bytes: neither happens before the other."""
    return not happens_before(a, b) and not happens_before(b, a)


def conflict_lists(problem: Problem) -> dict[str, frozenset[str]]:
    """Buffer id -> the ids it conflicts with (size-0 buffers conflict with nothing)."""
    bufs = [b for b in problem.buffers if b.size > 0]
    out: dict[str, frozenset[str]] = {b.id: frozenset() for b in problem.buffers}
    if not bufs:
        return out
    start = np.array([b.start for b in bufs], np.int64)
    end = np.array([b.end for b in bufs], np.int64)
    ids = [b.id for b in bufs]
    chunk = max(1, 2_000_000 // (len(bufs) * start.shape[1]))
    for lo in range(0, len(bufs), chunk):
        e, s = end[lo:lo + chunk, None, :], start[lo:lo + chunk, None, :]
        before = (e <= start[None, :, :]).all(axis=2)  # row i happens before column j
        after = (end[None, :, :] <= s).all(axis=2)
        hit = np.logical_not(before | after)
        for k in range(hit.shape[0]):
            i = lo + k
            hit[k, i] = False
            out[ids[i]] = frozenset(ids[j] for j in np.flatnonzero(hit[k]))
    return out


def heaviest_clique(weights: Sequence[int], neighbours: Sequence[set[int]],
                    node_limit: int = EXACT_CLIQUE_NODES) -> tuple[int, bool]:
    """The largest total weight of pairwise-conflicting vertices, and whether it is proven the
    largest. Every clique found is a lower bound on the peak (its buffers are stacked); on graphs
    of at most ``EXACT_CLIQUE_VERTICES`` a branch and bound (vertices by decreasing weight, pruned
    by the weight still addable) proves the heaviest unless it runs out of ``node_limit`` nodes;
    otherwise the best greedy clique stands."""
    n = len(weights)
    order = sorted(range(n), key=lambda i: -weights[i])
    best = 0
    seeds = order if n <= EXACT_CLIQUE_VERTICES else list(dict.fromkeys(
        order[:GREEDY_SEEDS] + sorted(range(n), key=lambda i: -len(neighbours[i]))[:GREEDY_SEEDS]))
    for v in seeds:  # greedy cliques first (heaviest neighbours first): a good incumbent prunes
        clique, total = [v], weights[v]
        for u in sorted(neighbours[v], key=lambda u: -weights[u]):
            if all(u in neighbours[c] for c in clique[1:]):
                clique.append(u)
                total += weights[u]
        best = max(best, total)
    if n > EXACT_CLIQUE_VERTICES:
        return best, False
    nodes = 0
    exact = True

    def expand(candidates: list[int], total: int) -> None:
        nonlocal best, nodes, exact
        if total + sum(weights[c] for c in candidates) <= best:
            return
        for k, v in enumerate(candidates):
            nodes += 1
            if nodes > node_limit:
                exact = False
                return
            rest = candidates[k + 1:]
            if total + weights[v] + sum(weights[c] for c in rest) <= best:
                return
            best = max(best, total + weights[v])
            expand([c for c in rest if c in neighbours[v]], total + weights[v])
            if not exact:
                return

    expand(order, 0)
    return best, exact


def clique_bound(problem: Problem, ids: Sequence[str]) -> tuple[int, bool]:
    """Heaviest clique among buffers ``ids`` of ``problem``'s conflict graph."""
    index = {bid: i for i, bid in enumerate(ids)}
    conflicts = problem.conflicts
    neighbours = [{index[o] for o in conflicts[bid] if o in index} for bid in ids]
    return heaviest_clique([problem.buffer(bid).size for bid in ids], neighbours)

