"""The registered exact planners ``cpsat``, ``milp-cbc`` and ``milp-highs``: each reduces the
problem into independent parts (``optplan.parts.solve_parts``) and solves each part's model in its share of the
time, or hands a problem with concurrent lifetimes to its vector-clock model (``clock_models``).

The MILP planners start from the best heuristic plan (the warm start, kept if the MIP finds
nothing better, also when a signal stops it before or while its solver runs) and solve in
lexicographic stages when the weighted objective is too large for doubles (``milp.model_weights``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import pulp

from optplan.core.bounds import lower_bounds
from optplan.core.deadline import Deadline
from optplan.core.errors import OptplanError
from optplan.core.objective import Objective
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.parts import Choice, Part, PartReport, Progress, settle, solve_parts
from optplan.registry import Result, planner
from optplan.solvers import milp_runners
from optplan.solvers.clock_models import cpsat_clocks, milp_clocks
from optplan.solvers.cpsat import FULL_MODEL_MAX_UNITS, PartModel, Settings, part_result, run
from optplan.solvers.milp import (
    BUILD_SECONDS_PER_PAIR,
    LOST_STAGE,
    Model,
    NoTime,
    best_heuristic,
    build_model,
    check_size,
    decode,
    read_choices,
    unit_pairs,
    warm_start,
)
from optplan.solvers.milp_runners import MilpSettings, Values
from optplan.solvers.outcome import Outcome, stop_reason
from optplan.solvers.part_plans import hint_choices, part_peaks, user_hints


@planner("cpsat", clocks=True)
def cpsat_planner(problem: Problem, deadline: Deadline, *, objective: Objective, workers: int = 2, seed: int = 0,
                  progress: Progress | None = None) -> Result:
    """CP-SAT on each independent part (user hints as warm start), no heuristics (``objective``:
    the registry's, parsed once)."""
    settings = Settings(workers, seed)
    if problem.concurrent:
        return cpsat_clocks(problem, objective, deadline, settings, user_hints(problem))
    return solve_parts(problem, objective, deadline,
                       lambda part, share, report: solve_part_cpsat(part, share, settings, objective, None, report),
                       progress)


def solve_part_cpsat(part: Part, deadline: Deadline, settings: Settings, objective: Objective,
                     incumbent: list[Choice] | None = None, report: PartReport | None = None) -> Result:
    """One CP-SAT run on a whole part (warm-started from ``incumbent`` or the user's hints)."""
    start = incumbent if incumbent is not None else hint_choices(part)
    if len(part.units) > FULL_MODEL_MAX_UNITS:
        msg = (f"{len(part.units)} units in one part exceed the full CP-SAT model's reach "
               f"({FULL_MODEL_MAX_UNITS}); planner 'auto' works on such parts by neighbourhood search")
        return part_result(part, None, start, False, False, None, msg) if start is not None else Result(None, message=msg)
    ceiling = None
    if start is not None and objective.optimizes and len(part.memories) == 1:
        ceiling = part_peaks(part, start)  # only a better or equal plan is of interest
    try:
        pm = PartModel(part, objective, ceiling=ceiling)
    except OverflowError as e:
        return Result(None, message=str(e))
    if start is not None:
        pm.hint(dict(enumerate(start)))

    def relay(choices: dict[int, Choice] | None, value: int | None, bound: int | None) -> None:
        if report and choices is not None:
            report(part_result(part, pm, [c for _, c in sorted(choices.items())], False, False, bound))

    out = run(pm, settings, deadline, relay)
    stats = {"cpsat_status": out.status, "cpsat_seconds": round(out.seconds, 3)}
    if out.solution is None:
        if out.infeasible and ceiling is None:
            return Result(None, proven_infeasible=True, message="CP-SAT proved that no plan fits the capacities", stats=stats)
        if start is not None:  # the warm start is all we have; keep CP-SAT's bound
            return part_result(part, pm, start, False, False, out.bound,
                               f"{stop_reason(deadline)}; warm start kept", stats)
        return Result(None, message=f"CP-SAT found no plan: {stop_reason(deadline)}", stats=stats)
    msg = "" if out.optimal else stop_reason(deadline)
    return part_result(part, pm, out.solution, out.optimal, False, out.bound, msg, stats)


@planner("milp-cbc", clocks=True)
def milp_cbc(problem: Problem, deadline: Deadline, *, objective: Objective, workers: int = 1, seed: int = 0,
             progress: Progress | None = None, warm_start: bool = True) -> Result:
    """MILP with CBC (bundled with PuLP), warm-started from the best heuristic plan
    (``warm_start=False``: the MIP alone, e.g. to compare with CP-SAT)."""
    settings = MilpSettings(solver="cbc", workers=max(1, int(workers)), seed=seed, warm_start=warm_start)
    return solve_milp(problem, objective, deadline, settings, progress)


@planner("milp-highs", clocks=True)
def milp_highs(problem: Problem, deadline: Deadline, *, objective: Objective, workers: int = 1, seed: int = 0,
               progress: Progress | None = None, warm_start: bool = True) -> Result:
    """MILP with HiGHS (needs the optional highspy), warm-started from the best heuristic plan
    (``warm_start=False``: the MIP alone)."""
    settings = MilpSettings(solver="highs", workers=max(1, int(workers)), seed=seed, warm_start=warm_start)
    return solve_milp(problem, objective, deadline, settings, progress)


def solve_milp(problem: Problem, objective: Objective, deadline: Deadline, settings: MilpSettings,
               progress: Progress | None = None) -> Result:
    """Heuristic warm start, then one MIP per independent part in its share of the time."""
    if not problem.concurrent:  # the vector-clock model counts its own pairs
        check_size(problem, f"milp-{settings.solver}")
    heuristics = deadline.part(min(1.0, 0.05 * deadline.left()))
    incumbent = best_heuristic(problem, heuristics, settings.seed, objective) if settings.warm_start else None
    if not objective.optimizes and incumbent is not None:
        return Result(incumbent, message="the heuristic plan fits the capacities; no MIP needed")
    if problem.concurrent:
        return milp_clocks(problem, objective, deadline, settings, incumbent)
    runs: list[dict[str, object]] = []

    def one(part: Part, share: Deadline, report: PartReport) -> Result:
        res = solve_part_milp(part, share, settings, objective, incumbent)
        if "mip_status" in res.stats:
            runs.append(res.stats)
        return res

    result = solve_parts(problem, objective, deadline, one, progress)
    result.stats.update(solver=settings.solver, heuristic_warm_start=incumbent is not None, mip_runs=runs)
    return result


def solve_part_milp(part: Part, deadline: Deadline, settings: MilpSettings, objective: Objective,
                    incumbent: Mapping[str, Placement] | None) -> Result:
    """The MIP of one part, warm-started from the heuristic plan, which is kept if nothing beats
    it (or nothing runs: no time to build the model, or a signal); in lexicographic stages when
    the weighted objective is too large for doubles."""
    t0 = time.perf_counter()
    start = settle(part, incumbent) if incumbent is not None else None
    floor = {}
    if len(part.memories) == 1:  # the whole memory is in this component: its bound holds here
        m = part.memories[0]
        floor[m] = lower_bounds(part.problem).lower[m] // part.scale
    stats: dict[str, object] = {"units": len(part.units)}
    if start is not None:
        peak = part_peaks(part, start)
        if all(peak[m] <= max(part.lower[m], floor.get(m, 0)) for m in part.memories) and not _trades_benefit(objective, part):
            # the heuristic plan meets the lower bound: nothing to prove
            return Result(part.placements(start), proven_optimal=objective.optimizes, stats=stats)
    pairs = unit_pairs(part.scaled)
    if deadline.limited and pairs * BUILD_SECONDS_PER_PAIR > deadline.left():
        return _not_built(part, start, f"about {pairs * BUILD_SECONDS_PER_PAIR:.0f} s", deadline, stats)
    try:
        model = build_model(part, objective, start, floor, deadline=deadline)
    except NoTime:
        return _not_built(part, start, "more", deadline, stats)
    except OptplanError as e:
        return Result(None if start is None else part.placements(start), message=str(e), stats=stats)
    if deadline.deterministic:  # its building counts, at the measured rate
        deadline.spend(pairs * BUILD_SECONDS_PER_PAIR)
    stats["order_binaries"] = sum(z is not None for *_, z in model.order)
    staged = _Staged(model, start)
    outs = []
    for n in range(len(model.stages or ("",))):
        outs.append(staged.solve(n, settings, deadline, stats))
        if staged.choices is None:
            break
    last = outs[-1]
    stats.update(last.stats, mip_status=", ".join(o.status for o in outs), mip_seconds=round(time.perf_counter() - t0, 3))
    if any("deterministic_wall_capped" in o.stats for o in outs):
        stats["deterministic_wall_capped"] = 1
    if staged.first_bound is not None and model.factor is not None:
        stats["mip_bound"] = staged.first_bound * part.scale * model.factor  # on the weighted peaks, in bytes
    if staged.choices is None:
        if last.infeasible:
            return Result(None, proven_infeasible=True, message=f"{settings.display} proved that no plan fits the capacities",
                          stats=stats)
        if "invalid_solution" in stats:
            return Result(None, message=f"{settings.display}'s solution is not a valid plan (a model bug)", stats=stats)
        return Result(None, message=f"{settings.display} found no plan: {stop_reason(deadline)} ({last.status})", stats=stats)
    message = "" if staged.proven else f"{settings.display}: {stats['mip_status']}"
    return _result(model, staged.choices, staged.proven, staged.first_bound, message, stats)


class _Staged:
    """The stages of a part's MIP (one unless ``model.stages``), each keeping what the earlier
    ones reached: the best plan so far, whether every stage was proven, the first stage's bound."""

    def __init__(self, model: Model, start: list[Choice] | None) -> None:
        self.model = model
        self.choices = start
        self.proven = True
        self.first_bound: int | None = None

    def solve(self, n: int, settings: MilpSettings, deadline: Deadline, stats: dict[str, object]) -> Outcome[Values]:
        """Stage n in its share of what is left (the stages left share it equally)."""
        model, part = self.model, self.model.part
        stages = model.stages or ("",)
        if n and self.choices is not None:  # keep what the earlier stage reached, minimize the next memory
            model.lp += model.peak[stages[n - 1]] <= model.key(self.choices)[n - 1], f"stage_{n}"
            model.lp.setObjective(model.lost_expr if stages[n] == LOST_STAGE else pulp.lpSum([model.peak[stages[n]]]))
            warm_start(model, self.choices)
        out = milp_runners.run(model.lp, settings, deadline.share(1 / (len(stages) - n)), warm=self.choices is not None,
                               step=model.step, optimizes=model.objective.optimizes)
        get = _solution(model, out.solution) if out.solution is not None else None
        raw = read_choices(part, get) if get is not None else None
        found = decode(part, raw, model, get) if raw is not None and get is not None else []
        if raw is not None and not found:
            stats["invalid_solution"] = out.status  # the model allowed what the validator rejects: a bug
        if found:
            best, how = min(found, key=lambda c: model.key(c[0]))
            if self.choices is None or model.key(best) <= model.key(self.choices):
                self.choices = best
                if how != "offsets":
                    stats["read_by"] = how  # the solver's rounded offsets were not the best valid plan
        if self.choices is None:
            return out
        value = model.value(self.choices) if not model.stages else model.key(self.choices)[n]
        # proven: the solver proved its solution optimal and ours is no worse; the least offsets
        # of its own order are no worse by construction (printed offsets may be rounded: CBC)
        by_order = any(how == "order" for _, how in found)
        self.proven = self.proven and out.optimal and out.value is not None and (value <= out.value or by_order)
        if n == 0:
            self.first_bound = out.bound
        return out


def _solution(model: Model, values: Values) -> Callable[[str], float | None]:
    """Values by name; an offset in no row (a unit alone in a memory whose peak no objective
    counts) is missing from the solver's answer: any value in its bounds will do, the lowest."""
    low = {v.name: v.lowBound for v in model.offset}
    return lambda name: values.get(name, low.get(name))


def _not_built(part: Part, start: list[Choice] | None, need: str, deadline: Deadline,
               stats: dict[str, object]) -> Result:
    """The part's model would take ``need`` to build, more than the deadline leaves: keep the warm start."""
    why = deadline.cancelled or f"the MIP of {len(part.units)} units needs {need} to build, more than the time left"
    stats["model_not_built"] = why
    message = f"{why}: model not built" + ("; heuristic plan kept" if start is not None else "")
    return Result(None if start is None else part.placements(start), message=message, stats=stats)


def _result(model: Model, choices: Sequence[Choice], proven: bool, bound: int | None, message: str,
            stats: dict[str, object]) -> Result:
    """A part's Result in bytes; bounds only where the model's floor does not blur them."""
    part = model.part
    g = part.scale
    if not model.objective.optimizes:
        return Result(part.placements(choices), message=message, stats=stats)
    b = model.value(choices) if proven else bound  # the first objective (the only one unless in stages)
    per_memory: dict[str, int] = {}
    objective_bound = lost_bound = None
    if b is not None and model.shift > 1:
        b, lost = model.split(b)  # the second holds given the first at its bound
        tw = model.objective.tier_weights(part.problem)
        lost_bound = lost * model.lost_unit + sum(u.gain * tw[u.memories[0]] for u in part.units if len(u.memories) == 1)
    if b is not None:
        floor_total = sum(model.weights[m] * model.floor[m] for m in model.peak)
        alone = [m for m in model.peak if model.weights[m] > 0]
        if len(alone) == 1 and (len(model.peak) == 1 or model.stages):
            m = alone[0]  # the first objective is this memory's peak (times its weight)
            if b > floor_total:  # above the floor, the model's peak is the part's peak there
                per_memory[m] = -(-b // model.weights[m]) * g
        elif model.factor is not None and all(model.floor[m] == part.lower[m] for m in model.peak):
            objective_bound = b * model.factor * g
    if proven and model.shift == 1 and LOST_STAGE not in model.stages and _trades_benefit(model.objective, part):
        proven, message = False, "the MIP minimizes the peaks only; the benefit kept in faster memories is not proven"
    return Result(part.placements(choices), proven_optimal=proven, bound=per_memory,
                  objective_bound=objective_bound, lost_bound=lost_bound, message=message, stats=stats)


def _trades_benefit(objective: Objective, part: Part) -> bool:
    """Units choose between memories and the objective values the benefit kept in faster ones:
    the MIP, which minimizes the peaks, proves nothing about that."""
    return objective.counts_benefit and any(len(u.memories) > 1 for u in part.units)
