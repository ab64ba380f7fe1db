"""The exact CP-SAT engine: the model of a part, the solve that a signal stops, and its runner.

Per part (``optplan.parts``), in units of the part's grid: a root offset per unit (``offset = r +
m * k`` for the alignment modulus ``(m, r)``), one presence literal per allowed memory when the
unit may choose (exactly one is true), per memory a ``NoOverlap2D`` of (fixed time interval,
offset interval) rectangles of the units' footprint pieces, plus the same boxes as a cumulative
over time (the live-load argument, redundant but it feeds the bound). Relative placements are
inside units: every member is a fixed offset from its root and shares the root's memory literal.
Per memory a peak variable ``P >= offset + top`` bounded by the capacity and from below by the
lower bound; objective: minimize the weighted sum of peaks, or nothing under
``objective="feasible"``. Identical units are ordered by (memory, offset); hints are permuted to
agree.

Status is truthful: OPTIMAL / INFEASIBLE only on CP-SAT's proof; otherwise the best plan found
(or the warm start) is returned with the best proven bound. The planner ``cpsat`` is in
``optplan.solvers.planners``; the portfolio builds on ``PartModel`` and ``run`` directly.
"""

from __future__ import annotations

import atexit
import itertools
import math
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

import numpy as np

from optplan.core.cp_sat import cp_model
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.core.units import Unit
from optplan.parts import Choice, Part, identical_groups, order_choices
from optplan.registry import Result
from optplan.solvers.outcome import Outcome
from optplan.solvers.part_plans import part_peaks

_INT_LIMIT = 1 << 62  # CP-SAT objectives and domains must stay inside int64
_PACK_LIMIT = _INT_LIMIT  # above it, (lost benefit, weighted peaks) are minimized in two stages, not packed in one
# Beyond this many units in one part, CP-SAT 9.15 spends minutes in presolve / propagation of the
# NoOverlap2D without checking its time limit (measured: idealloc/S_1, 28,526 units, 191 s for a
# 60 s limit). Such parts get no full model; ``auto`` works on them by neighbourhood search.
FULL_MODEL_MAX_UNITS = 5000

# CP-SAT's deterministic time per deterministic second of a Deadline: CP-SAT's unit is far slower
# than a wall second here (counting it 1:1 made a 10 s deterministic limit take 65-100 s). At 0.1,
# one deterministic second took a median 1.43 CPU s (0.95-1.9) minimizing the peak of generated
# cut and perturbed instances, and 4-7 CPU s at their capacity where CP-SAT found no plan
# (experiments/calibrate_deterministic.py): 0.07 makes the first about a CPU second; the rest is
# what the wall-clock guard (``Deadline.wall_left``) is for.
DTIME_PER_SECOND = 0.07

Report = Callable[[dict[int, Choice] | None, int | None, int | None], None]  # (plan, value, bound) as found
Boxes = dict[str, tuple[list[cp_model.IntervalVar], list[cp_model.IntervalVar], list[int]]]  # per memory: x, y, heights


# Solves running on any thread (``solve``). A solve told to stop while the interpreter exits aborts
# the process ("terminate called without an active exception"): at exit each is stopped and waited
# for, at most EXIT_WAIT seconds (one stops within milliseconds of ``stop_search``).
_RUNNING: dict[int, cp_model.CpSolver] = {}
_RUNNING_CHANGED = threading.Condition()
EXIT_WAIT = 10.0


def solve(solver: cp_model.CpSolver, model: cp_model.CpModel, deadline: Deadline | None = None,
          callback: cp_model.CpSolverSolutionCallback | None = None) -> cp_model.CpSolverStatus:
    """``solver.solve``: stopped when ``deadline`` is cancelled or halted, and finished before the
    interpreter exits (every CP-SAT solve in optplan goes through here)."""
    with _RUNNING_CHANGED:
        _RUNNING[id(solver)] = solver
    try:
        with deadline.on_cancel(solver.stop_search) if deadline is not None else nullcontext():
            return solver.solve(model, callback)
    finally:
        with _RUNNING_CHANGED:
            del _RUNNING[id(solver)]
            _RUNNING_CHANGED.notify_all()


@atexit.register
def _stop_running() -> None:
    with _RUNNING_CHANGED:
        for solver in _RUNNING.values():
            solver.stop_search()
        _RUNNING_CHANGED.wait_for(lambda: not _RUNNING, EXIT_WAIT)


def charge(solver: cp_model.CpSolver, status: cp_model.CpSolverStatus, deadline: Deadline) -> float:
    """Charge a finished solve's deterministic seconds to ``deadline`` (returned), and report a
    deterministic solve that the wall-clock guard stopped before its budget (it may not repeat)."""
    spent = solver.deterministic_time / DTIME_PER_SECOND
    deadline.spend(spent)
    if (deadline.deterministic and deadline.cancelled is None and status not in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
            and solver.deterministic_time < 0.99 * solver.parameters.max_deterministic_time):
        deadline.hit_guard()
    return spent


def int_bound(x: float) -> int:
    """CP-SAT reports bounds as doubles: round down by more than their error, never up."""
    return math.ceil(x - max(1e-6, abs(x) * 1e-12))


@dataclass(frozen=True)
class Settings:
    """Solver options shared by every CP-SAT run of one planner call (``extra``: CP-SAT
    parameters by name, set last)."""

    workers: int = 2
    seed: int = 0
    log: bool = False
    extra: dict[str, object] = field(default_factory=dict)

    def apply(self, solver: cp_model.CpSolver, deadline: Deadline) -> None:
        p = solver.parameters
        # deterministic: one worker. Several interleave their subsolvers and check the deterministic
        # limit only between batches, overshooting it by up to a batch (minimalloc/D, limit 0.1: 0.25;
        # A: 0.14); one worker stops at it (0.1001), so a share given is a share spent.
        p.num_workers = 1 if deadline.deterministic else max(1, int(self.workers))
        p.random_seed = int(self.seed)
        p.log_search_progress = self.log
        p.catch_sigint_signal = False  # a signal cancels the Deadline, which stops this solve
        seconds = min(max(deadline.left(), 0.01), 1e9)
        if deadline.deterministic:
            # deterministic time is the planned stop (reproducible); the wall-clock guard a hard cap
            p.max_deterministic_time = seconds * DTIME_PER_SECOND
            p.max_time_in_seconds = min(max(deadline.wall_left(), 0.01), 1e9)
        else:
            p.max_time_in_seconds = seconds
        for k, v in self.extra.items():
            setattr(p, k, v)


class PartModel:
    """The CP-SAT model of a part, or of a subset of its units with the others fixed (LNS).

    ``active`` units get variables; ``fixed`` maps other unit indices to their choice and
    contributes constant rectangles. ``ceiling[m]`` caps memory m's peak (e.g. the incumbent's:
    only plans at least as good are of interest). With ``fixed_count`` False the peaks only
    measure the active units (LNS: lower the freed region even where fixed units reach the peak).
    ``floor[m]``: no byte of an active unit in memory m below it (LNS on a band of addresses: the
    fixed units below the band need not be in the model).
    """

    def __init__(self, part: Part, objective: Objective, active: Sequence[int] | None = None,
                 fixed: dict[int, Choice] | None = None, ceiling: dict[str, int] | None = None,
                 symmetry: bool = True, fixed_count: bool = True, floor: dict[str, int] | None = None) -> None:
        self.part = part
        self.objective = objective
        units = part.scaled
        self.active = list(range(len(units))) if active is None else list(active)
        self.fixed = dict(fixed or {})
        self.model = cp_model.CpModel()
        self.memories = [m for m in part.memories if any(m in units[i].memories for i in self.active)]
        self.room: dict[str, int] = {}  # per memory: no byte above it (the capacity, else all stacked)
        self.horizon: dict[str, int] = {}  # per memory: the peak's upper end (room, ceiling)
        self.peak: dict[str, cp_model.IntVar] = {}
        self._peaks(self._horizons(fixed_count, ceiling or {}))
        self.offset: dict[int, cp_model.IntVar] = {}
        self.lit: dict[int, dict[str, cp_model.IntVar | None]] = {}  # None: the unit's only memory
        self.ks: list[tuple[cp_model.IntVar, int, int, int, str | None]] = []  # k, unit, m, r, memory
        boxes: Boxes = {m: ([], [], []) for m in self.memories}
        obstacles = self._obstacles(self.memories)
        for i in self.active:
            self._unit(i, floor or {}, obstacles, boxes)
        for m, (xs, ys, hs) in boxes.items():
            if len(xs) > 1:
                self.model.add_no_overlap_2d(xs, ys)
                self.model.add_cumulative(xs, hs, self.peak[m])
        groups = identical_groups([units[i] for i in self.active]) if symmetry else []
        self.groups = [[self.active[j] for j in g] for g in groups]  # unit indices of the part
        for g in self.groups:
            self._order(g)
        self.weights: dict[str, int] = {}
        self.weight_factor: int | None = None  # model objective * factor * scale = weighted bytes
        self.shift, self.lost_unit, self.lost_const = 1, 1, 0  # see _lost and split
        # (first, second) when first * shift + second would overflow: minimized one after the other
        self.stages: tuple[cp_model.LinearExprT, cp_model.LinearExprT] | None = None
        self.first: int | None = None  # the first stage's proven optimum, once fixed
        if objective.optimizes:
            self._objective()

    def _horizons(self, fixed_count: bool, ceiling: dict[str, int]) -> dict[str, int]:
        """Sets ``room`` and ``horizon`` per memory (the capacity, else everything stacked above
        the units that cannot move, capped by ``ceiling``); returns the peak floor those units set."""
        units, mems = self.part.scaled, self.memories
        fixed_top = {m: 0 for m in mems}  # peak floor from units that cannot move
        reach = {m: 0 for m in mems}  # highest byte (members without bytes too) of those units
        for i, (m, fixed_o) in self.fixed.items():
            if m in fixed_top:
                if fixed_count:
                    fixed_top[m] = max(fixed_top[m], fixed_o + units[i].top)
                reach[m] = max(reach[m], fixed_o + units[i].high)
        for i in self.active:
            u = units[i]
            if u.fixed_offset is not None:
                for m in u.memories:
                    if m in reach:
                        reach[m] = max(reach[m], u.fixed_offset + u.high)
                        if len(u.memories) == 1:
                            fixed_top[m] = max(fixed_top[m], u.fixed_offset + u.top)
        for m in mems:
            stack = reach[m] + sum(units[i].height + units[i].modulus[m][0] - 1 - min(units[i].low, 0)
                                   for i in self.active if m in units[i].memories and units[i].fixed_offset is None)
            cap = self.part.capacity[m]
            self.room[m] = stack if cap is None else cap
            self.horizon[m] = min(self.room[m], stack, ceiling.get(m, stack))
        return fixed_top

    def _peaks(self, fixed_top: dict[str, int]) -> None:
        """A peak variable per memory, from its lower bound (or the fixed units' top) to its horizon."""
        for m in self.memories:
            lo = max(self.part.lower.get(m, 0), fixed_top[m])
            self.peak[m] = self.model.new_int_var(min(lo, self.horizon[m]), max(self.horizon[m], 0), f"peak[{m}]")
            if lo > self.horizon[m]:
                self.model.add_bool_or([])  # no plan below the ceiling: say so instead of crashing

    def _unit(self, i: int, floor: dict[str, int], obstacles: dict[str, np.ndarray], boxes: Boxes) -> None:
        """Unit i's offset, memory literals and alignment, its rows per memory, and its boxes."""
        model, u = self.model, self.part.scaled[i]
        options = [m for m in u.memories if m in self.memories]
        cap_hi = max(self.room[m] - u.high for m in options)
        lo = -u.low
        if len(options) == 1 and options[0] in floor:
            lo = max(lo, floor[options[0]] - u.low)
        if u.fixed_offset is not None:
            lo = cap_hi = u.fixed_offset
        o = model.new_int_var(lo, max(lo, cap_hi), f"o{i}")
        self.offset[i] = o
        lits: dict[str, cp_model.IntVar | None] = {options[0]: None}
        if len(options) > 1:
            chosen = {m: model.new_bool_var(f"x{i}{m}") for m in options}
            model.add_exactly_one(chosen.values())
            lits = dict(chosen)
        self.lit[i] = lits
        moduli = {u.modulus[m] for m in options}
        if len(moduli) == 1:
            self._align(i, *next(iter(moduli)), None, None, lo, cap_hi)
        for m, x in lits.items():
            if len(moduli) > 1:
                self._align(i, *u.modulus[m], m, x, lo, cap_hi)
            enf: list[cp_model.IntVar] = [] if x is None else [x]
            if m in obstacles:
                model.add_linear_expression_in_domain(o, self._clear(u, obstacles[m], lo, max(lo, cap_hi))).only_enforce_if(enf)
            model.add(o + u.high <= self.room[m]).only_enforce_if(enf)
            if m in floor and len(options) > 1:
                model.add(o + u.low >= floor[m]).only_enforce_if(enf)
            model.add(self.peak[m] >= o + u.top).only_enforce_if(enf)
            xs, ys, hs = boxes[m]
            for a, b, y0, y1 in u.pieces:
                if x is None:
                    xs.append(model.new_fixed_size_interval_var(a, b - a, ""))
                    ys.append(model.new_fixed_size_interval_var(o + y0, y1 - y0, ""))
                else:
                    xs.append(model.new_optional_fixed_size_interval_var(a, b - a, x, ""))
                    ys.append(model.new_optional_fixed_size_interval_var(o + y0, y1 - y0, x, ""))
                hs.append(y1 - y0)

    def _obstacles(self, mems: list[str]) -> dict[str, np.ndarray]:
        """The fixed units' pieces per memory, rows (t0, t1, y0, y1) at their offsets. They enter
        the model as holes in the active units' offset domains (``_clear``), not as fixed boxes:
        with 1,000 fixed boxes (an LNS neighbourhood of idealloc resnet50) CP-SAT spent 2-48 s
        loading the NoOverlap2D, whatever its time limit of 1 s."""
        units = self.part.scaled
        rows: dict[str, list[tuple[int, int, int, int]]] = {}
        for i, (m, off) in self.fixed.items():
            if m in mems:
                rows.setdefault(m, []).extend((a, b, off + y0, off + y1) for a, b, y0, y1 in units[i].pieces)
        return {m: np.array(r, np.int64) for m, r in rows.items()}  # grid units: inside int64 (``_INT_LIMIT``)

    @staticmethod
    def _clear(u: Unit, obstacles: np.ndarray, lo: int, hi: int) -> cp_model.Domain:
        """Offsets in ``[lo, hi]`` at which no piece of ``u`` meets an obstacle: a piece (a, b,
        y0, y1) meets (t0, t1, z0, z1) when the steps overlap and z0 - y1 < offset < z1 - y0."""
        holes: list[list[int]] = []
        for a, b, y0, y1 in u.pieces:
            hit = obstacles[(obstacles[:, 0] < b) & (a < obstacles[:, 1])]
            holes.extend([int(z0) - y1 + 1, int(z1) - y0 - 1] for z0, z1 in hit[:, 2:4])
        free = cp_model.Domain(lo, hi)
        if holes:
            free = free.intersection_with(cp_model.Domain.from_intervals(holes).complement())
        return free

    def _align(self, i: int, m: int, r: int, memory: str | None, enforce, lo: int, hi: int) -> None:
        """offset = r + m * k (only when ``enforce`` holds, if given)."""
        if m <= 1:
            return
        k = self.model.new_int_var(0, max(0, (max(hi, lo) - r) // m), "")
        self.ks.append((k, i, m, r, memory))
        c = self.model.add(self.offset[i] == r + m * k)
        if enforce is not None:
            c.only_enforce_if(enforce)

    def _order(self, g: list[int]) -> None:
        """Identical units in increasing (memory rank, offset): one representative per orbit."""
        u = self.part.scaled[g[0]]
        opts = [m for m in u.memories if m in self.memories]
        big = max(self.room[m] for m in opts) + 1
        # one shared piece: stacked at least its height apart (not the unit's: zero-size members
        # and gap windows make that larger); several pieces: distinct offsets
        gap = u.pieces[0][3] - u.pieces[0][2] if len(u.pieces) == 1 else 1

        def key(i: int):
            lits = self.lit[i]
            if len(lits) == 1:
                return self.offset[i]
            return self.offset[i] + sum(r * big * x for r, x in enumerate(lits.values()) if x is not None)

        for i, j in itertools.pairwise(g):
            if len(self.lit[i]) == 1:
                self.model.add(self.offset[i] + gap <= self.offset[j])
            else:
                self.model.add(key(i) + 1 <= key(j))

    def _objective(self) -> None:
        w = {m: self.objective.weights(self.part.problem)[m] for m in self.memories}
        g = math.gcd(*w.values()) or 1
        ws = {m: v // g for m, v in w.items()}
        if sum(ws[m] * self.horizon[m] for m in ws) < _INT_LIMIT:
            self.weights, self.weight_factor = ws, g
        elif all(mem.weight is None for mem in self.part.problem.memories):
            # default weights are lexicographic (slowest memory first); keep the order with
            # weights that fit: each exceeds the largest weighted sum of the faster memories
            acc, ws = 0, {}
            for m in self.memories:  # fastest first, as in objective_weights; weight 0 stays 0
                ws[m] = acc + 1 if w[m] else 0
                acc += ws[m] * self.horizon[m]
            if acc >= _INT_LIMIT:
                raise OverflowError("the weighted objective does not fit CP-SAT's 64-bit integers")
            self.weights, self.weight_factor = ws, None
        else:
            raise OverflowError("the memory weights times the peaks do not fit CP-SAT's 64-bit integers")
        weighted = sum(self.weights[m] * self.peak[m] for m in self.memories)
        lost, top = self._lost()
        if top == 0:
            self.model.minimize(weighted)
            return
        w_top = sum(self.weights[m] * self.horizon[m] for m in self.memories) + 1
        self.shift = max(top + 1 if not self.objective.benefit_first else w_top, 2)  # 1 means "no benefit term"
        first, second = (lost, weighted) if self.objective.benefit_first else (weighted, lost)
        if (w_top if not self.objective.benefit_first else top + 1) * self.shift >= _PACK_LIMIT:
            # too large to pack into one objective: the first quantity, then the second with the
            # first fixed at its optimum (``run``); values and bounds still read first * shift + second
            self.stages = (first, second)
            self.model.minimize(first)
            return
        self.model.minimize(cp_model.LinearExpr.weighted_sum([first, second], [self.shift, 1]))

    def fix_first(self, value: int, hint: dict[int, Choice]) -> None:
        """Staged objective: the first quantity proven optimal at ``value``; minimize the second
        among plans that reach it (warm-started from ``hint``)."""
        assert self.stages is not None
        first, second = self.stages
        self.model.add(first == value)
        self.model.minimize(second)
        self.model.clear_hints()
        self.hint(hint)
        self.first = value

    def packed(self, source: cp_model.CpSolver | cp_model.CpSolverSolutionCallback | None,
               bound: float | None) -> tuple[int | None, int | None]:
        """(value of the solution in ``source``, bound) in model units, first * shift + second
        when the objective is staged (the second's bound is 0 until the first is fixed)."""
        b = None if bound is None else int_bound(bound)
        if self.stages is None:
            return (None if source is None else round(source.objective_value)), b
        value = None if source is None else int(source.value(self.stages[0])) * self.shift + int(source.value(self.stages[1]))
        if b is not None:
            b = b * self.shift if self.first is None else self.first * self.shift + b
        return value, b

    def _lost(self) -> tuple[cp_model.LinearExprT, int]:
        """The benefit the active units with a choice lose to slower memories (in units of
        ``lost_unit``) and its largest value; the fixed part of it goes to ``lost_const``."""
        problem = self.part.problem
        self.shift, self.lost_unit, self.lost_const = 1, 1, 0
        if not self.objective.counts_benefit:
            return 0, 0
        tw = self.objective.tier_weights(problem)
        gain = {i: sum(problem.buffer(b).gain for b, _ in self.part.units[i].members) for i in self.active}
        terms = [(gain[i] * tw[m], x) for i in self.active for m, x in self.lit[i].items() if x is not None]
        for i in self.active:
            if len(self.lit[i]) == 1:
                self.lost_const += gain[i] * tw[next(iter(self.lit[i]))]
        self.lost_const += sum(gain_i * tw[m] for i, (m, _) in self.fixed.items()
                               for gain_i in [sum(problem.buffer(b).gain for b, _ in self.part.units[i].members)])
        terms = [(c, x) for c, x in terms if c]
        if not terms:
            return 0, 0
        g = math.gcd(*(c for c, _ in terms))
        self.lost_unit = g
        top = sum(max(gain[i] * tw[m] for m in self.lit[i]) // g for i in self.active if len(self.lit[i]) > 1)
        return sum((c // g) * x for c, x in terms), top

    def split(self, value: int) -> tuple[int, int]:
        """(weighted peaks, lost benefit) in model units from a model objective value or bound."""
        if self.shift == 1:
            return value, 0
        return self.objective.unpack(value, self.shift)

    def hint(self, choices: dict[int, Choice]) -> None:
        """Warm start from one choice per active unit (reordered to respect symmetry breaking)."""
        units = self.part.scaled
        full = [choices.get(i, (units[i].memories[0], 0)) for i in range(len(units))]
        full = order_choices(units, full, self.groups)
        peak = {m: self.peak[m].proto.domain[0] for m in self.memories}
        for i in self.active:
            m, o = full[i]
            u = units[i]
            self.model.add_hint(self.offset[i], o)
            for mm, x in self.lit[i].items():
                if x is not None:
                    self.model.add_hint(x, mm == m)
            if m in peak:
                peak[m] = max(peak[m], o + u.top)
        for m in self.memories:
            self.model.add_hint(self.peak[m], min(peak[m], self.horizon[m]))
        for k, i, modulus, r, memory in self.ks:
            mem, o = full[i]
            if memory is None or memory == mem:
                self.model.add_hint(k, max((o - r) // modulus, 0))

    def read(self, solver: cp_model.CpSolver | cp_model.CpSolverSolutionCallback) -> dict[int, Choice]:
        out = {}
        for i in self.active:
            o = int(solver.value(self.offset[i]))
            lits = self.lit[i]
            if len(lits) == 1:
                out[i] = (next(iter(lits)), o)
            else:
                out[i] = (next(m for m, x in lits.items() if x is not None and solver.boolean_value(x)), o)
        return out



class _Watch(cp_model.CpSolverSolutionCallback):
    """Reports improvements and stops the search when it stalls."""

    def __init__(self, pm: PartModel, report: Report | None) -> None:
        super().__init__()
        self.pm, self.report = pm, report
        self.last = time.perf_counter()
        self.best: dict[int, Choice] | None = None
        self.lock = threading.Lock()

    def on_solution_callback(self) -> None:
        with self.lock:
            self.last = time.perf_counter()
            self.best = self.pm.read(self)
            if self.report:
                value, bound = self.pm.packed(self, self.best_objective_bound) if self.pm.objective.optimizes else (None, None)
                self.report(self.best, value, bound)

    def on_bound(self, bound: float) -> None:
        with self.lock:
            self.last = time.perf_counter()
            if self.report:
                self.report(None, None, self.pm.packed(None, bound)[1])


def run(pm: PartModel, settings: Settings, deadline: Deadline, report: Report | None = None,
        stall: float | None = None) -> Outcome[list[Choice]]:
    """Solve ``pm`` until ``deadline`` (stopping early after ``stall`` seconds without progress in
    either the plan or the bound); its deterministic time is charged to a deterministic deadline.
    A staged objective (``PartModel.stages``) is solved twice: once its first quantity is proven,
    the second with the first fixed, in what is left of the deadline."""
    out = _run_once(pm, settings, deadline, report, stall)
    if pm.stages is None or not out.optimal or out.solution is None or out.value is None or deadline.expired():
        return out
    first = out.value // pm.shift
    pm.fix_first(first, dict(enumerate(out.solution)))
    second = _run_once(pm, settings, deadline, report, stall)
    second.seconds += out.seconds
    second.dtime += out.dtime
    if second.solution is None:  # nothing better in time: the first stage's plan, its proof on the first quantity
        return replace(second, solution=out.solution, value=out.value, infeasible=False,
                       bound=first * pm.shift, optimal=False)
    return second


def _run_once(pm: PartModel, settings: Settings, deadline: Deadline, report: Report | None,
              stall: float | None) -> Outcome[list[Choice]]:
    t0 = time.perf_counter()
    solver = cp_model.CpSolver()
    settings.apply(solver, deadline)
    watch = _Watch(pm, report)
    if pm.objective.optimizes:
        solver.best_bound_callback = watch.on_bound
    stop = threading.Event()
    if stall is not None and not deadline.deterministic:
        def guard() -> None:
            while not stop.wait(0.2):
                if time.perf_counter() - watch.last > stall:
                    solver.stop_search()
                    return
        threading.Thread(target=guard, daemon=True).start()
    try:
        status = solve(solver, pm.model, deadline, watch)
    finally:
        stop.set()
    out: Outcome[list[Choice]] = Outcome(None, status=solver.status_name(status), seconds=time.perf_counter() - t0,
                                         dtime=charge(solver, status, deadline))
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        out.solution = [c for _, c in sorted(pm.read(solver).items())]
        if pm.objective.optimizes:
            out.value, out.bound = pm.packed(solver, solver.best_objective_bound)
        out.optimal = status == cp_model.OPTIMAL
    elif status == cp_model.INFEASIBLE:
        out.infeasible = True
    elif pm.objective.optimizes:
        out.bound = pm.packed(None, solver.best_objective_bound)[1]
    return out


def part_result(part: Part, pm: PartModel | None, choices: Sequence[Choice] | None, optimal: bool,
                infeasible: bool, bound: int | None, message: str = "", stats: dict | None = None) -> Result:
    """A part's Result in bytes, from a plan in grid units, whether it is proven optimal for the
    part, and the proven bound on ``pm``'s objective (if any)."""
    stats = dict(stats or {})
    if pm is not None and not pm.objective.optimizes:
        optimal = False  # a feasibility model proves a plan exists, not that it is the best
    if choices is None:
        return Result(None, proven_infeasible=infeasible, message=message, stats=stats)
    placements = part.placements(choices)
    peak = part_peaks(part, choices)
    per_memory: dict[str, int] = {}
    objective_bound = lost_bound = None
    if pm is not None and pm.objective.optimizes and bound is not None:
        weighted, lost = pm.split(bound)  # the second one holds given the first at its bound
        if pm.shift > 1:
            lost_bound = lost * pm.lost_unit + pm.lost_const
        unconditional = pm.shift == 1 or not pm.objective.benefit_first
        if len(pm.memories) == 1 and pm.weights[pm.memories[0]] > 0 and unconditional:
            m = pm.memories[0]
            per_memory[m] = -(-weighted // pm.weights[m]) * part.scale
        if pm.weight_factor is not None:
            objective_bound = weighted * pm.weight_factor * part.scale
    if optimal and len(part.memories) == 1:
        m = part.memories[0]
        per_memory[m] = peak[m] * part.scale  # its optimum bounds the whole memory's peak
    return Result(placements, proven_optimal=optimal, bound=per_memory, objective_bound=objective_bound,
                  lost_bound=lost_bound, message=message, stats=stats)
