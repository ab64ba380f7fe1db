"""Exact search over canonical solutions, compiled with numba (planner ``search``).

Importing this package registers the planner and its kernels; ``kernel`` holds the compiled
search, ``instance`` the integer arrays it runs on, ``engine`` the portfolio and minimization.
"""

from optplan.core import jit
from optplan.search import planner  # noqa: F401


def _warm() -> None:
    """Compile or load the search's kernels: a search with backtracking, and the dives of a large instance."""
    from optplan.core.deadline import Deadline
    from optplan.core.jit import sample_problem
    from optplan.search import instance

    search = planner.search.__wrapped__  # type: ignore[attr-defined]  # the planner without the registry's modules
    search(sample_problem(), deadline=Deadline(None))
    limit, instance.MAX_PAIRS = instance.MAX_PAIRS, -1  # every instance large: the lowest-offset dives
    try:
        search(sample_problem(), deadline=Deadline(None))
    finally:
        instance.MAX_PAIRS = limit


jit.register("search", "optplan.search.kernel", ("search", "overlap_graph", "count_overlaps", "skyline_dive"), _warm)
