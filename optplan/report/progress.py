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

from optplan.core.objective import BENEFIT, Goal, Objective
from optplan.core.plan import Plan
from optplan.core.problem import Problem
from optplan.core.sizes import size_text, sizes_text
from optplan.report.summary import gap_words

QUIET = 10.0  # seconds between plain lines when nothing improves


def _gap(g: object) -> str:
    return "n/a" if not isinstance(g, (int, float)) else "<0.01%" if 0 < g < 5e-5 else f"{100 * g:.2f}%"


class _Plain:
    """Timestamped lines on a non-terminal console; a heartbeat thread fills silences of QUIET s."""

    def __init__(self, console: Console, heartbeat: Callable[[], str]) -> None:
        self.console, self.heartbeat = console, heartbeat
        self.t0 = self.last = time.monotonic()
        self.lines = 0  # printed so far
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def line(self, text: str) -> None:
        with self.lock:
            if self.stopped.is_set():  # a member thread's late report: the answer may be out already
                return
            self.last = time.monotonic()
            self.lines += 1
            self.console.print(f"[{self.last - self.t0:7.1f} s] {text}", markup=False, highlight=False)

    def _beat(self) -> None:
        while not self.stopped.wait(1.0):
            if time.monotonic() - self.last >= QUIET:
                self.line(self.heartbeat())

    def stop(self) -> None:
        with self.lock:
            self.stopped.set()
        self.thread.join()


class Reading:
    """A progress report in words and bytes: each memory's peak, then the bound and gap of the
    objective's quantity that is not at its bound yet (benefit kept for fast-first, the peak of the
    memory the objective weighs most otherwise), never the objective's packed value.

    A report is ``{"best", "bound", "gap", "elapsed"}`` (the objective's value and bound) and, where
    the planner has them, ``"peak"`` and ``"lower"`` (bytes per memory); without them the peaks are
    read back from the value (the default weights are powers of a radix above any peak)."""

    def __init__(self, problem: Problem, objective: Objective) -> None:
        self.problem, self.objective = problem, objective
        self.weights = objective.weights(problem)
        weighed = [m for m in problem.memory_names if self.weights[m] > 0]
        self.lead = max(weighed, key=lambda m: self.weights[m]) if weighed else None  # the most weighed memory

    def text(self, info: dict) -> str:
        best, bound = info.get("best"), info.get("bound")
        if best is None:
            return self._waiting(bound)
        peak = info.get("peak") or self._peaks(best)
        shown = ", ".join(f"{m} {size_text(v)}" for m, v in peak.items()) if peak else "-"
        return f"peak {shown}; {self._quantity(best, bound, info)}"

    def _waiting(self, bound: object) -> str:
        caps = {m.name: m.capacity for m in self.problem.memories if m.capacity is not None}
        within = f"a plan within {sizes_text(caps)}" if caps else "a first plan"
        lead = self._lead_bytes(bound) if isinstance(bound, int) else None
        return f"looking for {within}; none yet" + ("" if lead is None else f" (bound {self.lead} {size_text(lead)})")

    def _quantity(self, best: int, bound: object, info: dict) -> str:
        """The bound and gap of the first quantity not at its bound, named and in bytes."""
        if not self.objective.optimizes:
            return "a plan within the capacities"
        if not isinstance(bound, int):
            return "bound -"
        parts = self.objective.components(self.problem, best, bound)
        name, v, b = next(((n, v, b) for n, v, b in parts if (v < b if n == BENEFIT else v > b)), parts[0])
        if name == BENEFIT:
            gap = None if v <= 0 else max(b / v - 1.0, 0.0)
            return f"benefit kept {size_text(v)}, at most {size_text(b)}, gap {_gap(gap)}"
        gap = 0.0 if v <= b else None if b <= 0 else v / b - 1.0
        weighed = [m for m in self.problem.memory_names if self.weights[m] > 0]
        if self.objective.goal is Goal.WEIGHTED and len(weighed) > 1:  # a sum: no one memory's bytes
            lowers = {m: v for m, v in (info.get("lower") or {}).items() if m in weighed}
            return (f"bound {sizes_text(lowers)}, " if lowers else "") + f"weighted sum gap {_gap(gap)}"
        lower = (info.get("lower") or {}).get(self.lead) if self.lead is not None else None
        bound_bytes = lower if isinstance(lower, int) else None if self.lead is None else b // self.weights[self.lead]
        if self.lead is None or bound_bytes is None:
            return f"gap {_gap(gap)}"
        return f"bound {self.lead} {size_text(bound_bytes)}, gap {_gap(gap)}"

    def _lead_bytes(self, value: int) -> int | None:
        """The most weighed memory's bytes in a value (or bound) of the objective."""
        if self.lead is None:
            return None
        w, _ = self.objective.split(self.problem, value)
        return w // self.weights[self.lead]

    def _peaks(self, value: int) -> dict[str, int]:
        """Per-memory peaks read back from a value: the weighed memories, most weighed first."""
        w, _ = self.objective.split(self.problem, value)
        out = {}
        for m in sorted((m for m in self.problem.memory_names if self.weights[m] > 0), key=lambda m: -self.weights[m]):
            out[m], w = divmod(w, self.weights[m])
        return {m: out[m] for m in self.problem.memory_names if m in out}

    def answer(self, plan: Plan) -> str:
        """The last line: the answer's status, peaks, bounds and gap (an OPTIMAL plan's gap is 0; no
        gap where the objective optimizes nothing: a plan within the capacities is the answer)."""
        head = f"{plan.status.value} in {plan.seconds:.2f} s"
        if not plan.found:
            return f"{head}: {plan.message or 'no plan'}"
        per = "; ".join(f"{m} peak {size_text(plan.peak[m])}, bound {size_text(plan.lower_bound.get(m))}"
                        for m in self.problem.memory_names if m in plan.peak)
        if not plan.objective.optimizes:
            return f"{head}: {per}; a plan within the capacities"
        return f"{head}: {per}; {gap_words(self.problem, plan)}"


class SolveProgress:
    """The ``progress`` callback of a planner (see ``Reading`` for what it reports): a ticking line
    on a terminal, a line per improvement elsewhere; ``answer(plan)``, the last line."""

    def __init__(self, console: Console, reading: Reading) -> None:
        self.console, self.reading = console, reading
        self.info: dict = {}
        self.bar: Progress | None = None
        self.plain: _Plain | None = None
        self.lock = threading.Lock()
        self.done = False
        if console.is_terminal:
            self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                console=console, transient=True)
            self.task = self.bar.add_task(f"solving: {reading.text({})}", total=None)
            self.bar.start()
        else:
            self.plain = _Plain(console, lambda: f"solving: {self._text()}")

    def _text(self) -> str:
        return self.reading.text(self.info)

    def __call__(self, info: dict) -> None:
        """A member's report: kept when it improves on the best or the bound shown (members report
        from several threads, each its own best: a worse one must not replace a better one)."""
        with self.lock:
            if self.done or not self._better(info):  # (done: a member thread reporting after the answer)
                return
            self.info = self._merged(info)
            text = self._text()
        if self.bar is not None:
            self.bar.update(self.task, description=text)
        elif self.plain is not None:
            self.plain.line(text)

    def _merged(self, info: dict) -> dict:
        """The best plan and the highest bound reported so far, each with its bytes per memory."""
        out = dict(self.info)
        best, bound = info.get("best"), info.get("bound")
        if best is not None and (out.get("best") is None or best < out["best"]):
            out.update(best=best, peak=info.get("peak"))
        if bound is not None and (out.get("bound") is None or bound > out["bound"]):
            out.update(bound=bound, lower=info.get("lower"))
        return out

    def _better(self, info: dict) -> bool:
        best, bound = info.get("best"), info.get("bound")
        old_best, old_bound = self.info.get("best"), self.info.get("bound")
        return ((best is not None and (old_best is None or best < old_best))
                or (bound is not None and (old_bound is None or bound > old_bound)))

    def stop(self) -> None:
        """The report is over: reports still coming from member threads are dropped (one printed
        after a run's answer landed in the next command's error output, under load)."""
        with self.lock:
            self.done = True
        if self.bar is not None:
            self.bar.stop()
        if self.plain is not None:
            self.plain.stop()

    def answer(self, plan: Plan) -> None:
        """The last line, after ``stop``: the answer (its time is ``plan.seconds``, the report's);
        in a log only below progress lines (an answer at once prints none)."""
        if self.bar is not None or (self.plain is not None and self.plain.lines):
            self.console.print(self.reading.answer(plan), markup=False, highlight=False)


class _BarsAndLine(Progress):
    """Bars, then one line of text under them (the latest best known), so that narrow terminals
    truncate the text rather than the bars."""

    line = ""

    def get_renderables(self):  # type: ignore[no-untyped-def]
        yield self.make_tasks_table(self.tasks)
        yield Text(self.line, overflow="ellipsis", no_wrap=True)


def _best_words(row: dict) -> str:
    """A run's plan in bytes: its peak and bound (one memory: the objective is the peak), or each
    memory's peak (several: the objective's value is a lexicographic number, no byte count)."""
    peaks = str(row.get("peaks") or "").split()
    who = f"by {row['planner']} ({row['status']})"
    if len(peaks) > 1:
        per = ", ".join(f"{m} {size_text(int(v))}" for m, v in (p.rsplit(":", 1) for p in peaks))
        return f"best {per} {who}"
    def text(v: object) -> str:
        return size_text(int(str(v))) if v not in ("", None) else "-"

    return f"best {text(row.get('peak'))} {who}, bound {text(row.get('lower_bound'))}"


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
            self.latest = f"{row['instance']}: {_best_words(row)}, {str(row['gap_of']) + ' ' if row.get('gap_of') else ''}" \
                          f"gap {_gap(row.get('gap_to_bound'))}"
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
