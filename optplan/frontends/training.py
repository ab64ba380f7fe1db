"""Buffers and lifetimes of one training step: forward, backward and an optimizer step.

Built only on APIs torch documents: ``torch.func.functional_call`` runs the model on
parameters passed in, ``torch.autograd.grad`` differentiates, a ``torch.optim`` optimizer
updates the parameters in place, and ``torch.fx.experimental.proxy_tensor.make_fx`` (fake
tensors, so no real memory or compute) records every ATen op the three run, backward included.
The recorded graph is walked as the torch.export front end walks a program (one buffer per
storage, views and in-place ops alias their source, a tensor lives from its producer to its
last reader), so an activation saved for backward lives until the backward op that reads it,
and a gradient until the optimizer step consumes it.

Parameters and buffers are the model's state: not planned (as in the inference front end),
updated in place by the step. Example inputs are planned (``plan_inputs``); the loss is an
output; optimizer state created by the step (momentum, Adam's moments) is returned by the
step, so it lives to the end (``metadata['outputs']``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optplan.core.buffer import Buffer, Memory
from optplan.core.errors import OptplanError
from optplan.core.problem import Problem
from optplan.frontends.graph_build import build_graph
from optplan.frontends.torch_export import DEFAULT_ALIGNMENT, _Storage, _Walk, _walk_graph
from optplan.frontends.torch_graph import GraphWalk
from optplan.graph.model import Graph

if TYPE_CHECKING:
    import torch


def extract_training(model: torch.nn.Module, example_inputs: Sequence[Any], loss: Callable[[Any], Any] | None = None, *,
                     optimizer: Callable[[list], Any] | None = None, plan_inputs: bool = True,
                     alignment: int = DEFAULT_ALIGNMENT, name: str | None = None, graph: bool = False) -> Problem | Graph:
    """The Problem of one training step of ``model`` on ``example_inputs`` (``graph``: its Graph,
    ``optplan.frontends.torch_graph``: ops and tensors, the order free; op ids are the node names of
    the recorded ``torch.fx`` graph, ``record_training``'s).

    ``loss(output)`` turns the model's output into a scalar; None: the model returns its loss
    (a tensor with more than one element is summed). ``optimizer(params)`` builds a
    ``torch.optim`` optimizer (default: SGD, lr 0.01).
    """
    import torch

    gm = record_training(model, example_inputs, loss, optimizer)
    n_params = sum(1 for _ in model.parameters()) + sum(1 for _ in model.buffers())
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    state = {n.name for n in placeholders[:n_params]}

    def placeholder(walk: _Walk, node: torch.fx.Node, val: torch.Tensor, steps: int) -> _Storage:
        if node.name in state:
            return walk.new(node.name, val, "constant", False, 0, 1)
        return walk.new(node.name, val, "input", plan_inputs, 0, 1)

    walk = _walk_graph(gm, {}, placeholder, lambda _: True, plan_outputs=True, walk_type=GraphWalk if graph else None)
    if isinstance(walk, GraphWalk):
        meta = {"frontend": "torch training step (make_fx: forward, backward, optimizer step)",
                "torch": torch.__version__.split("+")[0], "plan_inputs": plan_inputs, **({"model": name} if name else {})}
        return build_graph(walk.records, walk.storages, walk.steps, (Memory("mem", alignment=alignment),), meta, benefit=False)
    planned = [s for s in walk.storages if s.planned and s.size > 0]
    metadata: dict[str, object] = {
        "frontend": "torch training step (make_fx: forward, backward, optimizer step)",
        "torch": torch.__version__.split("+")[0], "steps": walk.steps, "plan_inputs": plan_inputs,
        "inputs": [s.id for s in planned if s.kind == "input"],
        "outputs": [s.id for s in planned if s.kind == "output"],  # the loss, then optimizer state
        "unplanned_bytes": sum(s.size for s in walk.storages if not s.planned),
    }
    if name:
        metadata["model"] = name
    if walk.windows:
        metadata["control_flow"] = walk.windows
    return Problem(tuple(Buffer(s.id, s.size, s.start, s.end) for s in planned),
                   (Memory("mem", alignment=alignment),), (), metadata)


def record_training(model: torch.nn.Module, example_inputs: Sequence[Any], loss: Callable[[Any], Any] | None = None,
                    optimizer: Callable[[list], Any] | None = None) -> torch.fx.GraphModule:
    """The training step as ``make_fx`` records it (fake tensors): the graph module
    ``extract_training`` walks, and that ``torch_graph.reorder_nodes`` reorders."""
    from torch.fx.experimental.proxy_tensor import make_fx

    model.train()
    # a loss closing over real tensors (targets) is allowed: they become constants of the graph
    return make_fx(_step_function(model, loss, optimizer), tracing_mode="fake",
                   _allow_non_fake_inputs=True)(*_step_args(model, example_inputs))


def _step_args(model: torch.nn.Module, example_inputs: Sequence[Any]) -> list[Any]:
    params = [p.detach().clone().requires_grad_(True) for p in model.parameters()]
    buffers = [b.detach().clone() for b in model.buffers()]
    return [*params, *buffers, *example_inputs]


def _step_function(model: torch.nn.Module, loss: Callable[[Any], Any] | None,
                   optimizer: Callable[[list], Any] | None) -> Callable[..., Any]:
    """``step(*params, *buffers, *inputs) -> (loss, *optimizer state)``: the training step as a
    function of tensors, which make_fx records and the profiler check runs eagerly."""
    import torch

    names = [k for k, _ in model.named_parameters()]
    buffer_names = [k for k, _ in model.named_buffers()]
    make_optimizer = optimizer or (lambda ps: torch.optim.SGD(ps, lr=0.01))

    def step(*args: Any) -> tuple:
        params = list(args[:len(names)])
        buffers = args[len(names):len(names) + len(buffer_names)]
        inputs = args[len(names) + len(buffer_names):]
        out = torch.func.functional_call(model, {**dict(zip(names, params)), **dict(zip(buffer_names, buffers))},
                                         tuple(inputs))
        value = _scalar(out if loss is None else loss(out))
        # a parameter the loss does not reach (a frozen head, an unused branch) has no gradient, and the
        # optimizer skips it, as in a training loop, rather than the recording failing
        grads = torch.autograd.grad(value, params, allow_unused=True)
        opt = make_optimizer(params)
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()
        opt.zero_grad(set_to_none=True)  # a training loop drops the gradients before the next step
        del grads
        state = [v for st in opt.state.values() for v in st.values() if isinstance(v, torch.Tensor) and v.dim() > 0]
        return (value.detach(), *state)

    return step


def _scalar(out: Any) -> Any:
    import torch

    leaves = [x for x in torch.utils._pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]
    if not leaves:
        raise OptplanError("training step: the model's output holds no tensor to take a loss of; pass loss=")
    return leaves[0] if leaves[0].numel() == 1 else leaves[0].sum()


# -- eager measurement: torch's own profiler on the same step -----------------------------------

def profiler_peak(model: torch.nn.Module, example_inputs: Sequence[Any], loss: Callable[[Any], Any] | None = None, *,
                  optimizer: Callable[[list], Any] | None = None) -> dict[str, int]:
    """Run the same step eagerly under ``torch.profiler.profile(profile_memory=True)`` on CPU and
    return the peak of the bytes allocated during it (allocations minus frees, in event order,
    over the copies of the parameters and inputs made before the step), and what is still
    allocated at its end."""
    from torch.profiler import ProfilerActivity, profile

    model.train()
    step = _step_function(model, loss, optimizer)
    args = _step_args(model, example_inputs)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = step(*args)
    # each allocation and free is charged to the innermost op running it (its self memory: the
    # net of what it allocated and freed), or to a "[memory]" event outside any op; replayed in
    # time order with an op's net allocation at its start and its net release at its end
    changes = sorted((e.time_range.start if e.self_cpu_memory_usage > 0 else e.time_range.end, e.self_cpu_memory_usage)
                     for e in prof.events() if e.self_cpu_memory_usage)
    live = peak = 0
    for _, delta in changes:
        live += delta
        peak = max(peak, live)
    del result
    return {"peak": peak, "end": live}


# -- the CLI's module loader ---------------------------------------------------------------------

def load_factory(spec: str) -> tuple[Any, ...]:
    """``path.py:factory`` -> what ``factory()`` returns: ``(model, example_inputs)`` or
    ``(model, example_inputs, loss)``. Errors are one line naming the file or the factory."""
    path_text, sep, attr = spec.rpartition(":")
    if not sep or not path_text.endswith(".py") or not attr.isidentifier():
        raise OptplanError(f"{spec}: expected path.py:factory")
    path = Path(path_text)
    if not path.is_file():
        raise OptplanError(f"{path}: no such file")
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - the user's module: report its error in one line
        raise OptplanError(f"{path}: importing it failed: {type(e).__name__}: {e}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise OptplanError(f"{path}: no function {attr!r}")
    try:
        made = factory()
    except Exception as e:  # noqa: BLE001
        raise OptplanError(f"{spec}: the factory failed: {type(e).__name__}: {e}") from None
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise OptplanError(f"{spec}: the factory must return (model, example_inputs) or (model, example_inputs, loss)")
    return made
