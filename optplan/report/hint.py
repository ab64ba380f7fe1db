"""The hint of a run without a time limit: a line after some seconds, unless the run ended first.

Apart from the progress display (no rich here): ``solve --json`` says it too, and a small solve that
ends at once imports nothing for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

HINT_SECONDS = 10.0  # without a time limit, the hint comes after this long (the CLI's; tests pass their own)
NO_LIMIT_HINT = ("optplan: no --time-limit: the planner runs until its plan is proven optimal, which may take "
                 "hours; Ctrl-C stops it and keeps the best plan found")


class Hint:
    """``say(text)`` after ``delay`` seconds unless cancelled first (a run without a time limit that
    has not ended by then may not end soon: say how to stop it without losing the plan)."""

    def __init__(self, say: Callable[[str], None], delay: float = HINT_SECONDS, text: str = NO_LIMIT_HINT) -> None:
        self.timer = threading.Timer(delay, say, (text,))
        self.timer.daemon = True
        self.timer.start()

    def cancel(self) -> None:
        self.timer.cancel()
