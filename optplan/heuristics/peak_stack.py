"""The peak's live set stacked first: the units alive at the step of most live bytes, by start,
then the others by decreasing size (``orders.by_peak``).

The load bound is reached at one step; a plan meets it only if the units alive there are packed
without a hole. Placed first, each of them goes on top of the ones before it (all alive with it),
so that step is packed at its load, and the rest only has to fit the room around that stack, which
away from the peak is loose. On forward/backward runs (idealloc/S_1 and instances shaped like it)
this reaches the load bound where the other heuristics stay 0.7-3 % above (idealloc/S_1).
"""

from __future__ import annotations

from optplan.core.bounds import lower_bounds
from optplan.core.objective import Objective
from optplan.core.problem import Problem
from optplan.heuristics import orders
from optplan.heuristics.packer import greedy_scored
from optplan.registry import Result, planner


@planner("peak-stack", clocks=True)
def peak_stack(problem: Problem, objective: Objective | None = None) -> Result:
    """First fit in ``by_peak`` order, then best fit unless first fit met the lower bound; the
    better plan (first fit on a tie)."""
    objective = Objective.parse(objective, problem)
    order = orders.by_peak(problem)
    value, plan = greedy_scored(problem, order, "first", objective)
    lower, weights = lower_bounds(problem).lower, objective.weights(problem)
    if value > objective.combine(problem, sum(weights[m] * lower[m] for m in lower), objective.lost_floor(problem)):
        other, other_plan = greedy_scored(problem, order, "best", objective, beat=value)
        if other_plan is not None and other < value:
            plan = other_plan
    assert plan is not None  # the first pass had nothing to beat
    return plan()
