"""Decreasing-size best fit over the whole heap (XLA's heap simulator, its default global
decreasing-size best-fit heap).

Like greedy by size, but the space between the highest time-overlapping buffer and the heap's
current top counts as a hole like any other: a buffer may go there when that is the tightest
fit, instead of into a roomier hole lower down. Only when nothing fits does the heap grow.
"""

from __future__ import annotations

from optplan.core.problem import Problem
from optplan.heuristics.orders import by_size
from optplan.heuristics.packer import greedy
from optplan.registry import Result, planner


@planner("best-fit-heap", clocks=True)
def best_fit_heap(problem: Problem) -> Result:
    """Decreasing size (ties: longer lifetime first), heap-aware best fit, fastest memory first."""
    return greedy(problem, by_size(problem), policy="heap")
