"""Issue 31, what users read: one lower bound per memory, the same number in `optplan bounds
--time-limit`, solve's table, `solve --json` and Plan.lower_bound, each with where it comes from;
without --time-limit, `bounds` says where solve may report more. And a feasible-objective answer
prints no gap: nothing is optimized."""

from __future__ import annotations

import json
from pathlib import Path

from optplan.cli import main

REPO = Path(__file__).resolve().parents[1]
TWO = REPO / "examples" / "two_memories.csv"
TWO_MEMORIES = ["--memory", "sram:4KiB:align=64", "--memory", "dram"]
# one memory whose optimum (8) is above its live load (7) (tests/test_floor_decisions.py's GADGET)
GADGET = [(0, 1, 5), (0, 2, 2), (1, 3, 3), (1, 3, 1), (2, 3, 1), (1, 4, 1), (2, 4, 1), (4, 5, 2), (3, 6, 5),
          (5, 6, 1), (5, 6, 1)]


def _gadget(tmp_path: Path) -> Path:
    path = tmp_path / "gadget.csv"
    path.write_text("id,lower,upper,size\n" + "".join(f"b{i},{a},{b},{z}\n" for i, (a, b, z) in enumerate(GADGET)))
    return path


def _column(text: str, names: tuple[str, ...], index: int) -> dict[str, int]:
    """memory -> the integer in column ``index`` of a table's rows for ``names``."""
    rows = [ln.split() for ln in text.splitlines() if ln.strip().split()[:1] and ln.split()[0] in names]
    return {r[0]: int(r[index].replace(",", "")) for r in rows}


def _every_output(capsys, path: Path, memories: list[str]) -> list[dict[str, int]]:
    """The bound per memory as `bounds --time-limit` (table, JSON), solve's table, `solve --json`
    and Python report it."""
    from optplan import solve
    from optplan.formats import read_problem
    from optplan.formats.memspec import parse_memories

    problem = read_problem(path)
    names = tuple(problem.memory_names) if not memories else ("sram", "dram")
    assert main(["bounds", str(path), *memories, "--time-limit", "30"]) == 0
    out = capsys.readouterr().out
    assert "auto: OPTIMAL" in out, out
    table = _column(out, names, 2)
    assert main(["bounds", str(path), *memories, "--time-limit", "30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "OPTIMAL" and doc["note"] is None and doc["infeasible"] is None
    assert main(["solve", str(path), *memories, "--time-limit", "30"]) == 0
    solved = _column(capsys.readouterr().out, names, 3)
    assert main(["solve", str(path), *memories, "--time-limit", "30", "--json"]) == 0
    solved_doc = json.loads(capsys.readouterr().out)
    if memories:
        problem = problem.with_memories(parse_memories([m for m in memories if m != "--memory"]))
    plan = solve(problem, time_limit=30)
    return [table, doc["lower_bound"], solved, solved_doc["lower_bound"], dict(plan.lower_bound), doc["source"]]


def test_bounds_with_a_time_limit_is_the_bound_solve_reports(capsys, tmp_path) -> None:
    """Two memories: the SRAM's planner-free bound is 0 and the DRAM's the load beyond the SRAM;
    solve reports 4,096 (the bytes its plan holds in the SRAM, which fast-first does not weigh) and
    101,024 (the DRAM peak proven optimal): bounds --time-limit says the same, and why."""
    *numbers, source = _every_output(capsys, TWO, TWO_MEMORIES)
    assert all(n == {"sram": 4096, "dram": 101024} for n in numbers), numbers
    assert source["dram"] == "proved optimal by auto" and source["sram"].startswith("bytes auto's plan holds"), source

    assert main(["bounds", str(TWO), *TWO_MEMORIES, "--json"]) == 0  # planner-free: 0 for the SRAM, and a note
    doc = json.loads(capsys.readouterr().out)
    assert doc["lower_bound"] == {"sram": 0, "dram": 96928} and doc["status"] is None
    assert doc["source"] == {"sram": "no buffer must be here", "dram": "live load beyond the capacity of sram"}
    assert "sram to the bytes its plan holds" in doc["note"] and "--time-limit" in doc["note"]
    assert main(["bounds", str(TWO), *TWO_MEMORIES]) == 0
    out = capsys.readouterr().out
    assert "no buffer must be here" in out and "note: solve may report more (fast-first)" in out, out


def test_bounds_with_a_time_limit_lifts_one_memory_to_its_proven_optimum(capsys, tmp_path) -> None:
    """One memory, optimum 8 above the live load 7: solve lifts its bound to 8 where it proves it;
    bounds --time-limit reports 8 too, `bounds` alone the load 7 and that solve may report more."""
    path = _gadget(tmp_path)
    *numbers, source = _every_output(capsys, path, [])
    assert all(n == {"mem": 8} for n in numbers) and source == {"mem": "proved optimal by auto"}, (numbers, source)
    assert main(["bounds", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["lower_bound"] == {"mem": 7} and doc["source"] == {"mem": "live load"} and doc["step"] == {"mem": 0}
    assert "mem to the peak where it proves its plan optimal" in doc["note"]


def test_bounds_with_a_time_limit_keeps_an_infeasibility_proof(capsys, tmp_path) -> None:
    path = _gadget(tmp_path)
    assert main(["bounds", str(path), "--capacity", "6", "--time-limit", "30", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["lower_bound"] == {"mem": None} and doc["status"] == "INFEASIBLE" and "'mem'" in doc["infeasible"]
    assert main(["bounds", str(path), "--capacity", "7", "--time-limit", "30"]) == 1  # proven by a planner, not the load
    out = capsys.readouterr().out
    assert out.startswith("INFEASIBLE: ") and "lower bound" not in out, out


def test_a_feasible_answer_prints_no_gap(capsys, tmp_path) -> None:
    """At capacity 9 the feasible objective takes the first plan (peak 8, load bound 7): no gap in
    the table, the objective line, the last progress line or --json (before: 14.29% everywhere)."""
    from optplan import solve
    from optplan.core.objective import Objective
    from optplan.formats import read_problem
    from optplan.report.progress import Reading

    path = _gadget(tmp_path)
    assert main(["solve", str(path), "--capacity", "9", "--objective", "feasible", "--time-limit", "30"]) == 0
    out, err = capsys.readouterr()
    assert "gap" not in out and "%" not in out and "gap" not in err, (out, err)
    assert "feasible: any plan within the capacities" in out
    assert main(["solve", str(path), "--capacity", "9", "--objective", "feasible", "--time-limit", "30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] in ("FEASIBLE", "OPTIMAL") and doc["gap"] is None and doc["gap_of"] is None
    problem = read_problem(path).with_capacity(9)
    plan = solve(problem, objective="feasible", time_limit=30)
    assert plan.gap is None and plan.memory_gap("mem") is None
    last = Reading(problem, Objective.parse("feasible", problem)).answer(plan)
    assert "gap" not in last and last.endswith("a plan within the capacities"), last
    plan_file = tmp_path / "plan.json"  # the plan file states gap null, and validate accepts it
    assert main(["solve", str(path), "--capacity", "9", "--objective", "feasible", "--time-limit", "30", "-o", str(plan_file)]) == 0
    capsys.readouterr()
    assert json.loads(plan_file.read_text())["gap"] is None
    assert main(["validate", str(path), str(plan_file), "--capacity", "9"]) == 0
