"""The compiled canonical search: exact against brute force and CP-SAT, proofs are proofs."""

from __future__ import annotations

import random

import numpy as np
import pytest
from brute_force import brute_force_optimum, tiny_problem
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from optplan.errors import ProblemError
from optplan.formats import read_problem
from optplan.plan import Status
from optplan.planners import solve
from optplan.problem import Buffer, Memory, Problem, RelativePlacement
from optplan.search import engine, kernel
from optplan.search.instance import build, unsupported
from optplan.search.planner import time_parts
from optplan.validate import validate


@pytest.fixture(scope="module", autouse=True)
def compiled() -> None:
    engine.ensure_compiled()  # first call may compile (cached on disk afterwards)


@st.composite
def one_memory(draw, max_buffers: int = 7) -> Problem:
    """Single-memory problems with alignment, fixed offsets, hints and one-piece relative members."""
    capacity = draw(st.one_of(st.none(), st.integers(4, 20)))
    memory = Memory("m", capacity=capacity, alignment=draw(st.sampled_from([1, 1, 2])))
    n = draw(st.integers(1, max_buffers))
    buffers, relative = [], []
    for i in range(n):
        start = draw(st.integers(0, 6))
        kw: dict = {}
        kind = draw(st.sampled_from(["plain", "plain", "plain", "align", "fixed", "hint", "inside"]))
        if kind == "align":
            kw["alignment"] = draw(st.sampled_from([2, 3, 4]))
        elif kind == "fixed":
            kw["fixed_offset"] = 2 * draw(st.integers(0, 5))
        elif kind == "hint":
            kw["hint_offset"] = draw(st.integers(0, 12))
        size = draw(st.integers(0, 7))
        end = start + draw(st.integers(1, 5))
        if kind == "inside" and i > 0:  # lives inside an earlier buffer: the unit stays one rectangle
            base = buffers[draw(st.integers(0, i - 1))]
            size = draw(st.integers(0, base.size))
            start, end = base.start, base.end
            relative.append(RelativePlacement(f"b{i}", base.id, draw(st.integers(0, base.size - size))))
        buffers.append(Buffer(f"b{i}", size, start, end, **kw))
    try:
        return Problem(tuple(buffers), (memory,), tuple(relative))
    except ProblemError:
        assume(False)
        raise


def check_against_brute_force(problem: Problem, **options) -> None:
    reference = brute_force_optimum(problem)
    plan = solve(problem, "search", time_limit=20, **options)
    if reference is None:  # declining is allowed for unsupported problems; a wrong plan is not
        allowed = (Status.INFEASIBLE, Status.UNKNOWN) if unsupported(problem) else (Status.INFEASIBLE,)
        assert plan.status in allowed, (plan.status, plan.message)
        return
    if unsupported(problem):
        assert plan.status == Status.UNKNOWN and "search:" in plan.message
        return
    assert plan.status == Status.OPTIMAL, (plan.status, plan.message)
    assert validate(problem, plan.placements) == []
    assert plan.objective_value == reference[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(one_memory())
def test_min_peak_matches_brute_force(problem: Problem) -> None:
    check_against_brute_force(problem)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_constraint_kind_matches_brute_force(data) -> None:
    """The shared generator: several memories, blocklists, relative placements. The search must
    solve what it supports exactly and say so (UNKNOWN, with a message) for the rest."""
    check_against_brute_force(tiny_problem(lambda lo, hi: data.draw(st.integers(lo, hi))))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(one_memory(max_buffers=6))
def test_feasibility_is_decided_exactly_at_the_optimum(problem: Problem) -> None:
    """At capacity optimum - 1 the search must prove infeasibility (INFEASIBLE is a proof); at
    the optimum it must find a plan. This exercises every pruning rule's completeness."""
    reference = brute_force_optimum(problem.with_capacity(10**6))
    assume(reference is not None and reference[0] > 0)
    optimum = reference[0]
    at_optimum = capped(problem, optimum)
    assume(at_optimum is not None)  # a zero-size buffer fixed above the optimum: the model rejects it
    below = capped(problem, optimum - 1)
    if below is not None:  # else a fixed buffer pokes out: the model itself rejects the capacity
        plan = solve(below, "search", time_limit=20, objective="feasible")
        assert plan.status == Status.INFEASIBLE, (optimum, plan.message)
    plan = solve(at_optimum, "search", time_limit=20, objective="feasible")
    assert plan.found and validate(at_optimum, plan.placements) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(one_memory(max_buffers=7))
def test_every_ordering_alone_decides_exactly(problem: Problem) -> None:
    """Each ordering's complete run must itself be a proof (the portfolio may stop at any one of
    them): INFEASIBLE just below the optimum, FOUND at it. Exercises the hatless cut-off, which
    depends on the candidate order."""
    assume(unsupported(problem) is None)
    reference = brute_force_optimum(problem.with_capacity(10**6))
    assume(reference is not None and reference[0] > 0)
    optimum = reference[0]
    inst = build(problem, "m", list(problem.units))
    assume(inst.n > 0)
    for o in engine.orderings(inst, seed=optimum):
        for cap, expected in ((optimum - 1, kernel.INFEASIBLE), (optimum, kernel.FOUND)):
            out = np.zeros(inst.n, np.int64)
            status, _ = kernel.search(*o.args, np.int64(inst.scaled_capacity(cap)), np.int64(10**7),
                                      np.zeros(1, np.int64), out)
            assert status == expected, (o.name, cap, optimum)
            if expected == kernel.FOUND:
                assert validate(problem.with_capacity(10**6), inst.placements(o.unpermute(out))) == []


def capped(problem: Problem, capacity: int) -> Problem | None:
    try:
        return problem.with_capacity(capacity)
    except ProblemError:
        return None


def random_tight(seed: int, n: int) -> Problem:
    """Buffers cut out of a full rectangle (a perfect packing exists) and shuffled."""
    rng = random.Random(seed)
    pieces = [(0, 12, 0, 24)]
    while len(pieces) < n:
        t0, t1, y0, y1 = pieces.pop(rng.randrange(len(pieces)))
        if t1 - t0 > 1 and (y1 - y0 < 2 or rng.random() < 0.5):
            c = rng.randint(t0 + 1, t1 - 1)
            pieces += [(t0, c, y0, y1), (c, t1, y0, y1)]
        elif y1 - y0 > 1:
            c = rng.randint(y0 + 1, y1 - 1)
            pieces += [(t0, t1, y0, c), (t0, t1, c, y1)]
        else:
            pieces.append((t0, t1, y0, y1))
            break
    rng.shuffle(pieces)
    return Problem(tuple(Buffer(f"b{i}", y1 - y0, t0, t1) for i, (t0, t1, y0, y1) in enumerate(pieces)))


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_cpsat_on_cut_rectangles(seed: int) -> None:
    """Larger than brute force can do: both exact planners must prove the same optimum (24)."""
    p = random_tight(seed, 14)
    ours = solve(p, "search", time_limit=20)
    theirs = solve(p, "cpsat", time_limit=30, workers=1)
    assert ours.status == Status.OPTIMAL and ours.peak["mem"] == 24
    if theirs.status == Status.OPTIMAL:
        assert theirs.peak == ours.peak


@pytest.mark.parametrize("seed", range(3))
def test_section_totals_are_the_highest_live_load_over_each_lifespan(seed: int) -> None:
    inst = build(random_tight(seed, 40), "mem", list(random_tight(seed, 40).units))
    load = np.zeros(inst.nsec + 1, np.int64)
    np.add.at(load, inst.s0, inst.size)
    np.add.at(load, inst.s1, -inst.size)
    load = np.cumsum(load)
    slow = [load[a:b].max() for a, b in zip(inst.s0, inst.s1)]
    assert engine.section_totals(inst).tolist() == slow


def test_time_parts_split_where_no_buffer_is_live_across() -> None:
    p = Problem((Buffer("a", 1, 0, 2), Buffer("b", 1, 1, 3), Buffer("c", 1, 3, 4), Buffer("d", 1, 4, 6),
                 Buffer("e", 1, 5, 6), Buffer("z", 0, 2, 5)))
    parts = time_parts(list(p.units))
    assert [sorted(u.root for u in part) for part in parts] == [["a", "b", "z"], ["c"], ["d", "e"]]


def test_decided_memories_are_solved_one_by_one() -> None:
    p = Problem((Buffer("a", 4, 0, 2, fixed_memory="fast"), Buffer("b", 4, 1, 3, fixed_memory="fast"),
                 Buffer("c", 8, 0, 3, allowed=("slow",)), Buffer("d", 2, 0, 1, allowed=("slow",))),
                (Memory("fast", capacity=8), Memory("slow")))
    plan = solve(p, "search", time_limit=10)
    assert plan.status == Status.OPTIMAL
    assert plan.peak == {"fast": 8, "slow": 10}


def test_undecided_memories_are_declined_not_guessed() -> None:
    p = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 1, 3)), (Memory("fast", capacity=4), Memory("slow")))
    plan = solve(p, "search", time_limit=10)
    assert plan.status == Status.UNKNOWN and "several memories" in plan.message


def test_time_limit_is_reported_not_hidden(shared) -> None:
    """minimalloc/E needs a perfect packing: 0.3 s is not enough, and the answer must say so."""
    p = read_problem(shared / "minimalloc" / "E.1048576.csv").with_capacity(1048576)
    plan = solve(p, "search", time_limit=0.3, objective="feasible")
    assert plan.status in (Status.UNKNOWN, Status.OPTIMAL)
    if plan.status == Status.UNKNOWN:
        assert "time limit" in plan.message


def test_real_instance_optimum_is_proven(shared) -> None:
    """minimalloc/C: the search packs it at its lower bound (1039360), hence proven optimal."""
    p = read_problem(shared / "minimalloc" / "C.1048576.csv").with_capacity(1048576)
    plan = solve(p, "search", time_limit=30)
    assert plan.status == Status.OPTIMAL and plan.peak["mem"] == 1039360
    assert plan.stats["nodes"] > 0 and "compile_seconds" in plan.stats


def test_example_and_workers(shared) -> None:
    p = read_problem(shared / "minimalloc" / "example.12.csv").with_capacity(12)
    for workers in (1, 2):
        plan = solve(p, "search", time_limit=10, workers=workers, objective="feasible")
        assert plan.found and plan.peak["mem"] <= 12


def test_workers_prove_infeasibility_together() -> None:
    """The load bound says 3 fits; the fixed buffers force 'a' above 3 (optimum 4)."""
    p = Problem((Buffer("a", 1, 0, 3), Buffer("b", 2, 0, 1, fixed_offset=0), Buffer("c", 2, 2, 3, fixed_offset=1)))
    plan = solve(p.with_capacity(3), "search", time_limit=20, workers=2, objective="feasible")
    assert plan.status == Status.INFEASIBLE
    plan = solve(p, "search", time_limit=20, workers=2)
    assert plan.status == Status.OPTIMAL and plan.peak["mem"] == 4


def test_large_instances_fall_back_to_the_skyline_dive(monkeypatch) -> None:
    """Past MAX_PAIRS overlapping pairs only the segment-tree dive runs; its plans must still be valid."""
    from optplan.search import instance

    monkeypatch.setattr(instance, "MAX_PAIRS", 10)
    rng = random.Random(7)
    buffers = []
    for i in range(80):
        start = rng.randint(0, 40)
        buffers.append(Buffer(f"b{i}", rng.randint(1, 64), start, start + rng.randint(1, 12), alignment=rng.choice([1, 4, 8])))
    problem = Problem(tuple(buffers), (Memory("m", alignment=2),))
    plan = solve(problem, "search", time_limit=10)
    assert plan.found and "dive only" in plan.message  # the registry validated it
    assert plan.peak["m"] >= plan.lower_bound["m"]
    assert plan.peak["m"] <= solve(problem, "naive").peak["m"]
