"""Linear scan, register-allocation style (Poletto & Sarkar; Wimmer 2005; PyTorch JIT planner).

Buffers in execution order (by start). When a buffer starts, every buffer that ended by then
has returned its bytes to the free list, so the free list is exactly the set of holes left by
the buffers still alive; the buffer takes the tightest hole that fits (best fit), else the top.
Walking units by start makes the packer's time-overlap query return exactly those live
buffers, so the free list is not kept separately.
"""

from __future__ import annotations

from optplan.core.problem import Problem
from optplan.heuristics.orders import by_start
from optplan.heuristics.packer import greedy
from optplan.registry import Result, planner


@planner("linear-scan", clocks=True)
def linear_scan(problem: Problem) -> Result:
    """Start order (ties: longer, then larger first), best fit, fastest memory first."""
    return greedy(problem, by_start(problem), policy="best")
