"""Robustness: how often planners pack generated instances at their capacity, and how fast.

    python experiments/bench_robust.py [--seeds 70] [--families guillotine pinwheel perturbed]
        [--planners search auto] [--time-limit 10] [--workers 2] [-o experiments/results/robust.md]
    MINIMALLOC_BIN=... python experiments/bench_robust.py --e2e --seeds 10 --time-limit 60 [--repeat 1]

Instances come from ``gen_instances`` (known optimum = the capacity, 1 MiB, for the cut families;
perturbations of A-E may have none). Each planner decides "does a plan fit in 1 MiB?" (objective
``feasible``); *solved* means a valid plan under the capacity or a proof that none exists. Planners
run one after the other on each instance (side by side in one run: the machine is shared, so only
figures from the same run compare). Time quantiles count an unsolved instance as slower than the
limit (shown as ``>limit``). MiniMalloc runs too when available: ``MINIMALLOC_BIN`` (its command
line solver, ``--capacity --input --output``) or the ``minimalloc`` Python module (OmniMalloc's
wrapper needs it; OmniMalloc 1.0.0 does not ship it). The load average is printed before and after.

``--e2e`` measures what the user sees instead: each instance written once as a CSV, then
``optplan solve --objective feasible --capacity 1048576`` (the first of ``--planners``) and
MiniMalloc's binary each as a whole process, start to exit, their order alternating over
``--repeat`` rounds; end-to-end and engine-only seconds, per family and over all (``e2e.py``).
``--slack 0.03`` sets the capacity 3 % above the optimum: room to spare, which a canonical search
at the capacity does not find easier (a tight capacity prunes more).
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import e2e
from gen_instances import CELLS, FAMILIES, UNIT, instance

from optplan.core.problem import Problem
from optplan.formats import write_text
from optplan.registry import solve
from optplan.search import engine

CAPACITY = CELLS * UNIT


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def minimalloc_runner() -> tuple[str, object] | None:
    """How to run MiniMalloc here: ("bin", path), ("module", module) or None."""
    path = os.environ.get("MINIMALLOC_BIN")
    if path:
        return "bin", path
    try:
        import minimalloc  # type: ignore[import-not-found]
    except ImportError:
        return None
    return "module", minimalloc


def run_minimalloc(runner: tuple[str, object], problem: Problem, seconds: float) -> float | None:
    """MiniMalloc's wall time to pack ``problem`` at the capacity, None if it did not within ``seconds``."""
    kind, what = runner
    t0 = time.perf_counter()
    if kind == "module":
        mm = what
        buffers = [mm.Buffer(id=b.id, size=b.size, lifespan=mm.Lifespan(lower=b.start, upper=b.end))  # type: ignore[attr-defined]
                   for b in problem.buffers]
        params = mm.SolverParams()  # type: ignore[attr-defined]
        params.timeout = math.ceil(seconds)
        mp = mm.Problem(buffers=buffers)  # type: ignore[attr-defined]
        mp.capacity = CAPACITY
        ok = mm.Solver(params).solve(mp) is not None  # type: ignore[attr-defined]
        return time.perf_counter() - t0 if ok else None
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "in.csv"), Path(tmp, "out.csv")
        src.write_text("id,lower,upper,size\n" + "".join(f"{b.id},{b.start},{b.end},{b.size}\n" for b in problem.buffers))
        try:
            subprocess.run([str(what), f"--capacity={CAPACITY}", f"--input={src}", f"--output={dst}", f"--timeout={seconds:g}s"],
                           timeout=seconds + 5, capture_output=True, check=False)
        except subprocess.TimeoutExpired:
            return None
        return time.perf_counter() - t0 if dst.exists() and dst.stat().st_size > 0 else None


def quantile(xs: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of ``xs``; inf for unsolved entries."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def fmt(x: float, limit: float) -> str:
    return f">{limit:g}" if x == math.inf else f"{x:.2f}"


def summary(label: str, times: list[float], limit: float) -> str:
    solved = sum(t < math.inf for t in times)
    return (f"| {label} | {len(times)} | {solved} ({100 * solved / len(times):.1f} %) | {fmt(quantile(times, 0.5), limit)} | "
            f"{fmt(quantile(times, 0.9), limit)} | {fmt(max(times), limit)} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=70, help="seeds per family")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--planners", nargs="+", default=["search", "auto"])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("-o", "--output")
    ap.add_argument("--e2e", action="store_true", help="optplan and MiniMalloc as processes (e2e.py)")
    ap.add_argument("--repeat", type=int, default=1, help="--e2e: rounds, the tools' order alternating")
    ap.add_argument("--slack", type=float, default=0.0,
                    help="--e2e: the capacity this fraction above the known optimum (0.03: 3 %% of room to spare)")
    args = ap.parse_args(argv)
    if args.e2e:
        return end_to_end(args)
    lines = ["```", "python " + " ".join(shlex.quote(a) for a in sys.argv), "```", ""]
    t_start = time.perf_counter()
    compile_s = engine.ensure_compiled()
    runner = minimalloc_runner()
    lines.append(f"numba kernels loaded in {compile_s:.2f} s (not counted); {os.cpu_count()} cores; "
                 f"{args.workers} workers; limit {args.time_limit:g} s per instance and planner; "
                 f"load average before: {load()}")
    lines.append("MiniMalloc: " + ("not available (no MINIMALLOC_BIN, no minimalloc module): no ratios"
                                   if runner is None else f"{runner[0]} {runner[1]}"))
    print("\n".join(lines), flush=True)
    planners = list(args.planners) + (["minimalloc"] if runner else [])
    times: dict[tuple[str, str], list[float]] = {}
    unsolved: dict[tuple[str, str], list[int]] = {}
    ratios: dict[str, list[float]] = {}
    for family in args.families:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            problem = instance(family, seed)
            row = {}
            for planner in planners:
                if planner == "minimalloc":
                    t = run_minimalloc(runner, problem, args.time_limit)  # type: ignore[arg-type]
                    t = math.inf if t is None else t
                else:
                    plan = solve(problem, planner, time_limit=args.time_limit, workers=args.workers, objective="feasible")
                    ok = plan.found and plan.peak["mem"] <= CAPACITY or plan.status.value == "INFEASIBLE"
                    t = plan.seconds if ok else math.inf
                row[planner] = t
                times.setdefault((family, planner), []).append(t)
                if t == math.inf:
                    unsolved.setdefault((family, planner), []).append(seed)
            if runner:
                for planner in args.planners:
                    if row[planner] < math.inf and row["minimalloc"] < math.inf:
                        ratios.setdefault(planner, []).append(row[planner] / row["minimalloc"])
            print(f"{family} {seed} n={len(problem.buffers)} " + " ".join(f"{p}={fmt(row[p], args.time_limit)}" for p in planners),
                  flush=True)
    lines += ["", "| family / planner | instances | solved | median s | p90 s | max s |", "| --- | --- | --- | --- | --- | --- |"]
    for planner in planners:
        for family in args.families:
            lines.append(summary(f"{family} / {planner}", times[family, planner], args.time_limit))
        cut = [t for f in args.families if f != "perturbed" for t in times[f, planner]]
        if cut and len(args.families) > 1:
            lines.append(summary(f"guillotine+pinwheel / {planner}", cut, args.time_limit))
        lines.append(summary(f"all / {planner}", [t for f in args.families for t in times[f, planner]], args.time_limit))
    lines.append("")
    for planner, rs in ratios.items():
        lines.append(f"{planner} / MiniMalloc time ratio on {len(rs)} instances both packed: median {quantile(rs, 0.5):.2f}, "
                     f"p90 {quantile(rs, 0.9):.2f}, max {max(rs):.2f}")
    for (family, planner), seeds in sorted(unsolved.items()):
        lines.append(f"unsolved {family} / {planner}: seeds {' '.join(map(str, seeds))}")
    lines.append(f"load average after: {load()}; wall time {time.perf_counter() - t_start:.0f} s")
    print("\n".join(lines[lines.index('| family / planner | instances | solved | median s | p90 s | max s |') - 1:]), flush=True)
    if args.output:
        write_text(args.output, "\n".join(lines) + "\n")
    return 0


def end_to_end(args: argparse.Namespace) -> int:
    """The families' instances at the capacity as processes, optplan beside MiniMalloc, one table
    per family (``e2e.feasible_rows``) and one over all of them."""
    capacity = round(CAPACITY * (1 + args.slack))
    lines = e2e.header(sys.argv, f"Limit {args.time_limit:g} s; seeds {args.first_seed}..{args.first_seed + args.seeds - 1} "
                                 f"of each family; capacity {capacity:,} ({args.slack:.1%} above the optimum); "
                                 f"per instance the median of {args.repeat} run(s).")
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        everything = []
        for family in args.families:
            cases = [(f"{family}-{seed}", e2e.write_csv(instance(family, seed), Path(tmp, f"{family}-{seed}.csv")))
                     for seed in range(args.first_seed, args.first_seed + args.seeds)]
            everything += cases
            lines += ["", f"### {family}", "", f"uptime: {e2e.uptime()}", ""]
            lines += e2e.feasible_rows(cases, capacity, args.time_limit, args.repeat, args.planners[0])
            print("\n".join(lines[-len(cases) - 8:]), flush=True)
        if len(args.families) > 1:  # the summary over every family (the runs above, read again: no rerun)
            lines += ["", "### all families", ""] + _pooled(lines)
    lines += ["", f"uptime after: {e2e.uptime()}"]
    print("\n".join(lines[-12:]), flush=True)
    if args.output:
        write_text(args.output, "\n".join(lines) + "\n")
    return 0


def _pooled(lines: list[str]) -> list[str]:
    """Packed counts and time ratios over every family's rows of ``lines`` (their table cells)."""
    rows = [r.split("|")[1:-1] for r in lines
            if r.startswith("| ") and not r.startswith("| ---") and r.count("|") == 13 and "instance" not in r]
    ours = sum(c[1].strip() == "packed" for c in rows)
    theirs = sum(c[6].strip() == "packed" for c in rows)
    missed = [c[0].strip() for c in rows if c[6].strip() == "packed" and c[1].strip() != "packed"]
    e2e_r = [float(c[10]) if c[1].strip() == "packed" else math.inf for c in rows if c[6].strip() == "packed"]
    eng_r = [float(c[11]) if c[1].strip() == "packed" else math.inf for c in rows if c[6].strip() == "packed"]
    out = [f"packed: optplan {ours} of {len(rows)}, MiniMalloc {theirs} of {len(rows)}"
           + (f"; MiniMalloc packed and optplan did not: {', '.join(missed)}" if missed else "")]
    if e2e_r:
        out.append(f"time ratio optplan / MiniMalloc on the {len(e2e_r)} instances MiniMalloc packed: end to end "
                   f"{e2e.spread(e2e_r)}; engine only {e2e.spread(eng_r)}")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
