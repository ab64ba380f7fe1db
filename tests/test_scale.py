"""What makes large instances fast must not change what is read."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan import problem as model
from optplan.formats import minimalloc_csv
from optplan.problem import Buffer, Gap, Memory, Problem
from optplan.validate import _any_overlap


@pytest.mark.parametrize("text", [
    "id,lower,upper,size\n1,0,2,41473\nb,1,3,7\n",
    "buffer,begin,end,size,alignment\r\n1, 0,2,64,8\r\nx,1,3,7,1\r\n",
    "id,start,upper,size\n1,0,2,+5\n2,3,4,0",
])
def test_plain_csv_read_in_bulk_as_the_general_reader(text: str, monkeypatch) -> None:
    assert minimalloc_csv._plain_buffers(text) is not None
    fast = minimalloc_csv.problem_from_csv(text)
    monkeypatch.setattr(minimalloc_csv, "_plain_buffers", lambda text: None)
    slow = minimalloc_csv.problem_from_csv(text)
    assert fast.buffers == slow.buffers and fast.units == slow.units


@pytest.mark.parametrize("text", ["id,lower,upper,size\n1,0,2\n", "id,lower,upper,size\n1,0,2,x\n",
                                  'id,lower,upper,size\n"1",0,2,3\n', "id,lower,upper,size,hint\n1,0,2,3,\n"])
def test_other_csv_goes_to_the_general_reader(text: str) -> None:
    assert minimalloc_csv._plain_buffers(text) is None


def test_units_without_relative_placements_as_the_general_builder() -> None:
    """One unit per buffer is built directly; the grouping builder gives the same units."""
    buffers = (Buffer("a", 8, 0, 4, alignment=4), Buffer("b", 0, 1, 2), Buffer("c", 6, 1, 5, blocked=("slow",)),
               Buffer("d", 4, 0, 3, fixed_memory="slow", fixed_offset=8),
               Buffer("e", 4, 0, 6, gaps=(Gap(2, 4, (0, 2)),), allowed=("fast",)), Buffer("f", 3, 2, 9, alignment=3))
    p = Problem(buffers, (Memory("fast", capacity=32, alignment=2), Memory("slow")))
    assert p.units == model._grouped_units(p)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(1, 4), st.integers(0, 20), st.integers(1, 6)), min_size=1, max_size=12))
def test_overlap_sweep_agrees_with_all_pairs(rects) -> None:
    """The validator's O(n log n) sweep finds a clash exactly when some pair clashes."""
    rects.sort(key=lambda r: r[0])
    start, end, lo, hi = (np.array(c, np.int64) for c in zip(*[(s, s + d, y, y + h) for s, d, y, h in rects]))
    pairs = any(start[i] < end[j] and start[j] < end[i] and lo[i] < hi[j] and lo[j] < hi[i]
                for i in range(len(rects)) for j in range(i + 1, len(rects)))
    assert _any_overlap(start, end, lo, hi) == pairs
