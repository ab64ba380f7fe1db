"""Instances with a known optimum, in the units of MiniMalloc's challenging suite.

    python experiments/gen_instances.py guillotine 7 -o /tmp/g7.csv    # one instance as a CSV (rows in a fair order)

Sizes are multiples of 1 KiB and the capacity is 1 MiB (``UNIT`` x ``CELLS``); 100-300 buffers.

* ``guillotine``: a capacity x makespan rectangle (address x time) cut recursively in two by
  straight cuts, each piece a buffer. The pieces tile the rectangle, so the live load is the
  capacity at every time step and the optimum is exactly the capacity (a perfect packing).
* ``pinwheel``: the same, but a rectangle may also be cut into a centre and four blades turning
  around it (no straight cut separates any of them), recursively; the first cut is always one,
  so the whole instance is not guillotine. Optimum: the capacity.
* ``perturbed``: one of MiniMalloc's A-E (read from ``../shared``, never copied) with buffers
  dropped, split (in time or in size) or merged (same lifetime), then sizes rescaled so that the
  peak live load reaches the capacity (to the KiB below). Its optimum is not known: the capacity
  is a lower bound only when the load reaches it, and a plan at the capacity may not exist.

OmniMalloc's tiling and pinwheel sources gave the idea (a tiled rectangle has a known optimum);
this code is written from the description above.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass
from pathlib import Path

from optplan.core.buffer import Buffer, Memory
from optplan.core.problem import Problem

UNIT = 1024  # bytes: sizes are multiples of 1 KiB
CELLS = 1024  # capacity in units: 1 MiB
FAMILIES = ("guillotine", "pinwheel", "perturbed")
SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "minimalloc"


@dataclass(frozen=True)
class Rect:
    """A tile: times [t0, t1) x units [y0, y1)."""

    t0: int
    t1: int
    y0: int
    y1: int

    @property
    def area(self) -> int:
        return (self.t1 - self.t0) * (self.y1 - self.y0)


def _cut_point(rng: random.Random, lo: int, hi: int) -> int:
    """A cut strictly inside (lo, hi), biased away from the ends (thin slivers make trivial buffers)."""
    a = lo + max(1, (hi - lo) // 6)
    b = hi - max(1, (hi - lo) // 6)
    return rng.randint(a, b) if a <= b else rng.randint(lo + 1, hi - 1)


def guillotine_cut(r: Rect, rng: random.Random) -> list[Rect] | None:
    """Two tiles from one straight cut (in time or in address), or None if ``r`` is one cell thick."""
    can_t, can_y = r.t1 - r.t0 >= 2, r.y1 - r.y0 >= 2
    if not (can_t or can_y):
        return None
    if can_t and (not can_y or rng.random() < 0.5):
        t = _cut_point(rng, r.t0, r.t1)
        return [Rect(r.t0, t, r.y0, r.y1), Rect(t, r.t1, r.y0, r.y1)]
    y = _cut_point(rng, r.y0, r.y1)
    return [Rect(r.t0, r.t1, r.y0, y), Rect(r.t0, r.t1, y, r.y1)]


def pinwheel_cut(r: Rect, rng: random.Random) -> list[Rect] | None:
    """A centre and four blades turning around it (each blade runs from one side of the rectangle
    past the centre), or None if ``r`` is under 3 cells in either direction."""
    if r.t1 - r.t0 < 3 or r.y1 - r.y0 < 3:
        return None
    ta = rng.randint(r.t0 + 1, r.t1 - 2)
    tb = rng.randint(ta + 1, r.t1 - 1)
    ya = rng.randint(r.y0 + 1, r.y1 - 2)
    yb = rng.randint(ya + 1, r.y1 - 1)
    return [Rect(r.t0, tb, r.y0, ya),  # bottom blade, from the left side to the centre's right edge
            Rect(tb, r.t1, r.y0, yb),  # right blade, from the bottom to the centre's top
            Rect(ta, r.t1, yb, r.y1),  # top blade, from the centre's left edge to the right side
            Rect(r.t0, ta, ya, r.y1),  # left blade, from the centre's bottom to the top
            Rect(ta, tb, ya, yb)]  # centre


def tile(rng: random.Random, n: int, makespan: int, pinwheel: float, first_pinwheel: bool,
         cells: int = CELLS) -> list[Rect]:
    """Cut the ``makespan`` x ``cells`` rectangle until there are at least ``n`` tiles; each cut
    splits a tile drawn by area, as a pinwheel with probability ``pinwheel`` (when it fits)."""
    tiles = [Rect(0, makespan, 0, cells)]
    first = True
    while len(tiles) < n:
        k = rng.choices(range(len(tiles)), weights=[t.area for t in tiles])[0]
        r = tiles[k]
        wheel = first_pinwheel if first else rng.random() < pinwheel
        parts = (pinwheel_cut(r, rng) if wheel else None) or guillotine_cut(r, rng)
        if parts is None:
            continue
        first = False
        tiles[k:k + 1] = parts
    return tiles


def _problem(name: str, triples: list[tuple[int, int, int]], capacity: int = CELLS * UNIT) -> Problem:
    buffers = tuple(Buffer(str(i), size, start, end) for i, (start, end, size) in enumerate(triples))
    return Problem(buffers, (Memory("mem", capacity=capacity),), metadata={"name": name})


def cut_instance(family: str, seed: int, n: int | None = None, cells: int = CELLS, unit: int = UNIT) -> Problem:
    """A guillotine or pinwheel instance (optimum: the capacity ``cells * unit``) with ``n``
    buffers (default: 100-300, drawn from the seed)."""
    rng = random.Random(f"{family}-{seed}")
    n = rng.randint(100, 300) if n is None else n
    makespan = rng.randint(max(3, n // 2), max(3, 4 * n))
    wheel = 0.0 if family == "guillotine" else rng.uniform(0.3, 0.8)
    tiles = tile(rng, n, makespan, wheel, family == "pinwheel", cells)
    return _problem(f"{family}-{seed}", [(t.t0, t.t1, (t.y1 - t.y0) * unit) for t in tiles], cells * unit)


def random_spans(n: int, seed: int = 0, sizes: int = 1024, life: int = 40) -> Problem:
    """``n`` buffers with random lifetimes (1 to ``life`` steps, starting within the first ``n // 4``)
    and sizes (multiples of 64 B up to ``64 * sizes``), one unbounded memory. No known optimum: the
    shape the time-limit tests and ``bench_load_edge.py`` plan at a given size."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        start = rng.randrange(n // 4)
        out.append(Buffer(f"b{i}", 64 * rng.randint(1, sizes), start, start + rng.randint(1, life)))
    return Problem(tuple(out))


def _read_csv(path: Path) -> list[tuple[int, int, int]]:
    rows = path.read_text().splitlines()[1:]
    out = []
    for row in rows:
        _, lower, upper, size = row.split(",")
        out.append((int(lower), int(upper), int(size)))
    return out


def peak_load(triples: list[tuple[int, int, int]]) -> int:
    events: dict[int, int] = {}
    for start, end, size in triples:
        events[start] = events.get(start, 0) + size
        events[end] = events.get(end, 0) - size
    load = best = 0
    for t in sorted(events):
        load += events[t]
        best = max(best, load)
    return best


def perturb(triples: list[tuple[int, int, int]], rng: random.Random) -> list[tuple[int, int, int]]:
    """Drop, split and merge a few buffers each (5-15 % of them), then scale sizes so that the peak
    live load reaches the capacity (sizes rounded down to whole KiB, at least 1 KiB)."""
    out = list(triples)
    for _ in range(max(1, len(out) * rng.randint(5, 15) // 100)):
        op = rng.choice(("drop", "split-time", "split-size", "merge"))
        k = rng.randrange(len(out))
        start, end, size = out[k]
        if op == "drop" and len(out) > 100:
            out.pop(k)
        elif op == "split-time" and end - start >= 2 and len(out) < 300:
            t = rng.randint(start + 1, end - 1)
            out[k:k + 1] = [(start, t, size), (t, end, size)]
        elif op == "split-size" and size >= 2 * UNIT and len(out) < 300:
            a = rng.randint(1, size // UNIT - 1) * UNIT
            out[k:k + 1] = [(start, end, a), (start, end, size - a)]
        elif op == "merge":
            same = [j for j, b in enumerate(out) if j != k and b[0] == start and b[1] == end]
            if same:
                j = rng.choice(same)
                out[k] = (start, end, size + out[j][2])
                out.pop(j)
    scale = CELLS * UNIT / peak_load(out)
    out = [(s, e, max(UNIT, int(z * scale) // UNIT * UNIT)) for s, e, z in out]
    while peak_load(out) > CELLS * UNIT:  # rounding up the smallest to 1 KiB can overshoot
        k = max(range(len(out)), key=lambda j: out[j][2])
        s, e, z = out[k]
        out[k] = (s, e, z - UNIT)
    return out


def perturbed_instance(seed: int, base: str | None = None) -> Problem:
    """A perturbation of one of A-E (``base``; default: by seed)."""
    rng = random.Random(f"perturbed-{seed}")
    base = base or "ABCDE"[seed % 5]
    triples = perturb(_read_csv(SHARED / f"{base}.1048576.csv"), rng)
    return _problem(f"perturbed-{base}-{seed}", triples)


def instance(family: str, seed: int) -> Problem:
    """The instance ``seed`` of ``family``; its ``metadata['optimum']`` is the capacity for the
    cut families (proven by construction) and absent for ``perturbed``."""
    if family == "perturbed":
        return perturbed_instance(seed)
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; one of {', '.join(FAMILIES)}")
    p = cut_instance(family, seed)
    return Problem(p.buffers, p.memories, metadata={**p.metadata, "optimum": CELLS * UNIT})


def fair_csv(problem: Problem, key: str | None) -> str:
    """``problem`` (one memory, scalar lifetimes) as MiniMalloc's CSV (``id,lower,upper,size``), its
    rows in an order drawn from ``key`` (the same on every run; None: construction order). The
    generators make buffers in construction order, which on a guillotine cut is a perfect packing's
    first-fit order: a tool
    that tries the input's order packs it at once (SuperMalloc proved guillotine-982 and -989 in
    0.03 s as generated, and ended at 1.151 and 1.264 after 20 s with their rows shuffled)."""
    rows = [f"{b.id},{b.start},{b.end},{b.size}\n" for b in problem.buffers]
    if key is not None:
        random.Random(key).shuffle(rows)
    return "id,lower,upper,size\n" + "".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", choices=FAMILIES)
    ap.add_argument("seed", type=int)
    ap.add_argument("-o", "--output", help="CSV file (id,lower,upper,size); default: standard output")
    ap.add_argument("--construction-order", action="store_true",
                    help="rows in the order the buffers were made (default: an order drawn from the instance's name, "
                         "fair to tools that try the input's order: see fair_csv)")
    args = ap.parse_args(argv)
    p = instance(args.family, args.seed)
    text = fair_csv(p, None if args.construction_order else f"{args.family}-{args.seed}")
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
