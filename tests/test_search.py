"""The compiled canonical search: exact against brute force and CP-SAT, proofs are proofs."""

from __future__ import annotations

import math
import random
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from brute_force import brute_force_optimum, tiny_problem
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from optplan.core.bounds import lower_bounds
from optplan.core.buffer import Buffer, Gap, Memory, RelativePlacement
from optplan.core.deadline import Deadline
from optplan.core.errors import ProblemError
from optplan.core.objective import Objective
from optplan.core.plan import Status, peaks
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.formats import read_problem
from optplan.registry import solve
from optplan.search import engine, kernel
from optplan.search.instance import Ordered, build, unsupported
from optplan.search.orderings import NO_TABLE, fresh, orderings, section_totals, table_of
from optplan.search.params import ALL_RULES, DEFAULTS, Rules, SearchParams
from optplan.search.planner import time_parts

NODES_PER_SECOND = DEFAULTS.nodes_per_second
MIN_PEAK = Objective.parse("min-peak")  # (engine.solve takes an Objective, as the planner hands it)
DIVES_ONLY = SearchParams(max_overlap_pairs=10)  # every instance with more overlapping pairs only dives


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


def complete(problem: Problem) -> bool:
    """Every footprint piece starts at its unit's lowest byte: the search is exact (kernel docstring)."""
    return all(len({p[2] for p in u.pieces}) <= 1 for u in problem.units)


def check_against_brute_force(problem: Problem, **options) -> None:
    """Exact where the search is complete; elsewhere valid plans and no false proof."""
    reference = brute_force_optimum(problem)
    plan = solve(problem, "search", time_limit=20, **options)
    if plan.found:
        assert validate(problem, plan.placements) == []
    if reference is None:  # declining is allowed for unsupported problems; a wrong plan is not
        lax = unsupported(problem) or not complete(problem)
        assert plan.status in ((Status.INFEASIBLE, Status.UNKNOWN) if lax else (Status.INFEASIBLE,)), (
            plan.status, plan.message)
        return
    if unsupported(problem):  # memory choice: routed to the auto portfolio, never UNKNOWN
        assert plan.stats.get("routed_to") == "auto" and plan.status != Status.UNKNOWN, (plan.status, plan.message)
        assert plan.objective_value >= reference[0]
        if plan.status == Status.OPTIMAL:
            assert plan.objective_value == reference[0], (plan.objective_value, reference[0])
        return
    if complete(problem):
        assert plan.status == Status.OPTIMAL, (plan.status, plan.message)
        assert plan.objective_value == reference[0]
        return
    assert plan.status != Status.INFEASIBLE, plan.message
    best = peaks(problem, reference[1])
    assert all(plan.lower_bound[m] <= best[m] for m in best), (plan.lower_bound, best)  # no raised bound
    if plan.status == Status.OPTIMAL:
        assert plan.objective_value == reference[0]
    else:
        assert "proves nothing" in plan.message, plan.message


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


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_gapped_problems_match_brute_force(data) -> None:
    """The shared generator with gaps and windows (several memories, relative placements too)."""
    check_against_brute_force(tiny_problem(lambda lo, hi: data.draw(st.integers(lo, hi)), gaps=True))


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
    check_each_ordering(problem)


def test_each_kernel_file_keys_numbas_cache_by_the_kernel_files_it_imports() -> None:
    """Numba stamps a cached kernel with its own file: a search kernel file that imports another
    one's functions or constants (compiled into its own code) keys its cache by that file too,
    transitively (``jit.key_cache``), so an edit in ``state.py`` recompiles ``search``."""
    import ast

    from optplan.core import jit

    folder = Path(kernel.__file__).parent
    kernels = {f.stem: f for f in folder.glob("*.py") if "@njit" in f.read_text()}
    imports = {name: {n.module.rsplit(".", 1)[-1] for n in ast.walk(ast.parse(f.read_text()))
                      if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("optplan.search.")}
               & set(kernels) for name, f in kernels.items()}
    assert imports["kernel"] >= {"state", "pruning", "placing"}
    for name, f in kernels.items():
        closure, todo = set(), list(imports[name])
        while todo:
            m = todo.pop()
            if m not in closure:
                closure.add(m)
                todo += imports[m]
        keyed = set(jit._CALL_GRAPHS.get(str(f.resolve()), ()))
        assert {str(kernels[m].resolve()) for m in closure} <= keyed, name


def check_each_ordering(problem: Problem, rules: Rules = ALL_RULES) -> None:
    reference = brute_force_optimum(problem.with_capacity(10**6))
    assume(reference is not None and reference[0] > 0)
    optimum = reference[0]
    problem = problem.with_capacity(10**6)  # the memory's capacity bounds offsets; ``cap`` below is the test
    inst = build(problem, "m", list(problem.units))
    assume(inst.n > 0)
    for o in orderings(inst, seed=optimum):
        # without the failed-state table, then with one table kept across both capacities (as the
        # engine keeps it): a key without the capacity would find the failures at optimum - 1
        for table in (NO_TABLE, table_of(o, 64)):
            for cap, expected in ((optimum - 1, kernel.INFEASIBLE), (optimum, kernel.FOUND)):
                out = np.zeros(inst.n, np.int64)
                status, _, _ = kernel.search(o.arrays, rules, np.int64(inst.scaled_capacity(cap)), np.int64(10**7),
                                          np.zeros(1, np.int64), out, *table)
                assert status == expected, (o.name, cap, optimum, len(table[0]))
                if expected == kernel.FOUND:
                    assert validate(problem.with_capacity(10**6), inst.placements(o.unpermute(out))) == []


@st.composite
def footprints(draw, exact: bool, max_buffers: int = 6) -> Problem:
    """One memory, units with several footprint pieces: relative members with their own
    lifetimes and gaps (full, or windows). ``exact``: every piece starts at its unit's lowest
    byte (members at delta 0, windows from byte 0), the case in which the search is complete."""
    capacity = draw(st.one_of(st.none(), st.integers(6, 20)))
    memory = Memory("m", capacity=capacity, alignment=draw(st.sampled_from([1, 1, 2])))
    buffers, relative = [], []
    for i in range(draw(st.integers(2, max_buffers))):
        size = draw(st.integers(1, 6))
        start = draw(st.integers(0, 5))
        end = start + draw(st.integers(1, 5))
        kw: dict = {}
        if draw(st.integers(0, 5)) == 0:
            kw["alignment"] = draw(st.sampled_from([2, 3]))
        elif draw(st.integers(0, 7)) == 0:
            kw["fixed_offset"] = 2 * draw(st.integers(0, 4))
        if end - start >= 3 and draw(st.booleans()):
            g0 = draw(st.integers(start + 1, end - 2))
            g1 = draw(st.integers(g0 + 1, end - 1))
            window = None
            if draw(st.booleans()):
                lo = 0 if exact else draw(st.integers(0, size - 1))
                window = (lo, draw(st.integers(lo + 1, size)))
            kw["gaps"] = (Gap(g0, g1, window),)
        if i > 0 and draw(st.integers(0, 2)) == 0:
            delta = 0 if exact else draw(st.integers(-2, 5))
            relative.append(RelativePlacement(f"b{i}", f"b{draw(st.integers(0, i - 1))}", delta))
        buffers.append(Buffer(f"b{i}", size, start, end, **kw))
    try:
        problem = Problem(tuple(buffers), (memory,), tuple(relative))
    except ProblemError:
        assume(False)
        raise
    assume(any(len(u.pieces) > 1 for u in problem.units))
    assert complete(problem) or not exact
    return problem


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(footprints(exact=True))
def test_multi_piece_units_match_brute_force(problem: Problem) -> None:
    """Gaps (windows from byte 0) and members at delta 0: the search is complete, so exact."""
    assert build(problem, "m", list(problem.units)).exact
    check_against_brute_force(problem)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(footprints(exact=True, max_buffers=5))
def test_multi_piece_orderings_alone_decide_exactly(problem: Problem) -> None:
    """Each ordering's complete run decides exactly with pieces too (every pruning rule)."""
    check_each_ordering(problem)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(footprints(exact=False))
def test_raised_pieces_give_valid_plans_and_no_false_proof(problem: Problem) -> None:
    """Windows above byte 0, members above or below the root: exact when every piece still
    starts at the unit's bottom; otherwise valid plans, no INFEASIBLE, no bound above the optimum."""
    assert build(problem, "m", list(problem.units)).exact == complete(problem)
    event("complete" if complete(problem) else "incomplete")
    check_against_brute_force(problem)


def test_a_hole_under_a_raised_piece_is_no_proof() -> None:
    """b1 sits 3 bytes above its base b0 and outlives it: the bytes under b1 after b0 dies are a
    hole the canonical search does not reuse. Brute force packs 9, the search finds 10 only; the
    live-load bound is 8. No INFEASIBLE at capacity 9, no bound above 8, no OPTIMAL, and a reason."""
    p = Problem((Buffer("b0", 1, 3, 7), Buffer("b1", 2, 1, 4), Buffer("b2", 4, 3, 4), Buffer("b3", 1, 1, 4)),
                relative=(RelativePlacement("b1", "b0", 3),))
    assert not complete(p) and brute_force_optimum(p)[0] == 9
    plan = solve(p.with_capacity(9), "search", time_limit=10, objective="feasible")
    assert plan.status == Status.UNKNOWN and "found no plan under the capacity" in plan.message, plan.message
    for workers in (1, 2):
        plan = solve(p, "search", time_limit=10, workers=workers)
        assert plan.status == Status.FEASIBLE and plan.peak["mem"] >= 9 and plan.lower_bound["mem"] == 8
        assert "proves nothing" in plan.message and validate(p, plan.placements) == []


def test_lift_rule_is_exactly_as_strong_as_the_support_below() -> None:
    """The lift rule's bound is tight here: one unit more (``L + ms + 1``) loses the only plan.

    In rank order k, v, d, c, w: k (fixed at 0) blocks c's bytes [0, 1), d (fixed at 2) blocks
    c (2 bytes) at 1, so after v (fixed at 2, time-disjoint from c) the last offset is L = 2 and
    c's lowest offset 1 is below it: c must rest on d (ms = 1), at L + ms = 3, topping out at w
    (fixed at 5): the section stacks c and w from 3 exactly to the capacity 6."""
    p = Problem((Buffer("k", 1, 1, 2, fixed_offset=0), Buffer("v", 1, 3, 4, fixed_offset=2),
                 Buffer("d", 1, 0, 2, fixed_offset=2), Buffer("c", 2, 1, 2), Buffer("w", 1, 1, 4, fixed_offset=5)))
    assert brute_force_optimum(p)[0] == 6
    inst = build(p, "mem", list(p.units))
    assert [u.root for u in inst.units] == ["k", "v", "d", "c", "w"]
    o = Ordered(inst, "given", np.arange(inst.n, dtype=np.int64))
    for cap, expected in ((5, kernel.INFEASIBLE), (6, kernel.FOUND)):
        out = np.zeros(inst.n, np.int64)
        status, _, _ = kernel.search(o.arrays, ALL_RULES, np.int64(cap), np.int64(10**5), np.zeros(1, np.int64), out, *NO_TABLE)
        assert status == expected, cap
    assert validate(p, inst.placements(o.unpermute(out))) == [] and out.tolist() == [0, 2, 2, 3, 5]


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
    assert section_totals(inst).tolist() == slow


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(one_memory(), st.integers(0, 24))
def test_a_goal_stops_minimization_there_and_proves_only_truths(problem: Problem, goal: int) -> None:
    """A time part of a memory need not go below the memory's proven bound (``goal``): at or
    under the goal any plan will do (a dive that gets there ends it); above it the optimum is
    still found and proven. The bound reported for the part never exceeds its true optimum."""
    assume(complete(problem))
    reference = brute_force_optimum(problem)
    capacity = problem.memory("m").capacity
    assume(reference is not None or capacity is not None)  # else the planner's bounds prove it (fixed overlap)
    inst = build(problem, "m", list(problem.units))
    ans = engine.solve(inst, capacity, lower_bounds(problem).lower["m"], MIN_PEAK, Deadline(10.0), goal=goal)
    if reference is None:
        assert ans.offsets is None and ans.infeasible
        return
    optimum = peaks(problem, reference[1])["m"]
    assert ans.offsets is not None and not ans.timed_out
    assert validate(problem, inst.placements(ans.offsets)) == []
    assert ans.bound <= optimum
    if optimum <= goal:
        assert ans.peak <= goal
        if ans.dive_peak is not None and ans.dive_peak <= goal:  # the first dives did it: no search
            assert ans.stats.runs <= len(orderings(inst))
    else:
        assert ans.peak == optimum == ans.bound
    # the planner takes the goal per memory (what auto passes for a part of a larger problem)
    plan = solve(problem, "search", time_limit=10, goal={"m": goal})
    assert plan.found and plan.lower_bound["m"] <= optimum
    assert plan.peak["m"] <= goal if optimum <= goal else plan.peak["m"] == optimum and plan.status == Status.OPTIMAL
    assert "time limit" not in plan.message
    dive = plan.stats["dive_peak"]["m"]
    if dive is not None and dive <= goal:  # the dives met the goal: no search after them (a dive per ordering and time part)
        parts = time_parts(list(problem.units))
        assert plan.stats["runs"] <= sum(len(orderings(build(problem, "m", part))) for part in parts)


def test_time_parts_split_where_no_buffer_is_live_across() -> None:
    p = Problem((Buffer("a", 1, 0, 2), Buffer("b", 1, 1, 3), Buffer("c", 1, 3, 4), Buffer("d", 1, 4, 6),
                 Buffer("e", 1, 5, 6), Buffer("z", 0, 2, 5)))
    parts = time_parts(list(p.units))
    assert [sorted(u.root for u in part) for part in parts] == [["a", "b", "z"], ["c"], ["d", "e"]]


def _time_parts_by_definition(units: list) -> list[list[str]]:
    """The search's time parts from their definition: units linked by a chain of units whose spans
    share a time step form one part (every pair looked at); parts in time order, each listing its
    units by start (ties: the given order); zero-size units join the first part."""
    sized = [u for u in units if u.pieces]
    parent = list(range(len(sized)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, u in enumerate(sized):
        for j in range(i):
            if u.start < sized[j].end and sized[j].start < u.end:
                parent[root(i)] = root(j)
    groups: dict[int, list] = {}
    for i in sorted(range(len(sized)), key=lambda i: sized[i].start):
        groups.setdefault(root(i), []).append(sized[i])
    parts = [[u.root for u in g] for g in sorted(groups.values(), key=lambda g: g[0].start)]
    rest = [u.root for u in units if not u.pieces]
    return [parts[0] + rest, *parts[1:]] if parts else ([rest] if rest else [])


@st.composite
def _intervals(draw) -> Problem:
    n = draw(st.integers(0, 30))
    return Problem(tuple(Buffer(f"b{i}", draw(st.integers(0, 3)), t, t + draw(st.integers(1, 6)))
                         for i, t in enumerate(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)))))


@settings(max_examples=300, deadline=None)
@given(st.one_of(_intervals(), one_memory(max_buffers=10)))
def test_time_parts_are_the_groups_that_share_no_time_step(problem: Problem) -> None:
    """``time_parts`` (now ``parts.time_sections`` on the units sorted by start) gives the groups of
    their definition, in the order the search took them from its own split before (same instances,
    same orderings: the plans do not change)."""
    units = list(problem.units)
    assert [[u.root for u in part] for part in time_parts(units)] == _time_parts_by_definition(units)


def test_time_parts_of_minimalloc_a_to_e_are_the_groups_of_their_definition(shared) -> None:
    for name in "ABCDE":
        units = list(read_problem(shared / "minimalloc" / f"{name}.1048576.csv").units)
        assert [[u.root for u in part] for part in time_parts(units)] == _time_parts_by_definition(units), name


@pytest.mark.parametrize("objective", ["feasible", "min-peak"])
def test_easy_time_parts_are_packed_by_one_descent_of_the_whole(objective: str) -> None:
    """Ten independent parts that a lowest-offset descent packs at the bound: one kernel run for
    the whole memory, not one or more per part (each part costs Python: arrays, orderings)."""
    buffers = [Buffer(f"p{k}-{j}", s, 10 * k + t0, 10 * k + t1)
               for k in range(10) for j, (s, t0, t1) in enumerate([(4, 0, 4), (4, 4, 8), (8, 0, 8)])]
    p = Problem(tuple(buffers), (Memory("m", capacity=12),))
    assert len(time_parts(list(p.units))) == 10
    plan = solve(p, "search", time_limit=10, objective=objective)
    assert plan.found and plan.peak["m"] == 12 and validate(p, plan.placements) == []
    assert plan.stats["runs"] == 1
    assert plan.status == Status.OPTIMAL  # at the load bound


def test_a_decision_at_a_capacity_does_not_dive_first() -> None:
    """At a capacity the search's first descent is the dive (offsets are bounded by the capacity
    either way): a dive first would only repeat it, and cost a kernel run where the descent
    must backtrack (as here: 6 nodes for 5 buffers)."""
    p = Problem((Buffer("a", 1, 2, 3), Buffer("b", 4, 0, 2), Buffer("c", 1, 1, 3), Buffer("d", 3, 2, 5), Buffer("e", 3, 4, 8)),
                (Memory("m", capacity=6),))
    plan = solve(p, "search", time_limit=10, objective="feasible")
    assert plan.found and plan.peak["m"] <= 6 and validate(p, plan.placements) == []
    assert plan.stats["runs"] == 1 and plan.stats["nodes"] == 6


def test_decided_memories_are_solved_one_by_one() -> None:
    p = Problem((Buffer("a", 4, 0, 2, fixed_memory="fast"), Buffer("b", 4, 1, 3, fixed_memory="fast"),
                 Buffer("c", 8, 0, 3, allowed=("slow",)), Buffer("d", 2, 0, 1, allowed=("slow",))),
                (Memory("fast", capacity=8), Memory("slow")))
    plan = solve(p, "search", time_limit=10)
    assert plan.status == Status.OPTIMAL
    assert plan.peak == {"fast": 8, "slow": 10}


def test_undecided_memories_are_routed_not_declined() -> None:
    """A memory choice is no branching decision of the search: the auto portfolio solves it."""
    p = Problem((Buffer("a", 4, 0, 2), Buffer("b", 2, 1, 3)), (Memory("fast", capacity=4), Memory("slow")))
    plan = solve(p, "search", time_limit=10)
    assert plan.status == Status.OPTIMAL and plan.stats["routed_to"] == "auto" and "several memories" in plan.message
    assert {b: p.memory for b, p in plan.placements.items()} == {"a": "fast", "b": "slow"}  # fast-first: 4 > 2


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


def test_deterministic_runs_repeat_whatever_the_wall_clock_says(shared, monkeypatch) -> None:
    """minimalloc/D min-peak is cut off by its time limit (its optimum is not proven). In
    deterministic mode that limit is a node count: a run on a clock that races ahead (every reading
    10 s later than the last, as on a machine slowed to a crawl) gives the very same plan, bound
    and node count as a normal run, and spends no more than its nodes. (Its wall-clock guard,
    which that clock passes at once, is off: ``guard=inf``.)"""
    from optplan.core import deadline as clock_module

    p = read_problem(shared / "minimalloc" / "D.1048576.csv")
    first = solve(p, "search", workers=2, deadline=Deadline(0.5, deterministic=True, guard=math.inf))

    class Racing:
        now = 0.0

        @classmethod
        def perf_counter(cls) -> float:
            cls.now += 10.0
            return cls.now

    monkeypatch.setattr(clock_module, "time", Racing)
    second = solve(p, "search", workers=2, deadline=Deadline(0.5, deterministic=True, guard=math.inf))
    assert first.status == second.status == Status.FEASIBLE  # cut off, and says so
    assert first.placements == second.placements and first.lower_bound == second.lower_bound
    assert first.stats["nodes"] == second.stats["nodes"]
    dives = 10 * len(p.buffers)  # the dives run before the budget is cut (one pass per ordering)
    assert first.stats["nodes"] <= 0.5 * NODES_PER_SECOND + dives
    assert first.stats["deterministic_seconds"] == pytest.approx(first.stats["nodes"] / NODES_PER_SECOND, abs=1e-3)
    wall = solve(p, "search", time_limit=0.5, workers=1)  # the same racing clock: no time at all
    assert wall.stats["nodes"] <= dives


def test_a_deterministic_search_stops_at_its_wall_guard_and_says_so(shared) -> None:
    """Issue 19 §2: a deterministic run's node budget (here 60 deterministic seconds, 3M nodes, on
    minimalloc/D, whose optimum the search does not prove) is stopped at its wall-clock guard (0.5 s
    from the call): the kernel run under way too, not only the next one, and the plan says that it
    may not repeat."""
    from optplan.registry import GUARDED

    p = read_problem(shared / "minimalloc" / "D.1048576.csv")
    plan = solve(p, "search", deadline=Deadline(60.0, deterministic=True).part(None, wall=0.5), workers=1)
    assert plan.stats["deterministic_wall_capped"] == 1 and GUARDED in plan.message
    assert plan.stats["nodes"] < 20 * NODES_PER_SECOND  # 1M: far from the budget's 3M, out of reach in 0.5 s
    assert plan.placements is None or validate(p, plan.placements) == []


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


def test_large_instances_fall_back_to_the_skyline_dive() -> None:
    """Past ``max_overlap_pairs`` overlapping pairs only the segment-tree dive runs; its plans must still be valid."""
    rng = random.Random(7)
    buffers = []
    for i in range(80):
        start = rng.randint(0, 40)
        buffers.append(Buffer(f"b{i}", rng.randint(1, 64), start, start + rng.randint(1, 12), alignment=rng.choice([1, 4, 8])))
    problem = Problem(tuple(buffers), (Memory("m", alignment=2),))
    plan = solve(problem, "search", time_limit=10, params=DIVES_ONLY)
    assert plan.found and "dive only" in plan.message  # the registry validated it
    assert plan.stats["search_params"] == {"max_overlap_pairs": 10}
    assert plan.peak["m"] >= plan.lower_bound["m"]
    assert plan.peak["m"] <= solve(problem, "naive").peak["m"]


def _dives_problem(n: int = 400) -> Problem:
    """A single-memory problem that takes the search's large-instance path under ``DIVES_ONLY``."""
    rng = random.Random(3)
    buffers = []
    for i in range(n):
        start = rng.randint(0, n // 4)
        buffers.append(Buffer(f"b{i}", rng.randint(1, 64), start, start + rng.randint(1, 30)))
    return Problem(tuple(buffers))


def test_a_dive_running_at_the_deadline_is_stopped(monkeypatch) -> None:
    """The lowest-offset dive cannot be interrupted (a numba kernel; 5 s on idealloc/S_1 under
    load): under a wall-clock limit it runs in a forked process, killed at the deadline. A dive
    that would take a minute ends the planner on time, with no plan and saying why."""
    import time

    problem = _dives_problem()

    def stuck(*args) -> None:
        time.sleep(60)

    monkeypatch.setattr(engine.kernels, "skyline_dive", stuck)
    t0 = time.perf_counter()
    plan = solve(problem, "search", time_limit=1.0, params=DIVES_ONLY)
    assert time.perf_counter() - t0 < 1.0 + 2.0  # slack for a loaded CI machine; the bench measures
    assert not plan.found and "time limit reached during dive 1 of 4" in plan.message


def test_dives_that_would_end_late_are_not_started() -> None:
    """Deterministic: each dive costs ``dive_seconds_per_unit`` per unit; a budget of 1.5 dives runs one
    (the same on every run), and the plan says how many were not."""
    rng = random.Random(3)
    buffers = []
    for i in range(400):
        start = rng.randint(0, 100)
        buffers.append(Buffer(f"b{i}", rng.randint(1, 64), start, start + rng.randint(1, 30)))
    problem = Problem(tuple(buffers))
    inst = build(problem, "mem", list(problem.units))
    one = inst.n * DEFAULTS.dive_seconds_per_unit
    ans = engine._large(inst, None, 0, Deadline(1.5 * one, deterministic=True))
    assert ans.stats.runs == 1 and ans.offsets is not None and "3 of 4 dives not run" in ans.note
    assert engine._large(inst, None, 0, Deadline(None)).stats.runs == 4


def random_overlapping(seed: int, n: int) -> Problem:
    """Buffers with random sizes and lifetimes, some aligned: the search branches and meets the
    same states again along different paths (what the failed-state table is for)."""
    rng = random.Random(seed)
    buffers = []
    for i in range(n):
        start = rng.randint(0, 9)
        buffers.append(Buffer(f"b{i}", rng.randint(1, 9), start, start + rng.randint(1, 6),
                              alignment=rng.choice([1, 1, 1, 2, 3])))
    return Problem(tuple(buffers))


def run_with_restarts(o, cap: int, table, first: int) -> tuple[int, int, np.ndarray]:
    """The engine's restart pattern on one ordering: node limits doubling from ``first``, one
    table kept throughout (None: the engine's, growing with the limit). Returns (status, nodes
    of the last run, offsets)."""
    limit = first
    while True:
        out = np.zeros(len(o.perm), np.int64)
        tab = table_of(o, 1 << 12, limit) if table is None else table
        status, nodes, _ = kernel.search(o.arrays, ALL_RULES, np.int64(cap), np.int64(limit), np.zeros(1, np.int64), out, *tab)
        if status != kernel.LIMIT:
            return status, nodes, out
        limit *= 2


def test_failed_state_table_changes_node_counts_not_answers() -> None:
    """With the table every ordering must give the table-free search's answer at every capacity
    from the load bound to the first that fits (the same first plan, in no more nodes), also when
    the table is kept across restarts cut off by small node budgets and across capacities, and it
    must actually cut subtrees. A key missing L, the floors, the members or the capacity, or a
    store on a budget cut-off, makes this fail (checked by mutating the kernel)."""
    hits = 0
    for seed in (s for s in range(24) if s != 18):  # seed 18 alone took 50 of its 62 s (a slow machine's CI)
        p = random_overlapping(seed, 13 + seed % 4)
        inst = build(p, "mem", list(p.units))
        low = int(section_totals(inst).max())
        for o in orderings(inst, seed=seed):
            kept = table_of(o, 1 << 12)
            growing = Ordered(inst, o.name, o.perm)  # its table grows from 1024 slots as limits double
            for cap in range(low, low + 40):
                out = np.zeros(inst.n, np.int64)
                status, nodes, _ = kernel.search(o.arrays, ALL_RULES, np.int64(cap), np.int64(10**7), np.zeros(1, np.int64), out,
                                              *NO_TABLE)
                assert status != kernel.LIMIT
                fresh = table_of(Ordered(inst, o.name, o.perm), 1 << 12)
                for table, first in ((fresh, 10**7), (kept, 10**7), (None, 1)):
                    got, got_nodes, got_out = run_with_restarts(growing if table is None else o, cap, table, first)
                    assert got == status, (seed, o.name, cap, status, got, first)
                    if first > 1:
                        assert got_nodes <= nodes
                    if status == kernel.FOUND:
                        assert got_out.tolist() == out.tolist()
                hits += fresh[0][0]
                if status == kernel.FOUND:
                    assert validate(p, inst.placements(o.unpermute(out))) == []
                    break
            hits += kept[0][0] + growing.table[0]
    assert hits > 1000


@pytest.mark.parametrize("seed", range(4))
def test_neighbours_are_listed_lowest_first_for_the_lift_rule(seed: int) -> None:
    """The kernel takes a unit's first unplaced neighbour as the smallest piece that can lift it;
    a list out of height order would lift units too far and cut off plans."""
    p = random_tight(seed, 30)
    inst = build(p, "mem", list(p.units))
    o = Ordered(inst, "random", np.random.default_rng(seed).permutation(inst.n).astype(np.int64))
    size, ptr, idx = o.arrays.size, o.arrays.nb_ptr, o.arrays.nb_idx
    for r in range(inst.n):
        heights = size[idx[ptr[r]:ptr[r + 1]]]
        assert (np.diff(heights) >= 0).all(), r


@pytest.mark.parametrize("rule", Rules._fields)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problem=one_memory(max_buffers=7))
def test_each_pruning_rule_switched_off_keeps_the_optimum(rule: str, problem: Problem) -> None:
    """Every ordering, with and without the table, with one pruning rule off: still INFEASIBLE
    just below the brute-force optimum and FOUND at it."""
    assume(unsupported(problem) is None)
    check_each_ordering(problem, ALL_RULES._replace(**{rule: False}))


def generated(family: str, seed: int, n: int, cells: int) -> Problem:
    """A cut rectangle from experiments/gen_instances.py: its optimum is ``cells`` KiB."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    from gen_instances import cut_instance

    return cut_instance(family, seed, n=n, cells=cells)


@pytest.mark.parametrize("rule", [r for r in Rules._fields if r != "hatless"])
def test_each_pruning_rule_switch_changes_the_search(rule: str, shared) -> None:
    """A switch that did nothing would make the test above vacuous: switched off, each rule changes
    the node counts of complete runs (a proof just below the optimum, a plan at it) on small generated instances that
    need backtracking, with every other rule on or (the section check subsumes most of what
    dominance cuts) with the section check off too. The lift rule shows only on a larger instance
    (minimalloc/A, first ordering: 29,277 nodes to a plan, 29,351 without it). Hatless is left out:
    no node count changed without it on 300 random instances (every ordering), on these, or on
    minimalloc/C and D, even with lift and dominance off; it looks subsumed (a unit left below L
    with no unplaced neighbour gets a threshold no capacity passes)."""
    base = ALL_RULES._replace(sections=False) if rule == "dominance" else ALL_RULES
    rng = random.Random(5)
    for seed in range(25):
        if seed == 24:
            problem = read_problem(shared / "minimalloc" / "A.1048576.csv").with_capacity(None)
        elif seed % 2:
            problem = generated(("guillotine", "pinwheel")[seed % 4 // 2], seed, 40, 64)
        else:  # random lifetimes and sizes, with twins: the optimum lies above the load
            buffers = []
            for i in range(rng.randint(8, 14)):
                start = rng.randint(0, 8)
                buffers.append(Buffer(f"b{i}", rng.randint(1, 6), start, start + rng.randint(1, 5)))
                if rng.random() < 0.3:
                    buffers.append(Buffer(f"t{i}", buffers[-1].size, start, buffers[-1].end))
            problem = Problem(tuple(buffers), (Memory("mem"),))
        # known by construction (the cuts), by minimalloc/A's name (its load bound), else solved:
        # solving A under a limit took 10 s alone and missed its optimum beside other tests
        known = {24: 1 << 20}.get(seed, 64 << 10 if seed % 2 else None)
        optimum = known if known is not None else solve(problem, "search", time_limit=20).peak["mem"]
        inst = build(problem, "mem", list(problem.units))
        for o in orderings(inst)[: 1 if seed == 24 else 4]:
            counts = []
            for rules in (base, base._replace(**{rule: False})):
                for cap, expected in ((optimum - 1, kernel.INFEASIBLE), (optimum, kernel.FOUND)):
                    status, nodes, _ = kernel.search(o.arrays, rules, np.int64(inst.scaled_capacity(cap)),
                                                  np.int64(10**5), np.zeros(1, np.int64), np.zeros(inst.n, np.int64),
                                                  *NO_TABLE)
                    assert status in (expected, kernel.LIMIT)
                    counts.append(nodes if status == expected else -1)  # -1: cut off, not compared
            if any(x != y and min(x, y) >= 0 for x, y in zip(counts[:2], counts[2:])):
                return
    pytest.fail(f"switching {rule!r} off changed no node count")


def test_feasibility_with_room_to_spare_decides_the_bound_first() -> None:
    """At a capacity 5 % above the known optimum, a plan at the proven bound is a plan under the
    capacity, and the tight decision is the quicker one (generated, 1 MiB + 3 %: 10 of 12 packed in
    under 0.1 s, 5 of 12 in 20 s at the capacity alone): the search's plans sit at the optimum, proven.
    Without the probe (``floor_probe_seconds=0``) they sit above it."""
    without = []
    for family in ("guillotine", "pinwheel"):
        for seed in range(4):
            problem = generated(family, seed, 60, 64).with_capacity(round(64 * 1024 * 1.05))
            plan = solve(problem, "search", objective="feasible", time_limit=10, deterministic=True)
            assert plan.status.value == "OPTIMAL" and plan.peak["mem"] == 64 * 1024, (family, seed)
            plain = solve(problem, "search", objective="feasible", time_limit=10, deterministic=True,
                          params=SearchParams(floor_probe_seconds=0.0))
            without.append(plain.peak["mem"])
    assert max(without) > 64 * 1024


@pytest.mark.parametrize("family", ["guillotine", "pinwheel"])
def test_small_generated_instances_are_packed_at_their_known_optimum(family: str) -> None:
    """Cut rectangles (experiments/gen_instances.py) tile the capacity x makespan rectangle: the
    optimum is the capacity, and the search proves it."""
    for seed in range(4):
        problem = generated(family, seed, 24, 48)
        assert lower_bounds(problem).lower["mem"] == 48 * 1024
        plan = solve(problem.with_capacity(None), "search", time_limit=20)
        assert plan.status == Status.OPTIMAL and plan.peak["mem"] == 48 * 1024, (seed, plan.status, plan.message)
        assert validate(problem, plan.placements) == []


def test_the_capacity_decision_goes_on_after_the_bound_is_refuted(monkeypatch) -> None:
    """Feasibility above the load bound decides the bound and the capacity in turns; when the bound
    is refuted, the capacity's own decision continues where its turns stopped (the same schedule),
    instead of searching their nodes again. Scripted outcomes: bound open, capacity open, bound
    refuted, then a plan at the capacity."""
    problem = generated("guillotine", 1, 12, 16)
    inst = build(problem, "mem", list(problem.units), DEFAULTS.max_overlap_pairs)
    cap, floor = 20, 16  # scaled (1 KiB)
    script = [(floor, kernel.LIMIT), (cap, kernel.LIMIT), (floor, kernel.INFEASIBLE), (cap, kernel.FOUND)]
    schedules: list[tuple[int, object]] = []

    def scripted(ords, n, target, clock, workers, exact, schedule, params):
        want, status = script.pop(0)
        assert target == want
        schedules.append((target, schedule))
        return engine.Decision(status, np.zeros(n, np.int64) if status == kernel.FOUND else None, engine.Stats())

    monkeypatch.setattr(engine, "decide_parallel", scripted)
    ans = engine.solve(inst, cap * inst.scale, floor * inst.scale, Objective.parse("feasible", problem),
                       Deadline(10.0), params=DEFAULTS)
    assert ans.offsets is not None and not script
    at_cap = [sch for target, sch in schedules if target == cap]
    assert at_cap[0] is not None and at_cap[1] is at_cap[0]


def test_generated_files_hide_the_construction_order(tmp_path: Path) -> None:
    """The generator's command line and the benchmarks' files (``e2e.write_csv``) write a cut's rows
    in one order drawn from its name, not in construction order (a perfect packing's first-fit order
    on a guillotine cut, which a peer trying the input's order packs at once): the same buffers,
    the same text on every run and from both writers."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    import e2e
    from gen_instances import instance, main

    from optplan.formats import read_problem

    problem = instance("guillotine", 3)
    out = tmp_path / "cli.csv"
    assert main(["guillotine", "3", "-o", str(out)]) == 0
    text = out.read_text()
    assert main(["guillotine", "3", "-o", str(out)]) == 0 and out.read_text() == text
    assert e2e.write_csv(problem, tmp_path / "guillotine-3.csv").read_text() == text
    read = read_problem(out)
    assert sorted((b.id, b.start, b.end, b.size) for b in read.buffers) == sorted(
        (b.id, b.start, b.end, b.size) for b in problem.buffers)
    assert [b.id for b in read.buffers] != [b.id for b in problem.buffers]
    assert main(["guillotine", "3", "--construction-order", "-o", str(out)]) == 0
    assert [b.id for b in read_problem(out).buffers] == [b.id for b in problem.buffers]


def test_every_ordering_runs_without_the_forced_rule_too(shared: Path) -> None:  # (perturbs ../shared's A-E)
    """A perturbed A-E instance (experiments/gen_instances.py) that MiniMalloc packs at once: every
    ordering with the forced-section rule ran 250k+ nodes without a plan, where the orderings without
    it pack it (here, one process and a node budget: the same run on every machine)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    from gen_instances import instance

    problem = instance("perturbed", 1)
    plan = solve(problem, "search", time_limit=150_000 / NODES_PER_SECOND, deterministic=True, objective="feasible")
    assert plan.found and plan.stats["nodes"] <= 150_000, (plan.status, plan.message)
    assert any(name.endswith("-unforced") for name in plan.stats["winning_orderings"])
    assert validate(problem, plan.placements) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(one_memory(max_buffers=7), st.integers(0, 3))
def test_restart_orderings_keep_decisions_exact(problem: Problem, seed: int) -> None:
    """Rounds that start at one node run out in every ordering, so the decision goes on in the
    restart orderings (``engine.fresh``): their plans must be valid and their proofs true."""
    try:
        problem = problem.with_capacity(problem.memory("m").capacity or 12)
    except ProblemError:  # a fixed buffer above the capacity
        assume(False)
    assume(complete(problem) and unsupported(problem) is None)
    reference = brute_force_optimum(problem)
    inst = build(problem, "m", list(problem.units))
    assume(inst.n > 1)
    sched = engine.Schedule(limit=1)
    out = engine.decide(orderings(inst, seed), inst.n, inst.scaled_capacity(problem.memory("m").capacity),
                        Deadline(10.0, deterministic=True), np.zeros(1, np.int64), schedule=sched)
    assert out.status == (kernel.INFEASIBLE if reference is None else kernel.FOUND)
    assert sched.fresh > 0 or sched.limit == 1  # restarts ran unless the first round decided it
    if out.offsets is not None:
        assert validate(problem, inst.placements(out.offsets)) == []


def test_two_workers_race_the_first_orderings_in_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """With two workers the first ordering and its unforced twin run side by side from the first
    round: the twin's plan stops the first ordering's run (here one that would otherwise run on for
    the whole deadline), where a first round in one thread would wait for it."""
    problem = Problem(tuple(Buffer(f"b{i}", 1 + i % 3, i, i + 3) for i in range(12)), (Memory("m"),))
    inst = build(problem, "m", list(problem.units))
    engine.ensure_compiled()  # not inside the race: loading the kernel takes seconds at load
    search = kernel.search
    stopped = []

    def stuck_when_forced(a, rules, cap, limit, stop, *args):  # type: ignore[no-untyped-def]
        if not rules.forced:
            return search(a, rules, cap, limit, stop, *args)
        end = time.monotonic() + 30.0
        while not stop[0] and time.monotonic() < end:
            time.sleep(0.001)
        stopped.append(bool(stop[0]))
        return kernel.LIMIT, 1, 0

    monkeypatch.setattr(engine.kernels, "search", stuck_when_forced)
    out = engine.decide_parallel(orderings(inst), inst.n, 1 << 40, Deadline(20.0), workers=2,
                                 params=SearchParams(race_min_units=2))
    assert out.status == kernel.FOUND and stopped == [True]
    assert validate(problem, inst.placements(out.offsets)) == []


def test_a_worker_threads_error_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = Problem(tuple(Buffer(f"b{i}", 1 + i % 3, i, i + 3) for i in range(12)), (Memory("m"),))
    inst = build(problem, "m", list(problem.units))
    threads = []

    def broken(*args):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread().name)
        raise MemoryError("worker")

    monkeypatch.setattr(engine.kernels, "search", broken)
    with pytest.raises(MemoryError, match="worker"):
        engine.decide_parallel(orderings(inst), inst.n, 1 << 40, Deadline(20.0), workers=2,
                               params=SearchParams(race_min_units=2))
    assert threads


def test_a_spent_share_still_runs_once_while_the_limit_lasts() -> None:
    """A time part's share can be spent before its decision starts (milliseconds for a one-unit part,
    at load): its first run still happens while the whole limit has time, and not once it is over."""
    problem = Problem(tuple(Buffer(f"b{i}", 1 + i % 3, i, i + 3) for i in range(12)), (Memory("m"),))
    inst = build(problem, "m", list(problem.units))
    spent = Deadline(30.0).part(0.0)
    assert spent.left() == 0
    out = engine.decide(orderings(inst), inst.n, 1 << 40, spent, np.zeros(1, np.int64))
    assert out.status == kernel.FOUND and out.stats.runs == 1
    over = Deadline(0.0)
    assert engine.decide(orderings(inst), inst.n, 1 << 40, over, np.zeros(1, np.int64)).status == kernel.LIMIT
    cancelled = Deadline(30.0)
    cancelled.cancel()
    assert engine.decide(orderings(inst), inst.n, 1 << 40, cancelled.part(1.0), np.zeros(1, np.int64)).status == kernel.LIMIT


def test_a_decision_stops_at_its_wall_clock_end_whatever_its_node_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's node budget comes from the rate measured so far; a run slower per node than that must
    still end at the deadline (a timer sets the stop flag): here every budget is 2M nodes (40 s and
    more on this machine kind) on a decision nothing settles in seconds, under a 1 s clock."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    from gen_instances import instance

    problem = instance("guillotine", 45)  # unpacked in 60 s at 1 MiB (robust_cut.md)
    inst = build(problem, "mem", list(problem.units))
    ords = orderings(inst)
    engine.ensure_compiled()
    monkeypatch.setattr(engine, "node_budget", lambda clock, limit, rate, nodes_per_second: 2_000_000)
    t0 = time.perf_counter()
    out = engine.decide(ords, inst.n, inst.scaled_capacity(1 << 20), Deadline(1.0), np.zeros(1, np.int64))
    assert out.status == kernel.LIMIT and time.perf_counter() - t0 < 10


def test_restart_orderings_are_seeded_and_differ() -> None:
    rng = random.Random(5)
    buffers = []
    for i in range(40):
        start = rng.randint(0, 30)
        buffers.append(Buffer(f"b{i}", rng.randint(1, 9), start, start + rng.randint(1, 12)))
    problem = Problem(tuple(buffers), (Memory("m"),))
    inst = build(problem, "m", list(problem.units))
    perms = [fresh(inst, 0, k).perm for k in range(4)]
    for perm in perms:
        assert sorted(perm.tolist()) == list(range(inst.n))
    assert np.array_equal(perms[0], fresh(inst, 0, 0).perm)  # the same run repeats
    assert len({perm.tobytes() for perm in perms}) == 4
    assert not np.array_equal(perms[0], fresh(inst, 1, 0).perm)


def test_every_other_restart_runs_without_the_forced_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forced-section rule changes which branch comes first; odd restarts drop it to diversify,
    and every fixed ordering runs both ways."""
    problem = Problem(tuple(Buffer(f"b{i}", 1 + i % 3, i, i + 3) for i in range(12)), (Memory("m"),))
    inst = build(problem, "m", list(problem.units))
    assert [fresh(inst, 0, k).forced for k in range(4)] == [True, False, True, False]
    ords = orderings(inst)  # each fixed ordering, then its twin without the rule (the same arrays)
    assert [o.forced for o in ords] == [True, False] * (len(ords) // 2)
    assert all(np.array_equal(a.perm, b.perm) and a.arrays is b.arrays for a, b in zip(ords[::2], ords[1::2]))
    assert len({o.perm.tobytes() for o in ords}) == len(ords) // 2
    seen = []
    search = kernel.search

    def spy(a, rules, *args):  # type: ignore[no-untyped-def]
        seen.append(rules.forced)
        return search(a, rules, *args)

    monkeypatch.setattr(engine.kernels, "search", spy)
    for k in range(2):
        status, _ = engine._run(fresh(inst, 0, k), inst.n, 1 << 40, Deadline(None), np.zeros(1, np.int64), 1000,
                                engine.Stats(), DEFAULTS)
        assert status == kernel.FOUND
    assert seen == [True, False]


def flat_profile(seed: int, cells: tuple[int, int], steps: int, largest: int) -> Problem:
    """bench_minimize.py's tight family in units of one byte: every step holds the same live load, so
    a plan at the load bound is a perfect packing at every step, which contiguity often forbids."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    from bench_minimize import tight_instance

    return tight_instance(seed, cells, steps, largest, unit=1)


def test_a_decision_cut_short_resumes_where_it_stopped() -> None:
    """The minimization gives a decision slices of time, doubling, and tries it again later with the
    same ``Schedule``: it must go on from the ordering it stopped in, not from the round's first one.
    Resumed so, this decision costs what it costs in one go (26k nodes); from the round's first
    ordering in each slice it took 427k. (13 generated decisions of 5-93k nodes: resumed 0.97x one
    run in all, from the start of the round each time 3x.)"""
    problem = flat_profile(10, (24, 48), 14, 12)
    inst = build(problem, "mem", list(problem.units))
    cap = lower_bounds(problem).lower["mem"] // inst.scale
    guard = Deadline(600.0, deterministic=True)  # parts of it: node budgets, with a wall-clock guard far off
    whole = engine.decide(orderings(inst), inst.n, cap, guard.part(20.0), np.zeros(1, np.int64))
    assert whole.status == kernel.FOUND and whole.stats.runs > 10
    ords, sched, nodes, slices = orderings(inst), engine.Schedule(DEFAULTS.first_limit), 0, 0
    while slices < 40:
        slices += 1
        out = engine.decide(ords, inst.n, cap, guard.part((1000 << (slices // 2)) / NODES_PER_SECOND), np.zeros(1, np.int64),
                            schedule=sched)
        nodes += out.stats.nodes
        if out.status != kernel.LIMIT:
            break
    assert out.status == kernel.FOUND and out.offsets is not None
    assert validate(problem, inst.placements(out.offsets)) == []
    assert nodes <= 1.2 * whole.stats.nodes, (nodes, whole.stats.nodes)


def _stall_decisions(monkeypatch: pytest.MonkeyPatch, only_at: int | None = None,
                     seen: list[tuple[int, float]] | None = None) -> None:
    """The search's decisions never end (all of them, or those at capacity ``only_at``): each spends
    its slice and returns LIMIT. ``seen`` records every decision's (capacity, slice seconds)."""
    real = engine.decide_parallel

    def stalled(ords, n, cap, clock, *args, **kwargs):  # type: ignore[no-untyped-def]
        if seen is not None:
            seen.append((cap, clock.left()))
        if only_at is None or cap == only_at:
            clock.spend(clock.left())
            return engine.Decision(kernel.LIMIT, None, engine.Stats())
        return real(ords, n, cap, clock, *args, **kwargs)

    monkeypatch.setattr(engine, "decide_parallel", stalled)


def test_an_undecided_floor_does_not_keep_the_plan_from_coming_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the step down from the best plan reaches the floor, a floor that is never decided took
    every slice, while a plan just above it was a short decision (generated tight-3 at 10 s: 76
    units at a bound of 72, where 73 takes 0.2 s). The step halves there too: here, with the
    floor's decisions never ending, 2 units above it (4 when the step stayed)."""
    problem = flat_profile(3, (64, 128), 20, 32)  # bench_minimize.py's tight-3 in bytes
    lb = lower_bounds(problem).lower["mem"]
    _stall_decisions(monkeypatch, only_at=lb)
    inst = build(problem, "mem", list(problem.units))
    ans = engine.solve(inst, None, lb, MIN_PEAK, Deadline(600.0, deterministic=True).part(5.0))  # a wall guard far off
    assert ans.timed_out and ans.bound == lb and ans.dive_peak == lb + 16
    assert ans.peak is not None and ans.peak <= lb + 2


@pytest.mark.parametrize("share", [DEFAULTS.floor_share, 4.0])
def test_the_larger_slice_goes_first(monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    """The search alone gives the bound a quarter of the slice of the decision below its best plan,
    after it; auto's race (``PortfolioParams.race_floor_share``) four times, first: a bound decided in its
    first slice is not kept waiting behind a plan that cannot beat it. Here no decision ever ends."""
    problem = flat_profile(3, (64, 128), 20, 32)
    lb = lower_bounds(problem).lower["mem"]
    seen: list[tuple[int, float]] = []
    _stall_decisions(monkeypatch, seen=seen)
    inst = build(problem, "mem", list(problem.units))
    ans = engine.solve(inst, None, lb, MIN_PEAK, Deadline(600.0, deterministic=True).part(100.0),
                       params=SearchParams(floor_share=share))
    assert ans.timed_out and ans.bound == lb
    calls = [(cap == lb, seconds) for cap, seconds in seen]  # (at the bound, the slice's seconds)
    pairs = [(calls[i], calls[i + 1]) for i in range(0, len(calls) - 1, 2)][:-1]  # (the last may be cut short)
    assert len(pairs) >= 3
    first, second = (lambda p: p[0], lambda p: p[1]) if share > 1 else (lambda p: p[1], lambda p: p[0])
    assert all(first(p)[0] and not second(p)[0] and first(p)[1] == pytest.approx(share * second(p)[1]) for p in pairs)


@pytest.mark.parametrize("share", [DEFAULTS.floor_share, 4.0])
def test_under_a_capacity_the_race_decides_the_bound_first(monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    """Minimizing under a capacity with no plan under it yet, the search alone first decides the
    capacity (a plan at all); auto's race (the bound's share above 1) first decides the bound,
    where a plan is optimal and often quicker to find (minimalloc C at 1 MiB: 1.8k nodes against
    101k), then the capacity. Here the bound's decision finds nothing; the capacity's packs."""
    problem = flat_profile(3, (64, 128), 20, 32)
    lb = lower_bounds(problem).lower["mem"]
    seen: list[tuple[int, float]] = []
    _stall_decisions(monkeypatch, only_at=lb, seen=seen)
    inst = build(problem, "mem", list(problem.units))
    cap = lb + 8 * inst.scale  # below the dive's plan (lb + 16 units): no plan under it yet
    ans = engine.solve(inst, cap, lb, MIN_PEAK, Deadline(600.0, deterministic=True).part(5.0),
                       params=SearchParams(floor_share=share))
    assert ans.peak is not None and ans.peak <= cap
    caps = [c for c, _ in seen]
    assert inst.scale == 1 and caps[0] == (lb if share > 1 else cap)
    assert share <= 1 or caps[1] == cap


def test_a_twin_is_skipped_while_its_forced_ordering_never_branched_on_a_forced_section(monkeypatch):
    """With the forced-section rule unable to fire (``tight`` off), each fixed ordering's twin
    without the rule would repeat its search node for node: the decision runs only the forced one,
    round after round. Restart orderings (their own arrays) still run without the rule."""
    rng = random.Random(5)
    buffers = tuple(Buffer(f"b{i}", rng.randint(1, 9) * 16, s, s + rng.randint(1, 6))
                    for i, s in enumerate(rng.randrange(30) for _ in range(60)))
    problem = Problem(buffers, (Memory("m"),))
    inst = build(problem, "m", list(problem.units))
    cap = inst.scaled_bound(lower_bounds(problem).lower["m"])
    params = SearchParams(first_limit=8, rules=ALL_RULES._replace(tight=False))
    ords = orderings(inst, 0)
    fixed = {id(o.arrays) for o in ords}
    calls: list[tuple[bool, int]] = []
    search = kernel.search

    def spy(a, rules, *args):  # type: ignore[no-untyped-def]
        calls.append((rules.forced, id(a)))
        return search(a, rules, *args)

    monkeypatch.setattr(engine.kernels, "search", spy)
    engine.decide(ords, inst.n, cap, Deadline(400 / params.nodes_per_second, deterministic=True),
                  np.zeros(1, np.int64), True, None, params)
    on_fixed = [forced for forced, a in calls if a in fixed]
    assert on_fixed.count(True) > len(ords) // 2, "the decision needs more than one round for this test"
    assert not any(forced is False for forced in on_fixed)
    assert any(a not in fixed for _, a in calls), "restart orderings still run"
