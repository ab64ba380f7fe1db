"""Greedy by conflicts (TVM's unified static memory planner, USMP).

Buffers that overlap the most bytes over their lifetime go first, each at the lowest offset
where it fits: the buffers hardest to place get the first choice of addresses.
"""

from __future__ import annotations

from optplan.core.problem import Problem
from optplan.heuristics.orders import by_conflicts
from optplan.heuristics.packer import greedy
from optplan.registry import Result, planner


@planner("greedy-conflicts", clocks=True)
def greedy_conflicts(problem: Problem) -> Result:
    """Most time-overlapping bytes first, first fit, fastest memory first."""
    return greedy(problem, by_conflicts(problem), policy="first")
