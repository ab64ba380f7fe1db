"""A short limit on a busy machine: does `optplan solve` still write its plan within the limit?

    python experiments/bench_load_edge.py [--buffers 1000] [--time-limit 3] [--busy 0 1 2 3] [--reps 3]
        [-o experiments/results/load_edge.md]

One random problem (``gen_instances.random_spans``: ``--buffers`` buffers, as ``tests/test_jit.py`` plans them), solved by ``auto`` as a
whole process (``e2e.optplan``) with ``--time-limit``, beside ``--busy`` processes that each spin
a core, with the kernels built ahead of time and without any (``OPTPLAN_NO_NATIVE=1`` and an empty
``NUMBA_CACHE_DIR``: a fresh install whose build failed). Per setting: how many runs wrote a plan,
and their wall seconds against the promise max(1.1 T, T + 1 s). The CLI's watchdog ends a run that
would break it with "no plan written" (exit 1).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

import e2e
from gen_instances import random_spans

from optplan.formats import write_problem, write_text


def _spin() -> None:
    while True:
        pass


def run(path: Path, limit: float, native: bool, cache: Path) -> e2e.Solved:
    """One ``optplan solve`` process, with or without compiled kernels."""
    saved = dict(os.environ)
    if not native:
        os.environ.update(OPTPLAN_NO_NATIVE="1", NUMBA_CACHE_DIR=str(cache))
    try:
        return e2e.optplan(path, capacity=None, objective="min-peak", time_limit=limit, grace=10)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--buffers", type=int, default=1000)
    ap.add_argument("--time-limit", type=float, default=3.0)
    ap.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2, 3])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("-o", "--output")
    args = ap.parse_args(argv)
    limit = args.time_limit
    promise = max(1.1 * limit, limit + 1.0)
    lines = e2e.header(sys.argv, f"{args.buffers} buffers, `auto`, limit {limit:g} s (promise: exit by {promise:g} s); "
                                 f"{args.reps} runs per setting.")
    lines += ["| busy processes | kernels | plans written | wall s (each run) | statuses |", "| --- | --- | --- | --- | --- |"]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "p.json")
        write_problem(random_spans(args.buffers, seed=1, sizes=512, life=30), path)  # (tests/test_jit's)
        for busy in args.busy:
            spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(busy)]
            for s in spinners:
                s.start()
            time.sleep(0.5)
            try:
                for native in (True, False):
                    got = [run(path, limit, native, Path(tmp, f"cache-{busy}-{k}")) for k in range(args.reps)]
                    written = sum(g.peak is not None for g in got)
                    lines.append(f"| {busy} | {'built' if native else 'none'} | {written} of {len(got)} | "
                                 f"{' '.join(f'{g.run.seconds:.2f}' for g in got)} | {' '.join(g.status.split()[0] for g in got)} |")
                    print(lines[-1], flush=True)
            finally:
                for s in spinners:
                    s.terminate()
    lines += ["", f"uptime after: {e2e.uptime()}"]
    if args.output:
        write_text(args.output, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
