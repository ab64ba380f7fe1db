"""The search kernel's failed-state table: the kernel before it beside the current one, in one run.

    python experiments/bench_search_table.py [--workers 2] [--seconds 120] [-o experiments/results/search_table.md]

The kernel before the table is read from git (commit ffd8b94, optplan/search/kernel.py) and
swapped into the same engine (same orderings, node limits growing fourfold per round, same
minimization loop), so the only difference is the table. Parts:

1. minimalloc A-E, objective "feasible" at capacity 1048576: seconds and nodes to a plan.
2. every ordering alone on A-E at capacity 1048576 for a fixed node budget: nodes/s, and the
   table's hits per node (where it does not prune, nodes/s shows what the hashing costs).
3. minimalloc D, "min-peak" for ``--seconds``: best peak at 60 s and at the end, and when the
   best peak first reached 1011 and 1008 KiB-units (1035264 and 1032192 bytes).

numba compile/load time is not counted; the load average is printed (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
import types
from pathlib import Path

import numpy as np
from bench_kernel import old_kernel  # the kernel of a past commit, compiled apart

from optplan.core.bounds import lower_bounds
from optplan.core.deadline import Deadline
from optplan.core.objective import Objective
from optplan.formats import read_problem, write_text
from optplan.search import engine, kernel
from optplan.search.compiled import kernels as search_kernels
from optplan.search.instance import build
from optplan.search.layout import table_words
from optplan.search.orderings import orderings, table_of
from optplan.search.params import ALL_RULES, SearchParams
from optplan.search.state import move_table

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "benchmarks" / "minimalloc"
BEFORE = "ffd8b94"  # the last commit whose kernel has no table
CAPACITY = 1048576
MARKS = (1011, 1008)  # D's best peaks in units of 1024 bytes (bound 963)


class Counting:
    """Stands in for the kernel module in the engine: counts the table's hits and stores."""

    def __init__(self, search) -> None:
        self._search = search
        self.hits = self.stores = 0
        self.FOUND, self.INFEASIBLE, self.LIMIT = kernel.FOUND, kernel.INFEASIBLE, kernel.LIMIT
        self.table_words, self.move_table = table_words, move_table

    def search(self, *args):
        table = args[-2]
        before = (int(table[0]), int(table[1])) if len(table) else (0, 0)
        out = self._search(*args)
        if len(table):
            self.hits += int(table[0]) - before[0]
            self.stores += int(table[1]) - before[1]
        return out


def kernels(old: types.ModuleType) -> dict[str, tuple[Counting, int]]:
    """name -> (engine kernel stand-in, table slots)."""
    return {"before (no table)": (Counting(lambda *a: old.search(*a[0], *a[2:-2])), 0),  # its flat arguments
            "table": (Counting(kernel.search), SearchParams().table_slots)}


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def instance(name: str):
    p = read_problem(SHARED / f"{name}.1048576.csv").with_capacity(CAPACITY)
    inst = build(p, p.memory_names[0], list(p.units))
    return p, inst, lower_bounds(p).lower[p.memory_names[0]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=120.0, help="min-peak time on D")
    ap.add_argument("--feasible-seconds", type=float, default=60.0)
    ap.add_argument("--budget", type=int, default=100_000, help="nodes per ordering in part 2")
    ap.add_argument("-o", "--output")
    args = ap.parse_args(argv)

    lines = ["```", "python " + " ".join(shlex.quote(a) for a in sys.argv), "```", ""]

    def out(*rows: str) -> None:
        lines.extend(rows)
        print("\n".join(rows), flush=True)

    t_all = time.perf_counter()
    old = old_kernel(BEFORE)
    engine.ensure_compiled()
    inst0 = instance("A")[1]
    for o in orderings(inst0)[:1]:  # compile the old kernel outside the timings
        old.search(*o.arrays, np.int64(1 << 40), np.int64(10), np.zeros(1, np.int64), np.zeros(inst0.n, np.int64))
    ks = kernels(old)
    out(f"{os.cpu_count()} cores shared with other sessions; load average before: {load()}; {args.workers} workers; "
        f"kernel before the table: git {BEFORE}", "")

    out("## 1. A plan at capacity 1048576 (objective feasible)", "",
        "| instance | kernel | status | seconds | nodes | nodes/s | table hits | ratio s (before / table) | ratio nodes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in "ABCDE":
        _, inst, lower = instance(name)
        got = {}
        for label, (k, slots) in ks.items():
            engine.kernels = k  # type: ignore[assignment]
            h0 = k.hits
            t0 = time.perf_counter()
            ans = engine.solve(inst, CAPACITY, lower, Objective.parse("feasible"), Deadline(args.feasible_seconds), args.workers,
                               params=SearchParams(table_slots=slots))
            sec = time.perf_counter() - t0
            status = "plan" if ans.offsets is not None else ("infeasible" if ans.infeasible else "time limit")
            got[label] = (sec, ans.stats.nodes)
            ratio = ""
            if label == "table":
                (s_old, n_old), (s_new, n_new) = got["before (no table)"], got["table"]
                ratio = f"{s_old / s_new:.2f} | {n_old / max(n_new, 1):.2f}"
            else:
                ratio = " | "
            hits = "-" if slots == 0 else (f"{k.hits - h0} (worker 0 only)" if args.workers > 1 else str(k.hits - h0))
            out(f"| {name} | {label} | {status} | {sec:.2f} | {ans.stats.nodes} | {ans.stats.rate:.0f} | {hits} | {ratio} |")
    engine.kernels = search_kernels

    out("", f"## 2. Every ordering alone, {args.budget} nodes at capacity 1048576 (one process)", "",
        "| instance | kernel | nodes | seconds | nodes/s | hits per node | ratio nodes/s (table / before) |",
        "| --- | --- | --- | --- | --- | --- | --- |")
    for name in "ABCDE":
        _, inst, _ = instance(name)
        cap = np.int64(inst.scaled_capacity(CAPACITY))
        ords = orderings(inst)
        res = {}
        for label, (k, slots) in ks.items():
            nodes = hits = 0
            sec = 0.0
            for o in ords:
                table = table_of(o, slots)
                h0 = int(table[0][0]) if len(table[0]) else 0
                t0 = time.perf_counter()
                _, nn = k._search(o.arrays, ALL_RULES, cap, np.int64(args.budget), np.zeros(1, np.int64),
                                  np.zeros(inst.n, np.int64), *table)
                sec += time.perf_counter() - t0
                nodes += nn
                hits += (int(table[0][0]) - h0) if len(table[0]) else 0
            res[label] = nodes / sec
            ratio = f"{res['table'] / res['before (no table)']:.2f}" if label == "table" else ""
            out(f"| {name} | {label} | {nodes} | {sec:.2f} | {nodes / sec:.0f} | "
                f"{'-' if slots == 0 else f'{hits / nodes:.3f}'} | {ratio} |")

    out("", f"## 3. minimalloc D, min-peak for {args.seconds:.0f} s ({args.workers} workers)", "",
        "| kernel | best peak at 60 s | best peak at end | bound | first reached " +
        " | ".join(f"<= {m * 1024}" for m in MARKS) + " | nodes |",
        "| --- | --- | --- | --- | " + " | ".join("---" for _ in MARKS) + " | --- |")
    _, inst, lower = instance("D")
    for label, (k, slots) in ks.items():
        engine.kernels = k  # type: ignore[assignment]
        trace: list[tuple[float, int]] = []

        def progress(info: dict) -> None:
            if info["best"] is not None:
                trace.append((info["elapsed"], info["best"]))

        ans = engine.solve(inst, CAPACITY, lower, Objective.parse("min-peak"), Deadline(args.seconds), args.workers, progress=progress,
                           params=SearchParams(table_slots=slots))
        at60 = min((p for t, p in trace if t <= 60), default=None)
        firsts = []
        for m in MARKS:
            t = next((t for t, p in trace if p <= m * 1024), None)
            firsts.append("-" if t is None else f"{t:.1f} s")
        out(f"| {label} | {at60} | {ans.peak} | {ans.bound} | " + " | ".join(firsts) + f" | {ans.stats.nodes} |")
    engine.kernels = search_kernels
    out("", f"load average after: {load()}; wall time {time.perf_counter() - t_all:.0f} s")
    if args.output:
        write_text(args.output, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
