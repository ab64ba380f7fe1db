"""How many CPU seconds is a deterministic second? Per planner, the CPU time of deterministic runs
that spend their whole budget, over that budget.

    python experiments/calibrate_deterministic.py [--limit 3] [--planners cpsat,search,hill-climb,auto]
                                                  [--families guillotine,pinwheel,perturbed] [--seeds 0-3] [--no-capacity]

``--deterministic`` counts a time limit in deterministic seconds (CP-SAT's deterministic time over
``cpsat.DTIME_PER_SECOND``, search nodes over ``SearchParams.nodes_per_second``, hill-climb steps x units
over ``UNIT_STEPS_PER_SECOND``, MIP nodes); their rates were set so that one is about a CPU second
of one core, so that a deterministic run ends near its limit's wall time on an unloaded machine of
this kind. Each run here is ``registry.solve`` in this process with the wall-clock guard off
(``Deadline(..., guard=inf)``), on the generated families (minimalloc A-E are only a sanity check: ``--families
minimalloc``), CPU time by ``time.process_time`` (this process's threads: CP-SAT runs one worker in
deterministic mode, the search one process). A run that ends before its budget (a proof) is listed
but not counted. Prints a table per run and the median ratio per planner.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_instances import instance  # noqa: E402
from instances import SHARED  # noqa: E402

from optplan import registry  # noqa: E402
from optplan.core.deadline import Deadline
from optplan.core.problem import Problem  # noqa: E402
from optplan.formats import read_problem  # noqa: E402


def problems(families: list[str], seeds: range):
    for family in families:
        if family == "minimalloc":
            for name in "ABCDE":
                yield name, read_problem(SHARED / "minimalloc" / f"{name}.1048576.csv")
        else:
            for seed in seeds:
                yield f"{family}-{seed}", instance(family, seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=float, default=3.0, help="deterministic seconds per run")
    ap.add_argument("--planners", default="cpsat,search,hill-climb,auto")
    ap.add_argument("--families", default="guillotine,pinwheel,perturbed")
    ap.add_argument("--seeds", default="0-3", help="first-last")
    ap.add_argument("--no-capacity", action="store_true",
                    help="drop the generated instances' capacity (their optimum): minimize the peak instead")
    args = ap.parse_args()
    lo, hi = (int(x) for x in args.seeds.split("-"))
    print(f"command: python experiments/calibrate_deterministic.py {' '.join(sys.argv[1:])}")
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| planner | instance | buffers | status | CPU s | wall s | CPU s per deterministic s | counted |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    ratios: dict[str, list[float]] = {}
    names = args.planners.split(",")
    for name in names:  # imports and kernels loaded before any run is measured
        registry.solve(instance("guillotine", 0), name, time_limit=0.1, deterministic=True, workers=1)
    for label, problem in problems(args.families.split(","), range(lo, hi + 1)):
        if args.no_capacity:
            problem = Problem(problem.buffers, tuple(replace(m, capacity=None) for m in problem.memories), problem.relative)
        for name in names:
            c0, t0 = time.process_time(), time.perf_counter()
            plan = registry.solve(problem, name, seed=1, workers=1,  # the budgets themselves: no guard
                                  deadline=Deadline(args.limit, deterministic=True, guard=float("inf")))
            cpu, wall = time.process_time() - c0, time.perf_counter() - t0
            counted = plan.status.value != "OPTIMAL" and plan.status.value != "INFEASIBLE"
            if counted:
                ratios.setdefault(name, []).append(cpu / args.limit)
            print(f"| {name} | {label} | {len(problem.buffers)} | {plan.status.value} | {cpu:.2f} | {wall:.2f} | "
                  f"{cpu / args.limit:.2f} | {'yes' if counted else 'no'} |", flush=True)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}\n")
    print("| planner | runs counted | CPU s per deterministic s: median | min | max |")
    print("| --- | --- | --- | --- | --- |")
    for name in names:
        r = ratios.get(name, [])
        if r:
            print(f"| {name} | {len(r)} | {statistics.median(r):.2f} | {min(r):.2f} | {max(r):.2f} |")
        else:
            print(f"| {name} | 0 | | | |")


if __name__ == "__main__":
    main()
