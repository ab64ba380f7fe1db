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

Happens-before is a partial order on spans (``p`` before ``q`` when ``p.end <= q.start`` in every
stream; a span's start is at most its end), and conflict is incomparability. So the heaviest set
of pairwise-conflicting spans is a maximum-weight antichain, which a maximum flow computes exactly
at any size (Dilworth's theorem, weighted: Fulkerson's bipartite network); ``antichain_bound`` is
the bound the planners use, the heaviest clique (``clique_bound``) its search-based predecessor.
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
DIRECT_PAIRS = 64  # below this many (end, start) pairs the order's arcs are listed, not routed through a chain


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
        self.start = np.array(start, np.int64).reshape(-1, k)  # span by stream
        self.end = np.array(end, np.int64).reshape(-1, k)
        self.p, self.q = _concurrent_pairs(self.start, self.end, self.owner)
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


def antichain_bound(problem: Problem, roots: Sequence[str]) -> int:
    """The heaviest set of pairwise-conflicting spans of different units among the units ``roots``
    of ``problem`` (their bytes are disjoint, so the peak is at least their summed heights), exact.

    A lone buffer's spans are a chain of the happens-before order (consecutive spans meet), so an
    antichain takes at most one span of it, as a clique does; on such units this is the heaviest
    clique, found by a maximum flow instead of a search. Two spans of one unit may be concurrent
    (members placed relative to each other, whose bytes the user may overlap): such a unit keeps
    only a chain of its spans (the heaviest first), which can only lower the bound, and where one
    was dropped the heaviest clique found (``clique_bound``) is taken when it is higher."""
    graph = clock_graph(problem)
    index = {r: i for i, r in enumerate(graph.roots)}
    chosen = np.zeros(len(graph.roots), bool)
    chosen[[index[r] for r in roots]] = True
    keep = np.flatnonzero(chosen[graph.owner]) if len(graph.owner) else np.zeros(0, np.int64)
    keep = keep[graph.y1[keep] > graph.y0[keep]]
    weight = graph.y1[keep] - graph.y0[keep]
    chain, dropped = _one_chain_per_unit(graph.start[keep], graph.end[keep], graph.owner[keep], weight)
    best = heaviest_antichain(graph.start[keep[chain]], graph.end[keep[chain]], weight[chain].tolist())
    if dropped:
        best = max(best, clique_bound(problem, roots)[0])
    return best


def _one_chain_per_unit(start: np.ndarray, end: np.ndarray, owner: np.ndarray,
                        weight: np.ndarray) -> tuple[np.ndarray, bool]:
    """Indices of the spans kept (each unit's spans reduced to a chain, heaviest first: every
    antichain then takes at most one span per unit) and whether any span was dropped."""
    order = np.lexsort((-weight, owner))
    kept: list[int] = []
    dropped = False
    lo = 0
    while lo < len(order):
        hi = lo
        while hi < len(order) and owner[order[hi]] == owner[order[lo]]:
            hi += 1
        chain: list[int] = []
        for i in order[lo:hi].tolist():
            if all((end[i] <= start[j]).all() or (end[j] <= start[i]).all() for j in chain):
                chain.append(i)
            else:
                dropped = True
        kept += chain
        lo = hi
    return np.array(sorted(kept), np.int64), dropped


def heaviest_antichain(start: np.ndarray, end: np.ndarray, weight: Sequence[int]) -> int:
    """The largest total ``weight`` of spans no two of which are ordered (``a`` before ``b`` when
    ``end[a] <= start[b]`` in every stream; every span has ``start <= end``, not equal).

    Fulkerson's network: the source feeds each span's left copy ``L`` with its weight, each right
    copy ``R`` drains its weight to the sink, ``R_v -> L_v`` and ``L_u ~> R_v`` for ``u`` before
    ``v`` are unbounded. A finite cut leaves an antichain (the spans whose ``L`` is on the source's
    side and ``R`` on the sink's) and pays the weight of all other spans, and every antichain has
    such a cut: the heaviest antichain weighs the total less the maximum flow (OR-Tools' push-
    relabel, int64 capacities). The order's arcs are routed through chains of auxiliary nodes
    (``_order_arcs``), O(n log^(k-1) n) of them for ``k`` streams, not its up to n^2 / 2 pairs.
    Weights whose sums int64 cannot hold are scaled down (rounded down: still a lower bound)."""
    n = len(weight)
    if n == 0:
        return 0
    arcs = _Arcs(2 + 2 * n)
    everything = np.arange(n, dtype=np.int64)
    _order_arcs(arcs, start, end, everything, everything, 0, n)
    order_tails, order_heads = arcs.arrays()
    spans = np.arange(n, dtype=np.int64)
    tails = np.concatenate([np.zeros(n, np.int64), 2 + n + spans, 2 + n + spans, order_tails])
    heads = np.concatenate([2 + spans, np.ones(n, np.int64), 2 + spans, order_heads])
    from ortools.graph.python import max_flow  # lazily: `import optplan` stays light

    shift = max(0, sum(weight).bit_length() - 60)  # the total, its double and a margin fit int64
    while True:
        w = np.array([x >> shift for x in weight], np.int64)
        total = int(w.sum())
        flow = max_flow.SimpleMaxFlow()
        flow.add_arcs_with_capacity(tails, heads, np.concatenate([w, w, np.full(n + len(order_tails), total + 1, np.int64)]))
        if flow.solve(0, 1) == flow.OPTIMAL:
            return (total - int(flow.optimal_flow())) << shift
        shift += 8  # the solver feared an overflow: coarser weights


class _Arcs:
    """The unbounded arcs of the order's paths, collected as arrays, and the auxiliary nodes
    numbered after the ``first`` (source, sink and the spans' two copies)."""

    def __init__(self, first: int) -> None:
        self.size = first
        self.tails: list[np.ndarray] = []
        self.heads: list[np.ndarray] = []

    def nodes(self, count: int) -> int:
        """``count`` new nodes; the first one's number."""
        self.size += count
        return self.size - count

    def add(self, tails: np.ndarray, heads: np.ndarray) -> None:
        self.tails.append(np.asarray(tails, np.int64))
        self.heads.append(np.asarray(heads, np.int64))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.tails:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(self.tails), np.concatenate(self.heads)


def _order_arcs(arcs: _Arcs, start: np.ndarray, end: np.ndarray, us: np.ndarray, vs: np.ndarray,
                d: int, n: int) -> None:
    """Paths ``L_u ~> R_v`` for the ``u`` in ``us`` and ``v`` in ``vs`` with ``end[u] <= start[v]``
    in streams ``d`` and above (those below are known to hold). Divide and conquer on stream
    ``d``'s steps: below a middle step ``m`` on both sides, above it on both sides, or ``u`` ends
    at or below ``m`` and ``v`` starts above it (stream ``d`` holds: the next stream decides); in
    the last stream one chain of nodes, step by step, joins them; few pairs are joined directly."""
    k = start.shape[1]
    while len(us) and len(vs):
        if len(us) * len(vs) <= DIRECT_PAIRS:
            a, b = np.nonzero((end[us][:, None, d:] <= start[vs][None, :, d:]).all(axis=2))
            arcs.add(2 + us[a], 2 + n + vs[b])
            return
        ends, starts = end[us, d], start[vs, d]
        steps = np.unique(np.concatenate([ends, starts]))
        if d == k - 1:
            base = arcs.nodes(len(steps))
            chain = base + np.arange(len(steps), dtype=np.int64)
            arcs.add(chain[:-1], chain[1:])
            arcs.add(2 + us, base + np.searchsorted(steps, ends))
            arcs.add(base + np.searchsorted(steps, starts), 2 + n + vs)
            return
        if len(steps) == 1:
            d += 1
            continue
        m = steps[(len(steps) - 1) // 2]
        _order_arcs(arcs, start, end, us[ends <= m], vs[starts <= m], d, n)
        _order_arcs(arcs, start, end, us[ends > m], vs[starts > m], d, n)
        us, vs, d = us[ends <= m], vs[starts > m], d + 1
