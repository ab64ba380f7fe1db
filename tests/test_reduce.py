"""Model reduction: sections, components, grid scaling, conflict pairs, symmetry, merging."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.core.buffer import Buffer, Memory, RelativePlacement
from optplan.core.objective import Objective
from optplan.core.plan import Placement, Status
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.parts import (
    conflict_pairs,
    grid,
    identical_groups,
    memory_components,
    merge,
    order_choices,
    pieces_meet,
    reduce,
    settle,
    time_sections,
)
from optplan.registry import Result, finish, solve

TWO = (Memory("fast", capacity=64), Memory("slow"))


def test_time_sections_cut_where_nothing_is_alive_across() -> None:
    p = Problem((Buffer("a", 1, 0, 2), Buffer("b", 1, 1, 3), Buffer("c", 1, 3, 5), Buffer("d", 1, 6, 7)))
    sections = time_sections(p.units)
    assert [[u.root for u in s] for s in sections] == [["a", "b"], ["c"], ["d"]]  # half-open: [1,3) and [3,5) apart


def test_memory_components_follow_flexible_units() -> None:
    mems = (Memory("a"), Memory("b"), Memory("c"))
    p = Problem((Buffer("x", 1, 0, 1, fixed_memory="a"), Buffer("y", 1, 0, 1, allowed=("b", "c")),
                 Buffer("z", 1, 0, 1, fixed_memory="c")), mems)
    comps = memory_components(p.units)
    assert sorted(sorted(u.root for u in c) for c in comps) == [["x"], ["y", "z"]]


def test_grid_is_the_gcd_of_everything_that_places_bytes() -> None:
    p = Problem((Buffer("a", 2048, 0, 2), Buffer("b", 1024, 1, 3)))
    assert grid(p.units) == 1024
    assert grid(Problem((Buffer("a", 2048, 0, 2), Buffer("b", 1024, 1, 3, fixed_offset=512))).units) == 512
    assert grid(Problem((Buffer("a", 6, 0, 2, alignment=3), Buffer("b", 12, 1, 3))).units) == 3
    # alignment 1 adds nothing: gravity keeps offsets on the sizes' grid
    assert grid(Problem((Buffer("a", 8, 0, 2), Buffer("b", 4, 1, 3)), (Memory("m", capacity=13),)).units) == 4


def test_part_scaling_round_trip() -> None:
    p = Problem((Buffer("a", 2048, 0, 2), Buffer("b", 1024, 1, 3), Buffer("c", 1024, 1, 3)),
                (Memory("m", capacity=5000),), (RelativePlacement("c", "b", 1024),))
    part = reduce(p, Objective.default(p)).parts[0]
    assert part.scale == 1024 and part.capacity == {"m": 4}
    assert part.lower == {"m": 4}
    choices = [("m", 0), ("m", 2)]
    placements = part.placements(choices)
    assert placements == {"a": Placement("m", 0), "b": Placement("m", 2048), "c": Placement("m", 3072)}
    assert part.choices(placements) == choices
    assert part.choices({**placements, "a": Placement("m", 7)}) is None  # off the grid


def test_settle_moves_a_plan_onto_the_grid_without_raising_peaks() -> None:
    p = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 1, 3), Buffer("c", 8, 3, 4)))
    part = reduce(p, Objective.default(p), split=False).parts[0]
    loose = {"a": Placement("mem", 1), "b": Placement("mem", 6), "c": Placement("mem", 3)}
    choices = settle(part, loose)
    assert choices is not None
    tight = part.placements(choices)
    assert validate(p, tight) == []
    assert all(tight[b].offset <= loose[b].offset and tight[b].offset % 4 == 0 for b in tight)


def _units(seed: int):
    rng = random.Random(seed)
    mems = (Memory("a"), Memory("b"), Memory("c"))
    bufs, rel = [], []
    for i in range(40):
        s = rng.randrange(30)
        kw = {"allowed": tuple(rng.sample(["a", "b", "c"], rng.randint(1, 3)))}
        bufs.append(Buffer(f"x{i}", rng.randint(1, 9), s, s + rng.randint(1, 8), **kw))
    for i in range(0, 40, 7):  # multi-piece units: a member alive elsewhere
        j = (i + 3) % 40
        if set(bufs[i].allowed) & set(bufs[j].allowed):
            rel.append(RelativePlacement(f"x{j}", f"x{i}", 0))
    return Problem(tuple(bufs), mems, tuple(rel)).units


@given(st.integers(0, 10_000))
@settings(max_examples=30, deadline=None)
def test_conflict_pairs_equal_the_quadratic_definition(seed: int) -> None:
    units = _units(seed)
    expected = {(i, j) for i, j in itertools.combinations(range(len(units)), 2)
                if set(units[i].memories) & set(units[j].memories) and pieces_meet(units[i], units[j])}
    assert {tuple(map(int, p)) for p in conflict_pairs(units)} == expected


def test_identical_groups_and_hint_order() -> None:
    p = Problem((Buffer("a", 4, 0, 3), Buffer("b", 4, 0, 3), Buffer("c", 4, 0, 4), Buffer("d", 4, 0, 3, fixed_offset=8)))
    groups = identical_groups(p.units)
    assert groups == [[0, 1]]  # c lives longer, d is fixed
    assert order_choices(p.units, [("mem", 4), ("mem", 0), ("mem", 12), ("mem", 8)], groups)[:2] == [("mem", 0), ("mem", 4)]


def test_empty_buffers_are_placed_validly() -> None:
    p = Problem((Buffer("a", 4, 0, 3), Buffer("z", 0, 0, 3, alignment=8), Buffer("w", 0, 1, 2),
                 Buffer("f", 0, 1, 2, fixed_offset=3)), (Memory("m", capacity=8),),
                (RelativePlacement("w", "a", 2),))
    red = reduce(p, Objective.default(p))
    assert set(red.empty) == {"z", "f"}
    plan = solve(p, "cpsat", time_limit=5, workers=1)
    assert plan.status == Status.OPTIMAL and validate(p, plan.placements) == []


def test_merge_proves_a_memory_optimal_from_its_hardest_section() -> None:
    """Section 1 needs 8 bytes; section 2's plan (6 of a possible 4) is not optimal, but it stays
    under 8, so the whole memory's peak 8 is proven optimal."""
    p = Problem((Buffer("a", 8, 0, 2), Buffer("b", 2, 5, 7), Buffer("c", 2, 5, 7)))
    red = reduce(p, Objective.default(p))
    assert len(red.parts) == 2
    results = []
    for part in red.parts:
        if part.units[0].root == "a":
            results.append(Result(part.placements([("mem", 0)])))
        else:
            results.append(Result(part.placements([("mem", 0), ("mem", 2)])))  # peak 6, bound 4
    merged = merge(red, results)
    plan = finish(p, merged, "test", 0.0)
    assert plan.status == Status.OPTIMAL and plan.peak == {"mem": 8}


def test_merge_reports_an_infeasible_part() -> None:
    p = Problem((Buffer("a", 8, 0, 2), Buffer("b", 2, 5, 7)))
    red = reduce(p, Objective.default(p))
    merged = merge(red, [Result(None, proven_infeasible=True, message="no"), Result(None)])
    assert merged.proven_infeasible and merged.placements is None


def test_multi_memory_min_peak_is_not_cut_in_time() -> None:
    """Cutting in time would let each section trade memories on its own; not exact, so not done."""
    p = Problem((Buffer("a", 8, 0, 2), Buffer("b", 2, 5, 7)), TWO)
    assert len(reduce(p, Objective.default(p)).parts) == 1
    assert len(reduce(p, Objective.parse("feasible")).parts) == 2


@settings(max_examples=80, deadline=None)
@given(st.one_of(st.none(), st.integers(0, 80)), st.sampled_from([1, 2, 4]),
       st.lists(st.tuples(st.integers(0, 20), st.integers(1, 6), st.sampled_from([0, 2, 4, 6, 8, 12]), st.sampled_from([1, 1, 2, 4])),
                min_size=1, max_size=25))
def test_reduce_on_columns_equals_the_unit_by_unit_reduction(capacity, align: int, rows: list) -> None:
    from optplan import parts as reduce_module
    from optplan.core.bounds import lower_bounds

    p = Problem(tuple(Buffer(f"b{i}", z, s, s + d, alignment=a) for i, (s, d, z, a) in enumerate(rows)),
                (Memory("mem", capacity=capacity, alignment=align),), metadata={"source": "t"})
    assert reduce_module.columns_only(p)
    got = reduce(p, Objective.default(p))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reduce_module, "columns_only", lambda problem: False)
        ref = reduce(p, Objective.default(p))
    assert got.empty == ref.empty and len(got.parts) == len(ref.parts)
    for a, b in zip(got.parts, ref.parts):
        assert (a.units, a.scaled, a.memories, a.capacity, a.lower, a.scale, a.component) == \
               (b.units, b.scaled, b.memories, b.capacity, b.lower, b.scale, b.component)
        assert a.sub_problem.buffers == b.sub_problem.buffers and a.sub_problem.memories == b.sub_problem.memories
        assert a.sub_problem.metadata == b.sub_problem.metadata
        assert lower_bounds(a.sub_problem).lower == lower_bounds(b.sub_problem).lower


def test_the_one_parts_loop_goes_smallest_first_shares_the_time_and_stops_at_a_proof() -> None:
    """``solve_in_turn`` (the exact planners' loop and the portfolio's): the smaller part first, on
    its share of the time by size; a part proven infeasible ends the loop and the merged answer."""
    from optplan.core.deadline import Deadline
    from optplan.parts import solve_in_turn

    p = Problem((Buffer("a", 2, 0, 2), Buffer("b", 3, 0, 2), Buffer("c", 1, 1, 2), Buffer("d", 4, 5, 6)))
    red = reduce(p, Objective.parse(None, p))
    assert sorted(len(part.units) for part in red.parts) == [1, 3]
    seen: list[tuple[int, float]] = []
    reports: list[dict] = []

    def one(i: int, share: Deadline, report) -> Result:
        seen.append((len(red.parts[i].units), round(share.seconds, 1)))
        return Result(None, proven_infeasible=True, message="refuted")

    out = solve_in_turn(red, Deadline(40.0, deterministic=True), one, reports.append)
    assert seen == [(1, 10.0)]  # the smaller part, a quarter of the units: a quarter of the time; then no more
    assert out.proven_infeasible and out.message == "refuted" and len(reports) == 1
