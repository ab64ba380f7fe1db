"""How ``auto`` runs a planner as one of its members on a sub-problem, and judges its answer.

A member runs through ``registry.member``: on the whole of the time ``auto`` gives it, with the
options as ``auto`` holds them, and without a user's Plan made and checked each time (the time kept
to finish that plan was 1.4 s a call on idealloc/S_1's 28.5k buffers). Its raw answer (``Attempt``,
which is also what crosses back from a forked member) is judged here (``judge``): the independent
validator checks its placements, and an invalid plan is recorded (``<name>_invalid``) and left
out, never offered or returned, so one faulty member does not sink the portfolio; a valid one
becomes a Plan with the status and bounds ``registry.finish`` would give it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from optplan import registry
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.core.plan import Placement, Plan
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.registry import Result


@dataclass
class Attempt:
    """Member ``name``'s raw answer and the seconds it took."""

    name: str
    result: Result
    seconds: float


def attempt(problem: Problem, name: str, deadline: Deadline, **options: object) -> Attempt:
    """Member ``name`` on ``problem`` within ``deadline`` (``registry.member``), timed."""
    t0 = time.perf_counter()
    result = registry.member(problem, name, deadline, **options)
    return Attempt(name, result, time.perf_counter() - t0)


def judge(problem: Problem, got: Attempt, objective: Objective, stats: dict[str, object]) -> Plan | None:
    """The member's answer as a Plan judged by ``objective``, or None when its placements fail the
    validator (``checked``)."""
    placements = got.result.placements
    if placements is not None and not checked(problem, got.name, placements, stats):
        return None
    return registry.verdict(problem, got.result, got.name, got.seconds, objective)


def checked(problem: Problem, name: str, placements: Mapping[str, Placement], stats: dict[str, object]) -> bool:
    """Member ``name``'s ``placements`` pass the validator; else the first violation is in
    ``stats["<name>_invalid"]`` (its final plan or one it relayed while it ran)."""
    violations = validate(problem, placements)
    if violations:
        stats[f"{name}_invalid"] = f"{violations[0]} ({len(violations)} violations)"
    return not violations


def run_member(problem: Problem, name: str, deadline: Deadline, stats: dict[str, object], *, objective: Objective,
        **options: object) -> Plan | None:
    """Member ``name`` in this process, judged; None if it failed (``stats["<name>_error"]``: a
    failing member must not sink the portfolio) or its plan was invalid."""
    try:
        got = attempt(problem, name, deadline, objective=objective, **options)
    except Exception as e:  # noqa: BLE001 - reported
        stats[f"{name}_error"] = f"{type(e).__name__}: {e}"
        return None
    return judge(problem, got, objective, stats)
