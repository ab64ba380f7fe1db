"""Progress a person can read, for long solves and for studies.

On a terminal: rich bars whose elapsed time keeps ticking between reports. Elsewhere (CI logs,
files): one plain line per improvement naming the best and the bound, and otherwise at most one
line every ``QUIET`` seconds, so a log neither floods nor looks frozen.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

QUIET = 10.0  # seconds between plain lines when nothing improves


def _num(n: object) -> str:
    return "-" if n is None else f"{n:,}" if isinstance(n, int) else str(n)


def _gap(g: object) -> str:
    return "n/a" if not isinstance(g, (int, float)) else f"{100 * g:.2f}%"


class _Plain:
    """Timestamped lines on a non-terminal console; a heartbeat thread fills silences of QUIET s."""

    def __init__(self, console: Console, heartbeat: Callable[[], str]) -> None:
        self.console, self.heartbeat = console, heartbeat
        self.t0 = self.last = time.monotonic()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def line(self, text: str) -> None:
        with self.lock:
            self.last = time.monotonic()
            self.console.print(f"[{self.last - self.t0:7.1f} s] {text}", markup=False, highlight=False)

    def _beat(self) -> None:
        while not self.stopped.wait(1.0):
            if time.monotonic() - self.last >= QUIET:
                self.line(self.heartbeat())

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


class SolveProgress:
    """The ``progress`` callback of a planner: reports ``{"best", "bound", "gap", "elapsed"}``."""

    def __init__(self, console: Console) -> None:
        self.info: dict = {}
        self.bar: Progress | None = None
        self.plain: _Plain | None = None
        if console.is_terminal:
            self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                console=console, transient=True)
            self.task = self.bar.add_task("solving ...", total=None)
            self.bar.start()
        else:
            self.plain = _Plain(console, lambda: f"solving: {self._text()}")

    def _text(self) -> str:
        i = self.info
        return f"best {_num(i.get('best'))}  bound {_num(i.get('bound'))}  gap {_gap(i.get('gap'))}"

    def __call__(self, info: dict) -> None:
        improved = (info.get("best"), info.get("bound")) != (self.info.get("best"), self.info.get("bound"))
        self.info = dict(info)
        if self.bar is not None:
            self.bar.update(self.task, description=self._text())
        elif self.plain is not None and improved:
            self.plain.line(self._text())

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
        if self.plain is not None:
            self.plain.stop()


class _BarsAndLine(Progress):
    """Bars, then one line of text under them (the latest best known), so that narrow terminals
    truncate the text rather than the bars."""

    line = ""

    def get_renderables(self):  # type: ignore[no-untyped-def]
        yield self.make_tasks_table(self.tasks)
        yield Text(self.line, overflow="ellipsis", no_wrap=True)


class StudyProgress:
    """Instances and runs done out of the total, and the latest best known with its bound."""

    def __init__(self, console: Console, runs: int, instances: int) -> None:
        self.runs, self.instances = runs, instances
        self.done_runs = self.done_instances = 0
        self.latest = "waiting for the first run"
        self.bar: Progress | None = None
        self.plain: _Plain | None = None
        if console.is_terminal:
            self.bar = _BarsAndLine(TextColumn("{task.description:>9}"), BarColumn(), MofNCompleteColumn(),
                                    TimeElapsedColumn(), console=console)
            self.bar.line = self.latest
            self.t_inst = self.bar.add_task("instances", total=instances)
            self.t_runs = self.bar.add_task("runs", total=runs)
            self.bar.start()
        else:
            self.plain = _Plain(console, lambda: f"{self._counts()}; latest: {self.latest}")

    def _counts(self) -> str:
        return f"{self.done_instances}/{self.instances} instances, {self.done_runs}/{self.runs} runs"

    def finished(self, row: dict, instance_done: bool, improved: bool) -> None:
        """One run finished; ``improved``: it lowered its instance's best known peak."""
        self.done_runs += 1
        self.done_instances += instance_done
        if improved:
            self.latest = (f"{row['instance']}: best {_num(row.get('peak'))} by {row['planner']} ({row['status']}), "
                           f"bound {_num(row.get('lower_bound'))}, "
                           f"{str(row['gap_of']) + ' ' if row.get('gap_of') else ''}gap {_gap(row.get('gap_to_bound'))}")
        if isinstance(self.bar, _BarsAndLine):
            self.bar.line = f"best known: {self.latest}"
            self.bar.update(self.t_inst, completed=self.done_instances)
            self.bar.update(self.t_runs, completed=self.done_runs)
        elif self.plain is not None and improved:
            self.plain.line(f"{self._counts()}; {self.latest}")

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
        if self.plain is not None:
            self.plain.stop()
