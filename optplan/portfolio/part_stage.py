"""The parts' stage of ``auto``: every part of the reduced problem in its share of the time, and on
each part its members (the staging relaxation, the search engine, CP-SAT, LNS) on one incumbent.

A part is independent of the others (``optplan.parts.reduce``), so each is solved alone and the
plans merged; a single-memory part goes to the search engine first (most are answered in
milliseconds), raced against CP-SAT and LNS from a forked process where two workers and a wall
clock allow it, and the first proof or plan at the goal stops the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from optplan import registry
from optplan.core import jit
from optplan.core.deadline import Deadline
from optplan.core.lifecycle import fork_member
from optplan.core.objective import Objective
from optplan.core.plan import Plan, Status, peaks
from optplan.core.problem import Problem
from optplan.parts import Choice, Part, Reduction, settle, solve_in_turn
from optplan.portfolio.context import PartRun, Run
from optplan.portfolio.early import dives_only
from optplan.portfolio.exact import ExactOutcome, exact_stage
from optplan.portfolio.members import Attempt, attempt, checked, judge, run_member
from optplan.portfolio.params import PortfolioParams
from optplan.portfolio.race import can_race, improving, lower_priority, relay, search_workers, workers_beside
from optplan.portfolio.staging import Staged, staging
from optplan.registry import Result

if TYPE_CHECKING:
    from optplan.solvers.cpsat import Settings


def solve_parts(red: Reduction, best: Plan | None, deadline: Deadline, t0: float, settings: Settings,
                objective: Objective, run: Run, within: Problem | None = None, dived: bool = False) -> Result:
    """``solve_part`` on every part (``optplan.parts.solve_in_turn``: smallest first, each with its
    share of the time), from the best plan's placements in it; merged.

    ``within``: stop a part as soon as its peaks fit the capacities of this problem. ``dived``: the
    search ran on the whole problem (``early_search``): parts where it only dives do without it."""
    from optplan.solvers.cpsat import part_result

    # a memory's peak is the max over its sections: a section below the others' best bound is done
    floor: dict[str, int] = {}
    for part in red.parts:
        if len(part.memories) == 1:
            m = part.memories[0]
            floor[m] = max(floor.get(m, 0), part.lower[m] * part.scale)
    starts = [settle(part, best.placements) if best is not None and best.found else None for part in red.parts]

    def one(i: int, share: Deadline, report: Callable[[Result], None]) -> Result:
        part = red.parts[i]
        caps = None
        if within is not None:
            capacities = {m: within.memory(m).capacity for m in part.memories}
            caps = {m: c // part.scale for m, c in capacities.items() if c is not None}
        elif objective.optimizes and len(part.memories) == 1:
            caps = {part.memories[0]: floor[part.memories[0]] // part.scale}
        return solve_part(part, share, settings, objective, starts[i], run, report, goal=caps, dived=dived)

    # progress reports the whole plan from the start
    reported = [None if c is None else part_result(part, None, c, False, False, None) for part, c in zip(red.parts, starts)]
    return solve_in_turn(red, deadline, one, run.progress, t0, reported)


def solve_part(part: Part, deadline: Deadline, settings: Settings, objective: Objective,
               incumbent: list[Choice] | None, run: Run, report: Callable[[Result], None],
               goal: dict[str, int] | None = None, dived: bool = False) -> Result:
    """The portfolio on one part: the staging relaxation where units choose memories (its
    selections packed exactly, which may already prove the optimum), then the search engine,
    CP-SAT until it stalls, then LNS.

    ``goal`` (per-memory peaks in grid units): good enough, stop there (elastic capacities).
    The bound a search member proved before its share ran out (capacities it refuted) is kept:
    a plan found later at that bound is then proven optimal."""
    from optplan.solvers.cpsat import part_result

    proven: dict[str, int] = {}
    staged = Staged()
    if len(part.memories) > 1 and objective.counts_benefit and goal is None:
        # the staging relaxation's time counts against the part's (the deadline runs on)
        incumbent = staging(part, objective, incumbent, deadline.share(run.params.staging_share), settings, run.seed,
                            staged, run.params)
        if staged.proven and incumbent is not None:
            return replace(part_result(part, None, incumbent, True, False, None, "", {"staging": staged.stats}),
                           lost_bound=staged.lost, objective_bound=staged.weighted)
    res = _members(part, deadline, settings, objective, incumbent, run, report, goal, proven, dived)
    if staged.stats and res.placements is not None:
        lost, weighted = staged.join(objective, res.lost_bound, res.objective_bound)
        res = replace(res, stats={**res.stats, "staging": staged.stats}, lost_bound=lost, objective_bound=weighted)
    if res.placements is None or not proven:
        return res
    bound = dict(res.bound or {})
    for m in part.memories:
        bound[m] = max(bound.get(m, 0), proven.get(m, 0))
    peak = peaks(part.sub_problem, res.placements)
    optimal = res.proven_optimal or (objective.optimizes and all(peak[m] <= bound[m] for m in part.memories)
                                     and (len(part.memories) == 1 or not objective.counts_benefit))
    return replace(res, bound=bound, proven_optimal=optimal)


def _members(part: Part, clock: Deadline, settings: Settings, objective: Objective, incumbent: list[Choice] | None,
             run: Run, report: Callable[[Result], None], goal: dict[str, int] | None, proven: dict[str, int],
             dived: bool = False) -> Result:
    """``solve_part``'s members on one shared ``Incumbent``: the search engine (single-memory
    parts) and CP-SAT until it stalls, then LNS. With several workers on a wall clock they race
    (``_race``): the search in a process of its own, the others here, the first proof or a plan
    at ``goal`` stops the rest. Otherwise (one worker, or a deterministic deadline: one process,
    repeatable) one after the other, the search first on ``search_share`` of the time.
    ``proven`` receives the search's per-memory bounds (bytes)."""
    from optplan.portfolio.incumbent import Incumbent
    from optplan.solvers.cpsat import part_result
    from optplan.solvers.part_plans import at_floor

    stats: dict[str, object] = {}
    if incumbent is not None and objective.optimizes and at_floor(objective, part, incumbent):
        return part_result(part, None, incumbent, True, False, None, "", stats)
    if not objective.optimizes and incumbent is not None:
        return part_result(part, None, incumbent, False, False, None, "", stats)
    on = PartRun(part, run, objective, settings, Incumbent(part, objective, incumbent, report), goal, proven, stats)
    if on.reached(incumbent):
        return part_result(part, None, incumbent, False, False, None, "", stats)
    params = run.params
    if run.beside_race == "plan":  # the race's search covers this part (``Run.beside_race``): CP-SAT, then LNS
        return _exact_beside_a_search(on, clock).result(part, on.inc, stats)
    members = _search_members(part, clock, settings, params, dived)
    if members and can_race(settings.workers, clock):
        if params.search_first > 0 and len(part.units) <= params.search_max_units:  # alone first: a fork and CP-SAT's model cost more than most answers
            plan = _run_search(members[0], on, clock.part(min(params.search_first, clock.left())), 1)
            verdict = _take_search(plan, members[0], on)
            if verdict is not None:
                return verdict
        return _race(on, clock, members[0])
    for name in members:
        plan = _run_search(name, on, clock.share(params.search_share), settings.workers)
        verdict = _take_search(plan, name, on)
        if verdict is not None:
            return verdict
    return exact_stage(on, clock).result(part, on.inc, stats)


def _search_members(part: Part, clock: Deadline, settings: Settings, params: PortfolioParams,
                    dived: bool = False) -> list[str]:
    """The registered exact search engines that take this part (one memory; a large part only
    when its time covers the search's set-up and first dives, and not when the search only dives
    there and has dived on the whole problem already: ``dived``)."""
    members = [name for name in params.search_members if registry.registered(name)]  # (imports the search: its kernel group)
    if len(part.memories) != 1 or not members or not jit.usable("search"):  # no compiled kernels: it would run heuristics
        return []
    if dived and len(part.units) > params.search_max_units and dives_only(
            np.array([u.start for u in part.units], np.int64), np.array([u.end for u in part.units], np.int64), params):
        return []
    share = 1.0 if can_race(settings.workers, clock) else params.search_share
    if (len(part.units) > params.search_max_units and clock.limited
            and clock.left() * share < params.search_seconds_per_unit * len(part.units)):
        return []
    return members


def _run_search(name: str, on: PartRun, clock: Deadline, workers: int) -> Plan | None:
    """The search engine on the part (its work counts against ``clock``, deterministic mode too);
    None if it failed or its plan was invalid (reported in ``on.stats``)."""
    return run_member(on.part.sub_problem, name, clock, on.stats, objective=on.objective, seed=on.seed,
                      workers=workers, goal=_goal_bytes(on), **_search_options(name, on.params))


def _goal_bytes(on: PartRun) -> dict[str, int] | None:
    """The part's goal in bytes, as a search member takes it."""
    return None if on.goal is None else {m: v * on.part.scale for m, v in on.goal.items()}


def _search_options(name: str, params: PortfolioParams, floor_share: float | None = None) -> dict[str, object]:
    """The search's settings for member ``name`` when they are not its defaults (another registered
    member need not take them): ``params.search``, the race's ``floor_share``."""
    if floor_share is not None:
        return {"params": params.racing_search(floor_share)}
    return {} if params.search is None else {"params": params.search}


def _take_search(plan: Plan | None, name: str, on: PartRun) -> Result | None:
    """Offer the search's plan and keep its bounds; the part's answer if that settles it."""
    from optplan.solvers.cpsat import part_result

    if plan is None:
        return None
    part, inc, stats = on.part, on.inc, on.stats
    stats[f"{name}_status"] = plan.status.value
    for m, v in plan.lower_bound.items():
        on.proven[m] = max(on.proven.get(m, 0), v)
    if plan.status == Status.INFEASIBLE:
        return Result(None, proven_infeasible=True, message=plan.message, stats=stats)
    if not plan.found:
        return None
    mine = settle(part, plan.placements)
    inc.offer(mine, name)
    best, _ = inc.get()
    if plan.status == Status.OPTIMAL and mine is not None:
        return part_result(part, None, best, True, False, None, "", stats)
    if on.reached(best) or not inc.objective.optimizes:
        return part_result(part, None, best, False, False, None, "", stats)
    return None


def _race(on: PartRun, clock: Deadline, name: str) -> Result:
    """The search engine ``name`` in a forked process beside CP-SAT and LNS here, on the whole
    part's time and half the workers each; whichever settles the part first halts the other. Each
    better plan the search finds is relayed here as it finds it (``race.relay``, as the whole
    problem's race relays its figures), validated and settled into the incumbent that LNS reads
    before each move and progress reports; so is the plan it returns. Beside a search
    deciding the bound of the whole problem (``Run.beside_race``) this one gives way to it:
    a lower priority, and all its time for a better plan."""
    from optplan.solvers.cpsat import part_result

    part, settings, params = on.part, on.settings, on.params
    mine = search_workers(settings.workers)
    searching, exact_clock = clock.part(None), clock.part(None)
    quiet = on.run.beside_race == "floor"
    options = _search_options(name, params, 0.0 if quiet else None)

    def searching_member(d: Deadline) -> Attempt:
        if quiet:  # (a forked process)
            lower_priority(params.race_nice)
        return attempt(part.sub_problem, name, d, seed=on.seed, objective=on.objective, workers=mine,
                       goal=_goal_bytes(on), progress=relay(improving()), **options)

    def offer(relayed: dict) -> None:  # (here, on the watcher's thread, as the member finds its plans)
        placements = relayed["placements"]
        if checked(part.sub_problem, name, placements, on.stats):
            on.inc.offer(settle(part, placements), name)

    member = fork_member(searching_member, searching, partial=offer)
    verdict: list[Result | None] = [None]

    def wait() -> None:
        got = member.result()
        if member.error:
            on.stats[f"{name}_error"] = member.error
        plan = None if got is None else judge(part.sub_problem, got, on.objective, on.stats)
        verdict[0] = _take_search(plan, name, on)
        if verdict[0] is not None:
            exact_clock.halt()

    watcher = threading.Thread(target=wait, daemon=True, name=f"optplan-{name}")
    watcher.start()
    exact = _exact_beside_a_search(on, exact_clock)
    if exact.settled:
        searching.halt()
    watcher.join()
    if verdict[0] is not None:
        return verdict[0] if verdict[0].placements is None else part_result(
            part, None, on.inc.get()[0], verdict[0].proven_optimal, False, None, "", on.stats)
    return exact.result(part, on.inc, on.stats)


def _exact_beside_a_search(on: PartRun, clock: Deadline) -> ExactOutcome:
    """CP-SAT, then LNS, on the part with the workers a raced search leaves (``race.workers_beside``)."""
    return exact_stage(replace(on, settings=replace(on.settings, workers=workers_beside(on.settings.workers))), clock)
