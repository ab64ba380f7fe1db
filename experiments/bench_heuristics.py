"""Every registered heuristic, side by side in one run: speed at scale, quality on real instances,
and misses against brute force on tiny instances.

    python experiments/bench_heuristics.py speed [--sizes 1000 10000 100000]
    python experiments/bench_heuristics.py compare FILE... [--time-limit 1]
    python experiments/bench_heuristics.py tiny [--count 400]

``speed`` uses synthetic instances that mimic a training step: a forward chain whose
activations are mostly consumed by the next one to three operators, some skip connections, a
quarter of the activations saved for the backward pass (alive until the mirrored backward
step), and short-lived backward buffers; sizes log-uniform in 256 B .. 4 MiB, 64-byte aligned.
Seconds include the library's lower bound and the validation of the plan.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

from optplan import registry
from optplan.core.buffer import Buffer, Memory
from optplan.core.problem import Problem
from optplan.formats import read_problem
from optplan.study.instances import discover, is_problem

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def synthetic(n: int, seed: int = 0) -> Problem:
    """A training-like instance with ``n`` buffers (see the module docstring)."""
    rng = np.random.default_rng(seed)
    fwd = n // 2
    steps = fwd  # forward steps 0..fwd-1, backward steps fwd..2*fwd-1
    sizes = (2 ** rng.uniform(8, 22, n)).astype(np.int64) // 64 * 64 + 64
    buffers = []
    for i in range(fwd):  # forward activations
        r = rng.random()
        if r < 0.25:
            end = 2 * steps - i  # saved for backward
        elif r < 0.30:
            end = i + int(rng.integers(5, 50))  # skip connection
        else:
            end = i + int(rng.integers(1, 4))
        buffers.append(Buffer(f"a{i}", int(sizes[i]), i, max(min(end, 2 * steps), i + 1)))
    for k in range(n - fwd):  # backward gradients and temporaries
        s = steps + k * steps // max(n - fwd, 1)
        buffers.append(Buffer(f"g{k}", int(sizes[fwd + k]), s, s + int(rng.integers(1, 4))))
    return Problem(tuple(buffers), (Memory("mem", alignment=64),))


def _cell(plan, seconds: float, cpu: float) -> str:
    if not plan.found:
        return f"{seconds:.2f} / {cpu:.2f} ({plan.status.value})"
    gap = plan.gap
    ratio = "n/a" if gap is None else f"{1 + gap:.3f}"
    return f"{seconds:.2f} / {cpu:.2f} ({ratio})"


def speed(args: argparse.Namespace) -> None:
    names = args.only or registry.heuristic_names()
    registry.solve(synthetic(10), names[0])  # warm up: the registry imports every planner module once
    problems = [synthetic(n) for n in args.sizes]
    print("Each cell: wall seconds / CPU seconds of this process (peak / lower bound). On a loaded "
          "machine the CPU time is the fairer figure.\n")
    print("| heuristic | " + " | ".join(f"{n:,} buffers" for n in args.sizes) + " |")
    print("| --- |" + " --- |" * len(args.sizes))
    for name in names:
        cells = []
        for p in problems:
            t0, c0 = time.perf_counter(), time.process_time()
            plan = registry.solve(p, name, time_limit=args.time_limit, seed=0)
            cells.append(_cell(plan, time.perf_counter() - t0, time.process_time() - c0))
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def compare(args: argparse.Namespace) -> None:
    names = args.only or registry.heuristic_names()
    # a shell glob such as models/*.json also names models/summary.json, which is not a problem
    paths = [f for f in args.files if Path(f).is_dir() or is_problem(Path(f))]
    for f in sorted(set(args.files) - set(paths)):
        print(f"(skipped {f}: not an optplan problem)\n")
    problems = [(i.label, read_problem(i.path)) for i in discover(paths)[0]]
    registry.solve(synthetic(10), names[0])  # warm up: the registry imports every planner module once
    print("Each cell: peak / lower bound (seconds). No capacity: every heuristic minimizes the peak.\n")
    print("| heuristic | " + " | ".join(f"{n} ({len(p.buffers):,})" for n, p in problems) + " |")
    print("| --- |" + " --- |" * len(problems))
    best: dict[int, float] = {}
    for name in names:
        cells = []
        for i, (label, p) in enumerate(problems):
            t0 = time.perf_counter()
            plan = registry.solve(p, name, time_limit=args.time_limit, seed=0)
            dt = time.perf_counter() - t0
            ratio = plan.peak["mem"] / plan.lower_bound["mem"] if plan.found else float("inf")
            best[i] = min(best.get(i, float("inf")), ratio)  # by position: two files may share a label
            cells.append((ratio, dt))
        print(f"| {name} | " + " | ".join(f"{r:.4f} ({t:.2f} s)" for r, t in cells) + " |", flush=True)
    print("\n| best ratio | " + " | ".join(f"{best[i]:.4f}" for i in range(len(problems))) + " |")


def tiny(args: argparse.Namespace) -> None:
    from brute_force import brute_force_optimum, tiny_problem

    names = args.only or registry.heuristic_names()
    rng = random.Random(args.seed)
    problems = [tiny_problem(rng.randint) for _ in range(args.count)]
    optima = [brute_force_optimum(p) for p in problems]
    feasible = [(p, o[0]) for p, o in zip(problems, optima) if o is not None]
    print(f"{args.count} random tiny problems (every constraint kind, up to 5 buffers and 3 memories); "
          f"brute force finds a plan for {len(feasible)}, proves {args.count - len(feasible)} infeasible.\n")
    print("The objective is the weighted sum of per-memory peaks (`objective_weights`: a byte spilled to a "
          "slower memory costs more than all faster bytes), so a spill shows as a large ratio. "
          "hill-climb runs 50 iterations, seed 0.\n")
    print("| heuristic | no plan although one exists | optimal | mean objective / optimum | worst |")
    print("| --- | --- | --- | --- | --- |")
    for name in names:
        missed = optimal = 0
        ratios = []
        for p, value in feasible:
            plan = registry.solve(p, name, iterations=50, seed=0)
            if not plan.found:
                missed += 1
                continue
            optimal += plan.objective_value == value
            ratios.append(plan.objective_value / value if value else 1.0)
        print(f"| {name} | {missed} ({missed / len(feasible):.1%}) | {optimal} ({optimal / len(feasible):.1%}) "
              f"| {np.mean(ratios):.3f} | {max(ratios):.2f} |", flush=True)


def main() -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--only", nargs="*", help="heuristic names (default: every registered heuristic)")
    common.add_argument("--time-limit", type=float, default=1.0, help="budget of hill-climb, seconds (default 1)")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("speed", parents=[common])
    s.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    s.set_defaults(run=speed)
    s = sub.add_parser("compare", parents=[common])
    s.add_argument("files", nargs="+", help="problem files or directories (files that are not problems are skipped)")
    s.set_defaults(run=compare)
    s = sub.add_parser("tiny", parents=[common])
    s.add_argument("--count", type=int, default=400)
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(run=tiny)
    args = ap.parse_args()
    print(f"Command: `python {' '.join(sys.argv)}`\n")
    args.run(args)


if __name__ == "__main__":
    main()
