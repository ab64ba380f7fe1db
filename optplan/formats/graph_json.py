"""The ``optplan-graph`` format (schema beside this file, version 1), and what a plan of a graph
adds to the plan format: ``"order"`` (op ids) and ``"reuse"`` (output -> input, taken)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from optplan.core.buffer import Memory
from optplan.core.errors import FormatError, ProblemError
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.formats.native_json import VERSION, _load, _validator, plan_to_dict
from optplan.graph.model import Graph, Op, Reuse, Tensor
from optplan.graph.plan import GraphPlan
from optplan.graph.validate import validate_graph_plan

_MARK = re.compile(r'"format"\s*:\s*"optplan-graph"')
_TENSOR_FIELDS = ("alignment", "allowed", "blocked", "fixed_memory", "fixed_offset", "hint_memory", "hint_offset", "benefit")


def looks_like_graph(text: str) -> bool:
    """Whether ``text`` may be a graph (then it is parsed to tell; problems skip that)."""
    return _MARK.search(text) is not None


def graph_document(text: str, source: str) -> dict[str, Any] | None:
    """The JSON object if ``text`` is a graph file, else None (a problem, a plan, ...)."""
    if not looks_like_graph(text):
        return None
    doc = _load(text, source)
    return doc if isinstance(doc, dict) and doc.get("format") == "optplan-graph" else None


def graph_from_json(text: str, source: str = "<json>") -> Graph:
    doc = graph_document(text, source)
    if doc is None:
        raise FormatError(f"{source}: not an optplan-graph file")
    return graph_from_document(doc, source)


def _check(doc: Any, source: str) -> None:
    errors = sorted(_validator("graph").iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise FormatError(f"{source}: {_describe(doc, list(e.absolute_path))}: {e.message}")


def _describe(doc: Any, path: list) -> str:
    """A JSON path made readable: tensors[3] becomes tensor 'id', ops[2] op 'id', when known."""
    if len(path) >= 2 and path[0] in ("tensors", "ops") and isinstance(path[1], int):
        kind = path[0][:-1]
        try:
            name = doc[path[0]][path[1]].get("id")
        except (AttributeError, IndexError, TypeError):
            name = None
        head = f"{kind} {name!r}" if isinstance(name, str) else f"{path[0]}[{path[1]}]"
        return head + (f": field {path[2]!r}" if len(path) > 2 else "")
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path) if path else "document"


def graph_from_document(doc: dict[str, Any], source: str) -> Graph:
    _check(doc, source)
    try:
        memories = tuple(Memory(**m) for m in doc.get("memories", [{"name": "mem"}]))
        tensors = tuple(Tensor(**{**t, **{k: tuple(t[k]) for k in ("allowed", "blocked") if k in t}}) for t in doc["tensors"])
        ops = tuple(Op(o["id"], tuple(o.get("inputs", ())), tuple(o.get("outputs", ())), tuple(o.get("reuse", {}).items()))
                    for o in doc["ops"])
        return Graph(tensors, ops, memories, doc.get("metadata", {}))
    except ProblemError as e:  # GraphError included
        raise type(e)(f"{source}: {e}") from None


def graph_to_json(graph: Graph) -> str:
    defaults = Tensor("x", 0)
    tensors = []
    for t in graph.tensors:
        d: dict[str, Any] = {"id": t.id, "size": t.size}
        for k in ("input", "output", *_TENSOR_FIELDS):
            v = getattr(t, k)
            if v != getattr(defaults, k):
                d[k] = list(v) if isinstance(v, tuple) else v
        tensors.append(d)
    ops = []
    for o in graph.ops:
        d = {"id": o.id, "inputs": list(o.inputs), "outputs": list(o.outputs)}
        if o.reuse:
            d["reuse"] = dict(o.reuse)
        ops.append(d)
    doc = {"format": "optplan-graph", "version": VERSION, "memories": [asdict(m) for m in graph.memories],
           "tensors": tensors, "ops": ops, "metadata": dict(graph.metadata)}
    return json.dumps(doc, indent=1) + "\n"


def graph_plan_to_dict(gp: GraphPlan, times: bool = True) -> dict[str, Any]:
    """The plan object of a graph plan: the plan format, with the order and the reuses taken
    (``times=False``: without its wall-clock figures, as a ``--deterministic`` plan file)."""
    return {**plan_to_dict(gp.plan, times=times), "order": list(gp.order), "reuse": {r.output: r.input for r in gp.reuses}}


def graph_plan_to_json(gp: GraphPlan, times: bool = True) -> str:
    return json.dumps(graph_plan_to_dict(gp, times), indent=1) + "\n"


def order_and_reuses(graph: Graph, doc: Mapping[str, Any], source: str) -> tuple[tuple[str, ...], tuple[Reuse, ...]]:
    """A plan file's order (default: the given order) and reuses (default: none), as the
    validator takes them; malformed fields are one FormatError line."""
    order = doc.get("order", [o.id for o in graph.ops])
    if not isinstance(order, list) or not all(isinstance(x, str) for x in order):
        raise FormatError(f"{source}: $.order: must be a list of op ids")
    reuse = doc.get("reuse", {})
    if not isinstance(reuse, dict) or not all(isinstance(v, str) for v in reuse.values()):
        raise FormatError(f"{source}: $.reuse: must map output tensor ids to input tensor ids")
    st = graph.structure
    out = []
    for y, x in reuse.items():
        i = graph.tensor_index.get(y)
        if i is None:
            raise FormatError(f"{source}: $.reuse: unknown tensor {y!r}")
        p = st.producer[i]
        out.append(Reuse(graph.ops[p].id if p >= 0 else "(none)", y, x))
    return tuple(order), tuple(out)


def plan_problem(graph: Graph, doc: Mapping[str, Any] | None, source: str,
                 placements: Mapping[str, Placement]) -> tuple[Problem, list[str]]:
    """The problem a graph's plan file places (its order's lifetimes, its reuses), and what is
    wrong with the plan (``validate_graph_plan``; empty: valid; then the problem is the given
    order's)."""
    order, reuses = order_and_reuses(graph, doc or {}, source)
    violations = validate_graph_plan(graph, order, reuses, placements)
    if violations:
        return graph.base, [str(v) for v in violations]
    return graph.problem(graph.order_of(order), reuses), []
