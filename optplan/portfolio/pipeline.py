"""``auto``'s pipeline on the whole problem: every heuristic (and the search's early dives), the best
plan as the warm start, then the problem reduced into independent parts, each solved exactly in its
share of the time (``part_stage``), and the plans merged.

Never worse than the best heuristic: its plan comes back when nothing after it does better. Where
every heuristic misses a capacity, the parts descend from a plan without the capacities instead
(``_elastic``); concurrent lifetimes (vector clocks) go to CP-SAT's pairwise model (``_clocks``).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from optplan import registry
from optplan.core.clocks import clock_graph
from optplan.core.deadline import Deadline
from optplan.core.objective import Goal, Objective
from optplan.core.plan import Plan, Status, peaks
from optplan.core.problem import Problem
from optplan.core.sizes import exact_size
from optplan.heuristics.run import run_heuristics
from optplan.parts import columns_only, reduce
from optplan.portfolio.context import Run
from optplan.portfolio.early import early_plan, early_search
from optplan.portfolio.params import PortfolioParams
from optplan.portfolio.part_stage import solve_parts
from optplan.registry import Result

if TYPE_CHECKING:
    from optplan.solvers.cpsat import Settings


def whole_problem(problem: Problem, deadline: Deadline, run: Run) -> Result:
    """``auto`` but for its first look and the search's race: heuristics, warm start, parts."""
    objective, seed, workers, params = run.objective, run.seed, run.workers, run.params
    t0 = time.perf_counter()
    left = deadline.left()  # keep time to merge and validate the plan (about 1 s per 30k buffers)
    work = deadline.part(left - min(0.1 * left, 0.2 + 1e-4 * len(problem.buffers))) if deadline.limited else deadline
    early = early_search(problem, work, objective, seed, workers, params)
    # every constructive heuristic always runs; the improving ones only when the peak matters
    # (at a capacity in feasibility mode the exact search answers sooner) and no staging relaxation
    # follows (benefit first with memory choices: its selections, packed, are the plans that count,
    # and hill-climb's seconds, about as many as the constructive ones took, are the relaxation's)
    staging = objective.benefit_first and any(len(u.memories) > 1 for u in problem.units)
    heur, errors = run_heuristics(problem, work, seed, workers - (early is not None),
                                  improve=objective.optimizes and not staging, objective=objective)
    stats: dict[str, object] = {"heuristics": {p.planner: p.objective_value for p in heur},
                                "heuristics_seconds": {p.planner: round(p.seconds, 2) for p in heur}}
    if early is not None:
        heur += early_plan(problem, objective, *early, heur, stats)
    best = min(heur, key=_value) if heur else None
    if errors:
        stats["heuristics_not_run"] = errors
    if best is not None and best.found:
        stats["warm_start"] = best.planner
        if run.offer is not None:
            run.offer(_kept(best, stats))
        if run.progress is not None:
            run.progress({"best": best.objective_value, "bound": best.objective_bound, "gap": best.gap,
                          "elapsed": time.perf_counter() - t0, "peak": best.peak, "lower": best.lower_bound})
    if best is not None and best.status == Status.OPTIMAL:
        return Result(best.placements, proven_optimal=True, bound=best.lower_bound,
                      message=f"{best.planner} reached the lower bound", stats=stats)
    if best is not None and best.found and not _solvers_affordable(work, run.params):
        stats["parts_not_run"] = (f"loading the exact solvers takes about {_import_seconds(run.params):.1f} s, "
                                  f"{work.left():.1f} s left")
        return _kept(best, stats)
    from optplan.solvers.cpsat import Settings

    settings = Settings(workers, seed)
    if problem.concurrent:  # vector clocks: the pairwise CP-SAT model; the search is routed around
        return _clocks(problem, best, objective, work, settings, stats)
    elastic = best is None or not best.found
    if elastic and _elastic_ok(problem) and objective.optimizes and _parts_affordable(problem, work, params):
        return _elastic(problem, work, t0, settings, run, stats)
    if not _parts_affordable(problem, work, params):
        stats["parts_not_run"] = (f"splitting {problem.unit_count:,} units into parts takes about "
                                  f"{_reduce_seconds(problem, params):.0f} s, {work.left():.1f} s left")
        if best is None or not best.found:
            return Result(None, message="no heuristic plan, and no time to split the problem into parts", stats=stats)
        return _kept(best, stats)
    red = reduce(problem, objective)
    merged = solve_parts(red, best, work, t0, settings, objective, run, dived=early is not None)
    merged.stats.update(stats)
    if best is not None and best.found and not merged.proven_infeasible and (
            merged.placements is None
            or objective.value(problem, merged.placements) > objective.value(problem, best.placements)):
        merged.stats["kept_heuristic"] = best.planner  # nothing after it did better
        return Result(best.placements, bound=_max_bound(merged.bound, best.lower_bound), message=merged.message,
                      stats=merged.stats)
    return merged


def _reduce_seconds(problem: Problem, params: PortfolioParams, one_part: bool = False) -> float:
    """Wall seconds ``reduce`` would take on ``problem`` now (``reduce_*seconds_per_unit``)."""
    per_unit = params.reduce_one_part_seconds_per_unit if one_part else \
        params.reduce_columns_seconds_per_unit if columns_only(problem) else params.reduce_seconds_per_unit
    return per_unit * problem.unit_count * registry.slowdown()


def _kept(best: Plan, stats: dict[str, object]) -> Result:
    """The best heuristic plan as the answer, with the stats so far: where no exact stage runs."""
    return Result(best.placements, bound=best.lower_bound, stats={**stats, "kept_heuristic": best.planner})


def _import_seconds(params: PortfolioParams) -> float:
    """Wall seconds importing the exact solvers would take now (``solvers_import_seconds``)."""
    return params.solvers_import_seconds * registry.slowdown()


def _solvers_affordable(work: Deadline, params: PortfolioParams) -> bool:
    """Whether the time left covers importing the exact solvers (which nothing interrupts) twice
    over; always when they are imported, without a limit, or on a deterministic deadline (the plan
    must not depend on the load)."""
    return (not work.limited or work.deterministic or "ortools.sat.python.cp_model" in sys.modules
            or work.left() >= 2 * _import_seconds(params))


def _parts_affordable(problem: Problem, work: Deadline, params: PortfolioParams) -> bool:
    """Whether the time left covers splitting the problem into parts (a pass in Python that
    cannot be interrupted), with time to spare for the parts: at the cost of several parts, or of
    one when the buffers of a plain problem form one time section. Deterministic deadlines: always
    (their seconds do not count it, and the plan must not depend on the load)."""
    if not work.limited or work.deterministic or work.left() >= 2 * _reduce_seconds(problem, params):
        return True
    cols = problem.columns
    held = cols.size > 0  # (units without bytes are no part's)
    return (cols.plain and len(problem.memories) == 1 and _one_section(cols.start[held], cols.end[held])
            and work.left() >= 2 * _reduce_seconds(problem, params, one_part=True))


def _one_section(start: np.ndarray, end: np.ndarray) -> bool:
    """No time step splits these lifetimes (``reduce.time_sections`` would find one section)."""
    order = np.argsort(start, kind="stable")
    s, reach = start[order], np.maximum.accumulate(end[order])
    return not (s[1:] >= reach[:-1]).any()



def _max_bound(a: dict[str, int] | None, b: dict[str, int]) -> dict[str, int]:
    return {m: max(v, (a or {}).get(m, 0)) for m, v in b.items()}


def _elastic_ok(problem: Problem) -> bool:
    """Relaxing capacities keeps the question when memories are decided: each memory's peak
    then only has to come down below its capacity."""
    return (any(m.capacity is not None for m in problem.memories)
            and all(len(u.memories) == 1 for u in problem.units))



def _clocks(problem: Problem, best: Plan | None, objective: Objective, deadline: Deadline, settings: Settings,
            stats: dict[str, object]) -> Result:
    """Concurrent lifetimes: CP-SAT's pairwise model from the best heuristic plan; the better wins."""
    from optplan.solvers.clock_models import MAX_CLOCK_PAIRS, cpsat_clocks

    hint = best.placements if best is not None and best.found else None
    pairs = clock_graph(problem).pairs()
    if hint is not None and pairs > MAX_CLOCK_PAIRS:
        return Result(hint, stats=stats, message=f"{pairs:,} conflicting pairs: too many for the pairwise exact model; "
                                                 "the best heuristic plan stands")
    exact = cpsat_clocks(problem, objective, deadline, settings, hint)
    exact.stats.update(stats, exact="cpsat (vector clocks)")
    if exact.placements is None or (hint is not None and not exact.proven_optimal
                                    and objective.value(problem, hint) < objective.value(problem, exact.placements)):
        return Result(hint, bound=exact.bound, proven_infeasible=exact.proven_infeasible and hint is None,
                      message=exact.message, stats=exact.stats)
    return exact


def _value(plan: Plan) -> tuple[int, float]:
    """A plan's rank: found first, then the lower objective value."""
    return (0 if plan.found else 1, plan.objective_value if plan.objective_value is not None else float("inf"))


def _elastic(problem: Problem, work: Deadline, t0: float, settings: Settings, run: Run,
             stats: dict[str, object]) -> Result:
    """Every heuristic hit a capacity: descend from a plan without capacities instead, each part
    stopping as soon as its peaks fit them (in feasibility mode the search answers the capacity
    question directly, sooner: B 10.2 s -> ~1 s)."""
    relaxed = problem.with_memories(replace(m, capacity=None) for m in problem.memories)
    peaks_first = Objective(Goal.MIN_PEAK)  # what the descent minimises
    rheur, _ = run_heuristics(relaxed, work, run.seed, run.workers, improve=True, objective=peaks_first)
    rbest = min(rheur, key=_value) if rheur else None
    stats["elastic_start"] = None if rbest is None else f"{rbest.planner}: {rbest.objective_value}"
    red = reduce(relaxed, peaks_first)
    merged = solve_parts(red, rbest, work, t0, settings, red.objective, run, within=problem)
    merged.stats.update(stats)
    peak = peaks(problem, merged.placements or {})
    over = [m.name for m in problem.memories if m.capacity is not None and merged.placements is not None
            and peak[m.name] > m.capacity]
    if merged.placements is not None and not over:
        return merged
    bound = merged.bound or {}
    proven = [m.name for m in problem.memories if m.capacity is not None and bound.get(m.name, 0) > m.capacity]
    if proven:
        return Result(None, proven_infeasible=True, stats=merged.stats,
                      message=f"memory {proven[0]!r}: every plan needs {exact_size(bound[proven[0]])}, "
                              f"its capacity is {exact_size(problem.memory(proven[0]).capacity or 0)}")
    where = over[0] if over else problem.memory_names[0]
    return Result(None, stats=merged.stats, message=f"no plan within the capacity of {where!r} found in time"
                  + (f" (best found needs {exact_size(peak[where])})" if over else ""))
