"""The independent check of a graph plan: the order, the lifetimes it implies, the reuses, and
every placement under them (the core validator on the problem of that order and those reuses).

It reads the graph's raw ops and tensors; the order methods' own bookkeeping (``Loads``, the
exact search's states) is not used, so a bug there cannot hide here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from optplan.core.plan import Placement
from optplan.core.validate import validate
from optplan.graph.model import Graph, Reuse


@dataclass(frozen=True)
class GraphViolation:
    kind: str  # order, reuse, or the core validator's kinds (overlap, missing, ...)
    subject: str  # "op 'C'", "tensor 'y'", "plan"
    message: str

    def __str__(self) -> str:
        return f"{self.subject}: {self.kind}: {self.message}"


def validate_graph_plan(graph: Graph, order: Sequence[str], reuses: Iterable[Reuse],
                        placements: Mapping[str, Placement]) -> list[GraphViolation]:
    """Everything wrong with the plan (empty: valid). A bad order stops the check there: the
    lifetimes would mean nothing."""
    bad = _order_violations(graph, order)
    if bad:
        return bad
    steps = graph.order_of(order)
    out: list[GraphViolation] = []
    good: list[Reuse] = []
    taken: dict[str, str] = {}
    for r in reuses:
        why = graph.holds(r, steps) if r.input in graph.tensor_index else f"unknown tensor {r.input!r}"
        if why is None and r.input in taken:
            why = f"{r.input!r} is taken by {taken[r.input]!r} already (one output per input)"
        if why is None and r.output in {g.output for g in good}:
            why = f"{r.output!r} is placed in two inputs"
        if why:
            out.append(GraphViolation("reuse", f"tensor {r.output!r}", f"written into {r.input!r} by op {r.op!r}: {why}"))
        else:
            good.append(r)
            taken[r.input] = r.output
    problem = graph.problem(steps, good)
    for v in validate(problem, placements):
        kind = "reuse" if v.kind == "relative" else v.kind
        out.append(GraphViolation(kind, f"tensor {v.buffer!r}", v.message))
    return out


def _order_violations(graph: Graph, order: Sequence[str]) -> list[GraphViolation]:
    out = []
    seen: dict[str, int] = {}
    for step, op in enumerate(order):
        if op not in graph.op_index:
            out.append(GraphViolation("order", f"op {op!r}", f"at step {step}: not an op of the graph"))
        elif op in seen:
            out.append(GraphViolation("order", f"op {op!r}", f"runs twice, at steps {seen[op]} and {step}"))
        else:
            seen[op] = step
    for o in graph.ops:
        if o.id not in seen:
            out.append(GraphViolation("order", f"op {o.id!r}", "missing from the order"))
    if out:
        return out
    st = graph.structure
    for o in graph.ops:
        k = graph.op_index[o.id]
        for i in st.reads[k]:
            p = st.producer[i]
            if p >= 0 and seen[graph.ops[p].id] > seen[o.id]:
                out.append(GraphViolation("order", f"op {o.id!r}", f"runs at step {seen[o.id]}, before op {graph.ops[p].id!r} "
                                                                  f"(step {seen[graph.ops[p].id]}), which produces its input {graph.tensors[i].id!r}"))
    return out
