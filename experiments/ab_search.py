"""Two checkouts of optplan side by side on generated cuts, instance by instance: ``search``'s wall time
(workers 2, best of ``--repeat``) in each, beside MiniMalloc's binary where ``MINIMALLOC_BIN`` is set.

    python experiments/ab_search.py BEFORE_ROOT AFTER_ROOT [--seeds 70:140] [--time-limit 1] [--repeat 3] [-o FILE]

Each root runs in a process of its own (its own code and numba cache) fed one instance at a time, the two
in turn, so both see the same load. Prints per-instance times and, per checkout: solved, and the time
ratio to MiniMalloc's on the instances both packed (median, p90, max, how many over 2x).
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

from bench_robust import load, minimalloc_runner, quantile, run_minimalloc
from gen_instances import instance

from optplan.formats import write_text

WORKER = """
import math, sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, "experiments")
from gen_instances import instance
from optplan.registry import solve
from optplan.search import engine
engine.ensure_compiled()
print("ready", flush=True)
for line in sys.stdin:
    family, seed, limit, repeat = line.split()
    p = instance(family, int(seed))
    best = math.inf
    for _ in range(int(repeat)):
        plan = solve(p, "search", time_limit=float(limit), workers=2, objective="feasible")
        if not (plan.found and plan.peak["mem"] <= 1048576):
            break
        best = min(best, plan.seconds)
    print(best, flush=True)
"""


def worker(root: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", WORKER], cwd=root, env={**os.environ, "PYTHONPATH": root},
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready", root
    return p


def ask(p: subprocess.Popen, family: str, seed: int, limit: float, repeat: int) -> float:
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(f"{family} {seed} {limit} {repeat}\n")
    p.stdin.flush()
    return float(p.stdout.readline())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--families", nargs="+", default=["guillotine", "pinwheel"])
    ap.add_argument("--seeds", default="70:140")
    ap.add_argument("--time-limit", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("-o", "--output")
    args = ap.parse_args(argv)
    first, end = (int(x) for x in args.seeds.split(":"))
    lines = ["```", "python " + " ".join(shlex.quote(a) for a in sys.argv), "```", "", f"load average before: {load()}", ""]
    runs = {"before": worker(str(Path(args.before).resolve())), "after": worker(str(Path(args.after).resolve()))}
    mm = minimalloc_runner()
    lines += ["| instance | before s | after s | MiniMalloc s |", "| --- | --- | --- | --- |"]
    rows = []
    for family in args.families:
        for seed in range(first, end):
            row = {k: ask(p, family, seed, args.time_limit, args.repeat) for k, p in runs.items()}
            times = [run_minimalloc(mm, instance(family, seed), args.time_limit) for _ in range(args.repeat)] if mm else []
            row["mm"] = min((t for t in times if t is not None), default=math.inf)
            rows.append(row)
            lines.append(f"| {family}-{seed} | {row['before']:.3f} | {row['after']:.3f} | {row['mm']:.3f} |")
            print(lines[-1], flush=True)
    lines.append("")
    for k in runs:
        ratios = sorted(r[k] / r["mm"] for r in rows if r[k] < math.inf and r["mm"] < math.inf)
        solved = sum(r[k] < math.inf for r in rows)
        text = f"{k}: packed {solved}/{len(rows)}"
        if ratios:
            text += (f"; / MiniMalloc on {len(ratios)} both packed: median {quantile(ratios, 0.5):.2f}, p90 {quantile(ratios, 0.9):.2f},"
                     f" max {ratios[-1]:.2f}, over 2x: {sum(x > 2 for x in ratios)}")
        lines.append(text)
    lines.append(f"MiniMalloc packed {sum(r['mm'] < math.inf for r in rows)}/{len(rows)}; load average after: {load()}")
    print("\n".join(lines[-3:]))
    if args.output:
        write_text(args.output, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
