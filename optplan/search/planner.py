"""The ``search`` planner: MiniMalloc-style exact search for problems whose memories are decided.

It answers single-memory problems and multi-memory ones in which every unit has exactly one
possible memory (each memory is then its own problem); the ``auto`` portfolio hands it such
sub-problems, and the registry routes the others (``instance.unsupported``) to ``auto``. Minimization proves the optimal peak by searching upward from the lower bound.
Units with several footprint pieces are searched too; when a piece starts above its unit's lowest
byte the search is not complete and claims no proof (see ``engine.INEXACT_NOTE``).
"""

from __future__ import annotations

from collections.abc import Callable

from optplan.core import jit
from optplan.core.bounds import lower_bounds
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.sizes import exact_size
from optplan.core.units import Unit
from optplan.parts import time_sections
from optplan.registry import Result, planner
from optplan.search import engine
from optplan.search.instance import NO_LIMIT, Instance, build, unsupported
from optplan.search.orderings import section_totals
from optplan.search.params import DEFAULTS, SearchParams


def time_parts(units: list[Unit]) -> list[list[Unit]]:
    """Groups of units that share no time step with each other group (``parts.time_sections``):
    independent problems (the memory's peak is the highest of theirs), each solved with the
    ordering that suits it. Each group lists its units by start time (the orderings break ties by
    that index), and the zero-size units go with the first (they collide with nothing)."""
    by_start = sorted((u for u in units if u.pieces), key=lambda u: u.start)
    parts = time_sections(by_start)
    rest = [u for u in units if not u.pieces]
    if not parts:
        return [rest] if rest else []
    parts[0] += rest
    return parts


# memory choice is no branching decision of the search: the registry routes such problems to auto
@planner("search", declines=unsupported)
def search(problem: Problem, deadline: Deadline, *, objective: Objective, seed: int = 0, workers: int = 1,
           progress: Callable[[dict], None] | None = None,
           goal: dict[str, int] | None = None, params: SearchParams = DEFAULTS) -> Result:
    """Canonical-solution search (numba); ``workers`` threads share the ordering portfolio.
    A deterministic ``deadline``: time counted in search nodes (``params.nodes_per_second`` per second),
    one process: the same answer on every run and machine. ``goal``: per-memory peaks (bytes) that are
    good enough, when the problem is a part of a larger one whose memory cannot go below them:
    minimization stops at a plan under them instead of proving this part's own lower optimum.
    ``params``: the search's budgets, shares and rules (those not at their defaults are shown in
    ``stats["search_params"]``). ``objective``: the registry's, parsed once. ``progress`` gets the
    best peak and proven bound as they change, and the plan (``plan``, see ``_telling``) once it is whole."""
    if not jit.usable("search"):  # a time limit, and the kernels are not compiled (optplan.core.jit)
        return _without_kernels(problem, deadline, seed, workers, objective)
    compile_seconds = engine.ensure_compiled()
    lower = lower_bounds(problem).lower
    by_memory = {m: [u for u in problem.units if u.memories[0] == m] for m in problem.memory_names}
    # smaller parts first: the time they leave unused passes on to the larger ones
    parts_of = {m: sorted(time_parts(units), key=len) for m, units in by_memory.items()}
    placements, bound, messages = {}, {m: lower[m] for m in by_memory}, []
    enough = goal or {}
    peak: dict[str, int] = {}
    noted: set[str] = set()  # memories whose answer came with its own explanation
    infeasible, complete = False, True
    stats = engine.Stats()
    dive_peaks: dict[str, int | None] = {}
    for m, parts in parts_of.items():
        if len(parts) > 1:
            # good enough at once: any plan under the capacity, or one at the memory's bound
            target = max(lower[m], enough.get(m, 0)) if objective.optimizes else NO_LIMIT
            capacity = problem.memory(m).capacity
            found = _at_once(problem, m, by_memory[m], min(target, NO_LIMIT if capacity is None else capacity), deadline,
                             seed, stats, params)
            if found is not None:
                placements.update(found[0])
                peak[m] = dive_peaks[m] = found[1]
                parts_of[m] = []
    jobs = [(m, part) for m, parts in parts_of.items() for part in parts]
    for k, (m, part) in enumerate(jobs):
        share = len(part) / max(1, sum(len(p) for _, p in jobs[k:]))
        inst = build(problem, m, part, params.max_overlap_pairs)
        # the memory's bound need not hold for one part: cap it by the part's own live load
        own = int(section_totals(inst).max()) * inst.scale if inst.n and len(jobs) > 1 else lower[m]
        # a part need not go below the memory's proven bound: the memory's peak is the highest of its parts'
        told = None if progress is None else _telling(progress, placements, inst, k == len(jobs) - 1)
        ans = engine.solve(inst, problem.memory(m).capacity, min(lower[m], own), objective, deadline.share(share),
                           workers, seed, told, goal=max(bound[m], enough.get(m, 0)), params=params)
        stats.add(ans.stats)
        bound[m] = max(bound[m], ans.bound)  # each time part's proven bound holds for the memory
        prev = dive_peaks.get(m, 0)
        dive_peaks[m] = None if prev is None or ans.dive_peak is None else max(prev, ans.dive_peak)
        if ans.infeasible:
            infeasible = True
            messages.append(f"memory {m!r}: proven: no plan fits the capacity, {exact_size(problem.memory(m).capacity or 0)}")
            break
        if ans.note:
            noted.add(m)
            messages.append(f"memory {m!r}: {ans.note}")
        if ans.offsets is None:
            complete = False
            if ans.timed_out or not ans.note:
                messages.append(f"memory {m!r}: {deadline.cancelled or 'time limit reached'} without a plan under the "
                                f"capacity (bound {exact_size(bound[m])})")
            break
        placements.update(inst.placements(ans.offsets))
        peak[m] = max(peak.get(m, 0), ans.peak or 0)
    optimal = complete and not infeasible and all(peak.get(m, 0) <= bound[m] for m in by_memory)
    if complete and not infeasible and objective.optimizes:
        for m in by_memory:
            if peak.get(m, 0) > max(bound[m], enough.get(m, 0)) and m not in noted:
                messages.append(f"memory {m!r}: {deadline.cancelled or 'time limit reached'}; peak {exact_size(peak[m])}, "
                                f"proven bound {exact_size(bound[m])}")
    info = _info(stats, compile_seconds, dive_peaks, deadline, params)
    if infeasible:
        return Result(None, proven_infeasible=True, bound=bound, message="; ".join(dict.fromkeys(messages)), stats=info)
    if not complete:
        return Result(None, bound=bound, message="; ".join(dict.fromkeys(messages)), stats=info)
    return Result(placements, proven_optimal=optimal and objective.optimizes, bound=bound,
                  message="; ".join(dict.fromkeys(messages)), stats=info)


def _telling(progress: Callable[[dict], None], placed: dict[str, Placement], inst: Instance,
             whole: bool) -> Callable[[dict], None]:
    """The engine's reports on ``inst`` as the planner's: with the plan found so far (``plan``: a
    function that returns its placements) when it is a plan of the whole problem (``whole``: every
    other part is placed in ``placed`` already), so that a caller can take it before the search ends
    (auto's forked member relays it to the part's incumbent); the engine's offsets are its own. A
    function, not the placements: most reports only move the bound or go to a display, and building
    the placements costs a pass over every unit (28.5k on idealloc/S_1) per report."""

    def tell(info: dict) -> None:
        offsets = info.pop("offsets", None)
        if whole and offsets is not None:
            info["plan"] = lambda: {**placed, **inst.placements(offsets)}
        progress(info)
    return tell


def _info(stats: engine.Stats, compile_seconds: float, dive_peaks: dict[str, int | None], deadline: Deadline,
          params: SearchParams) -> dict[str, object]:
    """The plan's ``stats``: the search's work, and the settings that differ from the defaults."""
    info: dict[str, object] = {
        "nodes": stats.nodes, "nodes_per_second": round(stats.rate), "compile_seconds": round(compile_seconds, 3),
        "search_seconds": round(stats.seconds, 3), "runs": stats.runs, "dive_peak": dive_peaks,
        "winning_orderings": sorted(stats.winners)}
    if deadline.deterministic:
        info["deterministic_seconds"] = round(stats.nodes / params.nodes_per_second, 3)
    changed = params.changed()
    if changed:
        info["search_params"] = changed
    return info


def _at_once(problem: Problem, memory: str, units: list[Unit], target: int, deadline: Deadline, seed: int,
             stats: engine.Stats, params: SearchParams) -> tuple[dict[str, Placement], int] | None:
    """A plan of every time part of ``memory`` at once with a peak <= ``target`` bytes, from the
    whole memory's first descent (``engine.first_descent``), and its peak; None when that one
    descent does not find one (the parts are then searched one by one)."""
    whole = build(problem, memory, units, params.max_overlap_pairs)
    offsets, quick = engine.first_descent(whole, whole.scaled_capacity(target), deadline, seed, params)
    stats.add(quick)
    return None if offsets is None else (whole.placements(offsets), whole.top(offsets))


def _without_kernels(problem: Problem, deadline: Deadline, seed: int, workers: int, objective: Objective) -> Result:
    """No search: the best constructive heuristic's plan (the pure-Python reference packers, on
    ``deadline``), the plan ``auto`` would start from."""
    from optplan.heuristics.run import run_heuristics

    plans, _ = run_heuristics(problem, deadline, seed, workers, improve=False, objective=objective)
    found = [p for p in plans if p.found]
    stats: dict[str, object] = {"search": "not run: kernels not compiled"}
    if not found:
        return Result(None, message="search not run, and no heuristic plan in time", stats=stats)
    best = min(found, key=lambda p: objective.value(problem, p.placements))
    stats["plan_from"] = best.planner
    return Result(best.placements, message=f"search not run: the plan of {best.planner}", stats=stats)
