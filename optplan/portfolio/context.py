"""What the stages of one ``auto`` call share, passed down as values instead of long argument lists.

``Run`` is the call's: objective, seed, workers, the portfolio's settings, the progress callback
and whether a search deciding the proven bound runs beside (its own search members then give way).
``PartRun`` is one part's: its members (the search engine, CP-SAT, LNS) read and offer plans on one
shared ``Incumbent``, collect the bounds the search proved and write their statistics in one dict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from optplan.core.objective import Objective
from optplan.parts import Choice, Part
from optplan.portfolio.params import PortfolioParams

if TYPE_CHECKING:  # (CP-SAT's module: imported when a part's exact stage runs)
    from optplan.portfolio.incumbent import Incumbent
    from optplan.registry import Result
    from optplan.solvers.cpsat import Settings


@dataclass(frozen=True)
class Run:
    """One ``auto`` call's settings, the same for every stage and part."""

    objective: Objective
    seed: int
    workers: int
    params: PortfolioParams
    progress: Callable[[dict], None] | None = None
    # the search's race on the whole problem beside this run (``SearchRace``), if one runs:
    # "floor" (minimize mode): it decides the proven bound; a part's own search member gives way to it
    # (``race_nice``) and leaves the bound to it.
    # "plan" (feasibility mode): it looks for a plan within the capacities; a part's own search would repeat
    # its orderings on a subset of its units (its planner splits time parts itself), so the part goes to
    # CP-SAT on the workers the race leaves. Generated pinwheels at 1 MiB that the search does not pack in
    # 400k nodes, CP-SAT alone packed 3 of 5 in 1-25 s, auto 1 of 5 in 30 s: its CP-SAT shared the race's
    # other core with two more searches (the part's, alone first, then forked beside it)
    beside_race: Literal["floor", "plan"] | None = None
    # where the rest of a race hands over its warm start (the best heuristic plan, whole), which the race's
    # answer keeps if the rest has not returned by its deadline (``SearchRace.beside``)
    offer: Callable[[Result], None] | None = None


@dataclass(frozen=True)
class PartRun:
    """One part's members and what they share: the incumbent, the per-memory bounds (bytes) a
    search proved (``proven``, raised by CP-SAT's refuted decisions too), the statistics, and the
    ``goal`` (per-memory peaks in grid units) at which the part is good enough."""

    part: Part
    run: Run
    objective: Objective  # the call's, or (capacities relaxed) the peaks' it descends on
    settings: Settings  # CP-SAT's workers and seed
    inc: Incumbent
    goal: dict[str, int] | None
    proven: dict[str, int]
    stats: dict[str, object]

    @property
    def seed(self) -> int:
        return self.run.seed

    @property
    def params(self) -> PortfolioParams:
        return self.run.params

    def reached(self, choices: list[Choice] | None) -> bool:
        """``choices`` meet the goal: every memory's peak at or below it."""
        from optplan.solvers.part_plans import part_peaks

        return self.goal is not None and choices is not None and all(
            v <= self.goal.get(m, v) for m, v in part_peaks(self.part, choices).items())
