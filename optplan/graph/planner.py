"""Planning a graph: its given order, or (``reorder``) an order chosen with it, the reuses that
hold in that order, and the offsets, under one deadline; the answer is a ``GraphPlan`` whose status
and bound are the graph's (over every reuse choice of the order, and with ``reorder`` over every
order), checked by the graph validator before it is returned.

With ``reorder`` the order methods (``OrderSearch``) run first on live loads; the exact CP-SAT
model of order and offsets runs on small graphs; the best orders are packed by the heuristics and
a local search packs its moves where packing falls short of the live load; the inner planner
(``auto`` by default) then places the best order's problem in the time left. A reuse whose output
can move out of its input without raising a peak is dropped: a reuse is kept where it lowers the
objective.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from optplan import registry
from optplan.core.bounds import infeasible_words, reported_bounds
from optplan.core.deadline import Deadline
from optplan.core.errors import OptplanError, PlannerBug
from optplan.core.objective import Objective
from optplan.core.plan import Placement, Plan, Status, peaks
from optplan.core.problem import Problem
from optplan.graph import joint
from optplan.graph.bounds import GraphBound, any_order_bound, order_bound
from optplan.graph.loads import Loads
from optplan.graph.model import Graph, Reuse
from optplan.graph.plan import GraphPlan
from optplan.graph.search import OrderSearch, OrderSettings
from optplan.graph.validate import validate_graph_plan
from optplan.heuristics.run import run_heuristics
from optplan.solvers.cpsat import Settings

_T = TypeVar("_T")
FINISH_SHARE = 0.05  # of a time limit, kept for pruning the reuses of the plan and validating it


@dataclass
class _Candidate:
    order: list[int]
    reuses: list[Reuse]
    problem: Problem
    plan: Plan
    method: str


def solve_graph(graph: Graph, planner: str = "auto", *, reorder: bool = False, reuse: bool = True,
                settings: OrderSettings | None = None, **options: object) -> GraphPlan:
    """Plan ``graph`` with ``planner`` placing the offsets (options as ``optplan.solve``:
    ``time_limit``, ``deterministic``, ``deadline``, ``workers``, ``seed``, ``objective``,
    ``progress``)."""
    t0 = time.perf_counter()
    if not isinstance(graph, Graph):
        raise OptplanError(f"solve_graph() takes a Graph, got {type(graph).__name__}")
    deadline = registry.make_deadline(options)
    settings = settings or OrderSettings(seed=int(options.get("seed") or 0))  # type: ignore[call-overload]
    run = _Run(graph, planner, reuse, settings, deadline, options)
    if reorder:
        best, bound, proven = run.reorder()
    else:
        best, bound, proven = run.given()
    return run.finish(best, bound, proven, time.perf_counter() - t0)


class _Run:
    """One call of ``solve_graph``: the graph, the options, the deadline and what was found."""

    def __init__(self, graph: Graph, planner: str, reuse: bool, settings: OrderSettings, deadline: Deadline,
                 options: Mapping[str, object]) -> None:
        self.graph, self.planner, self.reuse, self.settings = graph, planner, reuse, settings
        self.deadline, self.options = deadline, dict(options)
        self.objective = Objective.parse(options.get("objective"), graph.base)  # type: ignore[arg-type]
        self.loads = Loads(graph.structure)
        self.stats: dict[str, object] = {}
        # what packs the candidate orders: under auto the constructive heuristics (fast, often at
        # the bound), else the planner asked for
        self.packer: str | None = None if planner == "auto" else planner

    # -- the given order -------------------------------------------------------------------
    def given(self) -> tuple[_Candidate | None, GraphBound, bool]:
        order = list(self.graph.given_order)
        bound = order_bound(self.graph, order, self.loads) if self.reuse else _no_reuse_bound(self.graph, order)
        if bound.infeasible:
            return None, bound, False
        best = self.pack(order, "given", self.packer, self.deadline) if self.packer is None else None  # often at the bound
        if best is None or not _at(best.plan, bound):
            final = self.pack(order, "given", self.planner, self._rest(), final=True)
            if final is not None and (best is None or _value(final.plan) <= _value(best.plan)):
                best = final
        return best, bound, False

    # -- choosing the order ----------------------------------------------------------------
    def reorder(self) -> tuple[_Candidate | None, GraphBound, bool]:
        """The order methods on live loads, then the best orders packed (``_improve``)."""
        g, s, d = self.graph, self.settings, self.deadline
        search = OrderSearch(g, self.reuse, s)
        loads = search.loads if self.reuse else _plain_loads(g)
        if len(g.memories) == 1:  # the live load of every order is at least the necessary sets' bound
            search.floor = any_order_bound(g, search.rel, loads).lower[g.memories[0].name]
        self._timed("simple", search.simple)
        if "beam" in s.methods and not search.done():  # good orders first: they are the exact search's ceiling
            self._timed("beam", lambda: search.beam(self._share(s.beam_share)))
        if "local" in s.methods and not d.expired() and not search.done():
            self._timed("local", lambda: search.add("local", search.local(self._share(s.local_share))))
        if "exact" in s.methods:
            self._timed("exact", lambda: search.exact(self._share(s.exact_share)))
        if "windows" in s.methods and not search.done():
            self._timed("windows", lambda: search.windows(self._share(s.window_share)))
        bound = any_order_bound(g, search.rel, loads, search.proven_floor())
        self.stats["orders"] = {name: search.score(o)[0] for name, o in search.found.items()}
        self.stats["segments"] = len(search.segments)
        if bound.infeasible:
            return None, bound, False
        found = self._timed("pack", lambda: self._candidates(search))
        if found is None:
            return None, bound, False
        return self._improve(search, found, bound)

    def _improve(self, search: OrderSearch, best: _Candidate, bound: GraphBound) -> tuple[_Candidate, GraphBound, bool]:
        """The joint model (small graphs), local search on packings, the inner planner: while
        the best plan is not proven."""
        s, proven = self.settings, False
        if "joint" in s.methods and joint.fits(self.graph, s.joint_max_ops, s.joint_max_tensors):
            best, proven, bound = self._timed("joint", lambda: self._joint(search, best, bound))
        if "pack-local" in s.methods and not proven and not _at(best.plan, bound):
            best = self._timed("pack-local", lambda: self._pack_local(search, best))
        if not proven and not _at(best.plan, bound) and self.packer is None:
            chosen = best
            final = self._timed("final", lambda: self.pack(chosen.order, chosen.method, self.planner, self._rest(), final=True))
            if final is not None and _value(final.plan) <= _value(best.plan):
                best = final
        return best, bound, proven

    def _timed(self, name: str, work: Callable[[], _T]) -> _T:
        """Run ``work``, its seconds in ``stats['seconds']``."""
        t0 = time.perf_counter()
        try:
            return work()
        finally:
            self.stats.setdefault("seconds", {})[name] = round(time.perf_counter() - t0, 3)  # type: ignore[index]

    def _rest(self) -> Deadline:
        """What is left, less a moment kept for the reuses' pruning and the validator."""
        d = self.deadline
        return d.part(max(d.left() - min(1.0, FINISH_SHARE * d.seconds), 0.0)) if d.limited else d

    def _share(self, share: float) -> Deadline:
        d = self.deadline
        return d.part(share * d.seconds) if d.limited else d

    def _candidates(self, search: OrderSearch) -> _Candidate | None:
        """The best few distinct orders packed by the heuristics; the best plan."""
        best = None
        for _, name, order in search.ranked()[:self.settings.candidates]:
            if self.deadline.expired() and best is not None:
                break
            each = self.deadline if self.packer is None else self._share(0.5 / self.settings.candidates)  # (an exact planner runs to its limit)
            c = self.pack(order, name, self.packer, each)
            if c is not None and (best is None or _value(c.plan) < _value(best.plan)):
                best = c
        return best

    def _pack_local(self, search: OrderSearch, best: _Candidate) -> _Candidate:
        """Local search whose moves are scored by packing them (the heuristics' best peak)."""
        part = self._share(self.settings.pack_share)
        kept: dict[tuple[int, ...], _Candidate] = {}

        def score(order: list[int]) -> tuple[int, ...]:
            c = self.pack(order, "pack-local", self.packer, part)
            if c is None:
                return (1 << 62,)
            kept[tuple(order)] = c
            return (_value(c.plan), search.score(order)[0])

        order = search.local(part, best.order, score, self.settings.pack_moves)
        found = kept.get(tuple(order))
        return found if found is not None and _value(found.plan) < _value(best.plan) else best

    def _joint(self, search: OrderSearch, best: _Candidate, bound: GraphBound) -> tuple[_Candidate, bool, GraphBound]:
        """The exact CP-SAT model of order, reuses and offsets (small one-memory graphs)."""
        g = self.graph
        m = g.memories[0].name
        d = self._share(self.settings.joint_share) if self.deadline.limited else self.deadline.part(self.settings.joint_seconds)
        hint = (best.order, [(g.op_index[r.op], g.tensor_index[r.output], g.tensor_index[r.input]) for r in best.reuses],
                [best.plan.placements[t.id].offset for t in g.tensors])
        workers = int(self.options.get("workers") or 2)  # type: ignore[call-overload]
        got = joint.solve_joint(g, search.rel, best.plan.peak[m], bound.lower[m], d, Settings(workers, self.settings.seed), hint)
        self.stats["joint"] = {"peak": got.peak, "bound": got.bound, "optimal": got.optimal}
        bound = replace(bound, lower={m: max(bound.lower[m], got.bound)},
                        at=bound.at if got.bound <= bound.lower[m] else "the joint CP-SAT model of order and offsets")
        if got.order is None or got.peak is None or got.peak >= best.plan.peak[m]:
            return best, got.optimal or bound.lower[m] >= best.plan.peak[m], bound
        reuses = [Reuse(g.ops[k].id, g.tensors[y].id, g.tensors[x].id) for k, y, x in got.reuses]
        problem = g.problem(got.order, reuses)
        placements = {t.id: Placement(m, o) for t, o in zip(g.tensors, got.offsets)}
        plan = registry.finish(problem, registry.Result(placements), "joint", 0.0, self.objective)
        return _Candidate(got.order, reuses, problem, plan, "joint"), got.optimal, bound

    # -- packing one order -----------------------------------------------------------------
    def pack(self, order: list[int], method: str, planner: str | None, deadline: Deadline,
             final: bool = False, reuses: list[Reuse] | None = None) -> _Candidate | None:
        """The problem of ``order`` with ``reuses`` (default: its best), placed by ``planner``
        (None: the best of the constructive heuristics)."""
        g = self.graph
        reuses = self._reuses(order) if reuses is None else reuses
        problem = g.problem(order, reuses)
        if planner is None:
            plans, _ = run_heuristics(problem, deadline.part(None), seed=self.settings.seed, improve=False,
                                      objective=self.objective)
            found = [p for p in plans if p.found]
            if not found:
                return None
            plan = min(found, key=_value)
        else:
            opts = {k: v for k, v in self.options.items() if k in ("workers", "seed") or (final and k == "progress")}
            plan = registry.solve(problem, planner, deadline=deadline, objective=self.objective, **opts)
            if not plan.found:
                self.stats["inner"] = plan.message or plan.status.value
                return None
        return _Candidate(order, reuses, problem, plan, method)

    def _fewer(self, best: _Candidate) -> _Candidate:
        """The order without reuses, if the heuristics pack it as well: then none lowers anything."""
        if not best.reuses or self.deadline.expired() or (
                len(self.graph.memories) == 1 and self.loads.score(best.order, False)[0] > max(best.plan.peak.values())):
            return best
        plain = self.pack(best.order, best.method, self.packer, self.deadline.part(None), reuses=[])
        return plain if plain is not None and _value(plain.plan) <= _value(best.plan) else best

    def _reuses(self, order: list[int]) -> list[Reuse]:
        if not self.reuse:
            return []
        g = self.graph
        return [Reuse(g.ops[k].id, g.tensors[y].id, g.tensors[x].id) for k, y, x in self.loads.best_reuses(order)]

    # -- the answer ------------------------------------------------------------------------
    def finish(self, best: _Candidate | None, bound: GraphBound, proven: bool, seconds: float) -> GraphPlan:
        g = self.graph
        names = g.base.memory_names
        lower = {m: int(bound.lower.get(m, 0)) for m in names}
        stats = dict(self.stats)
        if bound.at:
            stats["bound_at"] = bound.at
        if best is None:  # no peak; infeasible: no bound either, and the message names the memory (as registry.finish)
            status = Status.INFEASIBLE if bound.infeasible else Status.UNKNOWN
            message = infeasible_words(g.base, bound.infeasible) if bound.infeasible else str(self.stats.get("inner") or "no plan found")
            plan = Plan({}, status, self.planner, {}, {} if bound.infeasible else lower, seconds, self.objective, None,
                        None if bound.infeasible else self.objective.bound(g.base, lower), message, stats)
            return GraphPlan(plan, (), (), None, stats)
        best = _trim(g, self._fewer(best), self.objective)
        order_ids = g.ids_of(best.order)
        bad = validate_graph_plan(g, order_ids, best.reuses, best.plan.placements)
        if bad:
            raise PlannerBug(f"graph plan ({best.method}) is invalid: {bad[0]} ({len(bad)} violations)")
        stats["order_method"] = best.method
        stats["reuses"] = len(best.reuses)
        if self.deadline.deterministic and self.deadline.root.guard_hit:
            stats["deterministic_wall_capped"] = 1
        plan = _graph_status(g, best, lower, proven, self.objective, seconds, stats, self.planner)
        return GraphPlan(plan, order_ids, tuple(best.reuses), best.problem, stats)


def _graph_status(graph: Graph, best: _Candidate, lower: dict[str, int], proven: bool, objective: Objective,
                  seconds: float, stats: dict[str, object], planner: str) -> Plan:
    """The plan with the graph's bound: OPTIMAL when it meets a bound over every choice the
    graph leaves (the order's reuses, or every order), or the joint model proved it."""
    problem, plan = best.problem, best.plan
    peak = peaks(problem, plan.placements)
    value = objective.value(problem, plan.placements)
    if any(peak[m] < lower[m] for m in peak):
        raise PlannerBug(f"graph bound {lower} above the plan's peaks {peak} ({best.method})")
    bound = value if proven else objective.bound(graph.base, lower)
    at_bounds = all(peak[m] <= lower[m] for m in peak) and (
        not objective.counts_benefit or objective.lost(problem, plan.placements) <= objective.lost_floor(graph.base))
    status = Status.OPTIMAL if proven or at_bounds or value <= bound else Status.FEASIBLE
    placed = f"placed by {plan.planner}" if plan.planner != planner else ""
    guarded = registry.GUARDED if stats.get("deterministic_wall_capped") and registry.GUARDED not in plan.message else ""
    message = "; ".join(filter(None, [plan.message, placed, f"order: {best.method}, {len(best.reuses)} reuse(s) taken", guarded]))
    reported = reported_bounds(problem, plan.placements, peak, lower, objective.weights(problem),
                               status is Status.OPTIMAL and objective.optimizes)
    return Plan(plan.placements, status, planner, peak, reported, seconds, objective, value, min(bound, value),
                message, {**plan.stats, **stats}, objective.components(problem, value, min(bound, value)))


def _trim(graph: Graph, best: _Candidate, objective: Objective) -> _Candidate:
    """Drop each reuse whose output fits elsewhere in its memory, below that memory's peak,
    without meeting any tensor live with it: it lowers nothing there."""
    if not best.reuses:
        return best
    problem, placements = best.problem, dict(best.plan.placements)
    top = peaks(problem, placements)
    bases = {r.input for r in best.reuses}
    kept = list(best.reuses)
    for r in sorted(best.reuses, reverse=True):
        if r.output in bases:
            continue  # another output sits in this one
        spot = _free_spot(problem, placements, r.output, r.input, top)
        if spot is not None:
            placements[r.output] = spot
            kept.remove(r)
    if len(kept) == len(best.reuses):
        return best
    problem = graph.problem(best.order, kept)
    plan = registry.finish(problem, registry.Result(placements), best.plan.planner, best.plan.seconds, objective)
    plan = replace(plan, message=best.plan.message, stats=best.plan.stats)
    return _Candidate(best.order, kept, problem, plan, best.method)


def _free_spot(problem: Problem, placements: dict[str, Placement], tid: str, base: str,
               top: dict[str, int]) -> Placement | None:
    """The lowest offset in ``tid``'s memory, below the memory's peak, where ``tid`` meets no
    tensor live with it (``base`` included), at ``tid``'s alignment; None if there is none."""
    b = problem.buffer(tid)
    mem = placements[tid].memory
    if b.fixed_offset is not None:
        return None
    align = problem.alignment(b, mem)
    busy = sorted((placements[o.id].offset, placements[o.id].offset + o.size) for o in problem.buffers
                  if o.id != tid and o.size and placements[o.id].memory == mem and o.start < b.end and b.start < o.end)
    at = 0
    for lo, hi in busy:
        if at + b.size <= lo:
            break
        at = max(at, -(-hi // align) * align)
    return Placement(mem, at) if at + b.size <= top[mem] else None


def _value(plan: Plan) -> int:
    return plan.objective_value if plan.objective_value is not None else 1 << 62


def _at(plan: Plan, bound: GraphBound) -> bool:
    return all(plan.peak[m] <= bound.lower.get(m, 0) for m in plan.peak)


def _plain_loads(graph: Graph) -> Loads:
    """Loads of the graph with its reuses ignored (``reuse=False``)."""
    return Loads(replace(graph.structure, reuse=tuple(() for _ in graph.ops)))


def _no_reuse_bound(graph: Graph, order: list[int]) -> GraphBound:
    return order_bound(graph, order, _plain_loads(graph))
