"""The staging relaxation on a part whose units choose memories, and its selections packed exactly.

Relax and verify: the relaxation (``optplan.solvers.selection``) bounds the benefit kept in faster
memories and the peaks; the selection it picks is packed memory by memory by the search engine
(CP-SAT after it). A selection that packs at its live loads meets both bounds, which proves the
optimum without a model of the whole part; one that does not pack is cut off and the bounds rise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from optplan import registry
from optplan.core.deadline import Deadline
from optplan.core.objective import Goal, Objective
from optplan.core.plan import Placement, Plan, Status, peaks
from optplan.core.problem import Problem
from optplan.parts import Choice, Part, settle
from optplan.portfolio.members import run_member
from optplan.portfolio.params import DEFAULTS, PortfolioParams

if TYPE_CHECKING:
    from optplan.solvers.cpsat import Settings


@dataclass
class Staged:
    """What the staging relaxation proved for a part: ``lost`` bounds its ``L``; ``weighted``
    bounds ``W`` among plans with ``L`` at ``lost`` (fast-first); ``proven``: a plan reached both."""

    lost: int | None = None
    weighted: int | None = None
    proven: bool = False
    stats: dict[str, object] = field(default_factory=dict)

    def join(self, objective: Objective, lost: int | None, weighted: int | None) -> tuple[int | None, int | None]:
        """Ours with a solver's (``L`` bound, ``W`` bound). fast-first: the stronger pair, the
        larger ``L`` and at equal ``L`` the larger ``W`` (a ``W`` bound given a smaller ``L`` says
        nothing about plans that lose more). min-peak: the solver's ``W`` (it holds for every
        plan) with the larger ``L`` (ours holds for every plan, so for those at that ``W`` too)."""
        if not objective.benefit_first:
            return max(self.lost or 0, lost or 0) or None, weighted
        mine, theirs = (self.lost or 0, self.weighted or 0), (lost or 0, weighted or 0)
        best = max(mine, theirs) if mine[0] != theirs[0] else (mine[0], max(mine[1], theirs[1]))
        return best[0] or None, best[1] or None


def staging(part: Part, objective: Objective, incumbent: list[Choice] | None, deadline: Deadline,
            settings: Settings, seed: int, staged: Staged, params: PortfolioParams = DEFAULTS) -> list[Choice] | None:
    """The staging relaxation (``optplan.solvers.selection``) and its selections packed: returns
    the better of ``incumbent`` and the packed selections; fills ``staged``.

    Relax and verify (fast-first): the relaxation's best selection, with the least peaks among
    those that lose no more, is packed exactly, memory by memory, by the search engine. If it
    packs at its live loads, the plan meets both bounds: optimal. A memory's units that provably
    do not pack there are cut off for good (``Staging.forbid``: the bounds rise); ones not packed
    in time are excluded to try another selection (the bounds proven so far stay)."""
    from optplan.solvers.selection import Staging, pack_selection

    model = Staging(objective, part)
    lost, chosen, optimal = model.least_lost(deadline.share(0.6), settings)
    staged.lost = lost
    staged.stats = {"relaxation": "optimal" if optimal else "feasible" if chosen else "nothing in time"}
    if chosen is None:
        return incumbent
    incumbent = keep_better(objective, part, incumbent, pack_selection(part, chosen))
    tries = cuts = 0
    misses: list[str] = []
    while registry.registered("search") and objective.benefit_first and optimal and not deadline.expired():
        tries += 1
        weighted, chosen = model.least_peaks(model.lost_of(chosen), deadline.share(0.5), settings)
        if chosen is None:
            misses.append("least peaks: nothing in time")
            break
        incumbent = keep_better(objective, part, incumbent, pack_selection(part, chosen))
        if model.exact:  # no selection excluded without proof yet
            staged.weighted = weighted
        packed, failed = pack_exactly(part, objective, chosen, deadline.share(0.7), settings, seed, params,
                                      staged.stats)
        incumbent = keep_better(objective, part, incumbent, packed)
        if packed is not None:
            staged.proven = meets(objective, part, packed, staged)
            misses += [] if staged.proven else ["packed above the bounds"]
            break
        if failed is None:
            break
        misses.append(f"{failed[0]}: {len(failed[1])} units {'proven not to pack' if failed[2] else 'not packed in time'}")
        model.forbid(*failed)
        if failed[2] and model.exact:  # a proven cut: the bound on L may rise
            cuts += 1
            lost, chosen, optimal = model.least_lost(deadline.share(0.3), settings)
            if chosen is None:
                break
            staged.lost, staged.weighted = max(staged.lost or 0, lost or 0), None
    staged.stats.update(tries=tries, proven_cuts=cuts, misses=misses[-5:], proven=staged.proven,
                        lost_bound=staged.lost)
    return incumbent


def keep_better(objective: Objective, part: Part, incumbent: list[Choice] | None,
                mine: list[Choice] | None) -> list[Choice] | None:
    """``mine`` if it is a plan better than ``incumbent``, else ``incumbent``."""
    return mine if mine is not None and (incumbent is None or better(objective, part, mine, incumbent)) else incumbent


def meets(objective: Objective, part: Part, choices: list[Choice], staged: Staged) -> bool:
    """The part's plan reaches the staged bounds on ``L`` and ``W``."""
    if staged.lost is None or staged.weighted is None:
        return False
    placements = part.placements(choices)
    weights = objective.weights(part.problem)
    peak = peaks(part.sub_problem, placements)
    return (objective.lost(part.problem, placements) <= staged.lost
            and sum(weights[m] * peak[m] for m in part.memories) <= staged.weighted)


def pack_exactly(part: Part, objective: Objective, chosen: list[str], deadline: Deadline, settings: Settings,
                 seed: int, params: PortfolioParams = DEFAULTS, stats: dict[str, object] | None = None,
                 ) -> tuple[list[Choice] | None, tuple[str, list[int], bool] | None]:
    """Each memory's selected units packed alone in that memory (a weight-0 memory only within its
    capacity, the others at their least peak): the part's plan, or None and (memory, unit
    indices, whether they were proven not to pack there)."""
    from optplan.solvers.selection import alone

    weights = objective.weights(part.problem)
    placements: dict[str, Placement] = {}
    groups = [(m, [k for k, c in enumerate(chosen) if c == m]) for m in part.memories]
    left = len(part.units)
    for m, ks in (g for g in groups if g[1]):  # fastest first: capacitated memories are the ones that may not pack
        alone_objective = Objective(Goal.MIN_PEAK if weights[m] else Goal.FEASIBLE)
        plan = pack_alone(alone(part, m, ks), alone_objective, deadline.share(len(ks) / max(left, 1)), settings, seed,
                          params, stats)
        left -= len(ks)
        if plan is None or not plan.found:
            return None, (m, ks, plan is not None and plan.status is Status.INFEASIBLE)
        placements.update(plan.placements)
    return settle(part, placements), None


def pack_alone(problem: Problem, objective: Objective, deadline: Deadline, settings: Settings, seed: int,
               params: PortfolioParams = DEFAULTS, stats: dict[str, object] | None = None) -> Plan | None:
    """One memory's selected units: the search engine first (``params.pack_search_share`` of the time),
    then, when it neither proved nor refuted, CP-SAT on the rest (it packs some 80-unit sets
    at 50 % of the load that the search does not: generated and MiniMalloc-style instances);
    the better plan, None when neither member answered (a failure or an invalid plan, noted in ``stats``)."""
    notes: dict[str, object] = {} if stats is None else stats
    options = {} if params.search is None else {"params": params.search}
    plan = run_member(problem, "search", deadline.share(params.pack_search_share), notes, seed=seed,
                      workers=settings.workers, objective=objective, **options)
    settled = plan is not None and (plan.status in (Status.OPTIMAL, Status.INFEASIBLE)
                                    or (plan.found and not objective.optimizes))
    if settled or not registry.registered("cpsat") or deadline.expired():
        return plan
    other = run_member(problem, "cpsat", deadline, notes, seed=seed, workers=settings.workers, objective=objective)
    if other is None or plan is None:
        return plan or other
    if other.found and (not plan.found or (other.objective_value or 0) < (plan.objective_value or 0)):  # (found: valued)
        return other
    return plan if plan.found or other.status is not Status.INFEASIBLE else other


def better(objective: Objective, part: Part, a: list[Choice], b: list[Choice]) -> bool:
    """Plan ``a`` is better than ``b`` under ``objective`` (the objective of the whole problem)."""
    from optplan.solvers.part_plans import part_value

    return part_value(objective, part, a) < part_value(objective, part, b)

