"""The one registry of planners, and the one place where raw answers become validated Plans.

Every planner, heuristic or exact, is registered with ``@planner("name")`` on a function
``(problem, **options) -> Result``. The registered callable has the public signature
``(problem, **options) -> Plan``: it times the call, combines the planner's proven bounds with
``optplan.bounds``, decides the status truthfully and runs the independent validator. A plan the
validator rejects raises PlannerBug; it never reaches the caller.
"""

from __future__ import annotations

import importlib
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from optplan.bounds import lower_bounds
from optplan.errors import OptplanError, PlannerBug
from optplan.objective import Objective
from optplan.plan import Placement, Plan, Status, peaks
from optplan.problem import Problem
from optplan.validate import validate

# Modules whose import registers planners, in registry order.
_PLANNER_MODULES = (
    "optplan.heuristics",
    "optplan.solvers",
    "optplan.search",
    "optplan.portfolio",
)


@dataclass
class Result:
    """What a planner function returns before the library checks it."""

    placements: dict[str, Placement] | None  # None: no plan found
    proven_optimal: bool = False  # the solver proved no better plan exists
    proven_infeasible: bool = False  # the solver proved no plan fits the capacities
    bound: dict[str, int] | None = None  # per-memory lower bounds the solver proved
    objective_bound: int | None = None  # proven bound on the weighted objective
    message: str = ""
    stats: dict[str, object] = field(default_factory=dict)


PlannerFn = Callable[..., Result]
_REGISTRY: dict[str, Callable[..., Plan]] = {}
_loaded = False


def planner(name: str, clocks: bool = False) -> Callable[[PlannerFn], Callable[..., Plan]]:
    """Register ``fn`` under ``name``; the returned function yields validated Plans.
    ``clocks``: it handles concurrent lifetimes (vector clocks); others refuse such problems."""

    def register(fn: PlannerFn) -> Callable[..., Plan]:
        accepted = set(inspect.signature(fn).parameters) - {"problem"}

        def run(problem: Problem, **options: object) -> Plan:
            t0 = time.perf_counter()
            if problem.concurrent and not clocks:
                raise OptplanError(f"planner {name!r} does not handle vector clocks (concurrent lifetimes); "
                                   f"use one of: {', '.join(clock_planners())}")
            unknown = set(options) - accepted - {"objective"}  # every plan is judged by one
            if unknown:
                raise OptplanError(f"planner {name!r} does not take option(s): {', '.join(sorted(unknown))}")
            objective = Objective.parse(options.pop("objective", None), problem)  # type: ignore[arg-type]
            if "objective" in accepted:
                options["objective"] = objective
            bounds = lower_bounds(problem)
            if bounds.infeasible is not None:
                result = Result(None, proven_infeasible=True, message=bounds.infeasible)
            else:
                result = fn(problem, **options)
            return finish(problem, result, name, time.perf_counter() - t0, objective)

        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        run.__wrapped__ = fn  # type: ignore[attr-defined]
        run.options = accepted  # type: ignore[attr-defined]
        run.clocks = clocks  # type: ignore[attr-defined]
        if name in _REGISTRY:
            raise RuntimeError(f"planner {name!r} registered twice")
        _REGISTRY[name] = run
        return run

    return register


def finish(problem: Problem, result: Result, name: str, seconds: float, objective: Objective | None = None) -> Plan:
    """Turn a raw Result into a Plan: bounds, truthful status, validation (``objective``
    defaults to the problem's default objective)."""
    objective = Objective.parse(objective, problem)
    bounds = lower_bounds(problem)
    lower = dict(bounds.lower)
    for m, v in (result.bound or {}).items():
        lower[m] = max(lower[m], int(v))
    objective_bound = objective.bound(problem, lower)
    if result.objective_bound is not None:
        objective_bound = max(objective_bound, int(result.objective_bound))
    if result.placements is None:
        status = Status.INFEASIBLE if result.proven_infeasible else Status.UNKNOWN
        return Plan({}, status, name, {m: 0 for m in lower}, lower, seconds, objective, None,
                    objective_bound, result.message, dict(result.stats))
    violations = validate(problem, result.placements)
    if violations:
        raise PlannerBug(f"planner {name!r} produced an invalid plan: {violations[0]} ({len(violations)} violations)")
    peak = peaks(problem, result.placements)
    value = objective.value(problem, result.placements)
    optimal = result.proven_optimal or all(peak[m] <= lower[m] for m in peak) or value <= objective_bound
    if result.proven_optimal:
        objective_bound = value
    status = Status.OPTIMAL if optimal else Status.FEASIBLE
    return Plan(dict(result.placements), status, name, peak, lower, seconds, objective, value,
                objective_bound, result.message, dict(result.stats))


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in _PLANNER_MODULES:
            importlib.import_module(module)


def names() -> list[str]:
    """Registered planner names: by package in ``_PLANNER_MODULES`` order, then as registered
    (stable however the modules happened to be imported)."""
    _load()

    def package(name: str) -> int:
        module = _REGISTRY[name].__wrapped__.__module__  # type: ignore[attr-defined]
        return next((i for i, m in enumerate(_PLANNER_MODULES) if module == m or module.startswith(m + ".")),
                    len(_PLANNER_MODULES))

    return sorted(_REGISTRY, key=package)


def clock_planners() -> list[str]:
    """The planners that handle vector clocks."""
    return [n for n in names() if _REGISTRY[n].clocks]  # type: ignore[attr-defined]


def heuristic_names() -> list[str]:
    """The registered heuristics (planners defined under ``optplan.heuristics``), in order."""
    return [n for n in names() if _REGISTRY[n].__wrapped__.__module__.startswith("optplan.heuristics.")]  # type: ignore[attr-defined]


def get(name: str) -> Callable[..., Plan]:
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise OptplanError(f"unknown planner {name!r}; known planners: {', '.join(_REGISTRY)}") from None


def solve(problem: Problem, planner: str = "auto", **options: object) -> Plan:
    """Run the named planner, passing only the options it accepts (e.g. ``time_limit``)."""
    fn = get(planner)
    accepted = fn.options  # type: ignore[attr-defined]
    return fn(problem, **{k: v for k, v in options.items() if (k in accepted or k == "objective") and v is not None})
