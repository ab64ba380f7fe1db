"""``optplan study``: every instance x every planner, resumable, on a local pool or a dask cluster."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from optplan.core.buffer import Memory
from optplan.core.errors import OptplanError
from optplan.core.problem import Problem
from optplan.study.instances import Instance, discover
from optplan.study.results import COLUMNS, FOUND, Row, read_rows, write_rows
from optplan.study.tasks import Task

if TYPE_CHECKING:
    from optplan.report.progress import StudyProgress

MakeProgress = Callable[[int, int], "StudyProgress"]
OUTPUTS = ("summary.md", "gaps.png", "gaps.svg", "time.png", "time.svg")


@dataclass
class Study:
    paths: list[str]
    out_dir: Path
    planners: list[str] | None = None  # None: every heuristic, and auto as the exact reference
    time_limit: float | None = 60.0
    memories: tuple[Memory, ...] | None = None  # replaces each instance's memories (--memory)
    memory_label: str = ""  # how --memory was spelled, recorded in every row
    executor: str = "local"  # "local" or "dask"
    scheduler: str | None = None
    processes: int | None = None  # runs at a time (default: one per core)
    workers: int = 1  # threads of one run
    skipped: list[Path] = field(default_factory=list)
    command: str = ""  # how the study was started, for summary.md
    load: list[float] = field(default_factory=list)  # 1-minute load average when runs started and ended
    seconds: float = 0.0  # wall time of the runs


def planner_names(names: list[str] | None) -> list[str]:
    from optplan import registry

    chosen = names or registry.heuristic_names() + ["auto"]
    for n in chosen:
        registry.get(n)  # unknown names fail before anything runs
    return list(dict.fromkeys(chosen))


def version() -> str:
    """optplan's version, with the commit when running from a git checkout (results name their code)."""
    import optplan

    here = Path(optplan.__file__).resolve().parents[1]
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "optplan"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return optplan.__version__
    if out.returncode != 0:
        return optplan.__version__
    return f"{optplan.__version__}+g{out.stdout.strip()}{'.dirty' if dirty else ''}"


def machine(study: Study) -> str:
    """The machine a study ran on: results without it cannot be compared."""
    import platform

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else platform.processor()
    load = " and ".join(f"{v:.1f}" for v in study.load)
    return (f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, Python {platform.python_version()}; "
            f"load average {load or 'n/a'} when the runs started and ended; {study.processes or os.cpu_count()} runs at a time, "
            f"{study.workers} thread(s) each, executor {study.executor}")


def _finished(row: Row, study: Study) -> bool:
    """A row a resumed study keeps: a run that ended (not ERROR) under the same settings."""
    limit = row.get("time_limit") or None
    return (row["status"] != "ERROR" and (None if limit is None else float(str(limit))) == study.time_limit
            and (row.get("memory") or "") == study.memory_label)


def _load(inst: Instance, study: Study) -> Problem:
    from optplan.formats import read_problem

    problem = read_problem(inst.path)
    if study.memories is not None:
        problem = replace(problem, memories=study.memories)
    return problem


def run(study: Study, progress: MakeProgress | None = None) -> tuple[list[Row], int]:
    """Run what ``DIR/runs.csv`` does not hold yet; write summary and plots. Returns every row and
    how many runs this call made. ``progress(runs, instances)`` makes the object told of each run."""
    instances, study.skipped = discover(study.paths)
    if not instances:
        raise OptplanError(f"no problem files (.json, .csv) in {', '.join(study.paths)}")
    names = planner_names(study.planners)
    study.out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = study.out_dir / "runs.csv"
    rows = read_rows(csv_path)
    kept = {(r["instance"], r["planner"]) for r in rows if _finished(r, study)}
    rows = [r for r in rows if (r["instance"], r["planner"]) in kept or r["instance"] not in
            {i.label for i in instances} or r["planner"] not in names]
    todo = [(i, n) for i in instances for n in names if (i.label, n) not in kept]
    if not todo and all((study.out_dir / o).exists() for o in OUTPUTS):
        return rows, 0
    jobs = _jobs(todo, study)
    if jobs:
        study.load, t0 = [os.getloadavg()[0]], time.perf_counter()
        _execute(jobs, rows, csv_path, study, progress)
        study.load.append(os.getloadavg()[0])
        study.seconds = time.perf_counter() - t0
    _report(rows, study)
    return rows, len(jobs)


def _jobs(todo: list[tuple[Instance, str]], study: Study) -> list[tuple[Problem, Task]]:
    """Every problem is read (and checked) before anything runs; the longest runs go first so that
    the last ones to finish are short."""
    from optplan import registry

    problems = {i.label: _load(i, study) for i, _ in dict.fromkeys((i, None) for i, _ in todo)}
    timed = {n for n in {n for _, n in todo} if "time_limit" in registry.get(n).options}  # type: ignore[attr-defined]
    jobs = [(problems[i.label], Task(i.label, n, study.time_limit, study.workers)) for i, n in todo]
    jobs.sort(key=lambda j: (j[1].planner not in timed, -len(j[0].buffers)))
    return jobs


def _execute(jobs: list[tuple[Problem, Task]], rows: list[Row], csv_path: Path, study: Study,
             progress: MakeProgress | None) -> None:
    from optplan.study import executors

    left: dict[str, int] = {}
    for _, t in jobs:
        left[t.instance] = left.get(t.instance, 0) + 1
    tracker = progress(len(jobs), len(left)) if progress else None
    stamp = {"version": version(), "memory": study.memory_label}
    try:
        def done(task: Task, row: Row) -> None:
            before = min((int(str(r["peak"])) for r in rows if r["instance"] == task.instance and r["status"] in FOUND), default=None)
            rows.append({**dict.fromkeys(COLUMNS, ""), **row, **stamp})
            write_rows(csv_path, rows)
            left[task.instance] -= 1
            peak = int(str(row["peak"])) if row.get("status") in FOUND else None
            if tracker is not None:
                tracker.finished(row, left[task.instance] == 0, peak is not None and (before is None or peak < before))

        if study.executor == "dask":
            executors.run_dask(jobs, done, study.scheduler, study.processes)
        elif study.executor == "local":
            executors.run_local(jobs, done, study.processes)
        else:
            raise OptplanError(f"unknown executor {study.executor!r}; use 'local' or 'dask'")
    finally:
        if tracker is not None:
            tracker.stop()


def _provenance(study: Study) -> list[str]:
    """Command and machine of the last call that ran anything, kept in DIR/study.json so that a
    summary drawn again later still names them."""
    import json

    meta = study.out_dir / "study.json"
    if study.load and study.command:
        from optplan.formats import write_text

        doc = {"command": study.command, "machine": machine(study), "runs_seconds": round(study.seconds, 1)}
        write_text(meta, json.dumps(doc, indent=1) + "\n")
    elif meta.exists():
        doc = json.loads(meta.read_text())
    else:
        return []
    return [f"Command: `{doc['command']}`", "", f"Machine: {doc['machine']}; the runs took {doc['runs_seconds']} s.", ""]


def _report(rows: list[Row], study: Study) -> None:
    from optplan.study.plots import draw_study
    from optplan.study.summary import summary_markdown

    write_rows(study.out_dir / "runs.csv", rows)  # derived columns final (also after a run-free resume)
    from optplan.formats import write_text

    head = _provenance(study)
    write_text(study.out_dir / "summary.md", summary_markdown(rows, head))
    draw_study(rows, study.out_dir)
