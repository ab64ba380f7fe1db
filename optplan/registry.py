"""The one registry of planners, and the one place where raw answers become validated Plans.

Every planner, heuristic or exact, is registered with ``@planner("name")`` on a function
``(problem, **options) -> Result``. The registered callable has the public signature
``(problem, **options) -> Plan``: it times the call, combines the planner's proven bounds with
``optplan.core.bounds``, decides the status truthfully and runs the independent validator. A plan the
validator rejects raises PlannerBug; it never reaches the caller.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from os import PathLike

from optplan.core import jit
from optplan.core.bounds import infeasible_words, lower_bounds, reported_bounds
from optplan.core.deadline import Deadline, current, running
from optplan.core.errors import OptplanError, PlannerBug
from optplan.core.objective import Objective
from optplan.core.plan import Layout, Placement, Plan, Status, peaks
from optplan.core.problem import Problem
from optplan.core.validate import validate

# Modules whose import registers planners, in registry order; imported in that order as far as a
# caller needs (``compare`` wants the heuristics only, not OR-Tools, PuLP or the search).
_PLANNER_MODULES = (
    "optplan.heuristics",
    "optplan.solvers",
    "optplan.search",
    "optplan.portfolio",
)
# The planners outside the heuristics, and the module that registers each: looked up by name, such a
# planner imports its own family only (``auto`` on a small problem needs neither OR-Tools nor PuLP).
# tests/test_startup.py checks this table against what the families register.
HOMES = {
    "cpsat": "optplan.solvers",
    "milp-cbc": "optplan.solvers",
    "milp-highs": "optplan.solvers",
    "search": "optplan.search",
    "auto": "optplan.portfolio",
}


@dataclass
class Result:
    """What a planner function returns before the library checks it."""

    placements: Mapping[str, Placement] | None  # None: no plan found
    proven_optimal: bool = False  # the solver proved no better plan exists
    proven_infeasible: bool = False  # the solver proved no plan fits the capacities
    bound: dict[str, int] | None = None  # per-memory lower bounds the solver proved
    objective_bound: int | None = None  # proven bound on the weighted peaks (Objective: W)
    lost_bound: int | None = None  # proven bound on the benefit lost to slower memories (Objective: L)
    message: str = ""
    stats: dict[str, object] = field(default_factory=dict)


PlannerFn = Callable[..., Result]
# options of every planner: the registry turns them into one Deadline
TIME_OPTIONS = frozenset({"time_limit", "deterministic", "deadline"})
_REGISTRY: dict[str, Callable[..., Plan]] = {}
ROUTE = "auto"  # where a problem goes that its planner declines (``planner(declines=...)``)
_loaded = 0  # how many of _PLANNER_MODULES have been imported


def planner(name: str, clocks: bool = False, anytime: bool = False,
            declines: Callable[[Problem], str | None] | None = None) -> Callable[[PlannerFn], Callable[..., Plan]]:
    """Register ``fn`` under ``name``; the returned function yields validated Plans.
    ``clocks``: it handles concurrent lifetimes (vector clocks); others refuse such problems.
    ``anytime``: it improves its plan for as long as its deadline allows (hill-climb); the others
    make their plan and end, and a deadline (if ``fn`` takes one) only cuts them short.
    ``declines(problem)``: why the planner cannot take a problem (e.g. the search: memory choice),
    or None; such a problem goes to ``ROUTE`` (``stats["routed_to"]``, and the reason in the
    message), so no planner answers UNKNOWN where the portfolio finds a plan, and no planner
    below the portfolio imports it.

    Every planner runs under one Deadline (options ``time_limit``/``deterministic``/``deadline``),
    counted from the call: the kernels it needs are loaded (or, without a limit, compiled) within it
    when first used (``optplan.core.jit``), ``fn`` gets it less the time to check and report the plan (``FINISH_*``), and
    code deep below ``fn`` polls it through ``optplan.core.deadline.current()``."""

    def register(fn: PlannerFn) -> Callable[..., Plan]:
        params = set(inspect.signature(fn).parameters) - {"problem"}
        takes_deadline = "deadline" in params
        accepted = params | TIME_OPTIONS

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
            deadline = make_deadline(options)
            inner = _planning_part(problem, deadline)
            if takes_deadline:
                options["deadline"] = inner
            with running(deadline):  # the kernel gate decides on this deadline (validating the plan too)
                result = _answer(problem, fn, name, options, deadline, inner, declines, route=True)
                return finish(problem, result, name, time.perf_counter() - t0, objective)

        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        run.__wrapped__ = fn  # type: ignore[attr-defined]
        run.options = accepted  # type: ignore[attr-defined]
        run.clocks = clocks  # type: ignore[attr-defined]
        run.anytime = anytime  # type: ignore[attr-defined]
        run.declines = declines  # type: ignore[attr-defined]
        run.takes = params  # type: ignore[attr-defined]
        if name in _REGISTRY:
            raise RuntimeError(f"planner {name!r} registered twice")
        _REGISTRY[name] = run
        return run

    return register


def _answer(problem: Problem, fn: PlannerFn, name: str, options: dict[str, object], deadline: Deadline,
            inner: Deadline, declines: Callable[[Problem], str | None] | None, route: bool) -> Result:
    """``fn``'s raw answer on ``inner`` (``deadline`` less what is kept to finish the plan, or all of
    it), run within ``deadline``: a problem its lower bounds prove infeasible is answered without
    it, and one it declines goes to the ``ROUTE`` planner (``route``) or is answered without a plan;
    the kernels' and the deadline's notes added."""
    bounds = lower_bounds(problem)
    if bounds.infeasible is not None:
        result = Result(None, proven_infeasible=True, message=bounds.infeasible)
    else:
        with running(inner):
            why = declines(problem) if declines is not None else None
            if why and not route:
                result = Result(None, message=f"{name}: {why}")
            else:
                result = _route(problem, options, name, why) if why else fn(problem, **options)
    _note(result, jit.note())
    if deadline.deterministic and deadline.root.guard_hit:
        result.stats.setdefault("deterministic_wall_capped", 1)
        _note(result, (GUARDED, None))
    reason = deadline.cancelled
    if reason:
        result.stats["stopped"] = reason
        _note(result, (reason, None))
    return result


def member(problem: Problem, name: str, deadline: Deadline, **options: object) -> Result:
    """Planner ``name``'s raw Result on ``problem`` within ``deadline``, as the portfolio runs its
    members on its sub-problems (internal: not the public ``solve``).

    The options are the caller's typed values (``objective`` an Objective, ``params`` the planner's
    own settings); those the planner does not take, and None, are dropped, as ``solve`` drops them.
    Unlike ``solve`` the whole of ``deadline`` is the planner's (no time is kept to finish a user's
    plan: the caller's own call does that once), the options are not checked again, a problem the
    planner declines is answered without a plan (not routed to the portfolio that asked), and the
    placements come back unvalidated: the caller validates them, goes on without an invalid plan
    (``optplan.portfolio.members.judge``) and makes a valid one a Plan with ``verdict``."""
    fn = get(name)
    if problem.concurrent and not fn.clocks:  # type: ignore[attr-defined]
        raise OptplanError(f"planner {name!r} does not handle vector clocks (concurrent lifetimes)")
    takes = fn.takes  # type: ignore[attr-defined]
    given = {k: v for k, v in options.items() if k in takes and v is not None}
    if "objective" in takes:  # (every plan is judged by one: the problem's default if none is given)
        given["objective"] = Objective.parse(given.get("objective"), problem)  # type: ignore[arg-type]
    if "deadline" in takes:
        given["deadline"] = deadline
    with running(deadline):
        return _answer(problem, fn.__wrapped__, name, given, deadline, deadline,  # type: ignore[attr-defined]
                       fn.declines, route=False)  # type: ignore[attr-defined]


def _route(problem: Problem, options: dict[str, object], name: str, why: str) -> Result:
    """The ``ROUTE`` planner's raw answer to a problem that planner ``name`` declines (the
    options it takes, the same deadline), marked as routed."""
    target = get(ROUTE)
    # (not ``params``: each planner's settings are of its own type, and the route's are its defaults)
    result: Result = target.__wrapped__(problem, **{k: v for k, v in options.items()  # type: ignore[attr-defined]
                                                    if k in target.options and k != "params"})  # type: ignore[attr-defined]
    result.stats["routed_to"] = ROUTE
    result.message = "; ".join(filter(None, [f"{name}: {why}; solved by the {ROUTE!r} portfolio", result.message]))
    return result


# CPU seconds to validate, report and write a plan, per buffer (idealloc/S_1, 28.5k buffers: about
# 1.4 s for the validator, the plan's figures, the CLI's table and the plan file), kept from a
# wall-clock limit: times the machine's load per core (at load 9 on 2 cores a CPU second took 4-6
# wall seconds), at most FINISH_SHARE of the time left.
FINISH_SECONDS_PER_BUFFER = 5e-5
FINISH_SHARE = 0.5


GUARDED = "deterministic run stopped by a wall-clock guard: this answer may not repeat"


def _planning_part(problem: Problem, deadline: Deadline) -> Deadline:
    """What ``deadline`` leaves the planner once the plan's checking and reporting are set aside
    (deterministic: all its deterministic seconds, and the time set aside comes off its wall guard)."""
    if not deadline.limited:
        return deadline
    left = deadline.wall_left() if deadline.deterministic else deadline.left()
    keep = min(FINISH_SHARE * left, FINISH_SECONDS_PER_BUFFER * len(problem.buffers) * slowdown())
    return deadline.part(None, wall=left - keep) if deadline.deterministic else deadline.part(left - keep)


def slowdown() -> float:
    """Wall seconds per CPU second of one thread now: the load average per core (this process
    included), at least 1 (1 where the system does not say)."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


POLL_EVERY = 16  # units a pure-Python pass places between looks at its deadline (a shorter one is never cut): a unit
# costs a millisecond or more (1000 units, load 4: 256 of them were 1.2 s past a 3 s limit), a look 1 us


def cut(what: str, deadline: Deadline | None = None) -> Result:
    """No plan: ``deadline`` (default: the running planner's) ran out while ``what`` ("placing 3 of 9
    units"); the message and ``stats["cut"]`` say so."""
    reason = (deadline or current()).cancelled or "time limit reached"
    return Result(None, message=f"{reason} while {what}", stats={"cut": what})


def _note(result: Result, note: tuple[str, dict[str, object] | None] | None) -> None:
    """Add ``note`` (message, ``stats["jit"]``) to ``result`` once."""
    if note is None:
        return
    text, jit_stats = note
    if jit_stats is not None:
        result.stats["jit"] = jit_stats
    if text not in result.message:
        result.message = f"{result.message}; {text}" if result.message else text


def make_deadline(options: dict[str, object]) -> Deadline:
    """The Deadline a planner runs on, from the public options ``time_limit`` (seconds, None: no
    limit) and ``deterministic``, or a ``deadline`` given as such (not both); pops them."""
    limit, det, given = (options.pop(k, None) for k in ("time_limit", "deterministic", "deadline"))
    if given is not None:
        if limit is not None or det:
            raise OptplanError("give either deadline= or time_limit=/deterministic=, not both")
        if not isinstance(given, Deadline):
            raise OptplanError(f"deadline must be an optplan.core.deadline.Deadline, got {type(given).__name__}")
        return given
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))
                              or not 0 < limit < float("inf")):
        raise OptplanError(f"time_limit must be a finite number of seconds > 0, got {limit!r}")
    return Deadline(None if limit is None else float(limit), bool(det))


def finish(problem: Problem, result: Result, name: str, seconds: float, objective: Objective | None = None) -> Plan:
    """Turn a raw Result into a Plan: validation (an invalid plan raises PlannerBug), bounds,
    truthful status (``objective`` defaults to the problem's default objective)."""
    if result.placements is not None:
        violations = validate(problem, result.placements)
        if violations:
            raise PlannerBug(f"planner {name!r} produced an invalid plan: {violations[0]} ({len(violations)} violations)")
    return verdict(problem, result, name, seconds, objective)


def verdict(problem: Problem, result: Result, name: str, seconds: float, objective: Objective | None = None) -> Plan:
    """``finish`` for a Result whose placements the caller has validated already (the portfolio,
    which goes on without a member's invalid plan instead of raising): bounds, truthful status."""
    objective = Objective.parse(objective, problem)
    bounds = lower_bounds(problem)
    lower = dict(bounds.lower)
    for m, v in (result.bound or {}).items():
        lower[m] = max(lower[m], int(v))
    weights = objective.weights(problem)
    weighted = max(sum(weights[m] * lower[m] for m in lower), int(result.objective_bound or 0))
    lost = max(objective.lost_floor(problem), int(result.lost_bound or 0))
    objective_bound = objective.combine(problem, weighted, lost)
    if result.placements is None:  # no peak; infeasible: no bound either (no plan has one)
        status = Status.INFEASIBLE if result.proven_infeasible else Status.UNKNOWN
        message = infeasible_words(problem, result.message) if result.proven_infeasible else result.message
        return Plan({}, status, name, {}, {} if result.proven_infeasible else lower, seconds, objective, None,
                    None if result.proven_infeasible else objective_bound, message, dict(result.stats))
    peak = peaks(problem, result.placements)
    value = objective.value(problem, result.placements)
    at_bounds = all(peak[m] <= lower[m] for m in peak) and (
        not objective.counts_benefit or objective.lost(problem, result.placements) <= objective.lost_floor(problem))
    optimal = result.proven_optimal or at_bounds or value <= objective_bound
    if result.proven_optimal:
        objective_bound = value
    status = Status.OPTIMAL if optimal else Status.FEASIBLE
    placements = result.placements if isinstance(result.placements, Layout) else dict(result.placements)  # (read-only)
    reported = reported_bounds(problem, result.placements, peak, lower, weights, optimal and objective.optimizes)
    return Plan(placements, status, name, dict(peak), dict(reported), seconds, objective, value,
                objective_bound, result.message, dict(result.stats),
                objective.components(problem, value, objective_bound))


def _load(until: Callable[[], bool] = lambda: False) -> None:
    """Import ``_PLANNER_MODULES`` in order until ``until()`` holds (default: all of them)."""
    global _loaded
    while _loaded < len(_PLANNER_MODULES) and not until():
        _loaded += 1
        importlib.import_module(_PLANNER_MODULES[_loaded - 1])


def names() -> list[str]:
    """Registered planner names: by package in ``_PLANNER_MODULES`` order, then as registered
    (stable however the modules happened to be imported)."""
    _load()
    return _names()


def _names() -> list[str]:
    """``names()`` of the planners registered so far."""

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
    _load(until=lambda: _loaded >= 1)  # the heuristics' package: the first
    return [n for n in _names() if _REGISTRY[n].__wrapped__.__module__.startswith("optplan.heuristics.")]  # type: ignore[attr-defined]


def get(name: str) -> Callable[..., Plan]:
    """The planner registered as ``name``, importing its family (``HOMES``, after the heuristics, so
    that planners and kernel groups register in one order; else the families in order until it is
    found). An unknown name raises OptplanError with the closest known one."""
    if not isinstance(name, str):
        raise OptplanError(f"a planner is named by a string (see optplan.registry.names()), got {type(name).__name__} {name!r:.60}")
    if name not in _REGISTRY and name in HOMES:
        _load(until=lambda: _loaded >= 1)  # the heuristics first, whichever family is asked for (as solvers/ does)
        importlib.import_module(HOMES[name])
    _load(until=lambda: name in _REGISTRY)
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known planners: {', '.join(_REGISTRY)}"
        raise OptplanError(f"unknown planner {name!r}; {hint}") from None


def registered(name: str) -> bool:
    """Whether a planner ``name`` exists, imported as ``get`` would (an optional member of the
    portfolio asks so, without importing every family as ``names()`` does)."""
    try:
        get(name)
    except OptplanError:
        return False
    return True


def solve(problem: Problem, planner: str = "auto", **options: object) -> Plan:
    """Run the named planner, passing only the options it accepts (e.g. ``time_limit``).

    The options: ``time_limit`` (seconds; None: no limit), ``deterministic`` (count the limit in
    deterministic seconds), ``seed``, ``workers`` (solver threads), ``objective`` (``"min-peak"``,
    ``"fast-first"``, ``"weighted"``, ``"feasible"`` or an Objective; default: the problem's) and
    ``progress`` (a callback). An option no planner knows, or a value of the wrong type or range,
    raises OptplanError: a typo must not silently run without it. An option another planner takes
    is dropped. The returned Plan has passed the independent validator."""
    if not isinstance(problem, Problem):
        hint = "; read a file with optplan.formats.read_problem(path)" if isinstance(problem, (str, PathLike)) else ""
        raise OptplanError(f"solve() takes a Problem, got {type(problem).__name__} {problem!r:.60}{hint}")
    fn = get(planner)
    if not set(options) <= _known():  # perhaps a planner not imported yet takes it
        _load()
    known = _known()
    for name, value in options.items():
        check_option(name, value, known)
    accepted = fn.options  # type: ignore[attr-defined]
    return fn(problem, **{k: v for k, v in options.items() if (k in accepted or k == "objective") and v is not None})


def _known() -> set[str]:
    """The options of the planners imported so far, and the checked ones (``_OPTIONS``)."""
    return set(_OPTIONS).union(*(f.options for f in _REGISTRY.values()))  # type: ignore[attr-defined]


MAX_SEED, MAX_WORKERS = 2**31 - 1, 1024  # CP-SAT's seed is a 32-bit integer; more threads is a typo


def _real(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _whole(v: object, lo: int, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


# option -> (is the value fine, what it must be); None always is (the planner's default). Each is some
# planner's option (tests/test_edges.py checks), so ``solve`` knows them before every planner is imported.
_OPTIONS: dict[str, tuple[Callable[[object], bool], str]] = {
    "time_limit": (lambda v: _real(v) and math.isfinite(v) and v > 0,  # type: ignore[arg-type,operator]
                   "a finite number of seconds > 0"),  # as on the command line
    "seed": (lambda v: _whole(v, 0, MAX_SEED), f"an integer from 0 to {MAX_SEED} (2^31-1)"),
    "workers": (lambda v: _whole(v, 1, MAX_WORKERS), f"an integer from 1 to {MAX_WORKERS}"),
    "iterations": (lambda v: _whole(v, 1, 2**63 - 1), "a positive integer"),
    "objective": (lambda v: isinstance(v, Objective) or v in Objective.NAMES, "one of " + ", ".join(map(repr, Objective.NAMES))),
    "deterministic": (lambda v: isinstance(v, bool), "True or False"),
    "deadline": (lambda v: isinstance(v, Deadline), "an optplan.core.deadline.Deadline"),
    "progress": (callable, "a function taking a dict"),
    "warm_start": (lambda v: isinstance(v, bool), "True or False"),
    "goal": (lambda v: isinstance(v, dict) and all(isinstance(m, str) and _whole(b, 0, 2**63 - 1) for m, b in v.items()),
             "a dict of memory name -> bytes"),
}


def check_option(name: str, value: object, known: set[str] | None = None) -> None:
    """Raise OptplanError (one line) if ``name`` is no planner's option or ``value`` is not one
    it can take."""
    if known is not None and name not in known:
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; options: {', '.join(sorted(known))}"
        raise OptplanError(f"unknown option {name!r}{hint}")
    why = option_error(name, value)
    if why:
        raise OptplanError(f"option {name}={value!r:.60}: {why}")


def option_error(name: str, value: object) -> str | None:
    """What is wrong with ``value`` for option ``name`` ('must be ...'), or None."""
    ok, what = _OPTIONS.get(name, (lambda v: True, ""))
    return None if value is None or ok(value) else f"must be {what}"
