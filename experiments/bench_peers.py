"""optplan beside the peers that claim million-buffer instances, each tool as a whole process.

    [IDEALLOC_BIN=...] python experiments/bench_peers.py [--time-limit 60] [--kill-after 300]
        [--only S_1 s1-62k s1-1m short-1m] [-o experiments/results/peers.md]
    python experiments/bench_peers.py --only s1-18.7k somas-10k --tools auto   # issue 32 section 5

Instances: idealloc's S_1 (28,526 buffers, ../shared), S_1-shaped ones of 62k and 1M buffers
(``shaped_like.shaped_like``, seed 0) and 1M small, short-lived buffers (``shaped_like.short_lived``,
seed 0), each written once as a CSV. Tools, one after the other on each instance, minimizing the
peak (no capacity), each as a process timed from start to exit with its peak RSS (``e2e.py``):

* optplan ``auto`` (``optplan solve --objective min-peak --time-limit T -o plan.csv``);
* OmniMalloc's ``greedy_by_size`` and ``supermalloc`` (limit T, 2 threads) through
  ``omnimalloc_peer.py`` (``pip install omnimalloc``, optplan's ``peers`` extra);
* idealloc's binary where ``IDEALLOC_BIN`` points to one (run as ``$IDEALLOC_BIN -i FILE ex-csv``,
  the peak read from the ``Makespan:`` line it prints). This script does not build it: how it was
  built here, from stored file versions with Debian's crates and no network, and what it does, is in
  ``experiments/idealloc_peer.md``.

A process still running ``--kill-after`` seconds after its start is killed (reported as such).
Columns: peak / load bound (the peak live load, a lower bound on every plan), wall seconds end to
end, the tool's own seconds where it reports them, peak RSS (MiB, the process tree's). ``uptime``
before and after each instance's rows.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

import e2e
import numpy as np
from shaped_like import SOURCE, shaped_like, short_lived, somas_like, write_csv

from optplan.core.bounds import peak_load

DEFAULT = ("S_1", "s1-62k", "s1-1m", "short-1m")


def _instances(tmp: Path, only: list[str] | None) -> list[tuple[str, Path]]:
    """The instances as CSV files; ``s1-18.7k`` and ``somas-10k`` (issue 32 section 5) on request."""
    makers = {"S_1": None, "s1-62k": lambda: shaped_like(62_000, seed=0),
              "s1-1m": lambda: shaped_like(1_000_000, seed=0), "short-1m": lambda: short_lived(1_000_000, seed=0),
              "s1-18.7k": lambda: shaped_like(18_700, seed=0), "somas-10k": lambda: somas_like(10_000, seed=0)}
    out = []
    for name, make in makers.items():
        if name not in (only or DEFAULT):
            continue
        if make is None:
            out.append((name, SOURCE))
        else:
            path = tmp / f"{name}.csv"
            write_csv(make(), path)
            out.append((name, path))
    return out


def _load_bound(path: Path) -> tuple[int, int]:
    rows = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, usecols=(1, 2, 3), ndmin=2)
    return len(rows), peak_load(rows[:, 0], rows[:, 1], rows[:, 2])[0]


def _idealloc(binary: str, path: Path, kill_after: float) -> e2e.Solved:
    run = e2e.timed([binary, "-i", str(path), "ex-csv"], kill_after)
    numbers = re.findall(r"(?:makespan|peak)\D*?(\d+)", run.out + run.err, flags=re.IGNORECASE)
    peak = int(numbers[-1]) if numbers and run.returncode == 0 else None
    return e2e.Solved(run, peak, "FEASIBLE" if peak else ("KILLED" if run.killed else "ERROR"), None, None)


def _row(name: str, tool: str, got: e2e.Solved, bound: int, limit: float | None) -> str:
    ratio = f"{got.peak / bound:.4f}" if got.peak is not None else "-"
    engine = f"{got.engine:.2f}" if got.engine is not None else "-"
    status = got.status if not got.run.killed else f"killed at {got.run.seconds:.0f} s"
    in_time = "-" if limit is None else ("yes" if got.run.seconds <= max(1.1 * limit, limit + 1) else "NO")
    return f"| {name} | {tool} | {ratio} | {got.run.seconds:.2f} | {in_time} | {engine} | {got.run.rss_mib:.0f} | {status} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--kill-after", type=float, default=300.0, help="seconds after which a process is killed")
    ap.add_argument("--only", nargs="*", help="instances (default S_1 s1-62k s1-1m short-1m; also s1-18.7k somas-10k)")
    ap.add_argument("--tools", nargs="*", default=["auto", "greedy_by_size", "supermalloc", "idealloc"])
    ap.add_argument("-o", "--output")
    args = ap.parse_args(argv)
    binary = os.environ.get("IDEALLOC_BIN")
    lines = e2e.header(sys.argv, f"Minimize the peak, limit T = {args.time_limit:g} s for optplan and SuperMalloc; "
                                 f"processes killed {args.kill_after:g} s after their start. idealloc: "
                                 + (binary or "no IDEALLOC_BIN, not run"))
    lines += ["| instance | tool | peak / load bound | wall s end to end | within max(1.1 T, T + 1 s) | tool's own s | "
              "peak RSS MiB | status |", "| --- " * 8 + "|"]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in _instances(Path(tmp), args.only):
            n, bound = _load_bound(path)
            lines.append(f"| **{name}** ({n:,} buffers, load bound {bound}) | | | | | | | {e2e.uptime()} |")
            print(lines[-1], flush=True)
            for tool in args.tools:
                if tool == "auto":
                    got = e2e.optplan(path, capacity=None, objective="min-peak", time_limit=args.time_limit,
                                      grace=args.kill_after - args.time_limit)
                elif tool == "idealloc":
                    if not binary:
                        continue
                    got = _idealloc(binary, path, args.kill_after)
                else:
                    got = e2e.omnimalloc(path, tool, args.time_limit, kill_after=args.kill_after)
                limit = args.time_limit if tool in ("auto", "supermalloc") else None
                lines.append(_row(name, "optplan auto" if tool == "auto" else tool, got, bound, limit))
                print(lines[-1], flush=True)
    lines += ["", f"uptime after: {e2e.uptime()}"]
    print(lines[-1], flush=True)
    if args.output:
        Path(args.output).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
