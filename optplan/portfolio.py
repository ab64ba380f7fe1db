"""The planning portfolio ``auto``: heuristics for a warm start, then exact search per part.

Pipeline: every registered heuristic (planners defined in ``optplan.heuristics``) on the whole
problem -> the best plan is the incumbent -> ``reduce`` into independent scaled parts -> per part,
in its share of the time: stop if the incumbent meets the lower bound; where units choose between
memories, the staging relaxation (``optplan.solvers.selection``: bounds on the benefit kept in
faster memories and on the peaks) and its selections packed exactly by the search engine, which
proves the optimum when a selection packs at its live loads; the exact search engine
(planner ``search``, looked up by name, used when registered) on single-memory parts; CP-SAT on
the full part model with the incumbent as hint, stopped when it stalls; then large-neighbourhood
search (free the units alive in a time window around a unit at the peak, re-solve with all other
units fixed) while time is left. The merged plan goes back through the registry's validator.
"""

from __future__ import annotations

import functools
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from optplan import planners
from optplan.deadline import Deadline
from optplan.heuristics.run import run_heuristics
from optplan.objective import Goal, Objective
from optplan.plan import Placement, Plan, Status, peaks
from optplan.planners import Result, planner
from optplan.problem import Problem, objective_weights
from optplan.solvers.cpsat import (
    FULL_MODEL_MAX_UNITS,
    PartModel,
    Settings,
    Tracker,
    at_floor,
    part_peaks,
    part_result,
    part_value,
    run,
    stop_reason,
)
from optplan.solvers.reduce import Choice, Part, Reduction, merge, reduce, settle
from optplan.solvers.selection import Staging, pack_selection

# of a single-memory part's time, for the exact search engine when it is registered (CP-SAT and LNS
# get the rest): on minimalloc/D in 20 s, 0.8 gave 1.0498 x the bound and 0.4 gave 1.0644; equal in 60 s
SEARCH_SHARE = 0.8
SEARCH_MEMBERS = ("search",)  # exact engines for single-memory parts, used if registered
# larger parts take a member only when its share of the time covers this per unit: a member cannot be
# interrupted from here, and on very large parts its set-up and first dives are not (idealloc/S_1,
# 28,526 buffers: about 0.25 ms per unit for the search's dives)
SEARCH_MAX_UNITS = 5000
HEURISTIC_SHARE = 0.05  # deterministic mode: the share charged to the heuristics (about what branch deadline gave hill-climb)
SEARCH_SECONDS_PER_UNIT = 1e-3
# of a part's time where units choose memories: the staging relaxation and its selections packed exactly
STAGING_SHARE = 0.5


def _auto_clocks(problem: Problem, best: Plan | None, objective: Objective, deadline: Deadline,
                 workers: int, seed: int, stats: dict[str, object]) -> Result:
    """Concurrent lifetimes: CP-SAT's pairwise model from the best heuristic plan; the better wins."""
    from optplan.solvers.clock_models import MAX_PAIRS, cpsat_clocks

    left = deadline.seconds_left()
    hint = best.placements if best is not None and best.found else None
    pairs = problem.clock_graph.pairs()
    if hint is not None and pairs > MAX_PAIRS:
        return Result(hint, stats=stats, message=f"{pairs:,} conflicting pairs: too many for the pairwise exact model; "
                                                 "the best heuristic plan stands")
    exact = cpsat_clocks(problem, objective, left, workers, seed, hint)
    exact.stats.update(stats, exact="cpsat (vector clocks)")
    if exact.placements is None or (hint is not None and not exact.proven_optimal
                                    and objective.value(problem, hint) < objective.value(problem, exact.placements)):
        return Result(hint, bound=exact.bound, proven_infeasible=exact.proven_infeasible and hint is None,
                      message=exact.message, stats=exact.stats)
    return exact


def _heuristics_part(work: Deadline) -> Deadline:
    """Wall clock: the heuristics pace themselves on what is left (run_heuristics); deterministic:
    hill-climb's steps are charged, so cap them to leave the exact members their share."""
    return work.share(HEURISTIC_SHARE) if work.deterministic and work.limited else work


def _value(plan: Plan) -> tuple[int, float]:
    return (0 if plan.found else 1, plan.objective_value if plan.objective_value is not None else float("inf"))


def _prepare_members() -> None:
    for name in SEARCH_MEMBERS:
        if name in planners.names():
            planners.prepare_planner(name)


@planner("auto", clocks=True, prepare=_prepare_members)
def auto(problem: Problem, deadline: Deadline, workers: int | None = None, seed: int = 0,
         objective: Objective | str | None = None, progress=None) -> Result:
    """Heuristics -> best as warm start -> exact search engine / CP-SAT / LNS per part; never
    worse than the best heuristic (its plan is returned when the rest does not beat it).

    ``workers`` (default: every core) run the heuristics side by side and the solvers' threads."""
    t0 = time.perf_counter()
    objective = Objective.parse(objective, problem)
    workers = workers or os.cpu_count() or 1
    left = deadline.left()  # keep time to merge and validate the plan (about 1 s per 30k buffers)
    work = deadline.part(left - min(0.1 * left, 0.2 + 1e-4 * len(problem.buffers))) if deadline.limited else deadline
    settings = Settings(workers, seed)
    # every constructive heuristic always runs; the improving ones only when the peak matters
    # (at a capacity in feasibility mode the exact search answers sooner)
    heur, errors = run_heuristics(problem, _heuristics_part(work), seed, workers, improve=objective.optimizes,
                                  objective=objective)
    best = min(heur, key=_value) if heur else None
    stats: dict[str, object] = {"heuristics": {p.planner: p.objective_value for p in heur}}
    if errors:
        stats["heuristics_not_run"] = errors
    if best is not None and best.found:
        stats["warm_start"] = best.planner
        if progress is not None:
            progress({"best": best.objective_value, "bound": best.objective_bound, "gap": best.gap,
                      "elapsed": time.perf_counter() - t0})
    if best is not None and best.status == Status.OPTIMAL:
        return Result(best.placements, proven_optimal=True, bound=best.lower_bound,
                      message=f"{best.planner} reached the lower bound", stats=stats)
    if problem.concurrent:  # vector clocks: the pairwise CP-SAT model; the search is routed around
        return _auto_clocks(problem, best, objective, work, workers, seed, stats)
    elastic = best is None or not best.found
    if elastic and _elastic_ok(problem) and objective.optimizes:
        # every heuristic hit a capacity: descend from a plan without capacities instead (in
        # feasibility mode the search answers the capacity question directly, sooner: B 10.2 s -> ~1 s)
        relaxed = Problem(problem.buffers, tuple(replace(m, capacity=None) for m in problem.memories),
                          problem.relative, dict(problem.metadata))
        peaks_first = Objective(Goal.MIN_PEAK)  # what the descent minimises
        rheur, _ = run_heuristics(relaxed, _heuristics_part(work), seed, workers, improve=True, objective=peaks_first)
        rbest = min(rheur, key=_value) if rheur else None
        stats["elastic_start"] = None if rbest is None else f"{rbest.planner}: {rbest.objective_value}"
        red = reduce(relaxed, peaks_first)
        merged = _solve_parts(red, rbest, work, t0, settings, red.objective, seed, progress, goal=problem)
        merged.stats.update(stats, **_capped(settings))
        peak = peaks(problem, merged.placements or {})
        over = [m.name for m in problem.memories if m.capacity is not None and merged.placements is not None
                and peak[m.name] > m.capacity]
        if merged.placements is not None and not over:
            return merged
        proven = [m.name for m in problem.memories if m.capacity is not None
                  and (merged.bound or {}).get(m.name, 0) > m.capacity]
        if proven:
            return Result(None, proven_infeasible=True, stats=merged.stats,
                          message=f"memory {proven[0]!r}: every plan needs {merged.bound[proven[0]]} bytes, "
                                  f"capacity {problem.memory(proven[0]).capacity}")
        where = over[0] if over else problem.memory_names[0]
        return Result(None, stats=merged.stats, message=f"no plan within the capacity of {where!r} found in time"
                      + (f" (best found needs {peak[where]} bytes)" if over else ""))
    red = reduce(problem, objective)
    merged = _solve_parts(red, best, work, t0, settings, objective, seed, progress)
    merged.stats.update(stats, **_capped(settings))
    if best is not None and best.found and not merged.proven_infeasible and (
            merged.placements is None
            or objective.value(problem, merged.placements) > objective.value(problem, best.placements)):
        merged.stats["kept_heuristic"] = best.planner  # nothing after it did better
        return Result(best.placements, bound=_max_bound(merged.bound, best.lower_bound), message=merged.message,
                      stats=merged.stats)
    return merged


def _max_bound(a: dict[str, int] | None, b: dict[str, int]) -> dict[str, int]:
    return {m: max(v, (a or {}).get(m, 0)) for m, v in b.items()}


def _capped(settings: Settings) -> dict[str, int]:
    """Say when a deterministic CP-SAT run hit its wall-clock cap: that plan may not repeat."""
    return {"deterministic_wall_capped": settings.wall_capped} if settings.wall_capped else {}


def _elastic_ok(problem: Problem) -> bool:
    """Relaxing capacities keeps the question when memories are decided: each memory's peak
    then only has to come down below its capacity."""
    return (any(m.capacity is not None for m in problem.memories)
            and all(len(u.memories) == 1 for u in problem.units))


def _solve_parts(red: Reduction, best: Plan | None, deadline: Deadline, t0: float, settings: Settings,
                 objective: Objective, seed: int, progress, goal: Problem | None = None) -> Result:
    """``solve_part`` on every part, smallest first, each with its share of the time; merged.

    ``goal``: stop a part as soon as its peaks fit the capacities of this problem."""
    tracker = Tracker(red, progress, t0)
    results: list[Result | None] = [None] * len(red.parts)
    # smallest first: time they leave unused goes to the larger parts after them
    order = sorted(range(len(red.parts)), key=lambda i: len(red.parts[i].units))
    # a memory's peak is the max over its sections: a section below the others' best bound is done
    floor: dict[str, int] = {}
    for part in red.parts:
        if len(part.memories) == 1:
            m = part.memories[0]
            floor[m] = max(floor.get(m, 0), part.lower[m] * part.scale)
    left_units = sum(len(p.units) for p in red.parts)
    starts = [settle(part, best.placements) if best is not None and best.found else None for part in red.parts]
    for i, part in enumerate(red.parts):  # progress reports the whole plan from the start
        if starts[i] is not None:
            tracker.latest[i] = part_result(part, None, starts[i], False, False, None)
    for i in order:
        part = red.parts[i]
        share = deadline.share(len(part.units) / max(left_units, 1))
        left_units -= len(part.units)
        incumbent = starts[i]
        caps = None
        if goal is not None:
            caps = {m: goal.memory(m).capacity // part.scale for m in part.memories
                    if goal.memory(m).capacity is not None}
        elif objective.optimizes and len(part.memories) == 1:
            caps = {part.memories[0]: floor[part.memories[0]] // part.scale}
        results[i] = solve_part(part, share, settings, objective, incumbent, seed,
                                functools.partial(tracker.update, i), goal=caps)
        tracker.update(i, results[i])
        if results[i].proven_infeasible:
            break
    done = [r if r is not None else Result(None, message="not solved: an earlier part is infeasible") for r in results]
    return merge(red, done)


def solve_part(part: Part, deadline: Deadline, settings: Settings, objective: Objective,
               incumbent: list[Choice] | None, seed: int, report: Callable[[Result], None],
               goal: dict[str, int] | None = None) -> Result:
    """The portfolio on one part: the staging relaxation where units choose memories (its
    selections packed exactly, which may already prove the optimum), then the search engine,
    CP-SAT until it stalls, then LNS.

    ``goal`` (per-memory peaks in grid units): good enough, stop there (elastic capacities).
    The bound a search member proved before its share ran out (capacities it refuted) is kept:
    a plan found later at that bound is then proven optimal."""
    proven: dict[str, int] = {}
    staged = Staged()
    if len(part.memories) > 1 and objective.counts_benefit and goal is None:
        # the staging relaxation's time counts against the part's (the deadline runs on)
        incumbent = _staging(part, objective, incumbent, deadline.share(STAGING_SHARE), settings, seed, staged)
        if staged.proven and incumbent is not None:
            return replace(part_result(part, None, incumbent, True, False, None, "", {"staging": staged.stats}),
                           lost_bound=staged.lost, objective_bound=staged.weighted)
    res = _solve_part(part, deadline, settings, objective, incumbent, seed, report, goal, proven)
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


def _staging(part: Part, objective: Objective, incumbent: list[Choice] | None, deadline: Deadline,
             settings: Settings, seed: int, staged: Staged) -> list[Choice] | None:
    """The staging relaxation (``optplan.solvers.selection``) and its selections packed: returns
    the better of ``incumbent`` and the packed selections; fills ``staged``.

    Relax and verify (fast-first): the relaxation's best selection, with the least peaks among
    those that lose no more, is packed exactly, memory by memory, by the search engine. If it
    packs at its live loads, the plan meets both bounds: optimal. A memory's units that provably
    do not pack there are cut off for good (``Staging.forbid``: the bounds rise); ones not packed
    in time are excluded to try another selection (the bounds proven so far stay)."""
    model = Staging(objective, part)
    lost, chosen, optimal = model.least_lost(deadline.share(0.5), settings)
    staged.lost = lost
    staged.stats = {"relaxation": "optimal" if optimal else "feasible" if chosen else "nothing in time"}
    if chosen is None:
        return incumbent
    incumbent = _keep_better(objective, part, incumbent, pack_selection(part, chosen))
    tries = cuts = 0
    misses: list[str] = []
    while "search" in planners.names() and objective.benefit_first and optimal and not deadline.expired():
        tries += 1
        weighted, chosen = model.least_peaks(model.lost_of(chosen), deadline.share(0.3), settings)
        if chosen is None:
            break
        if model.exact and tries == 1 + cuts:  # no selection excluded without proof yet
            staged.weighted = weighted
        packed, failed = _pack_exactly(part, objective, chosen, deadline.share(0.5), settings, seed)
        incumbent = _keep_better(objective, part, incumbent, packed)
        if packed is not None:
            staged.proven = _meets(objective, part, packed, staged)
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
    staged.stats.update(tries=tries, proven_cuts=cuts, misses=misses, proven=staged.proven)
    return incumbent


def _keep_better(objective: Objective, part: Part, incumbent: list[Choice] | None,
                 mine: list[Choice] | None) -> list[Choice] | None:
    return mine if mine is not None and (incumbent is None or _better(objective, part, mine, incumbent)) else incumbent


def _meets(objective: Objective, part: Part, choices: list[Choice], staged: Staged) -> bool:
    """The part's plan reaches the staged bounds on ``L`` and ``W``."""
    if staged.lost is None or staged.weighted is None:
        return False
    placements = part.placements(choices)
    weights = objective.weights(part.problem)
    peak = peaks(part.sub_problem, placements)
    return (objective.lost(part.problem, placements) <= staged.lost
            and sum(weights[m] * peak[m] for m in part.memories) <= staged.weighted)


def _pack_exactly(part: Part, objective: Objective, chosen: list[str], deadline: Deadline, settings: Settings,
                  seed: int) -> tuple[list[Choice] | None, tuple[str, list[int], bool] | None]:
    """Each memory's selected units packed by the search engine, alone in that memory (a weight-0
    memory only within its capacity, the others at their least peak): the part's plan, or None
    and (memory, unit indices, whether the search proved they do not pack there)."""
    weights = objective.weights(part.problem)
    placements: dict[str, Placement] = {}
    groups = [(m, [k for k, c in enumerate(chosen) if c == m]) for m in part.memories]
    left = len(part.units)
    for m, ks in (g for g in groups if g[1]):  # fastest first: capacitated memories are the ones that may not pack
        goal = Objective(Goal.MIN_PEAK if weights[m] else Goal.FEASIBLE)
        plan = planners.solve(_alone(part, m, ks), "search", deadline=deadline.share(len(ks) / max(left, 1)),
                              seed=seed, workers=settings.workers, objective=goal)
        left -= len(ks)
        if not plan.found:
            return None, (m, ks, plan.status is Status.INFEASIBLE)
        placements.update(plan.placements)
    return settle(part, placements), None


def _alone(part: Part, memory: str, ks: list[int]) -> Problem:
    """The units ``ks`` of the part as a problem of their own, in ``memory`` only."""
    ids = {bid for k in ks for bid, _ in part.units[k].members}
    buffers = tuple(replace(b, allowed=None, blocked=(), fixed_memory=b.fixed_memory and memory, hint_memory=None,
                            hint_offset=None) for b in part.problem.buffers if b.id in ids)
    relative = tuple(r for r in part.problem.relative if r.buffer in ids and r.base in ids)
    return Problem(buffers, (part.problem.memory(memory),), relative)


def _solve_part(part: Part, clock: Deadline, settings: Settings, objective: Objective,
                incumbent: list[Choice] | None, seed: int, report: Callable[[Result], None],
                goal: dict[str, int] | None, proven: dict[str, int]) -> Result:
    """``solve_part``'s stages; ``proven`` receives the search members' per-memory bounds (bytes)."""
    left = clock.left
    stats: dict[str, object] = {}
    if incumbent is not None and objective.optimizes and at_floor(objective, part, incumbent):
        return part_result(part, None, incumbent, True, False, None, "", stats)
    if not objective.optimizes and incumbent is not None:
        return part_result(part, None, incumbent, False, False, None, "", stats)

    def reached(choices: list[Choice] | None) -> bool:
        return goal is not None and choices is not None and all(
            v <= goal.get(m, v) for m, v in part_peaks(part, choices).items())

    if reached(incumbent):
        return part_result(part, None, incumbent, False, False, None, "", stats)

    # 1. the exact search engine (issue 5) where registered, for single-memory parts
    for name in SEARCH_MEMBERS:
        if name not in planners.names() or len(part.memories) != 1:
            continue
        if (len(part.units) > SEARCH_MAX_UNITS and clock.limited
                and left() * SEARCH_SHARE < SEARCH_SECONDS_PER_UNIT * len(part.units)):
            continue
        try:  # its work counts against this part's deadline (deterministic mode too)
            plan = planners.solve(part.sub_problem, name, deadline=clock.share(SEARCH_SHARE),
                                  seed=seed, objective=objective, workers=settings.workers,
                                  goal=None if goal is None else {m: v * part.scale for m, v in goal.items()})
        except Exception as e:  # noqa: BLE001 - a failing member must not sink the portfolio; reported
            stats[f"{name}_error"] = f"{type(e).__name__}: {e}"
            continue
        stats[f"{name}_status"] = plan.status.value
        for m, v in plan.lower_bound.items():
            proven[m] = max(proven.get(m, 0), v)
        if plan.status == Status.INFEASIBLE:
            return Result(None, proven_infeasible=True, message=plan.message, stats=stats)
        if plan.found:
            mine = settle(part, plan.placements)
            if mine is not None and (incumbent is None or _better(objective, part, mine, incumbent)):
                incumbent = mine
            if plan.status == Status.OPTIMAL and mine is not None:
                return part_result(part, None, mine, True, False, None, "", stats)
            if reached(incumbent):
                return part_result(part, None, incumbent, False, False, None, "", stats)

    if len(part.units) > FULL_MODEL_MAX_UNITS:  # too large for the full model: LNS only
        if incumbent is None:
            return Result(None, message="no plan found for a part too large for the full model", stats=stats)
        incumbent, lns_stats = lns(part, incumbent, settings, objective, clock, seed, report, goal=reached)
        stats.update(lns_stats)
        return part_result(part, None, incumbent, False, False, None, stop_reason(clock), stats)

    # 2. CP-SAT on the whole part, warm-started, until it stalls
    # only a plan at least as good is of interest; per memory that holds for one memory only
    single = incumbent is not None and objective.optimizes and len(part.memories) == 1
    ceiling = part_peaks(part, incumbent) if single else None
    try:
        pm = PartModel(part, objective, ceiling=ceiling)
    except OverflowError as e:
        if incumbent is not None:
            return part_result(part, None, incumbent, False, False, None, str(e), stats)
        return Result(None, message=str(e), stats=stats)
    if incumbent is not None:
        pm.hint(dict(enumerate(incumbent)))

    def relay(choices, value, bound):
        if choices is not None:
            report(part_result(part, pm, [c for _, c in sorted(choices.items())], False, False, bound))

    stall = max(2.0, 0.2 * left()) if clock.limited else None
    # deterministic runs cannot stop on a stall (wall-clock): they give the full model half
    out = run(pm, settings, clock.share(0.5) if clock.deterministic else clock, relay, stall=stall)
    stats["cpsat_status"] = out.status
    if out.choices is None and out.infeasible and ceiling is None:
        return Result(None, proven_infeasible=True, message="CP-SAT proved that no plan fits the capacities", stats=stats)
    if out.choices is not None and (incumbent is None or _better(objective, part, out.choices, incumbent)):
        incumbent = out.choices
    if incumbent is None:
        return Result(None, message=f"no plan found: {stop_reason(clock)}", stats=stats)
    best_bound = out.bound
    if out.optimal or not objective.optimizes or reached(incumbent):
        return part_result(part, pm, incumbent, out.optimal, False, best_bound, "", stats)

    # 3. large-neighbourhood search around the peak while time is left
    if not clock.limited:  # without a limit the full model ran to its proof
        return part_result(part, pm, incumbent, False, False, best_bound, "", stats)
    incumbent, lns_stats = lns(part, incumbent, settings, objective, clock, seed, report, goal=reached)
    stats.update(lns_stats)
    if left() > 1.0 and lns_stats.get("lns_improved") and not reached(incumbent):
        # with a better hint, the full model may now close the gap
        ceiling = part_peaks(part, incumbent) if len(part.memories) == 1 else None
        pm = PartModel(part, objective, ceiling=ceiling)
        pm.hint(dict(enumerate(incumbent)))
        out = run(pm, settings, clock, relay)
        stats["cpsat_final_status"] = out.status
        if out.choices is not None and _better(objective, part, out.choices, incumbent):
            incumbent = out.choices
        if out.optimal:
            return part_result(part, pm, incumbent, True, False, out.bound, "", stats)
        best_bound = max(best_bound or 0, out.bound or 0) or None
    return part_result(part, pm, incumbent, False, False, best_bound, stop_reason(clock), stats)


def _better(objective: Objective, part: Part, a: list[Choice], b: list[Choice]) -> bool:
    """Plan ``a`` is better than ``b`` under ``objective`` (the objective of the whole problem)."""
    return part_value(objective, part, a) < part_value(objective, part, b)


def lns(part: Part, incumbent: list[Choice], settings: Settings, objective: Objective,
        clock: Deadline, seed: int, report: Callable[[Result], None],
        goal: Callable[[list[Choice]], bool] = lambda c: False) -> tuple[list[Choice], dict]:
    """Free the units alive around a unit at the peak (or the highest units: a band below the
    peak), re-solve with the rest fixed; repeat.

    A move is kept when the freed region's highest top goes down without any peak going up, so
    the number of units at the peak shrinks until the peak itself drops.
    """
    rng = random.Random(seed)
    left = clock.left
    w = objective_weights(part.problem)
    units = part.scaled
    n = len(units)
    starts = np.array([u.start for u in units], np.int64)
    ends = np.array([u.end for u in units], np.int64)
    size = min(n, 40)  # units freed per move; grows when moves are solved fast, shrinks on timeouts
    iters = improved = 0
    cur = list(incumbent)
    while left() > 0.5 and n > 1 and not goal(cur):
        peak = part_peaks(part, cur)
        tops = [cur[i][1] + units[i].top for i in range(n)]
        at_peak = [i for i in range(n) if tops[i] >= peak[cur[i][0]] and peak[cur[i][0]] > part.lower[cur[i][0]]]
        if not at_peak:
            break
        center = units[rng.choice(at_peak)]
        if iters % 2:  # a band: the highest units anywhere (a long thin unit on top needs room at all times)
            near = sorted(range(n), key=lambda i: (-tops[i], rng.random()))
        else:  # a window: the highest units alive with the peak unit first, then the nearest in time
            near = sorted(range(n), key=lambda i: (max(units[i].start - center.end, center.start - units[i].end, 0),
                                                   -tops[i], rng.random()))
        free = sorted(near[:size])
        touch = np.zeros(n, bool)  # units alive together with some freed unit: they stay as obstacles
        for i in free:
            touch |= (starts < units[i].end) & (units[i].start < ends)
        touch[free] = False
        fixed = {int(i): cur[i] for i in np.flatnonzero(touch)}
        region_top: dict[str, int] = {}
        for i in free:
            m = cur[i][0]
            region_top[m] = max(region_top.get(m, 0), tops[i])
        pm = PartModel(part, objective if objective.optimizes else Objective(), active=free, fixed=fixed,
                       ceiling=peak, fixed_count=False)
        pm.hint({i: cur[i] for i in free})
        budget = clock.part(max(1.0, 0.1 * left()))
        out = run(pm, settings, budget)
        iters += 1
        if out.choices is not None:
            new = list(cur)
            for i, c in zip(pm.active, out.choices):
                new[i] = c
            new_top: dict[str, int] = {}
            for i in free:
                m = new[i][0]
                new_top[m] = max(new_top.get(m, 0), new[i][1] + units[i].top)
            gain = sum(w[m] * v for m, v in new_top.items()) < sum(w[m] * v for m, v in region_top.items())
            if gain and not _better(objective, part, cur, new):
                cur = new
                improved += 1
                report(part_result(part, None, cur, False, False, None))
        if out.optimal:
            size = min(n, int(size * 1.3) + 1)
        elif out.choices is None or (out.dtime if clock.deterministic else out.seconds) >= budget.seconds * 0.9:
            size = max(8, int(size * 0.7))
    return cur, {"lns_moves": iters, "lns_improved": improved}
