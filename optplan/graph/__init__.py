"""Graphs of operators: planning the order of the ops and in-place reuse together with the offsets.

A graph (``model.Graph``) is a problem whose lifetimes follow from an order. ``solve_graph`` plans
its given order, or chooses the order too (``reorder=True``), with the offset planners of the
layers below (``auto`` by default) as its inner step; ``validate_graph_plan`` checks a plan of it.
The layer sits above the portfolio and below the formats, the front ends and the CLI.
"""

from optplan.graph.model import Graph, GraphError, Op, Reuse, Tensor
from optplan.graph.plan import GraphPlan

__all__ = ["Graph", "GraphError", "GraphPlan", "Op", "Reuse", "Tensor"]


def __getattr__(name: str) -> object:
    """``solve_graph`` and ``validate_graph_plan`` on first use: the planners import OR-Tools,
    which a reader of graph files does not need."""
    if name == "solve_graph":
        from optplan.graph.planner import solve_graph

        return solve_graph
    if name == "validate_graph_plan":
        from optplan.graph.validate import validate_graph_plan

        return validate_graph_plan
    raise AttributeError(f"module 'optplan.graph' has no attribute {name!r}")
