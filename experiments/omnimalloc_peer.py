"""OmniMalloc as a command line tool, for timing it as a process beside optplan's.

    python experiments/omnimalloc_peer.py IN.csv --allocator greedy_by_size|supermalloc
        [--time-limit 60] [--threads 2] [-o PLAN.csv]

Reads MiniMalloc's CSV (``id,lower,upper,size``), minimizes the peak with OmniMalloc's allocator
(no capacity: OmniMalloc has none), optionally writes the plan CSV (``offset`` column), and prints
one JSON line: ``peak``, ``proven`` (the allocator proved its peak optimal) and ``seconds`` (the
allocator alone, from the first allocation object to the plan). OmniMalloc is Apache-2.0,
``pip install omnimalloc`` (optplan's ``peers`` extra); it is not part of optplan.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--allocator", default="greedy_by_size")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-o", "--output")
    ap.add_argument("--memory-gib", type=float, default=12.0, help="address space cap (SuperMalloc grew past 24 GiB on S_1)")
    args = ap.parse_args(argv)
    cap = int(args.memory_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import omnimalloc

    rows = np.loadtxt(args.csv, delimiter=",", skiprows=1, dtype=np.int64, usecols=(1, 2, 3), ndmin=2)
    t0 = time.perf_counter()
    allocs = tuple(omnimalloc.Allocation(id=i, size=int(s), start=int(a), end=int(b))
                   for i, (a, b, s) in enumerate(rows.tolist()))
    proven = False
    if args.allocator == "supermalloc":
        from omnimalloc.allocators.supermalloc import SupermallocAllocator

        result = SupermallocAllocator(timeout=args.time_limit, num_threads=args.threads).solve(allocs)
        placed, proven = result.allocations, bool(result.proved_optimal)
    else:
        placed = omnimalloc.allocate(allocs, args.allocator)
    seconds = time.perf_counter() - t0
    offsets = np.zeros(len(rows), np.int64)
    for a in placed:
        offsets[int(a.id)] = int(a.offset)
    peak = int((offsets + rows[:, 2]).max()) if len(rows) else 0
    if args.output:
        with open(args.output, "w") as f:
            f.write("id,lower,upper,size,offset\n")
            np.savetxt(f, np.column_stack([np.arange(len(rows)), rows, offsets]), fmt="%d", delimiter=",")
    print(json.dumps({"peak": peak, "proven": proven, "seconds": round(seconds, 4)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
