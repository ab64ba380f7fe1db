"""Extraction of buffers and lifetimes from torch.export programs, against hand-computed answers.

Every expected table below was worked out by hand from the printed decomposed graph (the node
list is asserted too, so a change in torch's decomposition shows up as a clear failure rather
than a silently different answer). Steps are node indices, except that a control-flow node spans
a window of its submodules' steps; lifetimes half-open.
CI installs torch (extra ``optplan[torch]``); importorskip only spares local runs without it.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch._higher_order_ops.map import map as hop_map
from torch._higher_order_ops.scan import scan
from torch._higher_order_ops.while_loop import while_loop
from torch.export import Dim, export

from optplan import registry
from optplan.cli import main
from optplan.core.bounds import lower_bounds
from optplan.core.errors import FormatError, OptplanError
from optplan.formats import read_problem
from optplan.frontends.torch_export import (
    decomposed,
    eager_live_peak,
    extract,
    problem_from_program,
)


def _export(module, args, dynamic=None):
    return decomposed(export(module, args, dynamic_shapes=dynamic))  # core ATen, as the front end decomposes


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
    plan = registry.solve(p, "greedy-size")
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
    assert f"written to {out}" in capsys.readouterr().out
    written = read_problem(out)
    assert _table(written) == _table(extract(path, plan_inputs=False))
    assert "x" not in _table(written)


def test_cli_bad_inputs_exit_2_with_one_line(tmp_path, capsys):
    assert main(["extract", str(tmp_path / "missing.pt2"), "-o", str(tmp_path / "p.json")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    bad = tmp_path / "model.txt"  # (.onnx goes to the ONNX front end: tests/test_onnx.py)
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


# -- control flow: submodules' temporaries inside the node's window ----------------------------


def _wide(y):  # 2 x 256-byte temporaries for a 128-byte operand
    a = torch.cat([y, y])
    b = a.sin()
    return b[:4] * b[4:]


def _narrow(y):  # 128-byte temporaries
    return y.cos() - 1


class Branches(torch.nn.Module):
    def forward(self, x):
        y = x + 1
        return torch.cond(x.sum() > 0, _wide, _narrow, (y,)) * y


class Loop(torch.nn.Module):
    def forward(self, i, x):
        def body(i, x):
            y = torch.cat([x, x]).sin()
            return i + 1, y[:4] + y[4:]
        return while_loop(lambda i, x: i < 3, body, (i, x))


class NestedLoop(torch.nn.Module):
    def forward(self, i, x):
        def body(i, x):
            return i + 1, torch.cond(x.sum() > 0, _wide, _narrow, (x,)) * 2
        return while_loop(lambda i, x: i < 3, body, (i, x))


class Mapped(torch.nn.Module):
    def forward(self, xs, y):
        return hop_map(lambda x, y: (x * y).sin() + 1, xs, y)


class Scanned(torch.nn.Module):
    def forward(self, init, xs):
        def step(c, x):
            n = c * x.sin()
            return n + 1, n.cos()
        return scan(step, init, xs)


def _loads(p):
    return [sum(b.size for b in p.buffers if b.start <= t < b.end) for t in range(p.metadata["steps"])]


def _subgraph_nodes(ep, *path):
    gm = ep.graph_module
    for attr in path:
        gm = getattr(gm, attr)
    return [n.name for n in gm.graph.nodes]


def test_cond_branches_get_disjoint_windows_and_the_peak_is_the_larger_branch():
    ep = _export(Branches(), (torch.randn(4, 8),))
    assert _nodes(ep) == ["x", "add", "sum_1", "gt", "true_graph_0", "false_graph_0", "cond", "getitem",
                          "mul", "output"]
    assert _subgraph_nodes(ep, "true_graph_0") == ["add", "cat", "sin", "slice_1", "slice_2", "mul", "output"]
    assert _subgraph_nodes(ep, "false_graph_0") == ["add", "cos", "sub", "output"]
    p = problem_from_program(ep, decompose=False)
    # steps 0-5 are the nodes before cond; cond's window is [6, 13): the true branch's 5 calls at
    # 6-10, the false branch's 2 at 11-12; getitem 13, mul 14, output 15
    assert p.metadata["control_flow"] == [{"node": "cond", "op": "cond", "steps": [6, 13], "submodules": {
        "true_graph_0": [6, 11], "false_graph_0": [11, 13]}}]
    assert p.metadata["steps"] == 16 and "not_modeled" not in p.metadata
    assert _table(p) == {
        "x": (128, 0, 3),
        "add": (128, 1, 15),  # cond's operand (the branches' placeholder): live across the window
        "sum_1": (4, 2, 4),
        "gt": (1, 3, 13),  # the predicate, an operand too
        "getitem": (128, 6, 15),  # cond's output: its own storage, from the window's first step
        "cond/true_graph_0/cat": (256, 6, 8),
        "cond/true_graph_0/sin": (256, 7, 11),  # read through slice_1/slice_2 (views) by mul at 10
        "cond/true_graph_0/mul": (128, 10, 11),  # the branch's output, copied out at its window's end
        "cond/false_graph_0/cos": (128, 11, 13),
        "cond/false_graph_0/sub": (128, 12, 13),
        "mul": (128, 14, 16),
    }
    loads = _loads(p)
    outer = 128 + 1 + 128  # add, gt, cond's output
    assert loads[6:11] == [outer + 256, outer + 256 + 256, outer + 256, outer + 256, outer + 256 + 128]
    assert loads[11:13] == [outer + 128, outer + 128 + 128]
    # only one branch runs: the bound holds the larger branch on top of the outer set, not both
    true_peak, false_peak = 512, 256
    bound = lower_bounds(problem_from_program(ep, decompose=False, alignment=1)).lower["mem"]
    assert max(loads) == bound == outer + max(true_peak, false_peak) < outer + true_peak + false_peak


def test_while_loop_models_one_iteration_with_carried_values_in_the_outputs():
    ep = _export(Loop(), (torch.tensor(0), torch.randn(4, 8)))
    assert _nodes(ep) == ["i", "x", "while_loop_cond_graph_0", "while_loop_body_graph_0", "while_loop",
                          "getitem", "getitem_1", "output"]
    assert _subgraph_nodes(ep, "while_loop_cond_graph_0") == ["arg0_1", "arg1_1", "lt", "output"]
    assert _subgraph_nodes(ep, "while_loop_body_graph_0") == ["arg0_1", "arg1_1", "cat", "sin", "add", "slice_1",
                                                              "slice_2", "add_1", "output"]
    p = problem_from_program(ep, decompose=False)
    assert p.metadata["control_flow"] == [{"node": "while_loop", "op": "while_loop", "steps": [4, 11], "submodules": {
        "while_loop_cond_graph_0": [4, 5], "while_loop_body_graph_0": [5, 11]}}]
    body = "while_loop/while_loop_body_graph_0/"
    assert _table(p) == {
        "i": (8, 0, 11), "x": (128, 0, 11),  # the operands: live across the window, never overwritten
        "getitem": (8, 4, 14), "getitem_1": (128, 4, 14),  # the carried slots = the loop's outputs
        "while_loop/while_loop_cond_graph_0/lt": (1, 4, 5),
        body + "cat": (256, 5, 7),
        body + "sin": (256, 6, 11),
        body + "add": (8, 7, 11),  # next i: computed out of place, copied into its slot at 10
        body + "add_1": (128, 10, 11),  # next x, likewise: never on top of the slot it reads
    }
    loads = _loads(p)
    outer = 8 + 128 + 8 + 128  # operands + slots
    assert loads[4] == outer + 1
    assert loads[5:11] == [outer + 256, outer + 512, outer + 256 + 8, outer + 256 + 8, outer + 256 + 8,
                           outer + 256 + 8 + 128]


def test_cond_nested_in_a_while_loop_body():
    ep = _export(NestedLoop(), (torch.tensor(0), torch.randn(4, 8)))
    assert _subgraph_nodes(ep, "while_loop_body_graph_0") == [
        "arg0_1", "arg1_1", "add", "sum_1", "gt", "true_graph_0", "false_graph_0", "cond", "getitem", "mul", "output"]
    p = problem_from_program(ep, decompose=False)
    w, body = "while_loop/while_loop_cond_graph_0/", "while_loop/while_loop_body_graph_0/"
    assert p.metadata["control_flow"] == [
        {"node": "while_loop", "op": "while_loop", "steps": [4, 17],
         "submodules": {"while_loop_cond_graph_0": [4, 5], "while_loop_body_graph_0": [5, 17]}},
        {"node": body + "cond", "op": "cond", "steps": [8, 15],
         "submodules": {"true_graph_0": [8, 13], "false_graph_0": [13, 15]}}]
    assert _table(p) == {
        "i": (8, 0, 17), "x": (128, 0, 17), "getitem": (8, 4, 20), "getitem_1": (128, 4, 20),
        w + "lt": (1, 4, 5),
        body + "add": (8, 5, 17),
        body + "sum_1": (4, 6, 8), body + "gt": (1, 7, 15),
        body + "getitem": (128, 8, 17),  # the inner cond's output, read by mul at 16
        body + "cond/true_graph_0/cat": (256, 8, 10), body + "cond/true_graph_0/sin": (256, 9, 13),
        body + "cond/true_graph_0/mul": (128, 12, 13),
        body + "cond/false_graph_0/cos": (128, 13, 15), body + "cond/false_graph_0/sub": (128, 14, 15),
        body + "mul": (128, 16, 17),
    }
    loads = _loads(p)
    outer = 8 + 128 + 8 + 128 + 8 + 1 + 128  # operands, slots, next i, the predicate, cond's output
    assert loads[8:13] == [outer + 256, outer + 512, outer + 256, outer + 256, outer + 256 + 128]
    assert loads[13:15] == [outer + 128, outer + 256]


def test_map_and_scan_model_one_application():
    ep = _export(Mapped(), (torch.randn(3, 8), torch.randn(8)))
    assert _nodes(ep) == ["xs", "y", "body_graph_0", "map_impl", "getitem", "output"]
    p = problem_from_program(ep, decompose=False)
    assert p.metadata["control_flow"][0]["submodules"] == {"body_graph_0": [3, 6]}
    assert _table(p) == {
        "xs": (96, 0, 6), "y": (32, 0, 6),  # the slice xs[i] is a view of xs: no storage of its own
        "getitem": (96, 3, 8),  # the stacked output, filled one slice per application
        "map_impl/body_graph_0/mul": (32, 3, 5), "map_impl/body_graph_0/sin": (32, 4, 6),
        "map_impl/body_graph_0/add": (32, 5, 6),
    }
    ep = _export(Scanned(), (torch.randn(4), torch.randn(3, 4)))
    assert _nodes(ep) == ["init", "xs", "scan_combine_graph_0", "scan", "getitem", "getitem_1", "output"]
    p = problem_from_program(ep, decompose=False)
    body = "scan/scan_combine_graph_0/"
    assert _table(p) == {
        "init": (16, 0, 7), "xs": (48, 0, 7),
        "getitem": (16, 3, 10), "getitem_1": (48, 3, 10),  # the carry's slot, the stacked ys
        body + "sin": (16, 3, 5), body + "mul": (16, 4, 7), body + "add": (16, 5, 7), body + "cos": (16, 6, 7),
    }



@torch.compiler.nested_compile_region
def _block(x):
    return (x * 2).sin()


class Shared(torch.nn.Module):
    def forward(self, x):
        return _block(_block(x) + 1)


def test_a_subgraph_shared_by_two_calls_is_walked_once_per_call():
    ep = decomposed(export(Shared(), (torch.randn(4),), strict=True))  # strict: invoke_subgraph
    assert _nodes(ep) == ["x", "repeated_subgraph0", "invoke_subgraph", "getitem", "add", "repeated_subgraph0_1",
                          "invoke_subgraph_1", "getitem_1", "output"]
    assert _subgraph_nodes(ep, "repeated_subgraph0") == ["arg0_1", "mul", "sin", "output"]
    p = problem_from_program(ep, decompose=False)
    assert [w["steps"] for w in p.metadata["control_flow"]] == [[2, 4], [7, 9]]
    assert _table(p) == {
        "x": (16, 0, 4), "getitem": (16, 2, 6), "add": (16, 5, 9), "getitem_1": (16, 7, 11),
        "invoke_subgraph/repeated_subgraph0/mul": (16, 2, 4), "invoke_subgraph/repeated_subgraph0/sin": (16, 3, 4),
        "invoke_subgraph_1/repeated_subgraph0/mul": (16, 7, 9), "invoke_subgraph_1/repeated_subgraph0/sin": (16, 8, 9),
    }


@pytest.mark.parametrize("module,args", [(Branches(), (torch.randn(4, 8),)),
                                         (Loop(), (torch.tensor(0), torch.randn(4, 8)))])
def test_outside_control_flow_windows_torchs_curve_still_matches(module, args):
    ep = _export(module, args)
    p = problem_from_program(ep, decompose=False)
    eager = eager_live_peak(ep, args, decompose=False)["curve"]  # one value per top-level node
    windows = {w["node"]: w["steps"] for w in p.metadata["control_flow"]}
    ours, t = _loads(p), 0
    for k, n in enumerate(ep.graph.nodes):
        if n.name in windows:
            assert windows[n.name][0] == t
            t = windows[n.name][1]
            continue
        if n.op != "placeholder":
            assert ours[t] == eager[k], n.name
        t += 1
    assert t == p.metadata["steps"]


def test_an_unhandled_higher_order_operator_is_named_as_not_modeled():
    class Printing(torch.nn.Module):
        def forward(self, x):
            torch._higher_order_ops.print("x = {x}", x=x)
            return x.sin()

    ep = _export(Printing(), (torch.randn(4),))
    p = problem_from_program(ep, decompose=False)
    assert "with_effects" in p.metadata["not_modeled"] and "control_flow" not in p.metadata


def test_control_flow_program_through_the_cli(tmp_path, capsys):
    args = (torch.tensor(0), torch.randn(4, 8))
    ep = export(NestedLoop(), args)
    path = tmp_path / "loop.pt2"
    torch.export.save(ep, str(path))
    direct = problem_from_program(ep)
    assert _table(extract(path)) == _table(direct)  # the submodules survive serialization
    problem, plan = tmp_path / "loop.json", tmp_path / "plan.json"
    assert main(["extract", str(path), "-o", str(problem)]) == 0
    written = read_problem(problem)
    assert _table(written) == _table(direct) and written.metadata["control_flow"] == direct.metadata["control_flow"]
    assert main(["solve", str(problem), "--planner", "greedy-size", "-o", str(plan)]) == 0
    capsys.readouterr()
    assert main(["validate", str(problem), str(plan)]) == 0
    assert "VALID" in capsys.readouterr().out
    solved = registry.solve(written, "greedy-size")
    assert solved.found and solved.peak["mem"] >= lower_bounds(written).lower["mem"] >= max(_loads(written))


class TwoReaders(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return (y + 1) + (y * 3)


def test_benefit_is_size_times_accesses():
    """One write plus one read per consumer (the caller reads the output): y is read twice."""
    ep = _export(TwoReaders(), (torch.randn(4, 8),))
    p = problem_from_program(ep, decompose=False)
    gain = {b.id: b.gain // b.size for b in p.buffers}
    assert gain == {"x": 2, "mul": 3, "add": 2, "mul_1": 2, "add_1": 2}, gain
