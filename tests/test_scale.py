"""What makes large instances fast must not change what is read."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.core import bounds
from optplan.core import units as model
from optplan.core.buffer import Buffer, Gap, Memory
from optplan.core.columns import Columns
from optplan.core.compiled import any_overlap as _any_overlap
from optplan.core.errors import ProblemError
from optplan.core.load import overlapping_pairs
from optplan.core.placement import Layout
from optplan.core.plan import Placement, peaks
from optplan.core.problem import Problem
from optplan.core.validate import _plain_valid, validate
from optplan.formats import minimalloc_csv
from optplan.heuristics.arrays import Arrays


@pytest.mark.parametrize("text", [
    "id,lower,upper,size\n1,0,2,41473\nb,1,3,7\n",
    "buffer,begin,end,size,alignment\r\n1,0,2,64,8\r\n x ,1,3,7,1\r\n",
    "id,start,upper,size\n1,-0,2,005\n2,3,4,0",
])
def test_plain_csv_read_in_bulk_as_the_general_reader(text: str, monkeypatch) -> None:
    assert minimalloc_csv._plain_problem(text, "<csv>") is not None
    fast = minimalloc_csv.problem_from_csv(text)
    monkeypatch.setattr(minimalloc_csv, "_plain_problem", lambda text, source: None)
    slow = minimalloc_csv.problem_from_csv(text)
    assert fast.buffers == slow.buffers and fast.units == slow.units
    assert [getattr(fast.columns, f).tolist()
            for f in ("start", "end", "size", "alignment", "gain")] == [
        getattr(slow.columns, f).tolist() for f in ("start", "end", "size", "alignment", "gain")]


@pytest.mark.parametrize("text", ["id,lower,upper,size\n1,0,2\n", "id,lower,upper,size\n1,0,2,x\n",
                                  'id,lower,upper,size\n"1",0,2,3\n', "id,lower,upper,size,hint\n1,0,2,3,\n",
                                  "id,lower,upper,size\n1, 0,2,3\n", "id,lower,upper,size\n1,0,2,+5\n",  # (refused there)
                                  "id,lower,upper,size\n1,0,2,1_0\n", f"id,lower,upper,size\n{'x' * 131_073},0,2,3\n"])
def test_other_csv_goes_to_the_general_reader(text: str) -> None:
    assert minimalloc_csv._plain_problem(text, "<csv>") is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("0123456789-", max_size=21), min_size=1, max_size=6))
def test_bulk_integers_are_what_int_reads(cells: list[str]) -> None:
    """The bulk column parser (numpy's C parser after a check of the cells' shape) reads exactly
    the cells ``int`` reads into int64, and refuses a column with any other."""
    try:
        want = [int(c) for c in cells]
        ok = all(-2**63 <= v < 2**63 for v in want)
    except ValueError:
        ok = False
    got = minimalloc_csv._integers(cells)
    assert (got is not None) == ok and (got is None or got.tolist() == want)


def test_buffers_read_from_columns_are_made_when_first_needed() -> None:
    """A problem read in bulk builds its ``Buffer`` objects only when they are iterated (a
    million take seconds); one read by position, the index by id and a pickle agree with them."""
    import pickle
    p = minimalloc_csv.problem_from_csv("id,lower,upper,size,alignment\na,0,2,4,1\nb,1,3,8,4\n")
    assert p.buffers._made is None  # type: ignore[attr-defined]
    assert (p.buffers[-1], len(p.buffers)) == (Buffer("b", 8, 1, 3, alignment=4), 2) and p.buffers._made is None  # type: ignore[attr-defined]
    assert p.buffer("a") == Buffer("a", 4, 0, 2) and p.buffers._made is not None  # type: ignore[attr-defined]
    again = pickle.loads(pickle.dumps(p))
    assert tuple(again.buffers) == tuple(p.buffers) == p.buffers[:] and again.has_buffer("b")


@pytest.mark.parametrize("memories", [(Memory("mem", capacity=12),), (Memory("sram", 8, alignment=4), Memory("dram"))])
def test_memories_given_to_a_problem_read_in_bulk_keep_its_columns(memories) -> None:
    """A capacity or a hierarchy given to a problem read in bulk (``--capacity``, ``--memories``)
    keeps it in columns (the general constructor took 18 s over a million buffers) and gives the
    problem the general constructor gives; a bad memory is refused as there."""
    p = minimalloc_csv.problem_from_csv("id,lower,upper,size,alignment\na,0,2,4,1\nb,1,3,8,2\nc,2,4,4,1\n")
    got = p.with_capacity(12) if len(memories) == 1 else p.with_memories(memories)
    assert got.buffers._made is None  # type: ignore[attr-defined]
    want = Problem(tuple(p.buffers), memories)
    assert (got.memories, got.units, tuple(got.buffers)) == (want.memories, want.units, want.buffers)
    with pytest.raises(ProblemError, match="duplicate memory name"):
        p.with_memories((Memory("x"), Memory("x")))


def test_units_without_relative_placements_as_the_general_builder() -> None:
    """One unit per buffer is built directly; the grouping builder gives the same units."""
    buffers = (Buffer("a", 8, 0, 4, alignment=4), Buffer("b", 0, 1, 2), Buffer("c", 6, 1, 5, blocked=("slow",)),
               Buffer("d", 4, 0, 3, fixed_memory="slow", fixed_offset=8),
               Buffer("e", 4, 0, 6, gaps=(Gap(2, 4, (0, 2)),), allowed=("fast",)), Buffer("f", 3, 2, 9, alignment=3))
    p = Problem(buffers, (Memory("fast", capacity=32, alignment=2), Memory("slow")))
    assert p.units == model.grouped_units(p)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(1, 4), st.integers(0, 20), st.integers(1, 6)), min_size=1, max_size=12))
def test_overlap_sweep_agrees_with_all_pairs(rects) -> None:
    """The validator's O(n log n) sweep finds a clash exactly when some pair clashes."""
    rects.sort(key=lambda r: r[0])
    start, end, lo, hi = (np.array(c, np.int64) for c in zip(*[(s, s + d, y, y + h) for s, d, y, h in rects]))
    pairs = any(start[i] < end[j] and start[j] < end[i] and lo[i] < hi[j] and lo[j] < hi[i]
                for i in range(len(rects)) for j in range(i + 1, len(rects)))
    assert _any_overlap(start, end, lo, hi) == pairs


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(1, 5)), max_size=14))
def test_overlapping_pairs_counts_every_pair_once(spans) -> None:
    """The sorted-key count of lifetimes sharing a step is the all-pairs count (equal starts and
    ends, nested and touching lifetimes included): it decides whether the search only dives."""
    start, end = np.array([s for s, _ in spans], np.int64), np.array([s + d for s, d in spans], np.int64)
    expected = sum(start[i] < end[j] and start[j] < end[i] for i in range(len(spans)) for j in range(i + 1, len(spans)))
    assert overlapping_pairs(start, end) == expected


plain_rows = st.lists(st.tuples(st.integers(0, 9), st.integers(1, 4), st.sampled_from([0, 1, 3, 4, 8, 12]),
                                st.sampled_from([1, 1, 2, 4])), min_size=0, max_size=10)


def _general(p: Problem) -> Problem:
    """The same problem through the general constructor, its columns not marked plain: every
    pass that has a fast path for plain columns takes the general one on it."""
    q = Problem(p.buffers, p.memories, (), dict(p.metadata))
    c = q.columns
    q.__dict__["columns"] = Columns(c.ids, c.start, c.end, c.size, c.alignment, c.gain, False)
    return q


@settings(max_examples=150, deadline=None)
@given(plain_rows, st.sampled_from([None, 10, 24]), st.sampled_from([1, 2, 4]),
       st.lists(st.integers(0, 24), min_size=10, max_size=10))
def test_plain_columns_take_the_fast_paths_to_the_same_answers(rows, capacity, alignment, offs) -> None:
    """Problem.from_columns builds what the general constructor builds, and bounds, the compiled
    packer's arrays, peaks and validation on plain columns agree with the general code, without
    making its units (made when first asked for: a million take seconds)."""
    cols = [np.array(c, np.int64) for c in zip(*[(s, s + d, z, a) for s, d, z, a in rows])] or [np.zeros(0, np.int64)] * 4
    ids = [f"b{i}" for i in range(len(rows))]
    memory = Memory("m", capacity=capacity, alignment=alignment)
    fast = Problem.from_columns(ids, cols[0], cols[1], cols[2], cols[3], (memory,))
    slow = _general(fast)
    assert fast.columns.plain and fast.buffers == slow.buffers and fast.unit_count == slow.unit_count == len(rows)
    assert bounds._lower_bounds(fast) == bounds._lower_bounds(slow)
    a, b = Arrays(fast), Arrays(slow)
    assert all(np.array_equal(getattr(a, k), getattr(b, k)) for k in vars(b) if k not in ("_index", "problem"))
    plan = {i: Placement("m", o - o % 4) for i, o in zip(ids, offs)}
    assert peaks(fast, plan) == peaks(slow, plan)
    assert _plain_valid(fast, plan) == (validate(slow, plan) == [])
    layout = Layout(ids, ("m",), np.zeros(len(ids), np.int64), np.array([plan[i].offset for i in ids], np.int64))
    written = minimalloc_csv.plan_to_csv(slow, SimpleNamespace(placements=plan))  # (the csv module's writer)
    assert minimalloc_csv.plan_to_csv(fast, SimpleNamespace(placements=plan)) == written
    assert minimalloc_csv.plan_to_csv(fast, SimpleNamespace(placements=layout)) == written
    assert "_units" not in fast.__dict__  # none of that made them
    assert fast.units == slow.units and fast.units is fast.units and a.index == {id(u): i for i, u in enumerate(fast.units)}


@pytest.mark.parametrize("start, end, size, align, why", [
    ([0, 2], [1, 2], [4, 4], [1, 1], "lifetime [2, 2) is empty"),
    ([0, 0], [1, 1], [4, -1], [1, 1], "field 'size'"),
    ([0, 0], [1, 1], [4, 4], [1, 0], "field 'alignment'"),
])
def test_plain_columns_that_fail_a_check_are_reported_by_the_general_one(start, end, size, align, why) -> None:
    with pytest.raises(ProblemError, match="buffer 'b1'"):
        Problem.from_columns(["b0", "b1"], *(np.array(c, np.int64) for c in (start, end, size, align)))
    with pytest.raises(ProblemError, match="duplicate id"):
        Problem.from_columns(["b0", "b0"], *(np.array(c, np.int64) for c in ([0, 0], [1, 1], [4, 4], [1, 1])))


def test_a_plan_off_the_plain_path_is_still_checked() -> None:
    """A missing buffer, another memory or a float offset leave the array path; the general
    checks name them."""
    p = Problem.from_columns(["a", "b"], *(np.array(c, np.int64) for c in ([0, 0], [2, 2], [4, 4], [1, 1])))
    for plan in ({"a": Placement("mem", 0)}, {"a": Placement("mem", 0), "b": Placement("x", 4)},
                 {"a": Placement("mem", 0), "b": Placement("mem", 4.0)}, {"a": Placement("mem", 0), "b": Placement("mem", 2)}):
        assert not _plain_valid(p, plan) and validate(p, plan)  # type: ignore[arg-type]
    assert validate(p, {"a": Placement("mem", 0), "b": Placement("mem", 4)}) == []
