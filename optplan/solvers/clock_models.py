"""Exact models for concurrent lifetimes (vector clocks): one disjunction per conflicting pair.

A scalar problem's conflicts are intervals, which the CP-SAT and MILP models of ``cpsat`` and
``milp`` exploit (time parts, NoOverlap2D, cumulative cuts). With vector clocks the conflict
graph (``Problem.conflicts``) is arbitrary, so these models state it directly: per buffer a
memory (when it has a choice) and an aligned offset under the capacity, per conflicting pair
sharing a memory one order literal (the lower of the two ends below the other's offset), and
per memory a peak at least every top edge in it. Concurrent problems have no gaps or relative
placements (``Problem`` rejects them), so every unit is one buffer.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from optplan.plan import Placement
from optplan.planners import Result

MAX_PAIRS = 200_000  # auto skips the pairwise model above this many conflicting pairs

if TYPE_CHECKING:
    from optplan.deadline import Deadline
    from optplan.objective import Objective
    from optplan.problem import Problem, Unit


def _units(problem: Problem) -> tuple[list[Unit], dict[str, Placement], list[tuple[int, int]]]:
    """Units that store bytes, the placements of the others (lowest legal offset, fastest
    memory), and the conflicting pairs among the former."""
    units = [u for u in problem.units if u.pieces]
    rest = {u.root: Placement(u.memories[0], u.fixed_offset if u.fixed_offset is not None else u.lowest_offset(u.memories[0]))
            for u in problem.units if not u.pieces}
    index = {u.root: i for i, u in enumerate(units)}
    pairs = sorted({(min(i, j), max(i, j)) for u in units for i in (index[u.root],)
                    for j in (index[o] for o in problem.conflicts[u.root] if o in index)})
    return units, rest, pairs


def _reach(problem: Problem, units: list[Unit], memory: str) -> int:
    """An offset no optimal plan exceeds: everything stacked, each aligned."""
    cap = problem.memory(memory).capacity
    stacked = sum(u.high + u.modulus.get(memory, (1, 0))[0] for u in units)
    return stacked if cap is None else min(stacked, cap)


def cpsat_clocks(problem: Problem, objective: Objective, time_limit: float | None, workers: int, seed: int,
                 hint: dict[str, Placement] | None = None) -> Result:
    from ortools.sat.python import cp_model

    units, rest, pairs = _units(problem)
    model = cp_model.CpModel()
    offset, chosen = [], []
    peak = {m: model.new_int_var(0, _reach(problem, units, m), f"peak_{m}") for m in problem.memory_names}
    for i, u in enumerate(units):
        hi = max(_reach(problem, units, m) - u.high for m in u.memories)
        o = model.new_int_var(0, max(hi, 0), f"o{i}")
        x = {m: model.new_bool_var(f"x{i}_{m}") for m in u.memories}
        model.add_exactly_one(x.values())
        for m, lit in x.items():
            mod, r = u.modulus[m]
            k = model.new_int_var(0, _reach(problem, units, m) // mod + 1, "")
            model.add(o == mod * k + r).only_enforce_if(lit)
            model.add(o + u.high <= _reach(problem, units, m)).only_enforce_if(lit)
            model.add(peak[m] >= o + u.top).only_enforce_if(lit)
        if u.fixed_offset is not None:
            model.add(o == u.fixed_offset)
        offset.append(o)
        chosen.append(x)
    for i, j in pairs:
        for m in set(chosen[i]) & set(chosen[j]):
            below = model.new_bool_var("")
            both = [chosen[i][m], chosen[j][m]]
            model.add(offset[i] + units[i].high <= offset[j]).only_enforce_if([below, *both])
            model.add(offset[j] + units[j].high <= offset[i]).only_enforce_if([below.Not(), *both])
    weights = objective.weights(problem)
    if objective.optimizes:
        model.minimize(sum(weights[m] * peak[m] for m in problem.memory_names))
    if hint:
        for i, u in enumerate(units):
            if u.root in hint:
                model.add_hint(offset[i], hint[u.root].offset)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = max(1, int(workers))
    solver.parameters.random_seed = int(seed)
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(float(time_limit), 0.01)
    status = solver.solve(model)
    stats: dict[str, object] = {"model": "vector clocks", "pairs": len(pairs), "status": solver.status_name(status)}
    if status == cp_model.INFEASIBLE:
        return Result(None, proven_infeasible=True, message="CP-SAT proved no plan fits the capacities", stats=stats)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Result(None, message="CP-SAT found no plan in time", stats=stats)
    placements = dict(rest)
    for i, u in enumerate(units):
        m = next(m for m, lit in chosen[i].items() if solver.boolean_value(lit))
        placements[u.root] = Placement(m, int(solver.value(offset[i])))
    bound = None
    if objective.optimizes and len(problem.memories) == 1:
        bound = {problem.memory_names[0]: math.ceil(solver.best_objective_bound - 1e-6)}
    return Result(placements, proven_optimal=status == cp_model.OPTIMAL and objective.optimizes, bound=bound, stats=stats)


def milp_clocks(problem: Problem, solver: str, objective: Objective, deadline: Deadline, workers: int,
                seed: int, hint: dict[str, Placement] | None = None) -> Result:
    """The same model as a MILP (big-M disjunctions), solved by ``optplan.solvers.milp.run``."""
    import pulp  # type: ignore[import-untyped]

    from optplan.solvers.milp import Model, run

    units, rest, pairs = _units(problem)
    lp = pulp.LpProblem("clocks", pulp.LpMinimize)
    big = {m: _reach(problem, units, m) for m in problem.memory_names}
    peak = {m: lp.add_variable(f"peak_{k}", 0, big[m], pulp.LpInteger) for k, m in enumerate(problem.memory_names)}
    offset, chosen = [], []
    for i, u in enumerate(units):
        o = lp.add_variable(f"o{i}", 0, max(big[m] for m in u.memories), pulp.LpInteger)
        x = {m: lp.add_variable(f"x{i}_{k}", 0, 1, pulp.LpBinary) for k, m in enumerate(u.memories)}
        lp += pulp.lpSum(x.values()) == 1
        for k, (m, lit) in enumerate(x.items()):
            mod, r = u.modulus[m]
            if mod > 1:
                q = lp.add_variable(f"k{i}_{k}", 0, big[m] // mod + 1, pulp.LpInteger)
                span = max(big[n] for n in u.memories) + mod
                lp += o - mod * q - r <= span * (1 - lit)
                lp += mod * q + r - o <= span * (1 - lit)
            lp += o + u.high <= big[m] + max(big.values()) * (1 - lit)
            lp += peak[m] >= o + u.top - max(big.values()) * (1 - lit)
        if u.fixed_offset is not None:
            lp += o == u.fixed_offset
        offset.append(o)
        chosen.append(x)
    for n, (i, j) in enumerate(pairs):
        for m in set(chosen[i]) & set(chosen[j]):
            z = lp.add_variable(f"z{n}_{problem.memory_names.index(m)}", 0, 1, pulp.LpBinary)
            slack = 2 * big[m] * (2 - chosen[i][m] - chosen[j][m])
            lp += offset[i] + units[i].high <= offset[j] + 2 * big[m] * (1 - z) + slack
            lp += offset[j] + units[j].high <= offset[i] + 2 * big[m] * z + slack
    weights = objective.weights(problem)
    lp.setObjective(pulp.lpSum(weights[m] * peak[m] for m in problem.memory_names) if objective.optimizes
                    else pulp.LpAffineExpression())
    warm = False
    if hint and all(u.root in hint for u in units):
        for i, u in enumerate(units):
            offset[i].setInitialValue(hint[u.root].offset)
            for m, lit in chosen[i].items():
                lit.setInitialValue(int(hint[u.root].memory == m))
        warm = True
    model = Model(None, lp, objective, offset, [], [], {}, [], peak, {}, weights, 1, (), [])  # type: ignore[arg-type]
    out = run(model, solver, deadline, workers, seed, warm=warm)
    stats: dict[str, object] = {"model": "vector clocks", "pairs": len(pairs), "mip_status": out.status}
    if out.values is None:
        return Result(None, proven_infeasible=out.infeasible, stats=stats,
                      message="the MIP proved no plan fits" if out.infeasible else "the MIP found no plan in time")
    placements = dict(rest)
    for i, u in enumerate(units):
        m = max(chosen[i], key=lambda m: out.values.get(chosen[i][m].name, 0.0))  # type: ignore[union-attr]
        placements[u.root] = Placement(m, int(round(out.values[offset[i].name])))  # type: ignore[index]
    bound = None
    if out.bound is not None and len(problem.memories) == 1:
        bound = {problem.memory_names[0]: math.ceil(out.bound - 1e-6)}
    return Result(placements, proven_optimal=out.optimal and objective.optimizes, bound=bound, stats=stats)
