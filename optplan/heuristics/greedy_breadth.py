"""Greedy by operator breadth (Pisarchyk & Lee 2020; PyTorch's JIT static memory planner).

The time steps with the largest live total come first, and within a step its largest
buffers; each buffer is placed, best fit, the first time it is met. Packing the crowded steps
first leaves the slack where the load is low.
"""

from __future__ import annotations

from optplan.core.problem import Problem
from optplan.heuristics.orders import by_breadth
from optplan.heuristics.packer import greedy
from optplan.registry import Result, planner


@planner("greedy-breadth", clocks=True)
def greedy_breadth(problem: Problem) -> Result:
    """Breadth order (see ``orders.by_breadth``), best fit, fastest memory first."""
    return greedy(problem, by_breadth(problem), policy="best")
