"""The life of a solve: signals keep the best plan, children and temporary directories do not outlive optplan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from gen_instances import random_spans

from optplan import registry
from optplan.core.deadline import Deadline
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.formats import read_placements, read_problem

ROOT = Path(__file__).resolve().parents[1]
STARTUP_CPU = 2.5  # CPU seconds to import optplan and read minimalloc/D (measured 2.1 s)


def _start(args: list[str], tmp: Path) -> subprocess.Popen:
    """``optplan`` in a child with SIGINT at its default (a background job's children ignore it)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp))
    return subprocess.Popen([sys.executable, "-m", "optplan.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_until_solving(proc: subprocess.Popen, child: str | None, timeout: float = 120.0) -> list:
    """Until the planner's child process ``child`` runs (or, without one, the process has used
    a second of CPU beyond its start-up); returns all its descendants."""
    me = psutil.Process(proc.pid)
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        assert proc.poll() is None, proc.communicate()
        kids = me.children(recursive=True)
        if child is None and sum(me.cpu_times()[:2]) > STARTUP_CPU + 1.0:
            return kids
        if child is not None and any(child in " ".join(k.cmdline()) for k in kids if k.is_running()):
            return kids
        time.sleep(0.05)
    raise AssertionError("the planner never started")


def _gone(procs: list) -> bool:
    _, alive = psutil.wait_procs(procs, timeout=3.0)
    return not alive


@pytest.mark.parametrize("planner, sig, child", [
    ("search", signal.SIGINT, None),
    ("auto", signal.SIGTERM, None),
    ("milp-cbc", signal.SIGTERM, "cbc"),
    ("milp-highs", signal.SIGINT, "highs_child"),
])
def test_a_signal_keeps_the_best_plan_and_leaves_nothing_behind(shared, tmp_path, planner, sig, child) -> None:
    if planner == "milp-highs":
        pytest.importorskip("highspy")
    src = shared / "minimalloc" / "D.1048576.csv"  # min-peak is never proven within the limit
    out, tmp = tmp_path / "plan.csv", tmp_path / "tmp"
    tmp.mkdir()
    proc = _start(["solve", str(src), "--planner", planner, "--time-limit", "120", "-o", str(out)], tmp)
    kids = _wait_until_solving(proc, child)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, stderr
    assert "interrupted" in stderr
    problem = read_problem(src)
    assert validate(problem, read_placements(out, problem)) == []
    assert "FEASIBLE" in stdout or "OPTIMAL" in stdout
    assert _gone(kids), [k.cmdline() for k in kids if k.is_running()]
    assert list(tmp.iterdir()) == []  # temporary directories removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.csv", "tmp"]  # no stray partial file


def _signal_cbc(shared: Path, tmp_path: Path, signals: int, moment: float | None) -> tuple[subprocess.Popen, str, list]:
    """``optplan solve`` minimalloc/D with ``milp-cbc`` (30 s, TMPDIR a fresh ``tmp_path/tmp``),
    sent ``signals`` SIGINTs (0.05 s apart: two sent at once are delivered once) ``moment`` seconds
    after its start, or once CBC runs (None). Returns the process, its stderr, and the children
    seen at the signal."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _start(["solve", str(shared / "minimalloc" / "D.1048576.csv"), "--planner", "milp-cbc",
                   "--time-limit", "30", "-o", str(tmp_path / "plan.json")], tmp)
    if moment is None:
        kids = _wait_until_solving(proc, "cbc")
    else:
        time.sleep(moment)
        kids = psutil.Process(proc.pid).children(recursive=True)
    for n in range(signals):
        if n:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    return proc, stderr, kids


def _left_behind(tmp_path: Path, kids: list) -> list:
    """Files in the temporary directory, children that outlived optplan, and any process still
    using a file there (a child started after the signal)."""
    tmp = str(tmp_path / "tmp")
    users = [p for p in psutil.process_iter(["cmdline"]) if tmp in " ".join(p.info["cmdline"] or [])]
    # a child killed as optplan left may take a moment to go (the kill is sent, not waited for, on
    # the fast exit): one still running after _gone's wait was left behind (CBC runs for 30 s)
    return (sorted(p.name for p in (tmp_path / "tmp").iterdir()) + [k.pid for k in kids if not _gone([k])]
            + [p.pid for p in users if not _gone([p])])


def test_a_second_sigint_during_cbc_exits_at_once_writes_nothing_and_leaves_no_temp_dir(shared, tmp_path) -> None:
    """Issue 30 item 4: the fast exit of a second signal (no ``finally`` runs) removed neither
    CBC's ``optplan-cbc-*`` directory (model.mps, start.mst, cbc.log) nor, before that, the child."""
    proc, _, kids = _signal_cbc(shared, tmp_path, 2, None)
    assert proc.returncode == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]  # no plan written
    assert _left_behind(tmp_path, kids) == []


@pytest.mark.parametrize("signals", [1, 2])
@pytest.mark.parametrize("moment", [3.0, 6.0])
def test_milp_cbc_signalled_at_any_moment_exits_cleanly(shared, tmp_path, moment: float, signals: int) -> None:
    """Issue 30 items 3-4: signalled while it reads, finds its warm start, builds or writes the
    model or runs CBC (which of these at a given moment depends on the machine), milp-cbc exits 130
    with a valid plan or nothing, leaving no partial or temporary file and no child. A cancel
    between the warm start and CBC's launch crashed it (exit 1, no plan)."""
    proc, stderr, kids = _signal_cbc(shared, tmp_path, signals, moment)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and ("interrupted" in stderr or signals == 2), stderr  # the fast exit says nothing
    plan = tmp_path / "plan.json"
    if plan.exists():  # (two signals: written in full before the second came)
        problem = read_problem(shared / "minimalloc" / "D.1048576.csv")
        assert validate(problem, read_placements(plan, problem)) == []
    assert {p.name for p in tmp_path.iterdir()} <= {"plan.json", "tmp"}  # no partial file
    assert _left_behind(tmp_path, kids) == []


def test_deadline_parts_charge_their_parents_and_cancel_reaches_every_part() -> None:
    d = Deadline(10.0, deterministic=True)
    part = d.share(0.5)
    assert part.left() == pytest.approx(5.0)
    part.part(1.0).spend(0.75)
    assert d.left() == pytest.approx(9.25) and part.left() == pytest.approx(4.25)
    stopped = []
    with part.on_cancel(lambda: stopped.append(1)):
        d.cancel()
    assert stopped == [1] and part.expired() and part.cancelled == "interrupted"
    free = Deadline(None)
    assert not free.limited and free.left() == float("inf") and not free.share(0.1).limited
    with pytest.raises(ValueError):
        Deadline(float("nan"))


def _generated(n: int, seed: int = 0) -> Problem:
    """``gen_instances.random_spans`` (experiments/): ``n`` buffers, random lifetimes and sizes."""
    return random_spans(n, seed)


@pytest.mark.parametrize("name", ["search", "milp-cbc", "hill-climb", "cpsat", "auto"])
def test_time_limits_hold_on_a_big_generated_instance(name: str) -> None:
    """1,000 buffers, 2 s: every planner returns about on time, with a valid plan (the slack is for a
    loaded CI machine; experiments/bench_time_limits.py measures the overruns). The MIP would take
    longer than that to build, so it is not built, and the plan says so."""
    p = _generated(1000)
    t0 = time.perf_counter()
    plan = registry.solve(p, name, time_limit=2.0)
    assert time.perf_counter() - t0 <= 2.0 + 1.0 + 4.0
    if name == "cpsat":  # building its model takes most of the 2 s: a plan is not promised, the truth is
        assert plan.found or "time limit reached" in plan.message
    else:
        assert plan.found
    if plan.found:
        assert validate(p, plan.placements) == []
    if name == "milp-cbc":
        assert "model_not_built" in plan.stats and "model not built" in plan.message


def test_cpsat_deterministic_runs_repeat_on_a_hard_instance(shared) -> None:
    """Issue 19 item 7: minimalloc/D, seed 1, gave two different peaks. (At this budget, 0.1 of
    CP-SAT's deterministic second, the answer may be no plan; it must be the same one.)"""
    p = read_problem(shared / "minimalloc" / "D.1048576.csv")
    a, b = (registry.solve(p, "cpsat", time_limit=1.0, workers=2, seed=1, deterministic=True) for _ in range(2))
    assert (a.status, a.peak, a.placements) == (b.status, b.peak, b.placements)
    assert "deterministic_wall_capped" not in a.stats


def test_pure_python_passes_stop_at_their_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Passes that run long in Python poll the planner's deadline (deadline.current()) and say what
    was cut: first fit's later orders, and while the kernels are not compiled the reference packer
    and the staging heuristics' packing. Without the polling each would return a plan."""
    from optplan.core import jit

    p = _generated(4000)
    plan = registry.solve(p, "first-fit-orders", time_limit=1e-3)
    assert plan.found and plan.stats["cut"] == "orders area, length, start not tried"
    monkeypatch.setattr(jit, "_usable", {})
    monkeypatch.setattr(jit, "compiled", lambda group: group != "heuristics")  # as if never compiled
    plan = registry.solve(p, "greedy-size", time_limit=1e-3)
    assert plan.status.value == "UNKNOWN" and plan.stats["cut"] == f"placing {registry.POLL_EVERY} of 4000 units"
    assert plan.stats["jit"]["not_compiled"] == ["heuristics"]
    plan = registry.solve(p, "vela-staging", time_limit=1e-3)  # (compiled, it packs in one kernel call)
    assert plan.status.value == "UNKNOWN" and plan.stats["cut"] == "packing 'mem'" and "time limit reached" in plan.message


def test_auto_without_kernels_starts_no_heuristic_after_its_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """No compiled kernels (pure-Python packing) and a limit too short for the heuristics: the first
    runs (auto needs a plan), the others are not started and the plan lists them. (With compiled
    kernels every one runs: auto is never worse than any of them, test_portfolio.)"""
    from optplan.core import jit

    monkeypatch.setattr(jit, "_usable", {})
    monkeypatch.setattr(jit, "compiled", lambda group: group != "heuristics")
    plan = registry.solve(_generated(4000), "auto", time_limit=1e-3, workers=1)
    assert plan.found and validate(_generated(4000), plan.placements) == []
    skipped = plan.stats["heuristics_not_run"]
    assert skipped and all(why.startswith("not run: time limit reached") or why.startswith("skipped") for why in skipped.values())


def _two_memories(n: int) -> Problem:
    from optplan.core.buffer import Memory

    p = _generated(n)
    return Problem(p.buffers, (Memory("fast", 4 * max(b.size for b in p.buffers)), Memory("slow")))


def test_heuristics_apart_hand_back_the_plans_made_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heuristic stage in a forked member (``apart``) returns the plans (memories and offsets,
    buffer for buffer) and the reasons that running them here gives."""
    from optplan.heuristics import run

    p = _two_memories(300)
    params = run.StageParams(apart_units=0)
    assert not run.apart(p, Deadline(60.0))  # 300 units: here, by default
    assert run.apart(p, Deadline(60.0), params) and not run.apart(p, Deadline(None), params)
    assert not run.apart(p, Deadline(60.0, True), params)
    apart, apart_errors = run.run_heuristics(p, Deadline(60.0), improve=False, params=params)
    here, errors = run._run(p, Deadline(60.0), improve=False)
    assert [q.planner for q in apart] == [q.planner for q in here] and len(here) > 5
    assert {q.planner: q.placements for q in apart} == {q.planner: q.placements for q in here}
    assert {q.planner: (q.status, q.peak, q.objective_value) for q in apart} == \
        {q.planner: (q.status, q.peak, q.objective_value) for q in here}
    assert apart_errors == errors


def test_a_heuristic_pass_that_outlasts_the_deadline_is_killed_and_the_earlier_plans_kept(monkeypatch) -> None:
    """Issue 19 §2: a compiled pass cannot be interrupted. A pass that ignores its deadline (here
    position-greedy sleeping for 120 s, as a compiled pass on a huge problem at load) is killed with
    the heuristics' process at the deadline; the plans finished before it (naive's) come back, and
    ``auto`` answers with the best of them, validated, and says which heuristic was stopped."""
    from functools import partial

    from optplan.heuristics import run
    from optplan.portfolio import pipeline

    solve = registry.solve

    def slow(problem, name, **options):
        if name == "position-greedy":
            time.sleep(120)
        return solve(problem, name, **options)

    p = _generated(400)
    heuristics_apart = partial(run.run_heuristics, params=run.StageParams(apart_units=0))
    monkeypatch.setattr(pipeline, "run_heuristics", heuristics_apart)  # auto's heuristics, below, apart too
    monkeypatch.setattr(run, "heuristic_names", lambda: ["naive", "position-greedy", "greedy-size"])
    monkeypatch.setattr(registry, "solve", slow)
    plans, errors = heuristics_apart(p, Deadline(3.0), workers=1, improve=False)
    assert [q.planner for q in plans] == ["naive"] and validate(p, plans[0].placements) == []
    stopped = "time limit reached before it ended (stopped with the heuristics' process)"
    assert errors == {"position-greedy": stopped, "greedy-size": stopped}

    plan = solve(p, "auto", time_limit=3.0, workers=1)
    assert plan.found and validate(p, plan.placements) == []
    assert plan.stats["warm_start"] == "naive" and plan.stats["heuristics_not_run"]["position-greedy"] == stopped
    assert plan.objective_value <= plans[0].objective_value


def test_a_deterministic_deadline_still_knows_the_wall_time_of_its_limit() -> None:
    """``wall_left``: the guard that keeps a deterministic run near its limit's wall time counts from
    the root's making, for every part (whatever deterministic seconds they were given) unless a part
    sets a sooner one, and is 0 once cancelled; a deadline without a limit has no end."""
    root = Deadline(100.0, deterministic=True, guard=100.0)  # (the CLI's: guard_seconds(100) = 400)
    part = root.part(5.0)
    part.spend(5.0)
    assert part.expired() and 90.0 < part.wall_left() <= 100.0 and root.wall_left() >= part.wall_left()
    assert 0.0 < root.part(None, wall=1.0).wall_left() <= 1.0 and root.part(None, wall=500.0).wall_left() <= 100.0
    assert Deadline(None, deterministic=True).part(1.0).wall_left() == float("inf")
    assert not root.guard_hit
    root.cancel("interrupted")
    assert part.wall_left() == 0.0


def test_past_its_wall_guard_a_deterministic_deadline_is_over_and_says_so() -> None:
    """Deterministic seconds left, but the limit's wall time is up: ``left()`` is 0 (every loop that
    polls it stops) and the root records it (the registry then reports that the answer may not
    repeat); ``guard=inf``: no guard. By default the guard sits at ``guard_seconds`` of the limit."""
    from optplan.core.deadline import guard_seconds

    root = Deadline(100.0, deterministic=True)
    assert 399.0 < root.wall_left() <= guard_seconds(100.0) == 400.0 and guard_seconds(1.0) == 11.0
    early = root.part(10.0, wall=0.0)
    assert early.left() == 0.0 and early.expired() and root.guard_hit
    assert root.left() == pytest.approx(100.0)  # the root's own guard is not reached
    free = Deadline(1.0, deterministic=True, guard=float("inf"))
    assert free.wall_left() == float("inf") and free.left() == 1.0 and not free.guard_hit


@pytest.mark.parametrize("names", [["naive", "position-greedy"], ["naive", "peak-stack", "position-greedy"]])
def test_when_no_heuristic_finishes_in_time_one_runs_here_to_its_end(monkeypatch, names: list[str]) -> None:
    """A loaded machine can leave the heuristics' process no time to finish even naive (auto then
    answered UNKNOWN on idealloc/S_1): peak-stack (the first constructive heuristic where it is not
    offered) then runs here, whatever the time, and its plan is the one returned; the others are
    reported as stopped."""
    import os

    from optplan.heuristics import run

    solve, parent = registry.solve, os.getpid()

    def stuck(problem, name, **options):
        if os.getpid() != parent:  # every pass in the heuristics' process outlasts the deadline
            time.sleep(120)
        return solve(problem, name, **options)

    p = _generated(400)
    monkeypatch.setattr(run, "heuristic_names", lambda: names)
    monkeypatch.setattr(registry, "solve", stuck)
    plans, errors = run.run_heuristics(p, Deadline(1.0), workers=2, improve=False, params=run.StageParams(apart_units=0))
    here = "peak-stack" if "peak-stack" in names else "naive"
    assert [q.planner for q in plans] == [here] and plans[0].found and validate(p, plans[0].placements) == []
    stopped = "time limit reached before it ended (stopped with the heuristics' process)"
    assert errors == {n: stopped for n in names if n != here}
