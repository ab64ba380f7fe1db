"""``optplan extract``: buffers and lifetimes of a torch program or an ONNX model, as a problem file.
torch and onnx are optional extras, imported when a model of theirs is read."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from optplan.cli.commands import hierarchy
from optplan.cli.output import EXIT_OK, say
from optplan.core.errors import OptplanError

if TYPE_CHECKING:
    from optplan.core.problem import Problem
    from optplan.graph.model import Graph


def extract(args: argparse.Namespace) -> int:
    from optplan.core.problem import Problem
    from optplan.formats import check_output, write_problem

    source = str(args.program)
    if source.endswith(".onnx"):
        problem = _extract_onnx(args)
    elif args.dim or args.include_weights or not args.views_alias:
        raise OptplanError("--dim, --include-weights and --view-copies apply to .onnx models only")
    elif ".py:" in source:
        problem = _extract_module(args)
    elif args.training:
        raise OptplanError("--training needs a module given as path.py:factory")
    else:
        problem = _extract_torch(args)
    if not isinstance(problem, Problem):  # --graph
        from optplan.cli import graph as graphs

        return graphs.write(args, problem)
    problem = hierarchy(problem, args)
    check_output(args.output, "problem", len(problem.memories), bool(problem.relative))
    write_problem(problem, args.output)
    say(f"{len(problem.buffers)} buffers over {problem.metadata['steps']} steps written to {args.output}")
    return EXIT_OK


def _extract_torch(args: argparse.Namespace) -> Problem | Graph:
    _extract_torch_available()
    from optplan.frontends.torch_export import extract
    from optplan.frontends.torch_graph import extract_graph

    return (extract_graph if args.graph else extract)(args.program, plan_inputs=args.plan_inputs,
                                                      plan_outputs=args.plan_outputs, alignment=args.alignment)


def _extract_module(args: argparse.Namespace) -> Problem | Graph:
    """``path.py:factory`` returning (model, example_inputs[, loss]): one training step with
    ``--training``, else the inference program through torch.export."""
    _extract_torch_available()
    import torch

    from optplan.frontends.torch_export import problem_from_program
    from optplan.frontends.torch_graph import graph_from_program
    from optplan.frontends.training import extract_training, load_factory

    model, inputs, *loss = load_factory(args.program)
    name = Path(args.program.rpartition(":")[0]).stem
    if args.training:
        return extract_training(model, tuple(inputs), loss[0] if loss else None, plan_inputs=args.plan_inputs,
                                alignment=args.alignment, name=name, graph=args.graph)
    with torch.no_grad():
        ep = torch.export.export(model.eval(), tuple(inputs))
    return (graph_from_program if args.graph else problem_from_program)(
        ep, plan_inputs=args.plan_inputs, plan_outputs=args.plan_outputs, alignment=args.alignment, name=name)


def _extract_torch_available() -> None:
    try:
        import torch  # noqa: F401 - an optional extra
    except ImportError as e:
        raise OptplanError(f"extract needs torch: pip install 'optplan[torch]' ({e})") from None


def _extract_onnx(args: argparse.Namespace) -> Problem | Graph:
    try:
        import onnx  # noqa: F401 - an optional extra
    except ImportError as e:
        raise OptplanError(f"extracting an ONNX model needs onnx: pip install 'optplan[onnx]' ({e})") from None
    from optplan.frontends.onnx_model import extract_onnx

    dims: dict[str, int] = {}
    for item in args.dim:
        key, sep, value = item.partition("=")
        if not sep or not key or not value.strip().isdigit():
            raise OptplanError(f"--dim {item}: expected name=value with a non-negative integer value")
        dims[key] = int(value)
    return extract_onnx(args.program, dims=dims, include_weights=args.include_weights, views_alias=args.views_alias,
                        plan_inputs=args.plan_inputs, plan_outputs=args.plan_outputs, alignment=args.alignment,
                        graph=args.graph)
