"""Time for the search: wall-clock seconds, or search nodes when results must repeat.

Every budget in the search (restarts, minimization slices, the parts of a memory) is cut from
one clock. In deterministic mode a second is ``NODES_PER_SECOND`` kernel nodes: the answer then
depends only on the instance, the seed and the time limit, never on the machine's load (the
wall-clock time it takes does).
"""

from __future__ import annotations

import time

# Nodes per deterministic second: one process's rate, measured on a 2-core machine, was 39k nodes/s
# on minimalloc/D and 89k on E, so a deterministic limit takes between half and 1.3x as long.
NODES_PER_SECOND = 50_000


class Clock:
    """Seconds left (wall clock), or nodes left (deterministic); ``part`` cuts a sub-budget whose
    spending counts against this one too."""

    def __init__(self, seconds: float, deterministic: bool = False, parent: Clock | None = None) -> None:
        self.deterministic = deterministic
        self.parent = parent
        seconds = max(seconds, 0.0)
        if parent is not None:
            seconds = min(seconds, parent.left())
        self.nodes = int(seconds * NODES_PER_SECOND)  # deterministic mode: nodes left
        self.deadline = time.perf_counter() + seconds  # wall-clock mode

    def left(self) -> float:
        """Seconds left (deterministic: nodes left at the nominal rate)."""
        if self.deterministic:
            return self.nodes / NODES_PER_SECOND
        return max(self.deadline - time.perf_counter(), 0.0)

    def part(self, seconds: float) -> Clock:
        return Clock(seconds, self.deterministic, self)

    def budget(self, limit: int, rate: float) -> int:
        """Nodes for the next kernel run, at most ``limit``: the nodes left, or (wall clock) what
        the measured ``rate`` (nodes/s) gets done in the time left, at least 1000 so that a
        nearly spent budget still moves."""
        if self.deterministic:
            return max(0, min(limit, self.nodes))
        return max(1000, min(limit, int(rate * self.left()) + 1))

    def spend(self, nodes: int) -> None:
        if self.deterministic:
            self.nodes -= nodes
            if self.parent is not None:
                self.parent.spend(nodes)
