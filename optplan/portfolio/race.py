"""The search on the whole problem in a process of its own from the start, raced against the rest
of ``auto`` (``SearchRace``): whichever settles the question first stops the other.

At a capacity in feasibility mode, and minimizing one memory whose optimum most often lies at its
load bound, the search alone answers sooner than the heuristics, the parts and CP-SAT do one after
the other; the rest still answers what the search does not (packings it misses, bounds above the
load). Forking needs two workers and a wall clock (a deterministic run is one process).
"""

from __future__ import annotations

import contextvars
import multiprocessing as mp
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import replace

from optplan import registry
from optplan.core import jit
from optplan.core.deadline import Deadline
from optplan.core.lifecycle import Member, fork_member
from optplan.core.objective import Objective
from optplan.core.plan import Plan, Status
from optplan.core.problem import Problem
from optplan.core.sizes import sizes_text
from optplan.portfolio.members import Attempt, attempt, judge
from optplan.portfolio.params import DEFAULTS, PortfolioParams
from optplan.registry import Result


def search_workers(workers: int) -> int:
    """The workers a raced search takes of ``workers`` (half, at least one: one on two cores, as
    ``--planner search`` runs); the members beside it get the rest (``workers_beside``)."""
    return max(1, workers // 2)


def workers_beside(workers: int) -> int:
    """The workers left of ``workers`` to the members beside a raced search (at least one)."""
    return max(1, workers - search_workers(workers))


def can_race(workers: int, clock: Deadline) -> bool:
    """Members may run in forked processes beside this one: two workers or more, a wall clock
    (deterministic runs stay one process, repeatable), and a system that forks."""
    return workers > 1 and not clock.deterministic and "fork" in mp.get_all_start_methods()


class SearchRace:
    """The search on the whole problem in a process of its own from the start, with half the
    workers (one on two cores, as ``--planner search`` runs), while the rest of auto (heuristics,
    then per part the search, CP-SAT and LNS) runs here on ``rest`` at a lower priority
    (``beside``). Whichever settles the question first stops the other.

    Feasibility mode at a capacity: the question is a plan within the capacities, or a proof that
    none exists. So auto takes about the search's time (minimalloc A at 1 MiB: the search alone
    1.8 s; auto 2.1-2.8 s at load ~1 when it ran the heuristics, then the search 0.2 s alone, then
    forked it afresh beside CP-SAT), and CP-SAT still packs what the search does not (E: auto 1.7 s
    where the search took 7.5 s).

    Minimize mode, one memory (``floor``): the search minimizes (``minimize_search``), its proven
    bound (the load bound, one grid unit higher after each refutation) getting ``race_floor_share``
    times the slice of the decision below its best plan, first: a plan at the bound is optimal and
    settles the race. Most instances with a known optimum have it at the load bound, and the rest of
    auto got there later than the search alone at a capacity. Where the optimum lies above the
    bound and the bound cannot be decided (minimalloc D; perturbed A-E), deciding the bound alone
    left this core idle for the plan: the race's plan now comes down too, and the answer is the
    better of the two plans, with the higher of the two bounds. The race ends after
    ``floor_race_share`` of the time. Here the rest keeps the caller's priority, but for its own
    search members (``race_nice``: they repeat much of this one's work). At nice 19 (after its
    heuristics; before them it was left without any plan in 10 s) its CP-SAT decisions at the
    bound, which pack or refute what the search does not, starved on a busy machine (load 6,
    generated cuts at 10 s: 63/70 proven against 65/70 at equal priority; tight, 15 s: 6/10
    against 7/10), and so did its plan where the optimum lies above the bound (minimalloc D). With
    its search members at equal priority too, this search got a third of the CPU (E not proven in
    60 s at load 8, the search alone 16.8 s)."""

    def __init__(self, problem: Problem, objective: Objective, member: Member, searching: Deadline, rest: Deadline,
                 floor: bool = False, params: PortfolioParams = DEFAULTS) -> None:
        self.problem, self.objective, self.params = problem, objective, params
        self.member, self.searching, self.rest, self.floor = member, searching, rest, floor
        self.plan: Plan | None = None
        self.thread: threading.Thread | None = None  # the rest's (``beside``)
        self.proven: dict[str, int] = {}  # floor: the bound the search proved
        self.notes: dict[str, object] = {}  # the search's invalid plan, if it returned one (``judge``)
        self.offered: Result | None = None  # the rest's warm start (``offer``)
        self.done = threading.Event()  # the rest returned, or the search settled the question
        self.watcher = threading.Thread(target=self._wait, daemon=True, name="optplan-search-race")
        self.watcher.start()

    @classmethod
    def start(cls, problem: Problem, deadline: Deadline, objective: Objective, seed: int,
              workers: int, params: PortfolioParams = DEFAULTS,
              progress: Callable[[dict], None] | None = None) -> SearchRace | None:
        """The race, started, or None where it does not run (see the class)."""
        name = params.search_members[0] if params.search_members else ""
        floor = objective.optimizes and len(problem.memories) == 1 and deadline.limited and params.floor_race_share > 0
        if ((objective.optimizes and not floor) or problem.concurrent or problem.unit_count > params.search_max_units
                or (not floor and all(m.capacity is None for m in problem.memories))
                or not can_race(workers, deadline) or not registry.registered(name) or not jit.usable("search")):
            return None
        declines = getattr(registry.get(name), "declines", None)
        if declines is not None and declines(problem):
            return None
        mine = search_workers(workers)
        searching = deadline.part(params.floor_race_share * deadline.left() if floor else None)
        if floor:
            sent = relay(figures(problem, objective)) if progress is not None else None  # as it finds them
            extra = () if sent is None else (sent,)
            member = fork_member(lambda d: minimize_search(problem, name, d, seed, mine, objective, params, *extra),
                                 searching, grace=1.0, partial=progress)
        else:
            member = fork_member(lambda d: attempt(problem, name, d, seed=seed, objective=objective, workers=mine),
                                 searching, grace=1.0)
        return cls(problem, objective, member, searching, deadline.part(None), floor, params)

    def offer(self, result: Result) -> None:
        """The rest's warm start (``Run.offer``): the rest's answer if the rest has not returned in time."""
        self.offered = result

    def beside(self, rest: Callable[[], Result]) -> Result | None:
        """``rest()`` on a thread of lower priority (``race_nice``; not in minimize mode), and the
        threads it starts (CP-SAT's, the heuristics'): on a busy machine the search keeps the core it
        has when run alone (on minimalloc A at load 1.5-2.7 the search took 3.4-4.0 s beside CP-SAT
        at equal priority, 1.8 s alone). The rest's answer; None when the search settled first; when the
        rest is still running ``race_grace`` seconds after its deadline (halted or out of time, it winds
        down on its own: a model being built, an import, a member's answer), the plan it offered
        (``offer``: its best heuristic plan) or None. Waiting on held the process past its time limit:
        at load 4, 1000 buffers, 3 s, the rest was importing OR-Tools when the CLI's watchdog ended the
        process, and the plans found in the first second were lost. In minimize mode ``rest`` is told
        that this race runs beside it (``Run.beside_race``): its own search members give way to this one."""
        out: list[Result | BaseException] = []

        def run() -> None:
            if not self.floor:  # (minimize mode: the rest's CP-SAT proves what the search does not, see start)
                lower_priority(self.params.race_nice)
            try:
                out.append(rest())
            except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
                out.append(e)
            finally:
                self.done.set()

        # in this planner's context: the kernel gate decides on its deadline there too (``jit.usable``)
        self.thread = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True,
                                       name="optplan-race-rest")
        self.thread.start()
        if not self.done.wait(self.rest.left() + self.params.race_grace if self.rest.limited else None):
            if self.offered is not None:
                self.notes["rest_unfinished"] = "the rest of auto had not returned by its deadline: its warm start kept"
            return self.offered
        if not out:  # the search settled the question
            return None
        if isinstance(out[0], BaseException):
            raise out[0]
        return out[0]

    def _wait(self) -> None:
        got = self.member.result()
        self.plan = judge(self.problem, got, self.objective, self.notes) if isinstance(got, Attempt) else None
        if self.floor and self.plan is not None:
            self.proven = dict(self.plan.lower_bound)
        if self.plan is not None and (self.plan.status in (Status.OPTIMAL, Status.INFEASIBLE)
                                      or (self.plan.found and not self.floor)):
            self.rest.halt()  # settled: CP-SAT, LNS and the heuristics stop
            self.done.set()

    def settle(self, result: Result | None) -> Result:
        """The answer: ``result`` (the rest's) if it settled the question, else the search's.
        Floor: the search's plan when it found one (optimal), else the rest's with the bound the
        search proved."""
        if result is None:
            result = Result(None, message=self.rest.cancelled or "time limit reached")  # (or the search's answer below)
        if result.proven_optimal or result.proven_infeasible or (result.placements is not None and not self.floor):
            self.searching.halt()  # (minimize mode: a rest that ended early with a plan leaves the search its time)
        self.watcher.join()
        plan = self.plan
        stats = {**result.stats, **self.notes}
        stats["search_race"] = (self.member.error or "no answer") if plan is None else \
            f"{plan.status.value} in {plan.seconds:.2f} s, {plan.stats.get('nodes', 0):,} nodes" + (f" at {sizes_text(self.proven)}" if self.floor else "")
        if self.floor and plan is not None and plan.status == Status.OPTIMAL:
            # the halted rest winds down on its own: the answer does not wait for it (a step under way,
            # such as importing OR-Tools, took 0.3 s of a 0.64 s run), and a CP-SAT solve still running
            # when the interpreter exits is stopped and waited for there (``cpsat.solve``)
            return Result(plan.placements, proven_optimal=True, bound=self.proven,
                          message=f"search: a plan at the proven bound ({sizes_text(self.proven)})", stats=stats)
        if self.floor and (plan is None or plan.status != Status.INFEASIBLE):
            bound = {**self.proven, **{m: max(v, self.proven.get(m, 0)) for m, v in (result.bound or {}).items()}}
            if plan is not None and plan.found and (result.placements is None or
                                                    self.objective.value(self.problem, plan.placements)
                                                    < self.objective.value(self.problem, result.placements)):
                stats["kept_search_race"] = True  # the race's minimization beat the rest
                return Result(plan.placements, bound=bound, message=result.message, stats=stats)
            return replace(result, bound=bound or None, stats=stats)
        if result.placements is not None or result.proven_infeasible or plan is None:
            return replace(result, stats=stats)
        if plan.found:
            return Result(plan.placements, bound=plan.lower_bound, message=plan.message, stats=stats)
        if plan.status == Status.INFEASIBLE:
            return Result(None, proven_infeasible=True, message=plan.message, stats=stats)
        return replace(result, stats=stats)


def minimize_search(problem: Problem, name: str, deadline: Deadline, seed: int, workers: int,
                    objective: Objective, params: PortfolioParams = DEFAULTS,
                    progress: Callable[[dict], None] | None = None) -> Attempt:
    """Search planner ``name`` minimizing a one-memory ``problem``, in a forked process (the race):
    its time slices alternate between the proven bound and a plan below its best, the bound's slice
    ``race_floor_share`` times the other's, first. A plan at the bound is optimal (most instances
    with a known optimum have it at the load bound); where the optimum lies above (minimalloc/D)
    the plan keeps coming down on this process's core."""
    return attempt(problem, name, deadline, seed=seed, objective=objective, workers=workers,
                   params=params.racing_search(params.race_floor_share), progress=progress)


def relay(shape: Callable[[dict], dict | None]) -> Callable[[dict], None]:
    """The progress callback of a search in a forked member: each report, as ``shape`` makes it
    (None: nothing to send), goes to the parent's ``partial`` callback at once
    (``lifecycle.report``), not when the member ends. The whole problem's race sends its
    ``figures`` to the display; a part's race sends its ``improving`` plans to the part's
    incumbent (``part_stage._race``)."""
    from optplan.core.lifecycle import report

    def send(info: dict) -> None:
        shaped = shape(info)
        if shaped is not None:
            report(shaped)
    return send


def figures(problem: Problem, objective: Objective) -> Callable[[dict], dict | None]:
    """The search's progress on a one-memory ``problem`` (the memory's peak and bound in bytes) as
    ``auto`` reports it: the objective's value and bound, and the bytes (the plan stays here)."""
    m = problem.memory_names[0]
    weight = objective.weights(problem)[m]

    def shape(info: dict) -> dict | None:
        best, bound = info.get("best"), info.get("bound")
        return {**{k: v for k, v in info.items() if k != "plan"},
                "best": None if best is None else weight * best, "bound": None if bound is None else weight * bound,
                "peak": None if best is None else {m: best}, "lower": None if bound is None else {m: bound}}
    return shape


def improving() -> Callable[[dict], dict | None]:
    """The search's plans from its progress (``placements``, made from its ``plan`` only when sent),
    each only when its peak is below the last one sent (the search reports its rising bound with
    the same plan)."""
    sent: list[int] = []

    def shape(info: dict) -> dict | None:
        best, plan = info.get("best"), info.get("plan")
        if plan is None or best is None or (sent and best >= sent[-1]):
            return None
        sent.append(best)
        return {"placements": plan()}
    return shape


def lower_priority(nice: int) -> None:
    """This thread, and the threads it starts, ``nice`` steps lower in priority (Linux: nice values
    are per thread; elsewhere nothing is changed)."""
    if sys.platform != "linux":
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:
        pass

