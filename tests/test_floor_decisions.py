"""auto's CP-SAT decisions at the proven bound (portfolio._floor_decisions): they raise the bound
above the live load where no plan packs there, and a plan found at the bound is optimal."""

from __future__ import annotations

from brute_force import brute_force_optimum

from optplan import portfolio
from optplan.bounds import lower_bounds
from optplan.deadline import Deadline
from optplan.incumbent import Incumbent
from optplan.objective import Objective
from optplan.problem import Buffer, Memory, Problem
from optplan.solvers.cpsat import Settings, part_peaks
from optplan.solvers.reduce import reduce

# every step holds 7 units, but no plan packs them in 7: the optimum is 8 (brute force, below)
GADGET = [(0, 1, 5), (0, 2, 2), (1, 3, 3), (1, 3, 1), (2, 3, 1), (1, 4, 1), (2, 4, 1), (4, 5, 2), (3, 6, 5),
          (5, 6, 1), (5, 6, 1)]


def _problem(triples: list[tuple[int, int, int]], scale: int = 1) -> Problem:
    return Problem(tuple(Buffer(f"b{i}", z * scale, a, b) for i, (a, b, z) in enumerate(triples)), (Memory("mem"),))


def test_gadget_optimum_is_above_its_load() -> None:
    p = _problem(GADGET)
    assert lower_bounds(p).lower["mem"] == 7
    best = brute_force_optimum(p)
    assert best is not None and best[0] == 8


def _decide(p: Problem, proven: dict[str, int]) -> tuple[bool, Incumbent, dict[str, object], object]:
    objective = Objective.parse("min-peak", p)
    part = reduce(p, objective).parts[0]
    inc = Incumbent(part, objective, None)
    stats: dict[str, object] = {}
    done = portfolio._floor_decisions(part, Deadline(30), Settings(1, 0), objective, inc, proven, stats)
    return done, inc, stats, part


def test_decisions_refute_the_load_bound_then_find_the_optimum() -> None:
    proven: dict[str, int] = {}
    done, inc, stats, part = _decide(_problem(GADGET, scale=1024), proven)
    assert done and proven["mem"] == 8 * 1024
    best, _ = inc.get()
    assert best is not None and part_peaks(part, best)["mem"] * part.scale == 8 * 1024  # type: ignore[attr-defined]
    assert stats["cpsat_floor"] == {"decisions": 2, "found_at": 8 * 1024}


def test_decisions_start_from_a_bound_proven_elsewhere() -> None:
    """The search member's proven bound (bytes) is where the decisions start: one decision, not two."""
    proven = {"mem": 8 * 1024}
    done, _, stats, _ = _decide(_problem(GADGET, scale=1024), proven)
    assert done and stats["cpsat_floor"] == {"decisions": 1, "found_at": 8 * 1024}
