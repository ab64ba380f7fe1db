"""Heuristics speed (compiled vs pure-Python reference) and the scale benchmark of issue 15.

    python experiments/bench_scale.py speed FILE... [--no-reference] [--compare FILE...]  # per constructive heuristic
    python experiments/bench_scale.py scale FILE... [--time-limit 60] [--read-only N]
    python experiments/bench_scale.py feasible FILE... --capacity C [--planners search,cpsat,auto] [--runs 2]

``speed``: CPU seconds of each heuristic's planner function (lower bound and validation
excluded), with the compiled packer and with the reference ``Packer`` it is tested against.
``scale``: ``auto`` as the CLI runs it (one time limit for reading, planning and writing the plan):
read time, total wall and CPU seconds (with the search member's processes), peak / lower bound,
peak RSS, the load average; one child process per file, so RSS is per instance. Synthetic
instances: ``experiments/shaped_like.py``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from optplan import registry
from optplan.core.deadline import Deadline
from optplan.formats import read_problem, write_plan
from optplan.heuristics import banked_greedy, packer
from optplan.heuristics.run import improving


def _cpu(fn, *args) -> tuple[float, object]:
    c0 = time.process_time()
    out = fn(*args)
    return time.process_time() - c0, out


def _reference(name: str):
    """The planner function of ``name`` running the pure-Python reference packer."""
    if name == "banked-greedy":
        return banked_greedy.banked_greedy_reference
    fn, call = registry.get(name).__wrapped__, _planner_fn(name)  # type: ignore[attr-defined]

    def run(problem):
        module = sys.modules[fn.__module__]
        saved = getattr(module, "greedy", None)
        if saved is not None:
            module.greedy = packer.greedy_reference
        try:
            return call(problem)
        finally:
            if saved is not None:
                module.greedy = saved
    return run


def _planner_fn(name: str):
    """The planner function of ``name`` (no bound, no validation), given a Deadline without a
    limit if it takes one."""
    fn = registry.get(name).__wrapped__  # type: ignore[attr-defined]
    if "deadline" in inspect.signature(fn).parameters:
        return lambda problem: fn(problem, deadline=Deadline(None))
    return fn


def speed(args: argparse.Namespace) -> None:
    print(f"Command: `python experiments/bench_scale.py {' '.join(sys.argv[1:])}`; load average at start "
          f"{_load()}\n")
    problems = [(os.path.basename(f), read_problem(f)) for f in args.files]
    names = [n for n in registry.heuristic_names() if not improving(n)]
    registry.solve(problems[0][1], names[0])  # compile / load the kernels once
    ref = "" if args.no_reference else ": compiled / reference (ratio)"
    print(f"CPU seconds of the planner function (bound and validation excluded){ref}\n")
    print("| heuristic | " + " | ".join(n for n, _ in problems) + " |")
    print("| --- |" + " --- |" * len(problems))
    totals = [0.0] * len(problems)
    for name in names:
        cells = []
        for k, (_, p) in enumerate(problems):
            fast, a = _cpu(_planner_fn(name), p)
            totals[k] += fast
            if args.no_reference:
                cells.append(f"{fast:.2f}")
                continue
            slow, b = _cpu(_reference(name), p)
            assert a.placements == b.placements, name  # type: ignore[attr-defined]
            cells.append(f"{fast:.2f} / {slow:.1f} ({slow / fast:.0f}x)")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print("| all constructive (compiled) | " + " | ".join(f"{t:.2f}" for t in totals) + " |")
    print(f"\nload average after the table: {_load()}")
    for f in args.compare or []:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "optplan.cli", "compare", f], capture_output=True, check=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        print(f"\n`optplan compare {os.path.basename(f)}` (every heuristic, hill-climb included, as a child process: "
              f"imports, kernels loaded from the cache, reading, bounds, validation and report included): "
              f"{cpu:.1f} CPU s, {wall:.1f} s wall; load average after it {_load()}")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _one(path: str, time_limit: float, read_only: bool) -> dict:
    """As ``optplan solve PATH --time-limit T -o PLAN.csv`` runs it: one Deadline for reading,
    loading the kernels from numba's cache, planning and writing the plan."""
    t0, c0 = time.perf_counter(), time.process_time()
    deadline = Deadline(time_limit)
    problem = read_problem(path)
    out: dict = {"file": os.path.basename(path), "buffers": len(problem.buffers),
                 "read_s": time.perf_counter() - t0, "read_cpu": time.process_time() - c0}
    if not read_only:
        plan = registry.solve(problem, "auto", deadline=deadline)
        if plan.found:
            with tempfile.TemporaryDirectory() as tmp:
                write_plan(problem, plan, os.path.join(tmp, "plan.csv"))
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        stats = plan.stats
        notes = [f"start {stats.get('warm_start')}"]
        notes += [f"{k} {stats[k]}" for k in ("early_search", "search_status", "cpsat_status", "lns_improved") if k in stats]
        if stats.get("heuristics_not_run"):
            notes.append(f"{len(stats['heuristics_not_run'])} heuristics not run")  # type: ignore[arg-type]
        out.update(total_s=time.perf_counter() - t0, cpu=time.process_time() - c0 + children.ru_utime + children.ru_stime,
                   ratio=None if plan.objective_value is None else plan.objective_value / plan.objective_bound,
                   status=plan.status.value, notes="; ".join(notes))
    out["rss_gib"] = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 2**20
    return out


def scale(args: argparse.Namespace) -> None:
    print(f"auto as `optplan solve FILE --time-limit {args.time_limit:g} -o plan.csv` runs it (reading, planning, "
          f"validating, writing: one limit); one process per file\n")
    print("| instance | buffers | read s (CPU) | total s | CPU s (with children) | peak / bound | status | peak RSS GiB "
          "| load | notes |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for f in args.files:
        load = os.getloadavg()[0]
        cmd = [sys.executable, __file__, "_one", f, str(args.time_limit), str(int(f in (args.read_only or [])))]
        r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        ratio = "-" if r.get("ratio") is None else f"{r['ratio']:.4f}"
        total = f"{r['total_s']:.1f}" if "total_s" in r else "not planned"
        cpu = f"{r['cpu']:.1f}" if "cpu" in r else "-"
        print(f"| {r['file']} | {r['buffers']:,} | {r['read_s']:.1f} ({r['read_cpu']:.1f}) | {total} | {cpu} | {ratio} "
              f"| {r.get('status', '-')} | {r['rss_gib']:.2f} | {load:.1f}-{os.getloadavg()[0]:.1f} | {r.get('notes', '')} |",
              flush=True)


def _cpu_with_children() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def feasible(args: argparse.Namespace) -> None:
    """Each file at the capacity in feasibility mode: search, CP-SAT and auto (which races the
    two; ``--planners``), wall seconds (CPU seconds with the member processes) in one run,
    ``--runs`` times each, and the load average during each file's runs."""
    names = args.planners.split(",")
    print(f"feasibility mode at capacity {args.capacity}, --time-limit {args.time_limit:g}, wall seconds (CPU "
          f"seconds, with member processes); load average at start {os.getloadavg()[0]:.1f}\n")
    print(f"| instance | {' | '.join(names)} | auto - search (wall) | load |")
    print("| --- | " + "--- | " * len(names) + "--- | --- |")
    for f in args.files:
        problem = read_problem(f).with_capacity(args.capacity)
        registry.solve(problem, "search", objective="feasible", time_limit=5)  # compile / load once
        cells: dict[str, list[str]] = {}
        seconds: dict[str, list[float]] = {}
        load = os.getloadavg()[0]
        for name in names * args.runs:
            t0, c0 = time.perf_counter(), _cpu_with_children()
            plan = registry.solve(problem, name, objective="feasible", time_limit=args.time_limit)
            t, c = time.perf_counter() - t0, _cpu_with_children() - c0
            seconds.setdefault(name, []).append(t if plan.found else float("inf"))
            cells.setdefault(name, []).append(f"{t:.2f} ({c:.2f})" + ("" if plan.found else f" {plan.status.value}"))
        diff = [a - s for a, s in zip(seconds.get("auto", []), seconds.get("search", []))]
        print(f"| {os.path.basename(f)} | " + " | ".join(", ".join(cells[n]) for n in names)
              + " | " + ", ".join(f"{d:+.2f}" for d in diff) + f" | {load:.1f}-{os.getloadavg()[0]:.1f} |", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        print(json.dumps(_one(sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1")))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("speed")
    s.add_argument("files", nargs="+")
    s.add_argument("--no-reference", action="store_true")
    s.add_argument("--compare", nargs="*", help="files to time `optplan compare` on (CPU of the child process)")
    s = sub.add_parser("scale")
    s.add_argument("files", nargs="+")
    s.add_argument("--time-limit", type=float, default=60.0)
    s.add_argument("--read-only", nargs="*", help="files only read (not planned)")
    s = sub.add_parser("feasible")
    s.add_argument("files", nargs="+")
    s.add_argument("--capacity", type=int, required=True)
    s.add_argument("--time-limit", type=float, default=60.0)
    s.add_argument("--planners", default="search,cpsat,auto", help="comma-separated (default: search,cpsat,auto)")
    s.add_argument("--runs", type=int, default=2, help="runs of each planner per file (default 2)")
    args = ap.parse_args()
    {"speed": speed, "scale": scale, "feasible": feasible}[args.mode](args)


if __name__ == "__main__":
    main()
