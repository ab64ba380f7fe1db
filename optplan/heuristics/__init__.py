"""Heuristic planners, one module per family; importing this package registers them.

Registration order is the order ``optplan compare`` and the benchmark tables list them in (the
no-reuse baseline first), so the modules are imported from this explicit list rather than by
import statements an import sorter would reorder.

Besides the families: ``orders`` (the placement orders), ``packer`` (``greedy`` and the readable
reference ``Packer`` every fast path is tested against), the packing kernels over flat arrays
(``arrays``: the array builder; ``tree_packer``, ``skyline``: banked-greedy's objects,
``recycle_heap``: recycle's free slots), ``kernels`` (which of their forms runs: Python, numba's
compilation of the same code in ``compiled``, or that built ahead of time), and ``run`` (every heuristic on one problem:
the portfolio's warm start).
"""

import importlib

from optplan.core import jit
from optplan.heuristics import kernels

FAMILIES = ("naive", "peak_stack", "position_greedy", "greedy_size", "greedy_breadth", "greedy_conflicts", "linear_scan",
            "best_fit_heap", "first_fit_orders", "hill_climb", "recycle", "banked_greedy", "staging")

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")


def _warm() -> None:
    """Compile or load the packers' kernels by running their compiled forms (a problem this small
    would run the Python forms) under every policy on a small problem: numba's, where no build
    ahead of time serves (then ``jit.warmup`` builds one from them)."""
    from optplan.core.jit import sample_problem
    from optplan.heuristics.arrays import indices
    from optplan.heuristics.orders import by_start
    from optplan.heuristics.recycle_heap import recycle
    from optplan.heuristics.skyline import banked
    from optplan.heuristics.tree_packer import pack

    problem = sample_problem()
    for policy in ("first", "best", "heap"):
        pack(problem, indices(problem, problem.units), policy, compiled=True)
    banked(problem, compiled=True)
    recycle(problem, by_start(problem), compiled=True)


# the kernels called from Python; ``compiled`` compiles them (and the kernels they call) from
# ``tree_packer``, ``skyline`` and ``recycle_heap``
jit.register("heuristics", "optplan.heuristics.compiled", kernels.CALLED, _warm, kernels.NATIVE)
