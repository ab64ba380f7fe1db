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
from optplan.study.results import FOUND, Row

EXIT_OK, EXIT_NO_PLAN = 0, 1
EXACT = "auto"  # compare's exact reference
EXACT_SECONDS = 2.0  # seconds per instance from which compare runs the exact reference by default


def exact_reference(asked: bool | None, time_limit: float | None, instances: int) -> bool:
    """Whether compare runs ``EXACT`` after the heuristics: as asked (``--exact``/``--no-exact``),
    else when a time limit gives each instance ``EXACT_SECONDS`` at least (without a limit the
    exact planner may run for hours: only when asked)."""
    if asked is not None:
        return asked
    return time_limit is not None and time_limit >= EXACT_SECONDS * max(instances, 1)


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


def _instance_table(label: str, problem, rows: list[Row], exact: bool) -> Table:  # type: ignore[no-untyped-def]
    t = Table(title=f"{label} ({len(problem.buffers):,} buffers): {_reference(problem, rows, exact)}",
              title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("planner", "status", "peak", "gap to bound", "gap to reference", "seconds"):
        t.add_column(col, justify="left" if col in ("planner", "status") else "right", no_wrap=True)
    notes = []
    for r in rows:
        peak = _peaks(r) if len(problem.memories) > 1 and r["peaks"] else _num(r["peak"])
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


def _peaks(row: Row) -> str:
    """A run's peak per memory: ``sram 4,096, dram 101,024``."""
    return ", ".join(f"{m} {int(v):,}" for m, v in (p.rsplit(":", 1) for p in str(row["peaks"]).split()))


def _reference(problem, rows: list[Row], exact: bool) -> str:  # type: ignore[no-untyped-def]
    """What "gap to reference" measures against, in words: the proven optimum (and who proved it),
    else the best plan found here, not proven optimal, with the proven bound and why no exact
    planner settled it."""
    best = next((r for r in rows if r["status"] in FOUND), None)
    if best is None:
        return "no plan found: no reference"
    value = _peaks(best) if len(problem.memories) > 1 and best["peaks"] else _num(best["peak"])
    if rows[0]["optimum"] not in ("", None):
        by = [str(r["planner"]) for r in rows if r["status"] == "OPTIMAL"]
        return f"reference: the proven optimum {value}" + (f" (proven by {', '.join(by[:3])})" if by else " (at the lower bound)")
    bound = max((int(str(r["lower_bound"])) for r in rows if r["lower_bound"] not in ("", None)), default=None)
    why = f"{EXACT} ran and did not prove it in its time" if exact else "no exact planner ran (--exact, with --time-limit)"
    bound_text = f"; lower bound {bound:,}" if bound is not None and len(problem.memories) == 1 else ""
    return f"reference: the best plan found here, {value} by {best['planner']}, not proven optimal: {why}{bound_text}"


def _markdown_table(lines: list[str]) -> Table:
    """A Markdown table (``planner_table``'s) as a rich table."""
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    t = Table(box=box.SIMPLE_HEAD)
    for k, col in enumerate(cells[0]):
        t.add_column(col, justify="left" if k == 0 else "right", no_wrap=True)
    for row in cells[2:]:
        t.add_row(*row)
    return t


def compare_command(args: argparse.Namespace, out: Console, prepare) -> int:  # type: ignore[no-untyped-def]
    from optplan import registry
    from optplan.core import jit
    from optplan.formats.native_json import plan_to_dict
    from optplan.study.compare import compare
    from optplan.study.instances import discover
    from optplan.study.summary import instance_table, planner_table

    names = args.planners.split(",") if args.planners else registry.heuristic_names()
    exact = exact_reference(args.exact, args.time_limit, len(discover(args.paths)[0]))
    if exact and EXACT not in names:
        names = [*names, EXACT]  # last: it gets what the heuristics leave of each instance's share
    for n in names:
        registry.get(n)
    results = compare(args.paths, names, args.time_limit, args.seed, prepare)
    found = any(p.found for c in results for p in c.plans)
    if args.json:
        extra = ("best_known", "optimum", "gap_to_best")
        docs = [{"instance": c.label, **plan_to_dict(p), **{k: r[k] if r[k] != "" else None for k in extra},
                 "reference": _reference(c.problem, c.rows, exact).removeprefix("reference: ")}
                for c in results for p, r in zip(c.plans, c.rows)]
        out.print(json.dumps(docs), markup=False)
        return EXIT_OK if found else EXIT_NO_PLAN
    rows = [r for c in results for r in c.rows]
    if args.format == "markdown":
        out.print("\n".join([*instance_table(rows), "", *planner_table(rows)]), markup=False)
    else:
        for c in results:
            out.print(_instance_table(c.label, c.problem, c.rows, exact))
        if len(results) > 1:
            out.print("Over all instances (gap to the proven optimum, else to the best plan found here):")
            out.print(_markdown_table(planner_table(rows)))
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
                args.width, args.dpi, name=Path(args.problem).name)
    out.print(f"layout written to {args.output}", markup=False)
    return EXIT_OK


def memories_from_specs(specs: list[str] | None):  # type: ignore[no-untyped-def]
    """``--memory NAME[:CAPACITY][:align=N]``, fastest first (None: keep each problem's memories);
    the one parser of memory specs is ``optplan.formats.memspec``."""
    from optplan.formats.memspec import parse_memories

    return parse_memories(specs) if specs else None
