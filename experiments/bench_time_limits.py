"""Do time limits hold for the whole process? Every planner through the CLI, timed from outside.

    python experiments/bench_time_limits.py [--limits 3 10] [--jobs 1] [--tree PATH] [--planners a,b]
                                            [--instances A,B,...] [--repeat N] [--deterministic]

Each run is ``python -m optplan.cli solve FILE --planner P --time-limit T -o plan.json`` in a
fresh process (working directory: the tree), timed by this script from the ``fork`` to the
``wait`` (issue 30 item 5): the interpreter's start, the imports, reading, planning, validating,
writing the plan, the report and the interpreter's exit all count. The target: at most
max(1.1 T, T + 1 s). ``cpu s`` is the process's CPU seconds with its children's (CBC, HiGHS,
the portfolio's members), from ``wait4``: on a loaded machine it says how much of the wall time
was work. ``peak / bound``: the plan's peaks over its lower bounds (summed over memories; "-"
without a plan), read from the plan file.

Instances: minimalloc A-E (capacity 1 MiB), idealloc S_1, ``somas20k`` (a generated 20,000-buffer
training step, ``shaped_like.somas_like``: 17 distinct sizes, a tenth of the buffers alive the
whole span: many equal sizes and long-lived buffers, as the 18.7k-buffer trace of issue 30) and
``s1_1m`` (10^6 buffers shaped like S_1, ``shaped_like.shaped_like``); the two generated ones are
written to a temporary directory at the start (seed 0). ``--jobs`` runs that many at once; the
header gives the load average before and after. ``--tree`` runs another checkout (e.g. the code
before a change) for a before/after table.
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
sys.path.insert(0, str(ROOT / "experiments"))
from shaped_like import shaped_like, somas_like, write_csv  # noqa: E402

FILES = {**{k: f"minimalloc/{k}.1048576.csv" for k in "ABCDE"}, "S_1": "idealloc/S_1.csv"}
GENERATED = {"somas20k": lambda: somas_like(20_000, 0), "s1_1m": lambda: shaped_like(1_000_000, seed=0)}
PLANNERS = ["auto", "search", "cpsat", "milp-cbc", "milp-highs", "hill-climb", "best-fit-heap", "naive"]


def instances(names: list[str], tmp: Path) -> dict[str, Path]:
    """The instance files by name (the generated ones written into ``tmp``)."""
    out = {}
    for n in names:
        if n in GENERATED:
            out[n] = tmp / f"{n}.csv"
            write_csv(GENERATED[n](), out[n])
        else:
            out[n] = SHARED / FILES[n]
    return out


def run_one(tree: Path, planner: str, name: str, path: Path, limit: float, deterministic: bool) -> dict:
    """One ``optplan solve`` process, timed from outside."""
    with tempfile.TemporaryDirectory(prefix="bench-tl-") as tmp:
        plan_path = Path(tmp) / "plan.json"
        cmd = [sys.executable, "-m", "optplan.cli", "solve", str(path), "--planner", planner, "--time-limit", str(limit),
               "-o", str(plan_path)] + (["--deterministic", "--seed", "1"] if deterministic else [])
        with open(Path(tmp) / "err", "w+") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, env=dict(os.environ, PYTHONPATH=str(tree)), cwd=tree,
                                    stdout=err, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            err.seek(0)
            last = (err.read().strip().splitlines() or [""])[-1]
        plan_status, ratio = f"exit {proc.returncode}", None
        if plan_path.exists():
            doc = json.loads(plan_path.read_text())
            plan_status = doc["status"]
            ratio = sum(doc["peak"].values()) / max(1, sum(doc["lower_bound"].values()))
    return {"planner": planner, "instance": name, "limit": limit, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "code": proc.returncode, "status": plan_status, "ratio": ratio, "note": last[:80]}


def allowed(limit: float) -> float:
    """The promise: the process ends within max(1.1 T, T + 1 s)."""
    return max(1.1 * limit, limit + 1.0)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limits", type=float, nargs="+", default=[3.0, 10.0])
    ap.add_argument("--jobs", type=int, default=1, help="runs at once (default 1)")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the optplan checkout to run (default: this one)")
    ap.add_argument("--planners", default=",".join(PLANNERS), help="comma-separated")
    ap.add_argument("--instances", default=",".join([*FILES, *GENERATED]))
    ap.add_argument("--repeat", type=int, default=1, help="run each planner, instance and limit this many times")
    ap.add_argument("--deterministic", action="store_true", help="solve with --deterministic --seed 1")
    args = ap.parse_args()
    names = args.planners.split(",")
    git = subprocess.run(["git", "-C", str(args.tree), "log", "-1", "--format=%h %s"], capture_output=True,
                         text=True).stdout.strip()[:90]
    print(f"command: python experiments/bench_time_limits.py {' '.join(sys.argv[1:])}")
    print(f"tree: {args.tree} ({git}); {os.cpu_count()} cores, {args.jobs} run(s) at once; "
          f"load average (1, 5, 15 min) before: {_load()}; started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| planner | instance | limit s | wall s | cpu s | over s | within max(1.1 T, T + 1 s) | exit | status | "
          "peak / bound | last line of output |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    late, rows = 0, 0
    with tempfile.TemporaryDirectory(prefix="bench-tl-inst-") as tmp:
        files = instances(args.instances.split(","), Path(tmp))
        jobs = [(p, i, t) for t in args.limits for i in files for p in names for _ in range(args.repeat)]
        with ThreadPoolExecutor(args.jobs) as pool:
            for r in pool.map(lambda j: run_one(args.tree, j[0], j[1], files[j[1]], j[2], args.deterministic), jobs):
                ok = r["wall"] <= allowed(r["limit"])
                late, rows = late + (not ok), rows + 1
                ratio = "-" if r["ratio"] is None else f"{r['ratio']:.4f}"
                print(f"| {r['planner']} | {r['instance']} | {r['limit']:g} | {r['wall']:.2f} | {r['cpu']:.1f} | "
                      f"{r['wall'] - r['limit']:+.2f} | {'yes' if ok else 'NO'} | {r['code']} | {r['status']} | {ratio} | "
                      f"{r['note'].replace('|', '/')} |", flush=True)
    print(f"\nload average after: {_load()}; finished {time.strftime('%H:%M UTC', time.gmtime())}")
    print(f"{late} of {rows} runs over max(1.1 T, T + 1 s)")


if __name__ == "__main__":
    main()
