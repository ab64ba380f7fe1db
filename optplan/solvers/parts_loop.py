"""The exact planners' loop over the independent parts of a problem (``optplan.parts.reduce``):
each part in its share of the time, the Results merged, progress reported for the whole."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from optplan.core.bounds import lower_bounds
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.core.plan import peaks
from optplan.core.problem import Problem
from optplan.parts import Part, Reduction, merge, reduce
from optplan.registry import Result

Progress = Callable[[dict], None]
PartReport = Callable[[Result], None]  # a part's running Result, as a part's solver finds better plans


def solve_parts(problem: Problem, objective: Objective, deadline: Deadline,
                solve_one: Callable[[Part, Deadline, PartReport], Result], progress: Progress | None = None) -> Result:
    """Reduce, hand each part its share of the remaining time (by size), merge the Results."""
    t0 = time.perf_counter()
    red = reduce(problem, objective)
    results: list[Result | None] = [None] * len(red.parts)
    order = sorted(range(len(red.parts)), key=lambda i: len(red.parts[i].units))  # leftovers go to the big ones
    left_units = sum(len(p.units) for p in red.parts)
    tracker = Tracker(red, progress, t0)
    for i in order:
        part = red.parts[i]
        share = deadline.share(len(part.units) / max(left_units, 1))
        left_units -= len(part.units)
        result = results[i] = solve_one(part, share, functools.partial(tracker.update, i))
        tracker.update(i, result)
        if result.proven_infeasible:
            break
    done = [r if r is not None else Result(None, message="not solved: an earlier part is infeasible") for r in results]
    return merge(red, done)


class Tracker:
    """Combines the parts' running results into one progress report for the whole problem: the
    objective's value and bound (on the scale of every other report of the run, the Plan's), the
    gap of the weighted peaks, and the peaks and their bounds in bytes per memory."""

    def __init__(self, red: Reduction, progress: Progress | None, t0: float) -> None:
        self.red, self.progress, self.t0 = red, progress, t0
        self.latest: dict[int, Result] = {}

    def update(self, i: int, result: Result) -> None:
        if self.progress is None:
            return
        self.latest[i] = result
        best = bound = gap = None
        peak: dict[str, int] | None = None
        lower: dict[str, int] | None = None
        if len(self.latest) == len(self.red.parts) and all(r.placements is not None for r in self.latest.values()):
            # the values finish() would compute, without re-validating on every report
            problem, objective = self.red.problem, self.red.objective
            merged = merge(self.red, [self.latest[j] for j in range(len(self.red.parts))])
            weights = objective.weights(problem)
            peak = peaks(problem, merged.placements or {})
            lower = {m: max(v, (merged.bound or {}).get(m, 0)) for m, v in lower_bounds(problem).lower.items()}
            weighted = sum(weights[m] * v for m, v in peak.items())
            weighted_bound = max(merged.objective_bound or 0, sum(weights[m] * v for m, v in lower.items()))
            best = objective.value(problem, merged.placements or {})
            bound = objective.combine(problem, weighted_bound, max(objective.lost_floor(problem), merged.lost_bound or 0))
            if merged.proven_optimal:
                bound, weighted_bound = best, weighted
                lower = {m: max(v, peak[m]) if weights[m] > 0 else v for m, v in lower.items()}
            gap = None if not weighted_bound else max(weighted / weighted_bound - 1.0, 0.0)
        self.progress({"best": best, "bound": bound, "gap": gap, "elapsed": time.perf_counter() - self.t0,
                       "peak": peak, "lower": lower})  # bytes per memory, for the display
