"""The ``search`` planner: MiniMalloc-style exact search for problems whose memories are decided.

It answers single-memory problems and multi-memory ones in which every unit has exactly one
possible memory (each memory is then its own problem); the ``auto`` portfolio hands it such
sub-problems. Minimization proves the optimal peak by searching upward from the lower bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from optplan.bounds import lower_bounds
from optplan.planners import Result, planner
from optplan.problem import Problem
from optplan.search import engine
from optplan.search.instance import build, unsupported

DEFAULT_TIME_LIMIT = 60.0


@planner("search")
def search(problem: Problem, time_limit: float | None = None, seed: int = 0, workers: int = 1,
           objective: str = "min-peak", progress: Callable[[dict], None] | None = None) -> Result:
    """Canonical-solution search (numba); ``workers`` processes share the ordering portfolio."""
    if objective not in ("min-peak", "feasible"):
        return Result(None, message=f"search: unknown objective {objective!r}; use 'min-peak' or 'feasible'")
    why = unsupported(problem)
    if why:
        return Result(None, message=f"search: {why}")
    compile_seconds = engine.ensure_compiled()
    t0 = time.perf_counter()
    limit = DEFAULT_TIME_LIMIT if time_limit is None else float(time_limit)
    lower = lower_bounds(problem).lower
    by_memory = {m: [u for u in problem.units if u.memories[0] == m] for m in problem.memory_names}
    placements, bound, messages = {}, {}, []
    optimal, infeasible, complete = True, False, True
    stats = engine.Stats()
    dive_peaks = {}
    for m, units in by_memory.items():
        if not units:
            bound[m] = lower[m]
            continue
        share = (limit - (time.perf_counter() - t0)) * len(units) / max(1, sum(
            len(by_memory[k]) for k in list(by_memory)[list(by_memory).index(m):]))
        inst = build(problem, m, units)
        ans = engine.solve(inst, problem.memory(m).capacity, lower[m], objective, max(share, 0.0),
                           workers, seed, progress)
        stats.add(ans.stats)
        bound[m] = ans.bound
        dive_peaks[m] = ans.dive_peak
        if ans.infeasible:
            infeasible = True
            messages.append(f"memory {m!r}: proven: no plan fits the capacity {problem.memory(m).capacity}")
            break
        if ans.note:
            messages.append(f"memory {m!r}: {ans.note}")
        if ans.offsets is None:
            complete = False
            if not ans.note:
                messages.append(f"memory {m!r}: time limit reached without a plan under the capacity (bound {ans.bound})")
            break
        placements.update(inst.placements(ans.offsets))
        if not ans.optimal:
            optimal = False
            if objective == "min-peak" and not ans.note:
                messages.append(f"memory {m!r}: time limit reached; peak {ans.peak}, proven bound {ans.bound}")
    info = {"nodes": stats.nodes, "nodes_per_second": round(stats.rate), "compile_seconds": round(compile_seconds, 3),
            "search_seconds": round(stats.seconds, 3), "runs": stats.runs, "dive_peak": dive_peaks,
            "winning_orderings": sorted(stats.winners)}
    if infeasible:
        return Result(None, proven_infeasible=True, bound=bound, message="; ".join(messages), stats=info)
    if not complete:
        return Result(None, bound=bound, message="; ".join(messages), stats=info)
    return Result(placements, proven_optimal=optimal and objective == "min-peak", bound=bound,
                  message="; ".join(messages), stats=info)
