"""The search's dives on the whole problem, beside the heuristics (``early_search``).

On problems with too many overlapping pairs for the search's adjacency lists the search only dives
(lowest offset first), and those dives are the best constructive plans at that scale; they cannot
be interrupted, so they start at once in a process of their own instead of after the heuristics.
"""

from __future__ import annotations

import numpy as np

from optplan import registry
from optplan.core import jit
from optplan.core.deadline import Deadline
from optplan.core.lifecycle import Member, fork_member
from optplan.core.load import overlapping_pairs
from optplan.core.objective import Objective
from optplan.core.plan import Plan, Status
from optplan.core.problem import Problem
from optplan.portfolio.members import Attempt, attempt, judge
from optplan.portfolio.params import PortfolioParams
from optplan.portfolio.race import can_race


def dives_only(start: np.ndarray, end: np.ndarray, params: PortfolioParams) -> bool:
    """The search only dives on these lifetimes: too many overlapping pairs for its adjacency lists."""
    return overlapping_pairs(start, end) > params.search_params().max_overlap_pairs


def early_search(problem: Problem, work: Deadline, objective: Objective, seed: int,
                 workers: int, params: PortfolioParams) -> tuple[Member, Deadline] | None:
    """The search engine on the whole problem in a process of its own, beside the heuristics,
    when it would only dive there (too many overlapping pairs) and its four dives cost less than
    half the time: at that scale its dives (lowest offset first) are the best constructive plans
    (idealloc/S_1: 1.0018 x the bound in about 3 CPU s, the best heuristic 1.0071; 18.7k
    S_1-shaped: 1.0000, greedy-conflicts 1.0015), and they cannot be interrupted, so they must
    not wait for the heuristics' time to run out (they did: S_1 ended at 1.0423)."""
    name = params.search_members[0] if params.search_members else ""
    if (problem.unit_count <= params.search_max_units or problem.concurrent or not can_race(workers, work)
            or not work.limited or not registry.registered(name) or not jit.usable("search")):
        return None
    start, end = problem.columns.start, problem.columns.end
    pairs = overlapping_pairs(start, end)
    if pairs <= params.search_params().max_overlap_pairs or 4 * params.dive_seconds_per_pair * pairs > 0.5 * work.left():
        return None
    # after the pairs: a pass over every unit (a million S_1-shaped buffers: seconds, for a search not run)
    declines = getattr(registry.get(name), "declines", None)
    if declines is not None and declines(problem):
        return None
    searching = work.part(params.early_share * work.left())  # it ends in time to check and send back its plan
    member = fork_member(lambda d: attempt(problem, name, d, seed=seed, objective=objective, workers=1,
                                           params=params.search_params()), searching, grace=1.0)
    return member, searching


def early_plan(problem: Problem, objective: Objective, member: Member, searching: Deadline, heur: list[Plan],
               stats: dict[str, object]) -> list[Plan]:
    """The early search's plan (waited for unless a heuristic reached the bound; judged: an invalid
    one is left out), as a warm start."""
    if any(p.status == Status.OPTIMAL for p in heur):
        searching.halt()
    got = member.result()
    plan = judge(problem, got, objective, stats) if isinstance(got, Attempt) else None
    if plan is None:
        stats["early_search"] = member.error or "no answer"
        return []
    stats["early_search"] = f"{plan.status.value} {plan.objective_value} in {plan.seconds:.1f} s"
    return [plan] if plan.found else []

