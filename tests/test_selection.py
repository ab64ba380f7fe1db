"""The staging relaxation (optplan.solvers.selection) against the brute force: its bound on the
lost benefit and, at that bound, on the weighted peaks hold; cuts from sets of units that do not
pack in a memory keep them valid, and with every such set cut the bound is the optimum."""

from __future__ import annotations

import itertools
import random

import pytest
from brute_force import brute_force_optimum
from test_objective import random_hierarchy

from optplan.core.buffer import Buffer, Memory
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.core.problem import Problem
from optplan.parts import reduce
from optplan.solvers.cpsat import Settings
from optplan.solvers.selection import RelaxationSettings, Staging, alone

FAST_FIRST = Objective.parse("fast-first")


def aligned(rng: random.Random) -> Problem:
    """A fast memory whose alignment the usage curve does not see (its bound is often loose),
    an unbounded slow one."""
    buffers = []
    for i in range(rng.randint(3, 5)):
        s = rng.randint(0, 3)
        buffers.append(Buffer(f"b{i}", rng.choice((1, 2, 3)), s, s + rng.randint(1, 3),
                              benefit=rng.choice((None, rng.randint(1, 9)))))
    return Problem(tuple(buffers), (Memory("f", capacity=rng.randint(4, 8), alignment=rng.choice((2, 4))), Memory("s")))


def cases(seed: int, n: int, make=random_hierarchy):
    """(problem, its part with memory choices, brute-force (W, L)) for random hierarchies."""
    rng = random.Random(seed)
    for _ in range(n):
        p = make(rng)
        ref = brute_force_optimum(p, objective=FAST_FIRST)
        parts = reduce(p, FAST_FIRST, split=False).parts
        if ref is None or len(parts) != 1 or len(parts[0].memories) < 2:
            continue
        yield p, parts[0], FAST_FIRST.split(p, ref[0])


@pytest.fixture(params=["SCIP", ""], ids=["mip", "cpsat"])
def mip(request) -> RelaxationSettings:
    """least_lost by the MIP solver first (wall-clock deadlines) or by CP-SAT alone."""
    return RelaxationSettings(mip_solver=request.param)


def test_bounds_hold(mip) -> None:
    seen = 0
    for _p, part, (w_opt, l_opt) in cases(3, 30):
        model = Staging(FAST_FIRST, part, mip)
        lost, chosen, optimal = model.least_lost(Deadline(10), Settings(1, 0))
        assert optimal and chosen is not None and lost is not None and lost <= l_opt
        assert model.lost_of(chosen) == lost
        if lost == l_opt:  # the bound on W holds among the plans that lose no more
            weighted, again = model.least_peaks(lost, Deadline(10), Settings(1, 0))
            assert weighted is not None and weighted <= w_opt and model.lost_of(again) <= lost
        seen += 1
    assert seen >= 10


def test_cuts_from_sets_that_do_not_pack_keep_the_bound_and_close_it(mip) -> None:
    seen = loose = 0
    for p, part, (_w, l_opt) in cases(8, 30, aligned):
        model = Staging(FAST_FIRST, part, mip)
        loose += model.least_lost(Deadline(10), Settings(1, 0))[0] < l_opt  # type: ignore[operator]
        for m in part.memories:
            if part.problem.memory(m).capacity is None:
                continue
            may = [k for k, xs in enumerate(model.x) if m in xs]
            for r in range(2, len(may) + 1):
                for ks in itertools.combinations(may, r):
                    if brute_force_optimum(alone(part, m, list(ks)), objective="min-peak") is None:
                        model.forbid(m, ks, proven=True)
        lost, _, optimal = model.least_lost(Deadline(10), Settings(1, 0))
        assert optimal and lost is not None and lost <= l_opt
        assert lost == l_opt  # what is left to the unbounded slow memory always fits it
        seen += 1
    assert seen >= 10 and loose >= 3  # the cuts had work to do


def test_mip_hints_keep_the_bounds_and_selections_are_checked_in_integers() -> None:
    """Hinted with the MIP's selections, the least lost benefit and the least peaks at it are those
    of CP-SAT alone (deterministic: no MIP) on random hierarchies, with cuts too; selections are
    checked against capacities and cuts in integers."""
    seen = 0
    for _p, part, _ref in cases(5, 30, aligned):
        model = Staging(FAST_FIRST, part)
        lost, chosen, optimal = model.least_lost(Deadline(10), Settings(1, 0))
        det = Staging(FAST_FIRST, part)
        assert (lost, optimal) == (det.least_lost(Deadline(10, deterministic=True), Settings(1, 0))[0], True)
        assert chosen is not None and model.fits(chosen)
        assert lost is not None  # and the least peaks among the selections losing no more, both ways
        weighted, again = model.least_peaks(lost, Deadline(10), Settings(1, 0))
        assert weighted == det.least_peaks(lost, Deadline(10, deterministic=True), Settings(1, 0))[0]
        assert again is not None and model.lost_of(again) <= lost and weighted == model.peaks_of(again)
        everything = [next(iter(xs)) for xs in model.x]  # every unit in its fastest memory: fits iff no row binds
        assert model.fits(everything) == (not model.rows)
        fast = part.memories[0]
        ks = [k for k, c in enumerate(chosen) if c == fast]
        if ks:
            model.forbid(fast, ks, proven=True)
            det.forbid(fast, ks, proven=True)
            assert not model.fits(chosen)  # the cut is checked in integers too
            again = model.least_lost(Deadline(10), Settings(1, 0))
            assert again[0] == det.least_lost(Deadline(10, deterministic=True), Settings(1, 0))[0]
        seen += 1
    assert seen >= 10


def test_auto_relax_and_verify_matches_the_brute_force() -> None:
    """auto packs the relaxation's selections exactly; where the bound is loose it must not claim
    a proof it lacks, and its optimum is the brute force's."""
    from optplan import registry
    from optplan.core.plan import Status

    # compile the numba kernels first (seconds; minutes under load after they change), outside the time limit
    first = next(cases(11, 12, aligned))[0]
    registry.solve(first, "auto", objective=FAST_FIRST, workers=1)
    seen = 0
    for p, _part, (w_opt, l_opt) in cases(11, 12, aligned):
        plan = registry.solve(p, "auto", objective=FAST_FIRST, time_limit=20, workers=1)
        assert plan.status is Status.OPTIMAL and plan.objective_value == FAST_FIRST.combine(p, w_opt, l_opt), plan.message
        assert "hill-climb" not in plan.stats["heuristics"]  # the relaxation's time, not hill-climb's
        seen += 1
    assert seen >= 6


def test_neighbourhood_model_with_fixed_units_matches_the_brute_force() -> None:
    """LNS's model: units outside the neighbourhood are fixed and enter as holes in the free units'
    offset domains; its optimum is the brute force's with those units pinned where they are."""
    from dataclasses import replace

    from optplan import registry
    from optplan.solvers.cpsat import PartModel, run

    rng = random.Random(4)
    seen = 0
    for _ in range(40):
        p = aligned(rng)
        plan = registry.solve(p, "greedy-size", objective=FAST_FIRST)
        part = reduce(p, FAST_FIRST, split=False).parts[0]
        start = part.choices(plan.placements)
        if start is None or len(part.units) < 3:
            continue
        fixed = {i: start[i] for i in rng.sample(range(len(part.units)), len(part.units) // 2)}
        active = [i for i in range(len(part.units)) if i not in fixed]
        pinned = {bid: fixed[i] for i, u in enumerate(part.units) if i in fixed for bid, _ in u.members}
        q = p.with_buffers(replace(b, fixed_memory=pinned[b.id][0], fixed_offset=pinned[b.id][1] * part.scale)
                           if b.id in pinned else b for b in p.buffers)
        ref = brute_force_optimum(q, objective=FAST_FIRST)
        out = run(PartModel(part, FAST_FIRST, active=active, fixed=fixed), Settings(1, 0), Deadline(10))
        assert out.optimal and out.solution is not None and ref is not None
        merged = [fixed[i] if i in fixed else out.solution[active.index(i)] for i in range(len(part.units))]
        assert FAST_FIRST.value(p, part.placements(merged)) == ref[0], (p, fixed)
        seen += 1
    assert seen >= 10


def test_staged_bounds_join_a_solvers_in_the_objectives_order() -> None:
    from optplan.portfolio.staging import Staged

    mine = Staged(lost=10, weighted=5)
    assert mine.join(FAST_FIRST, 8, 100) == (10, 5)  # a W bound given L = 8 says nothing at L = 10
    assert mine.join(FAST_FIRST, 10, 7) == (10, 7) and mine.join(FAST_FIRST, 12, 1) == (12, 1)
    assert Staged(lost=10).join(Objective.parse("min-peak"), 8, 100) == (10, 100)  # W first: the solver's holds


def fragmented(rng: random.Random) -> Problem:
    """Five to eight short buffers in front of a fast memory about as large as their live load:
    selections that fit every step and often still do not pack (fragmentation)."""
    buffers = []
    for i in range(rng.randint(5, 8)):
        s = rng.randint(0, 5)
        buffers.append(Buffer(f"b{i}", rng.choice((1, 2, 3)), s, s + rng.randint(1, 3)))
    return Problem(tuple(buffers), (Memory("f", capacity=rng.randint(3, 5)), Memory("s")))


def test_selected_units_packed_by_cpsat_when_the_search_has_no_time(monkeypatch) -> None:
    """pack_alone's CP-SAT step (the search given no time): a plan exactly when the brute force
    has one, at the brute force's least peak under min-peak; INFEASIBLE only when it has none."""
    from dataclasses import replace

    from optplan.core.plan import Status
    from optplan.portfolio.params import PortfolioParams
    from optplan.portfolio.staging import pack_alone

    no_search = PortfolioParams(pack_search_share=0.0)
    rng = random.Random(9)
    packed = refuted = 0
    for _ in range(30):
        p = fragmented(rng)
        for goal, more in (("feasible", 0), ("min-peak", 0), ("feasible", 2), ("min-peak", 2)):
            f = p.memories[0]
            alone_f = p.with_memories((replace(f, capacity=f.capacity + more),))
            ref = brute_force_optimum(alone_f, objective="min-peak")
            plan = pack_alone(alone_f, Objective.parse(goal), Deadline(10), Settings(1, 0), 0, no_search)
            assert plan.found == (ref is not None), (p, plan.message)
            if ref is None:
                assert plan.status is Status.INFEASIBLE
                refuted += 1
                continue
            packed += 1
            if goal == "min-peak":
                assert plan.status is Status.OPTIMAL and plan.peak["f"] == ref[0], (p, plan.peak, ref)
    assert packed >= 10 and refuted >= 5
