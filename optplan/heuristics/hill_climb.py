"""Hill climbing over the placement order (Vela's and TVM USMP's hill climb; iterated greedy).

Start from the best of three orders (decreasing size, most conflicts, execution order; each
wins on some real instances). Each step takes a unit that reaches a memory's peak and
moves it to a random earlier position (sometimes swaps two random units instead), re-packs
with best fit, and keeps the new order unless the weighted sum of peaks got worse (equal is
kept too, to walk plateaus). It stops early at the lower bound (nothing left to gain) or after
``200 + 20 * units`` steps without improvement, so tiny problems do not burn the budget.
Deterministic for a given seed and iteration budget, or under a deterministic deadline (a step
over n units costs n / ``UNIT_STEPS_PER_SECOND`` deterministic seconds); a wall-clock limit makes
the number of steps depend on the machine.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

import numpy as np

from optplan.core.bounds import lower_bounds
from optplan.core.deadline import Deadline, Pacer
from optplan.core.objective import Objective
from optplan.core.plan import Placement, layout_of, peaks
from optplan.core.problem import Problem, objective_weights
from optplan.heuristics import kernels
from optplan.heuristics.orders import by_conflicts, by_size, by_start
from optplan.heuristics.packer import greedy, score
from optplan.registry import Result, planner

STARTS = (by_size, by_conflicts, by_start)  # the starting orders, the first kept on ties
DEFAULT_SECONDS = 1.0  # without a limit or an iteration count (patience alone runs for hours at 30k units)
UNIT_STEPS_PER_SECOND = 20_000  # deterministic mode: steps x units per second (about 1 s of wall time on A-E)


def _peak_units(problem: Problem, order: list[int], placements: Mapping[str, Placement]) -> list[int]:
    """Positions in ``order`` of units whose top reaches their memory's (weighted) peak."""
    peak = peaks(problem, placements)
    weights = objective_weights(problem)
    layout = layout_of(problem, placements)
    if layout is not None and problem.columns.plain:  # a unit per buffer, its top its size: the arrays
        size = problem.columns.size
        at = np.array([peak[m] for m in layout.names], np.int64)[layout.where]
        weighed = np.array([weights[m] > 0 for m in layout.names])[layout.where]
        hot = (size > 0) & (layout.offset + size == at) & weighed
        return np.flatnonzero(hot[np.asarray(order, np.int64)]).tolist()
    out = []
    units = problem.units
    for i, k in enumerate(order):
        u = units[k]
        if not u.pieces:
            continue
        p = placements[u.root]
        top = p.offset + u.top
        if top == peak[p.memory] and weights[p.memory]:
            out.append(i)
    return out


def _patience(units: int) -> int:
    """Steps without an improvement after which a climb on ``units`` units ends."""
    return 200 + 20 * units


def _steps(units: int, iterations: int | None) -> int:
    """The steps of a climb on ``units`` units that ends by its patience or after ``iterations``."""
    return _patience(units) if iterations is None else min(iterations, _patience(units))


def expected_passes(units: int, iterations: int | None = None) -> int:
    """The packing passes of hill-climb on ``units`` units, its starting orders and a climb that
    ends by its patience or after ``iterations`` steps (``kernels.expect``)."""
    return len(STARTS) + _steps(units, iterations)


@planner("hill-climb", clocks=True, anytime=True)
def hill_climb(problem: Problem, deadline: Deadline, iterations: int | None = None, seed: int = 0,
               objective: Objective | None = None) -> Result:
    """Perturb the best starting order while it does not get worse; stop at ``iterations`` steps
    or before a step that would end after the ``deadline`` (``DEFAULT_SECONDS`` when neither is
    given; the first starting order is always evaluated, so a large problem may overrun a tiny limit)."""
    if not deadline.limited and iterations is None:  # an anytime method with no end of its own
        deadline = deadline.part(DEFAULT_SECONDS)
    step_cost = len(problem.units) / UNIT_STEPS_PER_SECOND
    pace = Pacer(deadline, step_cost)
    rng = random.Random(seed)
    objective = Objective.parse(objective, problem)
    value = float("inf")
    for start in STARTS:
        candidate = start(problem).tolist()
        trial = greedy(problem, candidate, policy="best")
        trial_value = score(problem, trial.placements, objective)
        if trial_value < value or start is by_size:
            order, result, value = candidate, trial, trial_value
        deadline.spend(step_cost)
        if not pace.another():
            break
    best = result
    floor = objective.bound(problem, lower_bounds(problem).lower)
    patience = _patience(len(order))
    if value > floor:  # it climbs: every step packs in the form picked for all of them (``kernels.expect``)
        kernels.expect(len(order) * _steps(len(order), iterations))
    steps = improvements = since = 0
    while len(order) > 1 and value > floor and since < patience and (iterations is None or steps < iterations) \
            and pace.another():
        steps += 1
        deadline.spend(step_cost)
        since += 1
        candidate = list(order)
        hot = _peak_units(problem, order, result.placements) if result.placements else []
        hot = [i for i in hot if i > 0]
        if hot and rng.random() < 0.8:
            i = rng.choice(hot)
            candidate.insert(rng.randrange(i), candidate.pop(i))
        else:
            i, j = rng.sample(range(len(candidate)), 2)
            candidate[i], candidate[j] = candidate[j], candidate[i]
        trial = greedy(problem, candidate, policy="best")
        trial_value = score(problem, trial.placements, objective)
        if trial_value <= value:
            if trial_value < value:
                improvements += 1
                best = trial
                since = 0
            order, result, value = candidate, trial, trial_value
    stats: dict[str, object] = {"iterations": steps, "improvements": improvements}
    if best.placements is None:
        return Result(None, message=f"{best.message} (after {steps} hill-climbing steps)", stats=stats)
    return Result(best.placements, message=f"{steps} steps, {improvements} improvements", stats=stats)
