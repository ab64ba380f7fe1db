"""optplan.core.jit: numba never compiles inside a time limit; without compiled kernels a planner keeps its limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from gen_instances import random_spans

from optplan.core import jit
from optplan.core.deadline import Deadline, running
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.formats import read_placements, read_problem, write_problem

ROOT = Path(__file__).resolve().parents[1]


def _python(code: list[str], cache: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache is not None:  # a fresh install's: nothing compiled, nothing built ahead of time either
        env["NUMBA_CACHE_DIR"] = str(cache)
        env["OPTPLAN_NO_NATIVE"] = "1"
    return subprocess.run([sys.executable, *code], env=env, capture_output=True, text=True, timeout=timeout)


def test_an_empty_cache_is_known_without_importing_numba(tmp_path: Path) -> None:
    """A fresh install without its built modules: every group is "not compiled", and the note's
    cache directory found, without importing numba (1-1.5 s at load 4 of a 3 s limit)."""
    code = ["-c", "import sys; from optplan.warmup import groups; from optplan.core import jit; groups(); "
            "print([jit.compiled(g) for g in jit.GROUPS], 'numba' in sys.modules, jit.cache_dir())"]
    out = _python(code, cache=tmp_path).stdout.split(" ", len(jit.GROUPS) + 1)
    assert " ".join(out[:-1]) == str([False] * len(jit.GROUPS)) + " False"
    assert out[-1].strip().startswith(str(tmp_path))


def test_the_cache_precheck_wants_an_index_of_every_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``_surely_uncached`` says "not compiled" only where some kernel of the group has no index file
    in the directory numba would use ($NUMBA_CACHE_DIR here); with one for each, numba's index decides."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    module, names = jit.GROUPS["search"]
    monkeypatch.delitem(sys.modules, module, raising=False)
    cache = Path(jit._cache_path(module) or "")
    assert cache.parent == tmp_path
    assert jit._surely_uncached("search")
    cache.mkdir()
    for name in names[:-1]:
        (cache / f"kernel.{name}-10.py311.nbi").touch()
    assert jit._surely_uncached("search")
    (cache / f"overlaps.{names[-1]}-3.py311.nbi").touch()
    assert not jit._surely_uncached("search")


def test_warmup_compiles_every_group() -> None:
    """The conftest warmed up: every kernel named in GROUPS exists and is compiled."""
    for group, (module, names) in jit.GROUPS.items():
        assert all(callable(k) for k in jit._kernels(group)), (module, names)
        assert jit.compiled(group), group


def test_compiled_reads_numbas_disk_cache(tmp_path: Path) -> None:
    """In a fresh process nothing is loaded: ``compiled`` reads numba's on-disk index, True for the
    warm cache and False for an empty one (so numba's internals did not move under jit._cached)."""
    code = ["-c", "from optplan.core import jit; from optplan.warmup import groups; print(all(jit.compiled(g) for g in groups()))"]
    assert _python(code).stdout.strip() == "True"
    assert _python(code, cache=tmp_path).stdout.strip() == "False"


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], float]]:
    """jit's per-process decisions reset, nothing compiled, child compiles recorded (not run)."""
    calls: list[tuple[list[str], float]] = []
    monkeypatch.setattr(jit, "_usable", {})
    monkeypatch.setattr(jit, "_tried_child", False)
    monkeypatch.setattr(jit, "compiled", lambda group: False)
    monkeypatch.setattr(jit, "compile_in_child", lambda groups, deadline: calls.append((groups, deadline.left())) or False)
    return calls


def _decide(deadline: Deadline) -> list[str]:
    """Every group decided as a planner running on ``deadline`` asks for it (``not_compiled``)."""
    with running(deadline):
        return jit.not_compiled()


def test_the_gate_compiles_only_without_a_wall_clock_limit(fresh: list) -> None:
    assert _decide(Deadline(None)) == []  # no limit: compile where first used, counted in the plan's seconds
    jit._usable.clear()
    assert _decide(Deadline(5.0, deterministic=True)) == []  # the answer must not depend on the cache
    jit._usable.clear()
    assert _decide(Deadline(5.0)) == list(jit.GROUPS) and fresh == []  # too short to compile in: run without
    assert "optplan warmup" in jit.note()[0]  # type: ignore[index]


def test_the_gate_compiles_in_a_child_when_half_the_limit_allows(fresh: list) -> None:
    _decide(Deadline(2 * jit.COMPILE_MIN_SECONDS + 10))
    assert [g for g, _ in fresh] == [list(jit.GROUPS)]
    assert jit.COMPILE_MIN_SECONDS <= fresh[0][1] <= jit.COMPILE_MIN_SECONDS + 5  # half the time left
    assert jit.not_compiled() == list(jit.GROUPS)  # the child did not finish (it was not run)
    _decide(Deadline(1000.0))
    assert len(fresh) == 1  # tried once per process


def test_the_gate_uses_what_is_compiled(fresh: list, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jit, "compiled", lambda group: group == "validate")
    assert sorted(_decide(Deadline(5.0))) == ["heuristics", "plan", "search"]


def test_the_gate_decides_a_group_when_it_is_first_asked_for(fresh: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lazily, per group: a run that never asks for a group's kernels leaves it undecided (numba's
    cache is not even looked at), and the note names only the groups that ran without."""
    looked: list[str] = []
    monkeypatch.setattr(jit, "compiled", lambda group: looked.append(group) or group != "search")
    with running(Deadline(5.0)):
        assert jit.usable("heuristics") and not jit.usable("search")
    assert looked == ["heuristics", "search"]
    assert jit.note()[1]["not_compiled"] == ["search"]  # type: ignore[index]
    assert not jit.usable("search")  # outside a planner the run's decision holds: a report must not compile
    assert jit.usable("plan")  # never asked for under a limit: compiled where used, as outside any planner
    with running(Deadline(None)):
        assert jit.usable("search")  # no limit: compiled where first used
    assert looked == ["heuristics", "search"]


def _generated(n: int) -> Problem:
    """``gen_instances.random_spans`` (experiments/): ``n`` buffers, random lifetimes and sizes."""
    return random_spans(n, seed=1, sizes=512, life=30)


@pytest.mark.parametrize("name", ["auto", "search"])
def test_a_first_run_keeps_its_time_limit_without_compiling(tmp_path: Path, name: str) -> None:
    """An empty numba cache (a fresh install) and a 3 s limit: nothing is compiled (it would take a
    minute of CPU), the plan comes on time from the pure-Python heuristics and validator, is valid,
    and says how to compile."""
    problem = _generated(1000)
    src, out = tmp_path / "p.json", tmp_path / "plan.json"
    write_problem(problem, src)
    proc = _python(["-m", "optplan.cli", "solve", str(src), "--planner", name, "--time-limit", "3", "--json", "-o", str(out)],
                   cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["seconds"] <= 3 + 1
    # the groups it needed and ran without (the validator's sweep runs in Python at this size anyway)
    assert {"heuristics", "search"} <= set(plan["stats"]["jit"]["not_compiled"]) <= set(jit.GROUPS)
    assert "numba kernels not compiled" in plan["message"]
    assert not list((tmp_path / "cache").rglob("*.nbc"))  # nothing was compiled
    assert validate(problem, read_placements(out, read_problem(src))) == []


def test_compare_says_once_that_it_ran_without_kernels(tmp_path: Path) -> None:
    """``compare``'s table shows no plan messages: with an empty cache it prints the note once."""
    src = tmp_path / "p.json"
    write_problem(_generated(3000), src)  # past what runs in Python before numba pays (heuristics.kernels)
    proc = _python(["-m", "optplan.cli", "compare", str(src), "--time-limit", "3", "--planners", "naive,greedy-size"],
                   cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("numba kernels not compiled (") == 1 and "`optplan warmup`" in proc.stdout


def test_key_cache_notices_a_change_in_a_called_file(tmp_path: Path) -> None:
    """A kernel calling a kernel of another file: after that file changes, a new process compiles
    anew (keyed by the whole call graph); numba alone would load the stale machine code."""
    (tmp_path / "callee.py").write_text("from numba import njit\n@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    (tmp_path / "caller.py").write_text(
        "import os\nfrom optplan.core import jit\n"
        "jit.key_cache(__file__, [os.path.join(os.path.dirname(__file__), 'callee.py')])\n"
        "from numba import njit\nfrom callee import f\n"
        "@njit(cache=True)\ndef g(x):\n    return f(x) * 10\n")

    def run() -> str:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
        env.pop("NUMBA_CACHE_DIR", None)
        return subprocess.run([sys.executable, "-c", "import caller; print(caller.g(1))"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300).stdout.strip()

    assert run() == "20"
    assert run() == "20"  # from the cache
    (tmp_path / "callee.py").write_text("from numba import njit\n@njit(cache=True)\ndef f(x):\n    return x + 2\n")
    assert run() == "30"


def test_loading_kernels_skips_numbas_blas_probe():
    """Loading the search's kernels does not import scipy.linalg (numba's BLAS probe, 0.3-0.9 s of
    every such process), and the probe is put back for other numba code in the process."""
    pytest.importorskip("scipy")  # without SciPy there is no probe to skip
    code = ("import sys; from optplan.search import engine; engine.ensure_compiled(); "
            "import numba.np.linalg as la; print('scipy.linalg' in sys.modules, la.ensure_blas.__name__)")
    out = _python(["-c", code])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "ensure_blas"]
