"""CP-SAT vs MILP (CBC) vs MILP (HiGHS), side by side in one run, on models/ and MiniMalloc's suite.

Per instance and planner: status, time to the proven optimum or the gap at the time limit,
peak / lower bound, and where the MIP stopped (solver status, branch-and-bound nodes, binaries
of the largest model, the MIP's own bound). ``cpsat`` runs as registered (no heuristic warm
start); the MILP planners start from the best heuristic plan, as registered, and ``:cold`` runs
them without it (``warm_start=False``: the MIP alone, comparable to CP-SAT alone).
Usage: python experiments/bench_milp.py [--time-limit 60] [--workers 2] [--instances A resnet50 ...]
The output is Markdown; it starts with the command that produced it.
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
import time

from instances import find

from optplan.formats import read_problem
from optplan.registry import solve

PLANNERS = ("cpsat", "milp-cbc", "milp-highs", "milp-cbc:cold", "milp-highs:cold")


def mip_stop(plan) -> str:  # type: ignore[no-untyped-def]
    """Where the MIP(s) stopped: statuses, nodes, binaries of the largest model, solver bound."""
    runs = plan.stats.get("mip_runs")
    if runs is None:
        return plan.message or "-"
    if not runs:
        return "no MIP needed (heuristic plan meets the lower bound)" if plan.found else plan.message
    statuses = sorted({str(r.get("mip_status")) for r in runs})
    nodes = sum(int(r.get("nodes", 0)) for r in runs)
    binaries = max(int(r.get("order_binaries", 0)) for r in runs)
    text = f"{len(runs)} MIP(s): {', '.join(statuses)}; {nodes} nodes; {binaries} order binaries"
    bounds = [r["mip_bound"] for r in runs if "mip_bound" in r]
    if len(runs) == 1 and bounds:
        text += f"; MIP bound {bounds[0]:,.0f}"
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--planners", nargs="+", default=list(PLANNERS))
    ap.add_argument("--instances", nargs="+", default=None, help="stems such as A resnet50")
    args = ap.parse_args()
    print("$ python experiments/bench_milp.py " + shlex.join(sys.argv[1:]))
    print()
    print(f"time limit {args.time_limit:g} s per instance and planner, {args.workers} workers, seed {args.seed}, "
          f"min-peak objective (no capacity); {platform.node()}, {platform.processor() or platform.machine()}. "
          "'optimal in t s' is the time to the proven optimum; otherwise the gap to the best proven bound "
          "when the time limit stopped the search.\n")
    print("| instance | buffers | planner | status | optimal in / gap at limit | peak / lower bound | seconds | where the solver stopped |")
    print("| --- | ---: | --- | --- | --- | ---: | ---: | --- |")
    for path in find(["models", "minimalloc"], args.instances):
        problem = read_problem(path)
        name = f"{path.parent.name}/{path.stem}"
        for planner in args.planners:
            t0 = time.perf_counter()
            name_, _, mode = planner.partition(":")
            plan = solve(problem, name_, time_limit=args.time_limit, workers=args.workers, seed=args.seed,
                         **({"warm_start": False} if mode == "cold" else {}))
            wall = time.perf_counter() - t0
            peak, lower = sum(plan.peak.values()), sum(plan.lower_bound.values())
            ratio = f"{peak / lower:.4f}" if plan.found and lower else "-"
            if plan.status.value == "OPTIMAL":
                result = f"optimal in {wall:.1f} s"
            elif plan.found:
                gap = plan.gap
                result = "no bound" if gap is None else f"gap {100 * gap:.2f}% at {wall:.0f} s" if gap >= 1e-4 else f"gap {100 * gap:.1e}% at {wall:.0f} s"
            else:
                result = plan.status.value.lower()
            print(f"| {name} | {len(problem.buffers)} | {planner} | {plan.status.value} | {result} | {ratio} | "
                  f"{wall:.1f} | {mip_stop(plan)} |", flush=True)


if __name__ == "__main__":
    main()
