"""The exact MILP planner through PuLP: CBC (bundled with PuLP) and HiGHS (highspy, optional).

The same problem as the CP-SAT planner as a mixed-integer program: for users who trust MIP
solvers, to cross-check CP-SAT, and (``lp_io``) to hand the model to Gurobi or CPLEX. It is built
per independent part of ``optplan.parts`` (same splitting, grid scaling, conflicting
pairs and identical-unit groups as CP-SAT), in the part's grid units:

* ``o_i`` root offset of unit i, ``o_i = r + m * k_i`` with integer ``k_i`` (alignment); one ``k``
  per memory (tied to its binary) when the unit's memories demand different moduli;
* ``x_i_j`` = 1 when unit i lives in memory j (only for units with a choice; sum over j is 1);
* for two units that are alive together and may share a memory, one binary ``z`` per pair of
  their footprint pieces that overlap in time: the classic disjunction "i below k or k below i",
  relaxed by big-M when the two units are in different memories (``s`` = same memory);
* ``peak_j`` >= every top in memory j, from below bounded by the lower bound (a constraint);
* minimize sum_j objective_weights[j] * peak_j, or nothing for ``objective="feasible"``.

Big-M values come from the *horizon* of each memory: its capacity, or everything stacked, or
what the best heuristic plan shows need not be exceeded (no better plan goes above it). The
heuristic plan is the warm start and is returned if the MIP finds nothing better. When the
default (lexicographic) weights make the objective too large for doubles, the peaks are
minimized one memory after the other instead (``model_weights``).

Plans are read back by ``decode``: the solver's rounded offsets, or the least offsets that keep
its memories and below/above binaries (exact even when CBC prints offsets to 8 digits), or
gravity (repairs overlaps left by tolerances times big-M); the best valid one wins, and
optimality is only claimed when it is no worse than the solver's proven optimum. Both solvers
run in child processes, which are stopped at the time limit if they overrun it (CBC checks it
rarely); HiGHS runs through ``highs_child.py`` (OR-Tools and highspy cannot share a process).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# OR-Tools and highspy ship different builds of libhighs.so.1 and cannot share a process; PuLP
# imports highspy when it is imported. Loading OR-Tools first makes that import fail quietly
# inside PuLP (its HiGHS API is then unavailable); HiGHS runs in a child process instead.
import numpy as np
import ortools.sat.python.cp_model  # noqa: F401  (must precede ``import pulp``)
import pulp

from optplan.core.bounds import lower_bounds
from optplan.core.deadline import Deadline
from optplan.core.errors import OptplanError
from optplan.core.lifecycle import run_child
from optplan.core.objective import Objective
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.heuristics.packer import Packer
from optplan.heuristics.run import run_heuristics
from optplan.parts import (
    Choice,
    Part,
    conflict_pairs,
    identical_groups,
    order_choices,
    settle,
)
from optplan.registry import Result, planner
from optplan.solvers.cpsat import part_peaks, solve_parts

SOLVERS = ("cbc", "highs")
_STARTUP = {"cbc": 0.4, "highs": 0.5}  # seconds a solver's child process needs to start and report
# CBC looks at its own limit only between phases: in its root cuts on minimalloc A and C it ran 0.5-2 s
# past it (load 1-6), and it answers SIGINT as late. So it is asked to stop (its limit, then SIGINT)
# this long before the deadline, at most this share of the time, and killed at the deadline.
CBC_STOP_WINDOW, CBC_STOP_SHARE = 2.0, 0.3
_DISPLAY = {"cbc": "CBC", "highs": "HiGHS"}
LOST_STAGE = "(lost benefit)"  # the stage after the peaks' under min-peak: the tie-break
# Model size, measured on minimalloc A, C, D (4.6k-12.5k conflicting pairs, 2-core machine under load):
# PuLP's model took 1.6-2.3 kB of memory and 0.43-0.52 ms to build per pair of units alive together.
BYTES_PER_PAIR = 2500
BUILD_SECONDS_PER_PAIR = 5e-4
# Deterministic mode: branch-and-bound nodes per deterministic second (single thread), instead of a
# wall-clock limit, and a wall cap: the budget + 1 s, and no later than the limit's own wall time
# (``Deadline.wall_left``: minimalloc E's two parts, each capped at its budget + 1 s, took 8-10 s
# at 5 s). A node budget does not bound the root: CBC spent 32 s there on minimalloc A (7 nodes).
# A capped solver is killed at once and its answer dropped (SIGINT let CBC hand over what it had
# after up to 2 s, different on every run): the warm start stays, the same plan on every capped run.
MIP_NODES_PER_SECOND = 100
MIP_WALL_CAP = (1.0, 1.0)  # (times the budget, plus seconds)
CAPPED = "stopped by the wall-clock cap of a deterministic run (its answer dropped)"
EXACT_LIMIT = 1e12  # largest model objective a MIP solver (doubles) still resolves to one unit


@dataclass
class Model:
    """A part's MILP and the variables needed to warm-start it and read it back."""

    part: Part
    lp: pulp.LpProblem
    objective: Objective
    offset: list[pulp.LpVariable]
    assign: list[dict[str, pulp.LpVariable]]  # empty: the unit has one memory
    ks: list[dict[str, pulp.LpVariable]]  # alignment multipliers ("" key: shared by all memories)
    same: dict[tuple[int, int], pulp.LpVariable]  # same-memory indicators (only where needed)
    order: list[tuple[int, int, int, int, pulp.LpVariable | None]]  # (i, p, k, q, z); None: fixed 1
    peak: dict[str, pulp.LpVariable]
    floor: dict[str, int]  # per memory: peaks up to it cost nothing extra (a bound of the whole)
    weights: dict[str, int]  # of the peaks in the (first) objective
    factor: int | None  # objective_weights = factor * weights; None: solved in lexicographic stages
    stages: tuple[str, ...]  # memories minimized one after the other (slowest first), or ()
    groups: list[list[int]]  # identical units, ordered in the model
    shift: int = 1  # > 1: the lost benefit is in the model objective (Objective.combine, in model units)
    lost_expr: pulp.LpAffineExpression | None = None  # the lost benefit, minimized in the last stage
    lost_unit: int = 1  # bytes of benefit per model unit of lost benefit

    def lost_coefficients(self) -> list[dict[str, int]]:
        """Per unit with a memory choice: the lost benefit (model units) of each memory."""
        tw = self.objective.tier_weights(self.part.problem)
        raw = [{m: u.gain * tw[m] for m in u.memories} if self.assign[i] else {} for i, u in enumerate(self.part.units)]
        self.lost_unit = math.gcd(*(c for r in raw for c in r.values())) or 1
        return [{m: c // self.lost_unit for m, c in r.items()} for r in raw]

    def lost_terms(self) -> tuple[pulp.LpAffineExpression, int]:
        """The lost benefit of the units with a choice as a linear expression, and its maximum."""
        if not self.objective.counts_benefit:
            return pulp.LpAffineExpression(), 0
        coef = self.lost_coefficients()
        expr = pulp.lpSum(c * self.assign[i][m] for i, r in enumerate(coef) for m, c in r.items() if c)
        return expr, sum(max(r.values(), default=0) for r in coef)

    def split(self, value: int) -> tuple[int, int]:
        """(weighted peaks, lost benefit) in model units from a model objective value or bound."""
        if self.shift == 1:
            return value, 0
        return self.objective.unpack(value, self.shift)

    def value(self, choices: Sequence[Choice]) -> int:
        """The (first) model objective of a plan of the part (grid units)."""
        peak = part_peaks(self.part, choices)
        weighted = sum(self.weights[m] * max(self.floor[m], peak[m]) for m in self.peak)
        if self.shift == 1:
            return weighted
        coef = self.lost_coefficients()
        lost = sum(r[m] for r, (m, _) in zip(coef, choices) if r)
        return lost * self.shift + weighted if self.objective.benefit_first else weighted * self.shift + lost

    def key(self, choices: Sequence[Choice]) -> tuple[int, ...]:
        """Orders plans as the objective does (smaller is better)."""
        if not self.stages:
            return (self.value(choices),)
        peak = part_peaks(self.part, choices)
        coef = self.lost_coefficients() if LOST_STAGE in self.stages else []
        lost = sum(r[m] for r, (m, _) in zip(coef, choices) if r)
        return tuple(lost if m == LOST_STAGE else max(self.floor[m], peak[m]) for m in self.stages)


def _name(problem: Problem, memory: str) -> int:
    return problem.memory_names.index(memory)


def offset_name(i: int) -> str:
    """The variable of unit i's root offset (grid units): the contract of exported models."""
    return f"o_{i}"


def assign_name(i: int, memory_index: int) -> str:
    """The binary 'unit i lives in memory number memory_index' (problem order)."""
    return f"x_{i}_{memory_index}"


def model_weights(part: Part, horizon: dict[str, int], objective: Objective) -> tuple[dict[str, int], int | None, tuple[str, ...]]:
    """The objective as the MIP gets it: weights, the factor back to ``objective_weights``, stages.

    MIP solvers compute in doubles: objective values must stay well below 2**53 for a gap of one
    unit to mean anything. The weights are divided by their gcd; if the weighted peaks can still
    exceed ``EXACT_LIMIT`` and the weights are the default ones (lexicographic, slowest memory
    first), the memories' peaks are minimized one after the other instead, slowest first, each
    stage keeping the peaks the earlier ones reached.
    """
    problem = part.problem
    w = {m: objective.weights(problem)[m] for m in part.memories}
    g = math.gcd(*w.values()) or 1
    ws = {m: v // g for m, v in w.items()}
    if sum(ws[m] * horizon[m] for m in ws) < EXACT_LIMIT:
        return ws, g, ()
    if any(mem.weight is not None for mem in problem.memories):
        raise OptplanError(f"the memory weights times the peaks can exceed {EXACT_LIMIT:.0e}, more than a MIP solver "
                           "resolves to one unit; use smaller weights or the cpsat planner")
    stages = tuple(reversed(part.memories))
    return {m: int(m == stages[0]) for m in part.memories}, None, stages


class NoTime(Exception):
    """The model could not be built before the deadline."""


def overlapping_pairs(units: Sequence) -> int:
    """Pairs of units alive at a common time: the MIP's disjunctions, counted in O(n log n)
    without listing them (tens of millions on idealloc/S_1)."""
    if not units:
        return 0
    starts = np.array([u.start for u in units], np.int64)
    ends = np.array([u.end for u in units], np.int64)
    alive = np.searchsorted(np.sort(starts), ends, "left") - np.searchsorted(np.sort(ends), starts, "right")
    return int((alive.sum() - len(units)) // 2)


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux ``MemAvailable``), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def check_size(problem: Problem, name: str) -> int:
    """Refuse, with one line, a MIP that would not fit in memory; returns its pair count."""
    pairs = overlapping_pairs(problem.units)
    need, have = pairs * BYTES_PER_PAIR, available_memory()
    if have is not None and need > have:
        raise OptplanError(f"planner {name!r}: the MIP would have about {pairs:,} disjunctive pairs and need about "
                           f"{need / 2**30:.1f} GiB of memory to build, {have / 2**30:.1f} GiB available; "
                           "use planner 'auto' or 'cpsat'")
    return pairs


def build_model(part: Part, objective: Objective | str | None = None, incumbent: Sequence[Choice] | None = None,
                floor: dict[str, int] | None = None, symmetry: bool = True, deadline: Deadline | None = None) -> Model:
    """The MILP of ``part``; ``incumbent`` (grid units) bounds the horizons and is the warm start.

    ``floor[m]`` (grid units, default the part's lower bound) is a peak the whole problem cannot
    go below anyway, so nothing is gained below it. Raises NoTime when ``deadline`` expires first.
    """
    units = part.scaled
    problem = part.problem
    objective = Objective.parse(objective, problem)
    mems = list(part.memories)
    jx = {m: _name(problem, m) for m in mems}
    floor = {m: max(part.lower[m], (floor or {}).get(m, 0)) for m in mems}
    lp = pulp.LpProblem("optplan", pulp.LpMinimize)

    # horizon per memory: no optimal (or, for "feasible", no needed) plan goes above it
    fixed_top = {m: max((u.fixed_offset + u.top for u in units if u.fixed_offset is not None and m in u.memories),
                        default=0) for m in mems}
    horizon = {}
    for m in mems:
        stack = fixed_top[m] + sum(u.height + u.modulus[m][0] - 1 for u in units
                                   if u.fixed_offset is None and m in u.memories)
        cap = part.capacity[m]
        horizon[m] = stack if cap is None else min(cap, stack)
    stages: tuple[str, ...]
    if not objective.optimizes:
        weights, factor, stages = {m: 0 for m in mems}, 1, ()
    else:
        weights, factor, stages = model_weights(part, horizon, objective)
    if incumbent is not None and objective.optimizes and not (objective.benefit_first and _choices(part)):
        # (fast-first: a plan keeping more benefit may have higher peaks than the incumbent)
        inc = part_peaks(part, incumbent)
        value = sum(weights[m] * max(floor[m], inc[m]) for m in mems)
        for m in mems:
            if weights[m] > 0:
                rest = sum(weights[o] * floor[o] for o in mems if o != m)
                horizon[m] = min(horizon[m], (value - rest) // weights[m])
    horizon = {m: max(horizon[m], floor[m]) for m in mems}

    peak = {m: lp.add_variable(f"peak_{jx[m]}", floor[m], horizon[m]) for m in mems}
    # a peak no objective (or stage) counts gets no rows: the room rows keep it within the horizon,
    # and its free rows led CBC's preprocessing to cut off the optimum (tests/test_milp.py)
    counted = {m for m in mems if weights[m] > 0 or m in stages}
    offset: list[pulp.LpVariable] = []
    assign: list[dict[str, pulp.LpVariable]] = []
    ks: list[dict[str, pulp.LpVariable]] = []
    lo: list[int] = []
    hi: dict[tuple[int, str], int] = {}  # highest root offset of unit i in memory m
    for i, u in enumerate(units):
        lo_i = -u.low if u.fixed_offset is None else u.fixed_offset
        for m in u.memories:
            room = horizon[m] - u.top
            if part.capacity[m] is not None:
                room = min(room, part.capacity[m] - u.high)
            hi[i, m] = room if u.fixed_offset is None else min(room, u.fixed_offset)  # < lo: cannot go to m
        hi_i = max(lo_i, max(hi[i, m] for m in u.memories))
        lo.append(lo_i)
        o = lp.add_variable(offset_name(i), lo_i, hi_i)
        offset.append(o)
        x = {}
        if len(u.memories) > 1:
            x = {m: lp.add_variable(assign_name(i, jx[m]), 0, 1, pulp.LpBinary) for m in u.memories}
            lp += pulp.lpSum(x.values()) == 1, f"one_memory_{i}"
        assign.append(x)
        X = {m: x.get(m, 1) for m in u.memories}
        if u.fixed_offset is not None:
            lp += o == u.fixed_offset, f"fixed_{i}"
        k: dict[str, pulp.LpVariable] = {}
        moduli = {u.modulus[m] for m in u.memories}
        if u.fixed_offset is not None:
            pass  # the validated problem guarantees the fixed offset is aligned in every memory
        elif len(moduli) == 1:
            mod, r = next(iter(moduli))
            if mod == 1:
                o.cat = pulp.LpInteger
            else:
                k[""] = lp.add_variable(f"k_{i}", 0, max(0, (hi_i - r) // mod), pulp.LpInteger)
                lp += o - mod * k[""] == r, f"align_{i}"
        else:
            for m in u.memories:
                mod, r = u.modulus[m]
                k[m] = lp.add_variable(f"k_{i}_{jx[m]}", 0, max(0, (hi_i - r) // mod), pulp.LpInteger)
                lp += k[m] <= max(0, (hi_i - r) // mod) * x[m], f"align_use_{i}_{jx[m]}"
            lp += o == pulp.lpSum(u.modulus[m][0] * k[m] + u.modulus[m][1] * x[m] for m in u.memories), f"align_{i}"
        ks.append(k)
        for m in u.memories:
            if hi[i, m] < hi_i:  # (for a unit with one memory: a row that says it cannot fit)
                lp += o <= hi[i, m] + (hi_i - hi[i, m]) * (1 - X[m]), f"room_{i}_{jx[m]}"
            if u.pieces and m in counted:
                lp += peak[m] >= o + u.top - (hi_i + u.top) * (1 - X[m]), f"top_{i}_{jx[m]}"

    # disjunctions for the pieces of units that may collide
    groups = identical_groups(units) if symmetry else []
    ordered = {pair for g in groups for pair in itertools.pairwise(g)}
    same: dict[tuple[int, int], pulp.LpVariable] = {}
    order: list[tuple[int, int, int, int, pulp.LpVariable | None]] = []
    for n_pair, (i, k2) in enumerate(conflict_pairs(units).tolist()):
        if deadline is not None and n_pair % 256 == 0 and deadline.expired():
            raise NoTime
        u, v = units[i], units[k2]
        common = [m for m in u.memories if m in v.memories]
        Xu = {m: assign[i].get(m, 1) for m in u.memories}
        Xv = {m: assign[k2].get(m, 1) for m in v.memories}
        s: Any = None  # None: always in the same memory; else a 0-1 expression (a variable or an assign literal)
        if len(u.memories) == 1 and len(v.memories) == 1:
            pass
        elif len(common) == 1 and len(u.memories) == 1:
            s = Xv[common[0]]
        elif len(common) == 1 and len(v.memories) == 1:
            s = Xu[common[0]]
        else:
            s = same[i, k2] = lp.add_variable(f"s_{i}_{k2}", 0, 1)
            for m in common:
                lp += s >= Xu[m] + Xv[m] - 1, f"same_{i}_{k2}_{jx[m]}"
        free_u = max(hi[i, m] for m in u.memories)
        free_v = max(hi[k2, m] for m in v.memories)
        for p, (a, b, y0, y1) in enumerate(u.pieces):
            for q, (c, d, w0, w1) in enumerate(v.pieces):
                if not (a < d and c < b):
                    continue
                below = y1 - w0  # i below k: o_i + below <= o_k
                above = w1 - y0  # k below i: o_k + above <= o_i
                m1 = max(0, max(hi[i, m] for m in common) + below - lo[k2])
                m2 = max(0, max(hi[k2, m] for m in common) + above - lo[i])
                ms1 = max(0, free_u + below - lo[k2])
                ms2 = max(0, free_v + above - lo[i])
                relax1 = 0 if s is None else ms1 * (1 - s)
                relax2 = 0 if s is None else ms2 * (1 - s)
                tag = f"{i}_{p}_{k2}_{q}"
                if (i, k2) in ordered and p == q:
                    # identical units in (memory, offset) order: i is below k in a shared memory
                    lp += offset[i] + below <= offset[k2] + relax1, f"sym_{tag}"
                    order.append((i, p, k2, q, None))
                    continue
                z = lp.add_variable(f"z_{tag}", 0, 1, pulp.LpBinary)
                lp += offset[i] + below <= offset[k2] + m1 * (1 - z) + relax1, f"below_{tag}"
                lp += offset[k2] + above <= offset[i] + m2 * z + relax2, f"above_{tag}"
                order.append((i, p, k2, q, z))
    for g in groups:
        u = units[g[0]]
        if len(u.memories) > 1:
            rank = {m: r for r, m in enumerate(u.memories)}
            for a, b in itertools.pairwise(g):
                lp += (pulp.lpSum(rank[m] * assign[a][m] for m in u.memories)
                       <= pulp.lpSum(rank[m] * assign[b][m] for m in u.memories)), f"sym_memory_{a}_{b}"

    model = Model(part, lp, objective, offset, assign, ks, same, order, peak, floor, weights, factor, stages, groups)
    if not objective.optimizes:
        lp += pulp.LpAffineExpression()
    else:
        weighted = pulp.lpSum(weights[m] * peak[m] for m in mems)
        lost, top = model.lost_terms()
        w_top = sum(weights[m] * horizon[m] for m in mems) + 1
        shift = max(w_top if objective.benefit_first else top + 1, 2)  # 1 would mean "no benefit term"
        if top and not stages and (top + 1) * w_top < EXACT_LIMIT:
            model.shift = shift
            lp += shift * lost + weighted if objective.benefit_first else shift * weighted + lost
        else:
            lp += weighted
            if top and stages and not objective.benefit_first:  # the tie-break: one more stage
                model.stages, model.lost_expr = stages + (LOST_STAGE,), lost
    if incumbent is not None:
        warm_start(model, incumbent)
    return model


def warm_start(model: Model, choices: Sequence[Choice]) -> None:
    """Initial values of every variable from a plan of the part (grid units)."""
    units = model.part.scaled
    choices = order_choices(units, list(choices), model.groups)  # as the symmetry breaking wants
    for i, (u, (m, o)) in enumerate(zip(units, choices)):
        model.offset[i].setInitialValue(o)
        for mm, x in model.assign[i].items():
            x.setInitialValue(int(mm == m))
        for key, k in model.ks[i].items():
            mod, r = u.modulus[m if key == "" else key]
            k.setInitialValue((o - r) // mod if key in ("", m) else 0)
    for (i, k), s in model.same.items():
        s.setInitialValue(int(choices[i][0] == choices[k][0]))
    for i, p, k, q, z in model.order:
        if z is not None:
            (mi, oi), (mk, ok) = choices[i], choices[k]
            z.setInitialValue(int(mi != mk or oi + units[i].pieces[p][2] < ok + units[k].pieces[q][2]))
    peak = part_peaks(model.part, choices)
    for m, var in model.peak.items():
        var.setInitialValue(max(model.floor[m], peak[m]))


def read_choices(part: Part, value: Callable[[str], float | None]) -> list[tuple[str, float]] | None:
    """(memory, raw offset in grid units) per unit from solution values by variable name; None
    when a value is missing."""
    names = part.problem.memory_names
    out = []
    for i, u in enumerate(part.scaled):
        o = value(offset_name(i))
        if o is None:
            return None
        m = u.memories[0]
        if len(u.memories) > 1:
            xs = {mm: value(assign_name(i, names.index(mm))) for mm in u.memories}
            if any(v is None for v in xs.values()):
                return None
            m = max(u.memories, key=lambda mm: xs[mm])  # type: ignore[arg-type, return-value]
        out.append((m, float(o)))
    return out


def decode(part: Part, raw: Sequence[tuple[str, float]], model: Model | None = None,
           values: Callable[[str], float | None] | None = None) -> list[tuple[list[Choice], str]]:
    """Valid plans (grid units) read from a solver's solution, most faithful first, each with how
    it was read: ``"offsets"`` (rounded as given), ``"order"`` (the least offsets that keep the
    solution's memories and its below/above binaries: no unit higher than in an exactly feasible
    solution, whatever the printed precision of the offsets), ``"gravity"`` (units re-placed
    lowest first in the order of their offsets: repairs overlaps left by tolerances).
    """
    out: list[tuple[list[Choice], str]] = []
    rounded = [(m, int(round(o))) for m, o in raw]
    if any(m not in u.modulus for u, (m, _) in zip(part.scaled, rounded)):
        return out
    if _valid(part, rounded):
        out.append((rounded, "offsets"))
    if model is not None and values is not None:
        ordered = _least_offsets(model, [m for m, _ in raw], values)
        if ordered is not None and _valid(part, ordered):
            out.append((ordered, "order"))
    packer = Packer(part.problem)
    for i in sorted(range(len(part.units)), key=lambda i: (part.units[i].fixed_offset is None, raw[i][1], i)):
        u, m = part.units[i], raw[i][0]
        off = packer.fit(u, m, "first")
        if off is None:
            return out
        packer.place(u, m, off)
    choices = settle(part, packer.placements)
    if choices is not None and _valid(part, choices):
        out.append((choices, "gravity"))
    return out


def _least_offsets(model: Model, memory: list[str], values: Callable[[str], float | None]) -> list[Choice] | None:
    """Smallest aligned offsets with every "i below k" of the solution's binaries (Bellman-Ford
    with rounding up to the alignment; None if it does not settle, e.g. contradictory binaries)."""
    units = model.part.scaled
    edges = []  # (a, b, w): o_b >= o_a + w
    for i, p, k, q, z in model.order:
        if memory[i] != memory[k]:
            continue
        zv = 1.0 if z is None else values(z.name)
        if zv is None:
            return None
        if zv > 0.5:
            edges.append((i, k, units[i].pieces[p][3] - units[k].pieces[q][2]))
        else:
            edges.append((k, i, units[k].pieces[q][3] - units[i].pieces[p][2]))
    o = [u.fixed_offset if u.fixed_offset is not None else u.lowest_offset(m) for u, m in zip(units, memory)]
    for _ in range(len(units) + 1):
        changed = False
        for a, b, w in edges:
            need = o[a] + w
            if o[b] < need:
                if units[b].fixed_offset is not None:
                    return None
                o[b] = units[b].lowest_offset(memory[b], need)
                changed = True
        if not changed:
            return list(zip(memory, o))
    return None


def _valid(part: Part, choices: Sequence[Choice]) -> bool:
    placements = part.placements(choices)
    sub = part.sub_problem
    return all(0 <= o for _, o in choices) and not validate(sub, placements, limit=1)


@dataclass
class Outcome:
    """One MIP run: the solution's values, proofs, the solver's bound."""

    values: dict[str, float] | None  # variable name -> value of the best solution; None: no solution
    optimal: bool = False
    infeasible: bool = False
    value: float | None = None
    bound: float | None = None
    status: str = ""
    stats: dict[str, object] = field(default_factory=dict)


def run(model: Model, solver: str, deadline: Deadline, workers: int = 1, seed: int = 0,
        warm: bool = False) -> Outcome:
    """Solve ``model`` with CBC or HiGHS until ``deadline``; exact gaps (integer objective)."""
    gcd = math.gcd(*model.weights.values()) or 1
    gap_abs = 0.999 * gcd  # objective values are multiples of gcd: below that gap means optimal
    # the solver's own limit leaves time for its start-up and answer; ``run_child`` enforces the deadline
    window = _stop_window(deadline) if solver == "cbc" else 0.0
    seconds = max(deadline.left() - window - _STARTUP[solver], 0.05) if deadline.limited else None
    nodes = wall = None
    if deadline.deterministic:  # a node budget: the same search on every run, whatever the load
        seconds, workers = None, 1
        if deadline.limited:
            nodes = max(1, int(deadline.left() * MIP_NODES_PER_SECOND))
            wall = min(MIP_WALL_CAP[0] * deadline.left() + MIP_WALL_CAP[1], deadline.wall_left())
            if wall <= _STARTUP[solver]:  # it could not even start: the limit's wall time is up
                deadline.hit_guard()
                return Outcome(None, status=CAPPED, stats={"deterministic_wall_capped": 1})
    if solver == "highs":
        out = _run_highs(model, deadline, seconds, gap_abs, workers, seed, warm, nodes, wall)
    else:
        out = _run_cbc(model, deadline, seconds, gap_abs, workers, seed, warm, nodes, wall, window)
    if deadline.deterministic:
        deadline.spend(float(out.stats.get("nodes", 0)) / MIP_NODES_PER_SECOND)  # type: ignore[arg-type]
        if "deterministic_wall_capped" in out.stats:
            deadline.hit_guard()
    return out


def _stop_window(deadline: Deadline) -> float:
    """Seconds before a wall-clock deadline at which CBC is asked to stop (``CBC_STOP_WINDOW``)."""
    if not deadline.limited or deadline.deterministic:
        return 0.0
    return min(CBC_STOP_WINDOW, CBC_STOP_SHARE * deadline.left())


def _run_cbc(model: Model, deadline: Deadline, seconds: float | None, gap_abs: float, workers: int, seed: int,
             warm: bool, nodes: int | None, wall: float | None, window: float = 0.0) -> Outcome:
    """CBC on the model, run by us: PuLP's own runner waits forever and leaves CBC in our process group.
    SIGINT ``window`` seconds before the deadline (no window: at it), SIGKILL at it (or 2 s later)."""
    options = ([f"randomCbcSeed {seed}"] if seed else []) + ([f"maxNodes {nodes}"] if nodes is not None else [])
    with warnings.catch_warnings():  # PuLP 3.3 deprecates its bundled CBC for 4.0 (pin pulp<4)
        warnings.simplefilter("ignore", DeprecationWarning)
        s = pulp.PULP_CBC_CMD(msg=False, timeLimit=seconds, gapRel=0.0, gapAbs=gap_abs, threads=workers,
                              warmStart=warm, options=options)
    with tempfile.TemporaryDirectory(prefix="optplan-cbc-") as tmp:
        mps, mst, sol, log = (os.path.join(tmp, n) for n in ("model.mps", "start.mst", "model.sol", "cbc.log"))
        lp = model.lp
        variables, var_names, con_names, _ = lp.writeMPS(mps, rename=1)
        args = [s.path, mps]
        if warm:
            s.writesol(mst, lp, variables, var_names, con_names)
            args += ["-mips", mst]
        if seconds is not None:
            args += ["-sec", f"{seconds:.3f}"]
        for option in s.options + s.getOptions():  # PuLP's spelling of the options: "-name value"
            name, *value = option.split()
            args += [f"-{name}", *value]
        args += ["-solve", "-printingOptions", "all", "-solution", sol]
        with open(log, "w", encoding="utf-8") as f:
            asked = deadline.part(deadline.left() - window) if window else deadline
            _, stopped = run_child(args, asked, grace=window or 2.0, stop=signal.SIGINT, log=f, wall=wall)
        if stopped and wall is not None and not deadline.cancelled:
            return Outcome(None, status=CAPPED, stats={"deterministic_wall_capped": 1})
        if not os.path.exists(sol):
            return Outcome(None, status="interrupted" if deadline.cancelled else "killed: CBC ignored the time limit")
        status, values, _, _, _, sol_status = s.readsol_MPS(sol, lp, variables, var_names, con_names)
        lp.assignVarsVals(values)
        lp.assignStatus(status, sol_status)
        with open(log, encoding="utf-8", errors="replace") as f:
            text = f.read()
    return _cbc_outcome(model, text)


def _run_highs(model: Model, deadline: Deadline, seconds: float | None, gap_abs: float, workers: int, seed: int,
               warm: bool, nodes: int | None, wall: float | None) -> Outcome:
    """HiGHS on the model's MPS file in a child process (see ``highs_child`` for why)."""
    try:
        import importlib.util

        if importlib.util.find_spec("highspy") is None:
            raise ImportError
    except ImportError:
        raise OptplanError("planner 'milp-highs' needs highspy: pip install 'optplan[highs]'") from None
    options: dict[str, object] = {"mip_rel_gap": 0.0, "mip_abs_gap": gap_abs, "random_seed": int(seed),
                                  "threads": int(workers)}
    if nodes is not None:
        options["mip_max_nodes"] = nodes
    due = None if seconds is None else time.time() + seconds
    with tempfile.TemporaryDirectory(prefix="optplan-highs-") as tmp:
        mps, req, res, log = (os.path.join(tmp, n) for n in ("model.mps", "request.json", "result.json", "log"))
        model.lp.writeMPS(mps)
        start = {v.name: v.varValue for v in model.lp.variables() if v.varValue is not None} if warm else None
        with open(req, "w", encoding="utf-8") as f:
            json.dump({"options": options, "start": start, "deadline": due}, f)
        with open(log, "w+", encoding="utf-8") as f:
            code, stopped = run_child([sys.executable, str(Path(__file__).with_name("highs_child.py")), mps, req, res],
                                      deadline, stop=signal.SIGKILL, log=f, late=0.5, wall=wall)
            f.seek(0)
            err = f.read().strip().splitlines()[-1:]
        if stopped and wall is not None and not deadline.cancelled:
            return Outcome(None, status=CAPPED, stats={"deterministic_wall_capped": 1})
        if code != 0 or not os.path.exists(res):
            if deadline.cancelled or stopped:
                return Outcome(None, status="interrupted" if deadline.cancelled else "killed: HiGHS ignored the time limit")
            raise RuntimeError(f"HiGHS child process failed: {err or code}")
        with open(res, encoding="utf-8") as f:
            r = json.load(f)
    out = Outcome(r["values"], status=r["status"])
    if out.values is not None:
        out.value = r["objective"]
    out.optimal = r["status"] == "Optimal"
    out.infeasible = r["status"] == "Infeasible"
    if model.objective.optimizes and math.isfinite(r["bound"]):
        out.bound = r["bound"] if not out.optimal or out.value is None else max(r["bound"], out.value)
    out.stats = {"nodes": r["nodes"]}
    return out


def _cbc_outcome(model: Model, log: str) -> Outcome:
    """CBC's verdict: status from PuLP, the best bound from the log (PuLP does not report it)."""
    lp = model.lp
    result = re.search(r"^Result - (.*)$", log, re.MULTILINE)
    status = result.group(1).strip() if result else pulp.LpStatus[lp.status]
    out = Outcome(None, status=status)
    out.infeasible = lp.status == pulp.LpStatusInfeasible
    out.optimal = lp.status == pulp.LpStatusOptimal and lp.sol_status == pulp.LpSolutionOptimal
    if lp.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        out.values = {v.name: v.varValue for v in lp.variables() if v.varValue is not None}
        out.value = pulp.value(lp.objective) or 0.0
    if model.objective.optimizes:
        lower = re.search(r"^Lower bound:\s*(\S+)", log, re.MULTILINE)
        if out.optimal:
            out.bound = out.value
        elif lower:
            out.bound = float(lower.group(1))
    nodes = re.search(r"^Enumerated nodes:\s*(\d+)", log, re.MULTILINE)
    out.stats = {"nodes": int(nodes.group(1))} if nodes else {}
    return out


def best_heuristic(problem: Problem, deadline: Deadline, seed: int = 0,
                   objective: Objective | None = None) -> dict[str, Placement] | None:
    """The best plan of the constructive heuristics under ``objective`` (compiled: about a second
    on 60k buffers), or None."""
    plans, _errors = run_heuristics(problem, deadline, seed, improve=False, objective=objective)  # a failing heuristic is simply not a candidate
    found = [p for p in plans if p.found]
    # ties (e.g. a weight-0 memory scores every plan 0) go to the lowest peaks: a plan stacked
    # higher than the model's horizons (naive's) cannot be its warm start
    return min(found, key=lambda p: (p.objective_value, sum(p.peak.values()))).placements if found else None  # type: ignore[arg-type, return-value]


def solve_part(part: Part, solver: str, deadline: Deadline, objective: Objective,
               incumbent: dict[str, Placement] | None, workers: int = 1, seed: int = 0) -> Result:
    """The MIP of one part, warm-started from the heuristic plan, which is kept if nothing beats
    it; in lexicographic stages when the weighted objective is too large for doubles."""
    t0 = time.perf_counter()
    start = settle(part, incumbent) if incumbent is not None else None
    floor = {}
    if len(part.memories) == 1:  # the whole memory is in this component: its bound holds here
        m = part.memories[0]
        floor[m] = lower_bounds(part.problem).lower[m] // part.scale
    stats: dict[str, object] = {"units": len(part.units)}
    if start is not None:
        peak = part_peaks(part, start)
        if all(peak[m] <= max(part.lower[m], floor.get(m, 0)) for m in part.memories) and not _trades_benefit(objective, part):
            # the heuristic plan meets the lower bound: nothing to prove
            return Result(part.placements(start), proven_optimal=objective.optimizes, stats=stats)
    pairs = overlapping_pairs(part.scaled)
    if deadline.limited and pairs * BUILD_SECONDS_PER_PAIR > deadline.left():
        return _not_built(part, start, f"about {pairs * BUILD_SECONDS_PER_PAIR:.0f} s", deadline, stats)
    try:
        model = build_model(part, objective, start, floor, deadline=deadline)
    except NoTime:
        return _not_built(part, start, "more", deadline, stats)
    except OptplanError as e:
        return Result(None if start is None else part.placements(start), message=str(e), stats=stats)
    if deadline.deterministic:  # its building counts, at the measured rate
        deadline.spend(pairs * BUILD_SECONDS_PER_PAIR)
    stats["order_binaries"] = sum(z is not None for *_, z in model.order)
    choices, proven, first_bound, outs = start, True, None, []
    stages = model.stages or ("",)
    for n, mem in enumerate(stages):
        if n:  # keep what the earlier stage reached, minimize the next memory
            prev = stages[n - 1]
            model.lp += model.peak[prev] <= model.key(choices)[n - 1], f"stage_{n}"  # type: ignore[arg-type]
            model.lp.setObjective(model.lost_expr if mem == LOST_STAGE else pulp.lpSum([model.peak[mem]]))
            warm_start(model, choices)  # type: ignore[arg-type]
        out = run(model, solver, deadline.share(1 / (len(stages) - n)), workers, seed, warm=choices is not None)
        outs.append(out)
        get = _solution(model, out.values) if out.values is not None else None
        raw = read_choices(part, get) if get is not None else None
        found = decode(part, raw, model, get) if raw is not None and get is not None else []
        if raw is not None and not found:
            stats["invalid_solution"] = out.status  # the model allowed what the validator rejects: a bug
        if found:
            best, how = min(found, key=lambda c: model.key(c[0]))
            if choices is None or model.key(best) <= model.key(choices):
                choices = best
                if how != "offsets":
                    stats["read_by"] = how  # the solver's rounded offsets were not the best valid plan
        if choices is None:
            break
        value = model.value(choices) if not model.stages else model.key(choices)[n]
        # proven: the solver proved its solution optimal and ours is no worse; the least offsets
        # of its own order are no worse by construction (printed offsets may be rounded: CBC)
        by_order = any(how == "order" for _, how in found)
        proven = proven and out.optimal and out.value is not None and (value <= round(out.value) or by_order)
        if n == 0:
            first_bound = out.bound
    last = outs[-1]
    stats.update(last.stats, mip_status=", ".join(o.status for o in outs), mip_seconds=round(time.perf_counter() - t0, 3))
    if any("deterministic_wall_capped" in o.stats for o in outs):
        stats["deterministic_wall_capped"] = 1
    if first_bound is not None and model.factor is not None:
        stats["mip_bound"] = first_bound * part.scale * model.factor  # on the weighted peaks, in bytes
    if choices is None:
        if last.infeasible:
            return Result(None, proven_infeasible=True, message=f"{_DISPLAY[solver]} proved that no plan fits the capacities",
                          stats=stats)
        if "invalid_solution" in stats:
            return Result(None, message=f"{_DISPLAY[solver]}'s solution is not a valid plan (a model bug)", stats=stats)
        return Result(None, message=f"{_DISPLAY[solver]} found no plan: {deadline.cancelled or 'time limit reached'} "
                                    f"({last.status})", stats=stats)
    message = "" if proven else f"{_DISPLAY[solver]}: {stats['mip_status']}"
    return _result(model, choices, proven, first_bound, message, stats)


def _solution(model: Model, values: dict[str, float]) -> Callable[[str], float | None]:
    """Values by name; an offset in no row (a unit alone in a memory whose peak no objective
    counts) is missing from the solver's answer: any value in its bounds will do, the lowest."""
    low = {v.name: v.lowBound for v in model.offset}
    return lambda name: values.get(name, low.get(name))


def _not_built(part: Part, start: list[Choice] | None, need: str, deadline: Deadline,
               stats: dict[str, object]) -> Result:
    """The part's model would take ``need`` to build, more than the deadline leaves: keep the warm start."""
    why = deadline.cancelled or f"the MIP of {len(part.units)} units needs {need} to build, more than the time left"
    stats["model_not_built"] = why
    message = f"{why}: model not built" + ("; heuristic plan kept" if start is not None else "")
    return Result(None if start is None else part.placements(start), message=message, stats=stats)


def _result(model: Model, choices: Sequence[Choice], proven: bool, bound: float | None, message: str,
            stats: dict[str, object]) -> Result:
    """A part's Result in bytes; bounds only where the model's floor does not blur them."""
    part = model.part
    g = part.scale
    if not model.objective.optimizes:
        return Result(part.placements(choices), message=message, stats=stats)
    value = model.value(choices)  # the first objective (the only one unless in stages)
    b = value if proven else (None if bound is None else math.ceil(bound - 1e-6 - 1e-9 * abs(bound)))
    per_memory: dict[str, int] = {}
    objective_bound = lost_bound = None
    if b is not None and model.shift > 1:
        b, lost = model.split(b)  # the second holds given the first at its bound
        tw = model.objective.tier_weights(part.problem)
        lost_bound = lost * model.lost_unit + sum(u.gain * tw[u.memories[0]] for u in part.units if len(u.memories) == 1)
    if b is not None:
        floor_total = sum(model.weights[m] * model.floor[m] for m in model.peak)
        alone = [m for m in model.peak if model.weights[m] > 0]
        if len(alone) == 1 and (len(model.peak) == 1 or model.stages):
            m = alone[0]  # the first objective is this memory's peak (times its weight)
            if b > floor_total:  # above the floor, the model's peak is the part's peak there
                per_memory[m] = -(-b // model.weights[m]) * g
        elif model.factor is not None and all(model.floor[m] == part.lower[m] for m in model.peak):
            objective_bound = b * model.factor * g
    if proven and model.shift == 1 and LOST_STAGE not in model.stages and _trades_benefit(model.objective, part):
        proven, message = False, "the MIP minimizes the peaks only; the benefit kept in faster memories is not proven"
    return Result(part.placements(choices), proven_optimal=proven, bound=per_memory,
                  objective_bound=objective_bound, lost_bound=lost_bound, message=message, stats=stats)


def _choices(part: Part) -> bool:
    return any(len(u.memories) > 1 for u in part.units)


def _trades_benefit(objective: Objective, part: Part) -> bool:
    """Units choose between memories and the objective values the benefit kept in faster ones:
    the MIP, which minimizes the peaks, proves nothing about that."""
    return objective.counts_benefit and any(len(u.memories) > 1 for u in part.units)


def milp(problem: Problem, solver: str, deadline: Deadline, workers: int, seed: int,
         objective: Objective | str | None, progress: Callable[[dict], None] | None, warm_start: bool = True) -> Result:
    """Heuristic warm start, then one MIP per independent part in its share of the time."""
    objective = Objective.parse(objective, problem)
    if not problem.concurrent:  # the vector-clock model counts its own pairs
        check_size(problem, f"milp-{solver}")
    heuristics = deadline.part(min(1.0, 0.05 * deadline.left()))
    incumbent = best_heuristic(problem, heuristics, seed, objective) if warm_start else None
    if not objective.optimizes and incumbent is not None:
        return Result(incumbent, message="the heuristic plan fits the capacities; no MIP needed")
    if problem.concurrent:
        from optplan.solvers.clock_models import milp_clocks

        return milp_clocks(problem, solver, objective, deadline, max(1, int(workers)), seed, incumbent)
    workers = max(1, int(workers))
    runs: list[dict[str, object]] = []

    def one(part: Part, share: Deadline, report: object) -> Result:
        res = solve_part(part, solver, share, objective, incumbent, workers, seed)
        if "mip_status" in res.stats:
            runs.append(res.stats)
        return res

    result = solve_parts(problem, objective, deadline, one, progress)
    result.stats.update(solver=solver, heuristic_warm_start=incumbent is not None, mip_runs=runs)
    return result


@planner("milp-cbc", clocks=True)
def milp_cbc(problem: Problem, deadline: Deadline, workers: int = 1, seed: int = 0,
             objective: Objective | str | None = None, progress: Callable[[dict], None] | None = None,
             warm_start: bool = True) -> Result:
    """MILP with CBC (bundled with PuLP), warm-started from the best heuristic plan
    (``warm_start=False``: the MIP alone, e.g. to compare with CP-SAT)."""
    return milp(problem, "cbc", deadline, workers, seed, objective, progress, warm_start)


@planner("milp-highs", clocks=True)
def milp_highs(problem: Problem, deadline: Deadline, workers: int = 1, seed: int = 0,
               objective: Objective | str | None = None, progress: Callable[[dict], None] | None = None,
               warm_start: bool = True) -> Result:
    """MILP with HiGHS (needs the optional highspy), warm-started from the best heuristic plan
    (``warm_start=False``: the MIP alone)."""
    return milp(problem, "highs", deadline, workers, seed, objective, progress, warm_start)
