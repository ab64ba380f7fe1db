"""The MILP planners (CBC, HiGHS) against brute force and CP-SAT; model export and import.

The MIP runs without the heuristic warm start in the cross-checks (``warm_start=False``), so the
model itself has to find and prove every optimum.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from brute_force import brute_force_optimum
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from optplan import registry
from optplan.cli import main
from optplan.core.buffer import Buffer, Memory, RelativePlacement
from optplan.core.deadline import Deadline
from optplan.core.errors import FormatError, OptplanError, ProblemError
from optplan.core.objective import Objective
from optplan.core.plan import Status
from optplan.core.problem import Problem, objective_weights
from optplan.core.validate import validate
from optplan.formats import read_placements, read_problem
from optplan.formats.lp_io import export_model, import_solution, read_solution
from optplan.parts import reduce
from optplan.solvers import milp
from optplan.solvers.milp_runners import CAPPED, MilpSettings
from optplan.solvers.planners import solve_milp


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    """Tiny problems with every constraint kind: memories with capacities, alignments and
    weights, buffer alignment, allowed / blocked / fixed memories, fixed offsets, relative
    placements (members may overlap: multi-piece units), zero-size buffers."""
    nm = draw(st.integers(1, 3))
    mems = tuple(Memory(f"m{j}", capacity=draw(st.one_of(st.none(), st.integers(4, 20))),
                        alignment=draw(st.sampled_from([1, 1, 2, 4])),
                        weight=draw(st.one_of(st.none(), st.integers(0, 3)))) for j in range(nm))
    names = [m.name for m in mems]
    bufs = []
    for i in range(draw(st.integers(2, 6))):
        start = draw(st.integers(0, 3))
        kind = draw(st.sampled_from(["free", "free", "allowed", "blocked", "fixed_memory", "fixed_offset"]))
        kw: dict = {}
        if kind == "allowed":
            kw["allowed"] = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=nm, unique=True)))
        elif kind == "blocked":
            kw["blocked"] = (draw(st.sampled_from(names)),)
        elif kind == "fixed_memory":
            kw["fixed_memory"] = draw(st.sampled_from(names))
        elif kind == "fixed_offset":
            kw["fixed_offset"] = draw(st.sampled_from([0, 4, 8]))
        bufs.append(Buffer(f"b{i}", draw(st.sampled_from([0, 1, 2, 3, 5, 8])), start, start + draw(st.integers(1, 4)),
                           alignment=draw(st.sampled_from([1, 1, 2, 4])), **kw))
    rel = []
    for i in range(1, len(bufs)):
        if draw(st.integers(0, 4)) == 0:
            rel.append(RelativePlacement(f"b{i}", f"b{draw(st.integers(0, i - 1))}", draw(st.sampled_from([-2, 0, 2, 4]))))
    try:
        return Problem(tuple(bufs), mems, tuple(rel))
    except ProblemError:
        reject()


def _check_against_brute_force(problem: Problem, plan) -> None:
    best = brute_force_optimum(problem)
    if best is None:
        assert plan.status == Status.INFEASIBLE, plan.message
    else:
        assert plan.status == Status.OPTIMAL, plan.message
        assert plan.objective_value == best[0]
        assert not validate(problem, plan.placements)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems())
def test_cbc_optimum_equals_brute_force_and_cpsat(problem: Problem) -> None:
    mip = registry.solve(problem, "milp-cbc", warm_start=False)  # the MIP alone finds and proves it
    _check_against_brute_force(problem, mip)
    cp = registry.solve(problem, "cpsat")
    assert (cp.status, cp.objective_value) == (mip.status, mip.objective_value), f"CP-SAT disagrees: {cp.message}"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems())
def test_highs_optimum_equals_brute_force(problem: Problem) -> None:
    _check_against_brute_force(problem, registry.solve(problem, "milp-highs", warm_start=False))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems())
def test_warm_started_cbc_equals_brute_force(problem: Problem) -> None:
    _check_against_brute_force(problem, registry.solve(problem, "milp-cbc"))  # as shipped


def test_a_weight_0_memory_does_not_cut_off_the_optimum() -> None:
    """Found by the test above: the rows of the uncounted peak of m1 led CBC's preprocessing to
    claim OPTIMAL with b0 in m0 (m0 peak 4) where b0 fits above b2 in m1 (m0 peak 3)."""
    p = Problem((Buffer("b0", 1, 0, 1), Buffer("b1", 3, 0, 1), Buffer("b2", 3, 0, 1, alignment=2)),
                (Memory("m0"), Memory("m1", capacity=4, weight=0)))
    plan = registry.solve(p, "milp-cbc", warm_start=False)
    _check_against_brute_force(p, plan)
    assert plan.peak["m0"] == 3
    alone = Problem((Buffer("b0", 1, 0, 1, blocked=("m0",)),), (Memory("m0"), Memory("m1", capacity=4, weight=0)))
    _check_against_brute_force(alone, registry.solve(alone, "milp-cbc", warm_start=False))  # offset in no row


def _fragmented() -> Problem:
    """Load fits the capacity, but the fixed buffer splits it into holes too small for 'b'."""
    return Problem((Buffer("f", 1, 0, 2, fixed_offset=1), Buffer("b", 3, 0, 2), Buffer("c", 1, 2, 3)),
                   (Memory("mem", capacity=4),))


@pytest.mark.parametrize("name", ["milp-cbc", "milp-highs"])
def test_proves_infeasible_where_bounds_and_heuristics_cannot(name: str) -> None:
    p = _fragmented()
    assert registry.solve(p, "greedy-size").status == Status.UNKNOWN
    plan = registry.solve(p, name)
    assert plan.status == Status.INFEASIBLE
    assert "proved" in plan.message


def test_feasible_objective_returns_a_plan_within_capacities() -> None:
    p = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 1, 3), Buffer("c", 8, 2, 4)), (Memory("mem", capacity=12),))
    plan = registry.solve(p, "milp-cbc", objective="feasible", warm_start=False)
    assert plan.found and plan.peak["mem"] <= 12


def test_weighted_memories_fill_the_cheap_one_first() -> None:
    # default weights: the slow memory's bytes cost more than any amount of fast bytes
    p = Problem((Buffer("a", 6, 0, 2), Buffer("b", 6, 1, 3), Buffer("c", 6, 0, 3)),
                (Memory("fast", capacity=12), Memory("slow")))
    plan = registry.solve(p, "milp-cbc", warm_start=False, objective="weighted")
    assert plan.status == Status.OPTIMAL
    assert plan.peak == {"fast": 12, "slow": 6}
    w = objective_weights(p)
    assert plan.objective_value == w["fast"] * 12 + w["slow"] * 6
    plan = registry.solve(p, "milp-cbc", warm_start=False)  # fast-first (the default here): the same peaks
    assert plan.status == Status.OPTIMAL and str(plan.objective) == "fast-first" and plan.peak == {"fast": 12, "slow": 6}


def test_huge_default_weights_are_solved_lexicographically(tmp_path: Path) -> None:
    # odd sizes near 2**30: no grid scaling; slow weighs ~3e9 times fast, so the weighted peaks
    # would exceed what doubles resolve: slow's peak is minimized first, then fast's
    big = 2**30
    p = Problem((Buffer("a", big + 7, 0, 3, allowed=("slow",)), Buffer("b", big + 1, 0, 2), Buffer("c", big + 3, 1, 3)),
                (Memory("fast"), Memory("slow")))
    part = reduce(p, Objective.default(p)).parts[0]
    assert milp.build_model(part, Objective.default(p)).stages == ("slow", "fast", milp.LOST_STAGE)  # then min-peak's tie-break
    for name in ("milp-cbc", "milp-highs"):
        plan = registry.solve(p, name, time_limit=30)
        assert plan.status == Status.OPTIMAL, plan.message
        assert plan.peak == {"slow": big + 7, "fast": 2 * big + 4}
    with pytest.raises(OptplanError, match="one memory at a time"):
        export_model(p, tmp_path / "model.lp")  # one file cannot hold the stages
    assert not (tmp_path / "model.lp").exists()


def test_least_offsets_of_the_solution_order_survive_imprecise_printed_offsets() -> None:
    """CBC prints 8 significant digits: offsets above 1e8 come back rounded; the below/above
    binaries still give the exact plan."""
    big = 10**9
    p = Problem((Buffer("a", big + 1, 0, 2), Buffer("b", big + 3, 1, 3), Buffer("c", 7, 0, 3)))
    part = reduce(p, Objective.default(p)).parts[0]
    plan = registry.solve(p, "greedy-size")
    choices = part.choices(plan.placements)
    model = milp.build_model(part, Objective.parse("min-peak"), choices)
    values = {v.name: v.varValue for v in model.lp.variables()}
    printed = {n: (float(f"{v:.8g}") if n.startswith("o_") else v) for n, v in values.items()}
    raw = milp.read_choices(part, printed.get)
    found = {how: c for c, how in milp.decode(part, raw, model, printed.get)}
    assert "order" in found
    assert model.key(found["order"]) == model.key(choices)


def test_time_limit_keeps_the_heuristic_plan_and_reports_the_mip_bound(shared: Path) -> None:
    p = read_problem(shared / "minimalloc" / "A.1048576.csv")
    plan = registry.solve(p, "milp-cbc", time_limit=10)
    assert plan.status == Status.FEASIBLE  # nobody proves A optimal in 10 s
    assert plan.seconds < 10 + 2.5  # CBC is stopped (SIGINT, then SIGKILL) if it overruns
    assert "time limit" in plan.message
    assert plan.objective_value <= registry.solve(p, "greedy-size").objective_value  # one of the warm starts
    assert plan.gap is not None and plan.gap > 0
    run = plan.stats["mip_runs"][0]
    if run["mip_status"] == "Stopped on time limit":  # not killed (a loaded machine can delay CBC's checks)
        assert run["mip_bound"] >= plan.lower_bound["mem"] * 0.999


def test_warm_start_values_satisfy_the_model() -> None:
    """Every warm-start value set from a valid plan must satisfy every row of the model."""
    p = Problem((Buffer("a", 4, 0, 4, alignment=4), Buffer("b", 4, 0, 4, alignment=4), Buffer("c", 2, 1, 3),
                 Buffer("d", 6, 2, 5), Buffer("e", 2, 0, 5, allowed=("slow",))),
                (Memory("fast", capacity=12, alignment=2), Memory("slow")),
                (RelativePlacement("c", "d", -2),))
    plan = registry.solve(p, "greedy-size")
    red = reduce(p, Objective.default(p))
    for part in red.parts:
        choices = part.choices(plan.placements)
        model = milp.build_model(part, Objective.parse("min-peak"), choices)
        for c in model.lp.constraints():
            assert c.valid(eps=1e-9), (c.name, c.value())
        for v in model.lp.variables():
            assert v.valid(eps=1e-9), v.name


def _solve_mps(path: Path, out: Path) -> float:
    """Solve an exported .mps with PuLP's CBC as an outside solver would; write 'name value' lines."""
    pulp = milp.pulp  # PuLP as optplan imports it: after OR-Tools (see milp.py on libhighs)
    names, lp = pulp.LpProblem.fromMPS(str(path))
    lp.solve(pulp.PULP_CBC_CMD(msg=False))  # PuLP 3.3 warns it is deprecated for PuLP 4
    assert lp.status == pulp.LpStatusOptimal
    out.write_text(f"# Objective value = {pulp.value(lp.objective)}\n"
                   + "".join(f"{n} {v.varValue}\n" for n, v in names.items()))
    return pulp.value(lp.objective)


def test_export_solve_import_round_trip(tmp_path: Path) -> None:
    p = Problem((Buffer("a", 8, 0, 3, alignment=4), Buffer("b", 4, 1, 4), Buffer("c", 4, 2, 6),
                 Buffer("d", 8, 3, 6), Buffer("e", 2, 0, 6, allowed=("slow",)), Buffer("f", 4, 0, 2)),
                (Memory("fast", capacity=20, alignment=4), Memory("slow")),
                (RelativePlacement("f", "a", 4),))
    export_model(p, tmp_path / "model.lp")
    assert "o_0" in (tmp_path / "model.lp").read_text()
    info = export_model(p, tmp_path / "model.mps")
    assert info.binaries > 0 and info.scale >= 1
    _solve_mps(tmp_path / "model.mps", tmp_path / "model.sol")
    plan = import_solution(p, tmp_path / "model.sol")
    best = brute_force_optimum(p)
    assert best is not None and plan.objective_value == best[0]
    assert not validate(p, plan.placements)


def test_import_rounds_tolerances_and_repairs_overlaps(tmp_path: Path) -> None:
    p = Problem((Buffer("a", 4, 0, 2), Buffer("b", 3, 1, 3)))  # sizes with gcd 1: offsets in bytes
    sol = tmp_path / "s.sol"
    sol.write_text("o_0 0.0000001\no_1 3.9999999\n")  # a MIP's rounding noise
    plan = import_solution(p, sol)
    assert {b: pl.offset for b, pl in plan.placements.items()} == {"a": 0, "b": 4}
    assert "re-placed" not in plan.message
    sol.write_text("o_0 0\no_1 3\n")  # overlaps by one byte (integrality tolerance times big-M)
    plan = import_solution(p, sol)
    assert plan.peak["mem"] == 7 and "re-placed" in plan.message


def test_bad_solution_files_name_the_line_or_variable(tmp_path: Path) -> None:
    p = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 1, 3)))
    sol = tmp_path / "s.sol"
    sol.write_text("# Objective value = 8\no_0 0\nthis is not a value line\n")
    with pytest.raises(FormatError, match="line 3"):
        read_solution(sol)
    sol.write_text("o_0 zero\n")
    with pytest.raises(FormatError, match="'o_0' is not a number"):
        read_solution(sol)
    sol.write_text("o_0 0\n")
    with pytest.raises(OptplanError, match="no value for o_1 \\(buffer 'b'\\)"):
        import_solution(p, sol)
    with pytest.raises(FormatError, match="use .lp or .mps"):
        export_model(p, tmp_path / "model.txt")


def test_cli_export_and_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problem = tmp_path / "p.json"
    p = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 1, 3), Buffer("c", 8, 2, 4)))
    from optplan.formats import write_problem

    write_problem(p, problem)
    assert main(["export-model", str(problem), "-o", str(tmp_path / "m.mps")]) == 0
    assert "variables" in capsys.readouterr().out
    _solve_mps(tmp_path / "m.mps", tmp_path / "m.sol")
    assert main(["import-solution", str(problem), str(tmp_path / "m.sol"), "-o", str(tmp_path / "plan.json")]) == 0
    placements = read_placements(tmp_path / "plan.json", p)
    assert not validate(p, placements)
    assert max(pl.offset + p.buffer(b).size for b, pl in placements.items()) == 12  # b and c live together
    assert main(["import-solution", str(problem), str(tmp_path / "missing.sol"), "-o", str(tmp_path / "x.json")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("solver", ["cbc", "highs"])
def test_a_deterministic_mip_stopped_by_its_wall_cap_keeps_the_warm_start_every_time(shared, solver) -> None:
    """Issue 19 §2: a deterministic MIP run capped in wall time (here 0.8 s, far below minimalloc A's
    root: CBC spent 32 s there) is killed and its answer dropped: the heuristic warm start is the
    plan, the same on every capped run, and the plan says it was capped (SIGINT let CBC hand over
    whatever it had reached by then)."""
    p = read_problem(shared / "minimalloc" / "A.1048576.csv")
    settings = MilpSettings(solver=solver, seed=1, wall_cap=(0.0, 0.8))
    objective = Objective.parse(None, p)
    results = [solve_milp(p, objective, Deadline(5, deterministic=True), settings) for _ in range(2)]
    warm = milp.best_heuristic(p, Deadline(None))
    for result in results:
        run = result.stats["mip_runs"][0]
        assert run["deterministic_wall_capped"] == 1 and CAPPED in run["mip_status"]
        assert result.placements == warm and validate(p, result.placements) == []
    assert results[0].placements == results[1].placements and results[0].message == results[1].message


@pytest.mark.parametrize("solver", ["milp-cbc", "milp-highs"])
def test_a_mip_that_would_not_fit_in_memory_is_refused_in_one_line(shared, monkeypatch, capsys, solver) -> None:
    """Issue 19 §2: the model's size is estimated (``BYTES_PER_PAIR`` per pair of units alive
    together) before anything is built; with less memory available than that (here 1 MiB) the
    planner refuses with one line naming the need, and the CLI exits 1 at once: no plan, not a
    usage error (issue 30: it exited 2, the code of a mistyped command)."""
    monkeypatch.setattr(milp, "available_memory", lambda: 1 << 20)
    path = shared / "minimalloc" / "A.1048576.csv"
    with pytest.raises(OptplanError, match=r"would have about [\d,]+ disjunctive pairs and need about"):
        registry.solve(read_problem(path), solver, time_limit=5)
    assert main(["solve", str(path), "--planner", solver, "--time-limit", "5"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "GiB available" in err[0]


@pytest.mark.parametrize("solver", ["milp-cbc", "milp-highs"])
def test_a_cancel_between_the_warm_start_and_the_solver_keeps_the_warm_start_and_starts_nothing(
        shared, monkeypatch, solver) -> None:
    """Issue 30 item 3: a signal while the model was written for CBC made its limit negative
    (``ValueError: a time limit must be a number >= 0``: exit 1, no plan), and a signal before
    the launch still launched the solver. Cancelled there, the planner starts no child process
    and returns the heuristic warm start, a valid plan."""
    import subprocess

    p = read_problem(shared / "minimalloc" / "A.1048576.csv")
    deadline = Deadline(30)
    write_mps = milp.pulp.LpProblem.writeMPS

    def signal_while_writing(lp, *args, **kwargs):  # the signal handler's cancel, as the model is written
        deadline.cancel("interrupted")
        return write_mps(lp, *args, **kwargs)

    started: list[object] = []
    popen = subprocess.Popen

    def spy(args, *rest, **kwargs):
        started.append(args)
        return popen(args, *rest, **kwargs)

    monkeypatch.setattr(milp.pulp.LpProblem, "writeMPS", signal_while_writing)
    monkeypatch.setattr(subprocess, "Popen", spy)
    plan = registry.solve(p, solver, deadline=deadline)
    assert started == []
    assert plan.found and validate(p, plan.placements) == []
    assert plan.placements == milp.best_heuristic(p, Deadline(None))
    assert "interrupted" in plan.message


def test_a_cbc_solution_file_cut_short_reads_as_no_solution(tmp_path) -> None:
    """Issue 30 item 3's IndexError: CBC killed while it writes its solution leaves the file empty
    or cut in a line, on which PuLP's reader fails; that is no solution (the warm start stays)."""
    import warnings

    from optplan.solvers import milp_runners

    with warnings.catch_warnings():  # PuLP 3.3 deprecates its bundled CBC for 4.0
        warnings.simplefilter("ignore", DeprecationWarning)
        cbc = milp.pulp.PULP_CBC_CMD(msg=False)
    lp = milp.pulp.LpProblem("cut", milp.pulp.LpMinimize)
    sol = tmp_path / "model.sol"
    assert not milp_runners._read_cbc_solution(cbc, str(sol), lp, [], {}, {})  # none at all
    for text in ("", "Optimal - objective value 3\n      0 x  1\n"):
        sol.write_text(text)
        assert not milp_runners._read_cbc_solution(cbc, str(sol), lp, [], {}, {})
