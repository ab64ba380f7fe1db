"""The heuristics' kernels place exactly as the pure-Python references, plan for plan, in both their
forms (the Python functions and numba's compilation of them)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from optplan.core.buffer import Buffer, Gap, Memory, RelativePlacement
from optplan.core.deadline import Deadline
from optplan.core.errors import ProblemError
from optplan.core.objective import Objective
from optplan.core.problem import Problem
from optplan.heuristics import compiled, orders, skyline, staging
from optplan.heuristics.arrays import arrays, indices
from optplan.heuristics.banked_greedy import banked_greedy, banked_greedy_reference
from optplan.heuristics.first_fit_orders import ORDERS as ORDERS_FFO
from optplan.heuristics.first_fit_orders import first_fit_orders
from optplan.heuristics.packer import greedy, greedy_reference, greedy_scored, score
from optplan.heuristics.recycle import recycle, recycle_reference
from optplan.heuristics.recycle_heap import recycle as recycle_kernel
from optplan.heuristics.skyline import banked
from optplan.heuristics.tree_packer import pack, pack_below

ORDERS = [orders.by_size, orders.by_size_stable, orders.by_start, orders.by_conflicts, orders.by_breadth,
          orders.by_area, orders.by_length]


@st.composite
def problems(draw, max_buffers: int = 24, fixed: bool = True) -> Problem:
    """Random problems over the whole model: one or two memories (capacities, alignment),
    allowed/blocked/fixed memories, fixed offsets (unless not ``fixed``: the compiled recycle and
    banked-greedy leave pinned units to the reference), buffer alignment, gaps with and without
    windows, relative placements and zero-size buffers."""
    names = ["fast", "slow"][:draw(st.integers(1, 2))]
    memories = tuple(Memory(n, capacity=draw(st.one_of(st.none(), st.integers(8, 60))),
                            alignment=draw(st.sampled_from([1, 1, 2]))) for n in names)
    buffers = []
    for i in range(draw(st.integers(1, max_buffers))):
        start = draw(st.integers(0, 12))
        end = start + draw(st.integers(1, 8))
        size = draw(st.integers(0, 12))
        kw: dict = {}
        kind = draw(st.sampled_from(["plain", "plain", "plain", "align", "allowed", "blocked", "gaps"] + ["fixed"] * fixed))
        if kind == "align":
            kw["alignment"] = draw(st.sampled_from([2, 3, 4]))
        elif kind == "allowed":
            kw["allowed"] = (draw(st.sampled_from(names)),)
        elif kind == "blocked" and len(names) > 1:
            kw["blocked"] = (draw(st.sampled_from(names)),)
        elif kind == "fixed":
            kw["fixed_memory"] = draw(st.sampled_from(names))
            kw["fixed_offset"] = draw(st.integers(0, 20)) * 2
        elif kind == "gaps" and end - start >= 3 and size >= 2:
            g0 = draw(st.integers(start + 1, end - 2))
            window = draw(st.one_of(st.none(), st.just((0, size // 2)), st.just((1, size))))
            kw["gaps"] = (Gap(g0, draw(st.integers(g0 + 1, end - 1)), window),)
        buffers.append(Buffer(f"b{i}", size, start, end, **kw))
    relative = []
    for _ in range(draw(st.integers(0, 2)) if len(buffers) >= 3 else 0):
        i, j = draw(st.permutations(range(len(buffers))))[:2]
        if all(r.buffer != f"b{i}" for r in relative):
            relative.append(RelativePlacement(f"b{i}", f"b{j}", draw(st.integers(-3, 6))))
    try:
        return Problem(tuple(buffers), memories, tuple(relative))
    except ProblemError:
        assume(False)
        raise


def same(problem: Problem, order, policy: str) -> None:
    fast, ref = greedy(problem, order, policy), greedy_reference(problem, order, policy)
    assert fast.placements == ref.placements, (policy, fast.message, ref.message)
    assert fast.message == ref.message
    for objective in [None, *Objective.NAMES]:  # the value read off the arrays, as from the placements
        assert greedy_scored(problem, order, policy, objective)[0] == score(problem, ref.placements, objective)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems(), st.sampled_from(ORDERS), st.sampled_from(["first", "best", "heap"]))
def test_compiled_greedy_places_as_the_reference(problem: Problem, order, policy: str) -> None:
    same(problem, order(problem), policy)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems(fixed=False), st.sampled_from(["banked", "recycle"]))
def test_compiled_banked_greedy_and_recycle_place_as_the_reference(problem: Problem, which: str) -> None:
    planner, reference = (banked_greedy, banked_greedy_reference) if which == "banked" else (recycle, recycle_reference)
    fast, ref = planner.__wrapped__(problem), reference(problem)  # type: ignore[attr-defined]
    assert fast.placements == ref.placements
    assert fast.stats == ref.stats and fast.message == ref.message


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems(), st.sampled_from([staging._vela, staging._fastest_fit]))
def test_compiled_staging_places_as_the_reference(problem: Problem, select) -> None:
    fast, ref = staging.stage(problem, select), staging.stage(problem, select, reference=True)
    assert fast.placements == ref.placements
    assert fast.stats == ref.stats and fast.message == ref.message


def _training_like(n: int, seed: int) -> Problem:
    """Hundreds of buffers alive at once and long-lived ones, so that the tree's node lists
    grow and move in the arena (hypothesis' problems stay small)."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, n // 2, n)
    length = np.where(rng.random(n) < 0.2, rng.integers(n // 8, n // 2, n), rng.integers(1, 6, n))
    size = rng.integers(1, 64, n) * 16 + rng.integers(0, 2, n)
    return Problem(tuple(Buffer(f"b{i}", int(size[i]), int(start[i]), int(start[i] + length[i]),
                                alignment=int(rng.choice([1, 8]))) for i in range(n)),
                   (Memory("mem", capacity=None if seed % 2 else int(size.sum())),))


@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_greedy_places_as_the_reference_at_scale(seed: int) -> None:
    problem = _training_like(800, seed)
    for order, policy in [(orders.by_size, "first"), (orders.by_start, "best"), (orders.by_breadth, "best"),
                          (orders.by_size, "heap")]:
        same(problem, order(problem), policy)
    assert banked_greedy.__wrapped__(problem).placements == banked_greedy_reference(problem).placements  # type: ignore[attr-defined]
    assert np.array_equal(banked(problem)[0], banked(problem, chunk=2)[0])  # chunks split often
    assert recycle.__wrapped__(problem).placements == recycle_reference(problem).placements  # type: ignore[attr-defined]


def _weighted_peaks(problem: Problem, off: np.ndarray, where: np.ndarray) -> int:
    weights = Objective.parse(None, problem).weights(problem)
    a = arrays(problem)
    stored = np.diff(a.p_ptr) > 0
    return sum(weights[m] * int((off + a.top)[(where == k) & stored].max(initial=0)) for k, m in enumerate(a.names))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems(), st.sampled_from(ORDERS))
def test_a_pass_stops_exactly_when_its_peaks_reach_the_bound(problem: Problem, order) -> None:
    idx = indices(problem, order(problem))
    off, where, failed = pack(problem, idx, "first")
    assume(failed is None)
    weights = Objective.parse(None, problem).weights(problem)
    peaks = _weighted_peaks(problem, off, where)
    assert pack_below(problem, idx, "first", weights, peaks) is None
    below = pack_below(problem, idx, "first", weights, peaks + 1)
    assert below is not None and np.array_equal(below[0], off) and np.array_equal(below[1], where)


def _first_fit_orders_reference(problem: Problem, objective: str | None) -> tuple[dict | None, str | None]:
    """Every order packed in full by the reference packer, the strictly lowest value first met wins."""
    best, best_value, best_name = None, float("inf"), None
    for name, order in ORDERS_FFO.items():
        ref = greedy_reference(problem, order(problem), "first")
        value = score(problem, ref.placements, objective)
        if value < best_value:
            best, best_value, best_name = ref.placements, value, name
    return best, best_name


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems(), st.sampled_from([None, *Objective.NAMES]))
def test_first_fit_orders_stopping_early_keeps_the_plan_of_every_order_in_full(problem: Problem, objective) -> None:
    fast = first_fit_orders.__wrapped__(problem, Deadline(None), objective)  # type: ignore[attr-defined]
    placements, name = _first_fit_orders_reference(problem, objective)
    assert fast.placements == placements
    assert fast.stats.get("order") == name


@pytest.mark.parametrize("seed", [0, 1])
def test_first_fit_orders_stops_losing_orders_at_scale(seed: int) -> None:
    problem = _training_like(800, seed)
    fast = first_fit_orders.__wrapped__(problem, Deadline(None))  # type: ignore[attr-defined]
    placements, name = _first_fit_orders_reference(problem, None)
    assert fast.placements == placements and fast.stats["order"] == name
    assert fast.stats.get("stopped")  # the losing orders stop before their last unit here


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30), st.integers(1, 12), st.integers(1, 50)), max_size=60),
       st.sampled_from([2, 3, 32]), st.sampled_from([skyline, compiled]))
def test_skylines_answer_as_a_dense_array(raises, chunk: int, form) -> None:
    """Objects' skylines (banked-greedy's), in chunks small enough to split and empty often, give
    the highest top over any slots as a dense array of slots does, in both forms."""
    objects, slots = 3, 44
    dense = np.zeros((objects, slots), np.int64)
    dm = np.zeros(4 * objects + 2, np.int64)
    dr, cs, tmp = np.empty(6, np.int64), np.empty(8, np.int64), np.empty(4, np.int64)
    for g, l, length, v in raises:
        dr, cs, tmp = form._sky_raise(g, l, l + length, v, dm, dr, cs, chunk, tmp)
        dense[g, l:l + length] = np.maximum(dense[g, l:l + length], v)
        for q in range(objects):
            for a, b in [(0, slots), (l, l + length), (max(0, l - 3), l + 1), (l + length - 1, min(slots, l + length + 5))]:
                assert form._sky_max(q, a, b, dm, dr, cs) == dense[q, a:b].max(initial=0)
    for q in range(objects):  # every window at the end
        for a in range(slots):
            for b in range(a + 1, slots + 1):
                assert form._sky_max(q, a, b, dm, dr, cs) == dense[q, a:b].max(), (q, a, b)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems(fixed=False))
def test_compiled_banked_greedy_does_not_depend_on_the_skylines_chunks(problem: Problem) -> None:
    off, where, failed, nobj = banked(problem)
    small = banked(problem, chunk=2)
    assert np.array_equal(off, small[0]) and np.array_equal(where, small[1]) and failed == small[2]


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.integers(0, 60)), st.sampled_from([1, 2, 4]),
       st.lists(st.tuples(st.integers(0, 12), st.integers(1, 8), st.integers(0, 12), st.sampled_from([1, 1, 2, 3, 4])),
                min_size=1, max_size=30))
def test_naive_from_columns_stacks_as_unit_by_unit(capacity, align: int, rows: list) -> None:
    from optplan.heuristics.naive import stack, stack_plain

    problem = Problem(tuple(Buffer(f"b{i}", z, s, s + d, alignment=a) for i, (s, d, z, a) in enumerate(rows)),
                      (Memory("mem", capacity=capacity, alignment=align),))
    ref, got = stack(problem), stack_plain(problem)
    assert got.message == ref.message
    assert (got.placements is None) == (ref.placements is None)
    if ref.placements is not None:
        assert dict(got.placements.items()) == dict(ref.placements)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(problems(), st.sampled_from(ORDERS), st.sampled_from(["first", "best", "heap"]))
@pytest.mark.parametrize("form", ["native", "numba"])
def test_the_python_form_of_the_kernels_places_as_the_compiled_one(form: str, problem: Problem, order, policy: str) -> None:
    """Small problems run the kernels' Python form (``kernels.pick``) while numba is not loaded:
    the same plans, unit for unit, as the compiled kernels (built ahead of time, and numba's), in
    every packer and when a pass stops at a bound."""
    from optplan.heuristics import kernels

    with pytest.MonkeyPatch.context() as patch:
        assert kernels.NATIVE.load() is not None, "the install builds the heuristics' kernels ahead of time"
        if form == "numba":
            patch.setattr(kernels.NATIVE, "load", lambda: None)
        _python_and_compiled_place_alike(problem, order, policy)


def _python_and_compiled_place_alike(problem: Problem, order, policy: str) -> None:  # type: ignore[no-untyped-def]
    idx = indices(problem, order(problem))
    python, numba = pack(problem, idx, policy, compiled=False), pack(problem, idx, policy, compiled=True)
    assert np.array_equal(python[0], numba[0]) and np.array_equal(python[1], numba[1]) and python[2] == numba[2]
    weights = Objective.parse(None, problem).weights(problem)
    for stop in (1, _weighted_peaks(problem, numba[0], numba[1])):
        below = [pack_below(problem, idx, policy, weights, stop, compiled=c) for c in (False, True)]
        assert (below[0] is None) == (below[1] is None)
        if below[0] is not None and below[1] is not None:
            assert all(np.array_equal(x, y) for x, y in zip(below[0][:2], below[1][:2])) and below[0][2] == below[1][2]
    if all(u.fixed_offset is None for u in problem.units):  # the banked packer and recycle take no pinned units
        for run in (lambda c: banked(problem, compiled=c), lambda c: recycle_kernel(problem, idx, compiled=c)):
            python, numba = run(False), run(True)
            assert all(np.array_equal(x, y) for x, y in zip(python, numba) if isinstance(x, np.ndarray))
            assert [x for x in python if not isinstance(x, np.ndarray)] == [x for x in numba if not isinstance(x, np.ndarray)]


@pytest.mark.parametrize("native", [False, True])
def test_a_small_problem_never_starts_numba_and_a_large_one_does(native: bool) -> None:
    """Issue 29: every heuristic on a handful of buffers runs the kernels' Python form (numba's
    start costs more than the whole plan); past ``PYTHON_MAX_PLACEMENTS`` the compiled kernels
    run: numba's, or, built ahead of time (the install builds them), those, without numba. In a
    fresh process: the test process has loaded every kernel."""
    import subprocess
    import sys
    from pathlib import Path

    code = """
import sys
from optplan import registry
from optplan.core.buffer import Buffer
from optplan.core.problem import Problem
from optplan.heuristics import kernels
small = Problem(tuple(Buffer(f"b{i}", 4, 3 * (i % 3), 3 * (i % 3) + 4 + i) for i in range(5)))
for name in registry.heuristic_names():
    assert registry.solve(small, name).found, name
    assert "numba" not in sys.modules, name
n = kernels.PYTHON_MAX_PLACEMENTS + 1
large = Problem(tuple(Buffer(f"b{i}", 1 + i % 7, i % 50, i % 50 + 3) for i in range(n)))
assert registry.solve(large, "greedy-size").found
assert ("numba" in sys.modules) == (kernels.NATIVE.load() is None), sys.argv
print("ok" if (kernels.NATIVE.load() is not None) == (sys.argv[1] == "native") else "native not built")
"""
    root = Path(__file__).resolve().parents[1]
    env = {**__import__("os").environ, "PYTHONPATH": str(root)}
    env.pop("OPTPLAN_NO_NATIVE", None)
    if not native:
        env["OPTPLAN_NO_NATIVE"] = "1"
    proc = subprocess.run([sys.executable, "-c", code, "native" if native else "jit"], capture_output=True, text=True,
                          timeout=600, cwd=root, env=env)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_each_kernel_cache_is_keyed_by_the_files_its_kernels_are_compiled_from() -> None:
    """Numba stamps a cached kernel with its own file only: the banked packer calls the tree
    packer's kernels, so a change to tree_packer.py must recompile it too (``jit.key_cache``)."""
    import os

    from optplan.core import jit

    graphs = {m.__name__.rsplit(".", 1)[1]: sorted(os.path.basename(f) for f in jit._CALL_GRAPHS[os.path.abspath(m.__file__)])
              for m in compiled._SOURCES}
    assert graphs == {"tree_packer": ["arrays.py", "compiled.py", "tree_packer.py"],
                      "skyline": ["arrays.py", "compiled.py", "skyline.py", "tree_packer.py"],
                      "recycle_heap": ["arrays.py", "compiled.py", "recycle_heap.py"]}
