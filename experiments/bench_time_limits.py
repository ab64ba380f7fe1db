"""Do time limits hold? Every planner, ``auto`` and ``compare`` through the CLI, as a user runs them.

    python experiments/bench_time_limits.py [--limits 5 20] [--jobs 2] [--tree PATH] [--planners a,b] [--repeat N]

Each run is ``optplan solve FILE --planner P --time-limit T -o plan.json`` (``compare FILE
--time-limit T`` for compare) in a fresh process (working directory: the tree), on minimalloc A,
C, E (capacity 1 MiB) and idealloc S_1. Its wall time counts everything from the process start:
interpreter and imports and the planner registry's modules (ortools, pulp, numba), reported apart
as ``import`` (a tree that still has ``planners.prepare_planner`` compiles or loads its kernels
there, outside its limit); then ``main()``: reading, numba (loading its on-disk cache, or
compiling), model building, solving, validating and writing. The overrun is ``main - T``; the
target is at most max(10 % of T, 1 s); ``peak / bound``: the plan's peaks over its lower bounds
(summed over memories; nan without a plan). ``main cpu`` is the process's CPU seconds in ``main()``
(all threads; not its children, CBC or HiGHS): on a loaded machine it says how much of the wall
time was work. ``--jobs`` runs that many at once (each with its planner's default workers, so they
share the cores): the output says how many ran at once and the machine's load. ``--tree`` runs
another checkout (e.g. main before a change) for a before/after table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "benchmarks"
INSTANCES = {"A": "minimalloc/A.1048576.csv", "C": "minimalloc/C.1048576.csv", "E": "minimalloc/E.1048576.csv",
             "S_1": "idealloc/S_1.csv"}


def planners(tree: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "optplan.cli", "planners"], env=_env(tree), capture_output=True, cwd=tree,
                         text=True, check=True)
    return out.stdout.split() + ["compare"]


def _env(tree: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(tree))


# times the import and ``main()`` of the CLI inside the child (load makes a separate measurement useless)
WRAP = ("import json, sys, time; t0 = time.perf_counter(); import optplan.cli as c, optplan.registry as p; "
        "p.names(); getattr(p, 'prepare_planner', lambda n: None)(sys.argv[4] if sys.argv[1] == 'solve' else 'naive'); "
        "t1 = time.perf_counter(); c1 = time.process_time(); "
        "rc = c.main(sys.argv[1:]); t2 = time.perf_counter(); "
        "sys.stderr.write('\\n@@' + json.dumps([t1 - t0, t2 - t1, time.process_time() - c1]) + '\\n'); sys.exit(rc)")


def run_one(tree: Path, planner: str, instance: str, limit: float, deterministic: bool = False) -> dict:
    src = SHARED / INSTANCES[instance]
    with tempfile.TemporaryDirectory() as tmp:
        if planner == "compare":
            cmd = ["compare", str(src), "--time-limit", str(limit)]
        else:
            cmd = ["solve", str(src), "--planner", planner, "--time-limit", str(limit), "--json", "-o",
                   str(Path(tmp) / "plan.json")] + (["--deterministic", "--seed", "1"] if deterministic else [])
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", WRAP, *cmd], env=_env(tree), capture_output=True, cwd=tree,
                              text=True, timeout=30 * limit + 300)
        wall = time.perf_counter() - t0
    lines = proc.stderr.strip().splitlines()
    imp, main, cpu = json.loads(lines.pop()[2:]) if lines and lines[-1].startswith("@@") else (float("nan"), wall, float("nan"))
    status, message, ratio = "", lines[-1:] or [""], float("nan")
    if planner != "compare" and proc.returncode in (0, 1):
        try:
            plan = json.loads(proc.stdout)
            status, message = plan["status"], [plan.get("message", "")]
            if plan["placements"]:
                ratio = sum(plan["peak"].values()) / max(1, sum(plan["lower_bound"].values()))
        except (ValueError, KeyError):
            pass
    return {"planner": planner, "instance": instance, "limit": limit, "wall": main, "cpu": cpu, "import": imp, "code": proc.returncode,
            "status": status or f"exit {proc.returncode}", "message": message[0][:70], "ratio": ratio}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limits", type=float, nargs="+", default=[5.0, 20.0])
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the optplan checkout to run (default: this one)")
    ap.add_argument("--planners", help="comma-separated (default: every registered planner and compare)")
    ap.add_argument("--instances", default=",".join(INSTANCES))
    ap.add_argument("--repeat", type=int, default=1, help="run each planner, instance and limit this many times")
    ap.add_argument("--deterministic", action="store_true",
                    help="solve with --deterministic --seed 1 (time in deterministic seconds; compare is left out)")
    args = ap.parse_args()
    names = args.planners.split(",") if args.planners else planners(args.tree)
    if args.deterministic:
        names = [n for n in names if n != "compare"]
    jobs = [(p, i, t) for t in args.limits for i in args.instances.split(",") for p in names for _ in range(args.repeat)]
    git = subprocess.run(["git", "-C", str(args.tree), "log", "-1", "--format=%h %s"], capture_output=True,
                         text=True).stdout.strip()[:90]
    print(f"command: python experiments/bench_time_limits.py {' '.join(sys.argv[1:])}")
    print(f"tree: {args.tree} ({git}); {os.cpu_count()} cores, {args.jobs} runs at once; "
          f"load average before: {os.getloadavg()[0]:.1f}")
    print("| planner | instance | limit s | import s | main s | main cpu s | overrun s | within max(10 %, 1 s) | status | "
          "peak / bound | message |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    worst: dict[str, float] = {}
    with ThreadPoolExecutor(args.jobs) as pool:
        for r in pool.map(lambda j: run_one(args.tree, *j, deterministic=args.deterministic), jobs):  # printed as they come, in order
            rows.append(r)
            over = r["wall"] - r["limit"]
            ok = over <= max(0.1 * r["limit"], 1.0)
            worst[r["planner"]] = max(worst.get(r["planner"], -1e9), over)
            print(f"| {r['planner']} | {r['instance']} | {r['limit']:g} | {r['import']:.1f} | {r['wall']:.1f} | {r['cpu']:.1f} | {over:+.1f} | "
                  f"{'yes' if ok else 'NO'} | {r['status']} | {r['ratio']:.4f} | {r['message'].replace('|', '/')} |", flush=True)
    print("", f"load average after: {os.getloadavg()[0]:.1f}", "", "| planner | worst overrun s |", "| --- | --- |",
          sep="\n")
    for p, w in worst.items():
        print(f"| {p} | {w:+.1f} |")
    late = [r for r in rows if r["wall"] - r["limit"] > max(0.1 * r["limit"], 1.0)]
    print(f"\n{len(late)} of {len(rows)} runs over max(10 %, 1 s)")


if __name__ == "__main__":
    main()
