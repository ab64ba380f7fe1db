"""Buffers and lifetimes from an ONNX model, sizes from ``onnx`` shape inference.

The conventions are the torch front end's (``torch_export``), so the two extractions of one
network can be compared:

- steps: step 0 holds the graph inputs, every node takes one step in the graph's (topological)
  order, and a last step reads the graph outputs; a tensor lives ``[producer, last use + 1)``,
  so an output is allocated while its inputs are still live;
- graph outputs live to the end; inputs and outputs are planned or not by flag (planned by
  default, as ExecuTorch does); initializers and ``Constant`` outputs are weights, not planned
  unless asked (then they live throughout, as a runtime holds them), and so is the output of a
  node whose inputs are all weights: onnxruntime folds it when the session loads (e.g. the
  Transpose of GPT-2's tied embedding for its LM head, 154 MB that would otherwise be planned);
- views: Reshape, Flatten, Squeeze, Unsqueeze and Identity, which runtimes execute without a
  copy, alias their first input by default (one storage, living to the last use of any alias);
  with ``views_alias=False`` they are copies;
- control flow (If, Loop, Scan): the node spans a window of steps in which its subgraphs' own
  nodes run (If: both branches in consecutive sub-windows, so their temporaries may share bytes;
  Loop and Scan: one iteration of the body, since every iteration reuses the same space). The
  node's outputs live across its window, operands and outer tensors its subgraphs read live to
  its end, a body's carried inputs are the node's outputs and Scan's slices view its inputs, and
  subgraph outputs are temporaries copied out at the end of their sub-window. Subgraph tensors
  are named ``<node>/<attribute>/<tensor>``.

Dynamic dimensions (``dim_param``) are bound by name (``dims``); one left unbound is an error
naming it, since nothing static can hold an unknown size. onnx is imported lazily.
"""

from __future__ import annotations

import math
from collections import ChainMap
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optplan.core.buffer import Buffer, Memory
from optplan.core.errors import FormatError, OptplanError
from optplan.core.problem import Problem
from optplan.frontends.graph_build import OpRecord, build_graph
from optplan.frontends.torch_export import DEFAULT_ALIGNMENT, _Storage
from optplan.graph.model import Graph

if TYPE_CHECKING:
    import onnx

VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})


Scope = MutableMapping[str, "_Storage | None"]


def extract_onnx(model: str | Path | onnx.ModelProto, *, dims: Mapping[str, int] | None = None,
                 include_weights: bool = False, views_alias: bool = True, plan_inputs: bool = True,
                 plan_outputs: bool = True, alignment: int = DEFAULT_ALIGNMENT, name: str | None = None,
                 graph: bool = False) -> Problem | Graph:
    """The Problem of an ONNX model (a path to a ``.onnx`` file or a ``ModelProto``); ``graph``:
    its Graph (ops and tensors, the order free: ``graph_of``)."""
    import onnx

    if not isinstance(model, onnx.ModelProto):
        name = name or Path(model).stem
        model = load_model(model)
    model = infer_shapes(bind_dims(model, dict(dims or {})))
    if graph:
        meta: dict[str, object] = {"frontend": "onnx", "onnx": onnx.__version__, "dims": dict(dims or {}), **({"model": name} if name else {})}
        return graph_of(model, include_weights, views_alias, plan_inputs, plan_outputs, alignment, meta)
    walk = _Walk(model.graph, include_weights, views_alias)
    walk.top(plan_inputs, plan_outputs)
    planned = [s for s in walk.storages if s.planned and s.size > 0]
    metadata: dict[str, object] = {
        "frontend": "onnx", "onnx": onnx.__version__, "steps": walk.steps,
        "opset": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "plan_inputs": plan_inputs, "plan_outputs": plan_outputs, "include_weights": include_weights,
        "views_alias": views_alias, "dims": dict(dims or {}),
        "inputs": [s.id for s in planned if s.kind == "input"],
        "outputs": [s.id for s in planned if s.kind == "output"],
        "weights": [s.id for s in planned if s.kind == "weight"],
        "unplanned_bytes": sum(s.size for s in walk.storages if not s.planned),
    }
    if name:
        metadata["model"] = name
    if walk.windows:
        metadata["control_flow"] = walk.windows
    # benefit of fast memory: size x accesses (one write, one read per consumer), as torch_export
    buffers = tuple(Buffer(s.id, s.size, s.start, s.end, benefit=s.size * (1 + s.reads)) for s in planned)
    return Problem(buffers, (Memory("mem", alignment=alignment),), (), metadata)


def load_model(path: str | Path) -> onnx.ModelProto:
    """Read a ``.onnx`` file; a bad one is one FormatError line."""
    import onnx

    path = Path(path)
    if path.suffix != ".onnx":
        raise FormatError(f"{path}: not a .onnx file")
    if not path.is_file():
        raise FormatError(f"{path}: no such file")
    try:
        return onnx.load(str(path))
    except Exception as e:  # noqa: BLE001 - protobuf raises many kinds; the user needs one line
        raise FormatError(f"{path}: cannot read the ONNX model: {type(e).__name__}: {_first_line(e)}") from None


def bind_dims(model: onnx.ModelProto, dims: dict[str, int]) -> onnx.ModelProto:
    """A copy of ``model`` whose graph inputs (and outputs) carry ``dims`` for their named
    dynamic dimensions. An input dimension left without a value is an error naming it, and so is
    a name in ``dims`` that no input has (a typo would otherwise go unnoticed)."""
    import onnx

    for k, v in dims.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise OptplanError(f"--dim {k}={v}: the value must be a non-negative integer")
    model = onnx.ModelProto.FromString(model.SerializeToString())
    weights = {t.name for t in model.graph.initializer}
    used: set[str] = set()
    for vi in model.graph.input:
        if vi.name in weights or not vi.type.HasField("tensor_type"):
            continue
        for axis, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value"):
                continue
            if d.dim_param in dims:
                used.add(d.dim_param)
                d.dim_value = dims[d.dim_param]  # clears dim_param (a oneof)
            elif d.dim_param:
                raise OptplanError(f"input {vi.name!r}: dynamic dimension {d.dim_param!r} has no value; "
                                   f"pass --dim {d.dim_param}=<size>")
            else:
                raise OptplanError(f"input {vi.name!r}: dimension {axis} is unnamed and unknown; "
                                   "give it a name or a value in the model")
    unknown = sorted(set(dims) - used)
    if unknown:
        raise OptplanError(f"--dim {unknown[0]}: no graph input has a dynamic dimension of that name")
    for vi in (*model.graph.output, *model.graph.value_info):
        for d in vi.type.tensor_type.shape.dim if vi.type.HasField("tensor_type") else ():
            if d.HasField("dim_param") and d.dim_param in dims:
                d.dim_value = dims[d.dim_param]
    return model


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnx's shape inference, strict. onnx drops the shape of a value a Loop carries (it could
    change between iterations); where the initial value and the body's result have one static
    shape, that shape is recorded and inference runs again, so the tensors downstream get sizes."""
    import onnx

    for _ in range(8):
        try:
            model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
        except Exception as e:  # noqa: BLE001 - onnx's inference errors: one line for the user
            raise FormatError(f"ONNX shape inference failed: {_first_line(e)}") from None
        if not _pin_loop_carried(model.graph):
            break
    return model


def _pin_loop_carried(graph: onnx.GraphProto) -> bool:
    types = _types(graph)
    pinned = False
    for node in graph.node:
        for sub in _subgraphs(node):
            pinned |= _pin_loop_carried(sub)
        if node.op_type != "Loop" or node.domain not in ("", "ai.onnx"):
            continue
        body = _subgraphs(node)[0]
        for j, y in enumerate(node.output[:len(node.input) - 2]):
            init, result = types.get(node.input[2 + j]), body.output[1 + j].type
            if y and not _static(types.get(y)) and _static(init) and init == result:
                target = next((vi for vi in (*graph.value_info, *graph.output) if vi.name == y), None)
                if target is None:
                    target = graph.value_info.add()
                    target.name = y
                target.type.CopyFrom(init)
                pinned = True
    return pinned


def _static(t: Any) -> bool:
    return (t is not None and t.HasField("tensor_type") and t.tensor_type.HasField("shape")
            and all(d.HasField("dim_value") for d in t.tensor_type.shape.dim))


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


# -- sizes -------------------------------------------------------------------------------------

def _types(graph: onnx.GraphProto) -> dict[str, onnx.TypeProto]:
    return {vi.name: vi.type for vi in (*graph.input, *graph.value_info, *graph.output)}


def _tensor_bytes(name: str, t: onnx.TypeProto | None) -> int:
    import onnx

    if t is None or not t.HasField("tensor_type"):
        kind = "no type" if t is None else f"a {t.WhichOneof('value')} type"
        raise OptplanError(f"tensor {name!r}: {kind} after shape inference; only tensors can be planned")
    tt = t.tensor_type
    if not tt.HasField("shape"):
        raise OptplanError(f"tensor {name!r}: rank unknown after shape inference; a static plan needs every size")
    n = 1
    for axis, d in enumerate(tt.shape.dim):
        if not d.HasField("dim_value"):
            what = f"dimension {d.dim_param!r}" if d.dim_param else f"dimension {axis}"
            raise OptplanError(f"tensor {name!r}: {what} unknown after shape inference; a static plan needs every size")
        n *= d.dim_value
    if tt.elem_type == onnx.TensorProto.STRING:
        raise OptplanError(f"tensor {name!r}: string tensors have no static size")
    return n * onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).itemsize


def _initializer_bytes(t: onnx.TensorProto) -> int:
    import onnx

    return math.prod(t.dims) * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize


# -- the walk ----------------------------------------------------------------------------------

class _Walk:
    """Storages created while walking the graph in order (see the module docstring)."""

    def __init__(self, graph: onnx.GraphProto, include_weights: bool, views_alias: bool) -> None:
        self.graph = graph
        self.include_weights = include_weights
        self.views_alias = views_alias
        self.storages: list[_Storage] = []
        self.windows: list[dict[str, Any]] = []
        self.steps = 1 + _width(graph) + 1

    def new(self, name: str, size: int, kind: str, planned: bool, start: int, end: int) -> _Storage:
        s = _Storage(name, size, start, end, planned, kind)
        self.storages.append(s)
        return s

    def top(self, plan_inputs: bool, plan_outputs: bool) -> None:
        g, end = self.graph, self.steps
        types = _types(g)
        of: Scope = {}
        for init in g.initializer:
            of[init.name] = self.new(init.name, _initializer_bytes(init), "weight", self.include_weights, 0, end)
        for vi in g.input:
            if vi.name not in of:
                of[vi.name] = self.new(vi.name, _tensor_bytes(vi.name, vi.type), "input", plan_inputs, 0, 1)
        t = self.nodes(g, "", 1, ChainMap(of), types)
        assert t == end - 1, (t, end)
        for vi in g.output:
            s = of.get(vi.name)
            if s is None:
                continue
            s.end = end
            s.reads += 1  # the caller reads what the graph returns
            if s.kind == "intermediate":
                s.kind = "output"
                s.planned = plan_outputs

    def nodes(self, graph: onnx.GraphProto, prefix: str, t: int, of: ChainMap, types: Mapping[str, Any]) -> int:
        for node in graph.node:
            t = self.step(node, prefix, t, of, types)
        return t

    @staticmethod
    def use(of: Mapping[str, _Storage | None], name: str, t: int) -> None:
        """A read of ``name`` at step ``t``: it lives until then, and counts one more access."""
        s = of.get(name)
        if s is not None:
            s.end = max(s.end, t + 1)
            s.reads += 1

    def step(self, node: onnx.NodeProto, prefix: str, t: int, of: ChainMap, types: Mapping[str, Any]) -> int:
        for x in node.input:
            if x and x not in of:
                raise FormatError(f"node {_label(node)!r}: input {x!r} is not produced before it (graph not topologically sorted?)")
        if node.op_type in CONTROL_FLOW and node.domain in ("", "ai.onnx"):
            return self.control_flow(node, prefix, t, of, types)
        for x in node.input:
            if x:
                self.use(of, x, t)
        sources = [of.get(x) for x in node.input if x]
        folded = bool(sources) and all(s is not None and s.kind == "weight" for s in sources)
        for j, y in enumerate(node.output):
            if not y:
                continue
            onnx_op = node.domain in ("", "ai.onnx")
            if self.views_alias and j == 0 and node.op_type in VIEW_OPS and onnx_op:
                src = of.get(node.input[0])
                if src is not None:
                    src.end = max(src.end, t + 1)
                of.maps[0][y] = src
            elif folded or node.op_type == "Constant" and onnx_op:
                of.maps[0][y] = self.new(prefix + y, _tensor_bytes(y, types.get(y)), "weight", self.include_weights, 0, self.steps)
            else:
                of.maps[0][y] = self.new(prefix + y, _tensor_bytes(y, types.get(y)), "intermediate", True, t, t + 1)
        return t + 1

    def control_flow(self, node: onnx.NodeProto, prefix: str, t: int, of: ChainMap, types: Mapping[str, Any]) -> int:
        end = t + _node_width(node)
        label = prefix + _label(node)
        outs = [self.new(prefix + y, _tensor_bytes(y, types.get(y)), "intermediate", True, t, end) if y else None
                for y in node.output]
        for y, out in zip(node.output, outs):
            if y:
                of.maps[0][y] = out
        window: dict[str, Any] = {"node": label, "op": node.op_type, "steps": [t, end], "subgraphs": {}}
        self.windows.append(window)
        s = t
        for attr, sub, bound in _layout(node, outs, of):
            scope = of.new_child(dict(zip((vi.name for vi in sub.input), bound)))
            for init in sub.initializer:
                scope[init.name] = self.new(f"{label}/{attr}/{init.name}", _initializer_bytes(init), "weight",
                                            self.include_weights, 0, self.steps)
            sub_types = ChainMap(_types(sub), dict(types))
            e = self.nodes(sub, f"{label}/{attr}/", s, scope, sub_types)
            for vi in sub.output:
                self.use(scope, vi.name, e - 1)
            window["subgraphs"][attr] = [s, e]
            s = max(e, s)
        for x in (*node.input, *_free_names(node)):
            if x:
                self.use(of, x, end - 1)
        return end


def _layout(node: onnx.NodeProto, outs: list[_Storage | None], of: Mapping[str, _Storage | None]) -> list[tuple[str, Any, list]]:
    """The subgraphs of a control-flow node in window order, each with the storages its inputs
    are bound to: Loop's (iteration, condition, carried...) get (none, none, the node's carried
    outputs); Scan's (state..., slices...) get (the node's state outputs, views of the scanned
    inputs); If's branches take no inputs."""
    import onnx

    graphs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
    if node.op_type == "If":
        return [(k, graphs[k], []) for k in ("then_branch", "else_branch")]
    body = graphs["body"]
    if node.op_type == "Loop":
        carried = len(node.input) - 2
        return [("body", body, [None, None, *outs[:carried]])]
    scanned = [of.get(x) for x in node.input[len(node.input) - _num_scan_inputs(node):]]
    states = len(body.input) - len(scanned)
    return [("body", body, [*outs[:states], *scanned])]


def _num_scan_inputs(node: onnx.NodeProto) -> int:
    return next(a.i for a in node.attribute if a.name == "num_scan_inputs")


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    import onnx

    return [onnx.helper.get_attribute_value(a) for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]


def _free_names(node: onnx.NodeProto) -> set[str]:
    """Names a node's subgraphs (recursively) read from enclosing scopes."""
    out: set[str] = set()
    for g in _subgraphs(node):
        defined = {vi.name for vi in g.input} | {t.name for t in g.initializer}
        for n in g.node:
            out |= {x for x in (*n.input, *_free_names(n)) if x and x not in defined}
            defined |= set(n.output)
        out |= {vi.name for vi in g.output if vi.name not in defined}
    return out


def _width(graph: onnx.GraphProto) -> int:
    return sum(_node_width(n) for n in graph.node)


def _node_width(node: onnx.NodeProto) -> int:
    if node.op_type not in CONTROL_FLOW or node.domain not in ("", "ai.onnx"):
        return 1
    return max(1, sum(_width(g) for g in _subgraphs(node)))


def _label(node: onnx.NodeProto) -> str:
    return node.name or next((y for y in node.output if y), node.op_type)


# -- the graph (``extract_onnx(..., graph=True)``) -----------------------------------------------
# The walk above records an op per node that makes a tensor at run time (its id: the node's name,
# or its first output's); a view and a node folded from weights are free (``graph_build``). An
# elementwise node whose output has the type (element type and shape) of an input declares
# ``reuse`` of that input. Control flow has no graph form: such a model is refused.

ELEMENTWISE = frozenset({
    "Abs", "Acos", "Acosh", "Add", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Celu", "Clip", "Cos", "Cosh", "Div", "Elu",
    "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish", "LeakyRelu", "Log", "Max", "Min", "Mish", "Mod", "Mul",
    "Neg", "Pow", "PRelu", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus",
    "Softsign", "Sqrt", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu", "Where"})


class GraphWalk(_Walk):
    """``onnx_model._Walk`` that records ops while it walks."""

    def __init__(self, graph: onnx.GraphProto, include_weights: bool, views_alias: bool) -> None:
        super().__init__(graph, include_weights, views_alias)
        self.records: list[OpRecord] = []
        self.carried: dict[str, set[str]] = {}  # a free node's output -> ops its value comes from
        self.producer: dict[int, str] = {}
        self._reads: list[_Storage] = []
        self._deps: set[str] = set()

    def use(self, of: Mapping[str, _Storage | None], name: str, t: int) -> None:  # type: ignore[override]
        _Walk.use(of, name, t)
        s = of.get(name)
        if s is not None:
            self._reads.append(s)
        self._deps |= self.carried.get(name, set())

    def step(self, node: onnx.NodeProto, prefix: str, t: int, of: ChainMap, types: Mapping[str, Any]) -> int:
        if node.op_type in CONTROL_FLOW and node.domain in ("", "ai.onnx"):
            raise OptplanError(f"node {_label(node)!r}: control flow ({node.op_type}) has no graph form; "
                               "extract a problem instead (without --graph)")
        before = len(self.storages)
        self._reads, self._deps = [], set()
        end = super().step(node, prefix, t, of, types)
        made = [s for s in self.storages[before:] if s.kind != "weight"]
        if made:
            record = OpRecord(prefix + _label(node), list(self._reads), made, [], set(self._deps), _reuse(node, of, made, types))
            self.records.append(record)
            for s in made:
                self.producer[id(s)] = record.id
        else:
            deps = self._deps | {self.producer[id(s)] for s in self._reads if id(s) in self.producer}
            for y in node.output:
                if y:
                    self.carried[y] = deps
        return end


def _reuse(node: onnx.NodeProto, of: Mapping[str, _Storage | None], made: list[_Storage],
           types: Mapping[str, Any]) -> list[tuple[_Storage, _Storage]]:
    if node.op_type not in ELEMENTWISE or node.domain not in ("", "ai.onnx") or len(made) != 1:
        return []
    y = node.output[0]
    for x in node.input:
        src = of.get(x) if x else None
        if src is not None and src.kind != "weight" and types.get(x) == types.get(y) and src.size == made[0].size:
            return [(made[0], src)]
    return []


def graph_of(model: onnx.ModelProto, include_weights: bool, views_alias: bool, plan_inputs: bool, plan_outputs: bool,
             alignment: int, metadata: dict[str, object]) -> Graph:
    """The Graph of a model whose dimensions are bound and shapes inferred (``extract_onnx``)."""
    walk = GraphWalk(model.graph, include_weights, views_alias)
    walk.top(plan_inputs, plan_outputs)
    return build_graph(walk.records, walk.storages, walk.steps, (Memory("mem", alignment=alignment),), metadata)
