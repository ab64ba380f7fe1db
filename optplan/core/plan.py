"""A plan: where every buffer lives, how good that is, and how sure we are."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from optplan.core.objective import BENEFIT, Objective
from optplan.core.placement import Layout, Placement, layout_of, offsets, peaks

__all__ = ["Layout", "Placement", "Plan", "Status", "layout_of", "offsets", "peaks"]


class Status(str, Enum):
    """How sure an answer is: ``OPTIMAL`` and ``INFEASIBLE`` are proven, ``FEASIBLE`` is a valid
    plan with a gap to the proven bound, ``UNKNOWN`` found and proved nothing."""

    OPTIMAL = "OPTIMAL"  # proven: peak equals the lower bound, or the solver proved it
    FEASIBLE = "FEASIBLE"  # a valid plan, optimality not proven
    INFEASIBLE = "INFEASIBLE"  # proven: no plan fits the capacities
    UNKNOWN = "UNKNOWN"  # no plan found and nothing proven (e.g. time limit)


@dataclass
class Plan:
    """The answer of a planner. Built by ``optplan.registry`` after the validator passed it.

    Attributes:
        placements: buffer id -> Placement (empty when no plan was found).
        status: how sure the answer is.
        planner: the planner that answered.
        peak: memory -> its peak in bytes (highest byte used + 1); empty when no plan was found.
        lower_bound: memory -> a lower bound on that memory's peak, the one every output reports
            (``optplan.core.bounds.reported_bounds``: the proven bound, the peak where the plan is
            optimal for a memory the objective weighs, and never 0 where the plan holds bytes);
            empty when no plan can exist (INFEASIBLE).
        seconds: wall time of the solve.
        objective: what ``objective_value`` measures.
        objective_value: the plan's objective as one integer (smaller is better).
        objective_bound: a proven bound on ``objective_value``.
        message: what the planner says (why infeasible, what a time limit cut, ...).
        stats: the planner's own figures.
        components: the objective's quantities, most important first: (name, value, bound).
    """

    placements: Mapping[str, Placement]
    status: Status
    planner: str
    peak: dict[str, int]  # memory -> highest byte used + 1 (empty: no plan)
    lower_bound: dict[str, int]  # memory -> lower bound on that memory's peak (empty: proven infeasible)
    seconds: float = 0.0
    objective: Objective = field(default_factory=Objective)  # what objective_value measures
    objective_value: int | None = None
    objective_bound: int | None = None
    message: str = ""  # why infeasible, "time limit reached", ...
    stats: dict[str, object] = field(default_factory=dict)
    # the objective's quantities, most important first: (name, value, bound) (Objective.components)
    components: tuple[tuple[str, int, int], ...] = ()

    @property
    def gap(self) -> float | None:
        """Relative distance to the proven bound of the quantity ``gap_of`` names: sum(peak) /
        sum(lower bound) - 1, the weighted objective when one is recorded; for a lexicographic
        objective the first quantity not at its bound (benefit kept: bound / kept - 1). None when
        there is no plan, the bound is 0 while the plan uses memory, or the objective optimizes nothing
        (``feasible``: a plan within the capacities is the answer, no quantity can fall short).
        """
        if not self.objective.optimizes or (not self.placements and self.status in (Status.INFEASIBLE, Status.UNKNOWN)):
            return None
        if len(self.components) > 1:
            short = self._short()
            if short is None:
                return 0.0
            name, v, b = short
            if name == BENEFIT:
                return None if v <= 0 else b / v - 1.0
            return None if b <= 0 else v / b - 1.0
        if self.objective_value is not None and self.objective_bound is not None:
            value, bound = self.objective_value, self.objective_bound
        else:
            value, bound = sum(self.peak.values()), sum(self.lower_bound.values())
        if value <= bound:
            return 0.0
        return None if bound <= 0 else value / bound - 1.0

    @property
    def gap_of(self) -> str | None:
        """Which quantity of a lexicographic objective ``gap`` measures (a name of ``components``:
        ``"benefit kept"`` or ``"peaks"``), so that gaps of different quantities are never compared
        as one number: a plan that keeps more benefit may show a larger gap, on its peaks. None when
        the objective has one quantity or every quantity is at its bound (gap 0)."""
        short = self._short() if len(self.components) > 1 and self.placements else None
        return None if short is None else short[0]

    def _short(self) -> tuple[str, int, int] | None:
        """The first of ``components`` not at its bound."""
        return next(((n, v, b) for n, v, b in self.components if (v < b if n == BENEFIT else v > b)), None)

    def memory_gap(self, memory: str) -> float | None:
        """``memory``'s peak against its lower bound (None where the objective optimizes nothing)."""
        if not self.objective.optimizes:
            return None
        peak, bound = self.peak.get(memory, 0), self.lower_bound.get(memory, 0)
        if peak <= bound:
            return 0.0
        return None if bound <= 0 else peak / bound - 1.0

    @property
    def found(self) -> bool:
        """True when the plan places every buffer (statuses OPTIMAL and FEASIBLE)."""
        return self.status in (Status.OPTIMAL, Status.FEASIBLE)
