"""A plan: where every buffer lives, how good that is, and how sure we are."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from optplan.objective import Objective

if TYPE_CHECKING:
    from optplan.problem import Problem


class Status(str, Enum):
    OPTIMAL = "OPTIMAL"  # proven: peak equals the lower bound, or the solver proved it
    FEASIBLE = "FEASIBLE"  # a valid plan, optimality not proven
    INFEASIBLE = "INFEASIBLE"  # proven: no plan fits the capacities
    UNKNOWN = "UNKNOWN"  # no plan found and nothing proven (e.g. time limit)


@dataclass(frozen=True)
class Placement:
    memory: str
    offset: int


@dataclass
class Plan:
    """The answer of a planner. Built by ``optplan.planners`` after the validator passed it."""

    placements: dict[str, Placement]
    status: Status
    planner: str
    peak: dict[str, int]  # memory -> highest byte used + 1
    lower_bound: dict[str, int]  # memory -> proven lower bound on that memory's peak
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
        """Relative distance to the proven bound: sum(peak) / sum(lower bound) - 1.

        Uses the weighted objective when one is recorded. None when there is no plan, or the
        bound is 0 while the plan uses memory.
        """
        if not self.placements and self.status in (Status.INFEASIBLE, Status.UNKNOWN):
            return None
        if len(self.components) > 1:  # lexicographic: the gap of the first quantity not at its bound
            for name, v, b in self.components:
                if name == "benefit kept" and v < b:
                    return None if v <= 0 else b / v - 1.0
                if name != "benefit kept" and v > b:
                    return None if b <= 0 else v / b - 1.0
            return 0.0
        if self.objective_value is not None and self.objective_bound is not None:
            value, bound = self.objective_value, self.objective_bound
        else:
            value, bound = sum(self.peak.values()), sum(self.lower_bound.values())
        if value <= bound:
            return 0.0
        return None if bound <= 0 else value / bound - 1.0

    def memory_gap(self, memory: str) -> float | None:
        peak, bound = self.peak.get(memory, 0), self.lower_bound.get(memory, 0)
        if peak <= bound:
            return 0.0
        return None if bound <= 0 else peak / bound - 1.0

    @property
    def found(self) -> bool:
        """True when the plan places every buffer (statuses OPTIMAL and FEASIBLE)."""
        return self.status in (Status.OPTIMAL, Status.FEASIBLE)


def peaks(problem: Problem, placements: dict[str, Placement]) -> dict[str, int]:
    """Highest byte used + 1 in each memory (0 for an empty one)."""
    out = {m: 0 for m in problem.memory_names}
    for b in problem.buffers:
        p = placements.get(b.id)
        if p is not None and b.size > 0 and p.memory in out:
            out[p.memory] = max(out[p.memory], p.offset + b.size)
    return out


@dataclass(frozen=True)
class UsageCurve:
    """Step function over time for one memory: at ``times[i] <= t < times[i+1]``, ``live[i]``
    bytes are live and the highest used byte is ``top[i]``."""

    times: np.ndarray
    live: np.ndarray
    top: np.ndarray

    @property
    def peak_step(self) -> int | None:
        """The first time step at which the highest used byte is reached."""
        if len(self.top) == 0 or self.top.max() == 0:
            return None
        return int(self.times[int(np.argmax(self.top))])


def usage_curve(problem: Problem, placements: dict[str, Placement], memory: str) -> UsageCurve:
    """Live bytes and highest used byte over time in ``memory`` (for reports and plots).

    Live bytes leave out gaps and count only a gap's window; an active buffer's highest byte is
    ``offset + size`` even inside a window, as in the peak."""
    bufs = [b for b in problem.buffers if b.size > 0 and b.id in placements and placements[b.id].memory == memory]
    if not bufs:
        return UsageCurve(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    rects = [(t0, t1, y1 - y0, placements[b.id].offset + b.size) for b in bufs for t0, t1, y0, y1 in b.footprint()]
    start, end, size, top = (np.array(c, np.int64) for c in zip(*rects))
    times = np.unique(np.concatenate([start, end]))
    delta = np.zeros(len(times), np.int64)
    np.add.at(delta, np.searchsorted(times, start), size)
    np.add.at(delta, np.searchsorted(times, end), -size)
    live = np.cumsum(delta)
    highest = np.zeros(len(times), np.int64)
    for i, j, t in zip(np.searchsorted(times, start), np.searchsorted(times, end), top):
        np.maximum(highest[i:j], t, out=highest[i:j])
    return UsageCurve(times, live, highest)
