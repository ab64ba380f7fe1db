"""Buffers and lifetimes from a real ``torch.export`` program.

The model follows what a static planner must hold (reference: PyTorch's fx memory estimator,
ExecuTorch's planner). After ``run_decompositions()`` the graph is functional core ATen, walked
in execution order (step = node index):

- one buffer per *storage*: a view (any return whose schema aliases an argument without
  writing, plus ``_unsafe_view``) and a ``getitem`` of a multi-output op name their source's
  storage; a storage lives from its producer to the last node using any of its aliases, so its
  lifetime is the union over its aliases;
- an output of a multi-output op that no ``getitem`` claims lives at its producing step only;
- size = the storage extent (offset + the last element reachable through sizes and strides)
  times the element size, from ``node.meta['val']``; a dynamic dimension is taken at its upper
  bound from ``range_constraints`` (an unbounded one is an error: nothing static can hold it);
- graph outputs live to the end, mutable buffers (buffers the program writes) live throughout;
  parameters, constants and read-only buffers are not planned, nor is anything aliasing them;
  user inputs and outputs are planned or not by flag (ExecuTorch plans both by default).

Training steps (forward, backward, optimizer step) are recorded through public APIs by
``optplan.frontends.training`` and walked by the same ``_walk_graph``, so activations saved for
backward live until their last backward use.

Lifetimes are half-open ``[producer, last use + 1)`` with steps numbered over all graph nodes,
except that a control-flow node (``torch.cond``, ``while_loop``, ``map``, ``scan``,
``invoke_subgraph``) spans a window of steps in which its submodules' own nodes run, so their
temporaries are planned too (``_Walk`` says how; ``metadata['control_flow']`` lists each
window and its sub-windows). Without control flow a step is a node index. torch is imported
lazily: only this module needs it.
"""

from __future__ import annotations

import math
import operator
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optplan.core.buffer import Buffer, Memory
from optplan.core.errors import FormatError, OptplanError
from optplan.core.problem import Problem

if TYPE_CHECKING:
    import torch
    from torch.export import ExportedProgram

DEFAULT_ALIGNMENT = 16  # ExecuTorch's default tensor alignment


@dataclass
class _Storage:
    id: str
    size: int
    start: int
    end: int
    planned: bool
    kind: str  # "intermediate", "input", "output", "mutable_buffer", "constant" (torch); "weight" (ONNX)
    reads: int = 0  # consumers: the benefit of keeping it in fast memory is size x (1 write + reads)


def load_program(path: str | Path) -> ExportedProgram:
    """Read a saved ``.pt2`` ExportedProgram; a bad file is one FormatError line."""
    import torch

    path = Path(path)
    if path.suffix != ".pt2":
        raise FormatError(f"{path}: not a .pt2 file (save one with torch.export.save)")
    if not path.is_file():
        raise FormatError(f"{path}: no such file")
    try:
        return torch.export.load(str(path))
    except Exception as e:  # noqa: BLE001 - torch raises many kinds here; the user needs one line
        raise FormatError(f"{path}: cannot load the exported program: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None


def extract(path: str | Path, *, plan_inputs: bool = True, plan_outputs: bool = True,
            alignment: int = DEFAULT_ALIGNMENT) -> Problem:
    """The Problem of a saved ``.pt2`` program (what ``optplan extract`` writes)."""
    ep = load_program(path)
    return problem_from_program(ep, plan_inputs=plan_inputs, plan_outputs=plan_outputs,
                                alignment=alignment, name=Path(path).stem)


def decomposed(ep: ExportedProgram) -> ExportedProgram:
    """``ep`` in core ATen. torch 2.13's ``run_decompositions`` deep-copies its own module call
    graph, and copying a ``LeafSpec`` warns that ``isinstance(treespec, LeafSpec)`` is deprecated:
    torch's own matter, so that one warning is silenced here, where it arises, and no other."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning)
        return ep.run_decompositions()


def problem_from_program(ep: ExportedProgram, *, plan_inputs: bool = True, plan_outputs: bool = True,
                         alignment: int = DEFAULT_ALIGNMENT, decompose: bool = True,
                         name: str | None = None) -> Problem:
    """One buffer per planned storage of ``ep`` (decomposed to core ATen first by default)."""
    if decompose:
        ep = decomposed(ep)
    walk = _walk_program(ep, plan_inputs, plan_outputs)
    storages = walk.storages
    planned = [s for s in storages if s.planned and s.size > 0]
    buffers = tuple(Buffer(s.id, s.size, s.start, s.end, benefit=s.size * (1 + s.reads)) for s in planned)
    import torch

    metadata: dict[str, object] = {
        "frontend": "torch.export", "torch": torch.__version__.split("+")[0],
        "steps": walk.steps, "plan_inputs": plan_inputs, "plan_outputs": plan_outputs,
        "inputs": [s.id for s in planned if s.kind == "input"],
        "outputs": [s.id for s in planned if s.kind == "output"],
        "mutable_buffers": [s.id for s in planned if s.kind == "mutable_buffer"],
        "unplanned_bytes": sum(s.size for s in storages if not s.planned),
    }
    if name:
        metadata["model"] = name
    bounds = _dynamic_bounds(ep)
    if bounds:
        metadata["dynamic_upper_bounds"] = bounds
    if walk.windows:
        metadata["control_flow"] = walk.windows
    if walk.opaque:
        metadata["not_modeled"] = ("temporaries inside higher-order operators treated as single opaque ops "
                                   f"(their outputs are planned at their step): {', '.join(sorted(walk.opaque))}")
    return Problem(buffers, (Memory("mem", alignment=alignment),), (), metadata)


# -- the walk ----------------------------------------------------------------------------------

def _walk_program(ep: ExportedProgram, plan_inputs: bool, plan_outputs: bool, walk_type: type[_Walk] | None = None) -> _Walk:
    from torch.export.graph_signature import InputKind, OutputKind

    sig = ep.graph_signature
    input_kind = {s.arg.name: s for s in sig.input_specs if hasattr(s.arg, "name")}
    mutated_buffers = set(sig.buffers_to_mutate.values())
    mutated_inputs = set(sig.user_inputs_to_mutate.values())
    output_kind = {s.arg.name: s.kind for s in sig.output_specs if hasattr(s.arg, "name")}

    def placeholder(walk: _Walk, node: torch.fx.Node, val: torch.Tensor, steps: int) -> _Storage | None:
        spec = input_kind.get(node.name)
        if spec is None:
            return None
        if spec.kind == InputKind.USER_INPUT:
            s = walk.new(node.name, val, "input", plan_inputs, 0, 1)
            if node.name in mutated_inputs:
                s.end = steps  # written back at the end
            return s
        if spec.kind == InputKind.BUFFER and spec.target in mutated_buffers:
            return walk.new(node.name, val, "mutable_buffer", True, 0, steps)
        return walk.new(node.name, val, "constant", False, 0, 1)  # parameters, constants, read-only buffers

    def user_output(name: str) -> bool:
        kind = output_kind.get(name, OutputKind.USER_OUTPUT)
        return kind not in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION, OutputKind.TOKEN)

    return _walk_graph(ep.graph_module, ep.range_constraints, placeholder, user_output, plan_outputs, walk_type)


def _walk_graph(gm: torch.fx.GraphModule, ranges: dict, placeholder: Any, user_output: Any, plan_outputs: bool,
                walk_type: type[_Walk] | None = None) -> _Walk:
    """Walk a top-level graph in execution order. ``placeholder(walk, node, val, steps)`` makes
    the storage of a tensor input (or None: not tracked); ``user_output(name)`` says whether an
    output is the user's (planned by ``plan_outputs``) rather than state written back;
    ``walk_type``: a ``_Walk`` that records more (the graph front end's)."""
    import torch

    steps = _width(gm, top=True)
    walk = (walk_type or _Walk)(ranges)
    of: dict[str, list[_Storage | None]] = {}  # node name -> storage per tensor element
    t = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            t += 1
            val = node.meta.get("val")
            of[node.name] = [placeholder(walk, node, val, steps) if isinstance(val, torch.Tensor) else None]
        elif node.op == "output":
            t += 1
            for a in _input_nodes(node):
                user = user_output(a.name)
                for s in of.get(a.name, ()):
                    if s is None:
                        continue
                    s.end = steps
                    s.reads += 1  # the caller reads what the program returns
                    if user and s.kind in ("intermediate", "input"):
                        s.kind = "output" if s.kind == "intermediate" else s.kind
                        if not plan_outputs:
                            s.planned = False
        else:
            t = walk.step(gm, node, "", t, of, top=True)
    assert t == steps, (t, steps)
    walk.steps = steps
    walk.name_claimed()
    return walk


class _Walk:
    """Storages created while walking the program in execution order; ``step`` advances the step
    counter over one node (a control-flow node: over its whole window, walking its submodules).

    Control flow (``cond``, ``while_loop``, ``map_impl``, ``scan``, and ``invoke_subgraph``, a
    called subgraph, which strict export shares between its calls) is modelled as a runtime
    that runs the submodules out of the same arena as the enclosing graph:

    - the node's single step becomes a window: its submodules' steps one after another, each in
      its own sub-window (nested control flow recursively). Operands, and every outer storage
      live across the node, are used at the window's last step, so they are live throughout;
    - submodule placeholders alias what they are bound to, never new storage: the operands (for
      ``map``/``scan`` the mapped slice ``xs[i]`` is a view of ``xs``), or for loop-carried
      values the node's own output (below);
    - the node's outputs are storages of their own, live across the whole window (from its
      first step); a submodule's outputs are temporaries live to the end of their sub-window,
      where they are copied into the node's outputs. Conservative: a runtime that instead
      returns the submodule's output storage as the node's (eager torch) holds a subset of
      these bytes at every step, and any plan of this model gives one for it (put the aliased
      storage where the node's output is);
    - ``cond``: the two branches get consecutive, disjoint sub-windows, so their temporaries may
      share bytes. Exact: only one branch runs, and both see the same outer live set (the
      window's), so the plan must hold max(true, false) on top of it, never the sum;
    - ``while_loop``: one iteration is modelled, ``cond_fn`` then ``body_fn``: every iteration
      reuses the same space, so the iteration count (unknown statically) does not matter. The
      carried values live in the node's outputs (slots holding the current iteration's values,
      initialised from the operands, which stay untouched; with zero iterations they hold
      copies, as eager returns clones); both submodules read the slots. ``body_fn``'s results
      are temporaries copied into the slots at the end of the body, so a new value is never
      placed on top of the value it is computed from. Eager torch holds the same count (the
      operands, the previous iteration's results, the new ones); a runtime that updates in
      place needs less, which this model does not assume;
    - ``map_impl``: one application of the body; its results are copied into their slice of
      the node's stacked outputs (ExecuTorch's ``et_copy_index``). Not conservative for eager
      torch, which keeps every application's results and stacks them at the end. ``scan``: as
      ``map``, with the carry as in ``while_loop``. ``invoke_subgraph``: one call.

    Submodule storages are named ``<node>/<submodule attribute>/<its node>``. Any other
    higher-order operator is treated as a single opaque op (outputs planned at its step) and
    named in ``not_modeled``. In submodules only calls take steps (placeholders, ``get_attr``
    and output are free); in the top graph every node takes one.
    """

    def __init__(self, ranges: dict) -> None:
        self.ranges = ranges
        self.storages: list[_Storage] = []
        self.claimed: dict[str, dict[int, str]] = {}  # multi-output node -> element -> first getitem
        self.windows: list[dict[str, Any]] = []
        self.opaque: set[str] = set()
        self.steps = 0

    def new(self, name: str, val: Any, kind: str, planned: bool, start: int, end: int) -> _Storage:
        s = _Storage(name, _storage_bytes(val, self.ranges, name), start, end, planned, kind)
        self.storages.append(s)
        return s

    @staticmethod
    def use(of: dict[str, list[_Storage | None]], n: torch.fx.Node, i: int) -> None:
        for s in of.get(n.name, ()):
            if s is not None:
                s.end = max(s.end, i + 1)
                s.reads += 1

    def step(self, gm: torch.fx.GraphModule, node: torch.fx.Node, prefix: str, t: int,
             of: dict[str, list[_Storage | None]], top: bool) -> int:
        import torch

        if node.op != "call_function":  # get_attr (submodules, lifted constants): not planned
            of[node.name] = [None]
            return t + 1 if top else t
        val = node.meta.get("val")
        if node.target is operator.getitem:
            src, k = node.args[0], node.args[1]
            parts = of.get(src.name, [])
            s = parts[k] if isinstance(k, int) and k < len(parts) else None
            of[node.name] = [s]
            if s is not None:
                self.claimed.setdefault(prefix + src.name, {}).setdefault(k, prefix + node.name)
                s.end = max(s.end, t + 1)
            return t + 1
        layout = _hop_layout(gm, node)
        if layout is not None:
            return self.control_flow(gm, node, layout, prefix, t, of)
        if isinstance(node.target, torch._ops.HigherOrderOperator):
            self.opaque.add(node.target.name())
        for a in _input_nodes(node):
            self.use(of, a, t)
        vals = list(val) if isinstance(val, (tuple, list)) else [val]
        alias_of = _aliased_args(node)
        elems: list[_Storage | None] = []
        for j, v in enumerate(vals):
            if not isinstance(v, torch.Tensor):
                elems.append(None)
            elif j in alias_of or -1 in alias_of:  # -1: every element of a list return
                src = alias_of.get(j, alias_of.get(-1))
                s = of.get(src.name, [None])[0] if isinstance(src, torch.fx.Node) else None
                if s is not None:
                    s.end = max(s.end, t + 1)
                elems.append(s)
            else:
                suffix = f".{j}" if isinstance(val, (tuple, list)) else ""
                elems.append(self.new(prefix + node.name + suffix, v, "intermediate", True, t, t + 1))
        of[node.name] = elems
        return t + 1

    def control_flow(self, gm: torch.fx.GraphModule, node: torch.fx.Node, layout: list,
                     prefix: str, t: int, of: dict[str, list[_Storage | None]]) -> int:
        import torch

        end = t + _node_width(gm, node)
        val = node.meta.get("val")
        vals = list(val) if isinstance(val, (tuple, list)) else [val]
        outs = [self.new(prefix + node.name + (f".{j}" if isinstance(val, (tuple, list)) else ""), v,
                         "intermediate", True, t, end) if isinstance(v, torch.Tensor) else None
                for j, v in enumerate(vals)]
        window: dict[str, Any] = {"node": prefix + node.name, "op": node.target.name(), "steps": [t, end],
                                  "submodules": {}}
        self.windows.append(window)
        s = t
        for attr, sub, binds in layout:
            bound = [outs[x] if kind == "out" else
                     of.get(x.name, [None])[0] if isinstance(x, torch.fx.Node) else None
                     for kind, x in binds]
            e = self.submodule(sub, f"{prefix}{node.name}/{attr}/", s, bound)
            window["submodules"][attr] = [s, e]
            s = e
        for a in _input_nodes(node):
            self.use(of, a, end - 1)
        of[node.name] = outs
        return end

    def submodule(self, gm: torch.fx.GraphModule, prefix: str, t: int, bound: list[_Storage | None]) -> int:
        """Walk a submodule from step ``t``; its placeholders alias ``bound``; its outputs live
        to the end of its sub-window (the returned step), where they are copied out."""
        of: dict[str, list[_Storage | None]] = {}
        placeholders = iter(bound)
        outputs: list[torch.fx.Node] = []
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                of[node.name] = [next(placeholders)]
            elif node.op == "output":
                outputs = _input_nodes(node)
            else:
                t = self.step(gm, node, prefix, t, of, top=False)
        for a in outputs:
            self.use(of, a, t - 1)
        return t

    def name_claimed(self) -> None:
        """Name multi-output storages after the getitem that claims them."""
        for s in self.storages:
            base, _, k = s.id.rpartition(".")
            if base in self.claimed and k.isdigit() and int(k) in self.claimed[base]:
                s.id = self.claimed[base][int(k)]


def _hop_layout(gm: torch.fx.GraphModule, node: torch.fx.Node) -> list[tuple[str, Any, list]] | None:
    """The submodules of a control-flow node in window order: (attribute, GraphModule,
    placeholder bindings), a binding being ("arg", operand node) or ("out", k) for the node's
    k-th output. Argument positions as torch.export records them (2.13):
    cond(pred, true_gm, false_gm, operands), while_loop(cond_gm, body_gm, carried, additional),
    map_impl(body_gm, xs, args), scan(combine_gm, init, xs, additional),
    invoke_subgraph(gm, identifier, *operands). None for any other node, or one whose
    submodules do not take exactly these operands."""
    import torch

    if node.op != "call_function" or not isinstance(node.target, torch._ops.HigherOrderOperator):
        return None
    name, a = node.target.name(), node.args
    if name == "cond" and len(a) == 4:
        operands = [("arg", x) for x in a[3]]
        graphs = [(a[1], operands), (a[2], operands)]
    elif name == "while_loop" and len(a) == 4:
        binds = [("out", k) for k in range(len(a[2]))] + [("arg", x) for x in a[3]]
        graphs = [(a[0], binds), (a[1], binds)]
    elif name == "map_impl" and len(a) == 3:
        graphs = [(a[0], [("arg", x) for x in (*a[1], *a[2])])]
    elif name == "scan" and len(a) == 4:
        graphs = [(a[0], [("out", k) for k in range(len(a[1]))] + [("arg", x) for x in (*a[2], *a[3])])]
    elif name == "invoke_subgraph" and len(a) >= 2:
        graphs = [(a[0], [("arg", x) for x in a[2:]])]
    else:
        return None
    out = []
    for attr, binds in graphs:
        if not (isinstance(attr, torch.fx.Node) and attr.op == "get_attr"):
            return None
        sub = _submodule(gm, attr.target)
        if not isinstance(sub, torch.fx.GraphModule):
            return None
        if sum(n.op == "placeholder" for n in sub.graph.nodes) != len(binds):
            return None
        out.append((attr.target, sub, binds))
    return out


def _submodule(gm: torch.fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part, None)
    return obj


def _width(gm: torch.fx.GraphModule, top: bool) -> int:
    """Steps a graph occupies: in the top graph every node takes one (the numbering torch's own
    curve uses); in a submodule only calls do. A control-flow node takes its window."""
    return sum(_node_width(gm, n) if n.op == "call_function" else int(top) for n in gm.graph.nodes)


def _node_width(gm: torch.fx.GraphModule, node: torch.fx.Node) -> int:
    layout = _hop_layout(gm, node)
    if layout is None:
        return 1
    return max(1, sum(_width(sub, top=False) for _, sub, _ in layout))


def _input_nodes(node: torch.fx.Node) -> list[torch.fx.Node]:
    import torch

    out: list[torch.fx.Node] = []
    torch.fx.node.map_arg((node.args, node.kwargs), out.append)
    return out


def _aliased_args(node: torch.fx.Node) -> dict[int, Any]:
    """Return index -> the argument (a Node) whose storage that return aliases (-1: every
    element of a list return). Schema-driven: a return carrying alias info names its argument;
    ``_unsafe_view`` aliases its input without saying so."""
    import torch

    target = node.target
    schema = getattr(target, "_schema", None)
    if schema is None:
        return {}
    if target is torch.ops.aten._unsafe_view.default:
        return {0: node.args[0]}
    out: dict[int, Any] = {}
    for j, ret in enumerate(schema.returns):
        info = ret.alias_info
        if info is None:
            continue
        sets = set(info.before_set)  # empty for a list return: its elements carry the set
        for pos, arg in enumerate(schema.arguments):
            if arg.alias_info is not None and (not sets or sets & set(arg.alias_info.before_set)):
                value = node.args[pos] if pos < len(node.args) else node.kwargs.get(arg.name)
                is_list = isinstance(ret.type, torch.ListType)
                out[-1 if is_list else j] = value
                break
    return out


# -- sizes -------------------------------------------------------------------------------------

def _storage_bytes(t: torch.Tensor, ranges: dict, where: str) -> int:
    """Bytes of the storage ``t`` needs: its extent (offset + 1 + sum((size-1)*stride)) at the
    upper bound of every dynamic dimension, times the element size."""
    import sympy
    import torch

    def expr(x: Any) -> Any:
        return x.node.expr if isinstance(x, torch.SymInt) else sympy.Integer(int(x))

    sizes = [expr(s) for s in t.shape]
    if any(s == 0 for s in sizes):
        return 0
    extent = expr(t.storage_offset()) + 1 + sum(((s - 1) * expr(st) for s, st in zip(sizes, t.stride())), sympy.Integer(0))
    return int(_upper(extent, ranges, where)) * t.dtype.itemsize


def _upper(e: Any, ranges: dict, where: str) -> int:
    import sympy

    if isinstance(e, sympy.Integer) or not getattr(e, "free_symbols", None):
        return int(e)
    from torch.utils._sympy.value_ranges import bound_sympy

    hi = bound_sympy(e, ranges).upper
    try:
        return max(0, int(math.ceil(hi)))  # noqa: RUF046 - sympy's ceil is a sympy Integer
    except (TypeError, ValueError, OverflowError, AttributeError):  # oo, int_oo, symbolic
        free = ", ".join(sorted(str(s) for s in e.free_symbols))
        raise OptplanError(f"node {where!r}: dynamic dimension {free} has no upper bound; "
                           f"export with torch.export.Dim(..., max=...) so a static plan can hold it") from None


def _dynamic_bounds(ep: ExportedProgram) -> dict[str, int]:
    out = {}
    for sym, vr in ep.range_constraints.items():
        try:
            out[str(sym)] = int(vr.upper)
        except (TypeError, ValueError, OverflowError, AttributeError):
            continue
    return out


# -- torch's own cross-check -------------------------------------------------------------------

def eager_live_peak(ep: ExportedProgram, args: tuple, *, plan_inputs: bool = True,
                    plan_outputs: bool = True, decompose: bool = True) -> dict[str, Any]:
    """Run ``ep`` on real tensors and measure what is live, independently of the extractor.

    torch.fx's Interpreter drops each value after its last use (the same schedule fx codegen
    emits); after every node we sum ``untyped_storage().nbytes()`` over the distinct storages
    (by data pointer) still held, skipping parameters and constants. Aliasing thus comes from
    real storages, sizes from real allocations. Multi-output elements no ``getitem`` claims are
    dropped right after their step, as the extractor assumes. A control-flow node is one step
    here (its submodules run inside it, unseen), so compare only outside its window. Returns
    ``peak`` (bytes), the ``step`` where it occurs and the live bytes after every node
    (``curve``).
    """
    import torch
    from torch.export.graph_signature import OutputKind

    if decompose:
        ep = decomposed(ep)
    sig = ep.graph_signature
    gm = ep.graph_module
    inputs, skip, always = _eager_inputs(ep, args, plan_inputs)
    user_outputs = {s.arg.name for s in sig.output_specs
                    if s.kind not in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION)}
    # A storage *instance* is a data pointer from the step it appears until it disappears (a
    # pointer can be reused after a free). Returned storages are known only at the output node,
    # so steps record instances and the curve is summed at the end.
    steps: list[list[int]] = []
    sizes: list[int] = []
    current: dict[tuple[int, int], int] = {}  # (data pointer, bytes) -> live instance
    dropped: set[int] = set()  # instances returned to the user when outputs are not planned

    class Meter(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            nonlocal current
            out = super().run_node(n)
            now: dict[tuple[int, int], int] = {}
            for t in torch.utils._pytree.tree_leaves(list(self.env.values()) + [out]):
                if isinstance(t, torch.Tensor):
                    st = t.untyped_storage()
                    if st.data_ptr() in skip or st.nbytes() == 0:
                        continue
                    ptr = (st.data_ptr(), st.nbytes())  # a freed address may come back at another size
                    if ptr in now:
                        continue
                    if ptr not in current:
                        current[ptr] = len(sizes)
                        sizes.append(st.nbytes())
                    now[ptr] = current[ptr]
            current = now
            steps.append(list(now.values()))
            if n.op == "output" and not plan_outputs:
                for a in _input_nodes(n):
                    if a.name in user_outputs:
                        for t in torch.utils._pytree.tree_leaves(self.env[a]):
                            key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()) if isinstance(t, torch.Tensor) else None
                            if key in now:
                                dropped.add(now[key])
            if isinstance(out, (tuple, list)) and n.op == "call_function":
                keep = {u.args[1] for u in n.users if u.target is operator.getitem}
                out = type(out)(x if k in keep else None for k, x in enumerate(out))
            return out

    with torch.no_grad():
        Meter(gm).run(*inputs)
    base = sum(always.values())
    curve = [base + sum(sizes[k] for k in live if k not in dropped) for live in steps]
    peak = max(curve, default=0)
    return {"peak": peak, "step": curve.index(peak) if curve else 0, "curve": curve}


def _eager_inputs(ep: ExportedProgram, args: tuple, plan_inputs: bool) -> tuple[list, set[int], dict[int, int]]:
    """What ``eager_live_peak`` runs the program on: copies of the user inputs and mutable
    buffers, the parameters and constants as they are; the data pointers not to count (parameters,
    constants, unplanned inputs, and the mutable buffers, counted throughout instead: ``always``,
    pointer -> bytes)."""
    import torch
    from torch.export.graph_signature import InputKind

    mutated = set(ep.graph_signature.buffers_to_mutate.values())
    user_iter = iter(list(torch.utils._pytree.tree_leaves(args)))
    inputs, skip, always = [], set(), {}
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            v = next(user_iter)
            if isinstance(v, torch.Tensor):
                v = v.clone()
                if not plan_inputs:
                    skip.add(v.untyped_storage().data_ptr())
        elif spec.kind == InputKind.PARAMETER or spec.kind == InputKind.BUFFER:
            v = ep.state_dict[spec.target] if spec.target in ep.state_dict else ep.constants[spec.target]
            if spec.kind == InputKind.BUFFER and spec.target in mutated:
                v = v.clone()
                always[v.untyped_storage().data_ptr()] = v.untyped_storage().nbytes()
            skip.add(v.untyped_storage().data_ptr())  # a mutable buffer: counted throughout, not per step
        else:
            v = ep.constants[spec.target]
            if isinstance(v, torch.Tensor):
                skip.add(v.untyped_storage().data_ptr())
        inputs.append(v)
    return inputs, skip, always
