"""The life of a solve around its Deadline: signals, and the child processes that must not outlive it.

``interruptible(deadline)``: while ``solving``, the first SIGINT or SIGTERM cancels the deadline,
so every planner stops and returns its incumbent (the caller validates and writes it); before
that (reading the input) it raises KeyboardInterrupt. A second signal exits at once (128 + signal
number) after killing every child process group, writing nothing. The signal
is noticed on a thread (``signal.set_wakeup_fd``) because the main thread may sit inside a C++
solver that does not return to Python until it is told to stop.

``run_child``: a solver process (CBC, the HiGHS worker) in its own process group, so that a
terminal's Ctrl-C does not reach it behind our back and one ``killpg`` takes all it started; it
is stopped at the deadline (SIGINT first: CBC then reports its best solution), killed
``grace`` seconds later, and killed whenever this process leaves.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO

from optplan.deadline import Deadline

_groups: set[int] = set()  # process groups of running children
_lock = threading.Lock()
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def kill_children() -> None:
    with _lock:
        groups = list(_groups)
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass


atexit.register(kill_children)


def run_child(args: Sequence[str], deadline: Deadline, grace: float = 1.0, stop: int = signal.SIGINT,
              log: IO | None = None, late: float = 0.0, wall: float | None = None) -> tuple[int, bool]:
    """Run ``args`` to its end, or a wall-clock deadline (+ ``late`` seconds: the child's own limit
    should fire first), its cancellation or ``wall`` seconds (a deterministic deadline's cap); then
    ``stop`` its group, and SIGKILL after ``grace``. Returns its exit code and whether it was stopped."""
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT if log else subprocess.DEVNULL, start_new_session=True)
    with _lock:
        _groups.add(proc.pid)
    start = time.perf_counter()
    try:
        sent: float | None = None
        while True:
            try:
                return proc.wait(timeout=0.05), sent is not None
            except subprocess.TimeoutExpired:
                pass
            over = (deadline.cancelled is not None or (wall is not None and time.perf_counter() - start > wall)
                    or (deadline.limited and not deadline.deterministic and deadline.left() <= 0))
            if sent is None and over:
                late_ok = deadline.cancelled is None and late > 0
                if late_ok and time.perf_counter() < deadline.end + late:
                    continue
                _signal_group(proc.pid, stop)
                sent = time.perf_counter()
            elif sent is not None and time.perf_counter() - sent > grace:
                _signal_group(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        with _lock:
            _groups.discard(proc.pid)


def _signal_group(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except OSError:
        pass


class Interrupts:
    """The signals received so far; ``solving`` switches a first signal from KeyboardInterrupt
    (nothing to keep yet) to cancelling the deadline."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.solving = False

    @property
    def exit_code(self) -> int | None:
        return 128 + self.received[0] if self.received else None

    def handler(self, signum: int, frame: object) -> None:  # the main thread's part; the watcher cancels
        if not self.solving:
            raise Interrupted(128 + signum)


class Interrupted(KeyboardInterrupt):
    """A signal before there was anything to keep; ``code`` is the exit code (128 + signal)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@contextmanager
def interruptible(deadline: Deadline) -> Iterator[Interrupts]:
    """Within the block, signals cancel ``deadline`` (see the module's docstring)."""
    state = Interrupts()
    received = state.received
    if threading.current_thread() is not threading.main_thread():  # signals are the main thread's
        yield state
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    old = {s: signal.signal(s, state.handler) for s in SIGNALS}
    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def watch() -> None:
        while data := os.read(r, 16):
            for sig in data:
                if sig not in SIGNALS:
                    continue
                received.append(sig)
                if len(received) > 1:  # the user insists: leave now, write nothing
                    kill_children()
                    os._exit(128 + sig)
                deadline.cancel("interrupted")

    watcher = threading.Thread(target=watch, daemon=True, name="optplan-signals")
    watcher.start()
    try:
        yield state
    finally:
        signal.set_wakeup_fd(old_fd)
        for s, h in old.items():
            signal.signal(s, h)
        os.close(w)
        watcher.join(1.0)
        os.close(r)
