"""What a plan is judged by: one typed ``Objective``, parsed once and carried everywhere.

Planners, the Plan, the plan file, ``--json`` and the report all hold an ``Objective``; nothing
compares objective strings. Its ``value`` turns a plan into one integer (smaller is better), the
number every planner minimises and every comparison of plans uses. Two quantities enter it:

* ``W``, the weighted peaks (``optplan.core.problem.objective_weights``: slowest memory first; a
  capacitated memory with a slower one behind weighs 0, its size is fixed by the chip);
* ``L``, the benefit *lost* to slower memories, tier by tier fastest first: ``L_t`` is the benefit
  (``Buffer.gain``) of the buffers outside the ``t + 1`` fastest memories, and ``L`` mixes
  ``L_0, L_1, ...`` lexicographically (radix: total benefit + 1). One memory: ``L = 0``.

Goals:

* ``min-peak``: ``W`` first, then ``L`` (among equal peaks, the most benefit in faster memories);
* ``fast-first``: ``L`` first (the most benefit in the fastest memory, then the next...), then ``W``;
* ``weighted``: ``W`` alone (explicit ``Memory.weight`` values or the default ones);
* ``feasible``: any plan that fits; ``value`` is still ``W`` for ranking, nothing is optimised.

``fast-first`` is the default when a memory with a capacity has a slower memory behind it (a
chip's SRAM in front of DRAM: what matters is what the SRAM holds); ``min-peak`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from optplan.core.columns import Columns
from optplan.core.errors import OptplanError
from optplan.core.placement import Placement, peaks
from optplan.core.problem import objective_weights

if TYPE_CHECKING:
    from collections.abc import Mapping

    from optplan.core.problem import Problem
    from optplan.core.units import Unit

PEAK_BITS = 63  # no peak exceeds 2**63 bytes (offsets are int64 everywhere)
BENEFIT, PEAKS = "benefit kept", "peaks"  # the names of the quantities in ``Objective.components``


def fastest_fit(problem: Problem, u: Unit) -> str:
    """The fastest memory that can hold unit ``u`` on its own (its capacity at least the unit's
    lowest legal extent); its slowest memory if none can."""
    for m in u.memories:
        cap = problem.memory(m).capacity
        if cap is None or u.lowest_offset(m) + u.high <= cap:
            return m
    return u.memories[-1]


class Goal(str, Enum):
    MIN_PEAK = "min-peak"
    FAST_FIRST = "fast-first"
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
        """``fast-first`` when a capacitated memory has a slower one behind it, else ``min-peak``."""
        if problem is not None and any(m.capacity is not None for m in problem.memories[:-1]):
            return cls(Goal.FAST_FIRST)
        return cls(Goal.MIN_PEAK)

    @property
    def optimizes(self) -> bool:
        """False for ``feasible``: any plan within the capacities is an answer, none is optimal."""
        return self.goal is not Goal.FEASIBLE

    @property
    def counts_benefit(self) -> bool:
        """Whether ``L`` (benefit lost to slower memories) enters the value."""
        return self.goal in (Goal.MIN_PEAK, Goal.FAST_FIRST)

    @property
    def benefit_first(self) -> bool:
        return self.goal is Goal.FAST_FIRST

    def weights(self, problem: Problem) -> dict[str, int]:
        """Weights of the per-memory peaks in ``W``."""
        return objective_weights(problem)

    # -- the two quantities and how they mix ---------------------------------------------------
    def radix(self, problem: Problem) -> int:
        """Base of the tier mix in ``L``: above any one tier's lost benefit."""
        return Columns.total(problem.columns.gain) + 1

    def tier_weights(self, problem: Problem) -> dict[str, int]:
        """``L`` per unit of benefit placed in each memory: a buffer in the memory of rank r
        adds its benefit to ``L_t`` for every ``t < r``."""
        n, base = len(problem.memories), self.radix(problem)
        return {m.name: sum(base ** (n - 2 - t) for t in range(r)) for r, m in enumerate(problem.memories)}

    def lost_scale(self, problem: Problem) -> int:
        """How far ``L`` is shifted in the value when ``W`` comes first (above any ``L``)."""
        return self.radix(problem) ** max(len(problem.memories) - 1, 0) if self.counts_benefit else 1

    def peak_scale(self, problem: Problem) -> int:
        """How far ``W`` is shifted when ``L`` comes first (above any ``W`` of a real plan)."""
        return (sum(self.weights(problem).values()) << PEAK_BITS) + 1

    def combine(self, problem: Problem, weighted: int, lost: int) -> int:
        """The value from ``W`` and ``L`` (the order the goal says)."""
        if not self.counts_benefit:
            return weighted
        if self.benefit_first:
            return lost * self.peak_scale(problem) + weighted
        return weighted * self.lost_scale(problem) + lost

    def split(self, problem: Problem, value: int) -> tuple[int, int]:
        """``(W, L)`` back from a value (``L`` is 0 when the goal does not count it)."""
        if not self.counts_benefit:
            return value, 0
        return self.unpack(value, self.peak_scale(problem) if self.benefit_first else self.lost_scale(problem))

    def unpack(self, value: int, shift: int) -> tuple[int, int]:
        """``(W, L)`` from ``L * shift + W`` (benefit first) or ``W * shift + L``: the objective's
        value here, an exact model's objective with its own shift in CP-SAT and MILP."""
        if self.benefit_first:
            lost, weighted = divmod(value, shift)
            return weighted, lost
        weighted, lost = divmod(value, shift)
        return weighted, lost

    def components(self, problem: Problem, value: int, bound: int) -> tuple[tuple[str, int, int], ...]:
        """The value and its bound as named quantities, most important first: ``("peaks", W,
        bound)`` and ``("benefit kept", kept, most possible)`` with kept = ``L``'s total - ``L``
        (larger is better there). The plan's gap is that of the first one not at its bound, named
        by ``Plan.gap_of``."""
        w, lost = self.split(problem, value)
        wb, lost_b = self.split(problem, bound)
        if not self.counts_benefit or len(problem.memories) == 1:
            return ((PEAKS, w, wb),)
        total = self.lost_ceiling(problem)
        kept = (BENEFIT, total - lost, total - lost_b)
        peaks = (PEAKS, w, wb)
        return (kept, peaks) if self.benefit_first else (peaks, kept)

    def lost_ceiling(self, problem: Problem) -> int:
        """``L`` with every buffer in the slowest memory: what "benefit kept" is counted from."""
        if len(problem.memories) == 1:
            return 0
        tw = self.tier_weights(problem)
        return Columns.total(problem.columns.gain) * tw[problem.memory_names[-1]]

    def lost(self, problem: Problem, placements: Mapping[str, Placement]) -> int:
        """``L`` of a plan."""
        if len(problem.memories) == 1:
            return 0
        tw = self.tier_weights(problem)
        return sum(b.gain * tw[placements[b.id].memory] for b in problem.buffers if b.id in placements)

    def lost_floor(self, problem: Problem) -> int:
        """``L`` with every unit in the fastest memory that can hold it: a bound on any plan's ``L``."""
        if len(problem.memories) == 1:
            return 0
        tw = self.tier_weights(problem)
        return sum(u.gain * tw[fastest_fit(problem, u)] for u in problem.units)

    def value(self, problem: Problem, placements: Mapping[str, Placement]) -> int:
        """The plan's value (smaller is better)."""
        w = self.weights(problem)
        weighted = sum(w[m] * v for m, v in peaks(problem, placements).items())
        return self.combine(problem, weighted, self.lost(problem, placements) if self.counts_benefit else 0)

    def bound(self, problem: Problem, lower: Mapping[str, int], lost: int | None = None) -> int:
        """The lower bound on ``value`` from per-memory lower bounds on the peaks and a bound on
        ``L`` (default: every buffer in its fastest memory). Sound in either order: a plan whose
        first quantity is above its bound is worse whatever the second, so the second's bound
        need only hold among plans with the first at its bound."""
        w = self.weights(problem)
        weighted = sum(w[m] * lower.get(m, 0) for m in problem.memory_names)
        if not self.counts_benefit:
            return weighted
        return self.combine(problem, weighted, self.lost_floor(problem) if lost is None else lost)
