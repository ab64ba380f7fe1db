"""Extraction of buffers and lifetimes from torch.export programs, against hand-computed answers.

Every expected table below was worked out by hand from the printed decomposed graph (the node
list is asserted too, so a change in torch's decomposition shows up as a clear failure rather
than a silently different answer). Steps are node indices; lifetimes half-open.
CI installs torch (extra ``optplan[torch]``); importorskip only spares local runs without it.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch.export import Dim, export

from optplan import planners
from optplan.bounds import lower_bounds
from optplan.cli import main
from optplan.errors import FormatError, OptplanError
from optplan.formats import read_problem
from optplan.frontends.torch_export import (
    eager_live_peak,
    extract,
    problem_from_program,
)


def _export(module, args, dynamic=None):
    return export(module, args, dynamic_shapes=dynamic).run_decompositions()


def _table(problem):
    return {b.id: (b.size, b.start, b.end) for b in problem.buffers}


def _nodes(ep):
    return [n.name for n in ep.graph.nodes]


class Views(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        z = y.view(-1)[1:]
        return z + 1, y.t()


class Multi(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(4)

    def forward(self, x):
        p = torch.nn.functional.max_pool2d(x, 2)
        a, b = p.split(1, dim=1)
        return self.ln(a * b)


class Mutation(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(2))
        self.register_buffer("scale", torch.ones(2))
        self.w = torch.nn.Parameter(torch.ones(2))

    def forward(self, x):
        self.count.add_(x.sum())
        return x * self.scale * self.w + self.count


class Dynamic(torch.nn.Module):
    def forward(self, x):
        return torch.cat([x, x]).relu()


def test_views_alias_their_source_and_outputs_live_to_the_end():
    ep = _export(Views(), (torch.randn(4, 8),))
    assert _nodes(ep) == ["x", "mul", "view", "slice_1", "add", "permute", "output"]
    p = problem_from_program(ep, decompose=False)
    # mul's storage is read through view/slice_1 (add at 4) and returned as permute: [1, 7)
    # slice_1 is a view: add's input is mul's storage; add is a 31-float output: [4, 7)
    assert _table(p) == {"x": (128, 0, 2), "mul": (128, 1, 7), "add": (124, 4, 7)}
    assert p.metadata["outputs"] == ["mul", "add"] and p.metadata["inputs"] == ["x"]


def test_getitem_and_unclaimed_outputs_of_multi_output_ops():
    ep = _export(Multi(), (torch.randn(1, 2, 4, 8),))
    assert _nodes(ep) == ["p_ln_weight", "p_ln_bias", "x", "max_pool2d_with_indices", "getitem",
                          "split_with_sizes", "getitem_2", "getitem_3", "mul", "native_layer_norm",
                          "getitem_4", "output"]
    p = problem_from_program(ep, decompose=False)
    assert _table(p) == {
        "x": (256, 0, 4),
        "getitem": (64, 3, 9),  # pooled values; split + getitem_2/3 are views, read by mul at 8
        "max_pool2d_with_indices.1": (128, 3, 4),  # int64 indices nobody claims: producer step only
        "mul": (32, 8, 10),
        "getitem_4": (32, 9, 12),  # the layer norm output, returned
        "native_layer_norm.1": (8, 9, 10),  # mean and rstd, unclaimed
        "native_layer_norm.2": (8, 9, 10),
    }
    assert p.metadata["unplanned_bytes"] == 32  # the LayerNorm parameters


def test_buffer_mutation_lives_throughout_and_read_only_buffers_are_not_planned():
    ep = _export(Mutation(), (torch.randn(2),))
    assert _nodes(ep) == ["p_w", "b_count", "b_scale", "x", "sum_1", "add", "mul", "mul_1", "add_1", "output"]
    p = problem_from_program(ep, decompose=False)
    assert _table(p) == {
        "b_count": (8, 0, 10),  # mutable buffer: whole program
        "x": (8, 0, 7),
        "sum_1": (4, 4, 6),
        "add": (8, 5, 10),  # the buffer's new value, written back at the end
        "mul": (8, 6, 8), "mul_1": (8, 7, 9), "add_1": (8, 8, 10),
    }
    assert p.metadata["mutable_buffers"] == ["b_count"]


def test_dynamic_dimensions_at_their_upper_bound():
    ep = _export(Dynamic(), (torch.randn(3, 5),), ({0: Dim("n", max=10)},))
    p = problem_from_program(ep, decompose=False)
    assert _table(p) == {"x": (200, 0, 2), "cat": (400, 1, 3), "relu": (400, 2, 4)}
    assert list(p.metadata["dynamic_upper_bounds"].values()) == [10]


def test_unbounded_dynamic_dimension_is_a_clear_error():
    ep = _export(Dynamic(), (torch.randn(3, 5),), ({0: Dim("n")},))
    with pytest.raises(OptplanError, match="no upper bound"):
        problem_from_program(ep, decompose=False)


def test_input_and_output_flags():
    ep = _export(Views(), (torch.randn(4, 8),))
    p = problem_from_program(ep, decompose=False, plan_inputs=False, plan_outputs=False)
    assert _table(p) == {}  # every storage is either the input or returned
    ep = _export(Multi(), (torch.randn(1, 2, 4, 8),))
    p = problem_from_program(ep, decompose=False, plan_inputs=False, plan_outputs=False)
    assert set(_table(p)) == {"getitem", "max_pool2d_with_indices.1", "mul",
                              "native_layer_norm.1", "native_layer_norm.2"}


class Everything(torch.nn.Module):
    """Views, getitem, multi-output ops, a mutated buffer, batch norm, linear on 4D input."""

    def __init__(self):
        super().__init__()
        self.c, self.bn = torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8)
        self.ln, self.lin = torch.nn.LayerNorm(8), torch.nn.Linear(8, 8)
        self.register_buffer("cnt", torch.zeros(4))

    def forward(self, x):
        y = torch.nn.functional.max_pool2d(self.bn(self.c(x)), 2)
        a, b = y.split(4, dim=1)
        self.cnt.add_(1)
        z = self.ln(self.lin(y.permute(0, 2, 3, 1)))
        return a.relu() + b, z.sum()


@pytest.mark.parametrize("plan_io", [True, False])
def test_live_curve_matches_torchs_own_execution(plan_io):
    x = torch.randn(1, 3, 16, 16)
    ep = _export(Everything().eval(), (x,))
    p = problem_from_program(ep, decompose=False, plan_inputs=plan_io, plan_outputs=plan_io)
    eager = eager_live_peak(ep, (x,), decompose=False, plan_inputs=plan_io, plan_outputs=plan_io)
    steps = p.metadata["steps"]
    ours = [sum(b.size for b in p.buffers if b.start <= t < b.end) for t in range(steps)]
    first = next(i for i, n in enumerate(ep.graph.nodes) if n.op != "placeholder")
    assert ours[first:] == eager["curve"][first:]
    assert max(ours) == eager["peak"]


def test_dynamic_program_measured_at_its_bound_matches():
    ep = _export(Dynamic(), (torch.randn(3, 5),), ({0: Dim("n", max=10)},))
    p = problem_from_program(ep, decompose=False)
    eager = eager_live_peak(ep, (torch.randn(10, 5),), decompose=False)
    assert max(sum(b.size for b in p.buffers if b.start <= t < b.end) for t in range(4)) == eager["peak"] == 800  # cat + relu at step 2


def test_plan_of_an_extracted_problem_is_valid_and_bounded():
    x = torch.randn(1, 3, 16, 16)
    p = problem_from_program(export(Everything().eval(), (x,)))
    plan = planners.solve(p, "greedy-size")
    assert plan.found
    assert plan.peak["mem"] >= lower_bounds(p).lower["mem"] > 0
    assert all(p_.offset % 16 == 0 for p_ in plan.placements.values())


def test_saved_program_round_trip_and_cli(tmp_path, capsys):
    x = torch.randn(1, 3, 16, 16)
    ep = export(Everything().eval(), (x,))
    path = tmp_path / "m.pt2"
    torch.export.save(ep, str(path))
    direct = problem_from_program(ep)
    loaded = extract(path)  # aliasing comes from op schemas, so it survives serialization
    assert _table(loaded) == _table(direct)
    out = tmp_path / "m.json"
    assert main(["extract", str(path), "-o", str(out), "--no-plan-inputs"]) == 0
    written = read_problem(out)
    assert _table(written) == _table(extract(path, plan_inputs=False))
    assert "x" not in _table(written)


def test_cli_bad_inputs_exit_2_with_one_line(tmp_path, capsys):
    assert main(["extract", str(tmp_path / "missing.pt2"), "-o", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    bad = tmp_path / "model.onnx"
    bad.write_text("x")
    assert main(["extract", str(bad), "-o", str(tmp_path / "p.json")]) == 2
    assert "not a .pt2" in capsys.readouterr().err
    junk = tmp_path / "junk.pt2"
    junk.write_bytes(b"not a zip")
    assert main(["extract", str(junk), "-o", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot load" in err and err.count("\n") == 0
    with pytest.raises(FormatError):
        extract(tmp_path / "missing.pt2")


class TrainNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.l2(self.l1(x).relu()), y)


def test_training_graph_keeps_saved_activations_alive_into_backward():
    from torch.export.experimental import _export_forward_backward

    joint = _export_forward_backward(export(TrainNet(), (torch.randn(2, 8), torch.tensor([1, 3]))))
    nodes = _nodes(joint)
    p = problem_from_program(joint, decompose=False)
    t = _table(p)
    # relu (step 8) is saved for backward: read again through alias_3 by le (the relu mask)
    assert nodes[8] == "relu" and nodes[54:56] == ["alias_3", "le"]
    assert t["relu"] == (2 * 16 * 4, 8, 56)
    assert nodes.index("div") < 56  # the loss is computed before relu dies: it crosses into backward
    # x is read last by the first layer's weight gradient (mm_2 at 59)
    assert nodes[58:60] == ["permute_6", "mm_2"] and t["x"] == (64, 0, 60)
    grads = [s.arg.name for s in joint.graph_signature.output_specs if s.kind.name.startswith("GRADIENT")]
    assert sorted(grads) == ["permute_5", "permute_8", "view", "view_1"]  # views of the storages below
    assert {"mm_1", "sum_4", "mm_2", "sum_5"} <= set(p.metadata["outputs"])
    assert all(t[g][2] == len(nodes) for g in ("mm_1", "sum_4", "mm_2", "sum_5"))
