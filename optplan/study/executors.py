"""Where a study's runs execute: a local process pool (the default, nothing to install) or a
dask.distributed cluster (``pip install 'optplan[dask]'``; a LocalCluster when no scheduler is given).

Both take (problem, task) pairs and call ``done(task, row)`` in the calling thread as each run finishes,
in completion order. A run whose worker process dies is run again once; a second loss is an ERROR row.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from optplan.core.errors import OptplanError
from optplan.core.problem import Problem
from optplan.study.tasks import Task, run_task

Done = Callable[[Task, dict[str, object]], None]
Job = tuple[Problem, Task]
RunFn = Callable[[Problem, Task], dict[str, object]]
RETRIES = 1  # a lost worker's run is tried once more


def _lost(task: Task, why: str) -> dict[str, object]:
    return {"instance": task.instance, "planner": task.planner, "status": "ERROR", "message": why,
            "time_limit": "" if task.time_limit is None else task.time_limit}


def run_local(jobs: Sequence[Job], done: Done, processes: int | None = None, fn: RunFn = run_task) -> None:
    """Runs in ``processes`` spawned worker processes (default: one per core). ``fn`` is for tests."""
    processes = processes or os.cpu_count() or 1
    pending = list(jobs)
    tries = {id(job): 0 for job in pending}
    while pending:
        with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures: dict[Future, Job] = {pool.submit(fn, *job): job for job in pending}
            pending = []
            while futures:
                finished, _ = wait(futures, return_when=FIRST_COMPLETED)
                for f in finished:
                    job = futures.pop(f)
                    try:
                        row = f.result()
                    except BrokenProcessPool:  # this run's or a neighbour's process died: all in flight again
                        tries[id(job)] += 1
                        if tries[id(job)] > RETRIES:
                            done(job[1], _lost(job[1], "worker process lost twice (killed, or out of memory?)"))
                        else:
                            pending.append(job)
                        continue
                    done(job[1], row)


def run_dask(jobs: Sequence[Job], done: Done, scheduler: str | None = None, processes: int | None = None,
             fn: RunFn = run_task) -> None:
    """The same runs as tasks of a dask.distributed cluster. The scheduler re-runs a task whose worker
    died (``distributed.scheduler.allowed-failures`` times) before reporting it lost."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
        from distributed import KilledWorker
    except ImportError:
        raise OptplanError("--executor dask needs dask.distributed: pip install 'optplan[dask]'") from None
    import dask

    cluster = None
    with dask.config.set({"distributed.scheduler.allowed-failures": RETRIES}):
        if scheduler is None:
            cluster = LocalCluster(n_workers=processes or os.cpu_count() or 1, threads_per_worker=1,
                                   processes=True, dashboard_address=None)
        try:
            with Client(cluster if cluster is not None else scheduler) as client:
                futures = {}
                for problem, task in jobs:  # each task carries its problem: data scattered to a worker dies with it
                    fut = client.submit(fn, problem, task, pure=False,
                                        key=f"optplan-run-{task.instance}-{task.planner}-{os.urandom(4).hex()}")
                    futures[fut] = task
                for fut in as_completed(futures):
                    task = futures[fut]
                    try:
                        done(task, fut.result())
                    except KilledWorker:
                        done(task, _lost(task, "dask worker lost on every try (killed, or out of memory?)"))
        except OSError as e:
            raise OptplanError(f"cannot reach the dask scheduler {scheduler}: {e}") from None
        finally:
            if cluster is not None:
                cluster.close()
