"""The static orderings the search tries, the restart orderings, and each ordering's failed-state table.

The ordering decides most of a decision's run time (``engine``): hard-to-fit units first, by several
measures, each with and without the forced-section rule, then random restart orderings. An
ordering's table and random words are built on its first run and kept for its later ones.
"""

from __future__ import annotations

import numpy as np

from optplan.core.load import live_load
from optplan.search.compiled import kernels
from optplan.search.instance import Instance, Ordered
from optplan.search.layout import table_words

RESTART_SEEDS = 1 << 20  # restart orderings' table seeds start here (the fixed orderings' are their index)
NO_TABLE = (np.zeros(0, np.int64), np.zeros((2, 0), np.int64))


def section_totals(inst: Instance) -> np.ndarray:
    """Per unit, the highest live load (pieces) over its span (a sparse table of range maxima:
    linear-time per unit slicing is too slow at tens of thousands of units). Kept on ``inst``."""
    if inst.totals is None:
        inst.totals = _section_totals(inst)
    return inst.totals


def _section_totals(inst: Instance) -> np.ndarray:
    if inst.n == 0:
        return np.zeros(0, np.int64)
    table = [live_load(inst.ps0, inst.ps1, inst.ph, inst.nsec) if inst.nsec else np.zeros(1, np.int64)]
    while (1 << len(table)) <= len(table[0]):
        prev, h = table[-1], 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-h], prev[h:]))
    k = np.floor(np.log2(np.maximum(inst.s1 - inst.s0, 1))).astype(np.int64)
    total = np.empty(inst.n, np.int64)
    for j in np.unique(k):
        sel = k == j
        total[sel] = np.maximum(table[j][inst.s0[sel]], table[j][inst.s1[sel] - (1 << int(j))])
    return total


def orderings(inst: Instance, seed: int = 0) -> list[Ordered]:
    """The portfolio: buffers that are hard to fit first, by several measures, plus random ones,
    each followed by its twin without the forced-section rule.
    An ordering equal to an earlier one is left out (on a perfect packing every unit's ``total``
    is the capacity, so "total" is "width"). Each one's arrays are built on its first run."""
    n = inst.n
    size = inst.size
    width = inst.end - inst.start
    total = section_totals(inst)
    area = inst.area
    out = []
    if (inst.hint >= 0).any():
        hint = np.where(inst.hint >= 0, inst.hint, np.iinfo(np.int64).max)
        out.append(("hint", np.lexsort((-size, hint))))
    out += [
        ("total", np.lexsort((-size, -width, -total))),
        ("width", np.lexsort((-size, -width))),
        ("start", np.lexsort((-size, inst.start))),
        # total, area, width: one of MiniMalloc's default preorderings (Moffitt, ASPLOS 2023)
        ("taw", np.lexsort((-width, -area, -total))),
        ("area", np.lexsort((-size, -area))),
    ]
    rng = np.random.default_rng(seed)
    out += [(f"random{k}", rng.permutation(n)) for k in range(3)]
    # the kernel tries candidates lowest offset first, ties by rank: with the hatless cut-off this beat trying them
    # by rank alone on every minimalloc instance (measured per ordering, node limit 200k)
    ords: list[Ordered] = []
    seen: set[bytes] = set()
    for name, perm in out:
        perm = np.asarray(perm, np.int64)
        if perm.tobytes() not in seen:
            seen.add(perm.tobytes())
            ords.append(Ordered(inst, name, perm))
    # every ordering twice, with the forced-section rule and without it: the rule decides which branch comes first,
    # and where it misleads, the same ordering without it packs at once (perturbed-1: taw 3k nodes without it, nothing
    # in 1M with it). tune_search at 400k nodes, 420 generated instances, against twins for the first ordering only:
    # packed 312 -> 324 (perturbed 62 -> 73 of 140, cuts 250 -> 251 of 280), 1.03-1.25x the nodes on those both packed
    # A twin runs only where its ordering's runs have branched on a forced section (else it would repeat them node for
    # node: minimalloc C at 1 MiB, where none does, 99,404 -> 51,386 nodes; engine._decide).
    ords = [t for o in ords for t in (o, o.unforced())]
    for k, o in enumerate(ords):
        o.seed = (seed, k)
    return ords


def fresh(inst: Instance, seed: int, k: int) -> Ordered:
    """The ``k``-th restart ordering: widest first with each width scaled by a random factor in
    [0.7, 1.3] (ties: larger first). A decision's run time is heavy-tailed in the ordering: on
    generated instances the fixed portfolio ran 10M nodes without a plan where one of 16 such
    orderings found it in 8k (experiments/tune_search.py). Every other restart runs without the
    forced-section rule: it changes which branch comes first, and the tail is heavy in that too
    (guillotine-36: nothing in 200k nodes under any of 15 orderings with it, 260 nodes without it)."""
    rng = np.random.default_rng((seed, k))
    width = (inst.end - inst.start) * rng.uniform(0.7, 1.3, inst.n)
    o = Ordered(inst, f"restart{k}", np.lexsort((-inst.size, -width)).astype(np.int64))
    o.seed = (seed, RESTART_SEEDS + k)
    o.forced = k % 2 == 0
    return o


def table_of(o: Ordered, slots: int, nodes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ordering's failed-state table and its random words, allocated on first use in this
    process and kept for its later runs (restarts, other capacities: the key includes the
    capacity), in whichever worker thread runs the ordering. ``slots``: at most this many
    (``SearchParams.table_slots``; < 2: no table); ``nodes``: the next run's budget, which sizes the table
    (twice as many slots, at least 1024), the keys moving into a larger one as budgets grow:
    a large table costs a page fault per page a short run touches. The random words come from the
    ordering's seed: they decide which failures a full bucket forgets, so fresh ones per run would
    make node counts (and plans found) vary between runs."""
    if slots < 2:
        return NO_TABLE
    want = 1 << (slots.bit_length() - 1)  # a power of two
    if nodes is not None:
        want = min(want, 1 << max(10, int(2 * nodes - 1).bit_length()))
    if o.table is None or o.zob is None:
        info = np.iinfo(np.int64)
        words = table_words(len(o.perm), int(o.arrays.nsec))
        o.zob = np.random.default_rng(o.seed).integers(info.min, info.max, size=(2, words), dtype=np.int64, endpoint=True)
    if o.table is None or o.table.shape[0] < 2 + 2 * want:
        table = np.zeros(2 + 2 * want, np.int64)
        if o.table is not None:
            kernels.move_table(o.table, table)
        o.table = table
    return o.table, o.zob
