"""The typed Objective (optplan.core.objective): min-peak with its tie-break, fast-first, weighted,
feasible; exact planners against the brute force (every assignment of buffers to memories,
packed exactly) for each; the report of a two-memory plan and of an infeasible one."""

from __future__ import annotations

import json
import random

import pytest
from brute_force import brute_force_optimum

from optplan import registry
from optplan.cli import main
from optplan.core.buffer import Buffer, Memory
from optplan.core.errors import OptplanError
from optplan.core.objective import Goal, Objective
from optplan.core.plan import Status
from optplan.core.problem import Problem
from optplan.formats.memspec import parse_memory, parse_size
from optplan.formats.minimalloc_csv import problem_from_csv
from optplan.formats.native_json import problem_from_json, problem_to_json
from optplan.heuristics.run import improving

KIB = 1024


def issue_example() -> Problem:
    """Issue 16: SRAM of 4 KiB before an unbounded DRAM; g only in DRAM."""
    return Problem((Buffer("g", 100000, 0, 1, allowed=("dram",)), Buffer("p", KIB, 0, 2),
                    Buffer("q", 4 * KIB, 1, 3), Buffer("s", 2 * KIB, 3, 5)),
                   (Memory("sram", capacity=4 * KIB), Memory("dram")))


def where(plan) -> dict[str, str]:
    return {b: p.memory for b, p in plan.placements.items()}


def test_parse_default_and_errors() -> None:
    assert Objective.parse("fast-first").goal is Goal.FAST_FIRST
    assert Objective.parse(None, issue_example()).goal is Goal.FAST_FIRST  # capacitated SRAM before DRAM
    one = Problem((Buffer("a", 1, 0, 1),), (Memory("m", capacity=4),))
    assert Objective.parse(None, one).goal is Goal.MIN_PEAK
    with pytest.raises(OptplanError, match="unknown objective 'fastest'"):
        Objective.parse("fastest")


@pytest.mark.parametrize("planner", ["cpsat", "milp-cbc", "auto", "search"])
def test_issue_example_min_peak_and_fast_first(planner: str) -> None:
    """min-peak without the tie-break left SRAM idle over [3, 5); with it s goes there.
    fast-first keeps q (4 KiB) rather than p (1 KiB) in SRAM."""
    p = issue_example()
    plan = registry.solve(p, planner, objective="min-peak", time_limit=20)
    assert plan.status is Status.OPTIMAL, plan.message
    assert where(plan) == {"g": "dram", "p": "sram", "q": "dram", "s": "sram"}
    plan = registry.solve(p, planner, objective="fast-first", time_limit=20)
    assert plan.status is Status.OPTIMAL, plan.message
    assert where(plan) == {"g": "dram", "p": "dram", "q": "sram", "s": "sram"}
    assert plan.gap == 0.0


def test_issue_example_scaled_down_matches_the_brute_force() -> None:
    """The same example in KiB units, small enough for every assignment and offset to be tried:
    without the tie-break min-peak may leave the SRAM idle over [3, 5); the brute force and the
    planners agree it does not, and fast-first keeps q instead of p."""
    p = Problem((Buffer("g", 98, 0, 1, allowed=("dram",)), Buffer("p", 1, 0, 2), Buffer("q", 4, 1, 3),
                 Buffer("s", 2, 3, 5)), (Memory("sram", capacity=4), Memory("dram")))
    expected = {"min-peak": {"g": "dram", "p": "sram", "q": "dram", "s": "sram"},
                "fast-first": {"g": "dram", "p": "dram", "q": "sram", "s": "sram"}}
    for goal, memories in expected.items():
        value, placements = brute_force_optimum(p, objective=goal)
        assert {b: pl.memory for b, pl in placements.items()} == memories
        plan = registry.solve(p, "cpsat", objective=goal, time_limit=10)
        assert plan.status is Status.OPTIMAL and plan.objective_value == value and where(plan) == memories
    weighted, _ = brute_force_optimum(p, objective="weighted")
    assert Objective.parse("weighted").split(p, weighted)[0] == Objective.parse("min-peak").split(
        p, brute_force_optimum(p, objective="min-peak")[0])[0]  # same peaks; the tie-break only fills the SRAM


def test_weighted_has_no_tie_break() -> None:
    p = issue_example()
    plan = registry.solve(p, "greedy-size", objective="weighted")
    assert plan.objective.goal is Goal.WEIGHTED and plan.objective_value == plan.objective.value(p, plan.placements)


def random_hierarchy(rng: random.Random) -> Problem:
    """Two or three memories (capacitated ones in front), a few buffers with benefits."""
    n = rng.choice((2, 2, 3))
    memories = [Memory(f"m{i}", capacity=rng.randint(4, 12), alignment=rng.choice((1, 1, 2))) for i in range(n - 1)]
    memories.append(Memory(f"m{n - 1}", capacity=rng.choice((None, None, 14))))
    buffers = []
    for i in range(rng.randint(2, 5)):
        start = rng.randint(0, 4)
        allowed = None if rng.random() < 0.8 else (memories[-1].name,)
        buffers.append(Buffer(f"b{i}", rng.choice((1, 2, 3, 4, 6)), start, start + rng.randint(1, 3), allowed=allowed,
                              benefit=None if rng.random() < 0.5 else rng.randint(0, 20)))
    return Problem(tuple(buffers), tuple(memories))


@pytest.mark.parametrize("goal", ["min-peak", "fast-first", "weighted"])
@pytest.mark.parametrize("planner", ["cpsat", "milp-highs", "auto"])
def test_exact_planners_match_the_brute_force(goal: str, planner: str) -> None:
    rng = random.Random(16)
    for _ in range(6):
        p = random_hierarchy(rng)
        reference = brute_force_optimum(p, objective=goal)
        plan = registry.solve(p, planner, objective=goal, time_limit=20, workers=1)
        if reference is None:
            assert plan.status is Status.INFEASIBLE, (plan.status, plan.message)
            continue
        assert plan.status is Status.OPTIMAL, (plan.status, plan.message)
        assert plan.objective_value == reference[0], (goal, planner, plan.placements, reference[1])
        assert plan.gap == 0.0


@pytest.mark.parametrize("goal", ["min-peak", "fast-first"])
def test_heuristics_never_beat_nor_falsely_prove(goal: str) -> None:
    rng = random.Random(7)
    for _ in range(6):
        p = random_hierarchy(rng)
        reference = brute_force_optimum(p, objective=goal)
        for name in registry.heuristic_names():
            plan = registry.solve(p, name, objective=goal)
            if not plan.found:
                continue
            assert reference is not None and plan.objective_value >= reference[0], name
            assert plan.status is not Status.OPTIMAL or plan.objective_value == reference[0], name
            assert (plan.gap == 0.0) == (plan.objective_value <= plan.objective_bound), name


def test_benefit_is_read_and_written() -> None:
    p = problem_from_csv("id,lower,upper,size,benefit\na,0,2,4,12\nb,1,3,4,\n")
    assert [b.gain for b in p.buffers] == [12, 4]
    again = problem_from_json(problem_to_json(p))
    assert [b.benefit for b in again.buffers] == [12, None]


def test_memory_specs() -> None:
    assert parse_size("4KiB") == 4096 and parse_size("2MiB") == 2 << 20 and parse_size("1GiB") == 1 << 30
    m = parse_memory("sram:4KiB:align=64")
    assert (m.name, m.capacity, m.alignment) == ("sram", 4096, 64)
    assert parse_memory("dram").capacity is None
    for bad in ("sram:4Kx", "sram:4KiB:color=3", ":4KiB", "sram:align=4:4KiB"):
        with pytest.raises(OptplanError, match="--memory"):
            parse_memory(bad)


@pytest.fixture
def csv_problem(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,lower,upper,size\np,0,2,1024\nq,1,3,4096\ns,3,5,2048\ng,0,1,100000\n")
    return path


def test_cli_two_memories_report_tells_the_truth(csv_problem, capsys) -> None:
    rc = main(["solve", str(csv_problem), "--memory", "sram:4KiB:align=64", "--memory", "dram", "--planner", "cpsat"])
    text = capsys.readouterr().out
    assert rc == 0 and "OPTIMAL" in text
    lines = [ln.split() for ln in text.splitlines() if ln.strip().startswith(("sram", "dram"))]
    assert len(lines) == 2
    for row in lines:  # memory capacity peak bound gap ...: no zero bound, gap 0 under OPTIMAL
        assert row[3] != "0" and row[4] == "0.00%", row
    assert "fast-first: sram holds 6.00 KiB of benefit, 6.00 KiB possible (proven)" in text
    rc = main(["solve", str(csv_problem), "--memory", "sram:4KiB", "--memory", "dram", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["objective"] == "fast-first" and doc["gap"] == 0.0


def test_cli_infeasible_shows_its_proof(csv_problem, capsys) -> None:
    rc = main(["solve", str(csv_problem), "--memory", "sram:1KiB", "--memory", "dram:50KiB"])
    text = capsys.readouterr().out
    assert rc == 1 and "INFEASIBLE" in text and "'g' needs 100,000 bytes" in text and "'sram'" in text
    assert "peak" not in text  # no table of zeros


def test_cli_bad_memory_spec_is_one_line(csv_problem, capsys) -> None:
    assert main(["solve", str(csv_problem), "--memory", "sram:4Kx"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--memory 'sram:4Kx'" in err


@pytest.mark.parametrize("goal", ["min-peak", "weighted"])
def test_auto_warm_start_is_judged_by_the_requested_objective(goal: str) -> None:
    """The issue's example defaults to fast-first; asked for another objective, auto's heuristic
    plans (its warm start) carry their value under the requested one, not the default's."""
    p = issue_example()
    plan = registry.solve(p, "auto", objective=goal, time_limit=10, workers=1)
    assert plan.objective.goal is Goal(goal)
    values = {n: v for n, v in plan.stats["heuristics"].items() if not improving(n)}  # hill-climb's depends on time
    assert values and all(v == registry.solve(p, name, objective=goal).objective_value for name, v in values.items())


@pytest.mark.parametrize("goal", ["min-peak", "fast-first"])
def test_cpsat_staged_objective_matches_the_brute_force(goal: str, monkeypatch) -> None:
    """When benefit x peaks would overflow 64 bits, CP-SAT minimizes the first quantity, fixes it,
    then the second: forced here on small problems, the optimum is the brute force's."""
    from optplan.solvers import cpsat

    monkeypatch.setattr(cpsat, "_PACK_LIMIT", 0)
    fixed: list[int] = []
    fix_first = cpsat.PartModel.fix_first
    monkeypatch.setattr(cpsat.PartModel, "fix_first", lambda pm, v, h: (fixed.append(v), fix_first(pm, v, h)))
    rng = random.Random(5)
    for _ in range(6):
        p = random_hierarchy(rng)
        reference = brute_force_optimum(p, objective=goal)
        plan = registry.solve(p, "cpsat", objective=goal, time_limit=20, workers=1)
        if reference is None:
            assert plan.status is Status.INFEASIBLE
            continue
        assert plan.status is Status.OPTIMAL and plan.objective_value == reference[0], (plan.message, plan.placements)
    assert fixed  # the second stage ran


def _plan_with(p: Problem, where_: dict[str, tuple[str, int]]):
    """The issue's example with placements given (memory, offset), judged fast-first, with the most
    benefit SRAM can keep proven (6 KiB: q and s; the L of ``optplan.core.objective``, DRAM's tier weight 1)."""
    from optplan.core.plan import Placement

    lost = sum(b.gain for b in p.buffers) - 6 * KIB
    placements = {b: Placement(m, o) for b, (m, o) in where_.items()}
    return registry.finish(p, registry.Result(placements, lost_bound=lost), "given", 0.0)


def test_gap_names_its_quantity_so_a_better_plan_is_not_read_as_worse(csv_problem, capsys, monkeypatch) -> None:
    """Issue 16: a lexicographic gap is that of the first quantity not at its bound, so a better
    plan (all the benefit possible, a high DRAM peak) may show a larger gap than a worse one
    (benefit short). Each gap says which quantity it measures: the plan, --json and the report."""
    p = issue_example()
    short = _plan_with(p, {"g": ("dram", 0), "p": ("sram", 0), "q": ("dram", 100000), "s": ("sram", 0)})
    better = _plan_with(p, {"g": ("dram", 0), "p": ("dram", 500000), "q": ("sram", 0), "s": ("sram", 0)})
    assert better.objective_value < short.objective_value and better.gap > short.gap  # the trap
    assert (short.gap_of, better.gap_of) == ("benefit kept", "peaks")
    from optplan.report.summary import gap_words

    assert gap_words(p, short) == "benefit gap 100.00%"  # 6 KiB possible, 3 KiB kept
    assert gap_words(p, better).startswith("dram peak gap ")
    optimal = registry.solve(p, "cpsat", time_limit=20)
    assert optimal.status is Status.OPTIMAL and optimal.gap_of is None and gap_words(p, optimal) == "gap 0.00%"
    monkeypatch.setattr(registry, "solve", lambda *a, **k: better)
    assert main(["solve", str(csv_problem), "--memory", "sram:4KiB", "--memory", "dram"]) == 0
    assert "(dram peak gap 401.02%)" in capsys.readouterr().out
    assert main(["solve", str(csv_problem), "--memory", "sram:4KiB", "--memory", "dram", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gap_of"] == "peaks" and doc["gap"] == pytest.approx(better.gap)
