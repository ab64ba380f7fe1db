"""What a plan means per memory, in words a chip engineer uses (the CLI's report and ``--json``).

Per memory: capacity, peak, a lower bound on the peak, the bytes and the benefit kept there. The
bound is ``Plan.lower_bound`` as it is, the one number the Python API, ``--json`` and ``optplan
bounds`` report too (``optplan.core.bounds.reported_bounds`` lifts it where the objective proved
more and where the plan holds bytes). Status and gaps agree: OPTIMAL shows gap 0 everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optplan.core.columns import Columns
from optplan.core.load import usage_curve
from optplan.core.objective import BENEFIT
from optplan.core.plan import Plan, Status, layout_of
from optplan.core.problem import Problem
from optplan.core.sizes import size_text


@dataclass(frozen=True)
class MemoryRow:
    name: str
    capacity: int | None
    peak: int
    bound: int  # lower bound on the peak (see the module docstring)
    minimised: bool  # the objective minimises this peak (weight > 0)
    buffers: int
    bytes: int  # sum of the sizes of the buffers placed there
    benefit: int  # sum of their benefit (Buffer.gain)
    live: int  # the most bytes live at one step
    step: int | None  # the first step at which the peak is reached (None: vector clocks, or nothing held)

    @property
    def gap(self) -> float | None:
        if self.peak <= self.bound:
            return 0.0
        return None if self.bound <= 0 else self.peak / self.bound - 1.0


def memory_rows(problem: Problem, plan: Plan) -> list[MemoryRow]:
    """One row per memory, fastest first (empty when no plan was found)."""
    if not plan.found:
        return []
    weights = plan.objective.weights(problem)
    where = _memory_index(problem, plan)
    cols = problem.columns
    rows = []
    for k, m in enumerate(problem.memories):
        mine = where == k
        curve = None if problem.concurrent else usage_curve(problem, plan.placements, m.name)
        live = int(curve.live.max()) if curve is not None and len(curve.live) else 0
        peak = plan.peak.get(m.name, 0)
        minimised = weights[m.name] > 0 and plan.objective.optimizes
        bound = plan.lower_bound.get(m.name, 0)
        rows.append(MemoryRow(m.name, m.capacity, peak, bound, minimised, int(mine.sum()), Columns.total(cols.size[mine]),
                              Columns.total(cols.gain[mine]), live, None if curve is None else curve.peak_step))
    return rows


def _memory_index(problem: Problem, plan: Plan) -> np.ndarray:
    """Each buffer's memory (index into ``problem.memories``), in buffer order."""
    layout = layout_of(problem, plan.placements)
    if layout is not None:
        return layout.where
    if len(problem.memories) == 1:
        return np.zeros(len(problem.buffers), np.int64)
    index = {m: k for k, m in enumerate(problem.memory_names)}
    return np.fromiter((index[plan.placements[b].memory] for b in problem.columns.ids), np.int64, len(problem.buffers))


def objective_words(problem: Problem, plan: Plan, rows: list[MemoryRow] | None = None) -> str:
    """The objective and how far the plan is from what is proven, in words; e.g. "fast-first:
    sram holds 6.00 KiB of benefit, 6.00 KiB possible (proven); dram peak 98.66 KiB, bound 97.66 KiB".
    ``rows``: the plan's ``memory_rows`` if already made."""
    if not plan.found:
        return f"{plan.objective}: no plan"
    rows = memory_rows(problem, plan) if rows is None else rows
    proven = plan.status is Status.OPTIMAL
    parts = []
    kept = dict((name, (v, b)) for name, v, b in plan.components)
    if BENEFIT in kept and len(rows) > 1:
        v, b = kept[BENEFIT]
        fast = rows[:-1]
        where = " and ".join(r.name for r in fast)
        held = sum(r.benefit for r in fast)
        parts.append(f"{where} {'hold' if len(fast) > 1 else 'holds'} {size_text(held)} of benefit, "
                     f"{size_text(held + b - v)} possible" + (" (proven)" if proven else " (bound)"))
    for r in reversed(rows):
        if r.minimised:
            parts.append(f"{r.name} peak {size_text(r.peak)}, bound {size_text(r.bound)}")
    if not plan.objective.optimizes:
        parts = ["any plan within the capacities"]
    return f"{plan.objective}: " + "; ".join(parts)


def quantity_name(problem: Problem, plan: Plan, name: str | None) -> str:
    """A quantity of ``Plan.components`` in words: "benefit", "dram peak" (the one memory whose
    peak the objective weighs), "peaks" (several, slowest first); "" for None (one quantity)."""
    if name is None:
        return ""
    if name == BENEFIT:
        return "benefit"
    weighed = [m for m, w in plan.objective.weights(problem).items() if w > 0]
    return f"{weighed[0]} peak" if len(weighed) == 1 else "peaks"


def gap_words(problem: Problem, plan: Plan) -> str:
    """The plan's gap with the quantity it measures: "benefit gap 3.20%", "dram peak gap 12.34%"
    (a lexicographic objective's first quantity not at its bound: gaps of different quantities
    must not be read as one scale); "gap 0.00%" when every quantity is at its bound."""
    what = quantity_name(problem, plan, plan.gap_of)
    return f"{what + ' ' if what else ''}gap {percent(plan.gap)}"


def percent(g: float | None) -> str:
    """A gap in percent; a positive one never prints as 0.00% (that is for proven plans)."""
    return "n/a" if g is None else "<0.01%" if 0 < g < 5e-5 else f"{100 * g:.2f}%"
