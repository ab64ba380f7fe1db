"""Finding orders: the simple orders, the exact search per segment, a beam where it runs out, and
local search, each scored by the peak live load with the best reuses (``Loads``); the bound over
every order the exact search proves on the way.

``OrderSearch`` keeps the candidates by name (the methods' orders), the best one, and per segment
the best order and proven bound, so that every method improves one picture: the best order is the
concatenation of each segment's best.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from optplan.core.deadline import Deadline
from optplan.graph import exact, orders, windows
from optplan.graph.loads import Loads, Relations, is_topological
from optplan.graph.model import Graph


@dataclass(frozen=True)
class OrderSettings:
    """What the order methods may do. ``methods``: which run (``METHODS``); the shares are of the
    time limit (without one the counts alone bound them)."""

    methods: tuple[str, ...] = ("given", "bfs", "dfs", "greedy", "exact", "beam", "local", "windows", "joint", "pack-local")
    exact_states: int = 500_000  # per segment
    exact_share: float = 0.35
    beam_width: int = 4  # the first beam's (four times wider each time after, while time is left)
    beam_share: float = 0.15
    local_moves: int = 20_000  # without a time limit
    local_share: float = 0.1
    window_sizes: tuple[int, ...] = (16, 32, 48)  # ops per window (bounds: ``windows``)
    window_states: int = 100_000  # per window
    window_share: float = 0.1
    joint_max_ops: int = 14
    joint_max_tensors: int = 40
    joint_share: float = 0.3
    joint_seconds: float = 20.0  # the joint model's limit when the run has none
    pack_moves: int = 200  # local search moves scored by packing (each packs a problem)
    pack_share: float = 0.15
    candidates: int = 4  # distinct orders packed by the heuristics before the final planner
    seed: int = 0


METHODS = OrderSettings().methods
# Deterministic runs count work instead of timing it: per deterministic second of their limit, at
# most this many exact-search states per segment and local-search moves (the counts of
# OrderSettings cap them), and one beam.
DET_STATES, DET_MOVES = 20_000, 2_000


def _timed(deadline: Deadline) -> bool:
    """The wall clock decides when a method stops (else its counts do)."""
    return deadline.limited and not deadline.deterministic


def _counted(deadline: Deadline, cap: int, per_second: int) -> int:
    """A method's count: ``cap``, less under a deterministic limit (``per_second`` per second)."""
    return min(cap, max(1, int(per_second * deadline.seconds))) if deadline.deterministic and deadline.limited else cap


class OrderSearch:
    """The order methods on one graph (see the module docstring)."""

    def __init__(self, graph: Graph, reuse: bool, settings: OrderSettings) -> None:
        self.graph, self.reuse, self.settings = graph, reuse, settings
        self.st = graph.structure
        self.loads = Loads(self.st)
        self.rel = Relations.of(self.st)
        self.segments = self.rel.segments()
        self.seg = [exact.Segment(self.st, self.rel, s, reuse) for s in self.segments]
        self.seg_best: list[tuple[int, list[int]] | None] = [None] * len(self.seg)  # (peak, order)
        self.seg_bound = [0] * len(self.seg)  # proven least peak of each segment (0: unknown)
        self.found: dict[str, list[int]] = {}  # method -> its order
        self.rng = random.Random(settings.seed)
        self.floor = 0  # a proven lower bound on every order's peak live load (the caller's): at it, stop
        self.window_floor = 0  # the windows' proven bound (``windows``)

    def done(self) -> bool:
        """The best order is at a proven floor: no method can lower its live load."""
        return max((b[0] for b in self.seg_best if b), default=0) <= max(self.floor, self.proven_floor())

    def score(self, order: list[int]) -> tuple[int, int]:
        return self.loads.score(order, self.reuse)

    def add(self, name: str, order: list[int]) -> None:
        """Record a method's order (and what it gives each segment)."""
        assert is_topological(self.st, order) and len(order) == self.st.ops, name
        self.found[name] = order
        at = 0
        for i, seg in enumerate(self.seg):
            part = order[at:at + len(seg.ops)]
            at += len(seg.ops)
            peak = exact.peak_of(seg, part)
            if self.seg_best[i] is None or peak < self.seg_best[i][0]:  # type: ignore[index]
                self.seg_best[i] = (peak, part)

    def best(self) -> list[int]:
        """The concatenation of each segment's best order."""
        return [k for b in self.seg_best for k in (b[1] if b else [])]

    def simple(self) -> None:
        for name in ("given", "bfs", "dfs", "greedy"):
            if name in self.settings.methods or name == "given":
                self.add(name, orders.SIMPLE[name](self.st, self.reuse))

    def exact(self, deadline: Deadline) -> bool:
        """The exact search on each segment, the heaviest first, while any could still lower the
        peak; True when every segment that matters is proven optimal."""
        todo = sorted(range(len(self.seg)), key=lambda i: -self.seg_best[i][0])  # type: ignore[index]
        proven = True
        for i in todo:
            upper = self.seg_best[i][0]  # type: ignore[index]
            floor = max(self.proven_floor(), self.floor)
            if upper <= floor or deadline.expired():
                if upper > floor:
                    proven = False
                continue
            try:
                got = exact.best_first(self.seg[i], upper, _counted(deadline, self.settings.exact_states, DET_STATES),
                                       deadline.expired)
            except exact.Unfinished as e:
                self.seg_bound[i] = max(self.seg_bound[i], e.bound)
                proven = False
                continue
            if got is None:  # nothing beats the order found: it is optimal
                self.seg_bound[i] = upper
            else:
                self.seg_bound[i] = got.bound
                self.seg_best[i] = (got.peak, got.order)
        if proven:
            self.found["exact"] = self.best()
        return proven

    def proven_floor(self) -> int:
        """The least peak live load of every order is at least this (the segments' proven bounds,
        the windows')."""
        return max(max(self.seg_bound, default=0), self.window_floor)

    def windows(self, deadline: Deadline) -> None:
        """Bounds from the exact search on windows around the best order's peaks (``windows``),
        the smallest first, while they could still raise the floor."""
        from optplan.graph.bounds import necessary

        sets = necessary(self.graph, self.rel)
        for ops in windows.windows_around_peaks(self.loads, self.best(), self.settings.window_sizes, 3):
            if deadline.expired() or self.done():
                break
            got = windows.window_bound(self.st, self.rel, sets, ops, self.reuse,
                                       _counted(deadline, self.settings.window_states, DET_STATES), deadline.expired)
            self.window_floor = max(self.window_floor, got)

    def beam(self, deadline: Deadline) -> None:
        """A beam on the segments the exact search left open, the heaviest first; while time is
        left, again four times as wide (without a limit: ``beam_width`` only)."""
        width = self.settings.beam_width
        while True:
            for i in sorted(range(len(self.seg)), key=lambda i: -self.seg_best[i][0]):  # type: ignore[index]
                if self.seg_best[i][0] <= max(self.seg_bound[i], self.proven_floor(), self.floor) or deadline.expired():  # type: ignore[index]
                    continue
                got = exact.beam(self.seg[i], width, deadline.expired)
                if got is not None and got.peak < self.seg_best[i][0]:  # type: ignore[index]
                    self.seg_best[i] = (got.peak, got.order)
            width *= 4
            if not _timed(deadline) or deadline.expired() or self.done():
                break
        self.found["beam"] = self.best()

    def local(self, deadline: Deadline, start: list[int] | None = None,
              score: Callable[[list[int]], tuple[int, ...]] | None = None, moves: int | None = None) -> list[int]:
        """Local search from ``start`` (default: the best order) under ``score`` (default: the
        live load)."""
        first = start if start is not None else self.best()
        budget = moves or (1 << 40 if _timed(deadline) else _counted(deadline, self.settings.local_moves, DET_MOVES))
        got, _ = orders.local_search(self.st, first, score or self.score, deadline.expired, self.rng,
                                     self._peak_step, budget)
        return got

    def _peak_step(self, order: list[int]) -> int:
        return int(self.loads.curve(order, self.reuse).argmax())

    def ranked(self) -> list[tuple[tuple[int, int], str, list[int]]]:
        """The distinct orders found, best live load first: (score, method, order); "combined":
        each segment's best, where no one method found it."""
        seen: dict[tuple[int, ...], tuple[tuple[int, int], str, list[int]]] = {}
        for name, order in [*self.found.items(), ("combined", self.best())]:
            key = tuple(order)
            if key not in seen:
                seen[key] = (self.score(order), name, order)
        return sorted(seen.values(), key=lambda x: x[0])
