"""Greedy by size (Pisarchyk & Lee 2020, arXiv 2001.03288), as in TFLite and ExecuTorch.

Largest buffers first; each goes into the tightest hole left between already placed buffers
*that overlap it in time* (best fit), else on top of them. Only time-overlapping buffers are
considered, which avoids the degenerate no-reuse variant noted in the reference.
"""

from __future__ import annotations

from optplan.core.problem import Problem
from optplan.heuristics.orders import by_size
from optplan.heuristics.packer import greedy
from optplan.registry import Result, planner


@planner("greedy-size", clocks=True)
def greedy_size(problem: Problem) -> Result:
    """Decreasing size (ties: longer lifetime first), best fit, fastest memory first."""
    return greedy(problem, by_size(problem), policy="best")
