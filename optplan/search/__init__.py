"""Exact search over canonical solutions, compiled with numba (planner ``search``).

Importing this package registers the planner and its kernels. ``planner`` splits a problem into
memories and time parts; ``engine`` decides capacities and minimizes over the static ``orderings``
of an ``instance`` (the integer arrays the search runs on), under ``params`` (``SearchParams``).
The compiled search is ``kernel`` (the driver) over ``state``, ``pruning`` and ``placing``;
``overlaps`` and ``skyline`` are the search's other kernels; ``layout`` is what they share with the
Python code, and ``compiled`` hands that code the kernels, built ahead of time or just in time.
"""

from optplan.core import jit
from optplan.search import planner  # noqa: F401
from optplan.search.compiled import NAMES, NATIVE


def _warm() -> None:
    """Compile or load the search's just-in-time kernels (each for the signature its callers use:
    a native build may serve the planner, and then the JIT would never be compiled), then run the
    planner: a search with backtracking, and the dives of a large instance."""
    from optplan.core.deadline import Deadline
    from optplan.core.jit import sample_problem
    from optplan.core.objective import Objective
    from optplan.search import kernel
    from optplan.search.compiled import exports
    from optplan.search.params import SearchParams

    for name, _, signature in exports():
        getattr(kernel, name).compile(signature.args)
    search = planner.search.__wrapped__  # type: ignore[attr-defined]  # the planner without the registry's modules
    search(sample_problem(), deadline=Deadline(None), objective=Objective())  # (min-peak: one memory, no capacity)
    # every instance large: the lowest-offset dives
    search(sample_problem(), deadline=Deadline(None), objective=Objective(), params=SearchParams(max_overlap_pairs=-1))


jit.register("search", "optplan.search.kernel", NAMES, _warm, NATIVE)
