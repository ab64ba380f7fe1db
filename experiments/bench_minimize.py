"""Minimize mode (no capacity): the peak found, the bound proven and the status, per instance.

    python experiments/bench_minimize.py challenging --time-limit 60          # MiniMalloc A-E, auto
    python experiments/bench_minimize.py tight --seeds 0:40 --time-limit 5 --planner search --compare
    python experiments/bench_minimize.py cut --seeds 0:20 --time-limit 10 --beside search   # generated, known optimum
    python experiments/bench_minimize.py cut --e2e --seeds 0:10 --time-limit 20 [--peer supermalloc]   # as processes

``challenging`` reads ../shared/benchmarks/minimalloc/*.csv and ignores the capacity in their
names. ``tight`` generates instances whose optimum is often above the load bound (MiniMalloc's D
is one such; its profile is flat near the peak): every step carries the same live load ``cells``
(buffers end at random, new ones of random sizes fill the room back to ``cells``), so a plan at
the load bound is a perfect packing at every step, which the contiguity of buffers often
forbids. Small ones are brute-forced in the tests; here they are sized so that the whole search
cannot always refute the load bound in seconds (``--cells``, ``--steps``, ``--largest`` size them).
``--compare`` runs each instance twice, old (auto without the search deciding the proven bound
from the start, ``PortfolioParams.floor_race_share`` = 0) and new, side by side; ``--compare-share`` names
another of auto's shares to switch off instead (``floor_decision_share``: CP-SAT's decisions at the bound). Times are CPU seconds of this
process (auto's search member and the search's workers are forked processes, not counted: wall
seconds too), with the load.

``--e2e`` measures what the user sees instead: each instance written once as a CSV (capacity
dropped), ``optplan solve --objective min-peak`` as a whole process, start to exit (``e2e.py``):
the peak over the optimum (cut families: the capacity, by construction; challenging: over the
load bound), the status, the wall time and whether the process ended within max(1.1 T, T + 1 s);
the distribution (median, p90, max) of peak / optimum. ``--peer supermalloc`` runs OmniMalloc's
SuperMalloc beside, as a process with the same limit (``omnimalloc_peer.py``).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import e2e
from gen_instances import instance

from optplan.core.bounds import lower_bounds
from optplan.core.buffer import Buffer, Memory
from optplan.core.problem import Problem
from optplan.formats import read_problem
from optplan.portfolio import PortfolioParams
from optplan.registry import solve

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "minimalloc"


def tight_instance(seed: int, cells: tuple[int, int] = (16, 32), steps: int = 12, largest: int = 10,
                   unit: int = 1024) -> Problem:
    """Every step holds ``cells`` units (drawn from the range) of live buffers: at each step every
    live buffer ends with probability 1/2, and new buffers of 1..``largest`` units fill the room."""
    rng = random.Random(f"tight-{seed}")
    height = rng.randint(*cells)
    live: list[tuple[int, int]] = []  # (start, size)
    done: list[tuple[int, int, int]] = []
    for t in range(steps):
        keep = []
        for s0, size in live:
            if t > 0 and rng.random() < 0.5:
                done.append((s0, t, size))
            else:
                keep.append((s0, size))
        live = keep
        room = height - sum(size for _, size in live)
        while room > 0:
            size = rng.randint(1, min(room, largest))
            live.append((t, size))
            room -= size
    done += [(s0, steps, size) for s0, size in live]
    buffers = tuple(Buffer(str(i), size * unit, s0, s1) for i, (s0, s1, size) in enumerate(done))
    return Problem(buffers, (Memory("mem"),), metadata={"name": f"tight-{seed}"})


def _beside(problem: Problem, planner: str, limit: float, workers: int) -> tuple[str, bool]:
    """``planner`` in feasibility mode at the problem's capacity, or at the load bound where there
    is none: the table cell and whether it packed."""
    cap = problem.memories[0].capacity or lower_bounds(problem).lower["mem"]
    opts = {"workers": workers} if workers else {}
    w0 = time.perf_counter()
    at = solve(Problem(problem.buffers, (Memory("mem", capacity=cap),)), planner, time_limit=limit, objective="feasible", **opts)
    packed = at.found and at.peak["mem"] <= cap
    return f"{'packed' if packed else at.status.value} {time.perf_counter() - w0:.1f} | ", packed


def _run(problem: Problem, name: str, planner: str, limit: float, workers: int, cell: str = "",
         params: PortfolioParams | None = None) -> tuple[str, bool, bool]:
    """The table row (``cell``: ``_beside``'s), whether the plan is proven optimal, and whether the
    proven bound is above the load bound (``params``: auto's)."""
    opts: dict[str, object] = {"workers": workers} if workers else {}
    if params is not None and planner == "auto":
        opts["params"] = params
    load = lower_bounds(problem).lower["mem"]
    problem = Problem(problem.buffers, (Memory("mem"),))  # minimize mode: no capacity
    c0, w0 = time.process_time(), time.perf_counter()
    plan = solve(problem, planner, time_limit=limit, **opts)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    peak, bound = plan.peak.get("mem"), plan.lower_bound["mem"]
    floor = plan.stats.get("cpsat_floor")
    decided = "" if not isinstance(floor, dict) else f"{floor['decisions']}"
    return (f"| {name} | {len(problem.buffers)} | {cell}{planner} | {plan.status.value} | {peak} | {bound} | {load} | "
            f"{decided} | {cpu:.1f} | {wall:.1f} |", plan.status.value == "OPTIMAL", bound > load)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", choices=["challenging", "tight", "cut"])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--planner", default="auto")
    ap.add_argument("--seeds", default="0:20")
    ap.add_argument("--workers", type=int, default=0, help="0: the planner's default")
    ap.add_argument("--instances", default="", help="only these, e.g. A,D or tight-3,pinwheel-8")
    ap.add_argument("--cells", default="16:32", help="tight: range of the live load per step, in KiB")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--largest", type=int, default=10, help="tight: largest buffer, KiB")
    ap.add_argument("--families", default="guillotine,pinwheel", help="cut: the generated families")
    ap.add_argument("--beside", default="", help="a planner run first at the capacity (feasibility mode), e.g. search")
    ap.add_argument("--unsettled", action="store_true", help="list only rows not proven at the load bound")
    ap.add_argument("--compare", action="store_true", help="each instance old (the share below 0) and new")
    ap.add_argument("--compare-share", default="floor_race_share", help="the PortfolioParams field --compare sets to 0")
    ap.add_argument("-o", "--output", help="--e2e: the results file")
    ap.add_argument("--e2e", action="store_true", help="optplan (and --peer) as processes (e2e.py)")
    ap.add_argument("--peer", default="", help="--e2e: an OmniMalloc allocator run beside, e.g. supermalloc")
    args = ap.parse_args(argv)
    if args.e2e:
        return end_to_end(args)
    print(f"$ python {' '.join(sys.argv)}\n\nload average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    head = f"{args.beside} at the capacity (s wall) | " if args.beside else ""
    print(f"| instance | buffers | {head}planner | status | peak | proven bound | load bound | CP-SAT decisions at the bound | CPU s | wall s |")
    print("| --- " * (10 + bool(args.beside)) + "|")
    if args.family == "challenging":
        cases = [(p.stem.split(".")[0], read_problem(p)) for p in sorted(SHARED.glob("[A-Z].*.csv"))]
        cases = [(n, Problem(p.buffers, (Memory("mem", capacity=int(c)),))) for (n, p), c in  # (dropped in _run)
                 zip(cases, (p.stem.split(".")[1] for p in sorted(SHARED.glob("[A-Z].*.csv"))))
                 if not args.instances or n in args.instances.split(",")]
    elif args.family == "cut":
        lo, hi = (int(x) for x in args.seeds.split(":"))
        cases = [(f"{f}-{s}", instance(f, s)) for f in args.families.split(",") for s in range(lo, hi)]
    else:
        lo, hi = (int(x) for x in args.seeds.split(":"))
        cells = tuple(int(x) for x in args.cells.split(":"))
        cases = [(f"tight-{s}", tight_instance(s, (cells[0], cells[1]), args.steps, args.largest)) for s in range(lo, hi)]
    if args.instances:
        cases = [(n, p) for n, p in cases if n in args.instances.split(",")]
    share = getattr(PortfolioParams(), args.compare_share)
    shares = (0.0, share) if args.compare else (share,)
    proven, above, packed = dict.fromkeys(shares, 0), dict.fromkeys(shares, 0), 0
    for name, problem in cases:
        cell, fit = _beside(problem, args.beside, args.time_limit, args.workers) if args.beside else ("", False)
        packed += fit
        for ws in shares:
            params = replace(PortfolioParams(), **{args.compare_share: ws})
            row, opt, up = _run(problem, name + ("" if not args.compare else (" (new)" if ws else " (old)")),
                                args.planner, args.time_limit, args.workers, cell, params)
            proven[ws] += opt
            above[ws] += up
            if not (args.unsettled and opt and not up):
                print(row, flush=True)
    for ws in shares:
        print(f"\n{'new' if ws else 'old'}: {proven[ws]} of {len(cases)} proven optimal, {above[ws]} with a bound proven "
              "above the load bound")
    if args.beside:
        print(f"\n{args.beside} at the capacity packed {packed} of {len(cases)}")
    print(f"\nload average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


def _cases(args: argparse.Namespace) -> list[tuple[str, Problem, int, bool]]:
    """(name, problem, its optimum or its load bound, whether that is the optimum) for ``--e2e``."""
    if args.family == "challenging":
        found = [(p.stem.split(".")[0], read_problem(p)) for p in sorted(SHARED.glob("[A-Z].*.csv"))]
        return [(n, p, lower_bounds(p.with_capacity(None)).lower["mem"], False) for n, p in found
                if not args.instances or n in args.instances.split(",")]
    lo, hi = (int(x) for x in args.seeds.split(":"))
    if args.family != "cut":
        raise SystemExit("--e2e: the families challenging or cut")
    return [(f"{f}-{s}", p, p.metadata["optimum"], True) for f in args.families.split(",") for s in range(lo, hi)
            for p in [instance(f, s)] if not args.instances or f"{f}-{s}" in args.instances.split(",")]


def end_to_end(args: argparse.Namespace) -> int:
    """Minimize mode as processes: peak / optimum per instance and its distribution."""
    t = args.time_limit
    lines = e2e.header(sys.argv, f"Minimize mode (no capacity), limit T = {t:g} s; 'in time': the process ended "
                                 f"within max(1.1 T, T + 1 s) = {max(1.1 * t, t + 1):g} s.")
    head = "| instance | buffers | optimum | optplan status | peak | peak / optimum | proven bound | wall s | in time | RSS MiB |"
    if args.peer:
        head += f" {args.peer} peak / optimum | proven | wall s |"
    cases = _cases(args)
    if cases and not cases[0][3]:
        head = head.replace("optimum", "load bound")
    lines += [head, "| --- " * (head.count("|") - 1) + "|"]
    print("\n".join(lines), flush=True)
    ratios, peer_ratios, proven, late = [], [], 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for name, problem, optimum, _ in cases:
            path = e2e.write_csv(problem, Path(tmp, f"{name}.csv"))
            got = e2e.optplan(path, capacity=None, objective="min-peak", time_limit=t)
            ratio = got.peak / optimum if got.peak is not None else float("inf")
            ratios.append(ratio)
            proven += got.status == "OPTIMAL"
            in_time = got.run.seconds <= max(1.1 * t, t + 1)
            if not in_time:
                late.append(name)
            row = (f"| {name} | {len(problem.buffers)} | {optimum} | {got.status} | {got.peak} | {ratio:.4f} | {got.bound} | "
                   f"{got.run.seconds:.2f} | {'yes' if in_time else 'NO'} | {got.run.rss_mib:.0f} |")
            if args.peer:
                peer = e2e.omnimalloc(path, args.peer, t)
                peer_ratio = peer.peak / optimum if peer.peak is not None else float("inf")
                peer_ratios.append(peer_ratio)
                row += f" {peer_ratio:.4f} | {'yes' if peer.status == 'OPTIMAL' else 'no'} | {peer.run.seconds:.2f} |"
            lines.append(row)
            print(row, flush=True)
    what = "optimum" if cases and cases[0][3] else "load bound"
    lines += ["", f"optplan peak / {what} over {len(ratios)} instances: {e2e.spread(ratios)}; proven optimal {proven}; "
              f"processes past max(1.1 T, T + 1 s): {', '.join(late) or 'none'}"]
    if peer_ratios:
        lines.append(f"{args.peer} peak / {what}: {e2e.spread(peer_ratios)}")
    lines += ["", f"uptime after: {e2e.uptime()}"]
    print("\n".join(lines[-4:]), flush=True)
    if args.output:
        Path(args.output).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
