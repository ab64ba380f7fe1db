"""ONNX extraction: hand-computed tables on onnx.helper graphs, sizes checked against
onnxruntime's outputs, and torch.onnx.export of two networks of models/ against the torch.export
extraction of the same network. CI installs onnx, onnxruntime and onnxscript (the ``test`` extra);
importorskip only spares local runs without them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as T
from onnx import helper as h

from optplan import registry
from optplan.cli import main
from optplan.core.bounds import lower_bounds, peak_load
from optplan.core.errors import OptplanError
from optplan.formats import read_problem
from optplan.frontends.onnx_model import extract_onnx, infer_shapes

MODELS = Path(__file__).resolve().parents[1] / "models"
F = 16 * 32 * 32 * 4  # one [1, 16, 32, 32] float tensor: 65536 bytes


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def _table(problem):
    return {b.id: (b.size, b.start, b.end) for b in problem.buffers}


def _load(problem):
    cols = [np.array([getattr(b, k) for b in problem.buffers], np.int64) for k in ("start", "end", "size")]
    return peak_load(*cols)[0]


def _relu_chain(batch="N"):
    x = h.make_tensor_value_info("x", T.FLOAT, [batch, 16, 32, 32])
    y = h.make_tensor_value_info("y", T.FLOAT, None)
    return _model([h.make_node("Relu", ["x"], ["a"]), h.make_node("Relu", ["a"], ["b"]),
                   h.make_node("Add", ["a", "b"], ["c"]), h.make_node("Relu", ["c"], ["y"])], [x], [y])


def test_relu_relu_add_relu_peaks_at_three_tensors():
    p = extract_onnx(_relu_chain(), dims={"N": 1})
    # step 0 inputs, nodes at 1..4, outputs read at 5: each output allocated while its inputs live
    assert _table(p) == {"x": (F, 0, 2), "a": (F, 1, 4), "b": (F, 2, 4), "c": (F, 3, 5), "y": (F, 4, 6)}
    assert _load(p) == lower_bounds(p).lower["mem"] == 3 * 65536
    # benefit: size x (one write + one read per consumer); the caller reads y
    assert {b.id: b.benefit // F for b in p.buffers} == {"x": 2, "a": 3, "b": 2, "c": 2, "y": 2}
    assert registry.solve(p, "auto", time_limit=5).peak["mem"] == 3 * 65536


def test_views_alias_their_input_unless_asked_for_copies():
    x = h.make_tensor_value_info("x", T.FLOAT, [4, 64])
    y = h.make_tensor_value_info("y", T.FLOAT, None)
    shape = h.make_tensor("shape", T.INT64, [1], [256])
    nodes = [h.make_node("Relu", ["x"], ["a"]), h.make_node("Reshape", ["a", "shape"], ["v"]),
             h.make_node("Unsqueeze", ["v", "zero"], ["u"]), h.make_node("Sigmoid", ["u"], ["y"])]
    zero = h.make_tensor("zero", T.INT64, [1], [0])
    m = _model(nodes, [x], [y], [shape, zero])
    aliased = _table(extract_onnx(m))
    assert aliased == {"x": (1024, 0, 2), "a": (1024, 1, 5), "y": (1024, 4, 6)}  # a lives to u's use
    copies = _table(extract_onnx(m, views_alias=False))
    assert copies == {"x": (1024, 0, 2), "a": (1024, 1, 3), "v": (1024, 2, 4), "u": (1024, 3, 5), "y": (1024, 4, 6)}


def test_weights_are_planned_only_when_asked_and_live_throughout():
    x = h.make_tensor_value_info("x", T.FLOAT, [8, 16])
    y = h.make_tensor_value_info("y", T.FLOAT, None)
    w = h.make_tensor("w", T.FLOAT, [16, 4], np.zeros(64, np.float32))
    c = h.make_node("Constant", [], ["c"], value=h.make_tensor("cv", T.FLOAT, [4], np.ones(4, np.float32)))
    m = _model([c, h.make_node("MatMul", ["x", "w"], ["mm"]), h.make_node("Add", ["mm", "c"], ["y"])], [x], [y], [w])
    p = extract_onnx(m)
    assert _table(p) == {"x": (512, 0, 3), "mm": (128, 2, 4), "y": (128, 3, 5)}
    assert p.metadata["unplanned_bytes"] == 256 + 16
    with_w = _table(extract_onnx(m, include_weights=True))
    assert with_w["w"] == (256, 0, 5) and with_w["c"] == (16, 0, 5)


def test_if_branches_share_a_window_one_after_the_other():
    x = h.make_tensor_value_info("x", T.FLOAT, [256])
    cond = h.make_tensor_value_info("cond", T.BOOL, [])
    z = h.make_tensor_value_info("z", T.FLOAT, None)
    out = h.make_tensor_value_info("o", T.FLOAT, [256])
    then = h.make_graph([h.make_node("Add", ["a", "a"], ["t1"]), h.make_node("Mul", ["t1", "t1"], ["o"])], "then", [], [out])
    other = h.make_graph([h.make_node("Neg", ["a"], ["o"])], "else", [], [out])
    nodes = [h.make_node("Relu", ["x"], ["a"]), h.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other),
             h.make_node("Relu", ["y"], ["z"])]
    p = extract_onnx(_model(nodes, [x, cond], [z]))
    t = _table(p)
    # Relu at 1; the If spans 2..4 (then: 2, 3; else: 4); Relu at 5; outputs read at 6
    assert t["y"] == (1024, 2, 6) and t["a"] == (1024, 1, 5) and t["cond"] == (1, 0, 5)
    assert t["y/then_branch/t1"] == (1024, 2, 4) and t["y/then_branch/o"] == (1024, 3, 4)
    assert t["y/else_branch/o"] == (1024, 4, 5)
    # the branches never coexist: outer 1 + 2048, plus max(then 2048, else 1024)
    assert _load(p) == 1 + 2048 + 2048
    assert p.metadata["control_flow"] == [{"node": "y", "op": "If", "steps": [2, 5],
                                           "subgraphs": {"then_branch": [2, 4], "else_branch": [4, 5]}}]


def test_loop_body_runs_once_in_its_window_with_carried_values_in_the_outputs():
    x = h.make_tensor_value_info("x", T.FLOAT, [256])
    y = h.make_tensor_value_info("y", T.FLOAT, None)
    body = h.make_graph(
        [h.make_node("Identity", ["c_in"], ["c_out"]), h.make_node("Add", ["v_in", "x"], ["s"]),
         h.make_node("Relu", ["s"], ["v_out"])], "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c_in", T.BOOL, []),
         h.make_tensor_value_info("v_in", T.FLOAT, [256])],
        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("v_out", T.FLOAT, [256])])
    trip = h.make_tensor("trip", T.INT64, [], [3])
    true = h.make_tensor("true", T.BOOL, [], [True])
    nodes = [h.make_node("Loop", ["trip", "true", "x"], ["v"], body=body), h.make_node("Sigmoid", ["v"], ["y"])]
    m = _model(nodes, [x], [y], [trip, true])
    t = _table(extract_onnx(m))
    # the Loop spans steps 1..3 (its body's three nodes); Sigmoid at 4; outputs at 5
    assert t == {"x": (1024, 0, 4), "v": (1024, 1, 5), "v/body/s": (1024, 2, 4), "v/body/v_out": (1024, 3, 4),
                 "y": (1024, 4, 6)}
    run = ort.InferenceSession(m.SerializeToString()).run(None, {"x": np.ones(256, np.float32)})
    assert run[0].nbytes == 1024


def test_a_missing_dynamic_dimension_is_one_error_line_naming_it(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(_relu_chain("batch"), path)
    out = tmp_path / "p.json"
    assert main(["extract", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'batch'" in err and "--dim batch=" in err
    assert not out.exists()
    assert main(["extract", str(path), "-o", str(out), "--dim", "batch=1", "--dim", "seq=3"]) == 2
    assert "seq" in capsys.readouterr().err and not out.exists()
    assert main(["extract", str(path), "-o", str(out), "--dim", "batch=two"]) == 2
    assert "--dim batch=two" in capsys.readouterr().err
    assert main(["extract", str(tmp_path / "none.onnx"), "-o", str(out)]) == 2
    assert "none.onnx: no such file" in capsys.readouterr().err
    assert main(["extract", str(path), "-o", str(out), "--dim", "batch=2"]) == 0
    assert "written to" in capsys.readouterr().out
    p = read_problem(out)
    assert p.metadata["dims"] == {"batch": 2} and _load(p) == 3 * 2 * F
    with pytest.raises(OptplanError, match="'batch'"):
        extract_onnx(_relu_chain("batch"))


def _ort_sizes(model) -> dict[str, int]:
    """Bytes of every tensor onnxruntime computes, with each intermediate added as an output."""
    model = infer_shapes(model)
    extra = [vi for vi in model.graph.value_info if vi.name not in {o.name for o in model.graph.output}]
    model.graph.output.extend(extra)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in session.get_inputs():
        dtype = np.int64 if "int64" in i.type else np.float32
        feeds[i.name] = (rng.integers(0, 50, i.shape) if dtype == np.int64 else rng.standard_normal(i.shape)).astype(dtype)
    names = [o.name for o in session.get_outputs()]
    return {n: v.nbytes for n, v in (*zip(names, session.run(names, feeds)), *feeds.items())}


@pytest.fixture(scope="module")
def exported():
    """bert_base and gpt2 of models/zoo.py at small dimensions, through torch.export and torch.onnx.export."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    from optplan.frontends.torch_export import problem_from_program

    sys.path.insert(0, str(MODELS))
    try:
        from zoo import GPT2, BertEncoder
    finally:
        sys.path.remove(str(MODELS))
    out = {}
    for name, cls in (("bert_base", BertEncoder), ("gpt2", GPT2)):
        torch.manual_seed(0)
        model = cls(vocab=100, dim=32, layers=2, heads=2, max_len=16).eval()
        args = (torch.randint(0, 100, (1, 8)),)
        with torch.no_grad():
            ep = torch.export.export(model, args)
        proto = torch.onnx.export(ep, dynamo=True, verbose=False).model_proto  # the same program
        out[name] = (problem_from_program(ep), proto)
    return out


@pytest.mark.parametrize("name", ["bert_base", "gpt2"])
def test_exported_network_sizes_equal_onnxruntime_outputs(exported, name):
    _, proto = exported[name]
    p = extract_onnx(proto, views_alias=False)  # every tensor its own buffer
    ort_bytes = _ort_sizes(proto)
    sizes = {b.id: b.size for b in p.buffers}
    assert len(sizes) > 40 and set(sizes) <= set(ort_bytes)
    assert {k: ort_bytes[k] for k in sizes} == sizes


@pytest.mark.parametrize("name", ["bert_base", "gpt2"])
def test_exported_network_peak_matches_the_torch_export_extraction(exported, name):
    from_torch, proto = exported[name]
    p = extract_onnx(proto)
    # the graphs differ (see README: constant folding, Transpose/Slice copies, layer-norm
    # statistics), but not at the peak of these networks
    assert _load(p) == _load(from_torch) > 0
    assert _load(extract_onnx(proto, views_alias=False)) >= _load(p)


def test_a_node_computed_from_weights_only_is_folded_into_a_weight():
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 16])
    y = h.make_tensor_value_info("y", T.FLOAT, None)
    w = h.make_tensor("w", T.FLOAT, [4, 16], np.zeros(64, np.float32))
    m = _model([h.make_node("Transpose", ["w"], ["wt"]), h.make_node("MatMul", ["x", "wt"], ["y"])], [x], [y], [w])
    assert _table(extract_onnx(m)) == {"x": (128, 0, 3), "y": (32, 2, 4)}  # onnxruntime folds wt at load
    assert _table(extract_onnx(m, include_weights=True))["wt"] == (256, 0, 4)


def test_scan_body_runs_once_with_its_state_in_the_outputs_and_slices_viewing_the_input():
    body = h.make_graph(
        [h.make_node("Add", ["s_in", "row"], ["t"]), h.make_node("Relu", ["t"], ["s_out"]), h.make_node("Neg", ["t"], ["y_row"])],
        "body", [h.make_tensor_value_info("s_in", T.FLOAT, [64]), h.make_tensor_value_info("row", T.FLOAT, [64])],
        [h.make_tensor_value_info("s_out", T.FLOAT, [64]), h.make_tensor_value_info("y_row", T.FLOAT, [64])])
    m = _model([h.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1)],
               [h.make_tensor_value_info("s0", T.FLOAT, [64]), h.make_tensor_value_info("xs", T.FLOAT, [4, 64])],
               [h.make_tensor_value_info("s", T.FLOAT, None), h.make_tensor_value_info("ys", T.FLOAT, None)])
    # the Scan spans steps 1..3 (its body's three nodes); the outputs are read at 4
    assert _table(extract_onnx(m)) == {"s0": (256, 0, 4), "xs": (1024, 0, 4), "s": (256, 1, 5), "ys": (1024, 1, 5),
                                       "s/body/t": (256, 1, 4), "s/body/s_out": (256, 2, 4), "s/body/y_row": (256, 3, 4)}
    run = ort.InferenceSession(m.SerializeToString()).run(None, {"s0": np.zeros(64, np.float32), "xs": np.ones((4, 64), np.float32)})
    assert [r.nbytes for r in run] == [256, 1024]
