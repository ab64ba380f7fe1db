"""One passing and one violating plan for every constraint kind the validator checks."""

from __future__ import annotations

import numpy as np
import pytest

from optplan import Buffer, Memory, Placement, Problem, RelativePlacement, validate
from optplan.core.plan import Layout

MEMS = (Memory("sram", capacity=64, alignment=8), Memory("dram"))


def kinds(problem: Problem, placements: dict[str, Placement]) -> list[str]:
    return [v.kind for v in validate(problem, placements)]


CASES = {
    "overlap": (
        (Buffer("a", 16, 0, 4), Buffer("b", 16, 3, 6)), (),
        {"a": Placement("sram", 0), "b": Placement("sram", 16)},
        {"a": Placement("sram", 0), "b": Placement("sram", 8)},
    ),
    "capacity": (
        (Buffer("a", 16, 0, 4),), (),
        {"a": Placement("sram", 48)},
        {"a": Placement("sram", 56)},
    ),
    "alignment": (
        (Buffer("a", 16, 0, 4, alignment=32),), (),
        {"a": Placement("sram", 32)},
        {"a": Placement("sram", 8)},
    ),
    "allowed": (
        (Buffer("a", 16, 0, 4, blocked=("sram",)),), (),
        {"a": Placement("dram", 3)},
        {"a": Placement("sram", 0)},
    ),
    "fixed": (
        (Buffer("a", 16, 0, 4, fixed_memory="sram", fixed_offset=16),), (),
        {"a": Placement("sram", 16)},
        {"a": Placement("sram", 24)},
    ),
    "relative": (
        (Buffer("a", 32, 0, 4), Buffer("b", 16, 0, 2)), (RelativePlacement("b", "a", 16),),
        {"a": Placement("dram", 8), "b": Placement("dram", 24)},
        {"a": Placement("dram", 8), "b": Placement("sram", 24)},
    ),
    "missing": (
        (Buffer("a", 16, 0, 4),), (),
        {"a": Placement("dram", 0)},
        {},
    ),
    "memory": (
        (Buffer("a", 16, 0, 4),), (),
        {"a": Placement("dram", 0)},
        {"a": Placement("l3", 0)},
    ),
}


@pytest.mark.parametrize("kind", CASES)
def test_each_constraint_kind(kind: str) -> None:
    buffers, relative, good, bad = CASES[kind]
    problem = Problem(buffers, MEMS, relative)
    assert validate(problem, good) == []
    assert kind in kinds(problem, bad)


def test_half_open_lifetimes_do_not_conflict() -> None:
    p = Problem((Buffer("a", 16, 0, 3), Buffer("b", 16, 3, 6)), MEMS)
    assert validate(p, {"a": Placement("sram", 0), "b": Placement("sram", 0)}) == []


def test_zero_size_and_other_memories_never_overlap() -> None:
    p = Problem((Buffer("a", 16, 0, 3), Buffer("z", 0, 0, 3), Buffer("d", 16, 0, 3)), MEMS)
    assert validate(p, {"a": Placement("sram", 0), "z": Placement("sram", 8), "d": Placement("dram", 0)}) == []


def test_relative_members_may_overlap_each_other() -> None:
    # concat inputs placed inside the output share its bytes at the concat step on purpose
    p = Problem((Buffer("out", 32, 2, 5), Buffer("x", 16, 0, 3)), MEMS, (RelativePlacement("x", "out", 16),))
    assert validate(p, {"out": Placement("sram", 0), "x": Placement("sram", 16)}) == []


def test_unknown_buffer_in_plan() -> None:
    p = Problem((Buffer("a", 16, 0, 3),), MEMS)
    assert "unknown" in kinds(p, {"a": Placement("sram", 0), "zz": Placement("sram", 0)})


def test_overlap_message_names_both_buffers() -> None:
    p = Problem((Buffer("a", 16, 0, 4), Buffer("b", 16, 3, 6)), MEMS)
    (v,) = validate(p, {"a": Placement("sram", 0), "b": Placement("sram", 8)})
    assert str(v) == "buffer 'a': overlap: overlaps 'b' in 'sram': time [3, 4) and bytes [8, 16)"


def _layout_case() -> tuple[Problem, Layout]:
    p = Problem.from_columns(["a", "b", "c"], np.array([0, 3, 1]), np.array([4, 6, 5]), np.array([16, 16, 8]),
                             memories=(Memory("sram", capacity=64),))
    return p, Layout(p.columns.ids, p.memory_names, np.zeros(3, np.int64), np.array([0, 16, 32]))


def test_a_layout_reads_as_its_placements_and_is_checked_once(monkeypatch) -> None:
    """A plan as arrays (``Layout``, what the compiled heuristics return) is the same mapping as
    its placements, valid or not; found valid for a problem, it is not checked again for it (auto
    hands its heuristic's plan on), but it is for another problem."""
    import pickle
    import sys

    validate_module = sys.modules["optplan.core.validate"]  # (the package's ``validate`` is the function)

    p, layout = _layout_case()
    same = {"a": Placement("sram", 0), "b": Placement("sram", 16), "c": Placement("sram", 32)}
    assert layout == same and dict(layout.items()) == same and layout["c"] == Placement("sram", 32)
    assert "c" in layout and "z" not in layout and list(layout) == ["a", "b", "c"] and len(layout) == 3
    assert pickle.loads(pickle.dumps(layout)) == layout
    with pytest.raises(ValueError):
        layout.offset[0] = 8  # read-only: a check passed once holds
    bad = Layout(p.columns.ids, p.memory_names, np.zeros(3, np.int64), np.array([0, 8, 32]))
    assert kinds(p, bad) == kinds(p, {**same, "b": Placement("sram", 8)}) == ["overlap"]
    calls = []
    real = validate_module._plain_valid
    monkeypatch.setattr(validate_module, "_plain_valid", lambda *a: calls.append(1) or real(*a))
    assert validate(p, layout) == [] and validate(p, layout) == [] and len(calls) == 1
    other = Problem.from_columns(["a", "b", "c"], np.array([0, 3, 1]), np.array([4, 6, 5]), np.array([16, 16, 8]),
                                 memories=(Memory("sram", capacity=16),))
    assert kinds(other, layout) == ["capacity", "capacity"] and len(calls) == 2


def test_a_layout_on_several_memories_checks_each() -> None:
    p = Problem.from_columns(["a", "b"], np.array([0, 0]), np.array([4, 4]), np.array([16, 16]), memories=MEMS)
    apart = Layout(p.columns.ids, p.memory_names, np.array([0, 1]), np.array([0, 0]))
    together = Layout(p.columns.ids, p.memory_names, np.array([1, 1]), np.array([0, 8]))
    assert validate(p, apart) == [] and kinds(p, together) == ["overlap"]
    from optplan.core.plan import peaks

    assert peaks(p, apart) == peaks(p, dict(apart.items())) == {"sram": 16, "dram": 16}


# -- issue 30: a plan file's claims, and a plan that does not fit its problem, are invalid (exit 1) ---------

TWO = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 1, 3), Buffer("c", 4, 3, 5)))  # lower bound 8
GOOD = {"a": Placement("mem", 0), "b": Placement("mem", 4), "c": Placement("mem", 0)}  # peak 8: optimal
WORSE = {"a": Placement("mem", 0), "b": Placement("mem", 8), "c": Placement("mem", 0)}  # peak 12: 50 % above the bound


def _claims(placements: dict[str, Placement], **changes: object) -> dict:
    """The plan file a planner would write for ``placements`` (as read back), with ``changes``."""
    import json

    from optplan.formats.native_json import plan_to_dict
    from optplan.registry import Result, finish

    doc = json.loads(json.dumps(plan_to_dict(finish(TWO, Result(placements), "x", 0.0))))
    return {**doc, **changes}


@pytest.mark.parametrize("placements, changes, says", [
    (GOOD, {"peak": {"mem": 5}}, "claim: field 'peak': 'mem' is stated as 5 bytes, but the placements reach 8 bytes"),
    (GOOD, {"peak": {"mem": 8, "l2": 0}}, "claim: field 'peak': memory 'l2' is not in the problem"),
    (GOOD, {"lower_bound": {"mem": 9}}, "claim: field 'lower_bound': 'mem' is stated as 9 bytes, above the 8 bytes the placements reach"),
    (GOOD, {"status": "INFEASIBLE"}, "claim: field 'status': INFEASIBLE, but the placements are a valid plan"),
    (GOOD, {"objective_value": 7}, "claim: field 'objective_value': 7 is stated, but the placements' min-peak value is 8"),
    (GOOD, {"objective_bound": 9}, "claim: field 'objective_bound': 9 is above the placements' min-peak value 8"),
    (WORSE, {"status": "OPTIMAL"}, "claim: field 'status': OPTIMAL, but the lower bound of 'mem' (8 bytes) is below its peak (12 bytes)"),
    (WORSE, {"status": "OPTIMAL", "gap": 0.0}, "claim: field 'status': OPTIMAL, but the objective bound 8 is below the value 12"),
    (WORSE, {"gap": 0.0}, "claim: field 'gap': 0.0 is stated, but the peaks and bounds give 0.5"),
    (WORSE, {"gap": 0.25, "objective_bound": None}, "claim: field 'gap': 0.25 is stated, but the peaks and bounds give 0.5"),
    (WORSE, {"objective_components": [["peaks", 12, 12]]}, "claim: field 'objective_components': [['peaks', 12, 12]] is stated"),
])
def test_the_validator_checks_what_a_plan_claims(tmp_path, capsys, placements: dict, changes: dict, says: str) -> None:  # type: ignore[no-untyped-def]
    """A plan stating peak 5 or OPTIMAL at a 50 % gap was VALID: each claim is checked against the placements."""
    import json

    from optplan.cli import main
    from optplan.formats import write_problem

    write_problem(TWO, tmp_path / "p.csv")
    (tmp_path / "plan.json").write_text(json.dumps(_claims(placements)))
    assert main(["validate", str(tmp_path / "p.csv"), str(tmp_path / "plan.json")]) == 0  # as written: valid
    (tmp_path / "plan.json").write_text(json.dumps(_claims(placements, **changes)))
    code = main(["validate", str(tmp_path / "p.csv"), str(tmp_path / "plan.json")])
    out, err = capsys.readouterr()
    assert code == 1 and says in out and "INVALID" in out and err == "", (out, err)


def test_a_plan_that_does_not_fit_its_problem_is_invalid_not_bad_input(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from optplan.cli import main
    from optplan.formats import write_problem

    write_problem(TWO, tmp_path / "p.csv")
    problem, plan = str(tmp_path / "p.csv"), str(tmp_path / "plan")
    cases = [  # (file, text, what the violation says): exit 1 each, with the violation
        (".json", json.dumps({**_claims(GOOD), "placements": {**_claims(GOOD)["placements"], "c": {"memory": "mem", "offset": -4}}}),
         "buffer 'c': capacity: offset -4 is not a non-negative integer"),
        (".csv", "id,lower,upper,size,offset\na,0,2,4,0\nb,1,3,5,4\nc,3,5,4,0\n",  # the bulk reader
         "buffer 'b': mismatch: line 3: field 'size': 5 in the plan but 4 in the problem"),
        (".csv", 'id,lower,upper,size,offset\na,0,2,4,0\n"b",1,3,4,4\nc,2,5,4,0\n',  # the general reader
         "buffer 'c': mismatch: line 4: field 'lower': 2 in the plan but 3 in the problem"),
        (".csv", "id,lower,upper,size,offset\na,0,2,4,0\nb,1,3,4,4\nc,3,5,4,0\nb,1,3,4,8\n",
         "buffer 'b': duplicate: line 5 places it again (first on line 3)"),
    ]
    for ext, text, says in cases:
        (tmp_path / f"plan{ext}").write_text(text)
        code = main(["validate", problem, plan + ext])
        out, err = capsys.readouterr()
        assert code == 1 and says in out and err == "", (ext, text, out, err)
    (tmp_path / "plan.csv").write_text("id,lower,upper,size,offset\na,0,2,4,0\nb,1,3,4,+4\nc,3,5,4,0\n")
    assert main(["validate", problem, plan + ".csv"]) == 2  # a malformed file stays bad input
    assert "line 3 (buffer 'b'): field 'offset': not an integer: '+4'" in capsys.readouterr().err


@pytest.mark.parametrize("memories, objectives", [
    ((Memory("mem"),), [None]),
    ((Memory("sram", capacity=12), Memory("dram")), [None, "min-peak", "weighted", "feasible"]),
])
def test_every_planners_plan_file_passes_its_claims(memories: tuple[Memory, ...], objectives: list[str | None]) -> None:
    """No planner writes a claim the validator refutes (status, bounds and gap as ``finish`` makes them)."""
    import json

    from optplan import registry
    from optplan.core.validate import check_claims
    from optplan.formats.native_json import plan_to_dict

    problem = Problem(tuple(Buffer(f"b{i}", 4 + 4 * (i % 3), i, i + 3) for i in range(8)), memories)
    for name in registry.names():
        for objective in objectives:
            plan = registry.solve(problem, name, time_limit=10, objective=objective, seed=0, workers=1)
            doc = json.loads(json.dumps(plan_to_dict(plan)))
            assert plan.found and check_claims(problem, plan.placements, doc) == [], (name, objective, doc)


@pytest.mark.parametrize("call, says", [
    (lambda p: validate(p, None), "validate() takes a mapping of buffer id -> Placement, got NoneType None"),
    (lambda p: validate(p, [Placement("mem", 0)]), "validate() takes a mapping of buffer id -> Placement, got list"),
    (lambda p: validate(None, {}), "validate() takes a Problem, got NoneType None"),
    (lambda p: validate(p, {"a": ("mem", 0)}), "validate(): buffer 'a': a placement must be a Placement(memory, offset), got tuple"),
])
def test_validate_names_a_wrong_type(call, says: str) -> None:  # type: ignore[no-untyped-def]
    """Issue 30 (item 9): a raw TypeError or AttributeError before."""
    from optplan import OptplanError

    with pytest.raises(OptplanError) as e:
        call(TWO)
    assert str(e.value).startswith(says)
