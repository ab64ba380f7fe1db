"""The graph of a ``torch.export`` program or a recorded training step, and applying a plan's
order back to the ``torch.fx`` graph.

``graph_from_program`` walks the program as the problem extraction does (``torch_export``: one
storage per tensor, views alias their source) and records an op per node that makes a storage or
updates one in place (``graph_build``); an op id is its node's name. An elementwise ATen op
(``torch.Tag.pointwise``) whose output has the dtype, shape and strides of an input that spans its
whole storage declares ``reuse``: it may write into that input where it reads it last.
Control flow (``cond``, ``while_loop``, ...) has no graph form: such a program is refused.

``reorder_nodes`` puts a ``torch.fx`` graph's nodes in a plan's order: the ops in that order,
each preceded by the nodes it needs that are not ops (views, ``getitem``, sizes) where they were
not placed yet, placeholders first and the output last. It only moves nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optplan.core.buffer import Memory
from optplan.core.errors import OptplanError
from optplan.frontends import torch_export
from optplan.frontends.graph_build import OpRecord, build_graph
from optplan.frontends.torch_export import DEFAULT_ALIGNMENT, _input_nodes, _Storage, _Walk
from optplan.graph.model import Graph

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram


class GraphWalk(_Walk):
    """``_Walk`` that records ops (see the module docstring) while it walks."""

    def __init__(self, ranges: dict) -> None:
        super().__init__(ranges)
        self.records: list[OpRecord] = []
        self.carried: dict[str, set[str]] = {}  # a free node -> the ops its value comes from
        self.producer: dict[int, str] = {}  # storage -> the op that made it
        self._reads: list[_Storage] = []
        self._deps: set[str] = set()

    def use(self, of: dict[str, list[_Storage | None]], n: torch.fx.Node, i: int) -> None:  # type: ignore[override]
        _Walk.use(of, n, i)
        self._reads.extend(s for s in of.get(n.name, ()) if s is not None)
        self._deps |= self.carried.get(n.name, set())

    def step(self, gm: torch.fx.GraphModule, node: torch.fx.Node, prefix: str, t: int,
             of: dict[str, list[_Storage | None]], top: bool) -> int:
        if torch_export._hop_layout(gm, node) is not None:
            raise OptplanError(f"node {node.name!r}: control flow ({node.target.name()}) has no graph form; "  # type: ignore[union-attr]
                               "extract a problem instead (without --graph)")
        before = len(self.storages)
        self._reads, self._deps = [], set()
        end = super().step(gm, node, prefix, t, of, top)
        made = self.storages[before:]
        updates = _updated(node, of)
        if node.op == "call_function" and (made or updates):
            record = OpRecord(prefix + node.name, list(self._reads), made, updates, set(self._deps),
                              _reuses(node, of, made))
            self.records.append(record)
            for s in made:
                self.producer[id(s)] = record.id
        else:  # free: who reads it reads its storages, or depends on where its value comes from
            self.carried[node.name] = self._deps | {self.producer[id(s)] for s in self._reads if id(s) in self.producer}
        return end


def _updated(node: torch.fx.Node, of: dict[str, list[_Storage | None]]) -> list[_Storage]:
    """The storages a node writes in place (schema arguments marked ``a!``)."""
    import torch

    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return []
    out: list[_Storage] = []
    for pos, arg in enumerate(schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = node.args[pos] if pos < len(node.args) else node.kwargs.get(arg.name)
        for a in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(a, torch.fx.Node):
                out.extend(s for s in of.get(a.name, ()) if s is not None)
    return out


def _reuses(node: torch.fx.Node, of: dict[str, list[_Storage | None]], made: list[_Storage]) -> list[tuple[_Storage, _Storage]]:
    """(output, input) for a pointwise op with one new output shaped like an input that spans
    its whole storage (the first such input)."""
    import torch

    if len(made) != 1 or torch.Tag.pointwise not in getattr(node.target, "tags", ()):
        return []
    out = node.meta.get("val")
    if not isinstance(out, torch.Tensor):
        return []
    for a in _input_nodes(node):
        v = a.meta.get("val")
        src = of.get(a.name, [None])[0]
        if (isinstance(v, torch.Tensor) and src is not None and src is not made[0] and v.dtype == out.dtype
                and v.shape == out.shape and v.stride() == out.stride() and v.storage_offset() == 0
                and src.size == made[0].size):
            return [(made[0], src)]
    return []


def graph_from_program(ep: ExportedProgram, *, plan_inputs: bool = True, plan_outputs: bool = True,
                       alignment: int = DEFAULT_ALIGNMENT, decompose: bool = True, name: str | None = None) -> Graph:
    """The Graph of ``ep`` (decomposed to core ATen first by default: its op ids are the node names
    of ``ep.run_decompositions()``; pass ``decompose=False`` with that program to reorder it)."""
    import torch

    if decompose:
        ep = ep.run_decompositions()
    walk = torch_export._walk_program(ep, plan_inputs, plan_outputs, GraphWalk)
    assert isinstance(walk, GraphWalk)
    metadata: dict[str, object] = {"frontend": "torch.export", "torch": torch.__version__.split("+")[0],
                                   "plan_inputs": plan_inputs, "plan_outputs": plan_outputs}
    if name:
        metadata["model"] = name
    return build_graph(walk.records, walk.storages, walk.steps, (Memory("mem", alignment=alignment),), metadata)


def extract_graph(path: str | Path, *, plan_inputs: bool = True, plan_outputs: bool = True,
                  alignment: int = DEFAULT_ALIGNMENT) -> Graph:
    """The Graph of a saved ``.pt2`` program (what ``optplan extract --graph`` writes)."""
    ep = torch_export.load_program(path)
    return graph_from_program(ep, plan_inputs=plan_inputs, plan_outputs=plan_outputs, alignment=alignment,
                              name=Path(path).stem)


def reorder_nodes(gm: torch.fx.GraphModule, order: Sequence[str]) -> torch.fx.GraphModule:
    """Put ``gm``'s nodes in ``order`` (op ids: node names) as the module docstring says, in
    place, and recompile it. An op before one it reads, or a name that is no node, is an error."""
    nodes = {n.name: n for n in gm.graph.nodes}
    missing = [o for o in order if o not in nodes]
    if missing:
        raise OptplanError(f"op {missing[0]!r} is not a node of the graph module (extract the graph from this very "
                           "program: run_decompositions() first, then decompose=False)")
    ops = set(order)
    placed: dict[Any, None] = {n: None for n in gm.graph.nodes if n.op == "placeholder"}

    def place(root: torch.fx.Node) -> None:
        stack = [root]
        while stack:
            n = stack[-1]
            need = [a for a in n.all_input_nodes if a not in placed]
            if not need:
                placed[stack.pop()] = None
                continue
            for a in need:
                if a.name in ops:
                    raise OptplanError(f"op {n.name!r} runs before op {a.name!r}, whose output it reads")
            stack.extend(need)

    for name in order:
        place(nodes[name])
    output = [n for n in gm.graph.nodes if n.op == "output"]
    for n in gm.graph.nodes:
        if n.op != "output":
            place(n)
    sequence = [*placed, *output]
    for prev, n in zip(sequence, sequence[1:]):
        prev.append(n)
    gm.graph.lint()
    gm.recompile()
    return gm


def reorder_program(ep: ExportedProgram, order: Sequence[str]) -> ExportedProgram:
    """``reorder_nodes`` on ``ep``'s graph module (in place); ``ep`` must be the program the
    graph came from (``run_decompositions()`` already applied)."""
    reorder_nodes(ep.graph_module, order)
    return ep
