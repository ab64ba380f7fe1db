"""Position-based greedy with a memory hierarchy (ExecuTorch's Cadence backend).

Buffers by decreasing size; each tries the memories fastest first and, in each, starts at
offset 0 and jumps just above any placed buffer it collides with until it collides with none.
Jumping over a collider never skips a legal offset, so this is first fit; it differs from
greedy by size only in taking the lowest hole instead of the tightest one.
"""

from __future__ import annotations

from optplan.core.problem import Problem
from optplan.heuristics.orders import by_size_stable
from optplan.heuristics.packer import greedy
from optplan.registry import Result, planner


@planner("position-greedy", clocks=True)
def position_greedy(problem: Problem) -> Result:
    """Decreasing size (ties in problem order), first fit, fastest memory first."""
    return greedy(problem, by_size_stable(problem), policy="first")
