"""auto's CP-SAT decisions at the proven bound (portfolio.exact.floor_decisions): they raise the bound
above the live load where no plan packs there, and a plan found at the bound is optimal."""

from __future__ import annotations

from brute_force import brute_force_optimum
from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.core.bounds import lower_bounds
from optplan.core.buffer import Buffer, Memory
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.core.plan import Plan, Status
from optplan.core.problem import Problem
from optplan.parts import reduce
from optplan.portfolio import exact
from optplan.portfolio import race as racing
from optplan.portfolio.incumbent import Incumbent
from optplan.portfolio.members import Attempt, judge
from optplan.portfolio.params import DEFAULTS
from optplan.registry import Result, finish, solve
from optplan.solvers.cpsat import Settings
from optplan.solvers.part_plans import part_peaks

# every step holds 7 units, but no plan packs them in 7: the optimum is 8 (brute force, below)
GADGET = [(0, 1, 5), (0, 2, 2), (1, 3, 3), (1, 3, 1), (2, 3, 1), (1, 4, 1), (2, 4, 1), (4, 5, 2), (3, 6, 5),
          (5, 6, 1), (5, 6, 1)]


def _problem(triples: list[tuple[int, int, int]], scale: int = 1) -> Problem:
    return Problem(tuple(Buffer(f"b{i}", z * scale, a, b) for i, (a, b, z) in enumerate(triples)), (Memory("mem"),))


def test_gadget_optimum_is_above_its_load() -> None:
    p = _problem(GADGET)
    assert lower_bounds(p).lower["mem"] == 7
    best = brute_force_optimum(p)
    assert best is not None and best[0] == 8


def _decide(p: Problem, proven: dict[str, int]) -> tuple[bool, Incumbent, dict[str, object], object]:
    objective = Objective.parse("min-peak", p)
    part = reduce(p, objective).parts[0]
    inc = Incumbent(part, objective, None)
    stats: dict[str, object] = {}
    done = exact.floor_decisions(part, Deadline(30), Settings(1, 0), objective, inc, proven, stats)
    return done, inc, stats, part


def test_decisions_refute_the_load_bound_then_find_the_optimum() -> None:
    proven: dict[str, int] = {}
    done, inc, stats, part = _decide(_problem(GADGET, scale=1024), proven)
    assert done and proven["mem"] == 8 * 1024
    best, _ = inc.get()
    assert best is not None and part_peaks(part, best)["mem"] * part.scale == 8 * 1024  # type: ignore[attr-defined]
    assert stats["cpsat_floor"] == {"decisions": 2, "found_at": 8 * 1024}


def test_decisions_start_from_a_bound_proven_elsewhere() -> None:
    """The search member's proven bound (bytes) is where the decisions start: one decision, not two."""
    proven = {"mem": 8 * 1024}
    done, _, stats, _ = _decide(_problem(GADGET, scale=1024), proven)
    assert done and stats["cpsat_floor"] == {"decisions": 1, "found_at": 8 * 1024}


# -- the search deciding the proven bound from the start (portfolio.race.SearchRace, floor mode) ------------------------

@st.composite
def _one_memory(draw) -> Problem:
    """Up to 6 buffers in one memory without a capacity: minimize mode (the brute force takes
    seconds on some of 8)."""
    n = draw(st.integers(1, 6))
    return _problem([(a, a + draw(st.integers(1, 4)), draw(st.integers(1, 6))) for a in
                     (draw(st.integers(0, 5)) for _ in range(n))])


def _minimized(p: Problem) -> Plan:
    """The race's minimization of ``p`` (``minimize_search``), judged as auto judges it."""
    objective = Objective.parse("min-peak", p)
    plan = judge(p, racing.minimize_search(p, "search", Deadline(30), 0, 1, objective), objective, {})
    assert plan is not None
    return plan


@settings(max_examples=40, deadline=None)
@given(_one_memory())
def test_the_races_minimization_proves_the_brute_force_optimum(p: Problem) -> None:
    """Each refuted capacity raises the bound by one grid unit, never past the optimum, and the
    plan comes down to it: optimal, proven."""
    plan = _minimized(p)
    best = brute_force_optimum(p)
    assert best is not None and plan.status == Status.OPTIMAL
    assert plan.peak["mem"] == plan.lower_bound["mem"] == best[0]


def test_the_races_minimization_refutes_the_gadgets_load_bound() -> None:
    p = _problem(GADGET, scale=1024)
    plan = _minimized(p)
    assert plan.status == Status.OPTIMAL and plan.lower_bound == plan.peak == {"mem": 8 * 1024}
    assert plan.stats["search_params"] == {"floor_share": DEFAULTS.race_floor_share}  # passed down, no global set


def test_minimize_mode_races_the_search_at_the_bound() -> None:
    """The race's plan, found at the bound the search proved, is optimal even when the rest of auto
    finds nothing; and auto itself says the race answered."""
    p = _problem(GADGET, scale=1024)
    race = racing.SearchRace.start(p, Deadline(30), Objective.parse("min-peak"), 0, 2)
    assert race is not None and race.floor
    out = race.settle(race.beside(lambda: Result(None, message="the rest found nothing")))
    assert out.proven_optimal and out.bound == {"mem": 8 * 1024} and out.placements is not None
    plan = solve(p, "auto", time_limit=30, workers=2)
    assert plan.status == Status.OPTIMAL and plan.peak["mem"] == 8 * 1024 and "search_race" in plan.stats


def test_the_bound_the_race_proved_reaches_the_rests_plan(monkeypatch) -> None:
    """When the race ends without a plan (here: its share is spent refuting the load bound), the
    rest's plan gets the bound it proved, and is optimal when it meets it."""
    p = _problem(GADGET, scale=1024)

    def refute_only(problem, name, deadline, seed, workers, objective, params):
        capped = Problem(problem.buffers, (Memory("mem", capacity=7 * 1024),))
        plan = solve(capped, name, deadline=deadline, seed=seed, objective="feasible", workers=workers)
        assert plan.status == Status.INFEASIBLE and plan.lower_bound == {}  # (issue 31: no bound where no plan exists)
        # the race's answer without a plan: the bound its refutation of 7 KiB proves (sizes in KiB)
        return Attempt(name, Result(None, bound={"mem": 8 * 1024}), plan.seconds)

    monkeypatch.setattr(racing, "minimize_search", refute_only)
    race = racing.SearchRace.start(p, Deadline(30), Objective.parse("min-peak"), 0, 2)
    assert race is not None
    rest = solve(p, "search", time_limit=30).placements

    def after_the_race() -> Result:
        race.watcher.join(30)  # the refutation ends first: a rest's plan settles the race and halts it (at load it lost)
        return Result(rest, bound={"mem": 7 * 1024})

    out = race.settle(race.beside(after_the_race))
    assert out.bound == {"mem": 8 * 1024} and out.placements == rest
    assert finish(p, out, "auto", 0.0).status == Status.OPTIMAL


def _race_against(monkeypatch, p: Problem, race_planner: str, rest: Result) -> Result:
    """The race settled with ``race_planner``'s plan standing for the race's minimization (its
    time run out: FEASIBLE) and ``rest`` for the rest of auto's answer."""
    def ended(problem, name, deadline, seed, workers, objective, params):
        plan = solve(problem, race_planner)  # (its time run out: the bound proven is the load's)
        return Attempt(race_planner, Result(plan.placements, bound={"mem": 7 * 1024}), plan.seconds)

    monkeypatch.setattr(racing, "minimize_search", ended)
    race = racing.SearchRace.start(p, Deadline(30), Objective.parse("min-peak"), 0, 2)
    assert race is not None

    def after_the_race() -> Result:
        race.watcher.join(30)
        return rest

    return race.settle(race.beside(after_the_race))


def test_the_races_plan_stands_when_the_rest_has_a_worse_one(monkeypatch) -> None:
    """A race that ran out of time with a lower peak than the rest's plan gives the answer (on
    minimalloc/D the rest's plan was 1007 KiB where the search alone reached 1000)."""
    p = _problem(GADGET, scale=1024)
    worse = solve(p, "naive").placements  # everything stacked
    out = _race_against(monkeypatch, p, "search", Result(worse, bound={"mem": 7 * 1024}))
    assert out.placements is not None and out.placements != worse and out.stats["kept_search_race"]
    assert finish(p, out, "auto", 0.0).peak["mem"] == 8 * 1024


def test_the_rests_plan_stands_when_the_races_is_worse(monkeypatch) -> None:
    p = _problem(GADGET, scale=1024)
    better = solve(p, "search").placements
    out = _race_against(monkeypatch, p, "naive", Result(better, bound={"mem": 7 * 1024}))
    assert out.placements == better and "kept_search_race" not in out.stats
