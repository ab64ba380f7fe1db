"""The greedy placement engine: its time index against a plain scan, and its fit policies."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.core.buffer import Buffer, Memory, RelativePlacement
from optplan.core.problem import Problem
from optplan.heuristics.packer import Packer, _TimeIndex, _union, greedy


def union_of(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 8), st.integers(0, 40), st.integers(1, 9)), max_size=40),
       st.lists(st.tuples(st.integers(0, 30), st.integers(1, 12)), min_size=1, max_size=10))
def test_time_index_finds_exactly_the_overlapping_bytes(rects, queries):
    times = sorted({t for a, d, _, _ in rects for t in (a, a + d)} | {t for a, d in queries for t in (a, a + d)})
    index = _TimeIndex(times)
    placed = []
    for i, (a, d, y, h) in enumerate(rects):
        index.add(a, a + d, y, y + h)
        placed.append((a, a + d, y, y + h))
        for q0, qd in queries[: 1 + i % len(queries)]:  # interleave queries with insertions
            y0, y1 = index.overlapping(q0, q0 + qd)
            got = union_of(list(zip(y0.tolist(), y1.tolist())))
            want = union_of([(c, e) for a0, a1, c, e in placed if a0 < q0 + qd and q0 < a1])
            assert got == want


def test_union_merges_touching_and_nested_ranges():
    y0, y1 = _union(np.array([5, 0, 2, 10, 12]), np.array([7, 3, 5, 11, 13]))
    assert list(zip(y0.tolist(), y1.tolist())) == [(0, 7), (10, 11), (12, 13)]


def test_free_ranges_and_policies():
    # a [0,4) and c [6,8) are alive over [0,2): holes [4,6) and above 8
    p = Problem((Buffer("a", 4, 0, 2), Buffer("c", 2, 0, 2), Buffer("x", 2, 1, 3), Buffer("w", 1, 0, 1)),
                (Memory("m", capacity=12),))
    packer = Packer(p)
    unit = {u.root: u for u in p.units}
    packer.place(unit["a"], "m", 0)
    packer.place(unit["c"], "m", 6)
    assert packer.free(unit["x"], "m") == [(4, 4), (8, 10)]
    assert packer.fit(unit["x"], "m", "first") == 4
    assert packer.fit(unit["w"], "m", "first") == 4
    assert packer.fit(unit["w"], "m", "best") == 4  # the 2-byte hole beats the open top
    packer.place(unit["x"], "m", 4)
    assert packer.placements["x"].offset == 4 and packer.top["m"] == 8


def test_best_fit_prefers_the_tighter_hole_and_heap_counts_room_below_the_top():
    # during [0,1): p [0,2), q [5,6), t [7,10): holes [2,5) (3 bytes) and [6,7) (1 byte)
    bufs = (Buffer("p", 2, 0, 1), Buffer("q", 1, 0, 1), Buffer("t", 3, 0, 1), Buffer("w", 1, 0, 1), Buffer("v", 1, 2, 3))
    p = Problem(bufs)
    unit = {u.root: u for u in p.units}
    packer = Packer(p)
    packer.place(unit["p"], "mem", 0)
    packer.place(unit["q"], "mem", 5)
    packer.place(unit["t"], "mem", 7)
    assert packer.fit(unit["w"], "mem", "first") == 2
    assert packer.fit(unit["w"], "mem", "best") == 6
    assert packer.fit(unit["w"], "mem", "heap") == 6
    assert packer.fit(unit["v"], "mem", "best") == 0  # alone in time


def test_alignment_capacity_and_fixed_offsets():
    p = Problem((Buffer("a", 3, 0, 2), Buffer("b", 2, 0, 2, alignment=4), Buffer("f", 2, 0, 2, fixed_offset=8),
                 Buffer("g", 2, 0, 2, fixed_offset=0), Buffer("z", 2, 0, 2), Buffer("y", 2, 1, 2)),
                (Memory("m", capacity=10, alignment=2),))
    unit = {u.root: u for u in p.units}
    packer = Packer(p)
    packer.place(unit["a"], "m", 0)
    assert packer.fit(unit["b"], "m") == 4  # above a at 3, aligned to 4
    assert packer.fit(unit["f"], "m") == 8
    assert packer.fit(unit["g"], "m") is None  # its fixed bytes are taken
    packer.place(unit["b"], "m", 4)
    packer.place(unit["f"], "m", 8)
    assert packer.fit(unit["z"], "m") == 6  # the hole between b and f
    packer.place(unit["z"], "m", 6)
    assert packer.fit(unit["y"], "m") is None  # full up to the capacity 10
    assert packer.free(unit["y"], "m") == []  # only byte 3 is free: no room for 2 bytes


def test_relative_units_collide_with_their_whole_footprint():
    # o spans [0,4) with a member k at +4 during [2,3): the unit occupies bytes 4..6 only then
    p = Problem((Buffer("o", 4, 0, 4), Buffer("k", 2, 2, 3), Buffer("x", 2, 0, 4)), relative=(RelativePlacement("k", "o", 4),))
    plan = greedy(p, list(p.units), "first")
    assert plan.placements["o"].offset == 0 and plan.placements["k"].offset == 4
    assert plan.placements["x"].offset == 6  # bytes 4..6 are busy during [2,3)


def test_large_random_packing_matches_a_plain_scan():
    rng = random.Random(7)
    bufs = []
    for i in range(400):
        s = rng.randint(0, 300)
        bufs.append(Buffer(f"b{i}", rng.randint(1, 50), s, s + rng.choice([1, 2, 3, 10, 100])))
    p = Problem(tuple(bufs))
    plan = greedy(p, sorted(p.units, key=lambda u: -u.height), "best")
    # every pair alive together must be disjoint in bytes (checked by a plain pairwise scan)
    placed = [(b, plan.placements[b.id].offset) for b in bufs]
    for i, (a, oa) in enumerate(placed):
        for b, ob in placed[i + 1:]:
            if a.overlaps(b):
                assert oa + a.size <= ob or ob + b.size <= oa
