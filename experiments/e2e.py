"""End to end, as a user runs the tools: one process per run, timed from start to exit.

The benchmarks' end-to-end modes (``bench_search.py --e2e``, ``bench_robust.py --e2e``,
``bench_minimize.py --e2e``, ``bench_peers.py``) share these helpers. A run is a whole process:
``optplan solve FILE --json -o PLAN`` (this checkout's code: ``PYTHONPATH`` is the repository
root), MiniMalloc's command line binary (``MINIMALLOC_BIN``), idealloc's (``IDEALLOC_BIN``) or
OmniMalloc through ``omnimalloc_peer.py``. The wall time is ``time.perf_counter`` around the
process, start to exit (interpreter start-up, imports, reading the file, the engine, writing the
plan); the peak RSS is the largest sum of the resident sets of the process and its descendants,
sampled every 20 ms with psutil (optplan's forked workers share pages with their parent, so the
sum overcounts them a little; ``ru_maxrss`` cannot be used: a child's high-water mark starts at
its forking parent's, this benchmark's own ~100 MiB). The engine-only figure is what the tool reports of itself: optplan's JSON
``seconds``, MiniMalloc's solve time on stderr.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optplan.core.problem import Problem

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Run:
    """One process: its wall seconds (start to exit), peak RSS (MiB), exit code, output and error
    text, and whether it was killed at the timeout."""

    seconds: float
    rss_mib: float
    returncode: int
    out: str
    err: str
    killed: bool


def timed(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` to its exit (killed, with its process group, ``timeout`` seconds after the
    start), timing it and reading its peak RSS from ``os.wait4``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        done = threading.Event()
        peak = [0]
        sampler = threading.Thread(target=_sample_rss, args=(proc.pid, done, peak), daemon=True)
        sampler.start()
        _, status, _ = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        done.set()
        timer.cancel()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(seconds, peak[0] / 2**20, proc.returncode, out.read(), err.read(), killed.is_set())


def _sample_rss(pid: int, done: threading.Event, peak: list[int]) -> None:
    """The largest summed RSS of ``pid`` and its descendants until ``done`` (into ``peak[0]``)."""
    import psutil

    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not done.is_set():
        total = 0
        try:
            for proc in [root, *root.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass
        except psutil.Error:
            return
        peak[0] = max(peak[0], total)
        done.wait(0.02)


def optplan_env() -> dict[str, str]:
    """The environment of an optplan process: this checkout's code first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@dataclass(frozen=True)
class Solved:
    """What one tool's process gave: the run, the plan's peak (None: no plan), the tool's status
    word, its proven lower bound (None: not reported) and its own engine seconds."""

    run: Run
    peak: int | None
    status: str
    bound: int | None
    engine: float | None


def optplan(path: Path, *, capacity: int | None, objective: str, time_limit: float, planner: str = "auto",
            workers: int | None = None, grace: float = 30.0) -> Solved:
    """``optplan solve`` as a process; the plan is written to a temporary CSV, as a user would."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "optplan.cli", "solve", str(path), "--json", "--planner", planner,
               "--objective", objective, "--time-limit", f"{time_limit:g}", "-o", str(Path(tmp, "plan.csv"))]
        if capacity is not None:
            cmd += ["--capacity", str(capacity)]
        if workers:
            cmd += ["--workers", str(workers)]
        run = timed(cmd, time_limit + grace, optplan_env())
    try:
        got = json.loads(run.out)
    except json.JSONDecodeError:
        return Solved(run, None, "KILLED" if run.killed else f"ERROR {_last_line(run.err)}", None, None)
    peaks = got.get("peak") or {}
    found = got.get("status") in ("OPTIMAL", "FEASIBLE")  # an UNKNOWN plan's JSON says peak 0
    peak = next(iter(peaks.values())) if peaks and found else None
    bound = next(iter((got.get("lower_bound") or {}).values()), None)
    return Solved(run, peak, got.get("status", "?"), bound, got.get("seconds"))


def minimalloc(binary: str, path: Path, capacity: int, time_limit: float) -> Solved:
    """MiniMalloc's binary as a process (``--timeout``); peak None unless it wrote a plan."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "plan.csv")
        run = timed([binary, f"--capacity={capacity}", f"--input={path}", f"--output={out}",
                     f"--timeout={time_limit:g}s"], time_limit + 10)
        peak = None
        if run.returncode == 0 and out.exists() and out.stat().st_size > 0:
            peak = _csv_peak(out)
    match = re.match(r"\s*([0-9.]+)", run.err)
    engine = float(match.group(1)) if match else None
    return Solved(run, peak, "FEASIBLE" if peak is not None else ("KILLED" if run.killed else "NOT FOUND"), None, engine)


def _csv_peak(path: Path) -> int:
    """The height of a plan CSV with ``size`` and ``offset`` columns."""
    import numpy as np

    with open(path) as f:
        head = f.readline().strip().split(",")
    cols = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2, dtype=np.int64,
                      usecols=(head.index("size"), head.index("offset")))
    return int((cols[:, 0] + cols[:, 1]).max()) if len(cols) else 0


def omnimalloc(path: Path, allocator: str, time_limit: float, threads: int = 2, kill_after: float | None = None) -> Solved:
    """OmniMalloc's ``allocator`` through ``omnimalloc_peer.py``, as a process (killed
    ``kill_after`` seconds after its start; default: the limit + 120 s)."""
    run = timed([sys.executable, str(HERE / "omnimalloc_peer.py"), str(path), "--allocator", allocator,
                 "--time-limit", f"{time_limit:g}", "--threads", str(threads)],
                time_limit + 120 if kill_after is None else kill_after)
    try:
        got = json.loads(run.out.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return Solved(run, None, "KILLED" if run.killed else f"ERROR {_last_line(run.err)}", None, None)
    return Solved(run, got["peak"], "OPTIMAL" if got["proven"] else "FEASIBLE", None, got["seconds"])


def _last_line(text: str) -> str:
    """The last line of an error text (a traceback's message), shortened for a table cell."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][-200:].replace("|", "/") if lines else "(no message)"


def write_csv(problem: Problem, path: Path) -> Path:
    """A single-memory scalar problem as MiniMalloc's CSV at ``path``, its rows in an order drawn
    from the file's name (``gen_instances.fair_csv``: the same as the generator's command line
    writes for an instance of that name)."""
    from gen_instances import fair_csv

    path.write_text(fair_csv(problem, path.stem))
    return path


def uptime() -> str:
    """``uptime``'s line (the load averages over 1, 5 and 15 minutes)."""
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def quantile(xs: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of ``xs``; inf entries count as the slowest."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))] if xs else math.nan


def spread(xs: list[float]) -> str:
    """``median m, p90 p, max x`` of ``xs`` (``inf``: a run that did not finish)."""
    if not xs:
        return "no runs"
    return f"median {quantile(xs, 0.5):.3f}, p90 {quantile(xs, 0.9):.3f}, max {max(xs):.3f}"


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else math.nan


def feasible_rows(cases: list[tuple[str, Path]], capacity: int, time_limit: float, repeat: int,
                  planner: str = "auto", log=print) -> list[str]:
    """Each case at ``capacity`` (objective feasible): ``optplan solve`` and MiniMalloc's binary
    (``MINIMALLOC_BIN``, when set) as processes, one after the other, their order alternating
    from one repetition to the next; per instance the median over ``repeat`` runs. Returns the
    table (markdown lines) and its summary: packed counts and the time ratios end to end and
    engine only (optplan / MiniMalloc: median, p90, max; an instance optplan did not pack counts
    as infinitely slow)."""
    binary = os.environ.get("MINIMALLOC_BIN")
    lines = [f"| instance | optplan `{planner}` | peak | optplan s end to end | engine s | RSS MiB | "
             "MiniMalloc | MiniMalloc s end to end | engine s | RSS MiB | ratio end to end | ratio engine |",
             "| --- " * 12 + "|"]
    ours: dict[str, list[Solved]] = {}
    theirs: dict[str, list[Solved]] = {}
    for r in range(repeat):
        for label, path in cases:
            first_ours = (r % 2 == 0)
            for tool in ("optplan", "minimalloc") if first_ours else ("minimalloc", "optplan"):
                if tool == "optplan":
                    ours.setdefault(label, []).append(optplan(path, capacity=capacity, objective="feasible",
                                                              time_limit=time_limit, planner=planner))
                elif binary:
                    theirs.setdefault(label, []).append(minimalloc(binary, path, capacity, time_limit))
            log(f"  {label} run {r + 1}: optplan {ours[label][-1].run.seconds:.2f} s {ours[label][-1].status}"
                + (f", MiniMalloc {theirs[label][-1].run.seconds:.2f} s {theirs[label][-1].status}" if binary else ""))
    packed = lambda s: s.peak is not None and s.peak <= capacity  # noqa: E731
    e2e_ratios: list[float] = []
    engine_ratios: list[float] = []
    counts = {"optplan": 0, "minimalloc": 0}
    missed: list[str] = []
    for label, _ in cases:
        mine, peer = ours[label], theirs.get(label, [])
        ok = all(packed(s) for s in mine)
        m_wall = _median([s.run.seconds for s in mine]) if ok else math.inf
        m_engine = _median([s.engine or math.inf for s in mine]) if ok else math.inf
        counts["optplan"] += ok
        row = (f"| {label} | {'packed' if ok else ' / '.join(sorted({s.status for s in mine}))} | "
               f"{mine[-1].peak if mine[-1].peak is not None else '-'} | {_median([s.run.seconds for s in mine]):.2f} | "
               f"{_median([s.engine or math.nan for s in mine]):.2f} | {max(s.run.rss_mib for s in mine):.0f} | ")
        if peer:
            p_ok = all(packed(s) for s in peer)
            counts["minimalloc"] += p_ok
            p_wall, p_engine = _median([s.run.seconds for s in peer]), _median([s.engine or math.nan for s in peer])
            if p_ok:
                e2e_ratios.append(m_wall / p_wall)
                engine_ratios.append(m_engine / p_engine if p_engine else math.inf)
                if not ok:
                    missed.append(label)
            row += (f"{'packed' if p_ok else 'not packed'} | {p_wall:.2f} | {p_engine:.2f} | "
                    f"{max(s.run.rss_mib for s in peer):.0f} | "
                    + (f"{m_wall / p_wall:.2f} | {m_engine / p_engine:.2f} |" if p_ok and ok else "- | - |"))
        else:
            row += "- | - | - | - | - | - |"
        lines.append(row)
    lines += ["", f"packed at {capacity}: optplan {counts['optplan']} of {len(cases)}"
              + (f", MiniMalloc {counts['minimalloc']} of {len(cases)}" if binary else "")
              + (f"; MiniMalloc packed and optplan did not: {', '.join(missed)}" if missed else "")]
    if e2e_ratios:
        lines.append(f"time ratio optplan / MiniMalloc on the {len(e2e_ratios)} instances MiniMalloc packed "
                     f"(optplan unpacked = inf): end to end {spread(e2e_ratios)}; engine only {spread(engine_ratios)}")
        slow = [lab for lab, _ in cases if lab in ours and theirs.get(lab) and all(packed(s) for s in theirs[lab])
                and _median([s.run.seconds for s in ours[lab]]) > max(2 * _median([s.run.seconds for s in theirs[lab]]),
                                                                       _median([s.run.seconds for s in theirs[lab]]) + 0.5)]
        lines.append(f"slower than max(2x MiniMalloc, MiniMalloc + 0.5 s) end to end: {', '.join(slow) or 'none'}")
    return lines


def header(argv: list[str], note: str) -> list[str]:
    """The command (with MINIMALLOC_BIN / IDEALLOC_BIN when set), the code's commit and the load."""
    env = " ".join(f"{k}={os.environ[k]}" for k in ("MINIMALLOC_BIN", "IDEALLOC_BIN") if os.environ.get(k))
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            check=False).stdout.strip()
    argv = [f"experiments/{Path(argv[0]).name}", *argv[1:]]
    return ["```", (env + " " if env else "") + "python " + " ".join(argv), "```", "",
            f"code: {commit} (this checkout, as processes: `python -m optplan.cli solve ... --json -o plan.csv`); "
            f"{os.cpu_count()} cores shared with other sessions. {note}", "", f"uptime before: {uptime()}", ""]
