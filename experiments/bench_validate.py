"""``optplan validate`` on a large plan, timed from outside the process, side by side with other
checkouts (issue 30: 53 s on 10^6 buffers).

    python experiments/bench_validate.py [--n 1000000] [--runs 2] [--trees . /work/wt/before] [--dir /tmp/optplan-bench-validate]

Makes (once, in ``--dir``) an ``n``-buffer problem shaped like idealloc/S_1
(``experiments/shaped_like.py``) and its greedy-size plan as CSV and JSON, then runs
``python -m optplan.cli validate PROBLEM PLAN`` with each tree on ``PYTHONPATH``, interleaved,
``--runs`` times, and prints wall and CPU seconds, peak RSS and the load average before each run
(the machine is shared: CPU seconds are the figure that load does not inflate much).
Checkouts before the house step (6052a59) read the same files.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def make_files(n: int, where: Path) -> Path:
    """The problem and its plans (kept: making them takes a minute)."""
    where.mkdir(parents=True, exist_ok=True)
    problem = where / f"p{n}.csv"
    if not problem.exists():
        sys.path.insert(0, str(HERE))
        from shaped_like import shaped_like, write_csv

        write_csv(shaped_like(n), problem)
    for ext in ("csv", "json"):
        if not (where / f"plan{n}.{ext}").exists():
            subprocess.run([sys.executable, "-m", "optplan.cli", "solve", str(problem), "--planner", "greedy-size",
                            "-o", str(where / f"plan{n}.{ext}")], check=True, stdout=subprocess.DEVNULL,
                           env={**os.environ, "PYTHONPATH": str(HERE.parent)}, cwd=where)
    return problem


def run(tree: Path, problem: Path, plan: Path) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of the child, its exit code."""
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "optplan.cli", "validate", str(problem), str(plan)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=problem.parent,  # (-m puts the cwd first)
                             env={**os.environ, "PYTHONPATH": str(tree)})
    _, status, usage = os.wait4(child.pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - t0, cpu, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--trees", type=Path, nargs="+", default=[HERE.parent, Path("/work/wt/before")])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/optplan-bench-validate"))
    args = ap.parse_args()
    problem = make_files(args.n, args.dir)
    print(f"optplan validate, {args.n:,} buffers shaped like S_1, greedy-size plan; {os.cpu_count()} cores\n")
    print("| tree | plan | wall s | CPU s | peak RSS MiB | exit | load (1 min) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for _ in range(args.runs):
        for ext in ("csv", "json"):
            for tree in args.trees:
                load = os.getloadavg()[0]
                wall, cpu, rss, code = run(tree, problem, args.dir / f"plan{args.n}.{ext}")
                print(f"| {tree} | .{ext} | {wall:.1f} | {cpu:.1f} | {rss:.0f} | {code} | {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
