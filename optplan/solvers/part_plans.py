"""Measures of a part's plan in grid units (one (memory, root offset) per unit), shared by the
CP-SAT and MIP planners and the portfolio, and the user's hints as a plan."""

from __future__ import annotations

from collections.abc import Sequence

from optplan.core.objective import Objective, fastest_fit
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.parts import Choice, Part


def part_peaks(part: Part, choices: Sequence[Choice]) -> dict[str, int]:
    """Per-memory peak of a part's plan, in grid units."""
    peak = {m: 0 for m in part.memories}
    for u, (m, o) in zip(part.scaled, choices):
        peak[m] = max(peak[m], o + u.top)
    return peak


def part_value(objective: Objective, part: Part, choices: Sequence[Choice]) -> int:
    """The objective's value of a part's plan (weighted peaks in grid units, lost benefit)."""
    w = objective.weights(part.problem)
    peak = part_peaks(part, choices)
    tw = objective.tier_weights(part.problem)
    lost = sum(part.problem.buffer(b).gain * tw[m] for u, (m, _) in zip(part.units, choices) for b, _ in u.members)
    return objective.combine(part.problem, sum(w[m] * peak[m] for m in peak), lost if objective.counts_benefit else 0)


def at_floor(objective: Objective, part: Part, choices: Sequence[Choice]) -> bool:
    """Every peak at the part's lower bound and, if the objective counts it, no benefit lost
    beyond every unit's fastest memory: nothing can be better."""
    if any(v > part.lower[m] for m, v in part_peaks(part, choices).items()):
        return False
    return not objective.counts_benefit or all(m == fastest_fit(part.problem, u) for u, (m, _) in zip(part.units, choices))


def hint_choices(part: Part) -> list[Choice] | None:
    """The user's hints (Buffer.hint_memory/hint_offset) as a warm start, when every root has one."""
    placements = {}
    for u in part.units:
        b = part.problem.buffer(u.root)
        if b.hint_offset is None:
            return None
        mem = b.hint_memory or b.fixed_memory or u.memories[0]
        placements[u.root] = Placement(mem, b.hint_offset)
    return part.choices(placements)


def user_hints(problem: Problem) -> dict[str, Placement] | None:
    """The buffers' hinted placements (at least an offset), or None when no buffer has one."""
    hints = {b.id: Placement(b.hint_memory or problem.candidate_memories(b)[0], b.hint_offset)
             for b in problem.buffers if b.hint_offset is not None}
    return hints or None
