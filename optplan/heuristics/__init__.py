"""Heuristic planners, one module per family; importing this package registers them.

Registration order is the order ``optplan compare`` and the benchmark tables list them in (the
no-reuse baseline first), so the modules are imported from this explicit list rather than by
import statements an import sorter would reorder.
"""

import importlib

FAMILIES = ("naive", "peak_stack", "position_greedy", "greedy_size", "greedy_breadth", "greedy_conflicts", "linear_scan",
            "best_fit_heap", "first_fit_orders", "hill_climb", "recycle", "banked_greedy", "staging")

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")
