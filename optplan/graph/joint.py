"""The order, the reuses and the offsets in one CP-SAT model, for small one-memory graphs
(OLLA, Steiner et al. 2022, and MODeL solve order and addresses together as one integer program;
this is the same idea in CP-SAT).

Variables: each op's step (all different, after its predecessors); each tensor's offset (aligned,
or fixed) and, for one read, the step of its last reader (the max of its readers' steps); one
literal per declared reuse. Two tensors that can be live at one step keep apart in time
(one ends before the other starts) or in bytes, unless a reuse taken puts the output in its input's
bytes (same offset, and the op is the input's last reader). Pairs that every order keeps apart in
time are left out, pairs every order makes meet need only the bytes. A cumulative over the
tensors' lifetimes (an input whose reuse is taken counted up to the step before, so it is a
relaxation) feeds the bound. Objective: the peak.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optplan.core.cp_sat import cp_model
from optplan.core.deadline import Deadline
from optplan.graph.loads import Relations
from optplan.graph.model import Graph
from optplan.solvers import cpsat


@dataclass(frozen=True)
class JointResult:
    order: list[int] | None  # op indices; None: no plan found
    reuses: list[tuple[int, int, int]]  # (op, output, input) taken
    offsets: list[int]
    peak: int | None
    bound: int  # proven lower bound on the peak over every order and reuse choice
    optimal: bool


def fits(graph: Graph, max_ops: int, max_tensors: int) -> bool:
    """Small enough for the model, with one memory (the model knows no memory choice)."""
    return len(graph.memories) == 1 and len(graph.ops) <= max_ops and sum(t.size > 0 for t in graph.tensors) <= max_tensors


class JointModel:
    """The CP-SAT model of a graph (see the module docstring); ``upper``: the peak to beat or meet."""

    def __init__(self, graph: Graph, rel: Relations, upper: int, lower: int) -> None:
        st = graph.structure
        mem = graph.memories[0]
        self.graph, self.m = graph, cp_model.CpModel()
        n, m = st.ops, self.m
        steps = st.steps
        self.pos = [m.new_int_var(0, max(n - 1, 0), f"pos{k}") for k in range(n)]
        if n > 1:
            m.add_all_different(self.pos)
        for k in range(n):
            for p in st.preds[k]:
                m.add(self.pos[p] < self.pos[k])
        self.peak = m.new_int_var(min(lower, upper), upper, "peak")
        if mem.capacity is not None:
            m.add(self.peak <= mem.capacity)
        self.start: list = []
        self.end: list = []
        self.off: list = []
        self.q: list[cp_model.IntVar | None] = []
        for i, t in enumerate(graph.tensors):
            p = st.producer[i]
            self.start.append(0 if p < 0 else self.pos[p])
            cons = st.consumers[i]
            if st.output[i]:
                self.end.append(steps)
            elif cons:
                last = m.new_int_var(0, max(n - 1, 0), f"last{i}")
                m.add_max_equality(last, [self.pos[c] for c in cons])
                self.end.append(last + 1)
            else:
                self.end.append(self.start[-1] + 1)
            self.off.append(self._offset(i, math.lcm(t.alignment, mem.alignment), upper))
        self.reuse = self._reuses()
        self._pairs(rel)
        self._cumulative()
        m.minimize(self.peak)

    def _offset(self, i: int, align: int, upper: int) -> cp_model.LinearExprT:
        t = self.graph.tensors[i]
        q = None
        if t.fixed_offset is not None:
            off: cp_model.LinearExprT = t.fixed_offset
        else:
            q = self.m.new_int_var(0, max((upper - t.size) // align, 0), f"q{i}")
            off = q * align
        self.q.append(q)
        if t.size > 0:
            self.m.add(off + t.size <= self.peak)
        return off

    def _reuses(self) -> dict[tuple[int, int], cp_model.IntVar]:
        """A literal per declared reuse, keyed (output, input): taken, the output sits at the
        input's offset and its op runs after every other reader of the input."""
        st, m = self.graph.structure, self.m
        out: dict[tuple[int, int], cp_model.IntVar] = {}
        into: dict[int, list] = {}
        for k, pairs in enumerate(st.reuse):
            for y, x in pairs:
                b = m.new_bool_var(f"reuse{y}_{x}")
                m.add(self.off[y] == self.off[x]).only_enforce_if(b)
                for c in st.consumers[x]:
                    if c != k:
                        m.add(self.pos[c] < self.pos[k]).only_enforce_if(b)
                out[y, x] = b
                into.setdefault(x, []).append(b)
        for lits in into.values():
            m.add_at_most_one(lits)
        return out

    def _pairs(self, rel: Relations) -> None:
        """Two tensors that may be live at one step: apart in time or in bytes (or reused)."""
        st, m = self.graph.structure, self.m
        live = [i for i, s in enumerate(st.size) if s > 0]
        for a_i, a in enumerate(live):
            for b in live[a_i + 1:]:
                if _apart(st, rel, a, b) or _apart(st, rel, b, a):
                    continue
                lits = [m.new_bool_var(""), m.new_bool_var("")]
                m.add(self.off[a] + st.size[a] <= self.off[b]).only_enforce_if(lits[0])
                m.add(self.off[b] + st.size[b] <= self.off[a]).only_enforce_if(lits[1])
                for x, y in ((a, b), (b, a)):
                    if st.producer[y] >= 0 and not _meet(st, rel, x, y):
                        c = m.new_bool_var("")
                        m.add(self.end[x] <= self.start[y]).only_enforce_if(c)
                        lits.append(c)
                    if (y, x) in self.reuse:
                        lits.append(self.reuse[y, x])
                m.add_bool_or(lits)

    def _cumulative(self) -> None:
        st, m = self.graph.structure, self.m
        intervals, demands = [], []
        for i, s in enumerate(st.size):
            if s == 0:
                continue
            end = m.new_int_var(0, st.steps, "")
            m.add(end == self.end[i] - sum(b for (y, x), b in self.reuse.items() if x == i))
            length = m.new_int_var(0, st.steps, "")
            m.add(length == end - self.start[i])
            intervals.append(m.new_interval_var(self.start[i], length, end, ""))
            demands.append(s)
        if intervals:
            m.add_cumulative(intervals, demands, self.peak)

    def hint(self, order: Sequence[int], reuses: Sequence[tuple[int, int, int]], offsets: Sequence[int]) -> None:
        for step, k in enumerate(order):
            self.m.add_hint(self.pos[k], step)
        taken = {(y, x) for _, y, x in reuses}
        for key, b in self.reuse.items():
            self.m.add_hint(b, key in taken)
        mem = self.graph.memories[0]
        for i, o in enumerate(offsets):
            q = self.q[i]
            if q is not None:
                self.m.add_hint(q, o // math.lcm(self.graph.tensors[i].alignment, mem.alignment))


def _apart(st, rel: Relations, a: int, b: int) -> bool:  # type: ignore[no-untyped-def]
    """In every order ``a`` is dead before ``b`` is born (its readers, or its producer if it
    has none, run before ``b``'s producer)."""
    if st.output[a] or st.producer[b] < 0:
        return False
    pb = st.producer[b]
    if st.consumers[a]:
        return all(rel.before[pb] >> c & 1 for c in st.consumers[a])
    pa = st.producer[a]
    return pa >= 0 and bool(rel.before[pb] >> pa & 1)


def _meet(st, rel: Relations, x: int, y: int) -> bool:  # type: ignore[no-untyped-def]
    """``x`` cannot end before ``y`` starts in any order: ``y``'s producer reads ``x``, or runs
    before one of ``x``'s readers, or ``x`` is a graph output."""
    py = st.producer[y]
    if st.output[x]:
        return True
    if st.consumers[x]:
        return any(c == py or rel.after[py] >> c & 1 for c in st.consumers[x])
    px = st.producer[x]  # read by none: live at its producer's step only (an input: at step 0)
    return px >= 0 and (px == py or bool(rel.after[py] >> px & 1))


def solve_joint(graph: Graph, rel: Relations, upper: int, lower: int, deadline: Deadline,
                settings: cpsat.Settings, hint: tuple | None = None) -> JointResult:
    """Solve the joint model under ``deadline``; ``upper``: a peak some plan reaches (the model
    looks for one at most that), ``hint``: (order, reuses, offsets) of that plan."""
    jm = JointModel(graph, rel, upper, lower)
    if hint is not None:
        jm.hint(*hint)
    solver = cp_model.CpSolver()
    settings.apply(solver, deadline)
    status = cpsat.solve(solver, jm.m, deadline)
    cpsat.charge(solver, status, deadline)
    bound = max(lower, int(math.ceil(solver.best_objective_bound - 1e-6))) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else lower
    if status == cp_model.INFEASIBLE:
        return JointResult(None, [], [], None, upper, False)  # nothing at most ``upper``: it is optimal
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return JointResult(None, [], [], None, lower, False)
    st = graph.structure
    pos = np.array([solver.value(p) for p in jm.pos], np.int64)
    order = [int(k) for k in np.argsort(pos, kind="stable")]
    reuses = sorted((st.producer[y], y, x) for (y, x), b in jm.reuse.items() if solver.value(b))
    offsets = [int(solver.value(o)) for o in jm.off]
    peak = int(solver.value(jm.peak))
    return JointResult(order, reuses, offsets, peak, peak if status == cp_model.OPTIMAL else bound, status == cp_model.OPTIMAL)
