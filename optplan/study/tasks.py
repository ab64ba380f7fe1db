"""One run of a study: a planner on an instance, in whatever process an executor chose."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass

from optplan.core.deadline import Deadline
from optplan.core.plan import Plan
from optplan.core.problem import Problem


@dataclass(frozen=True)
class Task:
    instance: str  # the instance's label
    planner: str
    time_limit: float | None
    workers: int = 1  # solver threads of one run (exact planners); runs in parallel share the cores
    seed: int = 0


def base_row(problem: Problem, task: Task) -> dict[str, object]:
    lo, hi = problem.time_span
    return {"instance": task.instance, "buffers": len(problem.buffers), "steps": hi - lo, "planner": task.planner,
            "time_limit": "" if task.time_limit is None else task.time_limit}


def plan_row(problem: Problem, task: Task, plan: Plan) -> dict[str, object]:
    """A run's own measurements. ``peak`` and ``lower_bound`` are the objective and its proven bound:
    the peak and the peak's bound for one memory, the objective's one number that ranks runs for
    several; ``peaks`` has each memory's peak, ``objective`` the objective and its quantities in
    words (e.g. the benefit kept in the fast memory and the slow memory's peak, each with its bound)."""
    from optplan.report.summary import objective_words, quantity_name

    found = plan.found
    return {**base_row(problem, task), "status": plan.status.value,
            "peak": plan.objective_value if found else "",
            "peaks": " ".join(f"{m}:{v}" for m, v in plan.peak.items()) if found else "",
            "objective": objective_words(problem, plan),
            "lower_bound": plan.objective_bound if plan.objective_bound is not None else "",
            "gap_to_bound": "" if plan.gap is None else round(plan.gap, 6),
            "gap_of": quantity_name(problem, plan, plan.gap_of) if found else "",  # several quantities: which
            "seconds": round(plan.seconds, 3), "message": plan.message.replace("\n", " ")}


NO_CLOCKS = "not run: does not handle vector clocks"


def solve_task(problem: Problem, task: Task, deadline: Deadline | None = None) -> Plan:
    """``deadline``: instead of the task's own time limit (compare shares one among its planners).
    A planner that cannot take the problem (vector clocks) is not run: a plan without placements says so."""
    from optplan import registry

    if problem.concurrent and not registry.get(task.planner).clocks:  # type: ignore[attr-defined]
        return registry.finish(problem, registry.Result(None, message=NO_CLOCKS), task.planner, 0.0)
    limit = {"time_limit": task.time_limit} if deadline is None else {"deadline": deadline}
    return registry.solve(problem, task.planner, workers=task.workers, seed=task.seed, **limit)


def run_task(problem: Problem, task: Task) -> dict[str, object]:
    """The CSV fields of one run (the comparisons with the instance's other runs are derived later).
    A planner that raises is an ERROR row, not a lost study."""
    t0 = time.perf_counter()
    try:
        plan = solve_task(problem, task)
    except Exception as e:  # noqa: BLE001 - recorded in the row, the study goes on
        last = traceback.extract_tb(e.__traceback__)[-1]
        msg = f"{type(e).__name__}: {e} ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})"
        return {**base_row(problem, task), "status": "ERROR", "seconds": round(time.perf_counter() - t0, 3), "message": msg}
    return plan_row(problem, task, plan)
