"""The staging-limit relaxation: which units each memory could hold judged on the usage curve only.

Any plan keeps, at every step, the bytes live in a capacitated memory under its capacity. So the
best benefit over selections that satisfy just that (a multi-dimensional knapsack, Vela's
question, solved here exactly with CP-SAT on booleans) bounds the benefit any plan keeps in
faster memories: a proven bound on the lost benefit ``L`` of ``optplan.objective``. Its optimal
selection, packed at offsets (fastest memory first; what does not fit moves on), is also a
plan, often the best start for the full model.
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from optplan.objective import Objective, fastest_fit
from optplan.solvers.reduce import Choice, Part


def selection_bound(objective: Objective, part: Part, seconds: float, workers: int = 1, seed: int = 0
                    ) -> tuple[int | None, list[str] | None, int | None]:
    """A proven lower bound on the part's lost benefit (bytes of benefit x tier weights), the
    best selection found (a memory per unit), or None for both when CP-SAT proved nothing; and
    for fast-first, once the bound is the optimum, a bound on the weighted peaks of the plans
    that lose no more (the live load each uncapacitated memory must then hold at some step)."""
    units = part.units
    tw = objective.tier_weights(part.problem)
    times = np.array(sorted({t for u in units for p in u.pieces for t in p[:2]}), np.int64)
    model = cp_model.CpModel()
    x = [{m: model.new_bool_var("") for m in u.memories[u.memories.index(fastest_fit(part.problem, u)):]} for u in units]
    for xs in x:
        model.add_exactly_one(xs.values())
    for m in part.memories:
        cap = part.problem.memory(m).capacity
        if cap is None:
            continue
        for terms in _loads(units, x, m, times):
            if sum(h for _, h in terms) > cap:
                model.add(sum(h * x[k][m] for k, h in terms) <= cap)
    for xs in x:  # every unit in its slowest memory: a selection that always fits
        for m, v in xs.items():
            model.add_hint(v, m == list(xs)[-1])
    coef = [{m: u.gain * tw[m] for m in xs} for u, xs in zip(units, x)]
    g = int(np.gcd.reduce([c for r in coef for c in r.values() if c] or [1]))
    model.minimize(sum((c // g) * x[k][m] for k, r in enumerate(coef) for m, c in r.items() if c))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(seconds, 0.05)
    solver.parameters.num_workers = max(1, workers)
    solver.parameters.random_seed = seed
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, None, None
    bound = int(np.ceil(solver.best_objective_bound - 1e-6)) * g
    chosen = [next(m for m, v in xs.items() if solver.boolean_value(v)) for xs in x]
    peak_bound = None
    if status == cp_model.OPTIMAL and objective.benefit_first:
        peak_bound = _peak_bound(model, objective, part, x, times, round(solver.objective_value), seconds, solver)
    return bound, chosen, peak_bound


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


def _peak_bound(model: cp_model.CpModel, objective: Objective, part: Part, x, times: np.ndarray, best: int,
                seconds: float, solver: cp_model.CpSolver) -> int | None:
    """min of the weighted live-load peaks of the memories with weight > 0 over the selections
    that lose no more benefit than ``best`` (model units): a bound on W given L at its optimum."""
    weights = objective.weights(part.problem)
    model.add(model.proto.objective.offset + sum(c * model.get_bool_var_from_proto_index(v)
              for v, c in zip(model.proto.objective.vars, model.proto.objective.coeffs)) <= best)
    model.clear_objective()
    terms = []
    for m in part.memories:
        if weights[m] == 0:
            continue
        loads = _loads(part.units, x, m, times)
        top = max((sum(h for _, h in t) for t in loads), default=0)
        z = model.new_int_var(0, top, "")
        for t in loads:
            if t:
                model.add(z >= sum(h * x[k][m] for k, h in t))
        terms.append((weights[m], z))
    if not terms:
        return None
    model.minimize(sum(w * z for w, z in terms))
    solver.parameters.max_time_in_seconds = max(seconds, 0.05)
    if solver.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return int(np.ceil(solver.best_objective_bound - 1e-6))


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
