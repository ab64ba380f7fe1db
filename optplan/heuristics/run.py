"""Every registered heuristic on one problem: the warm start of the portfolio and of the MILP.

It lives with the heuristics (not in the portfolio) so that solvers can use it without
importing the portfolio, which sits above them.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from optplan import planners
from optplan.deadline import Deadline
from optplan.objective import Objective
from optplan.plan import Plan
from optplan.planners import heuristic_names
from optplan.problem import Problem

DETERMINISTIC_STEPS = 20_000  # hill-climb steps x units in deterministic mode (about 1 s on A-E)
IMPROVING_DEFAULT = 1.0  # seconds an improving heuristic takes when run on its own (hill-climb's default)


def improving(name: str) -> bool:
    """Heuristics that improve for as long as their budget allows (they take a deadline)."""
    return "deadline" in planners.get(name).options  # type: ignore[attr-defined]


def run_heuristics(problem: Problem, deadline: Deadline, seed: int = 0, workers: int = 1,
                   improve: bool = True, objective: Objective | None = None) -> tuple[list[Plan], dict[str, str]]:
    """Every constructive heuristic, always (compiled, they cost about a second on 60k buffers),
    on ``workers`` threads (the compiled kernels release the GIL); then, if ``improve``, the
    improving ones (hill-climb) one after the other, each on a part of ``deadline`` set by what
    the constructive ones cost: as much again, but no more than half of what is left, and at
    least what it takes when run on its own without a limit (``IMPROVING_DEFAULT``) if that fits.

    Every plan is judged by ``objective`` (default: the problem's), the one the caller optimises:
    its ``objective_value`` is what picks the warm start.

    Plans come back in registry order whatever finished first. A heuristic that raises is
    reported in the second value instead of sinking the portfolio. A deterministic deadline:
    improving heuristics get a step budget (the result must not depend on the machine's load).
    A cancelled deadline stops the improving ones at once.
    """
    names = heuristic_names()
    if problem.concurrent:  # vector clocks: only the heuristics that handle them
        names = [n for n in names if planners.get(n).clocks]  # type: ignore[attr-defined]
    constructive = [n for n in names if not improving(n)]
    t0 = time.perf_counter()
    results: dict[str, Plan] = {}
    errors: dict[str, str] = {}

    def one(name: str, **budget: object) -> None:
        try:
            results[name] = planners.solve(problem, name, seed=seed, objective=objective, **budget)
        except Exception as e:  # noqa: BLE001 - reported in the plan's stats
            errors[name] = f"{type(e).__name__}: {e}"

    if workers > 1 and len(constructive) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, constructive))
    else:
        for name in constructive:
            one(name)
    cost = time.perf_counter() - t0
    for name in (n for n in names if improving(n)):
        if not improve:
            errors[name] = "skipped: only constructive heuristics in this mode"
            continue
        if deadline.deterministic:
            one(name, iterations=max(5, DETERMINISTIC_STEPS // max(len(problem.units), 1)), deadline=deadline.part(None))
            continue
        left = deadline.left()
        seconds = max(IMPROVING_DEFAULT, cost) if not deadline.limited else max(min(IMPROVING_DEFAULT, left), min(cost, left / 2))
        one(name, deadline=deadline.part(seconds))
    return [results[n] for n in names if n in results], errors
