"""CP-SAT on a whole part: decisions at the proven bound, then minimization from the incumbent
until it stalls, then LNS (``lns``) while time is left.

The full model proves what the search does not (parts whose memories are chosen, several
memories, guillotine-hard packings); on a part too large for it, LNS alone improves the plan.
Its plans go to the part's shared incumbent, so the answer is the best any member found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optplan.core.deadline import Deadline
from optplan.core.objective import Goal, Objective
from optplan.parts import Part
from optplan.portfolio.context import PartRun
from optplan.portfolio.lns import lns
from optplan.portfolio.params import DEFAULTS
from optplan.registry import Result

if TYPE_CHECKING:
    from optplan.portfolio.incumbent import Incumbent
    from optplan.solvers.cpsat import PartModel, Settings


class ExactOutcome:
    """What CP-SAT and LNS concluded on a part (their plans are in the incumbent)."""

    def __init__(self, pm: PartModel | None = None, optimal: bool = False, infeasible: bool = False,
                 bound: int | None = None, message: str = "") -> None:
        self.pm, self.optimal, self.infeasible, self.bound, self.message = pm, optimal, infeasible, bound, message

    @property
    def settled(self) -> bool:
        return self.optimal or self.infeasible

    def result(self, part: Part, inc: Incumbent, stats: dict[str, object]) -> Result:
        from optplan.solvers.cpsat import part_result

        best, _ = inc.get()
        if self.infeasible and best is None:
            return Result(None, proven_infeasible=True, message="CP-SAT proved that no plan fits the capacities", stats=stats)
        if best is None:
            return Result(None, message=self.message or "no plan found", stats=stats)
        return part_result(part, self.pm, best, self.optimal, False, self.bound, self.message, stats)


def exact_stage(part_run: PartRun, clock: Deadline) -> ExactOutcome:
    """CP-SAT on the whole part: decisions at the proven bound first (``floor_decisions``), then
    minimization warm-started from the incumbent until it stalls; then LNS while time is left, and
    CP-SAT once more if LNS improved the plan. Parts too large for the full model get LNS only.
    Stops early at a proof, a plan at the goal, or a halt. ``part_run.proven``: per-memory bounds
    (bytes) proven so far, raised here by refuted decisions."""
    from optplan.solvers.cpsat import FULL_MODEL_MAX_UNITS, PartModel, run
    from optplan.solvers.outcome import stop_reason
    from optplan.solvers.part_plans import part_peaks

    part, settings, objective, inc, stats = part_run.part, part_run.settings, part_run.objective, part_run.inc, part_run.stats
    reached = part_run.reached
    left = clock.left
    incumbent, _ = inc.get()
    if reached(incumbent):
        return ExactOutcome(message=stop_reason(clock))
    if (len(part.units) <= FULL_MODEL_MAX_UNITS
            and floor_decisions(part, clock, settings, objective, inc, part_run.proven, stats,
                                part_run.params.floor_decision_share)):
        return ExactOutcome(optimal=True)
    incumbent, _ = inc.get()
    if reached(incumbent):
        return ExactOutcome(message=stop_reason(clock))
    if len(part.units) > FULL_MODEL_MAX_UNITS:  # too large for the full model: LNS only
        if incumbent is None:
            return ExactOutcome(message="no plan found for a part too large for the full model")
        stats.update(lns(part, inc, settings, objective, clock, part_run.seed, good_enough=reached, params=part_run.params))
        return ExactOutcome(message=stop_reason(clock))
    # only a plan at least as good is of interest; per memory that holds for one memory only
    single = incumbent is not None and objective.optimizes and len(part.memories) == 1
    ceiling = part_peaks(part, incumbent) if single and incumbent is not None else None
    try:
        pm = PartModel(part, objective, ceiling=ceiling)
    except OverflowError as e:
        return ExactOutcome(message=str(e))
    if incumbent is not None:
        pm.hint(dict(enumerate(incumbent)))

    def relay(choices, value, bound):
        if choices is not None:
            inc.offer([c for _, c in sorted(choices.items())], "cpsat")

    # stop on a stall only with a plan to improve: a model still looking for its first plan is not stalled
    stall = max(2.0, 0.2 * left()) if clock.limited and objective.optimizes and incumbent is not None else None
    # deterministic runs cannot stop on a stall (wall-clock): they give the full model half
    out = run(pm, settings, clock.share(0.5) if clock.deterministic else clock, relay, stall=stall)
    stats["cpsat_status"] = out.status
    inc.offer(out.solution, "cpsat")
    if out.infeasible and ceiling is None:
        return ExactOutcome(pm, infeasible=True)
    if inc.get()[0] is None:
        return ExactOutcome(message=f"no plan found: {stop_reason(clock)}")
    if out.optimal or not objective.optimizes or reached(inc.get()[0]):
        return ExactOutcome(pm, out.optimal, bound=out.bound)
    if not clock.limited:  # without a limit the full model ran to its proof
        return ExactOutcome(pm, bound=out.bound)
    lns_stats = lns(part, inc, settings, objective, clock, part_run.seed, good_enough=reached, params=part_run.params)
    stats.update(lns_stats)
    best_bound = out.bound
    incumbent, _ = inc.get()
    if left() > 1.0 and lns_stats.get("lns_improved") and not reached(incumbent):
        # with a better hint, the full model may now close the gap
        ceiling = part_peaks(part, incumbent) if len(part.memories) == 1 else None  # type: ignore[arg-type]
        pm = PartModel(part, objective, ceiling=ceiling)
        pm.hint(dict(enumerate(incumbent)))  # type: ignore[arg-type]
        out = run(pm, settings, clock, relay)
        stats["cpsat_final_status"] = out.status
        inc.offer(out.solution, "cpsat")
        if out.optimal:
            return ExactOutcome(pm, True, bound=out.bound)
        best_bound = max(best_bound or 0, out.bound or 0) or None
    return ExactOutcome(pm, bound=best_bound, message=stop_reason(clock))


def floor_decisions(part: Part, clock: Deadline, settings: Settings, objective: Objective, inc: Incumbent,
                    proven: dict[str, int], stats: dict[str, object],
                    share: float = DEFAULTS.floor_decision_share) -> bool:
    """Minimizing one memory on a wall clock, CP-SAT decides "a plan with peak <= the proven bound?"
    on up to ``share`` of the time (``floor_decision_share``): no plan raises the bound by one grid unit and the next
    decision follows; a plan is optimal (True); an undecided one ends the decisions. Minimization
    rarely proves a bound above the live load, while a decision at it often refutes it or finds the
    perfect packing (tight generated instances: experiments/bench_minimize.py)."""
    from optplan.solvers.cpsat import PartModel, run
    from optplan.solvers.part_plans import part_peaks

    # not in deterministic mode: on minimalloc A at 2 deterministic seconds the decisions left LNS no
    # move (5 without them), and the CP-SAT runs there are short shares already
    if not objective.optimizes or len(part.memories) != 1 or not clock.limited or clock.deterministic:
        return False
    if share <= 0:
        return False
    m = part.memories[0]
    floor = max(part.lower.get(m, 0), -(-proven.get(m, 0) // part.scale))
    budget = clock.share(share)
    decided = 0
    while budget.left() > 0 and not clock.expired():
        best, _ = inc.get()
        if best is not None and part_peaks(part, best)[m] <= floor:
            return True
        try:
            pm = PartModel(part, Objective(Goal.FEASIBLE), ceiling={m: floor})
        except OverflowError:
            return False
        out = run(pm, settings, budget)
        if out.solution is not None:
            inc.offer(out.solution, "cpsat-floor")
            stats["cpsat_floor"] = {"decisions": decided + 1, "found_at": floor * part.scale}
            return True  # at a proven bound
        if not out.infeasible:
            break
        decided += 1
        floor += 1
        proven[m] = max(proven.get(m, 0), floor * part.scale)
    stats["cpsat_floor"] = {"decisions": decided, "bound": floor * part.scale}
    return False

