"""The exact bound for concurrent lifetimes: the heaviest antichain of the happens-before order,
against enumeration (small random two- and three-stream problems), against the heaviest clique
(equal where the clique is exact and every unit is a lone buffer), and on a large instance where
the old greedy clique fell short."""

from __future__ import annotations

import itertools
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan import Buffer, Memory, Problem, RelativePlacement, lower_bounds
from optplan.core.bounds import peak_load
from optplan.core.buffer import Gap
from optplan.core.clocks import EXACT_CLIQUE_VERTICES, antichain_bound, clique_bound, heaviest_antichain


@st.composite
def clock_problems(draw, max_buffers: int = 7, relative: bool = False) -> Problem:
    """Up to ``max_buffers`` buffers on two or three streams with small clocks; some with a gap
    (full, or a window); with ``relative``, some placed relative to an earlier buffer."""
    streams = draw(st.sampled_from([2, 3]))
    n = draw(st.integers(1, max_buffers))
    buffers, rel = [], []
    for i in range(n):
        s = tuple(draw(st.integers(0, 4)) for _ in range(streams))
        e = tuple(x + draw(st.integers(0, 3)) for x in s)
        if e == s:
            e = (e[0] + 1, *e[1:])
        size = draw(st.integers(1, 9)) * 8
        gaps: tuple[Gap, ...] = ()
        if draw(st.booleans()):
            g0 = tuple(draw(st.integers(a, b)) for a, b in zip(s, e))
            g1 = tuple(draw(st.integers(a, b)) for a, b in zip(g0, e))
            if g1 != g0 and (g0, g1) != (s, e):
                gaps = (Gap(g0, g1, draw(st.sampled_from([None, (0, size // 2), (size // 2, size)]))),)
        buffers.append(Buffer(f"b{i}", size, s, e, gaps=gaps))
        if relative and i and draw(st.booleans()):
            rel.append(RelativePlacement(f"b{i}", f"b{draw(st.integers(0, i - 1))}", 8 * draw(st.integers(-2, 3))))
    return Problem(buffers, (Memory("mem"),), rel)


def _spans(b: Buffer) -> list[tuple[tuple[int, ...], tuple[int, ...], int]]:
    """Independent of the library: ``(start, end, bytes held)`` of each stretch of ``b``'s life."""
    out, t = [], b.start
    for g in b.gaps:
        if t != g.start:
            out.append((t, g.start, b.size))
        if g.window:
            out.append((g.start, g.end, g.window[1] - g.window[0]))
        t = g.end
    if t != b.end:
        out.append((t, b.end, b.size))
    return out


def _concurrent(p, q) -> bool:
    before = all(x <= y for x, y in zip(p[1], q[0]))
    after = all(x <= y for x, y in zip(q[1], p[0]))
    return not (before or after)


def _heaviest_by_enumeration(problem: Problem) -> int:
    """The heaviest set of pairwise-concurrent spans, at most one per buffer, by trying them all."""
    per_buffer = [[(0, 0, 0)] + _spans(b) for b in problem.buffers]  # (0, 0, 0): none of its spans
    best = 0
    for pick in itertools.product(*per_buffer):
        chosen = [p for p in pick if p[2]]
        if all(_concurrent(p, q) for p, q in itertools.combinations(chosen, 2)):
            best = max(best, sum(p[2] for p in chosen))
    return best


def _roots(problem: Problem) -> list[str]:
    return [u.root for u in problem.units]


@settings(max_examples=150, deadline=None)
@given(clock_problems())
def test_the_antichain_is_the_heaviest_pairwise_concurrent_set(problem: Problem) -> None:
    assert antichain_bound(problem, _roots(problem)) == _heaviest_by_enumeration(problem)


@settings(max_examples=60, deadline=None)
@given(clock_problems(max_buffers=6, relative=True))
def test_with_relative_placements_the_bound_is_a_clique_and_at_least_the_clique_bound(problem: Problem) -> None:
    """Members of one unit may be concurrent (the user lays them out, maybe overlapping): the
    bound never counts two of them, and never falls below the heaviest clique."""
    bound = antichain_bound(problem, _roots(problem))
    clique, exact = clique_bound(problem, _roots(problem))
    assert bound >= clique
    if exact:
        assert bound == clique


def test_equal_to_the_exact_clique_bound_on_random_two_and_three_stream_problems() -> None:
    rng = random.Random(7)
    for trial in range(40):
        streams = 2 + trial % 2
        buffers = []
        for i in range(rng.randint(5, 60)):
            s = tuple(rng.randint(0, 30) for _ in range(streams))
            e = tuple(x + rng.randint(0, 8) for x in s)
            if e == s:
                e = (e[0] + 1, *e[1:])
            buffers.append(Buffer(f"b{i}", rng.randint(1, 64) * 16, s, e))
        problem = Problem(buffers)
        clique, exact = clique_bound(problem, _roots(problem))
        assert exact and len(buffers) <= EXACT_CLIQUE_VERTICES
        assert antichain_bound(problem, _roots(problem)) == clique
        assert lower_bounds(problem).lower["mem"] == clique


def test_exact_on_thousands_of_spans_where_the_greedy_clique_fell_short() -> None:
    """Two streams that never meet: every buffer of one is concurrent with every buffer of the
    other, and within a stream the lifetimes are intervals, so the heaviest antichain is the sum
    of the two streams' peak live loads. 1,200 spans: the clique bound is greedy there."""
    rng = random.Random(5)
    buffers, known = [], 0
    for stream in range(2):
        start, end, size = [], [], []
        for i in range(600):
            a, length, bytes_ = rng.randint(0, 1200), rng.randint(1, 200), rng.randint(1, 64) * 16
            s, e = [0, 0], [0, 0]
            s[stream], e[stream] = a, a + length
            buffers.append(Buffer(f"s{stream}-{i}", bytes_, tuple(s), tuple(e)))
            start.append(a)
            end.append(a + length)
            size.append(bytes_)
        known += peak_load(np.array(start), np.array(end), np.array(size))[0]
    problem = Problem(buffers)
    greedy, exact = clique_bound(problem, _roots(problem))
    assert not exact and greedy < known
    assert antichain_bound(problem, _roots(problem)) == known
    assert lower_bounds(problem).lower["mem"] == known


def test_weights_beyond_int64_are_scaled_down_and_stay_a_lower_bound() -> None:
    start = np.array([[0, 0], [0, 0], [1, 1], [0, 2]])
    end = np.array([[1, 1], [1, 1], [2, 2], [1, 3]])
    assert heaviest_antichain(start, end, [5, 6, 7, 3]) == 14  # spans 0, 1 and 3
    big = 2**63 - 1
    got = heaviest_antichain(start, end, [big, big, big, 3])
    assert 2 * big - 2**8 <= got <= 2 * big + 3
