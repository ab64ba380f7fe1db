"""A graph's plan: the order, the reuses taken, the problem they make and its plan, whose status
and bounds are the graph's (kept apart from the planner so that readers and writers of plans need
not import the planners)."""

from __future__ import annotations

from dataclasses import dataclass, field

from optplan.core.plan import Plan
from optplan.core.problem import Problem
from optplan.graph.model import Reuse


@dataclass
class GraphPlan:
    """A plan of a graph: the order (op ids), the reuses taken, the problem they make, and the
    plan of that problem, with the graph's bound and status."""

    plan: Plan
    order: tuple[str, ...] = ()
    reuses: tuple[Reuse, ...] = ()
    problem: Problem | None = None
    stats: dict[str, object] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        return self.plan.found
