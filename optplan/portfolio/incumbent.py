"""The best plan of a part found so far, shared by the portfolio's members while they run.

Members (the CP-SAT model, neighbourhood search, the search engine's answer from its process)
``offer`` plans; a better one replaces the incumbent and is reported at once, so the progress
line and every member that reads the incumbent next (LNS before each move, CP-SAT's next hint)
start from the best plan any of them found. Thread-safe: members run on threads of this process
and a watcher relays plans from member processes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from optplan.core.objective import Objective
from optplan.parts import Choice, Part
from optplan.registry import Result
from optplan.solvers.cpsat import part_result
from optplan.solvers.part_plans import part_value


class Incumbent:
    def __init__(self, part: Part, objective: Objective, choices: Sequence[Choice] | None,
                 report: Callable[[Result], None] | None = None) -> None:
        self.part, self.objective, self.report = part, objective, report
        self.lock = threading.Lock()
        self.choices: list[Choice] | None = None if choices is None else list(choices)
        self.value = None if choices is None else part_value(objective, part, self.choices)  # type: ignore[arg-type]
        self.version = 0  # how many plans replaced the first one
        self.source = "start"  # who found the incumbent
        self.changed = threading.Event()  # set at every replacement (for members that wait for one)

    def offer(self, choices: Sequence[Choice] | None, source: str, ties: bool = False, expect: int | None = None) -> bool:
        """Keep ``choices`` if better than the incumbent (the first plan always). ``ties``: an equal
        value is kept too (a move along a plateau); ``expect``: only if the incumbent is still
        that version (a move computed from it)."""
        if choices is None:
            return False
        value = part_value(self.objective, self.part, choices)
        with self.lock:
            if expect is not None and expect != self.version:
                return False
            if self.value is not None and (value > self.value or (value == self.value and not ties)):
                return False
            self.choices, self.value, self.source = list(choices), value, source
            self.version += 1
        self.changed.set()
        if self.report is not None:
            self.report(part_result(self.part, None, choices, False, False, None))
        return True

    def get(self) -> tuple[list[Choice] | None, int]:
        """The incumbent (a copy) and its version."""
        with self.lock:
            return (None if self.choices is None else list(self.choices)), self.version
