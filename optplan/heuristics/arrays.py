"""A problem's units as flat arrays: what the packing kernels read, and what the orders sort.

Built once per problem and kept weakly (``arrays``): every heuristic of a run, and every pass of
one, reads the same arrays instead of a million ``Unit`` objects. The kernels
(``tree_packer``, ``skyline``, ``recycle_heap``) take them as one named tuple, ``Units``, as the
search's kernel takes its ``Arrays``; the rest of this module turns their answers (an offset and
a memory index per unit) back into placements and objective values. Nothing here imports numba.
"""

from __future__ import annotations

import itertools
import weakref
from collections import namedtuple
from collections.abc import Mapping, Sequence

import numpy as np

from optplan.core.columns import distinct, gc_paused
from optplan.core.objective import Objective
from optplan.core.plan import Layout, Placement
from optplan.core.problem import Problem
from optplan.core.units import Unit

NONE = np.iinfo(np.int64).max  # the kernels' "no capacity", "no fixed offset", "nothing found"

Units = namedtuple("Units", ["p_ptr", "p_l", "p_r", "p_y0", "p_y1", "low", "high", "top", "fixed", "m_ptr", "m_mem",
                             "m_mod", "m_res", "capacity", "start", "end"])
Units.__doc__ = """The kernels' view of ``Arrays``: unit u's pieces are ``p_ptr[u]:p_ptr[u + 1]`` (time slots
``[p_l, p_r)``, bytes ``[p_y0, p_y1)`` above its root), its memories ``m_ptr[u]:m_ptr[u + 1]`` (index
``m_mem``, root offset = ``m_res`` mod ``m_mod`` there); ``low``/``high``/``top`` its extent and top above
the root, ``fixed`` its fixed root offset (``NONE``: none), ``start``/``end`` its lifetime; ``capacity``
per memory (-1: none)."""


class Arrays:
    """A problem's units as flat arrays for the kernels and the orders (built once per problem,
    kept weakly): pieces in unit order, slots of the time index, per-unit fields."""

    def __init__(self, problem: Problem) -> None:
        self.problem = weakref.ref(problem)
        n = problem.unit_count
        self._index: dict[int, int] | None = None
        names = problem.memory_names
        if problem.columns.plain:
            counts = self._from_columns(problem)
        else:
            counts = self._from_units(problem)
        self.capacity = np.array([-1 if m.capacity is None else m.capacity for m in problem.memories], np.int64)
        self.names = names
        self.root_rank: np.ndarray | None = None  # ``root_rank``, on first use
        self.times = times = distinct(np.concatenate([self.p_t0, self.p_t1]))  # slot k: [times[k], times[k + 1])
        size = 1
        while size < max(len(times) - 1, 1):
            size *= 2
        self.size = size
        self.p_l = np.searchsorted(times, self.p_t0).astype(np.int64)
        self.p_r = np.searchsorted(times, self.p_t1).astype(np.int64)
        # per unit, as the orders read them: lifetime span (0, 0 if it stores nothing) and area
        sized = counts > 0
        first = self.p_ptr[:-1][sized]
        self.start = np.zeros(n, np.int64)
        self.end = np.zeros(n, np.int64)
        self.area = np.zeros(n, np.int64)
        if len(first):
            self.start[sized] = np.minimum.reduceat(self.p_t0, first)
            self.end[sized] = np.maximum.reduceat(self.p_t1, first)
            spans, heights = self.p_t1 - self.p_t0, self.p_y1 - self.p_y0
            rough = np.add.reduceat(spans.astype(np.float64) * heights, first)
            if rough.max() >= 2.0**62:  # int64 products would wrap: areas only order units, floats do
                self.area = self.area.astype(np.float64)
                self.area[sized] = rough
            else:
                self.area[sized] = np.add.reduceat(spans * heights, first)

    @property
    def index(self) -> dict[int, int]:
        """``id(unit)`` -> its index in ``problem.units`` (made on first use: the orders are index
        arrays, and a problem read from columns makes its units only when asked)."""
        if self._index is None:
            problem = self.problem()
            assert problem is not None  # (kept weakly by the cache, while the problem lives)
            self._index = {id(u): i for i, u in enumerate(problem.units)}
        return self._index

    @property
    def units(self) -> Units:
        """The arrays the kernels read, as one named tuple."""
        return Units(self.p_ptr, self.p_l, self.p_r, self.p_y0, self.p_y1, self.low, self.high, self.top, self.fixed,
                     self.m_ptr, self.m_mem, self.m_mod, self.m_res, self.capacity, self.start, self.end)

    def _from_columns(self, problem: Problem) -> np.ndarray:
        """The fields of plain units (one per buffer, one piece if it has bytes, any memory) from
        the problem's columns, without a pass over the units."""
        cols, n, k = problem.columns, len(problem.buffers), len(problem.memories)
        counts = (cols.size > 0).astype(np.int64)
        self.p_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=self.p_ptr[1:])
        held = counts > 0
        self.p_t0, self.p_t1 = cols.start[held], cols.end[held]
        self.p_y0, self.p_y1 = np.zeros(int(held.sum()), np.int64), cols.size[held]
        self.low, self.high, self.top = np.zeros(n, np.int64), cols.size.copy(), cols.size.copy()
        self.fixed = np.full(n, NONE, np.int64)
        self.m_ptr = np.arange(0, k * (n + 1), k, dtype=np.int64)
        self.m_mem = np.tile(np.arange(k, dtype=np.int64), n)
        self.m_mod = np.lcm(cols.alignment[:, None], np.array([m.alignment for m in problem.memories], np.int64)).ravel()
        self.m_res = np.zeros(k * n, np.int64)
        return counts

    def _from_units(self, problem: Problem) -> np.ndarray:
        """The fields of any units (several pieces, relative members, fixed offsets, a subset of
        the memories), read from ``problem.units``."""
        units, n = problem.units, len(problem.units)
        mem_of = {m: i for i, m in enumerate(problem.memory_names)}
        counts = np.fromiter((len(u.pieces) for u in units), np.int64, n)
        self.p_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=self.p_ptr[1:])
        pa = np.fromiter((x for u in units for p in u.pieces for x in p), np.int64, 4 * int(self.p_ptr[-1]))
        pa = pa.reshape(-1, 4)
        self.p_t0, self.p_t1 = pa[:, 0].copy(), pa[:, 1].copy()
        self.p_y0, self.p_y1 = pa[:, 2].copy(), pa[:, 3].copy()
        self.low = np.fromiter((u.low for u in units), np.int64, n)
        self.high = np.fromiter((u.high for u in units), np.int64, n)
        self.top = np.fromiter((u.top for u in units), np.int64, n)
        self.fixed = np.fromiter((NONE if u.fixed_offset is None else u.fixed_offset for u in units), np.int64, n)
        self.m_ptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.fromiter((len(u.memories) for u in units), np.int64, n), out=self.m_ptr[1:])
        ma = np.fromiter((x for u in units for m in u.memories for x in (mem_of[m], *u.modulus[m])), np.int64,
                         3 * int(self.m_ptr[-1])).reshape(-1, 3)
        self.m_mem, self.m_mod, self.m_res = ma[:, 0].copy(), ma[:, 1].copy(), ma[:, 2].copy()
        return counts


_CACHE: weakref.WeakKeyDictionary[Problem, Arrays] = weakref.WeakKeyDictionary()


def arrays(problem: Problem) -> Arrays:
    """``problem``'s arrays, built on first use and kept while the problem lives."""
    a = _CACHE.get(problem)
    if a is None:
        a = _CACHE[problem] = Arrays(problem)
    return a


def indices(problem: Problem, order: Sequence[Unit] | Sequence[int] | np.ndarray) -> np.ndarray:
    """``order`` (units, or indices into ``problem.units``) as an index array, the units with a
    fixed offset first (they cannot move out of anyone's way; ``packer.fixed_first``)."""
    a = arrays(problem)
    if len(order) and isinstance(order[0], Unit):
        idx = np.fromiter((a.index[id(u)] for u in order), np.int64, len(order))  # type: ignore[arg-type]
    else:
        idx = np.asarray(order, dtype=np.int64)
    pinned = a.fixed[idx] != NONE
    return np.concatenate([idx[pinned], idx[~pinned]]) if pinned.any() else idx


def placements(problem: Problem, off: np.ndarray, where: np.ndarray, only: np.ndarray | None = None) -> Mapping[str, Placement]:
    """The placements of the units (all, or the indices ``only``) at ``off`` in memories ``where``:
    the arrays themselves (``Layout``) when every buffer is a unit of its own and all are placed."""
    names = arrays(problem).names
    if problem.columns.plain and only is None:
        return Layout(problem.columns.ids, names, where, off)
    with gc_paused():
        if problem.columns.plain:  # a unit per buffer, in buffer order
            ids = problem.columns.ids
            if only is not None:
                ids, off, where = [ids[i] for i in only.tolist()], off[only], where[only]
            return dict(zip(ids, map(Placement, map(names.__getitem__, where.tolist()), off.tolist())))
        out = {}
        units = problem.units if only is None else [problem.units[i] for i in only.tolist()]
        if only is not None:
            off, where = off[only], where[only]
        for u, o, w in zip(units, off.tolist(), where.tolist()):
            memory = names[w]
            for bid, rel in u.members:
                out[bid] = Placement(memory, o + rel)
        return out


def value(problem: Problem, off: np.ndarray, where: np.ndarray, objective: Objective) -> int:
    """``objective``'s value of the plan with every unit at ``off`` in memory ``where``, as
    ``Objective.value`` reads it from the placements (which need not be built to compare plans)."""
    a = arrays(problem)
    stored = np.diff(a.p_ptr) > 0
    weights = objective.weights(problem)
    weighted = 0
    for k, m in enumerate(a.names):
        here = where == k
        tops = (off + a.top)[here & stored]  # unit top: its highest byte + 1 above the root
        weighted += weights[m] * (int(tops.max()) if len(tops) else 0)
    lost = 0
    if objective.counts_benefit and len(a.names) > 1:
        tiers = objective.tier_weights(problem)
        gains = [u.gain for u in problem.units]
        for k, m in enumerate(a.names):
            lost += tiers[m] * sum(itertools.compress(gains, (where == k).tolist()))
    return objective.combine(problem, weighted, lost)


def root_rank(problem: Problem) -> np.ndarray:
    """Each unit's rank among the units' root ids (string order), for orders that break ties by id."""
    a = arrays(problem)
    if a.root_rank is None:
        roots = [u.root for u in problem.units]
        rank = np.empty(len(roots), np.int64)
        rank[sorted(range(len(roots)), key=roots.__getitem__)] = np.arange(len(roots))
        a.root_rank = rank
    return a.root_rank
