"""The MILP of a part, as PuLP models it for CBC and HiGHS (``milp_runners``) or for export
(``optplan.formats.lp_io``), and the way back from a solver's values to a plan.

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
optimality is only claimed when it is no worse than the solver's proven optimum.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# OR-Tools and highspy ship different builds of libhighs.so.1 and cannot share a process; PuLP
# imports highspy when it is imported. Loading OR-Tools first makes that import fail quietly
# inside PuLP (its HiGHS API is then unavailable); HiGHS runs in a child process instead.
import numpy as np

import optplan.core.cp_sat  # noqa: F401  (OR-Tools, without pandas: must precede ``import pulp``)

# isort: split
import pulp

from optplan.core.deadline import Deadline
from optplan.core.errors import OptplanError, Refused
from optplan.core.load import overlapping_pairs
from optplan.core.objective import Objective
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.units import Unit
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
from optplan.solvers.part_plans import part_peaks

LOST_STAGE = "(lost benefit)"  # the stage after the peaks' under min-peak: the tie-break
# Model size, measured on minimalloc A, C, D (4.6k-12.5k conflicting pairs, 2-core machine under load):
# PuLP's model took 1.6-2.3 kB of memory and 0.43-0.52 ms to build per pair of units alive together.
BYTES_PER_PAIR = 2500
BUILD_SECONDS_PER_PAIR = 5e-4
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

    @property
    def step(self) -> int:
        """The model objective's values are multiples of it (a gap below it is optimal)."""
        return math.gcd(*self.weights.values()) or 1

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


def unit_pairs(units: Sequence) -> int:
    """Pairs of units alive at a common time: the MIP's disjunctions (tens of millions on idealloc/S_1)."""
    return overlapping_pairs(np.array([u.start for u in units], np.int64), np.array([u.end for u in units], np.int64))


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
    pairs = unit_pairs(problem.units)
    need, have = pairs * BYTES_PER_PAIR, available_memory()
    if have is not None and need > have:
        raise Refused(f"planner {name!r}: the MIP would have about {pairs:,} disjunctive pairs and need about "
                           f"{need / 2**30:.1f} GiB of memory to build, {have / 2**30:.1f} GiB available; "
                           "use planner 'auto' or 'cpsat'")
    return pairs



def build_model(part: Part, objective: Objective, incumbent: Sequence[Choice] | None = None,
                floor: dict[str, int] | None = None, symmetry: bool = True, deadline: Deadline | None = None) -> Model:
    """The MILP of ``part``; ``incumbent`` (grid units) bounds the horizons and is the warm start.

    ``floor[m]`` (grid units, default the part's lower bound) is a peak the whole problem cannot
    go below anyway, so nothing is gained below it. Raises NoTime when ``deadline`` expires first.
    """
    units = part.scaled
    mems = list(part.memories)
    floor = {m: max(part.lower[m], (floor or {}).get(m, 0)) for m in mems}
    horizon = _stacked(part)  # no optimal (or, for "feasible", no needed) plan goes above it
    factor: int | None
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
    # a peak no objective (or stage) counts gets no rows: the room rows keep it within the horizon,
    # and its free rows led CBC's preprocessing to cut off the optimum (tests/test_milp.py)
    counted = {m for m in mems if weights[m] > 0 or m in stages}
    rows = _Rows(part, horizon, floor, counted)
    for i, u in enumerate(units):
        rows.unit(i, u)
    groups = identical_groups(units) if symmetry else []
    ordered = {pair for g in groups for pair in itertools.pairwise(g)}
    for n_pair, (i, k) in enumerate(conflict_pairs(units).tolist()):
        if deadline is not None and n_pair % 256 == 0 and deadline.expired():
            raise NoTime
        rows.disjunctions(i, k, ordered)
    for g in groups:
        rows.same_order_of_memories(g)
    model = Model(part, rows.lp, objective, rows.offset, rows.assign, rows.ks, rows.same, rows.order, rows.peak,
                  floor, weights, factor, stages, groups)
    _set_objective(model, horizon)
    if incumbent is not None:
        warm_start(model, incumbent)
    return model


def _stacked(part: Part) -> dict[str, int]:
    """Per memory: everything stacked above the units at fixed offsets, or its capacity if lower."""
    units = part.scaled
    horizon = {}
    for m in part.memories:
        fixed_top = max((u.fixed_offset + u.top for u in units if u.fixed_offset is not None and m in u.memories),
                        default=0)
        stack = fixed_top + sum(u.height + u.modulus[m][0] - 1 for u in units if u.fixed_offset is None and m in u.memories)
        cap = part.capacity[m]
        horizon[m] = stack if cap is None else min(cap, stack)
    return horizon


class _Rows:
    """The variables and rows of ``build_model`` as they are added: a unit's, then a pair's."""

    def __init__(self, part: Part, horizon: dict[str, int], floor: dict[str, int], counted: set[str]) -> None:
        self.part, self.horizon, self.counted = part, horizon, counted
        self.units = part.scaled
        self.lp = pulp.LpProblem("optplan", pulp.LpMinimize)
        self.jx = {m: _name(part.problem, m) for m in part.memories}
        self.peak = {m: self.lp.add_variable(f"peak_{self.jx[m]}", floor[m], horizon[m]) for m in part.memories}
        self.offset: list[pulp.LpVariable] = []
        self.assign: list[dict[str, pulp.LpVariable]] = []
        self.ks: list[dict[str, pulp.LpVariable]] = []
        self.lo: list[int] = []
        self.hi: dict[tuple[int, str], int] = {}  # highest root offset of unit i in memory m
        self.same: dict[tuple[int, int], pulp.LpVariable] = {}
        self.order: list[tuple[int, int, int, int, pulp.LpVariable | None]] = []

    def unit(self, i: int, u: Unit) -> None:
        """Unit i's offset, memory binaries, alignment, room and top rows."""
        lp, jx, hi = self.lp, self.jx, self.hi
        lo_i = -u.low if u.fixed_offset is None else u.fixed_offset
        for m in u.memories:
            room = self.horizon[m] - u.top
            cap = self.part.capacity[m]
            if cap is not None:
                room = min(room, cap - u.high)
            hi[i, m] = room if u.fixed_offset is None else min(room, u.fixed_offset)  # < lo: cannot go to m
        hi_i = max(lo_i, max(hi[i, m] for m in u.memories))
        self.lo.append(lo_i)
        o = lp.add_variable(offset_name(i), lo_i, hi_i)
        self.offset.append(o)
        x = {}
        if len(u.memories) > 1:
            x = {m: lp.add_variable(assign_name(i, jx[m]), 0, 1, pulp.LpBinary) for m in u.memories}
            lp += pulp.lpSum(x.values()) == 1, f"one_memory_{i}"
        self.assign.append(x)
        X = {m: x.get(m, 1) for m in u.memories}
        if u.fixed_offset is not None:
            lp += o == u.fixed_offset, f"fixed_{i}"
        self.ks.append(self._alignment(i, u, o, x, hi_i))
        for m in u.memories:
            if hi[i, m] < hi_i:  # (for a unit with one memory: a row that says it cannot fit)
                lp += o <= hi[i, m] + (hi_i - hi[i, m]) * (1 - X[m]), f"room_{i}_{jx[m]}"
            if u.pieces and m in self.counted:
                lp += self.peak[m] >= o + u.top - (hi_i + u.top) * (1 - X[m]), f"top_{i}_{jx[m]}"

    def _alignment(self, i: int, u: Unit, o: pulp.LpVariable, x: dict[str, pulp.LpVariable],
                   hi_i: int) -> dict[str, pulp.LpVariable]:
        """``o = r + mod * k``: one ``k`` ("" key) when every memory asks the same, else one per memory."""
        lp, jx = self.lp, self.jx
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
        return k

    def disjunctions(self, i: int, k2: int, ordered: set[tuple[int, int]]) -> None:
        """Units i and k2 (alive together): per pair of their pieces that meet in time, i below k2
        or k2 below i, relaxed when they are in different memories; identical units in order."""
        lp, hi, lo, offset = self.lp, self.hi, self.lo, self.offset
        u, v = self.units[i], self.units[k2]
        common = [m for m in u.memories if m in v.memories]
        s = self._same_memory(i, k2, common)
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
                    self.order.append((i, p, k2, q, None))
                    continue
                z = lp.add_variable(f"z_{tag}", 0, 1, pulp.LpBinary)
                lp += offset[i] + below <= offset[k2] + m1 * (1 - z) + relax1, f"below_{tag}"
                lp += offset[k2] + above <= offset[i] + m2 * z + relax2, f"above_{tag}"
                self.order.append((i, p, k2, q, z))

    def _same_memory(self, i: int, k2: int, common: list[str]) -> Any:
        """None when units i and k2 are always in the same memory, else a 0-1 expression that is 1
        when they are (an assign literal, or a new variable ``s``)."""
        u, v = self.units[i], self.units[k2]
        Xu = {m: self.assign[i].get(m, 1) for m in u.memories}
        Xv = {m: self.assign[k2].get(m, 1) for m in v.memories}
        if len(u.memories) == 1 and len(v.memories) == 1:
            return None
        if len(common) == 1 and len(u.memories) == 1:
            return Xv[common[0]]
        if len(common) == 1 and len(v.memories) == 1:
            return Xu[common[0]]
        s = self.same[i, k2] = self.lp.add_variable(f"s_{i}_{k2}", 0, 1)
        for m in common:
            self.lp += s >= Xu[m] + Xv[m] - 1, f"same_{i}_{k2}_{self.jx[m]}"
        return s

    def same_order_of_memories(self, g: list[int]) -> None:
        """Identical units choosing memories: in increasing memory rank (one per orbit)."""
        u = self.units[g[0]]
        if len(u.memories) > 1:
            rank = {m: r for r, m in enumerate(u.memories)}
            for a, b in itertools.pairwise(g):
                self.lp += (pulp.lpSum(rank[m] * self.assign[a][m] for m in u.memories)
                            <= pulp.lpSum(rank[m] * self.assign[b][m] for m in u.memories)), f"sym_memory_{a}_{b}"


def _set_objective(model: Model, horizon: dict[str, int]) -> None:
    """The weighted peaks, with the lost benefit packed in when it fits doubles exactly, or as a
    last stage (min-peak's tie-break); nothing under ``feasible``."""
    lp, objective, weights, mems = model.lp, model.objective, model.weights, list(model.part.memories)
    if not objective.optimizes:
        lp += pulp.LpAffineExpression()
        return
    weighted = pulp.lpSum(weights[m] * model.peak[m] for m in mems)
    lost, top = model.lost_terms()
    w_top = sum(weights[m] * horizon[m] for m in mems) + 1
    shift = max(w_top if objective.benefit_first else top + 1, 2)  # 1 would mean "no benefit term"
    if top and not model.stages and (top + 1) * w_top < EXACT_LIMIT:
        model.shift = shift
        lp += shift * lost + weighted if objective.benefit_first else shift * weighted + lost
    else:
        lp += weighted
        if top and model.stages and not objective.benefit_first:  # the tie-break: one more stage
            model.stages, model.lost_expr = model.stages + (LOST_STAGE,), lost


def _choices(part: Part) -> bool:
    return any(len(u.memories) > 1 for u in part.units)


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
            xs: dict[str, float] = {}
            for mm in u.memories:
                x = value(assign_name(i, names.index(mm)))
                if x is None:
                    return None
                xs[mm] = x
            m = max(u.memories, key=xs.__getitem__)
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


def best_heuristic(problem: Problem, deadline: Deadline, seed: int = 0,
                   objective: Objective | None = None) -> Mapping[str, Placement] | None:
    """The best plan of the constructive heuristics under ``objective`` (compiled: about a second
    on 60k buffers), or None."""
    plans, _errors = run_heuristics(problem, deadline, seed, improve=False, objective=objective)  # a failing heuristic is simply not a candidate
    # ties (e.g. a weight-0 memory scores every plan 0) go to the lowest peaks: a plan stacked
    # higher than the model's horizons (naive's) cannot be its warm start
    found = [(p.objective_value, sum(p.peak.values()), p.placements) for p in plans
             if p.found and p.objective_value is not None]
    return min(found, key=lambda f: f[:2])[2] if found else None

