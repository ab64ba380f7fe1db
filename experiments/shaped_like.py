"""Synthetic instances shaped like real ones (idealloc/S_1 by default), at any size.

    python experiments/shaped_like.py N OUT.csv [--source S_1.csv] [--seed 0]
    python experiments/shaped_like.py 18700 OUT.csv --shape somas|short [--seed 0]

``--shape somas`` and ``--shape short`` are the two other shapes below (``somas_like``,
``short_lived``); every shape is seeded and reproducible.

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


def somas_like(n: int, seed: int = 0) -> np.ndarray:
    """Rows of an ``n``-buffer training step in the style of MindSpore's SOMAS tensor lists
    (idealloc's resnet50 is one: 45 distinct sizes over 1,042 tensors, a few dozen sizes repeated
    hundreds of times): a forward pass over ``L`` layers then a backward pass, one step per layer
    and pass (``2 L + 1`` steps).

    * weights (a tenth): alive the whole step, a few sizes (a layer's parameters in four stages);
    * their gradients (a tenth): from the layer's backward step to the end (the optimizer's);
    * activations (a sixth): from the layer's forward step to its backward step, nested (the
      first produced is freed last), one size per stage, so many equal sizes;
    * workspace (the rest): one to three steps, from a handful of small power-of-two sizes."""
    rng = np.random.default_rng(seed)
    layers = max(4, n // 40)
    steps = 2 * layers + 1
    stage = lambda layer: np.minimum(3, layer * 4 // layers)  # noqa: E731
    n_weight, n_act = n // 10, n // 6
    n_grad = n_weight
    n_work = n - n_weight - n_grad - n_act
    w_layer = rng.integers(0, layers, n_weight)
    weight_size = np.array([2359296, 589824, 147456, 36864])[stage(w_layer)] // np.array([1, 4, 16, 64])[rng.integers(0, 4, n_weight)]
    weights = np.column_stack([np.zeros(n_weight, np.int64), np.full(n_weight, steps), weight_size])
    grads = np.column_stack([steps - 1 - w_layer, np.full(n_weight, steps), weight_size])
    a_layer = rng.integers(0, layers, n_act)
    act_size = np.array([12845056, 6422528, 3211264, 1605632])[stage(a_layer)]
    acts = np.column_stack([a_layer, steps - 1 - a_layer, act_size])
    start = rng.integers(0, steps - 1, n_work)
    work = np.column_stack([start, np.minimum(steps, start + rng.integers(1, 4, n_work)),
                            2 ** rng.integers(8, 14, n_work)])
    rows = np.concatenate([weights, grads[:n_grad], acts, work]).astype(np.int64)
    rows = rows[rng.permutation(len(rows))]
    return np.column_stack([np.arange(len(rows), dtype=np.int64), rows])


def short_lived(n: int, seed: int = 0) -> np.ndarray:
    """Rows of ``n`` small, short-lived buffers (an allocator trace's shape, unlike a model's):
    each lives 1 to 8 steps from a uniform start over ``n / 32`` steps (about 140 alive at once),
    sizes log-uniform from 16 B to 64 KiB, rounded to 16 bytes."""
    rng = np.random.default_rng(seed)
    steps = max(2, n // 32)
    start = rng.integers(0, steps, n)
    end = start + rng.integers(1, 9, n)
    size = np.maximum(16, (np.exp(rng.uniform(np.log(16), np.log(65536), n)).astype(np.int64) // 16) * 16)
    return np.column_stack([np.arange(n, dtype=np.int64), start, end, size])


SHAPES = {"s1": None, "somas": somas_like, "short": short_lived}


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
    ap.add_argument("--shape", choices=list(SHAPES), default="s1", help="s1: like --source (S_1)")
    args = ap.parse_args()
    make = SHAPES[args.shape]
    write_csv(shaped_like(args.n, args.source, args.seed) if make is None else make(args.n, args.seed), args.out)


if __name__ == "__main__":
    main()
