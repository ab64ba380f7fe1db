"""Lower bounds above the live load from time windows, proven by the search on sub-instances.

Clip every buffer live in a window ``[a, b)`` of time to the window: any plan of the whole,
restricted to the window, is a plan of that sub-instance, so the sub-instance's optimum is a
lower bound on the whole's. Around the densest steps a window holds few buffers, so the search
can refute capacities on it that it cannot refute on the whole (a small instance whose optimum
lies above its load: one window is often all that pushes it up). Windows of growing width slide
over the steps of highest load until they hold ``MAX_FRACTION`` of the buffers (beyond that the
whole search is as cheap). Only plain single-memory problems (no gaps, no
relative placements, no fixed or hinted offsets): there clipping is a relaxation and the
search's refutations are proofs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from optplan.bounds import lower_bounds
from optplan.deadline import Deadline
from optplan.problem import Buffer, Memory, Problem
from optplan.search import engine
from optplan.search.instance import build

MAX_FRACTION = 0.6  # a window holding more of the buffers than this is left to the whole search
MIN_BUFFERS = 6  # below this the whole search proves the optimum at once
UNLIMITED_SECONDS = 1.0  # per window when the clock has no limit: a window is a shortcut, not the proof


@dataclass
class WindowBound:
    bound: int  # proven lower bound on the peak, bytes
    tried: int = 0  # windows searched
    raised_by: tuple[int, int] | None = None  # the window that proved the highest bound
    windows: list[tuple[int, int, int, int]] = field(default_factory=list)  # (a, b, buffers, bound) per window


def windows(start: np.ndarray, end: np.ndarray, size: np.ndarray, most: int) -> list[tuple[int, int]]:
    """Time windows ``[a, b)`` that hold a step of the highest load, narrow ones first: for each
    width (2, 4, 8, ... elementary intervals) every such window starting at a multiple of half the
    width; each holds at most ``most`` buffers and fewer than all of them."""
    times = np.unique(np.concatenate([start, end]))
    k = len(times) - 1  # elementary intervals [times[i], times[i + 1])
    if k < 2:
        return []
    delta = np.zeros(len(times), np.int64)
    np.add.at(delta, np.searchsorted(times, start), size)
    np.add.at(delta, np.searchsorted(times, end), -size)
    dense = np.cumsum(delta)[:-1] == np.cumsum(delta)[:-1].max()
    out: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    w = 2
    while w < k:
        fits = False
        for i in range(0, k - 1, max(1, w // 2)):
            j = min(i + w, k)
            if not dense[i:j].any():
                continue
            a, b = int(times[i]), int(times[j])
            n = int(((start < b) & (end > a)).sum())
            if n <= most and n < len(start):
                fits = True
                if (a, b) not in seen:
                    seen.add((a, b))
                    out.append((a, b))
        if not fits:
            break
        w *= 2
    return out


def clipped(problem: Problem, a: int, b: int) -> Problem:
    """The sub-instance of the buffers live in ``[a, b)``, their lifetimes cut to it."""
    cols = problem.columns
    keep = np.flatnonzero((cols.start < b) & (cols.end > a) & (cols.size > 0))
    bufs = tuple(Buffer(cols.ids[i], int(cols.size[i]), max(int(cols.start[i]), a), min(int(cols.end[i]), b),
                        alignment=int(cols.alignment[i])) for i in keep)
    mem = problem.memories[0]
    return Problem(bufs, (Memory(mem.name, None, mem.alignment),))


def supported(problem: Problem) -> bool:
    return len(problem.memories) == 1 and problem.columns.plain and len(problem.buffers) >= MIN_BUFFERS


def window_bound(problem: Problem, bound: int, clock: Deadline, seed: int = 0) -> WindowBound:
    """The highest bound the search proves on window sub-instances within ``clock``, starting from
    the proven ``bound`` (bytes): a window whose sub-instance packs at ``bound`` proves nothing and
    stops at once (the search's ``goal``). One process: this is a member's preamble, not a race."""
    out = WindowBound(bound)
    if not supported(problem):
        return out
    cols = problem.columns
    held = cols.size > 0
    cands = windows(cols.start[held], cols.end[held], cols.size[held], int(MAX_FRACTION * int(held.sum())))
    m = problem.memories[0].name
    for i, (a, b) in enumerate(cands):
        if clock.left() <= 0:
            break
        sub = clipped(problem, a, b)
        inst = build(sub, m, list(sub.units))
        if not inst.exact or inst.large:
            continue
        # the sub-instance's own bound as ``lower`` (the engine rounds it to the sub-instance's grid, which
        # need not be the whole's); the whole's bound as the goal: a plan under it proves nothing more
        own = lower_bounds(sub).lower[m]
        each = clock.share(1 / (len(cands) - i)) if clock.limited else clock.part(UNLIMITED_SECONDS)
        ans = engine.solve(inst, None, own, "min-peak", each, 1, seed, goal=out.bound)
        out.tried += 1
        out.windows.append((a, b, inst.n, ans.bound))
        if ans.bound > out.bound:
            out.bound, out.raised_by = ans.bound, (a, b)
    return out
