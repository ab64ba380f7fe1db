"""The staging-limit relaxation: which units each memory could hold judged on the usage curve only.

Any plan keeps, at every step, the bytes live in a capacitated memory under its capacity. So the
best benefit over selections that satisfy just that (a multi-dimensional knapsack, Vela's
question, solved here exactly by CP-SAT on booleans; on a wall clock a MIP solver, SCIP as
bundled with OR-Tools, finds its first selection: CP-SAT's hint, checked in integers, which
CP-SAT then proves or improves; the MIP's own proof is in floating point) bounds the benefit any plan keeps in
faster memories: a proven bound on the lost benefit ``L`` of ``optplan.core.objective``. Among the
selections that lose no more, the least weighted live-load peaks of the other memories bound the
weighted peaks ``W`` of every plan that reaches that ``L`` (a memory's peak is at least the bytes
live in it at any step). Both bounds hold for the lexicographic value of ``fast-first``
(``Objective.bound``: the second need only hold among plans with the first at its bound).

Cuts keep these bounds valid: when the units of a selection assigned to one memory provably do
not pack there (the exact search says INFEASIBLE), no plan puts all of them there (a packing of
a superset would pack the subset), so ``sum x[k][m] <= |F| - 1`` holds for every plan. A
selection that merely was not packed in time is excluded too, to try another, but from then on
the model proves nothing (``Staging.exact`` turns False).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from ortools.linear_solver import pywraplp

from optplan.core.cp_sat import cp_model
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective, fastest_fit
from optplan.core.problem import Problem
from optplan.parts import Choice, Part
from optplan.solvers.cpsat import DTIME_PER_SECOND, Settings, int_bound, solve

LINEARIZATION = 2  # CP-SAT's linearization_level for the relaxation's solves
# of least_lost's and least_peaks' time, for SCIP's selection, CP-SAT's hint (wall-clock deadlines; CP-SAT
# proves): SCIP finds these knapsacks' optima far sooner on large parts (idealloc G_1 at 25 %: 6 CPU s;
# CP-SAT alone had its bound there but not the selection in 52; experiments/bench_relaxation.py)
MIP_SHARE = 0.5
MIP_SOLVER = "SCIP"  # bundled with OR-Tools; "" turns the MIP off


@dataclass(frozen=True)
class RelaxationSettings:
    """How ``Staging`` solves its relaxation (defaults: the constants above)."""

    mip_solver: str = MIP_SOLVER  # whose selection hints CP-SAT on a wall clock; "": none
    mip_share: float = MIP_SHARE  # of least_lost's and least_peaks' time, for that MIP
    linearization: int = LINEARIZATION  # CP-SAT's linearization_level


class Staging:
    """The relaxation of one part as a CP-SAT model on booleans ``x[k][m]`` (unit k in memory m),
    kept to be solved again with cuts: ``least_lost`` (the bound on ``L``), ``least_peaks`` (the
    bound on ``W`` given ``L``), ``forbid`` (a cut)."""

    def __init__(self, objective: Objective, part: Part, settings: RelaxationSettings = RelaxationSettings()) -> None:
        self.objective, self.part, self.settings = objective, part, settings
        units, problem = part.units, part.problem
        tw = objective.tier_weights(problem)
        times = np.array(sorted({t for u in units for p in u.pieces for t in p[:2]}), np.int64)
        self.model = model = cp_model.CpModel()
        self.x = x = [{m: model.new_bool_var("") for m in u.memories[u.memories.index(fastest_fit(problem, u)):]}
                      for u in units]
        for xs in x:
            model.add_exactly_one(xs.values())
        weights = objective.weights(problem)
        self.load_peak: dict[str, cp_model.IntVar] = {}  # bytes live in m at its fullest step
        self.rows: list[tuple[str, list[tuple[int, int]], int]] = []  # (memory, terms, capacity): the MIP's rows
        self.peak_rows: list[tuple[str, list[tuple[int, int]]]] = []  # (memory, terms): the live loads of a weighed memory
        for m in part.memories:
            cap = problem.memory(m).capacity
            loads = [t for t in _loads(units, x, m, times) if t]
            top = max((sum(h for _, h in t) for t in loads), default=0)
            z = self.load_peak[m] = model.new_int_var(0, top if cap is None else min(top, cap), "")
            for terms in loads:  # the capacity, and the peak where it is weighed
                over = cap is not None and sum(h for _, h in terms) > cap
                if weights[m] > 0 or over:
                    model.add(z >= sum(h * x[k][m] for k, h in terms))
                if weights[m] > 0:
                    self.peak_rows.append((m, terms))
                if over and cap is not None:
                    self.rows.append((m, terms, cap))
        coef = [{m: u.gain * tw[m] for m in xs} for u, xs in zip(units, x)]
        self.unit = int(np.gcd.reduce([c for r in coef for c in r.values() if c] or [1]))  # of L in the model
        self.coef = [{m: c // self.unit for m, c in r.items()} for r in coef]
        self.lost = sum(c * x[k][m] for k, r in enumerate(self.coef) for m, c in r.items() if c)
        self.cuts: list[tuple[list[tuple[int, str]], list[tuple[int, str]], int]] = []  # (+terms, -terms, rhs)
        self.exact = True  # only proven cuts so far: optima are bounds
        self.hint([list(xs)[-1] for xs in x])  # every unit in its slowest memory: a selection that always fits

    def lost_of(self, chosen: Sequence[str]) -> int:
        """``L`` of a selection, as ``least_lost`` counts it."""
        tw = self.objective.tier_weights(self.part.problem)
        return sum(u.gain * tw[m] for u, m in zip(self.part.units, chosen))

    def hint(self, chosen: Sequence[str]) -> None:
        self.model.clear_hints()
        for xs, c in zip(self.x, chosen):
            for m, v in xs.items():
                self.model.add_hint(v, m == c)

    def least_lost(self, deadline: Deadline, settings: Settings) -> tuple[int | None, list[str] | None, bool]:
        """(a bound on the part's ``L`` if the model is exact, the best selection, whether it is
        the model's optimum); (None, None, False) when nothing was found in time. On a wall clock
        the MIP's selection (``_mip``) is CP-SAT's hint; CP-SAT proves."""
        self._mip_hint(deadline)
        self.model.minimize(self.lost)
        solver, status = self._solve(deadline, settings)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None, None, False
        bound = int_bound(solver.best_objective_bound) * self.unit if self.exact else None
        return bound, self._chosen(solver), status == cp_model.OPTIMAL

    def least_peaks(self, lost: int, deadline: Deadline, settings: Settings) -> tuple[int | None, list[str] | None]:
        """Among selections that lose at most ``lost`` (a value ``least_lost`` reached), the least
        weighted live-load peaks: (a bound on ``W`` of every plan that loses no more, if the model
        is exact; the best such selection). The MIP's selection hints CP-SAT, as in ``least_lost``."""
        weights = self.objective.weights(self.part.problem)
        g = math.gcd(*weights.values()) or 1  # the default weights are large (lexicographic); one memory: 1
        terms = [(weights[m] // g, z) for m, z in self.load_peak.items() if weights[m] > 0]
        self._mip_hint(deadline, lost)
        enforce = self.model.new_bool_var("")
        self.model.add(self.lost <= lost // self.unit).only_enforce_if(enforce)
        self.model.add_assumptions([enforce])
        self.model.minimize(sum(w * z for w, z in terms))
        try:
            solver, status = self._solve(deadline, settings)
        finally:
            self.model.clear_assumptions()
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None, None
        bound = int_bound(solver.best_objective_bound) * g if self.exact and terms else None
        return bound, self._chosen(solver)

    def forbid(self, memory: str, ks: Sequence[int], proven: bool) -> None:
        """Cut the selections that put all units ``ks`` in ``memory`` (``proven``: they do not pack
        there, a valid cut), or exactly those (not packed in time: only to try another selection)."""
        inside = [(k, memory) for k in ks]
        chosen = set(ks)
        outside = [] if proven else [(k, memory) for k, xs in enumerate(self.x) if k not in chosen and memory in xs]
        self.cuts.append((inside, outside, len(inside) - 1))
        self.model.add(sum(self.x[k][m] for k, m in inside) - sum(self.x[k][m] for k, m in outside) <= len(inside) - 1)
        self.exact = self.exact and proven

    def fits(self, chosen: Sequence[str]) -> bool:
        """The selection keeps every capacity and cut, in integers (a MIP's answer is checked)."""
        return (all(sum(h for k, h in terms if chosen[k] == m) <= cap for m, terms, cap in self.rows)
                and all(sum(chosen[k] == m for k, m in plus) - sum(chosen[k] == m for k, m in minus) <= rhs
                        for plus, minus, rhs in self.cuts))

    def peaks_of(self, chosen: Sequence[str]) -> int:
        """The weighted live-load peaks of a selection, as ``least_peaks`` bounds them."""
        weights = self.objective.weights(self.part.problem)
        top: dict[str, int] = {}
        for m, terms in self.peak_rows:
            top[m] = max(top.get(m, 0), sum(h for k, h in terms if chosen[k] == m))
        return sum(weights[m] * v for m, v in top.items())

    def _mip_hint(self, deadline: Deadline, lost: int | None = None) -> None:
        """On a wall clock, the MIP's selection (``mip_share`` of the time) as CP-SAT's hint, when
        it keeps the capacities, the cuts and ``lost`` in integers."""
        if not self.settings.mip_solver or deadline.deterministic:
            return
        chosen = self._mip(deadline.share(self.settings.mip_share), lost)
        if chosen is not None and self.fits(chosen) and (lost is None or self.lost_of(chosen) <= lost):
            self.hint(chosen)

    def _mip(self, deadline: Deadline, lost: int | None = None) -> list[str] | None:
        """By the MIP solver (one thread, no gap tolerance), the least-lost selection, or with
        ``lost`` the least weighted live-load peaks among those losing at most that; None if
        none in time. Only a hint: its optimality is judged in floating point (resnet50 of
        idealloc at 50 %: SCIP's "optimal" least peaks were 40 bytes above CP-SAT's, 5e-8 of them)."""
        solver = pywraplp.Solver.CreateSolver(self.settings.mip_solver)
        if solver is None or deadline.left() <= 0:
            return None
        solver.SetTimeLimit(max(1, int(1000 * min(deadline.left(), 1e6))))
        solver.SetSolverSpecificParametersAsString("limits/gap = 0\nlimits/absgap = 0\n")
        y = [{m: solver.BoolVar("") for m in xs} for xs in self.x]
        for ys in y:
            solver.Add(sum(ys.values()) == 1)
        for m, terms, cap in self.rows:
            solver.Add(sum(h * y[k][m] for k, h in terms) <= cap)
        for plus, minus, rhs in self.cuts:
            solver.Add(sum(y[k][m] for k, m in plus) - sum(y[k][m] for k, m in minus) <= rhs)
        lost_expr = sum(c * y[k][m] for k, r in enumerate(self.coef) for m, c in r.items() if c)
        if lost is None:
            solver.Minimize(lost_expr)
        else:
            solver.Add(lost_expr <= lost // self.unit)
            weights = self.objective.weights(self.part.problem)
            g = math.gcd(*weights.values()) or 1
            z = {m: solver.NumVar(0, solver.infinity(), "") for m, _ in self.peak_rows}
            for m, terms in self.peak_rows:
                solver.Add(z[m] >= sum(h * y[k][m] for k, h in terms))
            solver.Minimize(sum((weights[m] // g) * v for m, v in z.items()))
        with deadline.on_cancel(solver.InterruptSolve):
            status = solver.Solve()
        if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
            return None
        return [max(ys, key=lambda m: ys[m].solution_value()) for ys in y]

    def _solve(self, deadline: Deadline, settings: Settings) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus]:
        solver = cp_model.CpSolver()
        settings.apply(solver, deadline)
        # the LP relaxation at every node: a multi-dimensional knapsack's bound comes from it (minimalloc
        # E at 75 %: optimal in 0.1 CPU s; with level 1, one worker, not in 23 CPU s)
        solver.parameters.linearization_level = self.settings.linearization
        status = solve(solver, self.model, deadline)
        deadline.spend(solver.deterministic_time / DTIME_PER_SECOND)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            self.hint(self._chosen(solver))
        return solver, status

    def _chosen(self, solver: cp_model.CpSolver) -> list[str]:
        return [next(m for m, v in xs.items() if solver.boolean_value(v)) for xs in self.x]


def _loads(units, x, m: str, times: np.ndarray) -> list[list[tuple[int, int]]]:
    """(unit index, live bytes) of the units that may use memory ``m`` at the steps whose live
    set no other step's contains: the steps where a piece starts and some piece ends before the
    next start (between starts the live set only shrinks; up to a start it only grows). The load
    at any other step is at most the load at one of these, so only their constraints matter."""
    spans = [(k, int(np.searchsorted(times, a)), int(np.searchsorted(times, b)), y1 - y0)
             for k, u in enumerate(units) if m in x[k] for a, b, y0, y1 in u.pieces]
    starts = sorted({i for _, i, _, _ in spans})
    ends = np.array(sorted({j for _, _, j, _ in spans}), np.int64)
    keep = [s for s, nxt in zip(starts, starts[1:] + [None])
            if nxt is None or np.searchsorted(ends, s, side="right") < np.searchsorted(ends, nxt, side="right")]
    where = {s: n for n, s in enumerate(keep)}
    load: list[list[tuple[int, int]]] = [[] for _ in keep]
    for k, i, j, h in spans:
        lo, hi = np.searchsorted(keep, i), np.searchsorted(keep, j)
        for s in keep[lo:hi]:
            load[where[s]].append((k, h))
    return load


def pack_selection(part: Part, chosen: list[str]) -> list[Choice] | None:
    """Place the units at offsets, fastest memory first (fixed first, then by decreasing height,
    first fit); a unit that does not fit where it was selected moves to its next memory. None
    when a unit fits nowhere."""
    from optplan.heuristics.packer import Packer

    problem = part.problem
    packer = Packer(problem)
    rank = {m: i for i, m in enumerate(problem.memory_names)}
    order = sorted(range(len(part.units)), key=lambda k: (rank[chosen[k]], part.units[k].fixed_offset is None,
                                                           -part.units[k].height, part.units[k].root))
    for k in order:
        u = part.units[k]
        for m in u.memories[u.memories.index(chosen[k]):]:
            o = packer.fit(u, m, "first")
            if o is not None:
                packer.place(u, m, o)
                break
        else:
            return None
    return part.choices(packer.placements)


def alone(part: Part, memory: str, ks: Sequence[int]) -> Problem:
    """The units ``ks`` of the part as a problem of their own, in ``memory`` only."""
    ids = {bid for k in ks for bid, _ in part.units[k].members}
    buffers = tuple(replace(b, allowed=None, blocked=(), fixed_memory=b.fixed_memory and memory, hint_memory=None,
                            hint_offset=None) for b in part.problem.buffers if b.id in ids)
    relative = tuple(r for r in part.problem.relative if r.buffer in ids and r.base in ids)
    return Problem(buffers, (part.problem.memory(memory),), relative)
