"""The life of a solve around its Deadline: signals, and the child processes that must not outlive it.

``interruptible(deadline)``: while ``solving``, the first SIGINT or SIGTERM cancels the deadline,
so every planner stops and returns its incumbent (the caller validates and writes it); before
that (reading the input) it raises KeyboardInterrupt. A second signal exits at once (128 + signal
number) after killing every child process group and removing their temporary directories,
writing nothing. The signal is noticed on a thread (``signal.set_wakeup_fd``) because the main
thread may sit inside a C++ solver that does not return to Python until it is told to stop.

``run_child``: a solver process (CBC, the HiGHS worker) in its own process group, so that a
terminal's Ctrl-C does not reach it behind our back and one ``killpg`` takes all it started; it
is stopped at the deadline (SIGINT first: CBC then reports its best solution), killed
``grace`` seconds later, and killed whenever this process leaves.

``temp_dir``: a temporary directory for a child's files (CBC's model, warm start, solution and
log), removed at the end of its block and, since the fast exit of a second signal skips every
``finally``, by that exit too, after the children are killed. A child or directory is started
and registered under one lock, so the fast exit misses none, and starts nothing after it.

``fork_member``: a portfolio member (a Python function) in a forked process of its own group,
racing the members of this process. It runs on a copy of its Deadline: cancelling or halting
the original stops the copy (a shared flag), so a signal here stops it and it returns its best
answer; it ignores the terminal's signals itself, and leaves when this process dies. What it hands
over with ``report(value)`` while it runs reaches the parent's ``partial`` callback at once, so
a member killed at its deadline still leaves what it had finished (the heuristic stage: a compiled
pass cannot be interrupted).
"""

from __future__ import annotations

import atexit
import multiprocessing as mp
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from optplan.core.deadline import Deadline

_groups: set[int] = set()  # process groups of running children
_temp_dirs: set[str] = set()  # temporary directories of running children (``temp_dir``)
_leaving = threading.Event()  # the fast exit has begun: nothing new is started or made
_lock = threading.Lock()  # held while a child or directory is started and registered
SIGNALS = (signal.SIGINT, signal.SIGTERM)


def kill_children() -> None:
    with _lock:
        groups = list(_groups)
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:  # (a group not formed yet: its leader alone)
            try:
                os.kill(g, signal.SIGKILL)
            except OSError:
                pass


atexit.register(kill_children)


def _forget_the_parents() -> None:
    """In a forked child: the parent's children and directories are the parent's, and its lock
    may have been held at the fork (``_registering``)."""
    global _lock, _leaving
    _lock, _leaving = threading.Lock(), threading.Event()
    _groups.clear()
    _temp_dirs.clear()


os.register_at_fork(after_in_child=_forget_the_parents)


@contextmanager
def _registering() -> Iterator[None]:
    """Start a child or make a directory and register it within the block, atomically for the fast
    exit: it then kills or removes it, whenever the signal came. Once the fast exit has begun,
    nothing is started: this thread waits for the process to end."""
    lock = _lock
    lock.acquire()
    if _leaving.is_set():
        lock.release()
        threading.Event().wait()
    try:
        yield
    finally:
        lock.release()


@contextmanager
def temp_dir(prefix: str) -> Iterator[str]:
    """A new temporary directory (in TMPDIR) for the block, removed after it, or by the fast exit."""
    with _registering():
        path = tempfile.mkdtemp(prefix=prefix)
        _temp_dirs.add(path)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        with _lock:
            _temp_dirs.discard(path)


def leave_now(code: int) -> None:
    """The fast exit: start nothing more, kill every child's group, remove every ``temp_dir``
    (``os._exit`` skips every ``finally``), and exit with ``code`` (a second signal, and the
    ``optplan`` command once its output is flushed)."""
    with _lock:
        _leaving.set()
    kill_children()
    with _lock:
        paths = list(_temp_dirs)
    for path in paths:
        for _ in range(20):  # a child being killed, or this process, may still add a file meanwhile
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.exists(path):
                break
            time.sleep(0.01)
    os._exit(code)


def run_child(args: Sequence[str], deadline: Deadline, grace: float = 1.0, stop: int = signal.SIGINT,
              log: IO | None = None, late: float = 0.0, wall: float | None = None,
              env: dict[str, str] | None = None) -> tuple[int, bool]:
    """Run ``args`` (in ``env``, default this process's) to its end, or a wall-clock deadline (+ ``late``
    seconds: the child's own limit should fire first) or its cancellation, then ``stop`` its group,
    and SIGKILL after ``grace``; or ``wall`` seconds (a deterministic deadline's cap, whose answer
    the caller drops), then SIGKILL at once. Returns its exit code and whether it was stopped."""
    with _registering():
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log or subprocess.DEVNULL,
                                stderr=subprocess.STDOUT if log else subprocess.DEVNULL, start_new_session=True, env=env)
        _groups.add(proc.pid)
    start = time.perf_counter()
    try:
        sent: float | None = None
        while True:
            try:
                return proc.wait(timeout=0.05), sent is not None
            except subprocess.TimeoutExpired:
                pass
            capped = wall is not None and time.perf_counter() - start > wall and deadline.cancelled is None
            over = (deadline.cancelled is not None or capped
                    or (deadline.limited and not deadline.deterministic and deadline.left() <= 0))
            if sent is None and over:
                late_ok = deadline.cancelled is None and late > 0 and not capped
                if late_ok and time.perf_counter() < deadline.end + late:
                    continue
                _signal_group(proc.pid, signal.SIGKILL if capped else stop)
                sent = time.perf_counter()
            elif sent is not None and time.perf_counter() - sent > grace:
                _signal_group(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        with _lock:
            _groups.discard(proc.pid)


class Member:
    """A function running in a forked process (``fork_member``); ``result()`` waits for its value."""

    def __init__(self, target: Callable[[Deadline], Any], deadline: Deadline, grace: float,
                 partial: Callable[[Any], None] | None = None) -> None:
        ctx = mp.get_context("fork")
        self.flag = ctx.RawValue("b", 0)
        self.deadline, self.grace, self.partial = deadline, grace, partial
        recv, send = ctx.Pipe(duplex=False)
        self.recv = recv
        self.proc = ctx.Process(target=_member_main, args=(target, deadline, self.flag, send, os.getpid()), daemon=True)
        with _registering():
            self.proc.start()
            self.pid: int = self.proc.pid  # type: ignore[assignment]  # (started: not None)
            try:
                os.setpgid(self.pid, self.pid)  # (the child does it too: whichever runs first)
            except OSError:
                pass
            _groups.add(self.pid)
        send.close()
        self._hook = deadline.on_cancel(self.stop)
        self._hook.__enter__()

    def stop(self) -> None:
        """Ask the member to stop and return what it has."""
        self.flag.value = 1

    def result(self) -> Any:
        """The member's return value; None if it died or raised (then ``error`` says why). It is
        killed when it outlives its deadline by ``grace`` seconds. Each value it passed to ``report``
        goes to ``partial`` (on this thread) as it arrives."""
        self.error: str | None = None
        value = None
        try:
            while True:
                if not self.recv.poll(0.05):
                    if self.proc.is_alive() and not (self.deadline.left() <= 0 and self._late()):
                        continue
                    if not self.recv.poll(0):  # (it may have answered just before it ended)
                        self.error = "the member's process ended without an answer"
                        break
                kind, got = self.recv.recv()
                if kind == "partial":
                    if self.partial is not None:
                        self.partial(got)
                    continue
                if kind == "error":
                    self.error = got
                else:
                    value = got
                break
        except (EOFError, OSError) as e:
            self.error = f"the member's process ended without an answer ({type(e).__name__})"
        finally:
            self._hook.__exit__(None, None, None)
            if self.proc.is_alive():
                _signal_group(self.pid, signal.SIGKILL)
            self.proc.join()
            with _lock:
                _groups.discard(self.pid)
            self.recv.close()
        return value

    def _late(self) -> bool:
        self.stop()
        if not hasattr(self, "_over_since"):
            self._over_since = time.perf_counter()
        return time.perf_counter() - self._over_since > self.grace


def fork_member(target: Callable[[Deadline], Any], deadline: Deadline, grace: float = 2.0,
                partial: Callable[[Any], None] | None = None) -> Member:
    """Start ``target(copy of deadline)`` in a forked process (see the module's docstring);
    ``partial`` receives, in this process, each value the member passes to ``report``."""
    return Member(target, deadline, grace, partial)


_reporting: list[Callable[[Any], None]] = []  # in a member: how ``report`` reaches the parent


def report(value: Any) -> None:
    """From within a member (any thread of it): hand ``value`` to the parent's ``partial`` now."""
    if not _reporting:
        raise RuntimeError("report() outside a forked member")
    _reporting[0](value)


def _member_main(target: Callable[[Deadline], Any], deadline: Deadline, flag: Any, send: Any, parent: int) -> None:
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    signal.set_wakeup_fd(-1)  # the parent's signal pipe is the parent's
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent hears the terminal and stops us by the flag
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    root = deadline.root
    root.hooks, root.lock = [], threading.Lock()  # the parent's solvers are not here; its lock may be held

    def watch() -> None:
        while True:
            if flag.value:
                deadline.cancel("stopped by the portfolio")
                return
            if os.getppid() != parent:  # orphaned: nobody waits for the answer
                os._exit(1)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True, name="optplan-member-watch").start()
    sending = threading.Lock()  # one message at a time through the pipe, whichever thread reports

    def put(message: tuple[str, Any]) -> None:
        with sending:
            send.send(message)

    _reporting[:] = [lambda value: put(("partial", value))]
    try:
        put(("ok", target(deadline)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which keeps going without us
        put(("error", f"{type(e).__name__}: {e}"))
    send.close()


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
                    leave_now(128 + sig)
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
