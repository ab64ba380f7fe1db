"""Heuristic planners, one module per family; importing this package registers them.

Registration order is the order ``optplan compare`` and the benchmark tables list them in (the
no-reuse baseline first), so the modules are imported from this explicit list rather than by
import statements an import sorter would reorder.
"""

import importlib

from optplan.core import jit

FAMILIES = ("naive", "peak_stack", "position_greedy", "greedy_size", "greedy_breadth", "greedy_conflicts", "linear_scan",
            "best_fit_heap", "first_fit_orders", "hill_climb", "recycle", "banked_greedy", "staging")

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")


def _warm() -> None:
    """Compile or load the packers' kernels by running every policy on a small problem."""
    from optplan.core.jit import sample_problem
    from optplan.heuristics import compiled
    from optplan.heuristics.orders import by_start
    from optplan.heuristics.packer import greedy

    problem = sample_problem()
    for policy in ("first", "best", "heap"):
        greedy(problem, problem.units, policy)
    compiled.banked(problem)
    compiled.recycle(problem, by_start(problem))


jit.register("heuristics", "optplan.heuristics.compiled", ("_pack", "_banked", "_recycle"), _warm)
