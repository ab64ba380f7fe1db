"""The optimality-gap study: every planner on every instance, as tasks on a local process pool or a
dask.distributed cluster; results in ``runs.csv`` (resumable), ``summary.md`` and plots."""

from optplan.study.runner import Study, run

__all__ = ["Study", "run"]
