"""The command line: exit codes, the --json contract, one-line errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from optplan.cli import main
from optplan.core.validate import validate
from optplan.formats import read_placements, read_problem

# a plan for minimalloc/example.12.csv with every buffer at offset 0 (rows as in the problem)
EVERY_BUFFER_AT_0 = "id,lower,upper,size,offset\nb1,0,3,4,0\nb2,3,9,4,0\nb3,0,9,4,0\nb4,9,21,4,0\nb5,0,21,4,0\n"


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    o, e = capsys.readouterr()
    return code, o, e


@pytest.mark.parametrize("name", ["A", "B", "C", "D", "E"])
def test_solve_minimalloc(shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture, name: str) -> None:
    src = shared / "minimalloc" / f"{name}.1048576.csv"
    plan = tmp_path / "plan.csv"
    code, o, _ = run(capsys, "solve", str(src), "--planner", "greedy-size", "-o", str(plan))
    assert code == 0
    assert "lower bound" in o and "gap" in o and "%" in o
    problem = read_problem(src)
    assert validate(problem, read_placements(plan, problem)) == []


def test_solve_json_contract(shared: Path, capsys: pytest.CaptureFixture) -> None:
    code, o, _ = run(capsys, "solve", str(shared / "minimalloc" / "C.1048576.csv"), "--planner", "greedy-size", "--json")
    doc = json.loads(o)
    assert code == 0
    for key in ("status", "planner", "peak", "lower_bound", "gap", "seconds", "placements"):
        assert key in doc
    assert doc["lower_bound"] == {"mem": 1039360} and doc["planner"] == "greedy-size"
    assert doc["gap"] == pytest.approx(doc["peak"]["mem"] / 1039360 - 1)
    assert set(doc["placements"]["0"]) == {"memory", "offset"}


def test_capacity_too_small_is_exit_1_and_writes_nothing(shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "plan.json"
    code, o, _ = run(capsys, "solve", str(shared / "minimalloc" / "C.1048576.csv"), "--capacity", "1000000",
                     "--planner", "greedy-size", "-o", str(out))
    assert code == 1 and "INFEASIBLE" in o and "at step" in o
    assert not out.exists()


def test_validate_bounds_info_convert(shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = shared / "minimalloc" / "example.12.csv"
    code, o, _ = run(capsys, "solve", str(src), "--planner", "greedy-size", "-o", str(tmp_path / "plan.json"))
    assert code == 0
    code, o, _ = run(capsys, "validate", str(src), str(tmp_path / "plan.json"))
    assert code == 0 and "VALID" in o
    # corrupt the plan: every buffer at offset 0
    bad = tmp_path / "bad.csv"
    bad.write_text(EVERY_BUFFER_AT_0)
    code, o, _ = run(capsys, "validate", str(src), str(bad))
    assert code == 1 and "overlap" in o and "INVALID" in o
    code, o, _ = run(capsys, "bounds", str(src), "--json")
    assert code == 0 and json.loads(o)["lower_bound"] == {"mem": 12}
    code, o, _ = run(capsys, "info", str(src), "--json")
    assert json.loads(o)["peak_live_load"] == 12 and json.loads(o)["buffers"] == 5
    code, _, _ = run(capsys, "convert", str(src), str(tmp_path / "p.json"))
    assert code == 0 and read_problem(tmp_path / "p.json").buffers == read_problem(src).buffers


def test_info_counts_live_bytes_without_gaps(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``a`` is inactive while ``b`` lives: 8 bytes at most, not 16."""
    src = tmp_path / "g.csv"
    src.write_text("id,lower,upper,size,gaps\na,0,10,8,2-8\nb,3,6,8,\n")
    code, o, _ = run(capsys, "info", str(src), "--json")
    assert code == 0 and json.loads(o)["peak_live_load"] == 8 and json.loads(o)["buffers_with_gaps"] == 1


@pytest.mark.parametrize("argv, message", [
    (["solve", "missing.csv"], "optplan: error: missing.csv: no such file\n"),
    (["solve", "p.txt"], "optplan: error: p.txt: unknown extension '.txt'; use .csv (MiniMalloc) or .json (optplan)\n"),
    (["solve", "EX", "--planner", "nope"], "optplan: error: unknown planner 'nope'; known planners: "),
    (["solve", "EX", "--capacity", "-5"], "optplan: error: --capacity must be >= 0, got -5\n"),
    (["solve"], "optplan solve: error: the following arguments are required: problem (see optplan solve --help)\n"),
    (["solve", "EX", "--time-limit", "soon"], "optplan solve: error: argument --time-limit: not a number: 'soon' (see optplan solve --help)\n"),
    (["frobnicate"], "optplan: error: argument command: invalid choice: 'frobnicate'"),
])
def test_bad_input_one_line_exit_2(shared: Path, capsys: pytest.CaptureFixture, argv: list[str], message: str) -> None:
    argv = [str(shared / "minimalloc" / "example.12.csv") if a == "EX" else a for a in argv]
    try:
        code = main(argv)
    except SystemExit as e:  # argparse usage errors
        code = e.code
    _, e = capsys.readouterr()
    assert code == 2
    assert e.startswith(message) and e.count("\n") == 1


def test_bad_problem_file_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    f = tmp_path / "p.csv"
    f.write_text("id,lower,upper,size\na,0,2,-4\n")
    code, _, e = run(capsys, "solve", str(f))
    assert code == 2 and e == f"optplan: error: {f}: buffer 'a': field 'size': must be >= 0, got -4\n"


def test_compare_json_lists_every_heuristic(shared: Path, capsys: pytest.CaptureFixture) -> None:
    from optplan.registry import heuristic_names

    code, o, _ = run(capsys, "compare", str(shared / "minimalloc" / "A.1048576.csv"), "--json")
    docs = json.loads(o)
    assert code == 0 and sorted(d["planner"] for d in docs) == sorted(heuristic_names())
    peaks = [d["peak"]["mem"] for d in docs if d["status"] in ("OPTIMAL", "FEASIBLE")]
    assert peaks == sorted(peaks)


def test_compare_imports_neither_the_solvers_nor_the_search(shared: Path) -> None:
    # about a second of compare's start (OR-Tools pulls in pandas): it runs the heuristics only
    import subprocess
    import sys

    code = ("import sys; from optplan.cli import main; main(['compare', sys.argv[1], '--json']); "
            "print([m for m in ('ortools', 'pulp', 'pandas', 'highspy', 'optplan.solvers', 'optplan.search', 'optplan.portfolio') "
            "if m in sys.modules])")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    run = subprocess.run([sys.executable, "-c", code, str(shared / "minimalloc" / "A.1048576.csv")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-500:]
    assert run.stdout.splitlines()[-1] == "[]"
    run = subprocess.run([sys.executable, "-c", "import sys, optplan; print(sorted(m for m in ('ortools', 'pulp', 'pandas') "
                          "if m in sys.modules))"], env=env, capture_output=True, text=True, timeout=300)
    assert run.stdout.strip() == "[]", run.stderr[-500:]


def test_plot_writes_a_picture_of_valid_plans_only(shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = shared / "minimalloc" / "example.12.csv"
    run(capsys, "solve", str(src), "--planner", "greedy-size", "-o", str(tmp_path / "plan.csv"))
    code, _, _ = run(capsys, "plot", str(src), str(tmp_path / "plan.csv"), "-o", str(tmp_path / "layout.png"))
    assert code == 0 and (tmp_path / "layout.png").read_bytes()[:4] == b"\x89PNG"
    bad = tmp_path / "bad.csv"
    bad.write_text(EVERY_BUFFER_AT_0)
    code, o, _ = run(capsys, "plot", str(src), str(bad), "-o", str(tmp_path / "bad.png"))
    assert code == 1 and "INVALID" in o and not (tmp_path / "bad.png").exists()


# time-valued fields: the only ones a deterministic plan file may change between runs
TIMED_STATS = ("seconds", "nodes_per_second")


def _untimed(plan: dict) -> dict:
    """The plan file without its wall-clock figures: ``seconds``, and stats named ``*seconds`` or
    ``nodes_per_second`` (at any depth)."""
    def strip(x: object) -> object:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if not any(k.endswith(t) for t in TIMED_STATS)}
        return x

    return strip(plan)  # type: ignore[return-value]


def test_deterministic_runs_repeat_byte_for_byte(shared: Path, tmp_path: Path) -> None:
    """Issue 19: every planner with ``--deterministic --seed 1`` gives the same answer twice, in two
    processes with different hash seeds (set order), on minimalloc A with a 1 s limit (the search,
    CP-SAT, MILP and hill-climb stop on their deterministic budgets there): the same plan file (or
    none) and the same ``--json`` object. Only the time-valued fields (``_untimed``) are left out;
    everything else, message and stats included, must match. The wall-clock guard sits at
    max(4 T, T + 10 s) (``deadline.guard_seconds``), far past these runs, and so does a MIP's own
    wall cap: a capped run drops the MIP's answer and keeps its warm start, so capped runs are
    compared too, and only a MIP capped in one run and not in the other may differ."""
    import os
    import subprocess
    import sys

    from optplan import registry

    names = registry.names()
    code = ("import sys, optplan.cli as c; out = sys.argv[1]; "
            "[c.main(['solve', sys.argv[2], '--planner', n, '--deterministic', '--seed', '1', '--time-limit', '1', "
            "'--json', '-o', f'{out}/{n}.json']) for n in sys.argv[3:]]")
    runs = []
    for k in range(2):
        out = tmp_path / f"run{k}"
        out.mkdir()
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), PYTHONHASHSEED=str(k))
        runs.append((out, subprocess.Popen([sys.executable, "-c", code, str(out), str(shared / "minimalloc" / "A.1048576.csv"),
                                            *names], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    printed = []
    for out, proc in runs:
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, stderr
        printed.append([_untimed(json.loads(line)) for line in stdout.splitlines()])
    assert len(printed[0]) == len(names) == len(printed[1])
    for n, a, b in zip(names, *printed):
        if ("deterministic_wall_capped" in a["stats"]) != ("deterministic_wall_capped" in b["stats"]):
            assert n.startswith("milp-"), n  # capped in one run only: the warm start there, the MIP's answer here
            continue
        assert a == b, n
        files = [out / f"{n}.json" for out, _ in runs]
        assert files[0].exists() == files[1].exists(), n
        if files[0].exists():
            assert _untimed(json.loads(files[0].read_bytes())) == _untimed(json.loads(files[1].read_bytes())), n
