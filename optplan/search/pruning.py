"""The search's pruning rules: the checks a frame makes on entry (compiled, inlined into ``kernel.search``).

Each rule keeps one reference solution alive (among the solutions under ``cap`` the one with the
smallest sum of offsets, ties of identical units by index; with ``py0 == 0`` it is canonical: a
unit above its floor could drop to it, colliding with nothing placed before it, which lies below,
nor after it, whose pieces all start above its old offset), so INFEASIBLE is a proof. The rules
a candidate must pass are applied in ``placing.next_candidate``; the checks that fail a whole
frame are here:

* order: the next unit's offset is >= the last one placed in its component (ties by index);
* dominance: a unit may not go to offset ``o`` if another unplaced unit ``c`` fits entirely below
  ``o`` (offset + height) at its own lowest offset: every unit placed later lies at >= ``o``, and
  all its pieces start there, so ``c`` could be moved down there, lowering the sum of offsets;
* sections: in every section, the pieces of the unplaced units whose lowest offset (at least the
  last placed offset, by the order rule) is >= t stack up between t and ``cap``, for every t
  (each such piece lies in ``[t, cap)``; this holds for any ``py0``). A section's stack never
  exceeds its remaining load, so only units whose t plus the highest load over their span exceeds
  ``cap`` can fail: the check runs over the sections they span, with every unit from their lowest t up;
* lift: an unplaced unit ``c`` whose lowest offset is below ``L`` (the last offset placed) goes,
  in the reference plan, to its floor at the time it is placed, which is then >= ``L``: a unit
  placed later (at >= ``L``) raised the floor of one of ``c``'s sections to its offset plus its
  piece there, so ``c`` starts at >= ``L`` + the smallest other unplaced piece in ``c``'s
  sections (with ``py0 == 0`` a unit has at most one piece per section; with one rectangle per
  unit that is the first unplaced unit in its neighbour list, which ``instance._arrays`` sorts by height);
* twins: of identical units (same footprint, alignment, lowest offset) the lower index goes first;
* decomposition: when no unplaced unit's span crosses a time point, the parts left and right are
  independent sub-problems (a gap does not split a unit: both sides move with its one offset),
  solved one after the other (most constrained first) with their own order; when one of them
  fails the search returns straight to the choice that split them. A component of one unit is
  simply placed (nothing can go above it any more);
* hatless: when the subtree of a candidate ``b`` that shares a section with no unplaced unit
  fails, the node fails. The reference plan keeps ``b`` at its lowest offset (no floor under its
  pieces changes any more), so its next unit comes no later than ``b`` in (offset, index) order:
  it was ``b`` or a candidate already tried.

* tight (perfect-packing rules; they hold for every completion, not only the reference plan): a
  section is *tight* when its floor plus its remaining load reaches ``cap``; its floor must then
  be the bottom of some later piece, and later units lie at >= the next offset placed, so no
  candidate goes above the lowest floor of a tight section;
* valleys: in a run of sections at one floor with higher floors (or the component's ends) on both
  sides, the units that can sit at that floor lie inside the run and are disjoint in time, and
  every tight section of the run needs one: their spans must cover the run's tight sections
  (``valleys_fail``, single rectangles);
* forced: when no unit can go below a tight section's floor, the frame branches on which unit
  covers one such section (``pick_forced_section``).

Every rule is a switch (``params.Rules``; the order rule and the floors are the search itself).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from optplan.core import jit
from optplan.search.state import (
    BIG,
    F_CEIL,
    F_F,
    F_FA,
    F_FS,
    F_L,
    F_LEN,
    F_LI,
    F_START,
    F_U1,
    F_U1A,
    F_U2,
    align,
    piece,
)

# numba stamps a cached kernel with its own file only: these inline state's functions and constants
jit.key_cache(__file__, [str(Path(__file__).with_name("state.py"))])


@njit(cache=True, inline="always")
def bounds(st, a, run, d, pool):
    """Entry checks of frame ``d`` (every unplaced unit still fits above L and under ``cap``;
    dominance) and the dominance bounds its candidates need. Returns (fails, emin, smin, smax, blocked):
    the lowest offset any unplaced unit may still take and the sections they span."""
    fr = st.f
    rules, cap = run.rules, run.cap
    a_fixed, a_hi, a_mod, a_nsec, a_res, a_s0, a_s1, a_size = a.fixed, a.hi, a.mod, a.nsec, a.res, a.s0, a.s1, a.size
    placed = st.placed
    mf = st.mf
    L = fr[d, F_L]
    Li = fr[d, F_LI]
    U1 = BIG
    U1a = -1
    U2 = BIG
    F = BIG
    Fa = -1
    emin = BIG
    smin = a_nsec
    smax = 0
    fails = False
    blocked = False  # the order rule keeps some unit from its lowest offset
    for p in range(fr[d, F_LEN]):
        c = pool[fr[d, F_START] + p]
        if placed[c]:
            continue
        if a_fixed[c] >= 0:
            oc = a_fixed[c]
            if mf[c] > oc or oc < L or (oc == L and c < Li):
                fails = True
                break
            if oc < F or (oc == F and c < Fa):
                F = oc
                Fa = c
            e = oc
        else:
            oc = align(mf[c], a_mod[c], a_res[c])
            v = oc + a_size[c]
            if v < U1:
                U2 = U1
                U1 = v
                U1a = c
            elif v < U2:
                U2 = v
            e = oc
            if e < L or (e == L and c < Li):
                blocked = True
            if e < L:
                e = align(L, a_mod[c], a_res[c])
        if e + a_size[c] > cap or e > a_hi[c]:
            fails = True
            break
        emin = min(emin, e)
        smin = min(smin, a_s0[c])
        smax = max(smax, a_s1[c])
    ceil = BIG
    if rules.tight and not fails:
        floor, load = st.floor, st.load
        for s in range(smin, smax):
            if load[s] > 0 and floor[s] + load[s] >= cap and floor[s] < ceil:
                ceil = floor[s]
    fr[d, F_CEIL] = ceil
    if not rules.dominance:
        U1 = U2 = F = BIG
        U1a = Fa = -1
    if U1 <= L:  # some unit fits wholly below every offset still allowed: dominated
        fails = True
    fr[d, F_U1] = U1
    fr[d, F_U1A] = U1a
    fr[d, F_U2] = U2
    fr[d, F_F] = F
    fr[d, F_FA] = Fa
    return fails, emin, smin, smax, blocked


@njit(cache=True, inline="always")
def _thresholds(st, a, run, d, pool, base, smin, smax):
    """Each unplaced unit's threshold (its lowest offset, lifted above L when it lies below it)
    into ``w.ev`` (unit in ``w.evb``); returns how many."""
    fr = st.f
    single = run.single
    a_fixed, a_mod, a_nb_idx, a_nb_ptr, a_ph, a_pp, a_ps0, a_ps1, a_res = a.fixed, a.mod, a.nb_idx, a.nb_ptr, a.ph, a.pp, a.ps0, a.ps1, a.res
    w_ev, w_evb, w_min1, w_min1c, w_min2 = st.w.ev, st.w.evb, st.w.min1, st.w.min1c, st.w.min2
    placed = st.placed
    mf = st.mf
    L = fr[d, F_L]
    Li = fr[d, F_LI]
    st0 = fr[d, F_START]
    ln = fr[d, F_LEN]
    lift = run.rules.lift
    if lift and not single:  # per section, the smallest unplaced piece (and whose) and the next
        for s in range(smin, smax):
            w_min1[s] = BIG
            w_min2[s] = BIG
            w_min1c[s] = -1
        for p in range(ln):
            c = pool[st0 + p]
            if not placed[c]:
                for q in range(a_pp[c], a_pp[c + 1]):
                    h = a_ph[q]
                    for s in range(a_ps0[q], a_ps1[q]):
                        if h < w_min1[s]:
                            w_min2[s] = w_min1[s]
                            w_min1[s] = h
                            w_min1c[s] = c
                        elif h < w_min2[s]:
                            w_min2[s] = h
    k = 0
    for p in range(ln):
        c = pool[st0 + p]
        if placed[c]:
            continue
        if a_fixed[c] >= 0:
            w_ev[k] = a_fixed[c]
        elif lift and (align(mf[c], a_mod[c], a_res[c]) < L or (align(mf[c], a_mod[c], a_res[c]) == L and c < Li)):
            ms = BIG
            if single:  # neighbours lowest first: the first unplaced one is the smallest
                for q in range(a_nb_ptr[c], a_nb_ptr[c + 1]):
                    if not placed[a_nb_idx[q]]:
                        ms = a_ph[a_nb_idx[q]]
                        break
            else:
                for q in range(piece(a_pp, c, single), piece(a_pp, c + 1, single)):
                    for s in range(a_ps0[q], a_ps1[q]):
                        ms = min(ms, w_min2[s] if w_min1c[s] == c else w_min1[s])
            w_ev[k] = align(max(mf[c], base, L + ms), a_mod[c], a_res[c])
        else:
            w_ev[k] = align(max(mf[c], base), a_mod[c], a_res[c])
        w_evb[k] = c
        k += 1
    return k


@njit(cache=True, inline="always")
def sections_fail(st, a, run, d, pool, emin, smin, smax):
    """The section check: in each section, the pieces of the unplaced units whose threshold is
    >= t stack between t and ``cap``, for every t. A section's sum never exceeds its remaining
    load, so only a unit whose threshold plus the highest load over its span exceeds ``cap`` can
    fail: the pass runs over the sections those units span, with the units from the lowest such
    threshold up (the same answer)."""
    fr = st.f
    cap, single = run.cap, run.single
    rmax, lg, ev, evb, acc, sel = st.w.rmax, st.w.lg, st.w.ev, st.w.evb, st.w.acc, st.w.sel
    a_nsec, a_ph, a_pp, a_ps0, a_ps1, a_s0, a_s1 = a.nsec, a.ph, a.pp, a.ps0, a.ps1, a.s0, a.s1
    load = st.load
    k = _thresholds(st, a, run, d, pool, max(fr[d, F_L], emin), smin, smax)
    for s in range(smin, smax):
        rmax[0, s] = load[s]
    span = 1
    for lv in range(1, lg[smax - smin] + 1):
        for s in range(smin, smax - 2 * span + 1):
            rmax[lv, s] = max(rmax[lv - 1, s], rmax[lv - 1, s + span])
        span *= 2
    dmin = a_nsec
    dmax = 0
    tmin = -1  # none (a threshold can reach BIG: a unit with nothing left to lift it)
    for r in range(k):
        c = evb[r]
        if a_s1[c] <= a_s0[c]:
            continue  # no footprint
        lv = lg[a_s1[c] - a_s0[c]]
        top = max(rmax[lv, a_s0[c]], rmax[lv, a_s1[c] - (1 << lv)])
        if ev[r] + top > cap:
            dmin = min(dmin, a_s0[c])
            dmax = max(dmax, a_s1[c])
            tmin = ev[r] if tmin < 0 else min(tmin, ev[r])
    if tmin < 0:
        return False
    ks = 0
    for r in range(k):
        if ev[r] >= tmin:
            sel[ks] = r
            ks += 1
    srt = np.argsort(ev[sel[:ks]])
    for s in range(dmin, dmax):
        acc[s] = 0
    # one pass, highest first: a section's sum is complete at the last unit of a threshold that
    # covers it, and partial sums earlier in the threshold are lower
    for j in range(ks - 1, -1, -1):
        r = sel[srt[j]]
        c = evb[r]
        room = cap - ev[r]
        for q in range(piece(a_pp, c, single), piece(a_pp, c + 1, single)):
            h = a_ph[q]
            top = 0
            for s in range(max(a_ps0[q], dmin), min(a_ps1[q], dmax)):
                v = acc[s] + h
                acc[s] = v
                top = max(top, v)
            if top > room:
                return True
    return False


@njit(cache=True, inline="always")
def valleys_fail(st, a, run, d, pool, smin, smax):
    """The valley check (single rectangles only). A section is *tight* when its floor plus the
    load still to come reaches ``cap``: every completion stacks that load from the floor up with
    no room to spare, so some unit starts exactly at the floor there. In a *valley* (a maximal run
    of sections at one floor ``f`` whose neighbours in the component are higher, or its ends) a unit
    at offset ``f`` lies wholly inside the valley, and those units are disjoint in time: the
    valley's sections must be covered by disjoint spans of unplaced units that fit inside it and
    may sit at ``f``, except for sections that are not tight (they may stay empty at ``f``). If no
    such cover reaches the valley's end, no completion exists, whatever the order of placement:
    the check depends only on floors, loads and the placed set (the failed-state table's key)."""
    cap = run.cap
    floor, load, placed, mf = st.floor, st.load, st.placed, st.mf
    vst, vend, head, nxt, reach = st.w.vst, st.w.vend, st.w.head, st.w.nxt, st.w.reach
    a_s0, a_s1, a_size, a_mod, a_res, a_fixed, a_hi = a.s0, a.s1, a.size, a.mod, a.res, a.fixed, a.hi
    fr = st.f
    L = fr[d, F_L]
    Li = fr[d, F_LI]
    checked = False
    s = smin
    while s < smax:
        e = s + 1
        while e < smax and floor[e] == floor[s]:
            e += 1
        tight = False
        for k in range(s, e):
            vst[k] = s
            head[k] = -1
            if load[k] > 0 and floor[k] + load[k] >= cap:
                tight = True
        if tight and (s == smin or floor[s - 1] > floor[s]) and (e == smax or floor[e] > floor[s]):
            vend[s] = e
            checked = True
        else:
            vend[s] = -1
        s = e
    if not checked:
        return False
    st0 = fr[d, F_START]
    for p in range(fr[d, F_LEN]):
        c = pool[st0 + p]
        if placed[c] or a_s1[c] <= a_s0[c]:
            continue
        k0 = a_s0[c]
        r = vst[k0]
        f = floor[k0]
        if vend[r] < 0 or a_s1[c] > vend[r] or f + a_size[c] > cap or f > a_hi[c]:
            continue
        if (a_fixed[c] if a_fixed[c] >= 0 else align(mf[c], a_mod[c], a_res[c])) != f:
            continue
        if f < L or (f == L and c < Li):
            continue  # the order rule keeps it from offset f
        nxt[c] = head[k0]
        head[k0] = c
    s = smin
    while s < smax:
        e = vend[s]
        if e < 0:
            s += 1
            while s < smax and vst[s] != s:
                s += 1
            continue
        for k in range(s, e + 1):
            reach[k] = False
        reach[s] = True
        for k in range(s, e):
            if not reach[k]:
                continue
            if not (load[k] > 0 and floor[k] + load[k] >= cap):
                reach[k + 1] = True  # may stay empty at the floor
            c = head[k]
            while c >= 0:
                reach[a_s1[c]] = True
                c = nxt[c]
        if not reach[e]:
            return True
        s = e
    return False


@njit(cache=True, inline="always")
def pick_forced_section(st, a, run, d, pool, emin, smin, smax):
    """Forced-section branching: when no unplaced unit can go below ``ceil`` (the lowest floor of a
    tight section, ``emin >= ceil``), every tight section at that floor must be covered by a unit at
    exactly ``ceil``, whichever order the rest is placed in. The frame then branches on which unit
    covers the one such section with the fewest units able to (first fail; the leftmost on ties):
    each branch is a different plan, so the order rule's tie-break by index is not needed at ``ceil``
    (the child starts it afresh: ``Li = -1``). Sets ``F_FS`` (-1: the ordinary candidates)."""
    fr = st.f
    ceil = fr[d, F_CEIL]
    if ceil >= BIG or emin < ceil:
        return
    cap = run.cap
    floor, load, placed, mf = st.floor, st.load, st.placed, st.mf
    cnt = st.w.acc
    a_s0, a_s1, a_size, a_mod, a_res, a_fixed, a_hi = a.s0, a.s1, a.size, a.mod, a.res, a.fixed, a.hi
    L = fr[d, F_L]
    Li = fr[d, F_LI]
    for k in range(smin, smax):
        cnt[k] = 0
    st0 = fr[d, F_START]
    for p in range(fr[d, F_LEN]):
        c = pool[st0 + p]
        if placed[c]:
            continue
        oc = a_fixed[c] if a_fixed[c] >= 0 else align(mf[c], a_mod[c], a_res[c])
        if oc != ceil or oc + a_size[c] > cap or oc > a_hi[c] or (oc == L and c < Li):
            continue
        for k in range(a_s0[c], a_s1[c]):
            cnt[k] += 1
    best = -1
    for k in range(smin, smax):
        if load[k] > 0 and floor[k] == ceil and floor[k] + load[k] >= cap and (best < 0 or cnt[k] < cnt[best]):
            best = k
    fr[d, F_FS] = best
