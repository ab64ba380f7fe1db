"""What a plan is judged by: one typed ``Objective``, parsed once and carried everywhere.

Planners, the Plan, the plan file, ``--json`` and the report all hold an ``Objective``; nothing
compares objective strings. Its ``value`` turns a plan into one integer (smaller is better), the
number every planner minimises and every comparison of plans uses.

* ``min-peak``: the peaks, per memory, slowest first (``optplan.problem.objective_weights``).
* ``weighted``: the same weighted sum of peaks (explicit ``Memory.weight`` values or the default
  lexicographic ones), with no tie-break.
* ``feasible``: any plan that fits the capacities; the value is still the weighted peaks, so a
  caller can rank plans, but nothing is optimised and no plan is proven optimal.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from optplan.errors import OptplanError
from optplan.problem import objective_weights

if TYPE_CHECKING:
    from collections.abc import Mapping

    from optplan.plan import Placement
    from optplan.problem import Problem


class Goal(str, Enum):
    MIN_PEAK = "min-peak"
    WEIGHTED = "weighted"
    FEASIBLE = "feasible"


@dataclass(frozen=True)
class Objective:
    """One of the objectives in ``Goal``; build it with ``Objective.parse``."""

    goal: Goal = Goal.MIN_PEAK

    NAMES = tuple(g.value for g in Goal)

    def __str__(self) -> str:
        return self.goal.value

    @classmethod
    def parse(cls, spec: Objective | str | None, problem: Problem | None = None) -> Objective:
        """An Objective from its name; ``None`` (or ``"default"``) gives ``default(problem)``."""
        if isinstance(spec, Objective):
            return spec
        if spec is None or spec == "default":
            return cls.default(problem)
        try:
            return cls(Goal(spec))
        except ValueError:
            raise OptplanError(f"unknown objective {spec!r}; use one of: {', '.join(cls.NAMES)}") from None

    @classmethod
    def default(cls, problem: Problem | None = None) -> Objective:
        """``min-peak`` (the problem decides once objectives depend on the hierarchy)."""
        return cls(Goal.MIN_PEAK)

    @property
    def optimizes(self) -> bool:
        """False for ``feasible``: any plan within the capacities is an answer, none is optimal."""
        return self.goal is not Goal.FEASIBLE

    def weights(self, problem: Problem) -> dict[str, int]:
        """Weights of the per-memory peaks in ``value``."""
        return objective_weights(problem)

    def value(self, problem: Problem, placements: Mapping[str, Placement]) -> int:
        """The plan's value (smaller is better): the weighted sum of the peaks."""
        from optplan.plan import peaks

        w = self.weights(problem)
        return sum(w[m] * v for m, v in peaks(problem, dict(placements)).items())

    def bound(self, problem: Problem, lower: Mapping[str, int]) -> int:
        """The lower bound on ``value`` implied by per-memory lower bounds on the peaks."""
        w = self.weights(problem)
        return sum(w[m] * lower.get(m, 0) for m in problem.memory_names)
