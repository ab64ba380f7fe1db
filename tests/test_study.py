"""optplan study (local pool and dask), compare on several files, progress, and plan pictures."""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import time
from pathlib import Path

import pytest
from conftest import REPO

from optplan import registry
from optplan.cli import main
from optplan.core.buffer import Buffer
from optplan.core.problem import Problem
from optplan.formats import read_problem
from optplan.study import Study, run
from optplan.study.executors import run_local
from optplan.study.tasks import Task, run_task

PLANNERS = ["naive", "greedy-size", "hill-climb", "auto"]
LIMIT = 2.0  # auto on these proves optimality by the bound at once, so the status does not depend on the load
SAME = ("instance", "buffers", "steps", "planner", "status", "peak", "lower_bound", "best_known", "optimum",
        "gap_to_bound", "gap_to_best", "peaks", "time_limit")  # all but seconds, version and message


@pytest.fixture(scope="module")
def tiny(shared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tiny")
    shutil.copy(REPO / "models" / "unet.json", d)
    shutil.copy(shared / "minimalloc" / "example.12.csv", d / "example.csv")
    (d / "summary.json").write_text('[{"name": "not a problem"}]')
    return d


@pytest.fixture(scope="module")
def local_dir(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("local")
    rows, ran = run(Study([str(tiny)], out, PLANNERS, LIMIT, processes=2))
    assert ran == 2 * len(PLANNERS) == len(rows)
    return out


def table(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_study_rows_equal_direct_solve_calls(tiny: Path, local_dir: Path) -> None:
    rows = table(local_dir / "runs.csv")
    files = {"unet": tiny / "unet.json", "example": tiny / "example.csv"}
    for r in rows:
        plan = registry.solve(read_problem(files[r["instance"].split("/")[1]]), r["planner"], time_limit=LIMIT,
                              workers=1, seed=0)
        assert (r["status"], int(r["peak"]), int(r["lower_bound"])) == (plan.status.value, plan.objective_value,
                                                                        plan.objective_bound)
        assert float(r["gap_to_bound"]) == pytest.approx(plan.gap)
    naive = {r["instance"]: r for r in rows if r["planner"] == "naive"}[f"{tiny.name}/example"]
    assert naive["optimum"] == "12" and int(naive["peak"]) > 12
    assert float(naive["gap_to_best"]) == pytest.approx(int(naive["peak"]) / 12 - 1)
    summary = (local_dir / "summary.md").read_text()
    assert "| greedy-size | 2 | 2 |" in summary and f"{tiny.name}/unet" in summary
    for stem in ("gaps", "time"):
        assert (local_dir / f"{stem}.png").stat().st_size > 10_000
    assert "greedy-size" in (local_dir / "gaps.svg").read_text() and "buffers" in (local_dir / "time.svg").read_text()


def test_dask_local_cluster_gives_the_local_csv(tiny: Path, local_dir: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("distributed", reason="the dask extra")
    code = main(["study", str(tiny), "-o", str(tmp_path), "--planners", ",".join(PLANNERS), "--time-limit", str(LIMIT),
                 "--executor", "dask", "--jobs", "2"])
    _, err = capsys.readouterr()
    assert code == 0 and "summary.json: not an optplan problem" in err and "best 12 B by" in err  # plain progress lines
    strip = [[{k: r[k] for k in SAME} for r in table(d / "runs.csv")] for d in (local_dir, tmp_path)]
    assert strip[0] == strip[1]


def test_resume_runs_only_what_is_missing(tiny: Path, local_dir: Path, tmp_path: Path) -> None:
    shutil.copytree(local_dir, tmp_path, dirs_exist_ok=True)
    t0 = time.perf_counter()
    rows, ran = run(Study([str(tiny)], tmp_path, PLANNERS, LIMIT))
    assert ran == 0 and len(rows) == 8 and time.perf_counter() - t0 < 5  # nothing solved, nothing drawn
    before = table(tmp_path / "runs.csv")
    kept = [r for r in before if r["planner"] != "greedy-size"]  # as if interrupted before greedy-size ran
    with (tmp_path / "runs.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, list(before[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(kept)
    rows, ran = run(Study([str(tiny)], tmp_path, PLANNERS, LIMIT, processes=1))
    after = table(tmp_path / "runs.csv")
    assert ran == 2 and after == before or [r["seconds"] for r in after if r["planner"] != "greedy-size"] == \
        [r["seconds"] for r in kept]  # the kept rows were not run again


def _crash_once(problem: Problem, task: Task) -> dict:
    mark = Path(os.environ["OPTPLAN_TEST_CRASH_MARK"])
    if task.planner == "naive" and not mark.exists():
        mark.touch()
        os._exit(1)  # the worker process dies as if killed
    return run_task(problem, task)


def test_a_lost_worker_process_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTPLAN_TEST_CRASH_MARK", str(tmp_path / "crashed"))
    p = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 2, 4)))  # naive stacks them: 8 over a bound of 4
    got: list[dict] = []
    run_local([(p, Task("p", "naive", None)), (p, Task("p", "greedy-size", None))], lambda t, r: got.append(r),
              processes=1, fn=_crash_once)
    assert (tmp_path / "crashed").exists() and sorted((r["planner"], r["status"]) for r in got) == [
        ("greedy-size", "OPTIMAL"), ("naive", "FEASIBLE")]


def test_compare_takes_files_and_directories(tiny: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["compare", str(tiny), str(tiny / "unet.json"), "--planners", "naive,greedy-size", "--json"])
    docs = json.loads(capsys.readouterr().out)
    assert code == 0 and sorted({d["instance"] for d in docs}) == [f"{tiny.name}/example", f"{tiny.name}/unet"]
    naive = next(d for d in docs if d["instance"] == f"{tiny.name}/example" and d["planner"] == "naive")
    assert naive["optimum"] == 12 and naive["gap_to_best"] == pytest.approx(naive["peak"]["mem"] / 12 - 1)
    code = main(["compare", str(tiny), "--planners", "naive,greedy-size"])
    o = capsys.readouterr().out
    assert code == 0 and "reference: the proven optimum 12" in o and "gap to reference" in o and "| naive |" not in o
    code = main(["compare", str(tiny), "--planners", "naive,greedy-size", "--format", "markdown"])
    o = capsys.readouterr().out
    assert code == 0 and "| naive | 2 | 2 |" in o and "gap to reference" not in o  # the Markdown tables alone


def test_search_progress_reports_best(capsys: pytest.CaptureFixture) -> None:
    seen: list[dict] = []
    p = Problem(tuple(Buffer(f"b{i}", 8 + i, i, i + 3) for i in range(12)))
    registry.solve(p, "search", time_limit=5, progress=seen.append)
    assert seen and all(set(s) >= {"best", "bound", "gap", "elapsed"} for s in seen)
    assert any(s["best"] is not None for s in seen)


def _random_problem(n: int, seed: int = 1) -> Problem:
    rng = random.Random(seed)
    bufs = []
    for i in range(n):
        start = rng.randrange(0, max(1, n // 4))
        bufs.append(Buffer(f"t{i}", rng.choice((64, 256, 4096, 65536, 1 << 20)), start, start + rng.randint(1, 40)))
    return Problem(tuple(bufs))


def _svg_checks(svg: str, plan, n: int) -> None:  # type: ignore[no-untyped-def]
    assert f"{plan.planner}: {plan.status.value}, peak mem" in svg and "gap to bound" in svg  # the plan's own title
    assert ">step<" in svg and "mem address (" in svg and f"{n:,} buffers" in svg and "lower bound" in svg
    assert svg.count("<title>") == n and "<title>t3: " in svg and ", offset " in svg  # one hover per buffer


def test_plot_a_10_buffer_plan(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("matplotlib", reason="plotting needs the optional matplotlib extra")
    from optplan.formats import write_plan, write_problem

    problem = _random_problem(10)
    plan = registry.solve(problem, "greedy-size")
    write_problem(problem, tmp_path / "p.json")
    write_plan(problem, plan, tmp_path / "plan.json")
    for ext in ("png", "svg", "html"):
        assert main(["plot", str(tmp_path / "p.json"), str(tmp_path / "plan.json"), "-o", str(tmp_path / f"l.{ext}"),
                     "--width", "1000", "--dpi", "80"]) == 0
    png = (tmp_path / "l.png").read_bytes()
    assert png[:4] == b"\x89PNG" and len(png) > 15_000
    _svg_checks((tmp_path / "l.svg").read_text(), plan, 10)
    assert "<title>t3: " in (tmp_path / "l.html").read_text()
    assert capsys.readouterr().out.count("layout written to") == 3
    assert main(["plot", str(tmp_path / "p.json"), str(tmp_path / "plan.json"), "-o", str(tmp_path / "l.gif")]) == 2
    assert "unknown picture extension '.gif'" in capsys.readouterr().err


def test_plot_a_30k_buffer_plan(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="plotting needs the optional matplotlib extra")
    from optplan.report.layout import PlanHeader, draw_layout

    problem = _random_problem(30_000)
    plan = registry.solve(problem, "naive")
    for ext in ("png", "svg"):
        draw_layout(problem, plan.placements, PlanHeader.of(plan), tmp_path / f"l.{ext}", 1000, 80)
    assert (tmp_path / "l.png").stat().st_size > 30_000
    _svg_checks((tmp_path / "l.svg").read_text(), plan, 30_000)


def test_a_lost_dask_worker_task_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed", reason="the dask extra")
    import sys

    import cloudpickle

    from optplan.study.executors import run_dask

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    monkeypatch.setenv("OPTPLAN_TEST_CRASH_MARK", str(tmp_path / "crashed"))
    p = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 2, 4)))
    got: list[dict] = []
    run_dask([(p, Task("p", "naive", None)), (p, Task("p", "greedy-size", None))], lambda t, r: got.append(r),
             processes=1, fn=_crash_once)
    assert (tmp_path / "crashed").exists() and sorted((r["planner"], r["status"]) for r in got) == [
        ("greedy-size", "OPTIMAL"), ("naive", "FEASIBLE")]


def test_rows_of_a_hierarchy_show_each_memory_and_the_objective_in_words() -> None:
    """Two memories: a row carries each memory's peak and the objective's quantities in words, and
    the summary shows the best run's peaks, not the objective's one packed number."""
    from optplan.core.buffer import Memory
    from optplan.study.results import derive
    from optplan.study.summary import summary_markdown

    p = Problem((Buffer("p", 1024, 0, 2), Buffer("q", 4096, 1, 3), Buffer("s", 2048, 3, 5)),
                (Memory("sram", capacity=4096), Memory("dram")))
    rows = [run_task(p, Task("ex", name, 10.0)) for name in ("greedy-size", "auto")]
    for r in rows:
        assert str(r["peaks"]).startswith("sram:") and " dram:" in str(r["peaks"])
        assert str(r["objective"]).startswith("fast-first: sram holds") and "dram peak" in str(r["objective"])
    derive(rows)
    line = next(x for x in summary_markdown(rows).splitlines() if x.startswith("| ex |"))
    assert "sram 4,096, dram " in line and str(rows[1]["peak"]) not in line
