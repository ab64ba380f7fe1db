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

Training: a joint forward + backward program (``torch.export.experimental.
_export_forward_backward``) is one graph, so activations saved for backward simply live until
their last backward use, and gradients are outputs.

Lifetimes are half-open ``[producer, last use + 1)`` with steps numbered over all graph nodes.
torch is imported lazily: only this module needs it.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optplan.errors import FormatError, OptplanError
from optplan.problem import Buffer, Memory, Problem

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
    kind: str  # "intermediate", "input", "output", "mutable_buffer", "constant"


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


def problem_from_program(ep: ExportedProgram, *, plan_inputs: bool = True, plan_outputs: bool = True,
                         alignment: int = DEFAULT_ALIGNMENT, decompose: bool = True,
                         name: str | None = None) -> Problem:
    """One buffer per planned storage of ``ep`` (decomposed to core ATen first by default)."""
    if decompose:
        ep = ep.run_decompositions()
    storages = _storages(ep, plan_inputs, plan_outputs)
    planned = [s for s in storages if s.planned and s.size > 0]
    buffers = tuple(Buffer(s.id, s.size, s.start, s.end) for s in planned)
    steps = len(ep.graph.nodes)
    import torch

    metadata: dict[str, object] = {
        "frontend": "torch.export", "torch": torch.__version__.split("+")[0],
        "steps": steps, "plan_inputs": plan_inputs, "plan_outputs": plan_outputs,
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
    if any(isinstance(n.target, torch._ops.HigherOrderOperator) for n in ep.graph.nodes):
        metadata["not_modeled"] = "temporaries inside control-flow submodules (cond, while_loop, map)"
    return Problem(buffers, (Memory("mem", alignment=alignment),), (), metadata)


# -- the walk ----------------------------------------------------------------------------------

def _storages(ep: ExportedProgram, plan_inputs: bool, plan_outputs: bool) -> list[_Storage]:
    import torch
    from torch.export.graph_signature import InputKind, OutputKind

    sig = ep.graph_signature
    nodes = list(ep.graph.nodes)
    steps = len(nodes)
    input_kind = {s.arg.name: s for s in sig.input_specs if hasattr(s.arg, "name")}
    mutated_buffers = set(sig.buffers_to_mutate.values())
    mutated_inputs = set(sig.user_inputs_to_mutate.values())
    output_kind = {s.arg.name: s.kind for s in sig.output_specs if hasattr(s.arg, "name")}
    ranges = ep.range_constraints

    storages: list[_Storage] = []
    of: dict[str, list[_Storage | None]] = {}  # node name -> storage per tensor element
    claimed: dict[str, dict[int, str]] = {}  # multi-output node -> element -> first getitem name

    def new(node: torch.fx.Node, val: Any, kind: str, planned: bool, start: int, end: int,
            suffix: str = "") -> _Storage:
        s = _Storage(node.name + suffix, _storage_bytes(val, ranges, node.name), start, end, planned, kind)
        storages.append(s)
        return s

    def use(n: torch.fx.Node, i: int) -> None:
        for s in of.get(n.name, ()):
            if s is not None:
                s.end = max(s.end, i + 1)

    for i, node in enumerate(nodes):
        val = node.meta.get("val")
        if node.op == "placeholder":
            spec = input_kind.get(node.name)
            if not isinstance(val, torch.Tensor) or spec is None:
                of[node.name] = [None]
                continue
            if spec.kind == InputKind.USER_INPUT:
                s = new(node, val, "input", plan_inputs, 0, 1)
                if node.name in mutated_inputs:
                    s.end = steps  # written back at the end
            elif spec.kind == InputKind.BUFFER and spec.target in mutated_buffers:
                s = new(node, val, "mutable_buffer", True, 0, steps)
            else:  # parameters, constants, read-only buffers: not planned
                s = new(node, val, "constant", False, 0, 1)
            of[node.name] = [s]
        elif node.op == "call_function" and node.target is operator.getitem:
            src, k = node.args[0], node.args[1]
            elems = of.get(src.name, [])
            s = elems[k] if isinstance(k, int) and k < len(elems) else None
            of[node.name] = [s]
            if s is not None:
                claimed.setdefault(src.name, {}).setdefault(k, node.name)
                s.end = max(s.end, i + 1)
        elif node.op == "call_function":
            for a in _input_nodes(node):
                use(a, i)
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
                        s.end = max(s.end, i + 1)
                    elems.append(s)
                else:
                    suffix = f".{j}" if isinstance(val, (tuple, list)) else ""
                    elems.append(new(node, v, "intermediate", True, i, i + 1, suffix))
            of[node.name] = elems
        elif node.op == "output":
            for a in _input_nodes(node):
                kind = output_kind.get(a.name, OutputKind.USER_OUTPUT)
                for s in of.get(a.name, ()):
                    if s is None:
                        continue
                    s.end = steps
                    if kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION, OutputKind.TOKEN):
                        continue
                    if s.kind in ("intermediate", "input"):
                        s.kind = "output" if s.kind == "intermediate" else s.kind
                        if not plan_outputs:
                            s.planned = False
        else:  # get_attr (submodules, lifted constants): not planned
            of[node.name] = [None]

    # name multi-output storages after the getitem that claims them
    for s in storages:
        base, _, k = s.id.rpartition(".")
        if base in claimed and k.isdigit() and int(k) in claimed[base]:
            s.id = claimed[base][int(k)]
    return storages


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
    dropped right after their step, as the extractor assumes. Returns ``peak`` (bytes), the
    ``step`` where it occurs and the live bytes after every node (``curve``).
    """
    import torch
    from torch.export.graph_signature import InputKind, OutputKind

    if decompose:
        ep = ep.run_decompositions()
    sig = ep.graph_signature
    gm = ep.graph_module
    mutated = set(sig.buffers_to_mutate.values())
    flat_args = list(torch.utils._pytree.tree_leaves(args))
    user_iter = iter(flat_args)
    inputs, skip, always = [], set(), {}
    for spec in sig.input_specs:
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
                skip.add(v.untyped_storage().data_ptr())  # counted throughout, not per step
            else:
                skip.add(v.untyped_storage().data_ptr())
        else:
            v = ep.constants[spec.target]
            if isinstance(v, torch.Tensor):
                skip.add(v.untyped_storage().data_ptr())
        inputs.append(v)
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
