"""From a front end's walk to a Graph: the ops it recorded, the storages they read, write and
update in place, and the order constraints that are not carried by a storage.

The walks (``torch_graph.GraphWalk``, ``onnx_model.GraphWalk``) record an op per node that makes
a storage or writes one in place; a view, a ``getitem`` or a node of scalars is free: who reads it reads its storage
(so views alias as in the problem extraction). Two kinds of order the storages do not carry
become zero-byte *token* tensors (``<op>.after``, produced by the op that must run first):

- a node of scalars computed from an op's output (a symbolic size) read by a later op;
- an update in place: it runs after every op that touched the storage since the last update,
  and every later op touching it runs after it (parameters included, which are not planned).

Every planned storage is a tensor (inputs and state flagged ``input``, what lives to the end
``output``) but an empty one nobody reads; a storage an op makes that is not planned (an output
with ``plan_outputs=False``) is a zero-byte tensor, so the order its readers need is kept. A declared reuse that can hold in
no order is dropped (``feasible_reuses``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from optplan.core.buffer import Memory
from optplan.graph.model import Graph, Op, Tensor


@dataclass
class OpRecord:
    """One op as a walk saw it (storages are the walk's objects; ids are read at the end, after
    the walk names them)."""

    id: str
    reads: list[Any] = field(default_factory=list)
    writes: list[Any] = field(default_factory=list)
    updates: list[Any] = field(default_factory=list)  # written in place
    after: set[str] = field(default_factory=set)  # ops that must run first (not through a storage)
    reuse: list[tuple[Any, Any]] = field(default_factory=list)  # (output, input) storages


def build_graph(records: Sequence[OpRecord], storages: Iterable[Any], steps: int, memories: tuple[Memory, ...],
                metadata: dict[str, object], benefit: bool = True) -> Graph:
    """The Graph of a walk: ``storages`` as the walk made them (``planned``, ``size``, ``kind``,
    ``end``, ``reads``), ``steps`` its step count (a storage ending there is a graph output)."""
    made = {id(s) for r in records for s in r.writes}
    read = {id(s) for r in records for s in r.reads + r.updates}
    keep = [s for s in storages if (s.planned or id(s) in made) and (s.size or id(s) in read or s.end >= steps)]
    tensor_of = {id(s): s for s in keep}
    _order_updates(records)
    tokens = _tokens(records, tensor_of)
    tensors = [Tensor(s.id, s.size if s.planned else 0, input=id(s) not in made, output=s.end >= steps,
                      benefit=s.size * (1 + s.reads) if benefit and s.planned else None) for s in keep]
    tensors += [Tensor(f"{op}.after", 0) for op in tokens]
    ops = []
    for r in records:
        reads = [s.id for s in _distinct(r.reads + r.updates) if id(s) in tensor_of]
        reads += [f"{a}.after" for a in sorted(r.after)]
        writes = [s.id for s in r.writes if id(s) in tensor_of] + ([f"{r.id}.after"] if r.id in tokens else [])
        reuse = [(y.id, x.id) for y, x in r.reuse if y.planned and x.planned and id(x) in tensor_of]
        ops.append(Op(r.id, tuple(dict.fromkeys(reads)), tuple(writes), tuple(reuse)))
    plain = Graph(tuple(tensors), tuple(Op(o.id, o.inputs, o.outputs) for o in ops), memories, metadata)
    return Graph(plain.tensors, feasible_reuses(plain, ops), memories, metadata)


def _distinct(items: list[Any]) -> list[Any]:
    return list({id(x): x for x in items}.values())


def _order_updates(records: Sequence[OpRecord]) -> None:
    """Add the ``after`` constraints of updates in place (see the module docstring), in the
    walk's order."""
    writer: dict[int, str] = {}  # storage -> the op that last updated it
    touched: dict[int, list[str]] = {}  # storage -> ops that touched it since
    for r in records:
        updated = {id(s) for s in r.updates}
        for s in _distinct(r.reads + r.updates):
            w = writer.get(id(s))
            if w is not None and w != r.id:
                r.after.add(w)
            if id(s) in updated:
                r.after.update(o for o in touched.get(id(s), ()) if o != r.id)
                writer[id(s)] = r.id
                touched[id(s)] = []
            else:
                touched.setdefault(id(s), []).append(r.id)


def _tokens(records: Sequence[OpRecord], tensor_of: dict[int, Any]) -> set[str]:
    """Drop each ``after`` an op's storages already give; the ops whose tokens are still read."""
    producer = {id(s): r.id for r in records for s in r.writes}
    out: set[str] = set()
    for r in records:
        through = {producer[id(s)] for s in r.reads + r.updates if id(s) in producer and id(s) in tensor_of}
        r.after = {a for a in r.after if a not in through and a != r.id}
        out |= r.after
    return out


def feasible_reuses(graph: Graph, ops: Sequence[Op]) -> tuple[Op, ...]:
    """``ops`` with only the reuses that can hold in some order in ``graph`` (whose ops are the
    same, without reuses)."""
    out = []
    for k, o in enumerate(ops):
        kept = tuple((y, x) for y, x in o.reuse if graph.never(k, y, x) is None)
        out.append(Op(o.id, o.inputs, o.outputs, tuple(dict(kept).items())))
    return tuple(out)
