"""``auto``'s first look at a small problem: the heuristics here, in this thread, before anything else.

Most small problems have a plan at their lower bound that some constructive heuristic finds in
milliseconds (minimalloc/example.12: peak-stack). The full pipeline would get there too, but it
first starts a pool of threads for the heuristics, under a time limit a forked search beside them
(``SearchRace``), and it imports the exact stages (OR-Tools, the search's kernels): a hundred times
the work. The answer is the one the heuristics' stage would give (see ``quick_look``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.core.plan import Plan, Status
from optplan.core.problem import Problem
from optplan.heuristics import run as stage
from optplan.heuristics.kernels import numba_not_started
from optplan.portfolio.members import run_member
from optplan.portfolio.params import DEFAULTS, PortfolioParams
from optplan.registry import Result


def quick_look(problem: Problem, deadline: Deadline, seed: int, objective: Objective,
               progress: Callable[[dict], None] | None = None, params: PortfolioParams = DEFAULTS) -> Result | None:
    """``auto``'s answer when a constructive heuristic reaches the lower bound on a problem of up to
    ``params.quick_units`` units, else None (then the full pipeline runs). The heuristics that precede the
    first improving one in registry order run here one after the other, each as the heuristics'
    stage runs it, until one is optimal or ``params.quick_seconds`` of CPU are spent (not in deterministic
    mode, where what runs must not depend on the clock: there every one is tried). That plan is the
    stage's pick too: the first optimal plan in registry order (every plan before it is not optimal,
    and an improving heuristic, whose plan could tie, comes later), deterministic mode included."""
    if problem.unit_count > params.quick_units or deadline.expired():
        return None
    t0, cpu = time.perf_counter(), time.thread_time()
    names = stage.names_for(problem)  # the heuristics the stage runs, in its order
    ahead = list(itertools.takewhile(lambda n: not stage.improving(n), names))
    plans: list[Plan] = []
    for name in ahead:
        if (time.thread_time() - cpu > params.quick_seconds and not deadline.deterministic) or deadline.expired():
            return None
        with numba_not_started():  # (numba's start alone would cost ten times the look)
            plan = run_member(problem, name, deadline, {}, seed=seed, objective=objective)
        if plan is None:  # failed, or an invalid plan: the heuristics' stage runs it again and reports it
            return None
        plans.append(plan)
        if plans[-1].status is Status.OPTIMAL:
            return _answer(plans, names, progress, time.perf_counter() - t0)
    return None


def _answer(plans: list[Plan], names: list[str], progress: Callable[[dict], None] | None, elapsed: float) -> Result:
    """The Result ``auto``'s heuristics' stage gives when ``plans[-1]`` is optimal: the same message
    and statistics (the heuristics that ran, and why the others did not)."""
    best = plans[-1]
    ran = {p.planner for p in plans}
    stats: dict[str, object] = {
        "heuristics": {p.planner: p.objective_value for p in plans},
        "heuristics_seconds": {p.planner: round(p.seconds, 2) for p in plans},
        "heuristics_not_run": {n: f"not run: {best.planner}'s plan is optimal" for n in names if n not in ran},
        "warm_start": best.planner,
    }
    if progress is not None:
        progress({"best": best.objective_value, "bound": best.objective_bound, "gap": best.gap, "elapsed": elapsed,
                  "peak": best.peak, "lower": best.lower_bound})
    return Result(best.placements, proven_optimal=True, bound=best.lower_bound,
                  message=f"{best.planner} reached the lower bound", stats=stats)
