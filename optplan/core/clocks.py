"""Concurrent lifetimes: vector clocks, their conflicts, and the heaviest clique as a bound.

A buffer's ``start`` and ``end`` may be vector clocks, one step per stream. ``a`` happens
before ``b`` when ``a.end <= b.start`` in every component; two buffers conflict (must not share
bytes) unless one happens before the other. A scalar lifetime is the one-stream case, where this
is the usual ``[start, end)`` overlap. Scalar problems never come here: their conflicts are
intervals, which the planners handle by sweeping time; a concurrent problem's conflict graph is
derived once (``clock_graph(problem)``) and read by the planners that support clocks.

Relative placements and gaps keep their meaning: a unit (a buffer and those placed relative to
it) moves as one, each member with its own clock; a gap is a span of clocks inside the lifetime
(``start <= gap.start``, ``gap.end <= end`` in every stream) in which the buffer holds no bytes
or only its window, so a buffer is a chain of spans (``spans``) and two units conflict in the
bytes of their concurrent spans.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np

from optplan.core.buffer import Buffer
from optplan.core.problem import Problem

EXACT_CLIQUE_NODES = 200_000  # branch-and-bound nodes before the clique bound settles for the best found
EXACT_CLIQUE_VERTICES = 400  # larger graphs: the greedy cliques only (each still a proven bound)
GREEDY_SEEDS = 64  # on larger graphs, greedy cliques grown from the heaviest and the busiest vertices


Piece = tuple[tuple[int, ...], tuple[int, ...], int, int]  # (start clock, end clock, y0, y1)


def spans(b: Buffer) -> tuple[Piece, ...]:
    """The chain of spans ``(start, end, y0, y1)`` in which ``b`` holds bytes ``[y0, y1)`` relative
    to its offset: all its bytes from its start to its first gap, the gap's window during a gap
    with one, ... to its end. Consecutive spans meet (one's end is the next one's start), so a
    buffer concurrent with ``b`` is concurrent with one of its spans; a full gap is a hole in the
    chain, where a buffer that starts after the gap's start and ends before its end fits."""
    if b.size == 0:
        return ()
    out: list[Piece] = []
    t = b.start
    for g in b.gaps:
        if t != g.start:
            out.append((t, g.start, 0, b.size))
        if g.window is not None:
            out.append((g.start, g.end, g.window[0], g.window[1]))
        t = g.end
    if t != b.end:
        out.append((t, b.end, 0, b.size))
    return tuple(out)


_graphs: weakref.WeakKeyDictionary[Problem, ClockGraph] = weakref.WeakKeyDictionary()


def clock_graph(problem: Problem) -> ClockGraph:
    """Vector clocks: which units conflict and at which relative offsets they would share a byte;
    derived once per problem, for the planners that handle clocks."""
    graph = _graphs.get(problem)
    if graph is None:
        graph = _graphs.setdefault(problem, ClockGraph(problem))
    return graph


class ClockGraph:
    """Which units of a concurrent problem must keep their bytes apart, and at which offsets.

    Each unit (a buffer and the buffers placed relative to it) is a set of spans (``spans``,
    bytes relative to the unit's root). Two spans of different units conflict when they are
    concurrent; a unit's own spans are laid out by the user. ``apart[i][j]`` lists the closed
    ranges of ``offset(i) - offset(j)`` at which units ``i`` and ``j`` share a byte in
    conflicting spans (merged, ascending): for two plain buffers the one range
    ``[1 - size(i), size(j) - 1]``. Built once per problem with numpy, chunk by chunk."""

    def __init__(self, problem: Problem) -> None:
        units = problem.units
        self.roots = [u.root for u in units]
        owner: list[int] = []
        start: list[tuple[int, ...]] = []
        end: list[tuple[int, ...]] = []
        y0: list[int] = []
        y1: list[int] = []
        # per unit, stream by stream: the earliest start and the latest end of its spans (a unit
        # whose ``last`` is at most another's ``first`` in every stream happens before all of it)
        self.first: list[tuple[int, ...]] = []
        self.last: list[tuple[int, ...]] = []
        for i, u in enumerate(units):
            n = len(owner)
            for bid, rel in u.members:
                for s, e, a, b in spans(problem.buffer(bid)):
                    owner.append(i)
                    start.append(s)
                    end.append(e)
                    y0.append(rel + a)
                    y1.append(rel + b)
            self.first.append(tuple(map(min, zip(*start[n:]))) if len(owner) > n else ())
            self.last.append(tuple(map(max, zip(*end[n:]))) if len(owner) > n else ())
        k = problem.streams
        self.owner = np.array(owner, np.int64)
        self.y0, self.y1 = np.array(y0, np.int64), np.array(y1, np.int64)
        self.p, self.q = _concurrent_pairs(np.array(start, np.int64).reshape(-1, k),
                                           np.array(end, np.int64).reshape(-1, k), self.owner)
        self.apart = self._apart(len(units))

    def _apart(self, n: int) -> list[dict[int, list[tuple[int, int]]]]:
        p, q = self.p, self.q
        i, j = self.owner[p], self.owner[q]
        lo = (self.y0[q] - self.y1[p] + 1).tolist()  # offset(i) - offset(j) in [lo, hi]: a shared byte
        hi = (self.y1[q] - self.y0[p] - 1).tolist()
        raw: list[dict[int, list[tuple[int, int]]]] = [{} for _ in range(n)]
        for a, b, l, h in zip(i.tolist(), j.tolist(), lo, hi):
            raw[a].setdefault(b, []).append((l, h))
            raw[b].setdefault(a, []).append((-h, -l))
        for row in raw:
            for other, ranges in row.items():
                if len(ranges) > 1:
                    row[other] = _merged(ranges)
        return raw

    def pairs(self) -> int:
        """Conflicting unit pairs."""
        return sum(len(row) for row in self.apart) // 2


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _concurrent_pairs(start: np.ndarray, end: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``p < q`` of concurrent spans of different units."""
    n = len(owner)
    ps, qs = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    if n == 0:
        return ps[0], qs[0]
    chunk = max(1, 2_000_000 // (n * start.shape[1]))
    for lo in range(0, n, chunk):
        e, s = end[lo:lo + chunk, None, :], start[lo:lo + chunk, None, :]
        before = (e <= start[None, :, :]).all(axis=2)  # row p happens before column q
        after = (end[None, :, :] <= s).all(axis=2)
        hit = np.logical_not(before | after)
        hit &= owner[lo:lo + chunk, None] != owner[None, :]
        hit &= np.arange(lo, lo + hit.shape[0])[:, None] < np.arange(n)[None, :]
        r, c = np.nonzero(hit)
        ps.append(r + lo)
        qs.append(c)
    return np.concatenate(ps), np.concatenate(qs)


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


def clique_bound(problem: Problem, roots: Sequence[str]) -> tuple[int, bool]:
    """Heaviest clique of conflicting spans among the units ``roots`` of ``problem`` (a span
    weighs its height: spans of a clique need disjoint bytes, so the peak is at least their sum)."""
    graph = clock_graph(problem)
    index = {r: i for i, r in enumerate(graph.roots)}
    chosen = np.zeros(len(graph.roots), bool)
    chosen[[index[r] for r in roots]] = True
    keep = np.flatnonzero(chosen[graph.owner]) if len(graph.owner) else np.zeros(0, np.int64)
    node = np.full(len(graph.owner), -1, np.int64)
    node[keep] = np.arange(len(keep))
    neighbours: list[set[int]] = [set() for _ in keep]
    for a, b in zip(node[graph.p].tolist(), node[graph.q].tolist()):
        if a >= 0 and b >= 0:
            neighbours[a].add(b)
            neighbours[b].add(a)
    return heaviest_clique((graph.y1[keep] - graph.y0[keep]).tolist(), neighbours)
