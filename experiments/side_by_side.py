"""Old code against new code, whole `optplan solve` processes, interleaved instance by instance.

    python experiments/side_by_side.py --tree old=/work/wt/before --tree new=/work/wt/bench29 \\
        --solve-args "--planner search --objective feasible --capacity 1048576 --time-limit 60 --workers 2" \\
        --capacity 1048576 --jsonl /tmp/search.jsonl FILE...

Why a separate driver: the bench_* scripts import the library in-process, so they can only measure
the tree they are imported from, and the old tree (before the house steps) has other module paths.
Running the CLI as a process with ``PYTHONPATH=<tree>`` measures what the user sees in either tree
with the same command. Each run is a child process: the wall time is measured here, the peak RSS by
GNU time, the rest is parsed from ``--json``. The tree that goes first
alternates from one instance to the next so that neither always meets the other's leftover load.
Run it from a directory outside both checkouts so that neither tree is importable from the cwd.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Run:
    """One `optplan solve` process: what it said and what it cost."""

    tree: str
    instance: str
    rep: int
    status: str
    peak: int | None
    bound: int | None
    seconds: float | None
    nodes: int | None
    wall: float
    rss_mib: float
    exit_code: int


def _single(value: object) -> int | None:
    """The one memory's figure of a ``{"mem": n}`` map (both trees print that shape)."""
    if isinstance(value, dict) and len(value) == 1:
        (only,) = value.values()
        return only if isinstance(only, int) else None
    return None


def run_one(tree: str, root: Path, instance: Path, solve_args: list[str], rep: int) -> Run:
    """Run one solve process with ``root`` on the path and read its JSON answer.

    GNU time reports the peak RSS of the largest process of the run (the solve or one of its
    members), which is what bounds the machine's memory."""
    rss_file = Path(f"/tmp/side_by_side_rss_{os.getpid()}")
    cmd = ["/usr/bin/time", "-f", "%M", "-o", str(rss_file),
           sys.executable, "-m", "optplan.cli", "solve", str(instance), *solve_args, "--json"]
    env = dict(os.environ, PYTHONPATH=str(root))
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    rss = int(rss_file.read_text().split()[-1]) / 1024.0
    try:
        answer = json.loads(proc.stdout)
    except json.JSONDecodeError:
        answer = {"status": f"no JSON: {proc.stderr.decode(errors='replace').strip()[-200:]}"}
    stats = answer.get("stats") or {}
    return Run(tree=tree, instance=instance.stem, rep=rep, status=str(answer.get("status")),
               peak=_single(answer.get("peak")), bound=_single(answer.get("lower_bound")),
               seconds=answer.get("seconds"), nodes=stats.get("nodes") if isinstance(stats, dict) else None,
               wall=wall, rss_mib=rss, exit_code=proc.returncode)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--tree", action="append", required=True, help="NAME=PATH (repeat; first is the base)")
    ap.add_argument("--solve-args", default="", help="arguments after `optplan solve FILE`")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--capacity", type=int, default=None, help="a plan counts as packed at or under this")
    ap.add_argument("--optimum", type=int, default=None, help="known optimum: report peak / optimum")
    ap.add_argument("--jsonl", type=Path, required=True, help="append one line per run here")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: print the tables of --jsonl's runs, trees in --tree's order")
    args = ap.parse_args(argv)
    trees = [tuple(t.split("=", 1)) for t in args.tree]
    if args.report_only:
        saved = [Run(**json.loads(line)) for line in args.jsonl.read_text().splitlines()]
        print(report(saved, [t[0] for t in trees], args.capacity, args.optimum))
        return 0
    solve_args = shlex.split(args.solve_args)
    runs: list[Run] = []
    with args.jsonl.open("a") as sink:
        for index, instance in enumerate(args.files):
            order = trees if index % 2 == 0 else trees[::-1]
            for rep in range(args.reps):
                for name, root in order:
                    run = run_one(name, Path(root), instance, solve_args, rep)
                    runs.append(run)
                    sink.write(json.dumps(asdict(run)) + "\n")
                    sink.flush()
                    print(_line(run), file=sys.stderr, flush=True)
    print(report(runs, [t[0] for t in trees], args.capacity, args.optimum))
    return 0


def _line(run: Run) -> str:
    return (f"{run.instance} {run.tree} rep{run.rep}: {run.status} peak {run.peak} bound {run.bound} "
            f"{run.seconds} s (wall {run.wall:.2f}) nodes {run.nodes} rss {run.rss_mib:.0f} MiB")


def packed(run: Run, capacity: int | None) -> bool:
    """A plan came back, within the capacity when there is one."""
    if run.peak is None or run.status not in ("OPTIMAL", "FEASIBLE"):
        return False
    return capacity is None or run.peak <= capacity


def _quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile; infinities (unsolved) sort last."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "-"
    return ">limit" if math.isinf(x) else f"{x:.{digits}f}"


def report(runs: list[Run], names: list[str], capacity: int | None, optimum: int | None) -> str:
    """Per-instance rows (every tree side by side) and one summary row per tree."""
    instances = list(dict.fromkeys(r.instance for r in runs))
    by = {(r.tree, r.instance, r.rep): r for r in runs}
    head = ["instance", "rep"]
    for n in names:
        head += [f"{n} status", f"{n} peak / bound", f"{n} s", f"{n} wall s", f"{n} nodes", f"{n} RSS MiB"]
    head.append(f"wall {names[-1]} / {names[0]}")
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for inst in instances:
        for rep in sorted({r.rep for r in runs if r.instance == inst}):
            cells = [inst, str(rep)]
            for n in names:
                r = by[(n, inst, rep)]
                ratio = f"{r.peak}/{r.bound}" if r.peak is not None else f"-/{r.bound}"
                cells += [r.status, ratio, _fmt(r.seconds), _fmt(r.wall), str(r.nodes or "-"), f"{r.rss_mib:.0f}"]
            cells.append(f"{by[(names[-1], inst, rep)].wall / by[(names[0], inst, rep)].wall:.2f}")
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", summary(runs, names, capacity, optimum)]
    return "\n".join(lines)


def summary(runs: list[Run], names: list[str], capacity: int | None, optimum: int | None) -> str:
    """Packed / proven counts, wall-time quantiles (unpacked = over the limit), peak / optimum."""
    head = ["tree", "runs", "packed", "proven (OPTIMAL)", "median wall s", "p90 wall s", "max wall s"]
    if optimum:
        head += ["median peak/opt", "p90 peak/opt", "max peak/opt"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for n in names:
        mine = [r for r in runs if r.tree == n]
        walls = [r.wall if packed(r, capacity) else math.inf for r in mine]
        cells = [n, str(len(mine)), str(sum(packed(r, capacity) for r in mine)),
                 str(sum(r.status == "OPTIMAL" for r in mine)),
                 _fmt(statistics.median(walls) if not _half_inf(walls) else math.inf),
                 _fmt(_quantile(walls, 0.9)), _fmt(max(walls))]
        if optimum:
            gaps = [r.peak / optimum if r.peak else math.inf for r in mine]
            cells += [_fmt(_quantile(gaps, 0.5), 4), _fmt(_quantile(gaps, 0.9), 4), _fmt(max(gaps), 4)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _half_inf(values: list[float]) -> bool:
    return sum(math.isinf(v) for v in values) * 2 >= len(values)


if __name__ == "__main__":
    raise SystemExit(main())
