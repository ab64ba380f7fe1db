"""Heuristic planners; importing this package registers them (one module per family)."""

from optplan.heuristics import greedy_size  # noqa: F401
