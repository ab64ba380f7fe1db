"""Exact planning benchmark: greedy vs. CP-SAT alone vs. the portfolio, side by side in one run.

For every instance of ../shared/benchmarks prints one table row per planner: status, peak / lower
bound, seconds (and the best heuristic for reference, from the portfolio's warm-start stats).
Usage: python experiments/bench_exact.py [--time-limit 60] [--workers 2] [--instances A G_1 ...]
The output is Markdown; it starts with the command that produced it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from instances import find

from optplan.formats import read_problem
from optplan.registry import solve

PLANNERS = ("greedy-size", "cpsat", "auto")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--planners", nargs="+", default=list(PLANNERS))
    ap.add_argument("--instances", nargs="+", default=None, help="stems such as A resnet50 G_1")
    args = ap.parse_args()
    print("$ python experiments/bench_exact.py " + shlex.join(sys.argv[1:]))
    print()
    print(f"time limit {args.time_limit:g} s, {args.workers} CP-SAT workers, seed {args.seed}; "
          "peak / lower bound (1.0000 = proven optimal by the bound)\n")
    print("| instance | buffers | planner | status | peak / lower bound | peak | lower bound | seconds | best heuristic / lower bound |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for path in find(["minimalloc", "idealloc"], args.instances):
        problem = read_problem(path)
        name = f"{path.parent.name}/{path.stem}"
        for planner in args.planners:
            t0 = time.perf_counter()
            plan = solve(problem, planner, time_limit=args.time_limit, workers=args.workers, seed=args.seed)
            wall = time.perf_counter() - t0
            peak, lower = sum(plan.peak.values()), sum(plan.lower_bound.values())
            ratio = f"{peak / lower:.4f}" if plan.found and lower else "-"
            heur = plan.stats.get("heuristics")
            best_h = "-"
            if isinstance(heur, dict) and heur and lower:
                best_h = f"{min(v for v in heur.values() if v is not None) / lower:.4f} ({min(heur, key=lambda k: heur[k] if heur[k] is not None else float('inf'))})"
            print(f"| {name} | {len(problem.buffers)} | {planner} | {plan.status.value} | {ratio} | "
                  f"{peak if plan.found else '-'} | {lower} | {wall:.1f} | {best_h} |", flush=True)


if __name__ == "__main__":
    main()
