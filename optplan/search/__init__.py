"""Exact search over canonical solutions, compiled with numba (planner ``search``).

Importing this package registers the planner and its kernels. ``planner`` splits a problem into
memories and time parts; ``engine`` decides capacities and minimizes over the static ``orderings``
of an ``instance`` (the integer arrays the search runs on), under ``params`` (``SearchParams``).
The compiled search is ``kernel`` (the driver) over ``state``, ``pruning`` and ``placing``;
``overlaps`` and ``skyline`` are the search's other kernels.
"""

from optplan.core import jit
from optplan.search import planner  # noqa: F401


def _warm() -> None:
    """Compile or load the search's kernels: a search with backtracking, and the dives of a large instance."""
    from optplan.core.deadline import Deadline
    from optplan.core.jit import sample_problem
    from optplan.core.objective import Objective
    from optplan.search.params import SearchParams

    search = planner.search.__wrapped__  # type: ignore[attr-defined]  # the planner without the registry's modules
    search(sample_problem(), deadline=Deadline(None), objective=Objective())  # (min-peak: one memory, no capacity)
    # every instance large: the lowest-offset dives
    search(sample_problem(), deadline=Deadline(None), objective=Objective(), params=SearchParams(max_overlap_pairs=-1))


jit.register("search", "optplan.search.kernel", ("search", "overlap_graph", "count_overlaps", "skyline_dive"), _warm)
