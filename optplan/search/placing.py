"""Placing a unit and taking it back: the search's moves (compiled, inlined into ``kernel.search``).

``next_candidate`` picks a frame's next unit and offset under the candidate rules (``pruning``'s
docstring: order, twins, dominance, tight, forced, fixed units); ``place`` puts it there, raising
floors and its neighbours' lowest offsets, and pushes the rest of its component (split in time
where nothing crosses any more: the decomposition rule); ``backtrack`` undoes a frame's placement
from the trail. Every change is on the trail (``_PLACE``, ``_FLOOR``, ``_MF`` entries), so
undoing costs what doing did.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from optplan.core import jit
from optplan.search.state import (
    BIG,
    F_C1,
    F_C2,
    F_CEIL,
    F_CNT,
    F_F,
    F_FA,
    F_FS,
    F_HAT,
    F_HF1,
    F_HF2,
    F_HP1,
    F_HP2,
    F_I,
    F_L,
    F_LEN,
    F_LI,
    F_LO,
    F_POOL,
    F_PT,
    F_START,
    F_TRAIL,
    F_U1,
    F_U1A,
    F_U2,
    P_CNT,
    P_H1,
    P_H2,
    P_L,
    P_LEN,
    P_LI,
    P_OWNER,
    P_START,
    R_HF1,
    R_HF2,
    R_HP1,
    R_HP2,
    R_POOL,
    R_PT,
    R_TTOP,
    ZOB_BLOCKS,
    align,
    collide,
    piece,
    shared_top,
    word,
)

# numba stamps a cached kernel with its own file only: these inline state's functions and constants
jit.key_cache(__file__, [str(Path(__file__).with_name("state.py"))])

_PLACE, _FLOOR, _MF = 0, 1, 2  # trail entries: a unit placed, a section's old floor, a unit's old lowest offset


@njit(cache=True, inline="always")
def next_candidate(st, a, run, d, pool):
    """The next candidate of frame ``d`` in (offset, index) order after the last one tried, at
    its lowest legal offset: (unit, offset), unit -1 when none is left."""
    fr = st.f
    rules, cap = run.rules, run.cap
    a_fixed, a_fx_idx, a_fx_ptr, a_hi, a_mod, a_ph, a_pp, a_ps0, a_ps1, a_py0, a_res, a_size, a_twin = a.fixed, a.fx_idx, a.fx_ptr, a.hi, a.mod, a.ph, a.pp, a.ps0, a.ps1, a.py0, a.res, a.size, a.twin
    a_s0, a_s1 = a.s0, a.s1
    placed = st.placed
    mf = st.mf
    L = fr[d, F_L]
    Li = fr[d, F_LI]
    st0 = fr[d, F_START]
    b = -1
    ob = 0
    for p in range(fr[d, F_LEN]):
        c = pool[st0 + p]
        if placed[c]:
            continue
        if rules.twins and a_twin[c] >= 0 and not placed[a_twin[c]]:
            continue
        if a_fixed[c] >= 0:
            oc = a_fixed[c]
            if mf[c] > oc:
                continue
        else:
            oc = align(mf[c], a_mod[c], a_res[c])
        if oc < fr[d, F_LO] or (oc == fr[d, F_LO] and c <= fr[d, F_I]):
            continue
        if b >= 0 and (oc > ob or (oc == ob and c > b)):
            continue
        if oc < L or (oc == L and c < Li):
            continue
        if oc + a_size[c] > cap or oc > a_hi[c]:
            continue
        if oc > fr[d, F_CEIL]:
            continue  # a tight section's floor would stay a hole
        fs = fr[d, F_FS]
        if fs >= 0 and (oc != fr[d, F_CEIL] or a_s0[c] > fs or a_s1[c] <= fs):
            continue  # forced: only a unit covering the forced section at ceil
        u = fr[d, F_U2] if fr[d, F_U1A] == c else fr[d, F_U1]
        if u <= oc:
            continue
        if fr[d, F_FA] >= 0 and fr[d, F_FA] != c and (fr[d, F_F] < oc or (fr[d, F_F] == oc and fr[d, F_FA] < c
                                                                           and fs < 0)):
            continue  # a fixed unit lower in (offset, index) order goes first (forced: lower offset)
        bad = False
        for q in range(a_fx_ptr[c], a_fx_ptr[c + 1]):
            x = a_fx_idx[q]
            if (not placed[x] and a_fixed[x] < oc + a_size[c] and oc < a_fixed[x] + a_size[x]
                    and collide(c, oc, x, a_fixed[x], a_pp, a_ps0, a_ps1, a_py0, a_ph)):
                bad = True
                break
        if bad:
            continue
        b = c
        ob = oc
    return b, ob


@njit(cache=True, inline="always")
def place(st, a, run, d, b, ob, pool, offsets):
    """Place unit ``b`` at ``ob`` from frame ``d`` (on the trail), raise floors and neighbours'
    lowest offsets, and push what is left of the component (split where nothing crosses any
    more). Returns the pool (grown when a split needs more room). One function but for the push:
    inlined helpers that take the state apart again (floors, neighbours) cost 3-5 % of the node
    rate (CPU time per node on minimalloc A, C, E, against the kernel in one function)."""
    fr, placed, mf, floor, load, cross = st.f, st.placed, st.mf, st.floor, st.load, st.cross
    tk, ti, tv, reg = st.tk, st.ti, st.tv, st.reg
    a_nb_idx, a_nb_ptr, a_ph, a_pp, a_ps0, a_ps1, a_py0 = a.nb_idx, a.nb_ptr, a.ph, a.pp, a.ps0, a.ps1, a.py0
    single, use_tt, zob = run.single, run.use_tt, run.zob
    za = ZOB_BLOCKS * a.size.shape[0] + 1
    fr[d, F_LO] = ob
    fr[d, F_I] = b
    ttop = reg[R_TTOP]
    fr[d, F_TRAIL] = ttop
    reg[R_PT] = fr[d, F_PT] - 1
    reg[R_POOL] = fr[d, F_POOL]
    tk[ttop] = _PLACE
    ti[ttop] = b
    ttop += 1
    placed[b] = True
    offsets[b] = ob
    if use_tt:
        reg[R_HP1] ^= zob[0, b]
        reg[R_HP2] ^= zob[1, b]
    hf1 = reg[R_HF1]
    hf2 = reg[R_HF2]
    for q in range(piece(a_pp, b, single), piece(a_pp, b + 1, single)):  # raise the floors under b's pieces
        t = ob + a_py0[q] + a_ph[q]
        for s in range(a_ps0[q], a_ps1[q]):
            v = floor[s]
            tk[ttop] = _FLOOR
            ti[ttop] = s
            tv[ttop] = v
            ttop += 1
            load[s] -= a_ph[q]
            if t > v:
                floor[s] = t
                if use_tt:
                    hf1 ^= word(zob[0, za + s], v) ^ word(zob[0, za + s], t)
                    hf2 ^= word(zob[1, za + s], v) ^ word(zob[1, za + s], t)
    reg[R_HF1] = hf1
    reg[R_HF2] = hf2
    ncut = 0
    for k in range(a.s0[b] + 1, a.s1[b]):  # time points no unplaced unit crosses any more
        cross[k] -= 1
        if cross[k] == 0:
            st.w.cuts[ncut] = k
            ncut += 1
    hatless = True
    t = ob + a_ph[piece(a_pp, b, single)]
    for q in range(a_nb_ptr[b], a_nb_ptr[b + 1]):  # lift the unplaced neighbours' lowest offsets
        c = a_nb_idx[q]
        if placed[c]:
            continue
        # one piece each: the spans overlap, so the pieces share a section (py0 == 0)
        tc = t if single else shared_top(b, ob, c, a_pp, a_ps0, a_ps1, a_py0, a_ph)
        if tc == -BIG:
            continue  # only the spans overlap (a gap): nothing of b lies under c
        hatless = False
        if mf[c] < tc:
            tk[ttop] = _MF
            ti[ttop] = c
            tv[ttop] = mf[c]
            ttop += 1
            mf[c] = tc
    reg[R_TTOP] = ttop
    fr[d, F_HAT] = hatless
    return _push_rest(st, a, run, d, b, ob, pool, ncut)


@njit(cache=True, inline="always")
def _push_rest(st, a, run, d, b, ob, pool, ncut):
    """After ``b`` went to ``ob`` from frame ``d``: push the rest of its component, split at the
    ``ncut`` time cuts ``b`` left (``st.w.cuts``) into parts, or whole. Returns the pool (grown
    when a split needs more room)."""
    fr, pe, reg, members, placed = st.f, st.p, st.reg, st.w.members, st.placed
    rem = fr[d, F_CNT] - 1
    parts = 1
    st0 = fr[d, F_START]
    ln = fr[d, F_LEN]
    if rem > 0 and ncut > 0 and run.rules.decomposition:
        nmem = 0
        for q in range(ln):
            c = pool[st0 + q]
            if not placed[c]:
                members[nmem] = c
                nmem += 1
        if reg[R_POOL] + nmem > pool.shape[0]:
            # grow rather than skip the split: what a subtree does may depend only on its state
            grown = np.empty(2 * pool.shape[0] + nmem, np.int64)
            grown[:reg[R_POOL]] = pool[:reg[R_POOL]]
            pool = grown
        parts = _push_split(st, a, run, pool, nmem, ncut, d)
    if rem > 0 and parts == 1:
        n = a.size.shape[0]
        pt = reg[R_PT]
        pe[pt, P_START] = st0
        pe[pt, P_LEN] = ln
        pe[pt, P_CNT] = rem
        pe[pt, P_L] = ob
        # forced: no order among the units at ob is implied; the parent's tie-break still binds there
        pe[pt, P_LI] = b if fr[d, F_FS] < 0 else (fr[d, F_LI] if fr[d, F_L] == ob else -1)
        pe[pt, P_OWNER] = d
        pe[pt, P_H1] = fr[d, F_C1] ^ run.zob[0, n + b] if run.use_tt else 0
        pe[pt, P_H2] = fr[d, F_C2] ^ run.zob[1, n + b] if run.use_tt else 0
        reg[R_PT] = pt + 1
    return pool


@njit(cache=True)
def _push_split(st, a, run, pool, nmem, ncut, owner):
    """Split ``st.w.members[:nmem]`` (unplaced, in index order) at the time cuts ``st.w.cuts[:ncut]``
    and push one pending component per non-empty part, the least slack on top (``pool`` has room
    for ``nmem`` more from ``reg[R_POOL]``). With the table, each part's member hash goes with it.
    Returns the number of parts (one: nothing pushed, the caller continues)."""
    pe = st.p
    cap, use_tt, zob = run.cap, run.use_tt, run.zob
    members, cuts = st.w.members, st.w.cuts
    a_s0, a_s1, a_size = a.s0, a.s1, a.size
    floor = st.floor
    load = st.load
    reg = st.reg
    seg = np.empty(nmem, np.int64)
    cnt = np.zeros(ncut + 1, np.int64)
    smin = np.full(ncut + 1, BIG, np.int64)
    smax = np.zeros(ncut + 1, np.int64)
    for p in range(nmem):
        c = members[p]
        j = np.searchsorted(cuts[:ncut], a_s0[c], side="right")
        seg[p] = j
        cnt[j] += 1
        smin[j] = min(smin[j], a_s0[c])
        smax[j] = max(smax[j], a_s1[c])
    parts = 0
    for j in range(ncut + 1):
        if cnt[j] > 0:
            parts += 1
    if parts < 2:
        return parts
    slack = np.full(ncut + 1, BIG, np.int64)
    start = np.zeros(ncut + 1, np.int64)
    pos = reg[R_POOL]
    for j in range(ncut + 1):
        start[j] = pos
        pos += cnt[j]
        if cnt[j] > 0:
            for s in range(smin[j], smax[j]):
                if load[s] > 0:
                    slack[j] = min(slack[j], cap - floor[s] - load[s])
    fill = start.copy()
    for p in range(nmem):
        j = seg[p]
        pool[fill[j]] = members[p]
        fill[j] += 1
    done = np.zeros(ncut + 1, np.bool_)
    zc = a_size.shape[0]
    pt = reg[R_PT]
    for _ in range(parts):  # push the loosest first so the tightest ends on top
        best = -1
        for j in range(ncut + 1):
            if cnt[j] > 0 and not done[j] and (best < 0 or slack[j] > slack[best]):
                best = j
        done[best] = True
        pe[pt, P_START] = start[best]
        pe[pt, P_LEN] = cnt[best]
        pe[pt, P_CNT] = cnt[best]
        pe[pt, P_L] = -1
        pe[pt, P_LI] = -1
        pe[pt, P_OWNER] = owner
        h1 = np.int64(0)
        h2 = np.int64(0)
        if use_tt:
            for p in range(start[best], start[best] + cnt[best]):
                h1 ^= zob[0, zc + pool[p]]
                h2 ^= zob[1, zc + pool[p]]
        pe[pt, P_H1] = h1
        pe[pt, P_H2] = h2
        pt += 1
    reg[R_PT] = pt
    reg[R_POOL] = pos
    return parts


@njit(cache=True)
def initial_components(st, a, run, pool):
    """Push the instance's components (with the decomposition rule, one per stretch of time that
    no unit crosses the ends of)."""
    n = a.size.shape[0]
    for i in range(n):
        pool[i] = i
        st.w.members[i] = i
    ncut = 0
    for k in range(1, a.nsec if run.rules.decomposition else 0):
        if st.cross[k] == 0:
            st.w.cuts[ncut] = k
            ncut += 1
    st.reg[R_POOL] = n
    if _push_split(st, a, run, pool, n, ncut, -1) == 1:
        pe = st.p
        pe[0, P_START] = 0
        pe[0, P_LEN] = n
        pe[0, P_CNT] = n
        pe[0, P_L] = -1
        pe[0, P_LI] = -1
        pe[0, P_OWNER] = -1
        pe[0, P_H1] = 0
        pe[0, P_H2] = 0
        if run.use_tt:
            for i in range(n):
                pe[0, P_H1] ^= run.zob[0, n + i]
                pe[0, P_H2] ^= run.zob[1, n + i]
        st.reg[R_PT] = 1


@njit(cache=True, inline="always")
def backtrack(st, a, run, o):
    """Undo the trail down to frame ``o``'s mark (its placement and everything after it)."""
    fr = st.f
    single = run.single
    a_ph, a_pp, a_ps0, a_ps1, a_s0, a_s1 = a.ph, a.pp, a.ps0, a.ps1, a.s0, a.s1
    placed = st.placed
    mf = st.mf
    floor = st.floor
    load = st.load
    cross = st.cross
    tk = st.tk
    ti = st.ti
    tv = st.tv
    reg = st.reg
    if run.use_tt:
        reg[R_HP1] = fr[o, F_HP1]
        reg[R_HP2] = fr[o, F_HP2]
        reg[R_HF1] = fr[o, F_HF1]
        reg[R_HF2] = fr[o, F_HF2]
    mark = fr[o, F_TRAIL]
    ttop = reg[R_TTOP]
    while ttop > mark:
        ttop -= 1
        kind = tk[ttop]
        x = ti[ttop]
        if kind == _FLOOR:
            floor[x] = tv[ttop]
        elif kind == _MF:
            mf[x] = tv[ttop]
        else:
            placed[x] = False
            for q in range(piece(a_pp, x, single), piece(a_pp, x + 1, single)):
                for s in range(a_ps0[q], a_ps1[q]):
                    load[s] += a_ph[q]
            for k in range(a_s0[x] + 1, a_s1[x]):
                cross[k] += 1
    reg[R_TTOP] = ttop
