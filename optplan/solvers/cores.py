"""Sets of units that provably do not pack in one memory, found in the densest time windows.

A selection of the staging relaxation may fit the capacity at every step and still not pack at
offsets (fragmentation). Refuting the whole selection (100+ units) takes the exact search long,
and cutting off only that selection proves nothing. A short window of time around its densest
step is another matter: the units alive in it, their buffers cut to the window, are a relaxation
of the selection (a packing of the selection, restricted to the window, packs them). When the
search proves they do not pack, no plan puts all of those units in that memory: a valid cut
(``Staging.forbid(..., proven=True)``) over a few units, which also cuts every other selection
that holds them, so the bound on the lost benefit rises (combinatorial Benders cuts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from optplan import planners
from optplan.deadline import Deadline
from optplan.objective import Goal, Objective
from optplan.plan import Status
from optplan.problem import Problem
from optplan.solvers.reduce import Part

MAX_UNITS = 64  # units in a window: beyond this the search rarely refutes in a try's time
CENTRES = 4  # densest steps whose windows are tried, per selection
RADII = (1, 2, 3, 5, 8, 13, 21, 34)  # elementary intervals on each side of the centre
TRY_SHARE = 0.02  # of the time left, for one window (refutations that come in far less)


def alone(part: Part, memory: str, ks: Sequence[int], window: tuple[int, int] | None = None) -> Problem:
    """The units ``ks`` of the part as a problem of their own, in ``memory`` only; with ``window``
    (t0, t1) their buffers cut to it (those without an int lifetime or with gaps kept whole, which
    only asks more) and the ones outside it dropped."""
    ids = {bid for k in ks for bid, _ in part.units[k].members}
    buffers = []
    for b in part.problem.buffers:
        if b.id not in ids:
            continue
        b = replace(b, allowed=None, blocked=(), fixed_memory=b.fixed_memory and memory, hint_memory=None,
                    hint_offset=None)
        if window is not None and isinstance(b.start, int) and isinstance(b.end, int) and not b.gaps:
            t0, t1 = max(b.start, window[0]), min(b.end, window[1])
            if t0 >= t1:
                continue
            b = replace(b, start=t0, end=t1)
        buffers.append(b)
    kept = {b.id for b in buffers}
    relative = tuple(r for r in part.problem.relative if r.buffer in kept and r.base in kept)
    return Problem(tuple(buffers), (part.problem.memory(memory),), relative)


def windows(part: Part, ks: Sequence[int]) -> list[tuple[int, tuple[int, int], list[int]]]:
    """(centre, (t0, t1), units alive in it) for windows growing around the ``CENTRES`` steps where the
    units ``ks`` put the most bytes, smallest first per centre, each unit set once, at most
    ``MAX_UNITS`` units."""
    pieces = [(k, a, b, y1 - y0) for k in ks for a, b, y0, y1 in part.units[k].pieces]
    if not pieces:
        return []
    times = np.array(sorted({t for _, a, b, _ in pieces for t in (a, b)}), np.int64)
    load = np.zeros(len(times), np.int64)
    for _, a, b, h in pieces:
        load[np.searchsorted(times, a)] += h
        load[np.searchsorted(times, b)] -= h
    load = np.cumsum(load)[:-1]  # bytes over [times[i], times[i + 1])
    out, seen = [], set()
    for c in np.argsort(-load, kind="stable")[:CENTRES]:
        for r in RADII:
            t0, t1 = int(times[max(0, c - r)]), int(times[min(len(times) - 1, c + r + 1)])
            inside = sorted({k for k, a, b, _ in pieces if a < t1 and b > t0})
            if len(inside) > MAX_UNITS:
                break
            if tuple(inside) not in seen:
                seen.add(tuple(inside))
                out.append((int(c), (t0, t1), inside))
            if t0 == times[0] and t1 == times[-1]:
                break
    return out


def find_core(part: Part, memory: str, ks: Sequence[int], deadline: Deadline, seed: int = 0,
              workers: int = 1) -> list[int] | None:
    """Units among ``ks`` that the search proves do not pack in ``memory`` (cut to a window of
    time), or None. Per centre the windows grow while they pack; one that is neither packed nor
    refuted in its try's time ends that centre (larger ones are harder)."""
    feasible = Objective(Goal.FEASIBLE)
    tried: set[int] = set()
    for centre, (t0, t1), inside in windows(part, ks):
        if deadline.expired():
            return None
        if centre in tried:
            continue
        plan = planners.solve(alone(part, memory, inside, (t0, t1)), "search", deadline=deadline.share(TRY_SHARE),
                              seed=seed, workers=workers, objective=feasible)
        if plan.status is Status.INFEASIBLE:
            return inside
        if not plan.found:
            tried.add(centre)
    return None
