"""``optplan compare``: the quick, in-process form of a study (no pool, no files written)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from optplan.core.deadline import Deadline
from optplan.core.plan import Plan
from optplan.core.problem import Problem
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
    """Every planner on every instance under ``paths``; ``prepare`` adjusts each problem (--capacity).
    ``time_limit`` holds for the whole comparison, reading included: each instance gets a share of
    what is left, each planner a share of its instance's (the last, compare's exact reference, gets what
    the heuristics leave); a planner reached after it is not run."""
    from optplan import registry
    from optplan.core import jit
    from optplan.formats import read_problem

    deadline = Deadline(time_limit)
    instances, _ = discover(paths)
    problems = [(i.label, prepare(read_problem(i.path))) for i in instances]  # all read before anything runs
    if len(names) > 1 and jit.compiled("validate"):  # numba starts in any case: the first plan (naive's)
        jit.warmup(["validate"])  # is checked with the kernel too (idealloc/S_1 in Python: 0.45 CPU s)
    out = []
    for k, (label, problem) in enumerate(problems):
        runs = []
        mine = deadline.share(1 / (len(problems) - k))
        for j, name in enumerate(names):
            task = Task(label, name, time_limit, workers=os.cpu_count() or 1, seed=seed or 0)  # one run at a time: every core
            if mine.expired():
                plan = registry.finish(problem, registry.Result(None, message="not run: time limit reached"), name, 0.0)
            else:
                plan = solve_task(problem, task, mine.share(1 / (len(names) - j)))
            runs.append((plan, plan_row(problem, task, plan)))
        runs.sort(key=lambda pr: (not pr[0].found, pr[0].objective_value or 0))
        derive([r for _, r in runs])
        out.append(Compared(label, problem, [p for p, _ in runs], [r for _, r in runs]))
    return out
