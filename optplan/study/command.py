"""The ``study``, ``compare`` and ``plot`` subcommands (cli.py only wires them)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from optplan.core.errors import OptplanError
from optplan.study.results import Row

EXIT_OK, EXIT_NO_PLAN = 0, 1


def _pct(v: object) -> str:
    return "n/a" if v in ("", None) else "inf" if v == "inf" else f"{100 * float(str(v)):.2f}%"


def _named(row: Row, key: str, text: str) -> str:
    """``text`` after the quantity ``row[key]`` names (a lexicographic objective's gap), if any."""
    return f"{row.get(key)} {text}" if row.get(key) else text


def _num(v: object) -> str:
    return "-" if v in ("", None) else f"{int(str(v)):,}"


def study_command(args: argparse.Namespace, out: Console, err: Console) -> int:
    from optplan.report.progress import StudyProgress
    from optplan.study.runner import Study, run

    study = Study(args.paths, Path(args.out_dir), args.planners.split(",") if args.planners else None,
                  args.time_limit, args.memories, " ".join(args.memory or []), args.executor, args.scheduler,
                  args.jobs, args.workers)
    study.command = "optplan " + " ".join(args.argv)
    if args.scheduler and args.executor != "dask":
        raise OptplanError("--scheduler needs --executor dask")
    t0 = time.perf_counter()
    rows, ran = run(study, lambda runs, instances: StudyProgress(err, runs, instances))
    for f in study.skipped:
        err.print(f"skipped {f}: not an optplan problem", markup=False)
    done = "nothing to run: every run is in" if ran == 0 else f"{ran} runs in {time.perf_counter() - t0:.1f} s;"
    out.print(f"{done} {study.out_dir / 'runs.csv'} ({len(rows)} rows), summary.md, gaps.png/svg, time.png/svg",
              markup=False)
    if ran:
        from optplan.study.summary import planner_table

        out.print("\n".join(planner_table(rows)), markup=False)
    skipped = [r for r in rows if str(r.get("message") or "").startswith("not run")]
    for r in skipped[:5]:
        err.print(f"{r['instance']} {r['planner']}: {r['message']}", markup=False)
    errors = [r for r in rows if r["status"] == "ERROR"]
    for r in errors[:5]:
        err.print(f"ERROR {r['instance']} {r['planner']}: {r.get('message')}", markup=False)
    return EXIT_NO_PLAN if errors else EXIT_OK


def _instance_table(label: str, problem, rows: list[Row]) -> Table:  # type: ignore[no-untyped-def]
    first = rows[0]
    ref = (f"optimum {_num(first['optimum'])} (proven)" if first["optimum"] not in ("", None)
           else f"best known {_num(first['best_known'])} (not proven optimal)")
    bound = max((int(str(r["lower_bound"])) for r in rows if r["lower_bound"] not in ("", None)), default=None)
    t = Table(title=f"{label} ({len(problem.buffers):,} buffers): lower bound {_num(bound)}, {ref}",
              title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("planner", "status", "peak", "gap to bound", "gap to best", "seconds"):
        t.add_column(col, justify="left" if col in ("planner", "status") else "right", no_wrap=True)
    notes = []
    for r in rows:
        peak = str(r["peaks"]).replace(":", " ") if len(problem.memories) > 1 and r["peaks"] else _num(r["peak"])
        status = str(r["status"])
        if str(r.get("message") or "").startswith("not run"):
            status = "not run"
            notes.append(f"{r['planner']}: {r['message']}")
        t.add_row(str(r["planner"]), status, peak, _named(r, "gap_of", _pct(r["gap_to_bound"])), _pct(r["gap_to_best"]),
                  f"{float(str(r['seconds'])):.3f}")
    if notes:
        t.caption = "; ".join(notes)
        t.caption_justify = "left"
    return t


def compare_command(args: argparse.Namespace, out: Console, prepare) -> int:  # type: ignore[no-untyped-def]
    from optplan import registry
    from optplan.core import jit
    from optplan.formats.native_json import plan_to_dict
    from optplan.study.compare import compare
    from optplan.study.summary import planner_table

    names = args.planners.split(",") if args.planners else registry.heuristic_names()
    for n in names:
        registry.get(n)
    results = compare(args.paths, names, args.time_limit, args.seed, prepare)
    found = any(p.found for c in results for p in c.plans)
    if args.json:
        extra = ("best_known", "optimum", "gap_to_best")
        docs = [{"instance": c.label, **plan_to_dict(p), **{k: r[k] if r[k] != "" else None for k in extra}}
                for c in results for p, r in zip(c.plans, c.rows)]
        out.print(json.dumps(docs), markup=False)
        return EXIT_OK if found else EXIT_NO_PLAN
    for c in results:
        out.print(_instance_table(c.label, c.problem, c.rows))
    if len(results) > 1:
        out.print("Over all instances (gap to the proven optimum, else to the best plan found here):")
        out.print("\n".join(planner_table([r for c in results for r in c.rows])), markup=False)
    note = jit.note()  # the plans' messages are not in the table: say once that they ran without kernels
    if note is not None:
        out.print(note[0], markup=False)
    return EXIT_OK if found else EXIT_NO_PLAN


def plot_command(args: argparse.Namespace, out: Console) -> int:
    from optplan.core.validate import validate
    from optplan.formats import read_input, read_plan_file
    from optplan.formats.graph_json import plan_problem
    from optplan.graph.model import Graph
    from optplan.report.layout import PlanHeader, draw_layout

    found = read_input(args.problem)  # a graph: the lifetimes of the plan's order
    problem = found.base if isinstance(found, Graph) else found
    placements, fields = read_plan_file(args.plan, problem)
    if isinstance(found, Graph):
        problem, violations = plan_problem(found, fields, str(args.plan), placements)
    else:
        violations = validate(problem, placements)  # type: ignore[assignment]
    if violations:
        out.print(f"INVALID: {violations[0]} ({len(violations)} violation(s)); run `optplan validate` for all", markup=False)
        return EXIT_NO_PLAN
    draw_layout(problem, placements, PlanHeader.from_fields(fields), args.output,
                args.width, args.dpi)
    out.print(f"layout written to {args.output}", markup=False)
    return EXIT_OK


def memories_from_specs(specs: list[str] | None):  # type: ignore[no-untyped-def]
    """``--memory NAME[:CAPACITY][:align=N]``, fastest first (None: keep each problem's memories);
    the one parser of memory specs is ``optplan.formats.memspec``."""
    from optplan.formats.memspec import parse_memories

    return parse_memories(specs) if specs else None
