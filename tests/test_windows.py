"""Bounds above the live load: a time window's clipped sub-instance (the search), and CP-SAT's
decisions at the proven bound (auto); never above the optimum."""

from __future__ import annotations

from brute_force import brute_force_optimum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optplan import portfolio
from optplan.bounds import lower_bounds
from optplan.deadline import Deadline
from optplan.incumbent import Incumbent
from optplan.objective import Objective
from optplan.plan import Status
from optplan.planners import solve
from optplan.problem import Buffer, Memory, Problem
from optplan.search import engine, windows
from optplan.search.instance import build
from optplan.solvers.cpsat import Settings, part_peaks
from optplan.solvers.reduce import reduce

# every step holds 7 units, but no plan packs them in 7: the optimum is 8 (brute force, below)
GADGET = [(0, 1, 5), (0, 2, 2), (1, 3, 3), (1, 3, 1), (2, 3, 1), (1, 4, 1), (2, 4, 1), (4, 5, 2), (3, 6, 5),
          (5, 6, 1), (5, 6, 1)]
PADDING = [(6 + k, 7 + k, 7) for k in range(12)]  # easy steps after it: the whole is too big for one window


def _problem(triples: list[tuple[int, int, int]], scale: int = 1) -> Problem:
    return Problem(tuple(Buffer(f"b{i}", z * scale, a, b) for i, (a, b, z) in enumerate(triples)), (Memory("mem"),))


def _optimum(p: Problem) -> int:
    """The whole search's optimum (no windows; the engine is checked against brute force in test_search)."""
    engine.ensure_compiled()
    ans = engine.solve(build(p, "mem", list(p.units)), None, lower_bounds(p).lower["mem"], "min-peak", Deadline())
    assert ans.optimal and ans.peak is not None
    return ans.peak


def test_gadget_optimum_is_above_its_load() -> None:
    p = _problem(GADGET)
    assert lower_bounds(p).lower["mem"] == 7
    best = brute_force_optimum(p)
    assert best is not None and best[0] == 8 == _optimum(p)


def test_a_window_proves_the_gadget() -> None:
    engine.ensure_compiled()
    p = _problem(GADGET + PADDING, scale=1024)
    out = windows.window_bound(p, 7 * 1024, Deadline(20))
    assert out.bound == 8 * 1024
    assert out.raised_by is not None and out.raised_by[1] <= 8  # a window over the gadget, not the padding
    assert all(n < len(p.buffers) for _, _, n, _ in out.windows)


def test_search_starts_from_the_window_bound() -> None:
    p = _problem(GADGET + PADDING, scale=1024)
    plan = solve(p, "search", time_limit=20, workers=1)
    assert plan.status == Status.OPTIMAL and plan.peak["mem"] == 8 * 1024
    assert plan.stats["window_bound"]["bound"] == 8 * 1024


def test_a_coarser_grid_in_a_window_is_no_proof() -> None:
    """The bound handed in (15, proven by the gadget's steps) is off the grid of the first
    window's sizes (14): that window's optimum is 14, so it proves nothing; rounding the bound up
    to the window's grid (28) would overstate it."""
    shifted = [(a + 2, b + 2, z) for a, b, z in GADGET]
    p = _problem([(0, 1, 14), (1, 2, 14), (2, 8, 7), *shifted])
    assert lower_bounds(p).lower["mem"] == 14
    assert _optimum(p) == 15
    assert windows.window_bound(p, 15, Deadline(5)).bound == 15


@st.composite
def tight(draw) -> Problem:
    """Every step at the same load: sometimes no perfect packing, so the optimum is above the load."""
    height, steps = draw(st.integers(3, 8)), draw(st.integers(3, 8))
    live: list[tuple[int, int]] = []
    out: list[tuple[int, int, int]] = []
    for t in range(steps):
        keep = []
        for s0, z in live:
            (out.append((s0, t, z)) if t and draw(st.booleans()) else keep.append((s0, z)))
        live = keep
        room = height - sum(z for _, z in live)
        while room > 0:
            z = draw(st.integers(1, min(room, 4)))
            live.append((t, z))
            room -= z
    out += [(s0, steps, z) for s0, z in live]
    return _problem(out)


@st.composite
def scattered(draw) -> Problem:
    n = draw(st.integers(windows.MIN_BUFFERS, 12))
    triples = []
    for _ in range(n):
        a = draw(st.integers(0, 8))
        triples.append((a, a + draw(st.integers(1, 4)), draw(st.integers(1, 5))))
    return _problem(triples, scale=draw(st.sampled_from([1, 2])))


@settings(max_examples=150, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(tight(), scattered()))
def test_window_bound_never_exceeds_the_optimum(p: Problem) -> None:
    engine.ensure_compiled()
    load = lower_bounds(p).lower["mem"]
    out = windows.window_bound(p, load, Deadline(5))
    assert load <= out.bound <= _optimum(p)


def test_cpsat_decisions_at_the_bound_refute_it_then_find_the_optimum() -> None:
    """auto's CP-SAT decisions (portfolio._floor_decisions): the gadget's load bound 7 is refuted,
    the bound rises to 8 and the plan found there is optimal."""
    p = _problem(GADGET, scale=1024)
    objective = Objective.parse("min-peak", p)
    part = reduce(p, objective).parts[0]
    inc = Incumbent(part, objective, None)
    proven: dict[str, int] = {}
    stats: dict[str, object] = {}
    assert portfolio._floor_decisions(part, Deadline(30), Settings(1, 0), objective, inc, proven, stats)
    assert proven["mem"] == 8 * 1024
    best, _ = inc.get()
    assert best is not None and part_peaks(part, best)["mem"] * part.scale == 8 * 1024
    assert stats["cpsat_floor"] == {"decisions": 2, "found_at": 8 * 1024}
