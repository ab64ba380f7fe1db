"""Search effort in nodes (load-independent): the engine's decision at 1 MiB on generated instances.

    python experiments/tune_search.py [--families guillotine pinwheel] [--seeds 0:40] [--nodes 2000000] [--jobs 2]
        [--param first_limit=500 ...]

Each instance runs the ``search`` planner (objective ``feasible``, so time parts and orderings as a
user gets them) under a deterministic deadline of ``--nodes`` nodes, so the figures are node counts,
the same on every run and machine. Prints one
line per instance and a summary: solved, and node quantiles (unsolved count as over the limit).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

from bench_robust import quantile
from gen_instances import FAMILIES, instance

from optplan.registry import solve
from optplan.search import engine
from optplan.search.params import DEFAULTS, SearchParams


def one(args: tuple[str, int, int, SearchParams]) -> tuple[str, int, int, str, int, str, float]:
    family, seed, nodes, params = args
    p = instance(family, seed)
    t0 = time.process_time()
    plan = solve(p, "search", time_limit=nodes / params.nodes_per_second, deterministic=True, objective="feasible",
                 params=params)
    status = "found" if plan.found else plan.status.value.lower() if plan.status.value == "INFEASIBLE" else "limit"
    return (family, seed, len(p.buffers), status, int(plan.stats["nodes"]), ",".join(plan.stats["winning_orderings"]),
            time.process_time() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", nargs="+", default=["guillotine", "pinwheel"], choices=FAMILIES)
    ap.add_argument("--seeds", default="0:40")
    ap.add_argument("--nodes", type=int, default=2_000_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--param", action="append", default=[], metavar="FIELD=VALUE",
                    help="a SearchParams field to change (numbers only), e.g. first_limit=500")
    args = ap.parse_args(argv)
    a, b = (int(x) for x in args.seeds.split(":"))
    params = replace(DEFAULTS, **{k: type(getattr(DEFAULTS, k))(v) for k, v in (x.split("=", 1) for x in args.param)})
    tasks = [(f, s, args.nodes, params) for f in args.families for s in range(a, b)]
    engine.ensure_compiled()
    rows = []
    with ProcessPoolExecutor(args.jobs) as pool:
        for row in pool.map(one, tasks):
            rows.append(row)
            f, s, n, status, nodes, win, cpu = row
            print(f"{f}-{s} n={n} {status} nodes={nodes} cpu={cpu:.1f}s {win}", flush=True)
    for fam in args.families + ["all"]:
        rs = [r for r in rows if fam in ("all", r[0])]
        solved = [r for r in rs if r[3] != "limit"]
        eff = [r[4] if r[3] != "limit" else math.inf for r in rs]
        print(f"{fam}: solved {len(solved)}/{len(rs)}  median nodes {quantile(eff, .5):.0f}  p90 {quantile(eff, .9):.0f}  "
              f"total cpu {sum(r[6] for r in rs):.0f}s")
    print("unsolved:", " ".join(f"{r[0]}-{r[1]}" for r in rows if r[3] == "limit"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
