"""Exact models for concurrent lifetimes (vector clocks): one disjunction per conflicting pair.

A scalar problem's conflicts are intervals, which the CP-SAT and MILP models of ``cpsat`` and
``milp`` exploit (time parts, NoOverlap2D, cumulative cuts). With vector clocks the conflict
graph (``clock_graph(Problem)``) is arbitrary, so these models state it directly: per unit a
memory (when it has a choice) and an aligned root offset under the capacity; per conflicting
pair sharing a memory and per range of relative offsets at which their concurrent spans would
share a byte (one range for two plain buffers), one literal saying on which side of the range
the difference of their offsets lies; per memory a peak at least every unit's top in it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from optplan.core.clocks import clock_graph
from optplan.core.cp_sat import cp_model
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.registry import Result
from optplan.solvers.cpsat import Settings, charge, solve

MAX_CLOCK_PAIRS = 200_000  # auto skips the pairwise model above this many conflicting pairs

if TYPE_CHECKING:
    from optplan.solvers.milp_runners import MilpSettings


Pair = tuple[int, int, list[tuple[int, int]]]  # units i, j; ranges of offset(i) - offset(j) that collide


def _units(problem: Problem) -> tuple[list[Unit], dict[str, Placement], list[Pair]]:
    """Units that store bytes, the placements of the others (lowest legal offset, fastest
    memory), and the conflicting pairs among the former."""
    graph = clock_graph(problem)
    units = [u for u in problem.units if u.pieces]
    rest: dict[str, Placement] = {}
    for u in problem.units:
        if not u.pieces:
            root = Placement(u.memories[0], u.fixed_offset if u.fixed_offset is not None else u.lowest_offset(u.memories[0]))
            rest.update((bid, Placement(root.memory, root.offset + rel)) for bid, rel in u.members)
    index = {u.root: i for i, u in enumerate(units)}
    number = [index.get(r, -1) for r in graph.roots]
    pairs = [(number[a], number[b], ranges) for a, row in enumerate(graph.apart) for b, ranges in row.items()
             if number[a] < number[b]]
    return units, rest, pairs


def _reach(problem: Problem, units: list[Unit], memory: str) -> int:
    """An offset no optimal plan exceeds: everything stacked, each aligned."""
    cap = problem.memory(memory).capacity
    stacked = sum(u.height + u.modulus.get(memory, (1, 0))[0] for u in units)
    return stacked if cap is None else min(stacked, cap)


def _placements(units: list[Unit], rest: dict[str, Placement], memory: list[str], offset: list[int]) -> dict[str, Placement]:
    out = dict(rest)
    for u, m, o in zip(units, memory, offset):
        out.update((bid, Placement(m, o + rel)) for bid, rel in u.members)
    return out


def cpsat_clocks(problem: Problem, objective: Objective, deadline: Deadline, settings: Settings,
                 hint: Mapping[str, Placement] | None = None) -> Result:
    """CP-SAT on the pairwise model, warm-started from ``hint``."""
    units, rest, pairs = _units(problem)
    model = cp_model.CpModel()
    offset, chosen = [], []
    peak = {m: model.new_int_var(0, _reach(problem, units, m), f"peak_{m}") for m in problem.memory_names}
    for i, u in enumerate(units):
        hi = max(_reach(problem, units, m) - u.high for m in u.memories)
        o = model.new_int_var(-u.low, max(hi, -u.low), f"o{i}")
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
    for i, j, ranges in pairs:
        for m in set(chosen[i]) & set(chosen[j]):
            both = [chosen[i][m], chosen[j][m]]
            for lo, hi in ranges:
                below = model.new_bool_var("")
                model.add(offset[i] - offset[j] <= lo - 1).only_enforce_if([below, *both])
                model.add(offset[i] - offset[j] >= hi + 1).only_enforce_if([below.Not(), *both])
    weights = objective.weights(problem)
    if objective.optimizes:
        model.minimize(sum(weights[m] * peak[m] for m in problem.memory_names))
    if hint:
        for i, u in enumerate(units):
            if u.root in hint:
                model.add_hint(offset[i], hint[u.root].offset)
    solver = cp_model.CpSolver()
    settings.apply(solver, deadline)  # deterministic: one worker, deterministic time
    status = solve(solver, model, deadline)  # a signal stops it
    charge(solver, status, deadline)
    stats: dict[str, object] = {"model": "vector clocks", "pairs": len(pairs), "status": solver.status_name(status)}
    if status == cp_model.INFEASIBLE:
        return Result(None, proven_infeasible=True, message="CP-SAT proved no plan fits the capacities", stats=stats)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Result(None, message="CP-SAT found no plan in time", stats=stats)
    placements = _placements(units, rest, [next(m for m, lit in x.items() if solver.boolean_value(lit)) for x in chosen],
                             [int(solver.value(o)) for o in offset])
    bound = None
    if objective.optimizes and len(problem.memories) == 1:
        bound = {problem.memory_names[0]: math.ceil(solver.best_objective_bound - 1e-6)}
    return Result(placements, proven_optimal=status == cp_model.OPTIMAL and objective.optimizes, bound=bound, stats=stats)


def milp_clocks(problem: Problem, objective: Objective, deadline: Deadline, settings: MilpSettings,
                hint: Mapping[str, Placement] | None = None) -> Result:
    """The same model as a MILP (big-M disjunctions), solved by ``optplan.solvers.milp_runners.run``
    (PuLP is imported when this runs, not with the CP-SAT model)."""
    import pulp

    from optplan.solvers.milp_runners import run

    units, rest, pairs = _units(problem)
    lp = pulp.LpProblem("clocks", pulp.LpMinimize)
    big = {m: _reach(problem, units, m) for m in problem.memory_names}
    peak = {m: lp.add_variable(f"peak_{k}", 0, big[m], pulp.LpInteger) for k, m in enumerate(problem.memory_names)}
    offset, chosen = [], []
    for i, u in enumerate(units):
        o = lp.add_variable(f"o{i}", -u.low, max(-u.low, max(big[m] for m in u.memories)), pulp.LpInteger)
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
    span = 2 * max(big.values(), default=0) + 2  # more than any difference of offsets minus a range end
    for n, (i, j, ranges) in enumerate(pairs):
        for m in set(chosen[i]) & set(chosen[j]):
            slack = span * (2 - chosen[i][m] - chosen[j][m])
            for r, (lo, hi) in enumerate(ranges):
                z = lp.add_variable(f"z{n}_{problem.memory_names.index(m)}_{r}", 0, 1, pulp.LpBinary)
                lp += offset[i] - offset[j] <= lo - 1 + span * (1 - z) + slack
                lp += offset[i] - offset[j] >= hi + 1 - span * z - slack
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
    out = run(lp, settings, deadline, warm=warm, step=math.gcd(*weights.values()) or 1, optimizes=objective.optimizes)
    stats: dict[str, object] = {"model": "vector clocks", "pairs": len(pairs), "mip_status": out.status}
    if out.solution is None:
        return Result(None, proven_infeasible=out.infeasible, stats=stats,
                      message="the MIP proved no plan fits" if out.infeasible else "the MIP found no plan in time")
    values = out.solution
    placements = _placements(units, rest, [max(x, key=lambda m: values.get(x[m].name, 0.0)) for x in chosen],
                             [int(round(values[o.name])) for o in offset])
    bound = None
    if out.bound is not None and len(problem.memories) == 1:
        bound = {problem.memory_names[0]: out.bound}
    return Result(placements, proven_optimal=out.optimal and objective.optimizes, bound=bound, stats=stats)
