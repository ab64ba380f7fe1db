"""Lower bounds and infeasibility proofs, by hand and against plans."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan import Buffer, Memory, Problem, RelativePlacement, lower_bounds, solve
from optplan.core.bounds import peak_load


def test_peak_load_half_open() -> None:
    s, e, z = np.array([0, 2, 2]), np.array([2, 4, 3]), np.array([5, 7, 1])
    assert peak_load(s, e, z) == (8, 2)  # a ends at 2 when b and c start


def test_single_memory_bound_is_peak_live_load() -> None:
    p = Problem((Buffer("a", 10, 0, 3), Buffer("b", 20, 2, 5), Buffer("c", 5, 4, 9)))
    b = lower_bounds(p)
    assert b.lower == {"mem": 30} and b.step == {"mem": 2} and b.infeasible is None


def test_alignment_rounds_all_but_the_top_buffer() -> None:
    # offsets are multiples of 8: sizes 5 and 3 live together need at least 8 + 3 bytes
    p = Problem((Buffer("a", 5, 0, 2), Buffer("b", 3, 0, 2)), (Memory("m", alignment=8),))
    assert lower_bounds(p).lower["m"] == 11


def test_hierarchy_spill_bound() -> None:
    # 100 bytes live at once; sram holds 64, so at least 36 must go to dram
    mems = (Memory("sram", capacity=64), Memory("dram"))
    p = Problem((Buffer("a", 50, 0, 2), Buffer("b", 50, 1, 3), Buffer("c", 30, 5, 6, allowed=("dram",))), mems)
    assert lower_bounds(p).lower == {"sram": 0, "dram": 36}


def test_infeasible_names_memory_and_step() -> None:
    mems = (Memory("sram", capacity=64), Memory("l2", capacity=32))
    p = Problem((Buffer("a", 50, 0, 2), Buffer("b", 50, 1, 3)), mems)
    assert lower_bounds(p).infeasible == "memory 'sram' + 'l2': at step 1, 100 bytes must be live but the capacity is 96 bytes"
    plan = solve(p, "greedy-size")
    assert plan.status.value == "INFEASIBLE" and plan.message.startswith("memory 'sram' + 'l2'")


def test_buffer_too_large_and_fixed_conflict() -> None:
    p = Problem((Buffer("big", 100, 0, 1),), (Memory("m", capacity=64),))
    assert lower_bounds(p).infeasible == "buffer 'big' needs 100 bytes; no memory it may use is that large"
    q = Problem((Buffer("a", 8, 0, 2, fixed_offset=0), Buffer("b", 8, 1, 3, fixed_offset=4)), (Memory("m"),))
    assert "its fixed placement overlaps the fixed placement of 'a'" in lower_bounds(q).infeasible


def test_relative_members_counted_once() -> None:
    p = Problem((Buffer("out", 32, 2, 5), Buffer("x", 16, 0, 3), Buffer("y", 16, 0, 3)), (Memory("m"),),
                (RelativePlacement("x", "out", 0), RelativePlacement("y", "out", 16)))
    assert lower_bounds(p).lower["m"] == 32


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    n = draw(st.integers(1, 10))
    mems = (Memory("fast", capacity=draw(st.integers(0, 120)), alignment=draw(st.sampled_from([1, 4]))), Memory("slow"))
    bufs = []
    for i in range(n):
        s = draw(st.integers(0, 8))
        bufs.append(Buffer(f"b{i}", draw(st.integers(0, 40)), s, s + draw(st.integers(1, 5)),
                           alignment=draw(st.sampled_from([1, 2, 8])),
                           allowed=draw(st.sampled_from([None, ("fast",), ("slow",)]))))
    return Problem(tuple(bufs), mems)


@settings(max_examples=150, deadline=None)
@given(problems())
def test_bounds_never_exceed_a_valid_plan(p: Problem) -> None:
    b = lower_bounds(p)
    plan = solve(p, "greedy-size")
    if plan.found:
        assert b.infeasible is None
        assert all(b.lower[m] <= plan.peak[m] for m in p.memory_names)


def test_alignment_bound_never_below_live_load() -> None:
    # the largest rounding slack (buffer a, alone at step 0) must not pull the bound under the live load
    p = Problem((Buffer("a", 1, 0, 1), Buffer("b", 16, 1, 2), Buffer("c", 16, 1, 2)), (Memory("m", alignment=16),))
    assert lower_bounds(p).lower["m"] == 32


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 12).flatmap(lambda slots: st.tuples(st.just(slots), st.lists(
    st.tuples(st.integers(0, slots), st.integers(0, slots), st.integers(0, 2**40)), max_size=12))))
def test_the_one_live_load_sweep_counts_each_slot(case: tuple[int, list[tuple[int, int, int]]]) -> None:
    """``core.load.live_load`` (the usage curve's, the orderings' and the graph's sweep): slot k holds
    the bytes of every interval with first <= k < last."""
    from optplan.core.load import live_load

    slots, spans = case
    spans = [(min(a, b), max(a, b), z) for a, b, z in spans]
    first, last, size = (np.array([s[i] for s in spans], np.int64) for i in range(3))
    got = live_load(first, last, size, slots)
    assert got.tolist() == [sum(z for a, b, z in spans if a <= k < b) for k in range(slots)]
