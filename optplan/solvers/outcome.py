"""What one solver run on a part's model produced: one type for CP-SAT and the MIP solvers.

The solution is the solver's own: CP-SAT's one (memory, root offset) per modeled unit, a MIP
solver's values by variable name (read back into a plan by ``milp.decode``). Values and bounds
are the model's objective in model units, integers: each runner turns its solver's doubles into
them (a bound rounded down by more than the solver's error, never up).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from optplan.core.deadline import Deadline

Solution = TypeVar("Solution")


@dataclass
class Outcome(Generic[Solution]):
    """One solver run on a part's model: its best solution and what it proved."""

    solution: Solution | None  # None: no solution
    optimal: bool = False  # proven optimal for the model that was solved
    infeasible: bool = False  # proven infeasible (only meaningful without incumbent cuts)
    value: int | None = None  # model objective of ``solution``
    bound: int | None = None  # proven bound on the model objective
    status: str = ""  # the solver's word for how it ended
    seconds: float = 0.0  # wall seconds the run took
    dtime: float = 0.0  # deterministic seconds (a Deadline's unit) charged for the run
    stats: dict[str, object] = field(default_factory=dict)


def stop_reason(deadline: Deadline) -> str:
    """Why a solver stopped before its proof: the deadline's cancel reason, or its time limit."""
    return deadline.cancelled or "time limit reached"
