"""The one notion of time: a Deadline that every planner polls, cuts sub-budgets from, and that a
signal cancels.

``Deadline(None)`` means no limit (``left()`` is ``inf``). In wall-clock mode ``left()`` is the
time to an end fixed when the deadline (or part) was made. In deterministic mode it counts
*deterministic seconds* that the planners ``spend`` for the work they did (the search: kernel
nodes, CP-SAT: its deterministic time, hill-climb: steps): the answer then depends on the
instance, the seed and the limit, never on the machine's load. A part charges its parents too.
A deterministic deadline also keeps a wall-clock guard (``wall_left``), far past its limit's
wall time (``guard_seconds``; a part may end its guard sooner): past it ``left()`` is 0, so a run
that its budgets do not end still ends, and the root remembers it (``guard_hit``): that answer
may not repeat.
``cancel()`` (a signal handler, on any thread) makes every part of the tree expired at once and
runs the hooks that running solvers registered to stop themselves. ``halt()`` does the same for
one part and the parts cut from it (members of a portfolio racing on a part: the first proof
stops the others), leaving the rest of the tree running. ``current()`` is the deadline of the
planner running in this thread (the registry sets it), for the loops deep below a planner that
takes none (a greedy pass) to poll.

``elapsed`` counts time already gone when the deadline is made: the command passes
``process_age()``, so that ``--time-limit`` counts from the process's start (the interpreter and
the imports included), not from the moment the command got to making its Deadline.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# A deterministic run's wall-clock guard (issue 30 item 7): its answer must not depend on the
# machine's load, so its budgets end by their deterministic measure (about one CPU second of one
# core per deterministic second) and the guard sits far beyond: max(GUARD_FACTOR x the limit, the
# limit + GUARD_PLUS s) of wall time. At load 4 on 2 cores a CPU second took 2-2.5 wall seconds;
# past the guard a run is cut and says that its answer may not repeat (``guard_hit``).
GUARD_FACTOR, GUARD_PLUS = 4.0, 10.0


def guard_seconds(limit: float) -> float:
    """Wall seconds of a deterministic limit of ``limit`` deterministic seconds (see GUARD_FACTOR)."""
    return max(GUARD_FACTOR * limit, limit + GUARD_PLUS)


def process_age() -> float:
    """Seconds since this process started (Linux: its start time in ``/proc/self/stat``, in clock
    ticks since boot, against the boot-time clock; 0.0 where the system does not say)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(b")") + 2:].split()[19])  # field 22, counted after the command's name
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


class Deadline:
    def __init__(self, seconds: float | None = None, deterministic: bool = False,
                 parent: Deadline | None = None, wall: float | None = None, elapsed: float = 0.0,
                 guard: float | None = None) -> None:
        if seconds is not None and not seconds >= 0:  # NaN too
            raise ValueError(f"a time limit must be a number >= 0, got {seconds}")
        self.deterministic: bool = parent.deterministic if parent is not None else deterministic
        self.parent = parent
        self.root: Deadline = parent.root if parent is not None else self
        self.seconds = math.inf if seconds is None else float(seconds)  # budget at creation
        if parent is not None:
            self.seconds = min(self.seconds, parent.left())
        now = time.perf_counter() - (elapsed if parent is None else 0.0)  # (a root: from ``elapsed`` ago)
        if not self.deterministic:
            self.end = now + self.seconds
        elif parent is None:  # the guard: far past the limit's wall time (``guard`` seconds if given)
            self.end = now + (guard_seconds(self.seconds) if guard is None else guard)
        else:  # a part's guard: its parent's, or ``wall`` seconds from now if sooner
            self.end = parent.end if wall is None else min(parent.end, now + max(wall, 0.0))
        self.spent = 0.0  # deterministic mode: deterministic seconds spent here and in parts
        self.halted = False  # halt(): this part and its parts are over
        if parent is None:
            self.reason: str | None = None  # why it was cancelled (e.g. "interrupted")
            self.hooks: list[tuple[Deadline, Callable[[], None]]] = []  # (the part it stops with, hook)
            self.guard_hit = False  # deterministic: some work was cut by the wall-clock guard
            self.lock = threading.Lock()

    @property
    def limited(self) -> bool:
        return self.seconds != math.inf

    @property
    def cancelled(self) -> str | None:
        return self.root.reason

    def left(self) -> float:
        """Seconds left (deterministic: deterministic seconds); ``inf`` without a limit, 0 once cancelled."""
        if self.root.reason is not None or self._halted():
            return 0.0
        if self.deterministic:
            if self.end <= time.perf_counter():
                self.hit_guard()
                return 0.0
            return max(self.seconds - self.spent, 0.0)
        return max(self.end - time.perf_counter(), 0.0) if self.limited else math.inf

    def _halted(self) -> bool:
        node: Deadline | None = self
        while node is not None:
            if node.halted:
                return True
            node = node.parent
        return False

    def _within(self, part: Deadline) -> bool:
        """This deadline is ``part`` or was cut from it."""
        node: Deadline | None = self
        while node is not None and node is not part:
            node = node.parent
        return node is part

    def wall_left(self) -> float:
        """Wall seconds to the end: in deterministic mode to the guard (``guard_seconds`` of the limit,
        counted from the root's making, or a part's sooner guard), which solvers that stop on their own clock
        are given as their wall-clock limit (and report with ``hit_guard``). ``inf`` without a
        limit, 0 once cancelled."""
        if self.root.reason is not None:
            return 0.0
        return max(self.end - time.perf_counter(), 0.0) if self.end != math.inf else math.inf

    def hit_guard(self) -> None:
        """Deterministic mode: say that work stopped at the wall-clock guard, not on its budget (the
        registry reports it: such an answer depends on the load and may not repeat)."""
        self.root.guard_hit = True

    def seconds_left(self) -> float | None:
        """``left()`` as the float-or-None seconds of APIs that take no Deadline (the vector-clock
        models); None without a limit."""
        return self.left() if self.limited or self.root.reason is not None else None

    def expired(self) -> bool:
        return self.left() <= 0.0

    def room(self, seconds: float) -> bool:
        """Whether work of ``seconds`` (deterministic seconds in that mode) ends before the deadline."""
        left = self.left()
        return left > 0.0 and left >= seconds

    def part(self, seconds: float | None, wall: float | None = None) -> Deadline:
        """A sub-budget of at most ``seconds`` (None: all that is left) whose spending counts here too;
        deterministic mode: with its wall-clock guard ``wall`` seconds from now if that is sooner.
        A negative ``seconds`` (what is left, less a window, once cancelled or spent) is an empty
        part, not an error: a cancelled deadline is a normal state for every planner."""
        return Deadline(seconds if seconds is None or not seconds < 0 else 0.0, parent=self, wall=wall)

    def share(self, fraction: float) -> Deadline:
        """A sub-budget of ``fraction`` of what is left (the whole of an unlimited deadline)."""
        return self.part(fraction * self.left() if self.limited else None)

    def spend(self, seconds: float) -> None:
        """Deterministic mode: charge ``seconds`` of deterministic work here and to every parent."""
        node: Deadline | None = self
        while node is not None:
            node.spent += seconds
            node = node.parent

    def cancel(self, reason: str = "interrupted") -> None:
        """Expire the whole tree and stop every registered solver (safe from any thread)."""
        root = self.root
        with root.lock:
            if root.reason is not None:
                return
            root.reason = reason
            hooks = [hook for _, hook in root.hooks]
        for hook in hooks:
            hook()

    def halt(self) -> None:
        """Expire this part and its parts, and stop the solvers registered under them (any thread)."""
        root = self.root
        with root.lock:
            if self.halted:
                return
            self.halted = True
            hooks = [hook for node, hook in root.hooks if node._within(self)]
        for hook in hooks:
            hook()

    @contextmanager
    def on_cancel(self, hook: Callable[[], None]) -> Iterator[None]:
        """Run ``hook`` (e.g. a solver's stop) if the deadline is cancelled, or a part it was cut
        from halted, while inside the block."""
        root = self.root
        entry = (self, hook)
        with root.lock:
            root.hooks.append(entry)
            now = root.reason is not None or self._halted()
        if now:
            hook()
        try:
            yield
        finally:
            with root.lock:
                root.hooks.remove(entry)


class Pacer:
    """A loop of passes of about the same cost on ``deadline`` (greedy passes, hill-climbing steps):
    ``another()`` at the end of each pass says whether one more fits in what is left, at the mean
    pass so far (passes timed from one call to the next, the first from the Pacer's making; in
    deterministic mode at ``cost``, the deterministic seconds the caller spends per pass). So no
    pass starts that would end late, and one slow pass on a loaded machine does not end the loop."""

    def __init__(self, deadline: Deadline, cost: float = 0.0) -> None:
        self.deadline, self.cost = deadline, cost
        self.passes, self.total, self.mark = 0, 0.0, time.perf_counter()

    def another(self) -> bool:
        now = time.perf_counter()
        self.passes, self.total, self.mark = self.passes + 1, self.total + now - self.mark, now
        return self.deadline.room(self.cost if self.deadline.deterministic else self.total / self.passes)


_CURRENT: ContextVar[Deadline | None] = ContextVar("optplan_deadline", default=None)


def current() -> Deadline:
    """The deadline of the planner running in this thread; outside one, no limit."""
    return _CURRENT.get() or Deadline(None)


def planning() -> Deadline | None:
    """The deadline of the planner running in this thread, or None outside one (``current()`` says
    "no limit" there): code that decides once per run, such as the kernel gate, tells the two apart."""
    return _CURRENT.get()


@contextmanager
def running(deadline: Deadline) -> Iterator[None]:
    """Within the block, ``current()`` is ``deadline`` (the planner registry runs every planner so)."""
    token = _CURRENT.set(deadline)
    try:
        yield
    finally:
        _CURRENT.reset(token)
