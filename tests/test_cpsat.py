"""CP-SAT planner: optimum equals brute force on small random problems with every constraint kind."""

from __future__ import annotations

import pytest
from brute_force import brute_force_optimum
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from optplan.core.buffer import Buffer, Memory, RelativePlacement
from optplan.core.errors import ProblemError
from optplan.core.objective import Objective
from optplan.core.plan import Placement, Status
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.formats import read_problem
from optplan.parts import reduce
from optplan.registry import solve
from optplan.solvers.cpsat import PartModel


@st.composite
def problems(draw, max_buffers: int = 8) -> Problem:
    """Small problems mixing memories (capacity, alignment, weight), allowed/blocked memories,
    fixed memory/offset, buffer alignment, relative placements and zero-size buffers."""
    n_mem = draw(st.integers(1, 2))
    names = ["fast", "slow"][:n_mem]
    memories = []
    for name in names:
        memories.append(Memory(name, capacity=draw(st.one_of(st.none(), st.integers(4, 14))),
                               alignment=draw(st.sampled_from([1, 1, 2])),
                               weight=draw(st.one_of(st.none(), st.integers(0, 3)))))
    # a weight-0 memory defeats the brute force's pruning: keep those problems smaller
    n = draw(st.integers(1, max_buffers if all(m.weight != 0 for m in memories) else min(max_buffers, 5)))
    buffers = []
    for i in range(n):
        start = draw(st.integers(0, 5))
        kw: dict = {}
        kind = draw(st.sampled_from(["plain", "plain", "align", "allowed", "blocked", "fixed_mem", "fixed"]))
        if kind == "align":
            kw["alignment"] = draw(st.sampled_from([2, 3, 4]))
        elif kind == "allowed":
            kw["allowed"] = (draw(st.sampled_from(names)),)
        elif kind == "blocked" and n_mem > 1:
            kw["blocked"] = (draw(st.sampled_from(names)),)
        elif kind == "fixed_mem":
            kw["fixed_memory"] = draw(st.sampled_from(names))
        elif kind == "fixed":
            kw["fixed_memory"] = draw(st.sampled_from(names))
            kw["fixed_offset"] = draw(st.integers(0, 6)) * 2
        buffers.append(Buffer(f"b{i}", draw(st.integers(0, 6)), start, start + draw(st.integers(1, 4)), **kw))
    relative = []
    if n >= 2 and draw(st.booleans()):
        i, j = draw(st.permutations(range(n)))[:2]
        relative.append(RelativePlacement(f"b{i}", f"b{j}", draw(st.integers(-2, 4))))
    try:
        return Problem(tuple(buffers), tuple(memories), tuple(relative))
    except ProblemError:
        assume(False)
        raise


def check_exact(problem: Problem, planner: str, **options) -> None:
    """The planner's answer must be the brute-force optimum, or a proof of infeasibility."""
    reference = brute_force_optimum(problem)
    plan = solve(problem, planner, time_limit=20, workers=1, **options)
    if reference is None:
        assert plan.status == Status.INFEASIBLE, plan
        return
    assert plan.status == Status.OPTIMAL, (plan.status, plan.message)
    assert validate(problem, plan.placements) == []
    assert plan.objective_value == reference[0], (plan.objective_value, reference[0])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems())
def test_cpsat_matches_brute_force(problem: Problem) -> None:
    check_exact(problem, "cpsat")


def test_alignment_and_relative_example() -> None:
    """Hand-checked: a 4-byte buffer aligned to 4 must sit above a 3-byte one at offset 4."""
    p = Problem((Buffer("a", 3, 0, 2), Buffer("b", 4, 1, 3, alignment=4), Buffer("c", 1, 1, 3)),
                relative=(RelativePlacement("c", "a", 3),))
    plan = solve(p, "cpsat", time_limit=10, workers=1)
    assert plan.status == Status.OPTIMAL
    assert plan.peak == {"mem": 8}
    assert plan.placements["b"].offset % 4 == 0


def test_capacity_infeasible_is_proven() -> None:
    """Live load fits the capacity (bounds cannot tell) but the fixed buffers force 'a' to
    the top at step 0 and to the bottom at step 2."""
    p = Problem((Buffer("a", 1, 0, 3), Buffer("b", 2, 0, 1, fixed_offset=0), Buffer("c", 2, 2, 3, fixed_offset=1)),
                (Memory("m", capacity=3),))
    plan = solve(p, "cpsat", time_limit=10, workers=1)
    assert plan.status == Status.INFEASIBLE
    assert "CP-SAT proved" in plan.message


def test_feasible_objective_is_not_called_optimal() -> None:
    p = Problem(tuple(Buffer(f"b{i}", 3 + i, i, i + 3) for i in range(5)), (Memory("m", capacity=40),))
    plan = solve(p, "cpsat", time_limit=10, workers=1, objective="feasible")
    assert plan.found and str(plan.objective) == "feasible"
    assert validate(p, plan.placements) == []
    if plan.status == Status.OPTIMAL:  # only allowed when the peak meets the lower bound
        assert plan.peak["m"] <= plan.lower_bound["m"]


def test_hint_respects_symmetry_breaking() -> None:
    """Identical buffers hinted in the 'wrong' order: the hint is reordered, not rejected."""
    p = Problem(tuple(Buffer(f"b{i}", 4, 0, 3, hint_offset=4 * (2 - i)) for i in range(3)))
    part = reduce(p, Objective.default(p)).parts[0]
    pm = PartModel(part, Objective.default(p))
    assert pm.groups == [[0, 1, 2]]
    choices = part.choices({b.id: Placement("mem", b.hint_offset) for b in p.buffers})
    pm.hint(dict(enumerate(choices)))
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    assert solver.solve(pm.model) == cp_model.OPTIMAL  # the hint alone is a complete feasible solution
    assert sorted(solver.value(pm.offset[i]) for i in range(3)) == [0, 1, 2]  # scaled by 4


def test_time_limit_and_progress(shared) -> None:
    """A hard instance: the limit is honoured and progress reports the documented keys."""
    from optplan.formats import read_problem

    problem = read_problem(shared / "minimalloc" / "C.1048576.csv")
    seen = []
    plan = solve(problem, "cpsat", time_limit=4, workers=2, progress=seen.append)
    assert plan.seconds <= 4 * 1.1 + 1
    assert plan.status in (Status.FEASIBLE, Status.OPTIMAL, Status.UNKNOWN)
    for report in seen:
        assert {"best", "bound", "gap", "elapsed"} <= set(report) <= {"best", "bound", "gap", "elapsed", "peak", "lower"}
    if plan.status == Status.FEASIBLE:
        assert plan.gap is not None and plan.gap > 0


@pytest.mark.parametrize("seed", [0, 1])
def test_deterministic_mode_repeats(seed: int) -> None:
    p = Problem(tuple(Buffer(f"b{i}", 1 + (7 * i) % 5, i % 4, i % 4 + 1 + i % 3) for i in range(14)))
    a = solve(p, "cpsat", time_limit=5, workers=2, seed=seed, deterministic=True)
    b = solve(p, "cpsat", time_limit=5, workers=2, seed=seed, deterministic=True)
    assert a.placements == b.placements


def test_a_deterministic_run_stopped_by_the_wall_clock_guard_says_so(shared) -> None:
    """CP-SAT's wall-clock limit in deterministic mode is the run's guard (here 0.05 s from the call,
    inside a 1 deterministic-second budget): a plan it cut short may not repeat, so it is reported."""
    from optplan.core.deadline import Deadline
    from optplan.registry import GUARDED

    p = read_problem(shared / "minimalloc" / "A.1048576.csv")
    plan = solve(p, "cpsat", deadline=Deadline(1, deterministic=True).part(None, wall=0.05), workers=1)
    assert plan.stats["deterministic_wall_capped"] == 1 and GUARDED in plan.message
    assert "deterministic_wall_capped" not in solve(p, "cpsat", time_limit=1, workers=1).stats


def test_objective_beyond_64_bits_is_reported_not_wrapped() -> None:
    """Three memories of odd 3 GB buffers: the lexicographic weights times the peaks exceed int64.
    CP-SAT gets no model (it would silently overflow); auto keeps the heuristic plan."""
    bufs = tuple(Buffer(f"b{i}", 3_000_000_007 + i, i, i + 2) for i in range(4))
    p = Problem(bufs, (Memory("a"), Memory("b"), Memory("c")))
    plan = solve(p, "cpsat", time_limit=10, workers=1)
    assert plan.status == Status.UNKNOWN and "64-bit" in plan.message
    assert solve(p, "auto", time_limit=10, workers=1).found


EXIT_SCRIPT = """
import sys, threading, time
from ortools.sat.python import cp_model
from optplan.core.deadline import Deadline
from optplan.solvers import cpsat
m = cp_model.CpModel()
xs = [m.new_int_var(0, 10 ** 5, f"x{i}") for i in range(2000)]
for a, b in zip(xs, xs[1:]):
    m.add(a + b != 5000)
m.add_all_different(xs)
m.maximize(sum(x * (i % 7) for i, x in enumerate(xs)))
solver = cp_model.CpSolver()
solver.parameters.max_time_in_seconds = 60
deadline = Deadline(60)
threading.Thread(target=cpsat.solve, args=(solver, m, deadline), daemon=True).start()
time.sleep(0.5)
deadline.cancel()  # a signal while auto's race or a portfolio member's CP-SAT runs on a daemon thread
"""


def test_a_cpsat_solve_stopping_at_interpreter_exit_does_not_abort(tmp_path) -> None:
    """CP-SAT told to stop on a daemon thread as the interpreter exits aborted the process ("terminate
    called without an active exception", exit -6: every time with the bare ``solver.solve``); the
    exit now waits for it (``cpsat.solve``)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "exit.py"
    script.write_text(EXIT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "terminate called" not in proc.stderr, (proc.returncode, proc.stderr[-500:])
