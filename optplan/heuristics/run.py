"""Every registered heuristic on one problem: the warm start of the portfolio and of the MILP.

It lives with the heuristics (not in the portfolio) so that solvers can use it without
importing the portfolio, which sits above them.
"""

from __future__ import annotations

import time

from optplan import planners
from optplan.plan import Plan
from optplan.planners import heuristic_names
from optplan.problem import Problem

PREFERRED = ("linear-scan", "greedy-size")  # run first: cheap, and the best ones on large instances
DETERMINISTIC_STEPS = 20_000  # hill-climb steps x units in deterministic mode (about 1 s on A-E)


def run_heuristics(problem: Problem, seconds: float | None, seed: int,
                   deterministic: bool = False) -> tuple[list[Plan], dict[str, str]]:
    """Heuristics in preference order (each limited to an equal share of ``seconds`` if it
    takes a limit), until ``seconds`` are spent; the first always runs.

    Most heuristics take no time limit and some are slow on tens of thousands of buffers, so
    the next one only starts while the slowest so far would still fit in the budget. A heuristic
    that raises is reported in the second value instead of sinking the portfolio.
    ``deterministic``: all run (skipping by elapsed time would make the result depend on load).
    """
    names = sorted(heuristic_names(), key=lambda n: PREFERRED.index(n) if n in PREFERRED else len(PREFERRED))
    if problem.concurrent:  # vector clocks: only the heuristics that handle them
        names = [n for n in names if planners.get(n).clocks]  # type: ignore[attr-defined]
    out, errors = [], {}
    t0 = time.perf_counter()
    slowest = 0.0
    for k, name in enumerate(names):
        spent = time.perf_counter() - t0
        if seconds is not None and not deterministic and k > 0 and spent + slowest > seconds:
            errors[name] = "skipped: heuristics time budget spent"
            continue
        left = None if seconds is None else max(seconds - spent, 0.05)
        share = None if left is None else left / (len(names) - k)
        t1 = time.perf_counter()
        # deterministic: searching heuristics get a step budget instead of seconds
        budget = {"iterations": max(5, DETERMINISTIC_STEPS // max(len(problem.units), 1))} if deterministic else {"time_limit": share}
        try:
            out.append(planners.solve(problem, name, seed=seed, **budget))
        except Exception as e:  # noqa: BLE001 - reported in the plan's stats
            errors[name] = f"{type(e).__name__}: {e}"
        slowest = max(slowest, time.perf_counter() - t1)
    return out, errors
