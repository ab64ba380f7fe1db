"""The front ends' graphs (torch.export, a training step, ONNX) and the torch.fx reordering: the
given order's lifetimes are the problem extraction's, elementwise ops declare reuse, and a plan's
order applied to the fx graph computes the same outputs on random inputs."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from torch.export import export

from optplan.cli import main
from optplan.core.bounds import lower_bounds
from optplan.core.errors import OptplanError
from optplan.formats import read_input
from optplan.frontends.torch_export import problem_from_program
from optplan.frontends.torch_graph import graph_from_program, reorder_nodes, reorder_program
from optplan.frontends.training import _step_args, extract_training, record_training
from optplan.graph import Graph
from optplan.graph.loads import Loads
from optplan.graph.planner import solve_graph


class Branches(torch.nn.Module):
    """Three branches off one input, each widening then narrowing, summed at the end: the export
    runs each branch's wide op first, so a branch-at-a-time order needs far less."""

    def __init__(self) -> None:
        super().__init__()
        self.wide = torch.nn.ModuleList(torch.nn.Linear(8, 64) for _ in range(3))
        self.narrow = torch.nn.ModuleList(torch.nn.Linear(64, 8) for _ in range(3))

    def forward(self, x):
        wide = [torch.relu(w(x)) for w in self.wide]
        return sum(n(h) for n, h in zip(self.narrow, wide)) * 2


def _program():
    torch.manual_seed(0)
    return export(Branches().eval(), (torch.randn(4, 8),)).run_decompositions()


def test_the_given_order_is_the_problem_extraction() -> None:
    ep = _program()
    g = graph_from_program(ep, decompose=False)
    p = problem_from_program(ep, decompose=False)
    assert {t.id for t in g.tensors if t.size} == {b.id for b in p.buffers}
    assert Loads(g.structure).score(g.given_order, reuse=False)[0] == lower_bounds(p).lower["mem"]
    relu = next(o for o in g.ops if o.id.startswith("relu"))
    assert relu.reuse == ((relu.outputs[0], relu.inputs[0]),)  # elementwise, same shape and dtype
    assert not next(o for o in g.ops if o.id.startswith("addmm")).reuse


def test_reordered_program_computes_the_same_outputs() -> None:
    ep = _program()
    g = graph_from_program(ep, decompose=False)
    given, chosen = solve_graph(g, time_limit=20), solve_graph(g, reorder=True, time_limit=20)
    assert chosen.plan.peak["mem"] < given.plan.peak["mem"]
    assert list(chosen.order) != [o.id for o in g.ops]
    before = [n.name for n in ep.graph.nodes]
    torch.manual_seed(1)
    inputs = [torch.randn(4, 8) for _ in range(3)]
    reference = [ep.module()(x) for x in inputs]
    reorder_program(ep, chosen.order)
    after = [n.name for n in ep.graph.nodes]
    assert sorted(after) == sorted(before) and after != before  # the same nodes, moved
    assert [n for n in after if n in set(chosen.order)] == list(chosen.order)
    for x, ref in zip(inputs, reference):
        torch.testing.assert_close(ep.module()(x), ref, rtol=0, atol=0)


def test_a_training_step_reordered_updates_the_same_parameters() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(inplace=True),
                                torch.nn.Conv2d(8, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(128, 4))
    x = torch.randn(2, 3, 8, 8)
    g = extract_training(model, [x], graph=True)
    assert isinstance(g, Graph) and any(t.id.endswith(".after") for t in g.tensors)  # updates in place ordered
    chosen = solve_graph(g, reorder=True, time_limit=20)
    assert chosen.plan.peak["mem"] < solve_graph(g, time_limit=20).plan.peak["mem"]  # each update after its gradient
    reference, reordered = record_training(model, [x]), record_training(model, [x])
    reorder_nodes(reordered, chosen.order)
    for _ in range(2):
        args = _step_args(model, [torch.randn(2, 3, 8, 8)])
        a, b = [t.clone() for t in args], [t.clone() for t in args]
        torch.testing.assert_close(reference(*a), reordered(*b), rtol=0, atol=0)
        for p, q in zip(a, b):  # the parameters the step updated in place
            torch.testing.assert_close(p, q, rtol=0, atol=0)


def test_an_order_that_breaks_a_dependency_is_refused() -> None:
    ep = _program()
    g = graph_from_program(ep, decompose=False)
    order = [o.id for o in g.ops]
    with pytest.raises(OptplanError, match="runs before op"):
        reorder_program(ep, order[::-1])
    with pytest.raises(OptplanError, match="not a node"):
        reorder_program(ep, ["nope"])


def test_control_flow_has_no_graph_form() -> None:
    class Cond(torch.nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda y: y.sin(), lambda y: y.cos(), (x,))

    with pytest.raises(OptplanError, match="control flow"):
        graph_from_program(export(Cond(), (torch.randn(4),)))


def test_cli_extract_graph_and_solve(tmp_path, capsys) -> None:
    ep = export(Branches().eval(), (torch.randn(4, 8),))
    torch.export.save(ep, str(tmp_path / "m.pt2"))
    assert main(["extract", str(tmp_path / "m.pt2"), "--graph", "-o", str(tmp_path / "g.json")]) == 0
    assert "ops" in capsys.readouterr().out
    g = read_input(tmp_path / "g.json")
    assert isinstance(g, Graph) and g.metadata["model"] == "m"
    assert main(["solve", str(tmp_path / "g.json"), "--reorder", "--json", "--time-limit", "10", "-o", str(tmp_path / "p.json")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["order"] and doc["status"] == "OPTIMAL"
    assert main(["validate", str(tmp_path / "g.json"), str(tmp_path / "p.json")]) == 0


def test_onnx_graph_declares_elementwise_reuse(tmp_path) -> None:
    onnx = pytest.importorskip("onnx")
    h, T = onnx.helper, onnx.TensorProto
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 16])
    y = h.make_tensor_value_info("y", T.FLOAT, None)
    nodes = [h.make_node("Relu", ["x"], ["a"]), h.make_node("Relu", ["a"], ["b"]), h.make_node("Add", ["a", "b"], ["c"]),
             h.make_node("Reshape", ["c", "shape"], ["d"]), h.make_node("Relu", ["d"], ["y"])]
    shape = h.make_tensor("shape", T.INT64, [2], [4, 4])
    model = h.make_model(h.make_graph(nodes, "g", [x], [y], initializer=[shape]), opset_imports=[h.make_opsetid("", 17)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    assert main(["extract", str(tmp_path / "m.onnx"), "--graph", "-o", str(tmp_path / "g.json")]) == 0
    g = read_input(tmp_path / "g.json")
    assert isinstance(g, Graph)
    assert [o.id for o in g.ops] == ["a", "b", "c", "y"]  # the Reshape is a view: no op
    assert dict((o.id, o.reuse) for o in g.ops) == {"a": (("a", "x"),), "b": (), "c": (("c", "a"),), "y": (("y", "c"),)}
    assert g.ops[3].inputs == ("c",)  # y reads the reshaped c's storage
    gp = solve_graph(g, time_limit=10)
    assert gp.plan.peak["mem"] == 3 * 64 - 64  # x, a, b at b's step; c in a's bytes, y in c's
