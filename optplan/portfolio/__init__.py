"""The planning portfolio ``auto``: heuristics for a warm start, then exact search per part.

Pipeline: every registered heuristic (planners defined in ``optplan.heuristics``; the improving
ones not before a staging relaxation) on the whole problem -> the best plan is the incumbent ->
``reduce`` into independent scaled parts -> per part, in its share of the time: stop if the
incumbent meets the lower bound; where units choose between memories, the staging relaxation
(``optplan.solvers.selection``: bounds on the benefit kept in faster memories and on the peaks)
and its selections packed exactly by the search engine, then CP-SAT, on the selected units of
each memory alone, which proves the optimum when a selection packs at its live loads; the exact
search engine (planner ``search``, looked up by name, used when registered) on single-memory
parts; CP-SAT on the full part model with the incumbent as hint, stopped when it stalls; then
large-neighbourhood search (free the units alive in a time window around a unit at the peak,
re-solve with all other units fixed) while time is left. The merged plan goes back through the
registry's validator.

The package, one concern a module: ``params`` (``PortfolioParams``: every tuned share and budget),
``context`` (what the stages share), ``quick`` (the first look at a small problem), ``race`` (the
search on the whole problem from the start), ``early`` (the search's dives beside the heuristics),
``pipeline`` (heuristics, warm start, elastic capacities, vector clocks), ``part_stage`` (the parts
and each part's members), ``staging`` (the relaxation and its selections packed), ``exact``
(CP-SAT on a part), ``lns`` (large-neighbourhood search), ``incumbent`` (the members' shared plan),
``members`` (a member planner run on a sub-problem through ``registry.member``, its plan validated here).
OR-Tools and the search's kernels load when a stage that runs them starts, never at import.
"""

from __future__ import annotations

import os

from optplan.core.deadline import Deadline
from optplan.core.errors import OptplanError
from optplan.core.objective import Objective
from optplan.core.problem import Problem
from optplan.portfolio.context import Run
from optplan.portfolio.params import DEFAULTS, PortfolioParams
from optplan.portfolio.pipeline import whole_problem
from optplan.portfolio.quick import quick_look
from optplan.portfolio.race import SearchRace
from optplan.registry import Result, planner

__all__ = ["PortfolioParams", "auto"]


@planner("auto", clocks=True)
def auto(problem: Problem, deadline: Deadline, *, objective: Objective, workers: int | None = None, seed: int = 0,
         progress=None, params: PortfolioParams = DEFAULTS) -> Result:
    """Heuristics -> best as warm start -> exact search engine / CP-SAT / LNS per part; never
    worse than the best heuristic (its plan is returned when the rest does not beat it).
    In feasibility mode at a capacity, and in minimize mode on one memory at its proven bound, the
    search starts at once on the whole problem beside all of that (``SearchRace``). A small problem
    that a heuristic settles ends before any of it, in this thread (``quick_look``).

    ``objective``: parsed by the registry, which passes it to every planner that takes one.
    ``workers`` (default: every core) run the heuristics side by side and the solvers' threads.
    ``params``: the portfolio's shares, budgets and members (those not at their defaults are shown
    in ``stats["portfolio_params"]``)."""
    if not isinstance(params, PortfolioParams):
        raise OptplanError(f"auto's params must be an optplan.portfolio.PortfolioParams, got {type(params).__name__}")
    run = Run(objective, seed, workers or os.cpu_count() or 1, params, progress)
    result = _plan(problem, deadline, run)
    changed = params.changed()
    if changed:
        result.stats["portfolio_params"] = changed
    return result


def _plan(problem: Problem, deadline: Deadline, run: Run) -> Result:
    """The first look, else the pipeline, beside the search's race where it runs."""
    quick = quick_look(problem, deadline, run.seed, run.objective, run.progress, run.params)
    if quick is not None:
        return quick
    race = SearchRace.start(problem, deadline, run.objective, run.seed, run.workers, run.params, run.progress)
    if race is None:
        return whole_problem(problem, deadline, run)
    rest = Run(run.objective, run.seed, run.workers, run.params, run.progress,
               beside_race="floor" if race.floor else "plan", offer=race.offer)
    return race.settle(race.beside(lambda: whole_problem(problem, race.rest, rest)))
