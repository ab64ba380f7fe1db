"""The banked packer of ``banked_greedy`` as kernels: objects in banks, and each object's skyline.

``banked_greedy`` (TensorRT's and TFLite's shared-object allocators) places each unit, by
decreasing size, in the first object of the fastest bank that holds it: one that nobody alive
with it uses (the tree packer's id index of ``tree_packer``, ``_idle``), else one with room above
what is alive in it (``_above``, on the objects' skylines), else a new object above the others.
``banked`` does exactly what ``banked_greedy_reference`` does (the tests compare them) for
problems without pinned units. The kernels (``@kernel``) run as plain Python on small problems
and compiled by numba otherwise (``kernels``, ``compiled``).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from optplan.core.problem import Problem
from optplan.core.units import Unit
from optplan.heuristics.arrays import NONE, arrays
from optplan.heuristics.kernels import kernel, pick
from optplan.heuristics.tree_packer import IDS, _idle, _scratch, _store, layout

SKY_CHUNK = 32  # breakpoints per chunk of an object's skyline

Objects = namedtuple("Objects", ["base", "size", "count"])
Objects.__doc__ = """The objects of every bank: memory i's k-th object (creation order, increasing
offsets) spans bytes ``[base[i, k], base[i, k] + size[i, k])``; ``count[i]`` of them."""


@kernel()
def _move(a, lo, hi, d):
    """Shift ``a[lo:hi]`` by ``d`` places (overlapping)."""
    if d > 0:
        for k in range(hi - 1, lo - 1, -1):
            a[k + d] = a[k]
    elif d < 0:
        for k in range(lo, hi):
            a[k + d] = a[k]


@kernel(inline="always")
def _chunk(g, ci, dm, dr):
    """The start in ``cs`` of chunk ``ci`` (directory position) of object ``g``."""
    return dm[4 * g + 3] if ci == 0 else dr[3 * (dm[4 * g] + ci) + 1]


@kernel(inline="always")
def _sky_find(g, x, dm, dr, cs):
    """The first breakpoint of object ``g`` at a slot >= ``x``: (directory position, position in
    that chunk); (chunks, 0) past the end."""
    d0, nd = dm[4 * g], dm[4 * g + 1]
    if nd < 2:  # one chunk: no directory to read
        lo = nd if nd and cs[dm[4 * g + 3] + 2] <= x else 0
    else:
        lo, hi = 0, nd  # the chunks starting at or before x
        while lo < hi:
            mid = (lo + hi) >> 1
            if dr[3 * (d0 + mid)] <= x:
                lo = mid + 1
            else:
                hi = mid
    if lo == 0:
        return 0, 0
    c = _chunk(g, lo - 1, dm, dr)
    a, b = 0, cs[c]
    while a < b:
        mid = (a + b) >> 1
        if cs[c + 2 + 2 * mid] < x:
            a = mid + 1
        else:
            b = mid
    return (lo, 0) if a == cs[c] else (lo - 1, a)


@kernel(inline="always")
def _sky_before(g, ci, pos, dm, dr, cs):
    """The top just before breakpoint (``ci``, ``pos``) of object ``g`` (0 before the first)."""
    if pos:
        return cs[_chunk(g, ci, dm, dr) + 1 + 2 * pos]
    if ci:
        c = _chunk(g, ci - 1, dm, dr)
        return cs[c + 1 + 2 * cs[c]]
    return 0


@kernel(inline="always")
def _sky_max(g, l, r, dm, dr, cs):
    """The highest top in object ``g`` over slots ``[l, r)`` (0: nothing there).

    An object's skyline is a sorted list of breakpoints (slot, top from that slot on) in chunks
    of 1 to ``ch`` (in ``cs``: its length, its room, then the pairs; the room doubles up to ``ch``,
    so that objects with a few breakpoints stay small). Object g's directory at
    ``dr[3 * dm[4 * g]:]`` holds (first slot, chunk, highest top) per chunk in order
    (``dm[4 * g + 1]`` of them, room for ``dm[4 * g + 2]``; the first chunk also at
    ``dm[4 * g + 3]``): a query over many chunks reads the directory only. A change touches a
    chunk or two, where one sorted array would shift thousands of breakpoints per unit in the
    objects that hold many units (the first objects take most small units: 5,202 of 62k)."""
    d0, nd = dm[4 * g], dm[4 * g + 1]
    if nd < 2:  # one chunk (or none): a sorted array
        c, n = dm[4 * g + 3], cs[dm[4 * g + 3]] if nd else 0
        a, b = 0, n  # the first breakpoint after l
        while a < b:
            mid = (a + b) >> 1
            if cs[c + 2 + 2 * mid] <= l:
                a = mid + 1
            else:
                b = mid
        best = cs[c + 1 + 2 * a] if a else 0
        while a < n and cs[c + 2 + 2 * a] < r:
            best = max(best, cs[c + 3 + 2 * a])
            a += 1
        return best
    ci, pos = _sky_find(g, l + 1, dm, dr, cs)
    best = _sky_before(g, ci, pos, dm, dr, cs)
    while ci < nd:
        if pos == 0 and ci + 1 < nd and dr[3 * (d0 + ci + 1)] <= r:  # the whole chunk is before r
            best = max(best, dr[3 * (d0 + ci) + 2])
        else:
            c = _chunk(g, ci, dm, dr)
            while pos < cs[c]:
                if cs[c + 2 + 2 * pos] >= r:
                    return best
                best = max(best, cs[c + 3 + 2 * pos])
                pos += 1
        ci, pos = ci + 1, 0
    return best


@kernel()
def _sky_top(g, ci, dm, dr, cs):
    """Note chunk ``ci``'s first slot and highest top in object ``g``'s directory."""
    c = _chunk(g, ci, dm, dr)
    top = 0
    for k in range(cs[c]):
        top = max(top, cs[c + 3 + 2 * k])
    e = 3 * (dm[4 * g] + ci)
    dr[e], dr[e + 2] = cs[c + 2], top


@kernel()
def _sky_cut(g, ci, pos, w, dm, dr, cs):
    """Remove ``w`` breakpoints of object ``g`` from (``ci``, ``pos``) on; emptied chunks leave
    the directory."""
    d0 = dm[4 * g]
    while w:
        c = _chunk(g, ci, dm, dr)
        k = min(w, cs[c] - pos)
        _move(cs, c + 2 + 2 * (pos + k), c + 2 + 2 * cs[c], -2 * k)
        cs[c] -= k
        w -= k
        if cs[c] == 0:
            _move(dr, 3 * (d0 + ci + 1), 3 * (d0 + dm[4 * g + 1]), -3)
            dm[4 * g + 1] -= 1
            dm[4 * g + 3] = dr[3 * d0 + 1]
        else:
            _sky_top(g, ci, dm, dr, cs)
            ci += 1
        pos = 0


@kernel()
def _sky_alloc(cs, dm, cap):
    """Room for a chunk of ``cap`` breakpoints at the end of ``cs`` (``dm[-2]``: its use);
    returns the (maybe grown) array and the chunk's start."""
    c = dm[-2]
    if c + 2 + 2 * cap > len(cs):
        bigger = np.empty(max(2 * len(cs), c + 2 + 2 * cap), np.int64)
        bigger[:c] = cs[:c]
        cs = bigger
    dm[-2] = c + 2 + 2 * cap
    cs[c], cs[c + 1] = 0, cap
    return cs, c


@kernel()
def _sky_chunk(g, at, dm, dr, cs, cap):
    """A new, empty chunk of room ``cap`` at directory position ``at`` of object ``g`` (the caller
    fills it and its directory entry); returns the (maybe grown) arrays. ``dm[-1]``: directory
    entries in use."""
    cs, c = _sky_alloc(cs, dm, cap)
    nd = dm[4 * g + 1]
    if nd == dm[4 * g + 2]:  # the directory moves to the arena's end, twice as large
        room, used = max(2, 2 * nd), dm[-1]
        if 3 * (used + room) > len(dr):
            bigger = np.empty(max(2 * len(dr), 3 * (used + room)), np.int64)
            bigger[:3 * used] = dr[:3 * used]
            dr = bigger
        dr[3 * used:3 * (used + nd)] = dr[3 * dm[4 * g]:3 * (dm[4 * g] + nd)]
        dm[4 * g], dm[4 * g + 2] = used, room
        dm[-1] = used + room
    d0 = dm[4 * g]
    _move(dr, 3 * (d0 + at), 3 * (d0 + nd), 3)
    dr[3 * (d0 + at) + 1] = c
    dm[4 * g + 3] = dr[3 * d0 + 1]
    dm[4 * g + 1] = nd + 1
    return dr, cs


@kernel()
def _sky_put(g, x, v, dm, dr, cs, ch):
    """Insert the breakpoint (``x``, ``v``) into object ``g``'s skyline (none at ``x`` there);
    a full chunk splits in two. Returns the (maybe grown) arrays."""
    ci, pos = _sky_find(g, x, dm, dr, cs)
    nd = dm[4 * g + 1]
    if ci == nd:  # past the end: the last chunk, or a new one
        if nd and cs[_chunk(g, nd - 1, dm, dr)] < ch:
            ci, pos = nd - 1, cs[_chunk(g, nd - 1, dm, dr)]
        else:
            dr, cs = _sky_chunk(g, nd, dm, dr, cs, min(ch, 2))
    c = _chunk(g, ci, dm, dr)
    if cs[c] == cs[c + 1] < ch:  # a full chunk below ``ch`` moves to the end, twice as large
        n = cs[c]
        cs, c2 = _sky_alloc(cs, dm, min(ch, 2 * n))
        cs[c2 + 2:c2 + 2 + 2 * n] = cs[c + 2:c + 2 + 2 * n]
        cs[c2] = n
        dr[3 * (dm[4 * g] + ci) + 1] = c = c2
        dm[4 * g + 3] = dr[3 * dm[4 * g] + 1]
    if cs[c] == ch:  # split: the upper half moves to a new chunk after it
        dr, cs = _sky_chunk(g, ci + 1, dm, dr, cs, ch)
        c2, half = _chunk(g, ci + 1, dm, dr), ch // 2
        cs[c2 + 2:c2 + 2 + 2 * (ch - half)] = cs[c + 2 + 2 * half:c + 2 + 2 * ch]
        cs[c2], cs[c] = ch - half, half
        _sky_top(g, ci, dm, dr, cs)
        _sky_top(g, ci + 1, dm, dr, cs)
        if pos > half:
            c, pos, ci = c2, pos - half, ci + 1
    _move(cs, c + 2 + 2 * pos, c + 2 + 2 * cs[c], 2)
    cs[c + 2 + 2 * pos], cs[c + 3 + 2 * pos] = x, v
    cs[c] += 1
    _sky_top(g, ci, dm, dr, cs)
    return dr, cs


@kernel()
def _sky_raise(g, l, r, v, dm, dr, cs, ch, tmp):
    """Raise object ``g``'s skyline to at least ``v`` over slots ``[l, r)``: its breakpoints in
    ``[l, r]`` are rewritten, equal neighbours merged. Returns the (maybe grown) arrays."""
    ci, pos = _sky_find(g, l, dm, dr, cs)
    old = last = _sky_before(g, ci, pos, dm, dr, cs)  # the old top, and the new one last written
    cnt = w = 0
    nd = dm[4 * g + 1]
    i, p = ci, pos
    c = _chunk(g, i, dm, dr) if i < nd else 0
    while True:  # the old breakpoints in [l, r] (w of them); new ones at l, in between and at r
        if i < nd and p == cs[c]:
            i, p = i + 1, 0
            c = _chunk(g, i, dm, dr) if i < nd else 0
            continue
        x = cs[c + 2 + 2 * p] if i < nd else r + 1
        if len(tmp) < 2 * cnt + 4:
            bigger = np.empty(2 * len(tmp), np.int64)
            bigger[:2 * cnt] = tmp[:2 * cnt]
            tmp = bigger
        if w == 0 and x > l and max(old, v) != last:  # no breakpoint at l: the new top from l on
            tmp[0], tmp[1], last, cnt = l, max(old, v), max(old, v), 1
        if x > r:
            if old != last:  # from r on: the old top again
                tmp[2 * cnt], tmp[2 * cnt + 1], cnt = r, old, cnt + 1
            break
        old = cs[c + 3 + 2 * p]
        new = old if x == r else max(old, v)
        if new != last:
            tmp[2 * cnt], tmp[2 * cnt + 1], last, cnt = x, new, new, cnt + 1
        w += 1
        p += 1
        if x == r:
            break
    _sky_cut(g, ci, pos, w, dm, dr, cs)
    for k in range(cnt):
        dr, cs = _sky_put(g, tmp[2 * k], tmp[2 * k + 1], dm, dr, cs, ch)
    return dr, cs, tmp


@kernel()
def _above(units, objects, u, option, dm, dr, cs):
    """The root offset of ``u`` in the first busy object (creation order) of the memory of
    ``option`` with room above what is alive in it with ``u`` (the objects' skylines), or NONE."""
    mem, m, r = units.m_mem[option], units.m_mod[option], units.m_res[option]
    obj_base, obj_size, g0 = objects.base[mem], objects.size[mem], mem * (len(units.low) + 1)
    low, high = units.low, units.high
    for k in range(objects.count[mem]):
        reach = 0
        for p in range(units.p_ptr[u], units.p_ptr[u + 1]):
            reach = max(reach, _sky_max(g0 + k, units.p_l[p], units.p_r[p], dm, dr, cs))
        if reach == 0:  # idle (too small or misaligned)
            continue
        x = obj_base[k] + reach - low[u]
        o = x + (r - x) % m
        if o + high[u] <= obj_base[k] + obj_size[k]:
            return o
    return NONE


@kernel(nogil=True)
def _banked(order, tree, units, ch):
    """``banked_greedy`` without pinned units: (offset, memory index) per unit, failed unit or -1,
    objects per memory. Each bank keeps an index of object ids over time (which objects are idle)
    and each object its skyline (how high it is filled over time: the highest top of its units
    alive then; chunks of ``ch`` breakpoints)."""
    n, n_mem = len(units.low), len(units.capacity)
    p_ptr, p_l, p_r, p_y1 = units.p_ptr, units.p_l, units.p_r, units.p_y1
    low, high, capacity = units.low, units.high, units.capacity
    off = np.full(n, -1, np.int64)
    where = np.full(n, -1, np.int64)
    meta = np.zeros(n_mem * tree.stores * 3, np.int64)  # id index of memory i at i
    ar, used = np.empty(1 << 17, np.int64), 0
    dm = np.zeros(4 * n_mem * (n + 1) + 2, np.int64)  # skylines (``_sky_max``): object k of memory i at i * (n + 1) + k
    dr, cs, tmp = np.empty(1536, np.int64), np.empty(1 << 16, np.int64), np.empty(64, np.int64)
    objects = Objects(np.zeros((n_mem, n + 1), np.int64), np.zeros((n_mem, n + 1), np.int64), np.zeros(n_mem, np.int64))
    obj_base, obj_size, nobj = objects.base, objects.size, objects.count
    cursor = np.zeros(n_mem, np.int64)
    sc = _scratch()
    for u in order:
        for k in range(units.m_ptr[u], units.m_ptr[u + 1]):
            mem, m, r = units.m_mem[k], units.m_mod[k], units.m_res[k]
            x = -low[u]
            lowest = x + (r - x) % m
            if p_ptr[u + 1] == p_ptr[u]:  # stores nothing: the lowest legal offset where it fits
                if capacity[mem] < 0 or lowest + high[u] <= capacity[mem]:
                    off[u], where[u] = lowest, mem
                    break
                continue
            ids_at, g0 = mem * tree.stores, mem * (n + 1)
            j = -1 if nobj[mem] == 0 else _idle(tree, units, objects, u, k, meta, ar, sc)
            if j >= 0:
                root = obj_base[mem, j] - low[u]
            else:
                root = _above(units, objects, u, k, dm, dr, cs)
            if root == NONE:  # a new object, if the bank has room for it
                x = max(cursor[mem] - low[u], -low[u])
                root = x + (r - x) % m
                if capacity[mem] >= 0 and root + high[u] > capacity[mem]:
                    continue
                obj_base[mem, nobj[mem]], obj_size[mem, nobj[mem]] = root + low[u], high[u] - low[u]
                nobj[mem] += 1
                cursor[mem] = root + high[u]
            j = np.searchsorted(obj_base[mem, :nobj[mem]], root + low[u], side="right") - 1
            for p in range(p_ptr[u], p_ptr[u + 1]):
                dr, cs, tmp = _sky_raise(g0 + j, p_l[p], p_r[p], root + p_y1[p] - obj_base[mem, j], dm, dr, cs, ch, tmp)
                ar, used = _store(tree, ids_at, p_l[p], p_r[p], j, j + 1, meta, ar, used, sc[IDS])
            off[u], where[u] = root, mem
            break
        if off[u] < 0:
            return off, where, u, nobj
    return off, where, -1, nobj


def banked(problem: Problem, chunk: int = SKY_CHUNK,
           compiled: bool | None = None) -> tuple[np.ndarray, np.ndarray, Unit | None, np.ndarray]:
    """``banked_greedy`` for problems without pinned units (those stay with the reference);
    ``chunk``: breakpoints per chunk of the skylines (tests split chunks often with a small one);
    ``compiled``: which form runs (``kernels.pick``)."""
    a = arrays(problem)
    units = problem.units
    height = a.high - a.low
    order = np.lexsort((-np.arange(len(units)), -height)).astype(np.int64)  # (-height, -i)
    run = pick(_banked, len(order), compiled)
    off, where, failed, nobj = run(order, layout(a.size), a.units, chunk)
    return off, where, None if failed < 0 else units[failed], nobj
