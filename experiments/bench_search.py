"""The compiled canonical search on the hardest real instances, beside greedy-size, in one run.

    python experiments/bench_search.py [--time-limit 60] [--workers 2] [-o experiments/results/search.md]
    MINIMALLOC_BIN=... python experiments/bench_search.py --e2e [--repeat 2] [-o experiments/results/search_e2e.md]

Rows: minimalloc A-E at capacity 1048576 (objective "feasible": a plan that fits), C and D again
with "min-peak" (prove the optimal peak under that capacity), E with "min-peak" and no capacity
(the lowest peak, proven), and the idealloc instances
(resnet50 and G_1 at capacity = their peak live load, S_1 with "min-peak" and no capacity).
With ``MINIMALLOC_BIN`` (MiniMalloc's command line solver) the A-E rows at capacity also run
MiniMalloc, right before the search in the same conditions, and report the ratio; its reference
figures from ../shared/README.md are quoted beside. The numba compile/load time is measured once before the
first row and reported separately, not counted in the seconds column. The machine's load
average is printed before and after: other processes share the cores.

``--e2e`` measures what the user sees instead: A-E at capacity 1048576, ``optplan solve
--objective feasible`` (``--planner``, default auto) and MiniMalloc's binary each as a whole
process, start to exit, instance by instance, their order alternating over ``--repeat`` rounds;
both the end-to-end and the engine-only seconds (``e2e.py``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import e2e
from bench_robust import minimalloc_runner, run_minimalloc

from optplan.core.bounds import lower_bounds
from optplan.formats import read_problem, write_text
from optplan.registry import solve
from optplan.search import engine

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
MINIMALLOC_SECONDS = {"A": 6.0, "B": 3.5, "C": 0.7, "D": 2.7, "E": 3.5, "resnet50": 0.4, "G_1": 1.4}

# (label, file, capacity: int | "bound" | None, objective)
CASES = [(name, f"minimalloc/{name}.1048576.csv", 1048576, "feasible") for name in "ABCDE"] + [
    ("C", "minimalloc/C.1048576.csv", 1048576, "min-peak"),
    ("D", "minimalloc/D.1048576.csv", 1048576, "min-peak"),
    ("E", "minimalloc/E.1048576.csv", None, "min-peak"),  # two time parts: the smaller needs only the memory's bound
    ("resnet50", "idealloc/resnet50.csv", "bound", "feasible"),
    ("G_1", "idealloc/G_1.csv", "bound", "feasible"),
    ("S_1", "idealloc/S_1.csv", None, "min-peak"),
]


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", nargs="*", help="labels to run (default: all)")
    ap.add_argument("-o", "--output")
    ap.add_argument("--e2e", action="store_true", help="A-E at capacity, optplan and MiniMalloc as processes")
    ap.add_argument("--repeat", type=int, default=1, help="--e2e: rounds, the tools' order alternating")
    ap.add_argument("--planner", default="auto", help="--e2e: optplan's planner")
    args = ap.parse_args(argv)
    if args.e2e:
        return end_to_end(args)

    lines = ["```", "python " + " ".join(shlex.quote(a) for a in sys.argv), "```", ""]
    t0 = time.perf_counter()
    compile_s = engine.ensure_compiled()
    lines.append(f"numba kernels loaded/compiled in {compile_s:.2f} s (not counted below); "
                 f"{os.cpu_count()} cores; load average before: {load()}")
    runner = minimalloc_runner()
    lines += ["", "| instance | objective | capacity | planner | status | peak / lower bound | seconds | nodes | nodes/s | "
              "MiniMalloc s (ref.) |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    print("\n".join(lines), flush=True)
    feasible_times, ratios = [], []
    for label, path, capacity, objective in CASES:
        if args.only and label not in args.only:
            continue
        problem = read_problem(SHARED / path)
        if capacity == "bound":
            capacity = lower_bounds(problem).lower[problem.memories[0].name]
        if capacity is not None:
            problem = problem.with_capacity(capacity)
        mem = problem.memories[0].name
        uncapped = problem.with_capacity(None) if capacity is not None else problem
        mm = None
        if runner is not None and objective == "feasible" and label in "ABCDE":
            mm = run_minimalloc(runner, problem, args.time_limit)
        # greedy-size is left out on S_1: its numpy packer is quadratic in the number of buffers
        for planner in ("search",) if label == "S_1" else ("greedy-size", "search"):
            options = {"time_limit": args.time_limit, "workers": args.workers, "objective": objective}
            # the heuristic runs without the capacity so that its peak shows how far above it is
            plan = solve(problem if planner == "search" else uncapped, planner, **options)
            peak = plan.peak[mem] if plan.found else None
            ratio = "-" if peak is None else f"{peak / plan.lower_bound[mem]:.4f}"
            if plan.found and capacity is not None and peak > capacity:
                status = f"{plan.status.value} (over capacity)"
            else:
                status = plan.status.value
            if planner == "search" and objective == "feasible" and label in "ABCDE":
                feasible_times.append(plan.seconds if plan.found else float("inf"))
                if mm is not None and plan.found:
                    ratios.append(plan.seconds / mm)
            nodes = plan.stats.get("nodes", "-")
            rate = plan.stats.get("nodes_per_second", "-")
            ref = MINIMALLOC_SECONDS.get(label, "-") if objective == "feasible" else "-"
            if planner == "search" and runner is not None and objective == "feasible" and label in "ABCDE":
                ref = f"{'not packed' if mm is None else f'{mm:.2f}'} ({ref})"
            row = (f"| {label} | {objective} | {capacity if capacity is not None else '-'} | {planner} | {status} | "
                   f"{peak if peak is not None else '-'} / {plan.lower_bound[mem]} ({ratio}) | {plan.seconds:.2f} | "
                   f"{nodes} | {rate} | {ref} |")
            lines.append(row)
            print(row, flush=True)
            if planner == "search" and plan.message:
                print(f"    message: {plan.message}", flush=True)
    lines.append("")
    if feasible_times:
        ref = statistics.median(MINIMALLOC_SECONDS[k] for k in "ABCDE")
        solved = sum(t != float("inf") for t in feasible_times)
        median = statistics.median(feasible_times)
        lines.append(f"minimalloc A-E at capacity 1048576: search solved {solved}/{len(feasible_times)} within "
                     f"{args.time_limit:.0f} s; median time {median:.2f} s counting an unsolved instance as "
                     f"infinitely slow (MiniMalloc reference median {ref:.1f} s)")
    if ratios:
        lines.append(f"search / MiniMalloc time on the {len(ratios)} A-E rows both packed, same run: "
                     + ", ".join(f"{r:.2f}" for r in ratios) + f" (median {statistics.median(ratios):.2f})")
    lines.append(f"load average after: {load()}; wall time {time.perf_counter() - t0:.0f} s")
    print("\n".join(lines[-2:]), flush=True)
    if args.output:
        write_text(args.output, "\n".join(lines) + "\n")
    return 0


def end_to_end(args: argparse.Namespace) -> int:
    """A-E at capacity 1048576 as processes, optplan beside MiniMalloc (``e2e.feasible_rows``)."""
    lines = e2e.header(sys.argv, f"Limit {args.time_limit:g} s; per instance the median of {args.repeat} run(s).")
    print("\n".join(lines), flush=True)
    cases = [(name, SHARED / f"minimalloc/{name}.1048576.csv") for name in "ABCDE" if not args.only or name in args.only]
    lines += e2e.feasible_rows(cases, 1048576, args.time_limit, args.repeat, args.planner)
    lines += ["", f"uptime after: {e2e.uptime()}"]
    print("\n".join(lines), flush=True)
    if args.output:
        write_text(args.output, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
