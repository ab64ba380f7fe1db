"""optplan.core.native: the search's kernels built ahead of time answer as numba's do, without
numba in the process, without the GIL, and never from other sources than the present ones."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from optplan.core.buffer import Buffer, Memory
from optplan.core.native import NativeKernels
from optplan.core.problem import Problem
from optplan.search import compiled, engine, kernel
from optplan.search.instance import build
from optplan.search.layout import FOUND, LIMIT, table_words
from optplan.search.orderings import NO_TABLE, orderings
from optplan.search.params import ALL_RULES

ROOT = Path(__file__).resolve().parents[1]


def _native():  # type: ignore[no-untyped-def]
    """The search's native module (the install and the conftest's warm-up build it: no module is a failure)."""
    module = compiled.NATIVE.load()
    assert module is not None, f"not built for the present sources: {compiled.NATIVE.path()}"
    return module


def _problem(n: int, seed: int) -> Problem:
    rng = np.random.default_rng(seed)
    buffers = []
    for i in range(n):
        start = int(rng.integers(0, n // 2))
        buffers.append(Buffer(f"b{i}", int(rng.integers(1, 9)) * 16, start, start + int(rng.integers(1, 6))))
    return Problem(tuple(buffers), (Memory("m"),))


def test_the_engine_runs_the_native_kernels_where_they_are_built() -> None:
    assert compiled.kernels.search is _native().search


@pytest.mark.parametrize("seed", range(4))
def test_native_and_numba_search_the_same_tree(seed: int) -> None:
    """Every ordering, at a capacity too tight, the bound and one above: the same status, node count
    and plan from both, with the failed-state table on (its random words drawn alike)."""
    native = _native()
    inst = build(_problem(36, seed), "m", list(_problem(36, seed).units))
    lower = int(inst.size.max())
    for o in orderings(inst, seed)[:6]:
        for cap in (lower - 1, lower + 2, lower + 6):
            outs = []
            for search in (native.search, kernel.search):
                words = table_words(inst.n, int(o.arrays.nsec))
                table = np.zeros(2 + 2 * 64, np.int64)
                zob = np.random.default_rng(seed).integers(-(1 << 62), 1 << 62, (2, words), dtype=np.int64)
                out = np.zeros(inst.n, np.int64)
                status, nodes, forced = search(o.arrays, ALL_RULES, np.int64(cap), np.int64(20_000), np.zeros(1, np.int64),
                                               out, table, zob)
                outs.append((status, nodes, forced, out.tobytes() if status == FOUND else b"", table.tobytes()))
            assert outs[0] == outs[1], (o.name, cap)


def test_the_other_native_kernels_agree_with_numba() -> None:
    native = _native()
    rng = np.random.default_rng(7)
    s0 = rng.integers(0, 50, 200).astype(np.int64)
    s1 = s0 + rng.integers(1, 9, 200).astype(np.int64)
    assert native.count_overlaps(s0, s1) == kernel.count_overlaps(s0, s1)
    for a, b in zip(native.overlap_graph(s0, s1), kernel.overlap_graph(s0, s1)):
        assert np.array_equal(a, b)
    size = rng.integers(1, 100, 200).astype(np.int64)
    one, zero, rank = np.ones(200, np.int64), np.zeros(200, np.int64), np.argsort(-size).astype(np.int64)
    dives = [np.zeros(200, np.int64), np.zeros(200, np.int64)]
    for f, out in zip((native.skyline_dive, kernel.skyline_dive), dives):
        f(size, s0, s1, one, zero, zero, rank, np.int64(60), out)
    assert np.array_equal(*dives)
    src = np.arange(2 + 4 * 8, dtype=np.int64)
    moved = [np.zeros(2 + 4 * 16, np.int64), np.zeros(2 + 4 * 16, np.int64)]
    for f, dst in zip((native.move_table, kernel.move_table), moved):
        f(src, dst)
    assert np.array_equal(*moved)


def test_the_exports_have_the_signatures_numba_compiles_for_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planner run on numba's kernels (a search that backtracks and grows its tables, and the
    dives of a large instance) calls each with the exported signature and no other: a caller
    passing other types would fail on the native module only."""
    from optplan import solve
    from optplan.core.jit import sample_problem
    from optplan.search.params import SearchParams

    for name in compiled.NAMES:
        monkeypatch.setattr(compiled.kernels, name, getattr(kernel, name))
    problem = sample_problem(60, seed=3)
    solve(problem, "search", objective="min-peak", params=SearchParams(table_slots=2, first_limit=4))
    solve(problem, "search", objective="min-peak", params=SearchParams(max_overlap_pairs=-1))
    for name, _, signature in compiled.exports():
        assert [s.args for s in getattr(kernel, name).nopython_signatures] == [signature.args], name


def test_a_native_search_runs_without_the_gil() -> None:
    """Stopped through its flag by another thread: with the GIL held the flag could not be set until
    the node limit (hours here), so the search would not return."""
    native = _native()
    problem = Problem(tuple(Buffer(f"b{i}", 1 + (i * 7) % 13, 0, 10) for i in range(60)), (Memory("m"),))  # all alive
    inst = build(problem, "m", list(problem.units))
    o = orderings(inst, 0)[0]
    stop = np.zeros(1, np.int64)
    got: list[int] = []
    total = int(inst.size.sum())

    def run() -> None:  # a capacity one below the total: infeasible, and a huge tree without the table
        status, _, _ = native.search(o.arrays, ALL_RULES._replace(sections=False, lift=False, valleys=False),
                                     np.int64(total - 1), np.int64(1) << 60, stop, np.zeros(inst.n, np.int64), *NO_TABLE)
        got.append(status)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    time.sleep(0.2)
    stop[0] = 1
    worker.join(30)
    assert got == [LIMIT]


def test_a_search_process_never_imports_numba() -> None:
    """The search at a capacity, in a process of its own: the kernels come from the native module."""
    code = ("import sys; from optplan import solve; from optplan.core.buffer import Buffer, Memory; "
            "from optplan.core.problem import Problem; "
            "p = Problem(tuple(Buffer(f'b{i}', 16 * (1 + i % 5), i // 3, i // 3 + 4) for i in range(60)), (Memory('m', 700),)); "
            "plan = solve(p, 'search', time_limit=20, objective='feasible'); "
            "print(plan.status.value, plan.stats['nodes'] > 0, 'numba' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("OPTPLAN_NO_NATIVE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    status, ran, numba = out.stdout.split()
    assert status in ("FEASIBLE", "OPTIMAL") and (ran, numba) == ("True", "False"), out.stdout  # a plan, kernel runs, no numba


def test_a_module_built_from_other_sources_is_never_loaded(tmp_path: Path) -> None:
    """Built, loaded and run; after its source changes nothing is loaded (the JIT serves), and a
    rebuild replaces the old file."""
    source = tmp_path / "tiny_kernel.py"
    source.write_text("def twice(x):\n    return 2 * x\n")

    def exports():  # type: ignore[no-untyped-def]
        from numba import njit, types

        namespace: dict = {}
        exec(source.read_text(), namespace)  # noqa: S102 - the test's own two lines
        return [("twice", njit(namespace["twice"]).py_func, types.int64(types.int64))]

    built = NativeKernels("optplan_test_native", [str(source)], exports)
    assert built.load() is None
    path = built.build()
    assert built.load() is not None and built.load().twice(21) == 42
    source.write_text("def twice(x):\n    return 3 * x\n")
    assert NativeKernels("optplan_test_native", [str(source)], exports).load() is None
    rebuilt = NativeKernels("optplan_test_native", [str(source)], exports)
    assert rebuilt.build() != path and not path.exists()


def test_engine_kernels_can_be_replaced_for_a_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """The namespace takes a stand-in (tests spy on the search) and gives the original back."""
    original = engine.kernels.search
    monkeypatch.setattr(engine.kernels, "search", lambda *a: (LIMIT, 0, 0))
    assert engine.kernels.search is not original
    monkeypatch.undo()
    assert engine.kernels.search is original


def test_the_core_and_heuristics_native_kernels_are_built_and_agree_with_python() -> None:
    """The validator's sweep and the usage curve's, built ahead of time, against their Python
    form; and every group with a native module has one for its present sources."""
    from optplan.core import jit, sweeps
    from optplan.warmup import groups

    assert {g for g in groups() if g in jit.NATIVE and jit.NATIVE[g].load() is not None} == set(jit.NATIVE), \
        {g: str(n.path()) for g, n in jit.NATIVE.items()}
    validate, plan = jit.NATIVE["validate"].load(), jit.NATIVE["plan"].load()
    rng = np.random.default_rng(3)
    for _ in range(20):
        s0 = rng.integers(0, 30, 40).astype(np.int64)
        s1 = s0 + rng.integers(1, 6, 40).astype(np.int64)
        o0 = rng.integers(0, 200, 40).astype(np.int64)
        o1 = o0 + rng.integers(1, 40, 40).astype(np.int64)
        assert validate.any_overlap(s0, s1, o0, o1) == sweeps.any_overlap(s0, s1, o0, o1)
        assert np.array_equal(plan.highest(s0, s1, o1, np.int64(40)), sweeps.highest(s0, s1, o1, 40))
