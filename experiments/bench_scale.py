"""Heuristics speed (compiled vs pure-Python reference) and the scale benchmark of issue 15.

    python experiments/bench_scale.py speed FILE...            # per constructive heuristic
    python experiments/bench_scale.py scale FILE... [--time-limit 60] [--read-only N]
    python experiments/bench_scale.py feasible FILE --capacity C  # auto vs search, feasibility mode

``speed``: CPU seconds of each heuristic's planner function (lower bound and validation
excluded), with the compiled packer and with the reference ``Packer`` it is tested against.
``scale``: read time, ``auto``'s time and peak / lower bound, the process' peak RSS; one child
process per file, so RSS is per instance. Synthetic instances: ``experiments/shaped_like.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from optplan import planners
from optplan.formats import read_problem
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
    fn = planners.get(name).__wrapped__  # type: ignore[attr-defined]

    def run(problem):
        module = sys.modules[fn.__module__]
        saved = getattr(module, "greedy", None)
        if saved is not None:
            module.greedy = packer.greedy_reference
        try:
            return fn(problem)
        finally:
            if saved is not None:
                module.greedy = saved
    return run


def speed(args: argparse.Namespace) -> None:
    problems = [(os.path.basename(f), read_problem(f)) for f in args.files]
    names = [n for n in planners.heuristic_names() if not improving(n)]
    planners.solve(problems[0][1], names[0])  # compile / load the kernels once
    print("CPU seconds of the planner function (bound and validation excluded): compiled / reference (ratio)\n")
    print("| heuristic | " + " | ".join(n for n, _ in problems) + " |")
    print("| --- |" + " --- |" * len(problems))
    totals = [0.0] * len(problems)
    for name in names:
        cells = []
        for k, (_, p) in enumerate(problems):
            fast, a = _cpu(planners.get(name).__wrapped__, p)  # type: ignore[attr-defined]
            ref, b = _cpu(_reference(name), p) if not args.no_reference else (float("nan"), a)
            assert a.placements == b.placements, name  # type: ignore[attr-defined]
            totals[k] += fast
            cells.append(f"{fast:.2f} / {ref:.1f} ({ref / fast:.0f}x)")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print("| all constructive (compiled) | " + " | ".join(f"{t:.2f}" for t in totals) + " |")


def _one(path: str, time_limit: float, read_only: bool) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    problem = read_problem(path)
    out = {"file": os.path.basename(path), "buffers": len(problem.buffers),
           "read_s": time.perf_counter() - t0, "read_cpu": time.process_time() - c0}
    if not read_only:
        t1, c1 = time.perf_counter(), time.process_time()
        plan = planners.solve(problem, "auto", time_limit=max(time_limit - out["read_s"], 1.0))
        out.update(plan_s=time.perf_counter() - t1, plan_cpu=time.process_time() - c1,
                   ratio=None if plan.objective_value is None else plan.objective_value / plan.objective_bound,
                   status=plan.status.value)
    out["rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return out


def scale(args: argparse.Namespace) -> None:
    print(f"auto with --time-limit {args.time_limit} minus the read time; one process per file; "
          f"load average at start {os.getloadavg()[0]:.1f}\n")
    print("| instance | buffers | read s (CPU) | plan s (CPU) | total s | peak / bound | status | peak RSS GiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for f in args.files:
        cmd = [sys.executable, __file__, "_one", f, str(args.time_limit), str(int(f in (args.read_only or [])))]
        r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        plan = "not run" if "plan_s" not in r else f"{r['plan_s']:.1f} ({r['plan_cpu']:.1f})"
        total = r["read_s"] + r.get("plan_s", 0.0)
        ratio = "-" if r.get("ratio") is None else f"{r['ratio']:.4f}"
        print(f"| {r['file']} | {r['buffers']:,} | {r['read_s']:.1f} ({r['read_cpu']:.1f}) | {plan} | {total:.1f} "
              f"| {ratio} | {r.get('status', '-')} | {r['rss_gib']:.2f} |", flush=True)


def feasible(args: argparse.Namespace) -> None:
    problem = read_problem(args.file).with_capacity(args.capacity)
    planners.solve(problem, "search", objective="feasible", time_limit=5)  # compile / load once
    print(f"{os.path.basename(args.file)} at capacity {args.capacity}, feasibility mode, wall seconds\n")
    print("| planner | seconds | status |")
    print("| --- | --- | --- |")
    for name in ("search", "auto", "search", "auto"):
        t0 = time.perf_counter()
        plan = planners.solve(problem, name, objective="feasible", time_limit=args.time_limit)
        print(f"| {name} | {time.perf_counter() - t0:.2f} | {plan.status.value} |", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_one":
        print(json.dumps(_one(sys.argv[2], float(sys.argv[3]), sys.argv[4] == "1")))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("speed")
    s.add_argument("files", nargs="+")
    s.add_argument("--no-reference", action="store_true")
    s = sub.add_parser("scale")
    s.add_argument("files", nargs="+")
    s.add_argument("--time-limit", type=float, default=60.0)
    s.add_argument("--read-only", nargs="*", help="files only read (not planned)")
    s = sub.add_parser("feasible")
    s.add_argument("file")
    s.add_argument("--capacity", type=int, required=True)
    s.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    {"speed": speed, "scale": scale, "feasible": feasible}[args.mode](args)


if __name__ == "__main__":
    main()
