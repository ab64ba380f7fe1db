"""Large-neighbourhood search on a part: free some units near the peak, re-solve them with CP-SAT
around the others, keep the move if it helps.

Exact models of whole parts stall long before their time runs out on tens of thousands of units;
a move's model stays small (tens of units and their obstacles), so LNS keeps bringing the peak
down there, each move from the incumbent as the part's other members left it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.core.problem import objective_weights
from optplan.parts import Choice, Part
from optplan.portfolio.params import DEFAULTS, PortfolioParams

if TYPE_CHECKING:
    from optplan.portfolio.incumbent import Incumbent
    from optplan.solvers.cpsat import Settings


def lns(part: Part, inc: Incumbent, settings: Settings, objective: Objective, clock: Deadline, seed: int,
        good_enough: Callable[[list[Choice]], bool] = lambda c: False, params: PortfolioParams = DEFAULTS) -> dict[str, int]:
    """Free some units near a unit at the peak, re-solve them with CP-SAT around the others, keep
    the move if it helps; repeat, each move from the incumbent as it is then (other members may
    have replaced it). Odd moves free the highest units anywhere (a long thin unit on top needs
    room at all times), even ones the highest units nearest in time to the peak unit.

    Single memory: only units in a band of addresses below the peak are freed, and only the
    units reaching into the band are obstacles (a floor keeps the freed ones in it), so a move
    stays small on parts of tens of thousands of units with thousands alive at once; the band
    and the number freed grow while moves are solved quickly and shrink on timeouts.
    A move is kept when the freed region's highest top goes down without any peak going up, so
    the number of units at the peak shrinks until the peak itself drops.
    """
    from optplan.solvers.cpsat import PartModel, run

    rng = random.Random(seed)
    left = clock.left
    w = objective_weights(part.problem)
    hood = Neighbourhood(part)
    size = min(hood.n, params.lns_free)  # units freed per move
    band = params.lns_band  # single memory: height of the band, as a fraction of the peak
    iters = improved = 0
    while left() > 0.5 and hood.n > 1:
        cur, version = inc.get()
        if cur is None or good_enough(cur):
            break
        move = hood.pick(cur, rng, size, band if len(part.memories) == 1 else None, iters % 2 == 1)
        if move is None:
            break
        free, fixed, floor, peak, region_top = move
        pm = PartModel(part, objective if objective.optimizes else Objective(), active=free, fixed=fixed,
                       ceiling=peak, fixed_count=False, floor=floor)
        pm.hint({i: cur[i] for i in free})
        budget = clock.part(max(1.0, 0.1 * left()))
        out = run(pm, settings, budget)
        budget.spend(max(0.0, params.lns_move_dtime - out.dtime))  # deterministic: a small model's solve is not all a move costs
        iters += 1
        if out.solution is not None:
            new = list(cur)
            for i, c in zip(pm.active, out.solution):
                new[i] = c
            new_top: dict[str, int] = {}
            for i in free:
                m = new[i][0]
                new_top[m] = max(new_top.get(m, 0), new[i][1] + hood.units[i].top)
            gain = sum(w[m] * v for m, v in new_top.items()) < sum(w[m] * v for m, v in region_top.items())
            if gain and inc.offer(new, "lns", ties=True, expect=version):
                improved += 1
        if out.optimal:
            size, band = min(hood.n, int(size * 1.3) + 1), min(1.0, band * 1.3)
        elif out.solution is None or (out.dtime if clock.deterministic else out.seconds) >= budget.seconds * 0.9:
            size, band = max(8, int(size * 0.7)), max(0.002, band * 0.7)
    return {"lns_moves": iters, "lns_improved": improved}


class Neighbourhood:
    """LNS moves on a part: which units to free around a unit at the peak, which stay as obstacles."""

    def __init__(self, part: Part) -> None:
        self.part, self.units = part, part.scaled
        self.n = len(self.units)
        self.start = np.array([u.start for u in self.units], np.int64)
        self.end = np.array([u.end for u in self.units], np.int64)
        self.top = np.array([u.top for u in self.units], np.int64)
        self.low = np.array([u.low for u in self.units], np.int64)
        self.high = np.array([u.high for u in self.units], np.int64)

    def pick(self, cur: list[Choice], rng: random.Random, size: int, band: float | None, anywhere: bool):
        """(free, fixed, floor, peak, region top) of the next move, or None when no unit is above
        its memory's bound. ``band``: free only units in the top ``band`` x peak addresses."""
        names = self.part.memories
        where = np.array([names.index(m) for m, _ in cur], np.int64) if len(names) > 1 else np.zeros(self.n, np.int64)
        off = np.array([o for _, o in cur], np.int64)
        tops = off + self.top
        peaks = np.zeros(len(names), np.int64)
        np.maximum.at(peaks, where, tops)
        lower = np.array([self.part.lower[m] for m in names], np.int64)
        hot = np.flatnonzero((tops >= peaks[where]) & (peaks[where] > lower[where]))
        if not len(hot):
            return None
        c = int(hot[rng.randrange(len(hot))])
        noise = np.array([rng.random() for _ in range(self.n)]) if self.n <= 4096 else \
            np.random.default_rng(rng.getrandbits(32)).random(self.n)
        floor = None
        ok = np.ones(self.n, bool)
        if band is not None:
            y_lo = int(peaks[0] - max(1, int(band * peaks[0])))
            ok = off + self.low >= y_lo
            ok[c] = True
            y_lo = min(y_lo, int(off[c] + self.low[c]))
            floor = {names[0]: y_lo}
        distance = np.maximum(np.maximum(self.start - self.end[c], self.start[c] - self.end), 0)
        keys = (noise, -tops) if anywhere else (noise, -tops, distance)
        ranked = np.lexsort(keys)
        ranked = ranked[ok[ranked]]
        free = np.sort(ranked[:size])
        touch = np.zeros(self.n, bool)  # units alive together with some freed unit: obstacles
        for i in free:
            touch |= (self.start < self.end[i]) & (self.start[i] < self.end)
        if floor is not None:
            touch &= off + self.high > next(iter(floor.values()))  # below the band: out of the freed units' reach
        touch[free] = False
        fixed = {int(i): cur[i] for i in np.flatnonzero(touch)}
        region_top: dict[str, int] = {}
        for i in free:
            m = cur[i][0]
            region_top[m] = max(region_top.get(m, 0), int(tops[i]))
        peak = {m: int(peaks[k]) for k, m in enumerate(names)}
        return [int(i) for i in free], fixed, floor, peak, region_top
