"""Edges of the input: integers near 2^63, option typos, odd encodings, plans for another problem."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from optplan import Buffer, OptplanError, Placement, Problem, ProblemError, registry, solve, validate
from optplan.cli import main
from optplan.core.bounds import lower_bounds, peak_load
from optplan.core.buffer import INT64_MAX
from optplan.formats import read_placements, read_problem

HEADER = "id,lower,upper,size\n"


def rows(*buffers: tuple[str, int, int, int]) -> str:
    return HEADER + "".join(f"{b},{lo},{hi},{s}\n" for b, lo, hi, s in buffers)


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    o, e = capsys.readouterr()
    return code, o, e


def one_error(capsys: pytest.CaptureFixture, *argv: str) -> str:
    code, _, err = run(capsys, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


# -- integers against 2^63 - 1 -----------------------------------------------------------------

@pytest.mark.parametrize("text, says", [
    (rows(("a", 0, 2, 2**64)), "line 2 (buffer 'a'): field 'size': 18446744073709551616 does not fit a 64-bit integer"),
    (rows(("a", 0, 2**64, 4)), "field 'upper': 18446744073709551616 does not fit"),
    (rows(*[(f"b{i}", 0, 2, 2**62) for i in range(3)]), "buffer 'b1': field 'size': with it the live load at step 0 is 9223372036854775808 bytes"),
    (rows(*[(f"b{i}", 0, 2, 2**61) for i in range(5)]), "buffer 'b3': field 'size': with it the live load at step 0"),
    (HEADER + "a,0,2,4,\n".replace(",\n", "\n") + f"b,0,2,{2**63 - 1}\n", "buffer 'b': field 'size': with it the live load"),
])
@pytest.mark.parametrize("command", ["info", "bounds", "solve"])
def test_integers_past_int64_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture, text: str, says: str, command: str) -> None:
    (tmp_path / "p.csv").write_text(text)
    assert says in one_error(capsys, command, str(tmp_path / "p.csv"))


def test_json_integers_past_int64(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    doc = {"format": "optplan-problem", "version": 1, "buffers": [{"id": "a", "size": 2**70, "start": 0, "end": 1}]}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    assert "buffer 'a': field 'size': 1180591620717411303424 does not fit" in one_error(capsys, "info", str(tmp_path / "p.json"))
    doc = {"format": "optplan-problem", "version": 1, "memories": [{"name": "m", "weight": 2**64}],
           "buffers": [{"id": "a", "size": 1, "start": 0, "end": 1}]}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    assert "memory 'm': field 'weight'" in one_error(capsys, "info", str(tmp_path / "p.json"))
    (tmp_path / "p.json").write_text('{"buffers": [{"id": "a", "size": ' + "1" * 5000 + ', "start": 0, "end": 1}]}')
    assert "not read: Exceeds the limit (4300 digits)" in one_error(capsys, "info", str(tmp_path / "p.json"))


def test_sums_just_under_the_edge_are_exact(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Three live buffers of 2^61: 6,917,529,027,641,081,856 bytes, not a float."""
    (tmp_path / "p.csv").write_text(rows(*[(f"b{i}", 0, 2, 2**61) for i in range(3)]))
    code, out, _ = run(capsys, "info", str(tmp_path / "p.csv"), "--json")
    assert code == 0 and json.loads(out)["peak_live_load"] == 3 * 2**61
    code, out, _ = run(capsys, "bounds", str(tmp_path / "p.csv"), "--json")
    assert code == 0 and json.loads(out)["lower_bound"] == {"mem": 3 * 2**61}
    # int64 partial sums would wrap here: the exact path takes over
    size = np.array([2**62, 2**62 - 1], np.int64)
    assert peak_load(np.array([0, 1], np.int64), np.array([3, 3], np.int64), size) == (INT64_MAX, 1)
    # alignment rounding near the edge stays a valid bound (no int64 array of 2^63)
    big = Problem((Buffer("a", INT64_MAX - 2, 0, 2, alignment=2),))
    assert lower_bounds(big).lower == {"mem": INT64_MAX - 2}


@pytest.mark.parametrize("name", ["naive", "greedy-size", "first-fit-orders", "best-fit-heap", "linear-scan",
                                  "hill-climb", "recycle", "search", "auto"])
def test_planners_near_the_edge_answer_or_say_why(name: str) -> None:
    """Sizes and times that fit while their products (areas) or stacks pass 2^63."""
    long_times = Problem(tuple(Buffer(f"b{i}", 2**30 + i, i * 2**40, (i + 2) * 2**40) for i in range(6)))
    stacked = Problem(tuple(Buffer(f"b{i}", 2**62, i, i + 1) for i in range(3)))
    for problem in (long_times, stacked):
        plan = solve(problem, name, time_limit=2)
        assert plan.found or plan.message, plan  # a plan (validated), or UNKNOWN with the reason


def test_validator_reports_offsets_past_int64(tmp_path: Path) -> None:
    p = Problem((Buffer("a", 8, 0, 2), Buffer("b", 8, 0, 2)))
    bad = validate(p, {"a": Placement("mem", INT64_MAX - 4), "b": Placement("mem", 2**70)})
    assert [v.kind for v in bad] == ["capacity", "capacity"] and "passes 2^63-1" in str(bad[0])


# -- options --------------------------------------------------------------------------------

TINY = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 1, 3)))


@pytest.mark.parametrize("options, says", [
    ({"time_limt": 1}, "unknown option 'time_limt'; did you mean 'time_limit'?"),
    ({"wrokers": 2}, "did you mean 'workers'?"),
    ({"objective": "min_peak"}, "option objective='min_peak': must be one of 'min-peak', 'fast-first', 'weighted', 'feasible'"),
    ({"workers": 1.5}, "option workers=1.5: must be an integer from 1 to 1024"),
    ({"workers": 0}, "must be an integer from 1 to 1024"),
    ({"time_limit": "5"}, "option time_limit='5': must be a finite number of seconds > 0"),
    ({"time_limit": 0}, "option time_limit=0: must be a finite number of seconds > 0"),
    ({"time_limit": math.nan}, "must be a finite number"),
    ({"time_limit": -1}, "must be a finite number"),
    ({"seed": -1}, "option seed=-1: must be an integer from 0 to 2147483647"),
    ({"seed": 2**70}, "must be an integer from 0 to 2147483647"),
    ({"seed": True}, "must be an integer"),
    ({"deterministic": "yes"}, "must be True or False"),
    ({"warm_start": "no"}, "option warm_start='no': must be True or False"),
    ({"goal": 5}, "option goal=5: must be a dict of memory name -> bytes"),
    ({"goal": {"mem": -1}}, "must be a dict of memory name -> bytes"),
])
@pytest.mark.parametrize("name", ["auto", "greedy-size"])
def test_solve_rejects_typos_and_bad_values(options: dict, says: str, name: str) -> None:
    with pytest.raises(OptplanError, match=re.escape(says)):
        solve(TINY, name, **options)


def test_an_option_of_another_planner_is_fine_and_a_path_is_not_a_problem(tmp_path: Path) -> None:
    assert solve(TINY, "greedy-size", time_limit=1, workers=2, seed=7, objective="feasible").found
    with pytest.raises(OptplanError, match=r"solve\(\) takes a Problem, got str 'A.csv'; read a file with"):
        solve("A.csv")  # type: ignore[arg-type]
    with pytest.raises(OptplanError, match="got PosixPath"):
        solve(tmp_path / "A.csv")  # type: ignore[arg-type]
    with pytest.raises(OptplanError, match="unknown planner 'cpstat'; did you mean 'cpsat'"):
        solve(TINY, "cpstat")
    assert registry.option_error("seed", 2**31 - 1) is None


@pytest.mark.parametrize("planner", [None, 5, ["auto"], b"auto"])
def test_a_planner_is_named_by_a_string(planner: object) -> None:
    with pytest.raises(OptplanError, match="a planner is named by a string") as e:
        solve(TINY, planner)  # type: ignore[arg-type]
    assert "\n" not in str(e.value)


def test_every_checked_option_is_some_planners() -> None:
    # solve() knows these before the planners that take them are imported (compare imports the heuristics only)
    assert set(registry._OPTIONS) <= set().union(*(registry.get(n).options for n in registry.names()))  # type: ignore[attr-defined]


@pytest.mark.parametrize("argv, says", [
    (["--seed", "-1"], "argument --seed: must be an integer from 0 to 2147483647 (2^31-1), got '-1'"),
    (["--seed", str(2**70)], "argument --seed: must be an integer from 0"),
    (["--time-limit", "nan"], "argument --time-limit: must be a finite number of seconds > 0, got 'nan'"),
    (["--time-limit", "-1"], "must be a finite number of seconds > 0"),
    (["--time-limit", "0"], "must be a finite number of seconds > 0"),
    (["--time-limit", "inf"], "must be a finite number of seconds > 0"),
    (["--workers", "0"], "argument --workers: must be an integer from 1 to 1024, got '0'"),
    (["--workers", "-3"], "must be an integer from 1 to 1024"),
    (["--workers", "1.5"], "argument --workers: not an integer: '1.5'"),
    (["--capacity", str(2**64)], "memory 'mem': field 'capacity': 18446744073709551616 does not fit"),
])
def test_cli_checks_seeds_workers_time_limits(tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str], says: str) -> None:
    (tmp_path / "p.csv").write_text(rows(("a", 0, 2, 4)))
    with pytest.raises(SystemExit) as exit_:
        main(["solve", str(tmp_path / "p.csv"), *argv])
        raise SystemExit(2)  # --capacity is checked after parsing, by the Problem
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and says in err and len(err.strip().splitlines()) == 1


# -- readers --------------------------------------------------------------------------------

def test_csv_with_a_bom_and_alignment_zero(tmp_path: Path) -> None:
    (tmp_path / "bom.csv").write_bytes("\ufeffid,lower,upper,size\na,0,1,4\n".encode())
    assert read_problem(tmp_path / "bom.csv").buffer("a").size == 4
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(
        {"format": "optplan-problem", "version": 1, "buffers": [{"id": "a", "size": 4, "start": 0, "end": 1}]}).encode())
    assert read_problem(tmp_path / "bom.json").buffer("a").size == 4
    (tmp_path / "a0.csv").write_text("id,lower,upper,size,alignment\na,0,1,4,0\nb,0,1,4,\n")
    with pytest.raises(ProblemError, match="buffer 'a': field 'alignment': must be >= 1, got 0"):
        read_problem(tmp_path / "a0.csv")
    (tmp_path / "a0.csv").write_text("id,lower,upper,size,alignment\na,0,1,4,2\nb,0,1,4,0\n")  # the bulk reader's kind
    with pytest.raises(ProblemError, match="buffer 'b': field 'alignment': must be >= 1, got 0"):
        read_problem(tmp_path / "a0.csv")
    (tmp_path / "a1.csv").write_text("id,lower,upper,size,alignment\nb,0,1,4,\n")
    assert read_problem(tmp_path / "a1.csv").buffer("b").alignment == 1  # an empty cell is the default


def test_deep_json_and_duplicate_keys_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    assert "nested too deeply" in one_error(capsys, "info", str(tmp_path / "deep.json"))
    (tmp_path / "dup.json").write_text('{"buffers": [{"id": "a", "size": 4, "size": 8, "start": 0, "end": 1}]}')
    assert "key 'size' appears twice in one object" in one_error(capsys, "info", str(tmp_path / "dup.json"))


# -- validate ----------------------------------------------------------------------------------

def test_validate_capacity_and_plan_rows_that_disagree(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "p.csv").write_text(rows(("a", 0, 2, 4), ("b", 1, 3, 4)))
    (tmp_path / "plan.csv").write_text("id,lower,upper,size,offset\na,0,2,4,0\nb,1,3,4,4\n")
    problem, plan = str(tmp_path / "p.csv"), str(tmp_path / "plan.csv")
    code, out, _ = run(capsys, "validate", problem, plan)
    assert code == 0 and "VALID" in out
    code, out, _ = run(capsys, "validate", problem, plan, "--capacity", "7")
    assert code == 1 and "exceeds capacity 7" in out and "INVALID: 1 violation(s)" in out
    # a plan that does not fit the problem is invalid (exit 1), each disagreement listed; not bad input (2)
    for text, says in [("id,lower,upper,size,offset\na,0,2,4,0\nb,1,3,4,4\na,0,2,4,8\n",
                         "buffer 'a': duplicate: line 4 places it again (first on line 2)"),
                        ("id,lower,upper,size,offset\na,0,2,4,0\nb,1,4,4,4\n",
                         "buffer 'b': mismatch: line 3: field 'upper': 4 in the plan but 3 in the problem"),
                        ("id,begin,end,size,offset\na,0,1,4,0\nb,1,2,8,4\n", "field 'size': 8 in the plan but 4")]:  # end inclusive
        (tmp_path / "plan.csv").write_text(text)
        code, out, err = run(capsys, "validate", problem, plan)
        assert code == 1 and says in out and "INVALID: 1 violation(s)" in out and err == "", (out, err)
    (tmp_path / "plan.json").write_text('{"format": "optplan-plan", "version": 1, "status": "FEASIBLE", "planner": "x", '
                                        '"placements": {"a": {"memory": "mem", "offset": 0}, "a": {"memory": "mem", "offset": 4}}}')
    assert "key 'a' appears twice" in one_error(capsys, "validate", problem, str(tmp_path / "plan.json"))
    assert read_placements(tmp_path / "plan.csv", Problem((Buffer("z", 1, 0, 1),))) == {
        "a": Placement("mem", 0), "b": Placement("mem", 4)}  # ids the problem lacks: the validator's 'unknown'
