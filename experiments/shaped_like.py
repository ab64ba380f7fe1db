"""Synthetic instances shaped like a real one (idealloc/S_1 by default), at any size.

    python experiments/shaped_like.py N OUT.csv [--source S_1.csv] [--seed 0]

Each buffer is a row of the source drawn at random (its size and lifetime together, so the
joint distribution of sizes and lifetimes is the source's) and the time axis is stretched by
``N / len(source)``: a buffer starting at step ``s`` with lifetime ``L`` in the source starts
at ``s * k + jitter`` (jitter uniform in ``[0, k)``) and lives ``max(1, round(L * k))`` steps.
So the lifetimes keep their shape relative to the whole run (a buffer saved for the backward
pass still spans the same fraction of it) and the number of buffers alive at once grows with
``N``, as in a deeper model; the lower bound grows about ``k`` times.
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
    k = n / len(rows)
    start = np.floor(pick[:, 0] * k + rng.random(n) * k).astype(np.int64)
    length = np.maximum(1, np.rint((pick[:, 1] - pick[:, 0]) * k)).astype(np.int64)
    return np.column_stack([np.arange(n, dtype=np.int64), start, start + length, pick[:, 2]])


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
