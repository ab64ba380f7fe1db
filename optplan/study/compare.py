"""``optplan compare``: the quick, in-process form of a study (no pool, no files written)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from optplan.plan import Plan
from optplan.problem import Problem
from optplan.study.instances import discover
from optplan.study.results import Row, derive
from optplan.study.tasks import Task, plan_row, solve_task


@dataclass
class Compared:
    label: str
    problem: Problem
    plans: list[Plan]  # sorted: plans first, lowest objective first
    rows: list[Row]  # in the same order, with best_known, optimum and gap_to_best


def compare(paths: list[str], names: list[str], time_limit: float | None = None, seed: int | None = None,
            prepare: Callable[[Problem], Problem] = lambda p: p) -> list[Compared]:
    """Every planner on every instance under ``paths``; ``prepare`` adjusts each problem (--capacity)."""
    from optplan.formats import read_problem

    instances, _ = discover(paths)
    problems = [(i.label, prepare(read_problem(i.path))) for i in instances]  # all read before anything runs
    out = []
    for label, problem in problems:
        runs = []
        for name in names:
            task = Task(label, name, time_limit, seed=seed or 0)
            plan = solve_task(problem, task)
            runs.append((plan, plan_row(problem, task, plan)))
        runs.sort(key=lambda pr: (not pr[0].found, pr[0].objective_value or 0))
        derive([r for _, r in runs])
        out.append(Compared(label, problem, [p for p, _ in runs], [r for _, r in runs]))
    return out
