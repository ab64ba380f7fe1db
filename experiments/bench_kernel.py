"""The search kernel beside an earlier version of itself: node counts and node rates, interleaved.

    python experiments/bench_kernel.py [--before 4ab7e55] [--nodes 200000] [--repeat 3] [-o experiments/results/kernel.md]

The kernel of ``--before`` is read from git and compiled into a temporary numba cache (that
compile is not timed). Each ordering of each instance runs the same decision at capacity 1 MiB
with the same node limit and a fresh failed-state table in both kernels, before and after in
turn, ``--repeat`` times; the best rate of each is kept (the machine is shared: the best run is
the least disturbed). Identical node counts say that the two kernels search the same tree.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
from gen_instances import instance
from instances import ROOT, find

from optplan.formats import read_problem, write_text
from optplan.search import engine, kernel
from optplan.search.instance import build
from optplan.search.layout import table_words
from optplan.search.orderings import orderings
from optplan.search.params import ALL_RULES

CAPACITY = 1048576


def old_kernel(commit: str) -> types.ModuleType:
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:optplan/search/kernel.py"], check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="optplan_old_kernel_")) / "old_search_kernel.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_search_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_search_kernel"] = mod  # numba looks its globals up by module name
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def run(fn, args: tuple, n: int, nodes: int, words: int, seed: int) -> tuple[int, int, float]:
    table = np.zeros(2 + 2 * (1 << 18), np.int64)
    info = np.iinfo(np.int64)
    zob = np.random.default_rng(seed).integers(info.min, info.max, size=(2, words), dtype=np.int64, endpoint=True)
    out = np.zeros(n, np.int64)
    t0 = time.perf_counter()
    status, count = fn(*args, np.int64(CAPACITY // 1024), np.int64(nodes), np.zeros(1, np.int64), out, table, zob)
    return int(status), int(count), time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="4ab7e55")
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--orderings", type=int, default=3, help="first k orderings of each instance")
    ap.add_argument("--generated", nargs="*", default=["guillotine:1:2", "pinwheel:2:3"],
                    help="generated instances as FAMILY:FIRST:END seeds (the tuning family)")
    ap.add_argument("--no-challenging", action="store_true", help="leave out minimalloc A-E")
    ap.add_argument("-o", "--output")
    args = ap.parse_args(argv)
    lines = ["```", "python " + " ".join(shlex.quote(a) for a in sys.argv), "```", ""]
    t0 = time.perf_counter()
    old = old_kernel(args.before)
    engine.ensure_compiled()
    probs = [] if args.no_challenging else [(f.stem.split(".")[0], read_problem(f)) for f in find(["minimalloc"], list("ABCDE"))]
    for spec in args.generated:
        fam, first, end = spec.split(":")
        probs += [(f"{fam}-{s}", instance(fam, s)) for s in range(int(first), int(end))]
    compiled = False
    lines.append(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    lines += ["", "| instance | ordering | status | nodes before | nodes after | nodes/s before | nodes/s after | after / before |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    ratios = []
    for name, problem in probs:
        inst = build(problem, problem.memories[0].name, list(problem.units))
        for o in orderings(inst)[: args.orderings]:
            a = o.arrays
            words = table_words(inst.n, inst.nsec)
            old_args = (a, ALL_RULES) if hasattr(old, "Rules") else tuple(a)  # before the rules switches: no rules
            new_args = (a, ALL_RULES)
            if not compiled:  # compile both outside the timings
                run(old.search, old_args, inst.n, 10, words, 0)
                compiled = True
            best = {"before": 0.0, "after": 0.0}
            counts = {}
            for _ in range(args.repeat):
                for label, fn, fargs in (("before", old.search, old_args), ("after", kernel.search, new_args)):
                    status, count, secs = run(fn, fargs, inst.n, args.nodes, words, 1)
                    best[label] = max(best[label], count / secs)
                    counts[label] = (status, count)
            r = best["after"] / best["before"]
            ratios.append(r)
            st = {0: "INFEASIBLE", 1: "FOUND", 2: "LIMIT"}[counts["after"][0]]
            row = (f"| {name} | {o.name} | {st} | {counts['before'][1]} | {counts['after'][1]} | {best['before']:.0f} | "
                   f"{best['after']:.0f} | {r:.3f} |")
            lines.append(row)
            print(row, flush=True)
    ratios.sort()
    lines += ["", f"after / before node rate: median {ratios[len(ratios) // 2]:.3f}, min {ratios[0]:.3f}, max {ratios[-1]:.3f} "
              f"over {len(ratios)} orderings",
              f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; wall time {time.perf_counter() - t0:.0f} s"]
    print("\n".join(lines[-2:]))
    if args.output:
        write_text(args.output, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
