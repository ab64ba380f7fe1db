"""Synthetic instances shaped like a real one (idealloc/S_1 by default), at any size.

    python experiments/shaped_like.py N OUT.csv [--source S_1.csv] [--seed 0]

The run is the source's run repeated: ``t = max(1, round(N / len(source)))`` periods one after
the other, each as long as the source's time span, each holding ``N / t`` rows of the source drawn
at random (size, start and lifetime together, so the joint distribution of sizes, starts and
lifetimes within a period is the source's) and shifted to its period. The lifetimes and sizes
are the source's, and so is the number of buffers alive at once (S_1: at most 3,218), as in a
model run for more iterations; the lower bound is about the source's.

Stretching the time axis by ``N / len(source)`` instead (this generator before) multiplied the
lifetimes by that factor and stacked the copies of S_1's 1,610 long-lived buffers that start at
step 0: 112k of the 1M buffers alive at once, which is not S_1's distribution.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "idealloc" / "S_1.csv"


def shaped_like(n: int, source: Path = SOURCE, seed: int = 0) -> np.ndarray:
    """Rows ``(id, lower, upper, size)`` of an ``n``-buffer instance shaped like ``source``."""
    rows = np.loadtxt(source, delimiter=",", skiprows=1, dtype=np.int64, usecols=(1, 2, 3), ndmin=2)
    rng = np.random.default_rng(seed)
    pick = rows[rng.integers(0, len(rows), n)]
    periods = max(1, round(n / len(rows)))
    span = int(rows[:, 1].max() - rows[:, 0].min())
    shift = (np.arange(n, dtype=np.int64) % periods) * span
    return np.column_stack([np.arange(n, dtype=np.int64), pick[:, 0] + shift, pick[:, 1] + shift, pick[:, 2]])


def write_csv(rows: np.ndarray, out: Path) -> None:
    with open(out, "w") as f:
        f.write("id,lower,upper,size\n")
        np.savetxt(f, rows, fmt="%d", delimiter=",")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    write_csv(shaped_like(args.n, args.source, args.seed), args.out)


if __name__ == "__main__":
    main()
