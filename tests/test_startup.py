"""Start-up a user does not notice (issue 29): what a command imports, and that ``auto`` on a small
problem stays in its thread. Not timed (the figures are experiments/bench_startup.py's): these check
the causes, each of which cost a visible fraction of a second (numba 0.3 s, OR-Tools with pandas 0.5 s,
a fork 0.1 s)."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest

import optplan
from optplan import registry
from optplan.cli import main
from optplan.core.buffer import Buffer, Memory
from optplan.core.problem import Problem

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numba", "ortools", "pulp", "rich", "scipy", "jsonschema")  # none is needed to import optplan or to read its help
SOLVERS = ("numba", "ortools", "pulp")  # what the commands that plan nothing must not touch
# minimalloc/example.12.csv, shipped in ../shared; written here so that the test needs nothing beside it
EXAMPLE = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n"


def _imported(code: str, *args: str) -> list[str]:
    """The top-level packages of ``HEAVY``, and optplan's exact families, that ``code`` imports in a
    fresh interpreter (run from the repository, so this optplan is the one imported)."""
    probe = ("\nimport sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] in " + repr(HEAVY)
             + " or m in ('optplan.solvers', 'optplan.search')))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", code + probe, *args], env=env, capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    return sorted({m.split(".")[0] if not m.startswith("optplan") else m
                   for m in eval(run.stdout.strip().splitlines()[-1])})  # noqa: S307 - our own probe's list


def _cli(*argv: str) -> str:
    """Code that runs ``optplan argv`` as the command does (``--help`` ends in SystemExit)."""
    return f"from optplan.cli import main\ntry:\n    main({list(argv)!r})\nexcept SystemExit:\n    pass"


def test_import_and_help_load_nothing_heavy() -> None:
    assert _imported("import optplan") == []
    assert _imported("import optplan\nimport sys\nassert not [m for m in sys.modules if m.startswith(('optplan.', 'numpy'))]") == []
    assert _imported(_cli("--help")) == []
    # the command's line of help only: no command's arguments, whose choices import the objectives and numpy
    assert _imported(_cli("--help") + "\nimport sys\nassert not [m for m in sys.modules if m.startswith('numpy')]") == []
    assert _imported(_cli("solve", "--help")) == []


def test_commands_that_plan_nothing_touch_no_solver(tmp_path: Path) -> None:
    """``info``, ``bounds`` and ``validate`` on a small problem: no solver, no numba, no planner family."""
    src, plan = tmp_path / "p.csv", tmp_path / "plan.csv"
    src.write_text(EXAMPLE)
    plan.write_text("id,lower,upper,size,offset\nb1,0,3,4,8\nb2,3,9,4,8\nb3,0,9,4,4\nb4,9,21,4,4\nb5,0,21,4,0\n")
    for argv in (["info", str(src)], ["bounds", str(src)], ["validate", str(src), str(plan)], ["validate", str(src), str(plan), "--json"]):
        loaded = _imported(_cli(*argv))
        assert not set(loaded) & {*SOLVERS, "optplan.solvers", "optplan.search"}, (argv, loaded)
        if "--json" in argv or argv[0] == "validate":
            assert "rich" not in loaded, argv  # plain lines: rich is for tables


def test_a_small_solve_loads_no_exact_stage(tmp_path: Path) -> None:
    """``auto`` (the default) on five buffers, through the API and the command with ``--json``: a
    heuristic reaches the bound, so neither OR-Tools, PuLP nor the search is imported, nor rich."""
    src = tmp_path / "p.csv"
    src.write_text(EXAMPLE)
    api = "import sys\nimport optplan\nfrom optplan.formats import read_problem\nassert optplan.solve(read_problem(sys.argv[1])).status.value == 'OPTIMAL'"
    for code in (api, _cli("solve", str(src), "--json"), _cli("solve", str(src), "--json", "--time-limit", "5")):
        loaded = _imported(code, str(src))
        assert not set(loaded) & {"ortools", "pulp", "rich", "jsonschema", "optplan.solvers", "optplan.search"}, loaded


def test_a_small_solve_loads_no_numba(tmp_path: Path) -> None:
    src = tmp_path / "p.csv"
    src.write_text(EXAMPLE)
    for limit in ((), ("--time-limit", "5")):  # a limit decides whether kernels are compiled: not needed here
        loaded = _imported(_cli("solve", str(src), "--json", *limit))
        assert not set(loaded) & {"numba", "scipy"}, loaded


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What starts a thread or a process from here on (``threading.Thread.start``, ``os.fork``)."""
    started: list[str] = []
    start, fork = threading.Thread.start, os.fork
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(f"thread {self.name}") or start(self))
    monkeypatch.setattr(os, "fork", lambda: started.append("fork") or fork())
    return started


def _small(n: int = 5) -> Problem:
    return Problem(tuple(Buffer(f"b{i}", 4 * (1 + i % 3), i, i + 3) for i in range(n)))


@pytest.mark.parametrize("options", [{}, {"time_limit": 5.0}, {"time_limit": 5.0, "objective": "feasible"}, {"deterministic": True}])
def test_auto_on_a_small_problem_starts_no_thread_or_process(monkeypatch: pytest.MonkeyPatch, options: dict) -> None:
    """No pool for the heuristics, no search forked beside them (``SearchRace``: with a time limit on
    one memory, and at a capacity in feasibility mode), whatever ``workers``."""
    problem = _small() if options.get("objective") != "feasible" else _small().with_capacity(24)
    started = _spied(monkeypatch)
    threads = threading.active_count()
    plan = registry.solve(problem, "auto", workers=2, **options)
    assert plan.status.value == "OPTIMAL" and plan.message.endswith("reached the lower bound")
    assert started == [] and threading.active_count() == threads and multiprocessing.active_children() == []


def test_the_first_look_gives_the_heuristics_stages_answer() -> None:
    """Where a heuristic reaches the bound on a small problem, auto's first look (in its thread) and
    its heuristics' stage (a pool, all of them) answer alike: the same plan, message and warm start,
    deterministic mode too; where none does, the first look leaves the problem to the pipeline."""
    from optplan.portfolio import PortfolioParams

    no_look = PortfolioParams(quick_units=0)

    problems = [_small(n) for n in (3, 8, 17)] + [
        Problem(tuple(Buffer(f"b{i}", 8 * (1 + (i * 7) % 5), (i * 3) % 11, (i * 3) % 11 + 2 + i % 4) for i in range(24)),
                (Memory("fast", 64), Memory("slow")))]
    for problem in problems:
        for options in ({"workers": 1}, {"workers": 2}, {"deterministic": True, "seed": 1}):
            first = registry.solve(problem, "auto", **options)
            stage = registry.solve(problem, "auto", params=no_look, **options)  # no first look: the pipeline as before it
            settled = stage.message.endswith("reached the lower bound")  # by a heuristic
            assert first.status == stage.status and first.message.endswith("reached the lower bound") == settled
            if settled:
                assert first.message == stage.message and dict(first.placements) == dict(stage.placements), (problem, options)
                assert first.stats["warm_start"] == stage.stats["warm_start"]


def test_the_first_look_never_starts_numba() -> None:
    """A problem of 200 units that no heuristic of the first look settles: they all run (past the
    heuristics' Python budget, which would start numba for the later passes) and numba stays out of
    the process, as it would for the search built ahead of time afterwards."""
    code = ("from optplan.core.buffer import Buffer, Memory\n"
            "from optplan.core.deadline import Deadline\n"
            "from optplan.core.objective import Objective\n"
            "from optplan.core.problem import Problem\n"
            "from optplan.heuristics import run as stage\n"
            "from optplan.portfolio.quick import quick_look\n"
            "from optplan.portfolio import PortfolioParams\n"
            "p = Problem(tuple(Buffer(f'b{i}', 16 * (1 + (i * 7919) % 13), (i * 37) % 150, (i * 37) % 150 + 1 + (i * 13) % 29)"
            " for i in range(200)), (Memory('m'),))\n"
            "look = quick_look(p, Deadline(30.0), 0, Objective(), params=PortfolioParams(quick_seconds=30.0))\n"
            "assert look is None, look.message\n")
    imported = _imported(code)
    assert "numba" not in imported and "optplan.search" not in imported, imported


def test_version_has_one_source(capsys: pytest.CaptureFixture) -> None:
    """``optplan --version`` prints ``optplan.__version__``, which the package's metadata is built from."""
    with pytest.raises(SystemExit) as end:
        main(["--version"])
    assert end.value.code == 0 and capsys.readouterr().out == f"optplan {optplan.__version__}\n"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"] and "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "optplan.__version__"}


def test_the_public_names_load_on_first_use() -> None:
    from optplan.core.problem import Problem as Defined
    from optplan.registry import solve

    assert optplan.Problem is Defined and optplan.solve is solve
    assert set(optplan.__all__) <= set(dir(optplan)) and sorted(optplan.__all__) == sorted(optplan._HOMES)
    assert all(callable(getattr(optplan, name)) for name in optplan.__all__)
    with pytest.raises(AttributeError, match="no attribute 'planners'"):
        optplan.planners  # noqa: B018 - the attribute is the test


def test_every_planner_outside_the_heuristics_has_its_home() -> None:
    """``registry.HOMES`` (how ``get`` finds a planner without importing every family) names each
    planner outside the heuristics, with the package that registers it."""
    outside = {n: registry.get(n).__wrapped__.__module__ for n in registry.names()  # type: ignore[attr-defined]
               if not registry.get(n).__wrapped__.__module__.startswith("optplan.heuristics.")}  # type: ignore[attr-defined]
    assert set(outside) == set(registry.HOMES)
    for name, module in outside.items():
        assert module == registry.HOMES[name] or module.startswith(registry.HOMES[name] + "."), name


def _run(code: str, tmp: Path | None = None) -> str:
    """``code``'s standard output in a fresh interpreter (this optplan, and ``tmp`` on the path)."""
    path = os.pathsep.join(str(p) for p in (ROOT, tmp) if p is not None)
    run = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=path), capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip()


def test_cp_sat_plans_without_importing_pandas() -> None:
    """OR-Tools' CP-SAT module imports pandas at its top (0.45 s of its 1.0 s in a fresh process);
    optplan loads it beside a stand-in, so a CP-SAT plan costs no pandas."""
    out = _run("import sys\nfrom optplan.core.buffer import Buffer, Memory\nfrom optplan.core.problem import Problem\n"
               "from optplan.registry import solve\n"
               "p = Problem((Buffer('a', 4, 0, 2), Buffer('b', 4, 1, 3), Buffer('c', 8, 2, 4)), (Memory('m'),))\n"
               "plan = solve(p, 'cpsat', time_limit=30)\n"
               "print(plan.status.value, plan.peak['m'], 'pandas' in sys.modules, 'ortools.sat.python.cp_model' in sys.modules)")
    assert out == "OPTIMAL 12 False True"


def test_cp_sat_pandas_helpers_work_after_the_stand_in() -> None:
    """The module's pandas helpers use the real pandas, imported at their first use: a caller that
    uses them in the same process sees no difference."""
    out = _run("import sys\nfrom optplan.core.cp_sat import cp_model\nprint('pandas' in sys.modules)\n"
               "import pandas as pd\nm = cp_model.CpModel()\n"
               "xs = m.new_int_var_series('x', pd.Index(range(3)), 0, 5)\n"
               "print(type(xs).__name__, cp_model.pd.Series is pd.Series)")
    assert out.splitlines() == ["False", "Series True"]


def test_cp_sat_imports_as_usual_where_the_stand_in_does_not_do(tmp_path: Path) -> None:
    """A module that needs more of pandas at its import than class names (another OR-Tools version)
    is imported as usual, with the real pandas: the stand-in never leaks."""
    (tmp_path / "needs_pandas.py").write_text("import pandas.api.types as t\nINTEGER = t.is_integer(3)\n")
    out = _run("import sys\nfrom optplan.core import cp_sat\nm = cp_sat.load('needs_pandas')\n"
               "import pandas\nprint(m.INTEGER, type(sys.modules['pandas']).__name__, pandas.__name__)", tmp_path)
    assert out == "True module pandas"
