"""Graphs: the optplan-graph format and its errors, lifetimes from an order, reuse, the validator,
and planning with the order fixed or chosen (against brute force over every order x every reuse
choice x every packing)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from graphs import brute_force_graph, least_live_load, random_dag, tiny_graph
from hypothesis import given, settings
from hypothesis import strategies as st

import optplan.formats
from optplan.cli import main
from optplan.core.buffer import Memory
from optplan.core.errors import FormatError, ProblemError
from optplan.core.plan import Placement, Status
from optplan.core.validate import validate
from optplan.formats import read_input, read_problem, write_graph
from optplan.formats.graph_json import graph_from_json, graph_to_json
from optplan.graph import Graph, Op, Reuse, Tensor
from optplan.graph.bounds import necessary
from optplan.graph.exact import Segment, best_first
from optplan.graph.loads import Loads, Relations
from optplan.graph.planner import solve_graph
from optplan.graph.search import OrderSettings
from optplan.graph.validate import validate_graph_plan
from optplan.graph.windows import window_bound

ISSUE_EXAMPLE = {
    "format": "optplan-graph", "version": 1,
    "memories": [{"name": "sram", "capacity": 65536}, {"name": "dram"}],
    "tensors": [{"id": "x", "size": 10, "input": True}, {"id": "a1", "size": 100}, {"id": "y", "size": 10, "output": True}],
    "ops": [{"id": "A1", "inputs": ["x"], "outputs": ["a1"]},
            {"id": "C", "inputs": ["a1"], "outputs": ["y"], "reuse": {"y": "a1"}}],
}


def chain(reuse: bool = True) -> Graph:
    """x -> A -> a -> B -> b (output); each op may write in place."""
    return Graph((Tensor("x", 100, input=True), Tensor("a", 100), Tensor("b", 60, output=True)),
                 (Op("A", ("x",), ("a",), (("a", "x"),) if reuse else ()), Op("B", ("a",), ("b",), (("b", "a"),) if reuse else ())))


def two_branches() -> Graph:
    """Two branches, each a big temporary reduced to a small one, joined at the end: run one
    branch after the other, not interleaved."""
    t = [Tensor("x", 1, input=True), Tensor("p", 50), Tensor("q", 50), Tensor("p2", 1), Tensor("q2", 1), Tensor("y", 1, output=True)]
    ops = [Op("P", ("x",), ("p",)), Op("Q", ("x",), ("q",)), Op("P2", ("p",), ("p2",)), Op("Q2", ("q",), ("q2",)),
           Op("J", ("p2", "q2"), ("y",))]
    return Graph(tuple(t), tuple(ops))


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    o, e = capsys.readouterr()
    return code, o, e


def write(tmp_path: Path, doc: dict, name: str = "g.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


# -- the format and lifetimes ---------------------------------------------------------------------

def test_issue_example_lifetimes_and_round_trip(tmp_path: Path) -> None:
    g = read_input(write(tmp_path, ISSUE_EXAMPLE))
    assert isinstance(g, Graph)
    assert g.lifetimes() == ([0, 0, 1], [1, 2, 2])  # x until its reader A1, a1 through C, y to the end
    assert [m.name for m in g.memories] == ["sram", "dram"] and g.ops[1].reuse == (("y", "a1"),)
    again = graph_from_json(graph_to_json(g))
    assert again.tensors == g.tensors and again.ops == g.ops and again.memories == g.memories
    write_graph(g, tmp_path / "again.json")
    p = read_problem(tmp_path / "again.json")  # every command reads a graph as its given order's problem
    assert [(b.id, b.start, b.end) for b in p.buffers] == [("x", 0, 1), ("a1", 0, 2), ("y", 1, 2)]


def test_lifetimes_follow_the_order() -> None:
    g = two_branches()
    order = g.order_of(["P", "P2", "Q", "Q2", "J"])
    start, end = g.lifetimes(order)
    assert dict(zip([t.id for t in g.tensors], zip(start, end))) == {
        "x": (0, 3), "p": (0, 2), "q": (2, 4), "p2": (1, 5), "q2": (3, 5), "y": (4, 5)}
    loads = Loads(g.structure)
    assert loads.score(g.given_order)[0] == 101 and loads.score(order)[0] == 52


def test_a_tensor_nobody_reads_lives_at_its_step_only() -> None:
    g = Graph((Tensor("x", 1, input=True), Tensor("dead", 7), Tensor("y", 1, output=True)),
              (Op("A", ("x",), ("dead",)), Op("B", ("x",), ("y",))))
    assert g.lifetimes() == ([0, 0, 1], [2, 1, 2])


BAD = [
    ({"ops": [{"id": "A", "inputs": ["b"], "outputs": ["a"]}, {"id": "B", "inputs": ["a"], "outputs": ["b"]}],
      "tensors": [{"id": "a", "size": 1}, {"id": "b", "size": 1}]}, "the ops form a cycle: "),
    ({"ops": [{"id": "A", "inputs": ["x"], "outputs": ["a"]}, {"id": "B", "inputs": ["x"], "outputs": ["a"]}],
      "tensors": [{"id": "x", "size": 1, "input": True}, {"id": "a", "size": 1}]}, "tensor 'a': produced by two ops, 'A' and 'B'"),
    ({"ops": [{"id": "A", "inputs": ["nope"], "outputs": []}], "tensors": []}, "op 'A': field 'inputs': unknown tensor 'nope'"),
    ({"ops": [{"id": "A", "inputs": ["x"], "outputs": ["a"], "reuse": {"a": "x"}}],
      "tensors": [{"id": "x", "size": 1, "input": True}, {"id": "a", "size": 2}]}, "'a' (2 bytes) does not fit in 'x' (1 bytes)"),
    ({"ops": [{"id": "A", "inputs": ["x"], "outputs": ["a"], "reuse": {"a": "x"}}],
      "tensors": [{"id": "x", "size": 1, "input": True, "output": True}, {"id": "a", "size": 1}]}, "'x' is a graph output"),
    ({"ops": [{"id": "A", "inputs": ["x"], "outputs": ["a"], "reuse": {"a": "x"}}, {"id": "B", "inputs": ["a", "x"], "outputs": []}],
      "tensors": [{"id": "x", "size": 1, "input": True}, {"id": "a", "size": 1}]}, "also read by op 'B', which runs after 'A' in every order"),
    ({"ops": [{"id": "A", "inputs": ["x"], "outputs": ["a"], "reuse": {"a": "x"}}],
      "tensors": [{"id": "x", "size": 4, "input": True, "fixed_offset": 0}, {"id": "a", "size": 4, "fixed_offset": 8}]},
     "'a' into 'x' can never hold"),
    ({"ops": [{"id": "B", "inputs": ["a"], "outputs": []}, {"id": "A", "inputs": [], "outputs": ["a"]}],
      "tensors": [{"id": "a", "size": 1}]}, "op 'B': reads 'a' before op 'A' produces it"),
    ({"ops": [], "tensors": [{"id": "w", "size": 1}]}, "tensor 'w': no op produces it and it is not a graph input"),
    ({"ops": [{"id": "A"}], "tensors": [{"id": "w", "size": -1, "input": True}]}, "tensor 'w': field 'size'"),
]


@pytest.mark.parametrize("doc,message", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_graphs_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture, doc: dict, message: str) -> None:
    path = write(tmp_path, {"format": "optplan-graph", "version": 1, **doc})
    for command in (["solve", str(path)], ["info", str(path)], ["bounds", str(path)]):
        code, o, e = run(capsys, *command)
        assert code == 2 and o == "", (command, o)
        assert e.count("\n") == 1 and message in e and str(path) in e, e


def test_format_errors_name_the_tensor() -> None:
    with pytest.raises(FormatError, match=r"g\.json: tensor 'a': field 'size'"):
        graph_from_json(json.dumps({"format": "optplan-graph", "version": 1, "ops": [],
                                    "tensors": [{"id": "a", "size": "big", "input": True}]}), "g.json")
    with pytest.raises(ProblemError, match="tensor 'a': field 'fixed_memory'"):
        Graph((Tensor("a", 1, input=True, fixed_memory="nowhere"),), ())


# -- planning the given order ---------------------------------------------------------------------

def test_reuse_lowers_the_given_order(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with_reuse, without = solve_graph(chain(), time_limit=10), solve_graph(chain(), reuse=False, time_limit=10)
    assert without.plan.peak == {"mem": 200} and without.reuses == ()
    assert with_reuse.plan.peak == {"mem": 100} and with_reuse.plan.status is Status.OPTIMAL
    assert with_reuse.reuses == (Reuse("A", "a", "x"), Reuse("B", "b", "a"))
    assert solve_graph(chain(reuse=False), time_limit=10).plan.peak == {"mem": 200}
    src = tmp_path / "chain.json"
    write_graph(chain(), src)
    code, o, _ = run(capsys, "solve", str(src), "--json", "-o", str(tmp_path / "plan.json"), "--time-limit", "10")
    doc = json.loads(o)
    assert code == 0 and doc["order"] == ["A", "B"] and doc["reuse"] == {"a": "x", "b": "a"} and doc["peak"] == {"mem": 100}
    assert json.loads((tmp_path / "plan.json").read_text())["reuse"] == {"a": "x", "b": "a"}
    plan_schema = json.loads((Path(optplan.formats.__file__).parent / "plan.schema.json").read_text())
    assert {"order", "reuse"} <= set(plan_schema["properties"])  # the graph plan's fields are documented
    jsonschema.validate(json.loads((tmp_path / "plan.json").read_text()), plan_schema)
    code, o, _ = run(capsys, "validate", str(src), str(tmp_path / "plan.json"))
    assert code == 0 and "VALID" in o


def test_a_reuse_that_lowers_nothing_is_not_taken() -> None:
    """x dies at A's step, so y fits where x was: C's reuse of a1 lowers nothing."""
    g = graph_from_json(json.dumps({**ISSUE_EXAMPLE, "memories": [{"name": "mem"}]}))
    gp = solve_graph(g, time_limit=10)
    assert gp.plan.peak == {"mem": 110} and gp.plan.status is Status.OPTIMAL and gp.reuses == ()


def test_a_capacity_below_a_tensor_is_infeasible_not_a_bad_reuse(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    write_graph(chain(), tmp_path / "chain.json")
    code, o, e = run(capsys, "solve", str(tmp_path / "chain.json"), "--capacity", "90")
    assert code == 1 and e == "" and "INFEASIBLE" in o and "'x' needs 100 bytes" in o


def test_the_report_counts_an_output_in_its_input_once(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    """Not minimizing (feasible), the report's bound is the live load of the plan: with a reuse,
    its two tensors share their step's bytes."""
    write_graph(chain(), tmp_path / "chain.json")
    code, o, _ = run(capsys, "solve", str(tmp_path / "chain.json"), "--capacity", "150", "--objective", "feasible", "--json")
    assert code == 0 and json.loads(o)["peak"] == {"mem": 100}
    code, o, _ = run(capsys, "solve", str(tmp_path / "chain.json"), "--capacity", "150", "--objective", "feasible")
    row = next(line.split() for line in o.splitlines() if line.strip().startswith("mem "))
    assert row[1:4] == ["150", "100", "100"]  # capacity, peak, lower bound (was 200: both tensors counted)


def test_solve_rejects_reorder_of_a_problem(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = write(tmp_path, {"format": "optplan-problem", "version": 1, "buffers": [{"id": "a", "size": 1, "start": 0, "end": 1}]})
    code, _, e = run(capsys, "solve", str(path), "--reorder")
    assert code == 2 and "apply to graphs" in e
    write_graph(chain(), tmp_path / "chain.json")
    code, _, e = run(capsys, "solve", str(tmp_path / "chain.json"), "-o", str(tmp_path / "p.csv"))
    assert code == 2 and "write it as .json" in e


# -- the validator --------------------------------------------------------------------------------

def test_validator_rejects_a_broken_dependency_and_a_live_reuse() -> None:
    g = two_branches()
    place = {t.id: Placement("mem", 0) for t in g.tensors}
    bad = validate_graph_plan(g, ["Q", "P2", "P", "Q2", "J"], (), place)
    assert [v.kind for v in bad] == ["order"] and "op 'P2': order: runs at step 1, before op 'P'" in str(bad[0])
    assert [v.kind for v in validate_graph_plan(g, ["P", "Q", "J"], (), place)] == ["order", "order"]  # missing P2, Q2
    g = Graph((Tensor("x", 4, input=True), Tensor("a", 4), Tensor("b", 4), Tensor("c", 4), Tensor("y", 4, output=True)),
              (Op("A", ("x",), ("a",)), Op("B", ("a",), ("b",), (("b", "a"),)), Op("C", ("a",), ("c",)), Op("J", ("b", "c"), ("y",))))
    offsets = {"x": 0, "a": 4, "b": 4, "c": 8, "y": 0}
    place = {k: Placement("mem", v) for k, v in offsets.items()}
    bad = validate_graph_plan(g, ["A", "B", "C", "J"], (Reuse("B", "b", "a"),), place)
    assert [v.kind for v in bad] == ["reuse", "overlap"]
    assert "'a' is still live: read by op 'C' at step 2, after op 'B' at step 1" in str(bad[0])
    assert validate_graph_plan(g, ["A", "C", "B", "J"], (Reuse("B", "b", "a"),), {**place, "c": Placement("mem", 12)}) == []


def test_validator_rejects_an_input_taken_twice_and_an_undeclared_reuse() -> None:
    g = Graph((Tensor("x", 4, input=True), Tensor("a", 4, output=True), Tensor("b", 4, output=True)),
              (Op("A", ("x",), ("a", "b"), (("a", "x"), ("b", "x"))),))
    place = {k: Placement("mem", 0) for k in ("x", "a", "b")}
    bad = validate_graph_plan(g, ["A"], (Reuse("A", "a", "x"), Reuse("A", "b", "x")), place)
    assert "taken by 'a' already" in str(bad[0])
    bad = validate_graph_plan(chain(reuse=False), ["A", "B"], (Reuse("A", "a", "x"),), {k: Placement("mem", 0) for k in "xab"})
    assert "declares no reuse" in str(bad[0])


def test_cli_validate_rejects_a_reordered_plan(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = tmp_path / "g.json"
    write_graph(two_branches(), src)
    code, o, _ = run(capsys, "solve", str(src), "--reorder", "-o", str(tmp_path / "p.json"), "--time-limit", "10")
    assert code == 0
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["order"][:2] in (["P", "P2"], ["Q", "Q2"]) and doc["peak"] == {"mem": 52} and doc["status"] == "OPTIMAL"
    doc["order"] = ["P2", "P", "Q", "Q2", "J"]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    code, o, _ = run(capsys, "validate", str(src), str(tmp_path / "bad.json"))
    assert code == 1 and "INVALID" in o and "before op 'P'" in o


# -- choosing the order ---------------------------------------------------------------------------

def test_exact_search_is_the_least_live_load_of_all_orders() -> None:
    import random

    for seed in range(60):
        r = random.Random(seed)
        g = tiny_graph(lambda lo, hi, r=r: r.randint(lo, hi), ops=6)
        rel = Relations.of(g.structure)
        peak = 0
        for ops in rel.segments():
            got = best_first(Segment(g.structure, rel, ops), None, 10**6, lambda: False)
            assert got is not None and got.exact
            peak = max(peak, got.peak)
        assert peak == least_live_load(g), seed


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_reorder_finds_the_brute_force_optimum(data: st.DataObject) -> None:
    g = tiny_graph(lambda lo, hi: data.draw(st.integers(lo, hi)))
    gp = solve_graph(g, reorder=True, time_limit=30)
    assert gp.plan.status is Status.OPTIMAL
    assert gp.plan.objective_value == brute_force_graph(g)
    assert validate_graph_plan(g, gp.order, gp.reuses, gp.plan.placements) == []


def test_every_window_bounds_the_least_live_load() -> None:
    import random

    for seed in range(60):
        r = random.Random(seed)
        g = tiny_graph(lambda lo, hi, r=r: r.randint(lo, hi), ops=6, alignment=False)
        st, rel = g.structure, Relations.of(g.structure)
        sets, least = necessary(g, rel), least_live_load(g)
        for w in range(1, st.ops + 1):
            for first in range(st.ops - w + 1):
                assert window_bound(st, rel, sets, range(first, first + w), True, 10**6, lambda: False) <= least, seed


def test_reorder_bound_holds_for_every_order_without_the_exact_methods() -> None:
    """The necessary sets alone (no search) bound the least peak of every order."""
    import random

    for seed in range(40):
        r = random.Random(seed)
        g = tiny_graph(lambda lo, hi, r=r: r.randint(lo, hi), ops=5, alignment=False)
        only = OrderSettings(methods=("given",))
        gp = solve_graph(g, "naive", reorder=True, settings=only)
        assert gp.plan.lower_bound["mem"] <= least_live_load(g) <= gp.plan.peak["mem"], seed
        assert gp.plan.planner == "naive" and "placed by" not in gp.plan.message  # the planner asked for packs


def test_deterministic_reorder_repeats() -> None:
    g = random_dag(40, 3)
    first, again = (solve_graph(g, reorder=True, time_limit=2, deterministic=True) for _ in range(2))
    capped = [gp.plan for gp in (first, again) if gp.plan.stats.get("deterministic_wall_capped")]
    # the promise: the same answer, unless the wall-clock guard cut a run, which then says so
    # (three busy processes beside this test: both runs cut, 24 s)
    assert all("may not repeat" in plan.message for plan in capped)
    if not capped:
        assert first.order == again.order and dict(first.plan.placements) == dict(again.plan.placements)
    assert first.plan.peak["mem"] < solve_graph(g, time_limit=2).plan.peak["mem"]


def test_a_deterministic_reordered_plan_file_repeats_byte_for_byte(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue 30 item 7 for graphs: the plan file of --deterministic holds no wall-clock figure
    (it held seconds and stats' *_seconds), so two runs write the same bytes."""
    src = tmp_path / "g.json"
    write_graph(random_dag(30, 5), src)
    files = [tmp_path / f"plan{k}.json" for k in range(2)]
    for out in files:
        code, _, _ = run(capsys, "solve", str(src), "--reorder", "--deterministic", "--time-limit", "1", "-o", str(out))
        assert code == 0
    assert "seconds" not in files[0].read_text()
    cut = [f for f in files if "may not repeat" in f.read_text()]  # the wall-clock guard cut a run (a busy machine): it says so
    if not cut:
        assert files[0].read_bytes() == files[1].read_bytes()


def test_reorder_beats_the_given_order_with_many_memories() -> None:
    g = two_branches().with_memories((Memory("sram", 40), Memory("dram")))
    given_plan, chosen = solve_graph(g, time_limit=10), solve_graph(g, reorder=True, time_limit=10)
    assert chosen.plan.objective_value < given_plan.plan.objective_value
    assert validate_graph_plan(g, chosen.order, chosen.reuses, chosen.plan.placements) == []


def test_plot_draws_a_reordered_plan_under_its_order(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("matplotlib")
    src = tmp_path / "g.json"
    write_graph(two_branches(), src)
    assert run(capsys, "solve", str(src), "--reorder", "-o", str(tmp_path / "p.json"), "--time-limit", "10")[0] == 0
    code, o, _ = run(capsys, "plot", str(src), str(tmp_path / "p.json"), "-o", str(tmp_path / "p.svg"))
    assert code == 0 and (tmp_path / "p.svg").exists()
    doc = json.loads((tmp_path / "p.json").read_text())
    placed = {k: Placement(v["memory"], v["offset"]) for k, v in doc["placements"].items()}
    assert validate(two_branches().base, placed)  # under the given order's lifetimes it would not be valid
    doc["order"] = doc["order"][::-1]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    code, o, _ = run(capsys, "plot", str(src), str(tmp_path / "bad.json"), "-o", str(tmp_path / "bad.svg"))
    assert code == 1 and "INVALID" in o and not (tmp_path / "bad.svg").exists()
