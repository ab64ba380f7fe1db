"""The compiled depth-first search over canonical solutions (numba, one signature, cached on disk).

A *canonical* solution places units (a buffer and everything placed relative to it) in
non-decreasing offset order, each at the lowest legal offset that keeps every piece of its
footprint above everything already placed in that piece's sections (the "floor"). Pushing every
unit of any valid plan down as far as it goes gives a canonical plan with no higher peak, so
searching canonical plans is complete for "does a plan fit under ``cap``?" (the idea of
MiniMalloc, Moffitt, ASPLOS 2023). All quantities are integers already divided by a common scale;
time is compressed to *sections* (intervals between consecutive distinct piece start/end times).
A unit's offset is that of its lowest byte; piece ``q`` covers sections ``[ps0[q], ps1[q])`` and
bytes ``[o + py0[q], o + py0[q] + ph[q])``; the unit's span ``[s0, s1)`` runs from its first
piece to its last (a MiniMalloc gap leaves sections of the span without a piece) and ``size`` is
its height. Unit indices are ranks of the static ordering: candidates are tried lowest offset
first, ties by index (as in MiniMalloc).

Exactness. When every piece starts at its unit's lowest byte (``py0 == 0``: single rectangles,
plain gaps, gap windows starting at 0, relative members alive only while the root below them is)
two units whose pieces share a section and whose offsets satisfy ``o_j <= o_i`` can only be
disjoint if each piece of ``i`` there lies above the piece of ``j``: the per-section floor is the
exact lowest offset, every later unit lies above the placed ones, and the argument above holds
piece by piece. When a piece starts higher (``py0 > 0``: a window with ``wlo > 0``, a member above
a root that has died), a later unit could still use the hole below that piece; the floors do not
see it, so plans stay valid but the search is incomplete: INFEASIBLE is then no proof (the engine
claims none).

Pruning rules, each keeping one reference solution alive (among the solutions under ``cap`` the
one with the smallest sum of offsets, ties of identical units by index; with ``py0 == 0`` it is
canonical: a unit above its floor could drop to it, colliding with nothing placed before it, which
lies below, nor after it, whose pieces all start above its old offset), so INFEASIBLE is a proof:

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
  unit that is the first unplaced unit in its neighbour list, which ``ordered`` sorts by height);
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

Failed-state table (a transposition table of failures). A frame whose candidates are exhausted
(entry checks, hatless, or every candidate's subtree failed back to it) has found that its
component cannot be completed from its state; the state's key is stored, and a frame entered
with a stored key fails at once. Sound because what the search does below a frame until its
component is complete is a function of the key: the capacity, the placed set, the floors (an
unplaced unit's lowest offset ``mf`` is the highest floor under its pieces less their ``py0``, or
``lo``: offsets are >= ``lo`` >= 0, so a covered section's floor is > 0), the component's unplaced
members and ``L``, ``Li`` determine every rule above (candidates, dominance bounds, twins, fixed
units, sections and lift, hatless, and decomposition: the parts, their order by slack from floors
and load, their members), with the ordering's static arrays. Nothing else enters: the components
pending below are reached only once this one is complete (their failure jumps past the frame,
which is then not stored); the pool grows rather than skip a split; LIMIT (node budget, stop
flag) returns at once, so a cut-off subtree is never stored. By induction over the order of
stores, the table-free search below a stored key fails too: the table changes node counts, never
the answer, and INFEASIBLE stays a proof. Keys are two 64-bit Zobrist hashes: XORs of random words
drawn per table from the ordering's seed (engine) for the capacity, each placed unit, each component member, ``Li``,
and ``fmix64(word ^ v * phi)`` for each section's floor ``v`` and for ``L``; placing a unit XORs in
its word and each raised floor's old and new words, a frame keeps the hashes from before its
placement for backtracking, and a component's member hash is built at a split and continued by
XOR-ing out the unit placed. Two different states differ in a non-empty set of words; taking these
as independent and uniform, both hashes agree with probability 2^-128, and with two keys compared
per lookup a false hit within 2^40 lookups (far beyond any run) has probability below 2^-87. The
all-zero key marks an empty slot and is never stored. Buckets hold two keys, newest first: a full
table forgets failures, never invents them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

FOUND, INFEASIBLE, LIMIT = 1, 0, 2
_PLACE, _FLOOR, _MF = 0, 1, 2
_BIG = np.int64(1) << np.int64(62)
_M1 = np.int64(-49064778989728563)  # 0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53: MurmurHash3's fmix64
_M2 = np.int64(-4265267296055464877)
_PHI = np.int64(-7046029254386353131)  # 0x9e3779b97f4a7c15: odd, so v -> v * _PHI is a bijection
_LOW31 = np.int64((1 << 31) - 1)


def table_words(n: int, nsec: int) -> int:
    """Random words per hash the failed-state table needs (``zob`` has two rows of this many):
    placed units, component members, last unit placed (+1 for none), sections, L, capacity."""
    return 3 * n + 1 + nsec + 2


@njit(cache=True, inline="always")
def _mix(x):
    """MurmurHash3's 64-bit finalizer (wrapping int64 arithmetic, logical shifts)."""
    x = (x ^ ((x >> 33) & _LOW31)) * _M1
    x = (x ^ ((x >> 33) & _LOW31)) * _M2
    return x ^ ((x >> 33) & _LOW31)


@njit(cache=True, inline="always")
def _word(key, v):
    """The Zobrist word of value ``v`` under the random ``key`` (a section's floor, L)."""
    return _mix(key ^ (v * _PHI))


@njit(cache=True, inline="always")
def _align(x, m, r):
    return x + (r - x) % m


@njit(cache=True)
def _push_split(members, nmem, cuts, ncut, s0, s1, floor, load, cap, pool, pool_top,
                pend_start, pend_len, pend_cnt, pend_L, pend_Li, pend_owner, pt, owner,
                use_tt, zob, zc, pend_h1, pend_h2):
    """Split ``members`` (unplaced, in index order) at the time cuts and push one pending
    component per non-empty part, the least slack on top (``pool`` has room for ``nmem`` more).
    With the table, each part's member hash (words ``zob[:, zc + i]``) goes to ``pend_h1/2``. Returns (pool_top, pt, parts)."""
    seg = np.empty(nmem, np.int64)
    cnt = np.zeros(ncut + 1, np.int64)
    smin = np.full(ncut + 1, _BIG, np.int64)
    smax = np.zeros(ncut + 1, np.int64)
    for p in range(nmem):
        c = members[p]
        j = np.searchsorted(cuts[:ncut], s0[c], side="right")
        seg[p] = j
        cnt[j] += 1
        smin[j] = min(smin[j], s0[c])
        smax[j] = max(smax[j], s1[c])
    parts = 0
    for j in range(ncut + 1):
        if cnt[j] > 0:
            parts += 1
    if parts < 2:
        return pool_top, pt, parts  # one part: the caller continues
    slack = np.full(ncut + 1, _BIG, np.int64)
    start = np.zeros(ncut + 1, np.int64)
    pos = pool_top
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
    for _ in range(parts):  # push the loosest first so the tightest ends on top
        best = -1
        for j in range(ncut + 1):
            if cnt[j] > 0 and not done[j] and (best < 0 or slack[j] > slack[best]):
                best = j
        done[best] = True
        pend_start[pt] = start[best]
        pend_len[pt] = cnt[best]
        pend_cnt[pt] = cnt[best]
        pend_L[pt] = -1
        pend_Li[pt] = -1
        pend_owner[pt] = owner
        h1 = np.int64(0)
        h2 = np.int64(0)
        if use_tt:
            for p in range(start[best], start[best] + cnt[best]):
                h1 ^= zob[0, zc + pool[p]]
                h2 ^= zob[1, zc + pool[p]]
        pend_h1[pt] = h1
        pend_h2[pt] = h2
        pt += 1
    return pos, pt, parts


@njit(cache=True)
def move_table(src, dst):
    """Copy the keys of failed-state table ``src`` into the (larger, empty) ``dst``, older
    before newer so that each bucket keeps its newest first; hit and store counts carry over."""
    dst[0] = src[0]
    dst[1] = src[1]
    nbk = (dst.shape[0] - 2) // 4
    for second in range(2, -1, -2):
        for at in range(2 + second, src.shape[0], 4):
            k1 = src[at]
            k2 = src[at + 1]
            if k1 != 0 or k2 != 0:
                to = 2 + 4 * (k1 & (nbk - 1))
                dst[to + 2] = dst[to]
                dst[to + 3] = dst[to + 1]
                dst[to] = k1
                dst[to + 1] = k2


@njit(cache=True, inline="always")
def _piece(pp, i, single):
    """The first piece of unit ``i`` (``pp[i]``; on one-rectangle instances ``i``, one load less)."""
    return i if single else pp[i]


@njit(cache=True)
def _shared_top(b, ob, c, pp, ps0, ps1, py0, ph):
    """The lowest offset of unit ``c`` that keeps each of its pieces above every piece of ``b``
    (placed at ``ob``) in the sections they share; -_BIG when they share none."""
    best = -_BIG
    for p in range(pp[b], pp[b + 1]):
        top = ob + py0[p] + ph[p]
        for q in range(pp[c], pp[c + 1]):
            if ps0[p] < ps1[q] and ps0[q] < ps1[p]:
                best = max(best, top - py0[q])
    return best


@njit(cache=True)
def _collide(b, ob, f, of, pp, ps0, ps1, py0, ph):
    """Do unit ``b`` at ``ob`` and unit ``f`` at ``of`` share a byte in a shared section?"""
    for p in range(pp[b], pp[b + 1]):
        for q in range(pp[f], pp[f + 1]):
            if (ps0[p] < ps1[q] and ps0[q] < ps1[p] and ob + py0[p] < of + py0[q] + ph[q]
                    and of + py0[q] < ob + py0[p] + ph[p]):
                return True
    return False


@njit(cache=True)
def search(size, s0, s1, pp, ps0, ps1, py0, ph, mod, res, lo, hi, fixed, nb_ptr, nb_idx, fx_ptr, fx_idx,
           twin, nsec, cap, node_limit, stop, offsets, table, zob):
    """Is there a canonical plan with every top <= ``cap``? Returns (status, nodes); on FOUND
    ``offsets`` holds it. LIMIT: ``node_limit`` nodes spent or ``stop[0]`` set by another worker.

    ``table``: the failed-state table (module docstring), kept across calls on the same ordering:
    ``table[0]`` counts hits, ``table[1]`` stores, then 2-slot buckets of two words per key
    (length ``2 + 2 * slots``, ``slots`` a power of two >= 2; length 0: no table); ``zob``: its
    random words, shape ``(2, table_words(n, nsec))``.

    Unit ``i`` reaches ``size[i]`` above its offset in the peak, spans ``[s0[i], s1[i])``, may go
    to offsets in ``[lo[i], hi[i]]`` (``hi``: the memory's capacity) and has pieces
    ``pp[i]:pp[i + 1]``: piece ``q`` covers sections ``[ps0[q], ps1[q])`` and bytes
    ``[o + py0[q], o + py0[q] + ph[q])`` when the unit is at ``o`` (``min py0 == 0`` per unit)."""
    n = size.shape[0]
    single = pp[n] == n  # one rectangle per unit
    placed = np.zeros(n, np.bool_)
    mf = lo.copy()  # highest floor under each buffer's lifespan (its lowest offset before alignment)
    floor = np.zeros(nsec, np.int64)
    load = np.zeros(nsec, np.int64)
    cross = np.zeros(nsec + 1, np.int64)  # unplaced buffers crossing the boundary before section k
    tsize = n + 16
    for i in range(n):
        for q in range(pp[i], pp[i + 1]):
            for s in range(ps0[q], ps1[q]):
                load[s] += ph[q]
            tsize += ps1[q] - ps0[q]
        for k in range(s0[i] + 1, s1[i]):
            cross[k] += 1
    tsize += nb_idx.shape[0]
    tk = np.empty(tsize, np.int64)
    ti = np.empty(tsize, np.int64)
    tv = np.empty(tsize, np.int64)
    ttop = 0
    pool = np.empty(16 * n + 64, np.int64)
    m = n + 2
    use_tt = table.shape[0] >= 6
    nbk = (table.shape[0] - 2) // 4  # buckets of two slots (a power of two)
    zc = n  # zob columns: placed units at 0, component members at zc, last unit at zl (+1), sections at za
    zl = 2 * n
    za = 3 * n + 1
    zL = za + nsec
    hp1 = np.int64(0)  # Zobrist hashes of the placed set and of the floors (incremental)
    hp2 = np.int64(0)
    hf1 = np.int64(0)
    hf2 = np.int64(0)
    hk1 = np.int64(0)  # the capacity's words
    hk2 = np.int64(0)
    if use_tt:
        hk1 = _word(zob[0, zL + 1], cap)
        hk2 = _word(zob[1, zL + 1], cap)
        for s in range(nsec):  # every floor starts at 0
            hf1 ^= _word(zob[0, za + s], 0)
            hf2 ^= _word(zob[1, za + s], 0)
    pend_h1 = np.zeros(m, np.int64)  # pending components' member hashes
    pend_h2 = np.zeros(m, np.int64)
    f_c1 = np.empty(m, np.int64)  # the frame's component hash, its key, the hashes before its placement
    f_c2 = np.empty(m, np.int64)
    f_k1 = np.empty(m, np.int64)
    f_k2 = np.empty(m, np.int64)
    f_hp1 = np.empty(m, np.int64)
    f_hp2 = np.empty(m, np.int64)
    f_hf1 = np.empty(m, np.int64)
    f_hf2 = np.empty(m, np.int64)
    f_rec = np.zeros(m, np.bool_)  # record the frame's key when it fails
    pend_start = np.empty(m, np.int64)
    pend_len = np.empty(m, np.int64)
    pend_cnt = np.empty(m, np.int64)  # unplaced buffers left in the component
    pend_L = np.empty(m, np.int64)
    pend_Li = np.empty(m, np.int64)
    pend_owner = np.empty(m, np.int64)
    f_start = np.empty(m, np.int64)
    f_len = np.empty(m, np.int64)
    f_cnt = np.empty(m, np.int64)
    f_L = np.empty(m, np.int64)
    f_Li = np.empty(m, np.int64)
    f_owner = np.empty(m, np.int64)
    f_pt = np.empty(m, np.int64)
    f_pool = np.empty(m, np.int64)
    f_trail = np.empty(m, np.int64)
    f_i = np.empty(m, np.int64)
    f_lo = np.empty(m, np.int64)  # lowest-first: offset of the last candidate tried
    f_U1 = np.empty(m, np.int64)
    f_U1a = np.empty(m, np.int64)
    f_U2 = np.empty(m, np.int64)
    f_F = np.empty(m, np.int64)
    f_Fa = np.empty(m, np.int64)
    f_hat = np.zeros(m, np.bool_)  # lowest-first: the last candidate placed overlapped no unplaced buffer
    cuts = np.empty(nsec + 1, np.int64)
    acc = np.zeros(nsec + 1, np.int64)
    min1 = np.empty(nsec + 1, np.int64)  # smallest unplaced size per section (and whose), next smallest
    min1c = np.empty(nsec + 1, np.int64)
    min2 = np.empty(nsec + 1, np.int64)
    ev = np.empty(n, np.int64)
    lg = np.zeros(nsec + 2, np.int64)  # floor(log2(x)) for the range maxima of the remaining load
    for x in range(2, nsec + 2):
        lg[x] = lg[x >> 1] + 1
    rmax = np.empty((lg[nsec + 1] + 1, nsec + 1), np.int64)
    sel = np.empty(n, np.int64)
    evb = np.empty(n, np.int64)
    members = np.empty(n, np.int64)

    # initial components
    for i in range(n):
        pool[i] = i
    ncut = 0
    for k in range(1, nsec):
        if cross[k] == 0:
            cuts[ncut] = k
            ncut += 1
    pool_top, pt, parts = _push_split(pool, n, cuts, ncut, s0, s1, floor, load, cap, pool, n,
                                      pend_start, pend_len, pend_cnt, pend_L, pend_Li, pend_owner, 0, -1,
                                      use_tt, zob, zc, pend_h1, pend_h2)
    if parts == 1:
        pend_start[0] = 0
        pend_len[0] = n
        pend_cnt[0] = n
        pend_L[0] = -1
        pend_Li[0] = -1
        pend_owner[0] = -1
        if use_tt:
            for i in range(n):
                pend_h1[0] ^= zob[0, zc + i]
                pend_h2[0] ^= zob[1, zc + i]
        pt = 1

    nodes = 0
    depth = 0
    new_frame = True
    while True:
        d = depth
        exhausted = False
        if new_frame:
            new_frame = False
            if pt == 0:
                return FOUND, nodes
            nodes += 1
            if nodes > node_limit:
                return LIMIT, nodes
            if (nodes & 1023) == 0 and stop[0] != 0:
                return LIMIT, nodes
            j = pt - 1
            st = pend_start[j]
            ln = pend_len[j]
            L = pend_L[j]
            Li = pend_Li[j]
            f_start[d] = st
            f_len[d] = ln
            f_cnt[d] = pend_cnt[j]
            f_L[d] = L
            f_Li[d] = Li
            f_owner[d] = pend_owner[j]
            f_pt[d] = pt
            f_pool[d] = pool_top
            f_i[d] = 0
            f_lo[d] = -1
            f_hat[d] = False
            f_rec[d] = False
            if use_tt:
                # the key: capacity, placed set, floors, component members, L and Li (docstring)
                f_c1[d] = pend_h1[j]
                f_c2[d] = pend_h2[j]
                f_hp1[d] = hp1
                f_hp2[d] = hp2
                f_hf1[d] = hf1
                f_hf2[d] = hf2
                k1 = hk1 ^ hp1 ^ hf1 ^ pend_h1[j] ^ _word(zob[0, zL], L) ^ zob[0, zl + Li + 1]
                k2 = hk2 ^ hp2 ^ hf2 ^ pend_h2[j] ^ _word(zob[1, zL], L) ^ zob[1, zl + Li + 1]
                f_k1[d] = k1
                f_k2[d] = k2
                if k1 != 0 or k2 != 0:  # (0, 0) marks an empty slot: such a key is never stored
                    at = 2 + 4 * (k1 & (nbk - 1))
                    if (table[at] == k1 and table[at + 1] == k2) or (table[at + 2] == k1 and table[at + 3] == k2):
                        table[0] += 1
                        exhausted = True  # this very subtree failed before
                    else:
                        f_rec[d] = True
            # node checks; bounds for the dominance rule
            U1 = _BIG
            U1a = -1
            U2 = _BIG
            F = _BIG
            Fa = -1
            emin = _BIG
            smin = nsec
            smax = 0
            for p in range(ln):
                c = pool[st + p]
                if placed[c]:
                    continue
                if fixed[c] >= 0:
                    oc = fixed[c]
                    if mf[c] > oc or oc < L or (oc == L and c < Li):
                        exhausted = True
                        break
                    if oc < F or (oc == F and c < Fa):
                        F = oc
                        Fa = c
                    e = oc
                else:
                    oc = _align(mf[c], mod[c], res[c])
                    v = oc + size[c]
                    if v < U1:
                        U2 = U1
                        U1 = v
                        U1a = c
                    elif v < U2:
                        U2 = v
                    e = oc
                    if e < L:
                        e = _align(L, mod[c], res[c])
                if e + size[c] > cap or e > hi[c]:
                    exhausted = True
                    break
                emin = min(emin, e)
                smin = min(smin, s0[c])
                smax = max(smax, s1[c])
            if U1 <= L:  # some buffer fits wholly below every offset still allowed: dominated
                exhausted = True
            if not exhausted:
                # in each section, the unplaced buffers that cannot go below t stack up above t:
                # t + their sizes <= cap for every threshold t (their lowest offsets, high to low)
                # a buffer whose lowest offset is below L rests, in the reference plan, on a buffer
                # placed later (at >= L) that overlaps it in time: it starts at >= L + that size
                base = max(L, emin)
                if not single:  # per section, the smallest unplaced piece (and whose) and the next
                    for s in range(smin, smax):
                        min1[s] = _BIG
                        min2[s] = _BIG
                        min1c[s] = -1
                    for p in range(ln):
                        c = pool[st + p]
                        if not placed[c]:
                            for q in range(pp[c], pp[c + 1]):
                                h = ph[q]
                                for s in range(ps0[q], ps1[q]):
                                    if h < min1[s]:
                                        min2[s] = min1[s]
                                        min1[s] = h
                                        min1c[s] = c
                                    elif h < min2[s]:
                                        min2[s] = h
                k = 0
                for p in range(ln):
                    c = pool[st + p]
                    if not placed[c]:
                        if fixed[c] >= 0:
                            ev[k] = fixed[c]
                        elif _align(mf[c], mod[c], res[c]) < L:
                            ms = _BIG
                            if single:  # neighbours lowest first: the first unplaced one is the smallest
                                for q in range(nb_ptr[c], nb_ptr[c + 1]):
                                    if not placed[nb_idx[q]]:
                                        ms = ph[nb_idx[q]]
                                        break
                            else:
                                for q in range(_piece(pp, c, single), _piece(pp, c + 1, single)):
                                    for s in range(ps0[q], ps1[q]):
                                        ms = min(ms, min2[s] if min1c[s] == c else min1[s])
                            ev[k] = _align(max(mf[c], base, L + ms), mod[c], res[c])
                        else:
                            ev[k] = _align(max(mf[c], base), mod[c], res[c])
                        evb[k] = c
                        k += 1
                # a section's sum never exceeds its remaining load, so only a unit whose threshold plus
                # the highest load over its span exceeds cap can fail: the pass runs over the sections
                # those units span, with the units from the lowest such threshold up (the same answer)
                for s in range(smin, smax):
                    rmax[0, s] = load[s]
                w = 1
                for lv in range(1, lg[smax - smin] + 1):
                    for s in range(smin, smax - 2 * w + 1):
                        rmax[lv, s] = max(rmax[lv - 1, s], rmax[lv - 1, s + w])
                    w *= 2
                dmin = nsec
                dmax = 0
                tmin = -1  # none (a threshold can reach _BIG: a unit with nothing left to lift it)
                for r in range(k):
                    c = evb[r]
                    if s1[c] <= s0[c]:
                        continue  # no footprint
                    lv = lg[s1[c] - s0[c]]
                    top = max(rmax[lv, s0[c]], rmax[lv, s1[c] - (1 << lv)])
                    if ev[r] + top > cap:
                        dmin = min(dmin, s0[c])
                        dmax = max(dmax, s1[c])
                        tmin = ev[r] if tmin < 0 else min(tmin, ev[r])
                if tmin >= 0:
                    ks = 0
                    for r in range(k):
                        if ev[r] >= tmin:
                            sel[ks] = r
                            ks += 1
                    srt = np.argsort(ev[sel[:ks]])
                    for s in range(dmin, dmax):
                        acc[s] = 0
                    # one pass, highest first: a section's sum is complete at the last unit of a
                    # threshold that covers it, and partial sums earlier in the threshold are lower
                    for j in range(ks - 1, -1, -1):
                        r = sel[srt[j]]
                        c = evb[r]
                        room = cap - ev[r]
                        for q in range(_piece(pp, c, single), _piece(pp, c + 1, single)):
                            h = ph[q]
                            top = 0
                            for s in range(max(ps0[q], dmin), min(ps1[q], dmax)):
                                a = acc[s] + h
                                acc[s] = a
                                top = max(top, a)
                            if top > room:
                                exhausted = True
                        if exhausted:
                            break
            f_U1[d] = U1
            f_U1a[d] = U1a
            f_U2[d] = U2
            f_F[d] = F
            f_Fa[d] = Fa
        elif f_hat[d]:
            exhausted = True  # hatless: the reference plan is not in a later branch (see above)
        if not exhausted:
            L = f_L[d]
            Li = f_Li[d]
            st = f_start[d]
            ln = f_len[d]
            b = -1
            ob = 0
            p = 0
            while p < ln:
                c = pool[st + p]
                p += 1
                if placed[c]:
                    continue
                if twin[c] >= 0 and not placed[twin[c]]:
                    continue
                if fixed[c] >= 0:
                    oc = fixed[c]
                    if mf[c] > oc:
                        continue
                else:
                    oc = _align(mf[c], mod[c], res[c])
                # candidates in (offset, index) order after the last one tried
                if oc < f_lo[d] or (oc == f_lo[d] and c <= f_i[d]):
                    continue
                if b >= 0 and (oc > ob or (oc == ob and c > b)):
                    continue
                if oc < L or (oc == L and c < Li):
                    continue
                if oc + size[c] > cap or oc > hi[c]:
                    continue
                u = f_U2[d] if f_U1a[d] == c else f_U1[d]
                if u <= oc:
                    continue
                if f_Fa[d] >= 0 and f_Fa[d] != c and (f_F[d] < oc or (f_F[d] == oc and f_Fa[d] < c)):
                    continue
                bad = False
                for q in range(fx_ptr[c], fx_ptr[c + 1]):
                    f = fx_idx[q]
                    if (not placed[f] and fixed[f] < oc + size[c] and oc < fixed[f] + size[f]
                            and _collide(c, oc, f, fixed[f], pp, ps0, ps1, py0, ph)):
                        bad = True
                        break
                if bad:
                    continue
                b = c
                ob = oc
            if b >= 0:
                f_lo[d] = ob
                f_i[d] = b
            if b >= 0:
                f_trail[d] = ttop
                pt = f_pt[d] - 1
                pool_top = f_pool[d]
                # place b at ob
                tk[ttop] = _PLACE
                ti[ttop] = b
                ttop += 1
                placed[b] = True
                offsets[b] = ob
                if use_tt:
                    hp1 ^= zob[0, b]
                    hp2 ^= zob[1, b]
                for q in range(_piece(pp, b, single), _piece(pp, b + 1, single)):
                    t = ob + py0[q] + ph[q]
                    for s in range(ps0[q], ps1[q]):
                        v = floor[s]
                        tk[ttop] = _FLOOR
                        ti[ttop] = s
                        tv[ttop] = v
                        ttop += 1
                        load[s] -= ph[q]
                        if t > v:
                            floor[s] = t
                            if use_tt:
                                hf1 ^= _word(zob[0, za + s], v) ^ _word(zob[0, za + s], t)
                                hf2 ^= _word(zob[1, za + s], v) ^ _word(zob[1, za + s], t)
                ncut = 0
                for k in range(s0[b] + 1, s1[b]):
                    cross[k] -= 1
                    if cross[k] == 0:
                        cuts[ncut] = k
                        ncut += 1
                hatless = True
                t = ob + ph[_piece(pp, b, single)]
                for q in range(nb_ptr[b], nb_ptr[b + 1]):
                    c = nb_idx[q]
                    if placed[c]:
                        continue
                    # one piece each: the spans overlap, so the pieces share a section (py0 == 0)
                    tc = t if single else _shared_top(b, ob, c, pp, ps0, ps1, py0, ph)
                    if tc == -_BIG:
                        continue  # only the spans overlap (a gap): nothing of b lies under c
                    hatless = False
                    if mf[c] < tc:
                        tk[ttop] = _MF
                        ti[ttop] = c
                        tv[ttop] = mf[c]
                        ttop += 1
                        mf[c] = tc
                f_hat[d] = hatless
                rem = f_cnt[d] - 1
                parts = 1
                if rem > 0 and ncut > 0:
                    nmem = 0
                    for q in range(ln):
                        c = pool[st + q]
                        if not placed[c]:
                            members[nmem] = c
                            nmem += 1
                    if pool_top + nmem > pool.shape[0]:
                        # grow rather than skip the split: what a subtree does may depend only on its state
                        grown = np.empty(2 * pool.shape[0] + nmem, np.int64)
                        grown[:pool_top] = pool[:pool_top]
                        pool = grown
                    pool_top, pt, parts = _push_split(members, nmem, cuts, ncut, s0, s1, floor, load, cap,
                                                      pool, pool_top, pend_start, pend_len, pend_cnt, pend_L,
                                                      pend_Li, pend_owner, pt, d, use_tt, zob, zc, pend_h1, pend_h2)
                if rem > 0 and parts == 1:
                    pend_start[pt] = st
                    pend_len[pt] = ln
                    pend_cnt[pt] = rem
                    pend_L[pt] = ob
                    pend_Li[pt] = b
                    pend_owner[pt] = d
                    pend_h1[pt] = f_c1[d] ^ zob[0, zc + b] if use_tt else 0
                    pend_h2[pt] = f_c2[d] ^ zob[1, zc + b] if use_tt else 0
                    pt += 1
                depth = d + 1
                new_frame = True
                continue
        # no (further) candidate here: the owner of this component tries its next choice
        if f_rec[d]:
            # this component has no completion from this state: remember it (newest first in the bucket)
            k1 = f_k1[d]
            k2 = f_k2[d]
            at = 2 + 4 * (k1 & (nbk - 1))
            if table[at] != k1 or table[at + 1] != k2:
                table[at + 2] = table[at]
                table[at + 3] = table[at + 1]
                table[at] = k1
                table[at + 1] = k2
                table[1] += 1
            f_rec[d] = False
        o = f_owner[d]
        if o < 0:
            return INFEASIBLE, nodes
        depth = o
        if use_tt:
            hp1 = f_hp1[o]
            hp2 = f_hp2[o]
            hf1 = f_hf1[o]
            hf2 = f_hf2[o]
        mark = f_trail[o]
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
                for q in range(_piece(pp, x, single), _piece(pp, x + 1, single)):
                    for s in range(ps0[q], ps1[q]):
                        load[s] += ph[q]
                for k in range(s0[x] + 1, s1[x]):
                    cross[k] += 1


@njit(cache=True)
def overlap_graph(s0, s1):
    """CSR adjacency of buffers whose section spans intersect (they share a time step)."""
    n = s0.shape[0]
    order = np.argsort(s0, kind="mergesort")
    deg = np.zeros(n, np.int64)
    for a in range(n):
        i = order[a]
        for b in range(a + 1, n):
            j = order[b]
            if s0[j] >= s1[i]:
                break
            deg[i] += 1
            deg[j] += 1
    ptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        ptr[i + 1] = ptr[i] + deg[i]
    idx = np.empty(ptr[n], np.int64)
    fill = ptr[:n].copy()
    for a in range(n):
        i = order[a]
        for b in range(a + 1, n):
            j = order[b]
            if s0[j] >= s1[i]:
                break
            idx[fill[i]] = j
            fill[i] += 1
            idx[fill[j]] = i
            fill[j] += 1
    return ptr, idx


@njit(cache=True)
def count_overlaps(s0, s1):
    """Number of overlapping pairs (to decide whether the adjacency lists are affordable)."""
    n = s0.shape[0]
    order = np.argsort(s0, kind="mergesort")
    a0 = s0[order]
    total = 0
    for a in range(n):
        i = order[a]
        total += np.searchsorted(a0, s1[i], side="left") - a - 1
    return total


@njit(cache=True)
def _sift_down(heap, hn, j):
    """Restore the min-heap order of ``heap[:hn]`` below position ``j``."""
    while True:
        c = 2 * j + 1
        if c >= hn:
            return
        if c + 1 < hn and heap[c + 1] < heap[c]:
            c += 1
        if heap[j] <= heap[c]:
            return
        heap[j], heap[c] = heap[c], heap[j]
        j = c


@njit(cache=True)
def skyline_dive(size, s0, s1, mod, res, lo, rank, nsec, offsets):
    """The lowest-offset-first dive for instances too large for adjacency lists: repeatedly place
    the unplaced buffer with the lowest canonical offset (ties by rank). Floors live in a segment
    tree (range raise, range max); a lazy heap keyed (offset, rank) finds the next buffer."""
    n = size.shape[0]
    width = 1
    while width < max(nsec, 1):
        width *= 2
    t = np.zeros(2 * width, np.int64)  # max over the node's range, tags included
    tag = np.zeros(2 * width, np.int64)  # raise applying to the node's whole range
    byrank = np.empty(n, np.int64)
    for i in range(n):
        byrank[rank[i]] = i
    heap = np.empty(n, np.int64)
    for r in range(n):
        i = byrank[r]
        heap[r] = _align(lo[i], mod[i], res[i]) * n + r
    hn = n
    for k in range(hn // 2 - 1, -1, -1):  # heapify
        _sift_down(heap, hn, k)
    while hn > 0:
        key = heap[0]
        r = key % n
        i = byrank[r]
        # range max of floors over [s0, s1)
        lo_ = s0[i] + width
        hi_ = s1[i] + width
        best = lo[i]
        a = lo_
        b = hi_
        while a < b:
            if a & 1:
                best = max(best, t[a])
                a += 1
            if b & 1:
                b -= 1
                best = max(best, t[b])
            a >>= 1
            b >>= 1
        p = lo_ >> 1
        while p >= 1:
            best = max(best, tag[p])
            p >>= 1
        p = (hi_ - 1) >> 1
        while p >= 1:
            best = max(best, tag[p])
            p >>= 1
        o = _align(best, mod[i], res[i])
        newkey = o * n + r
        # pop the top, then either place it or push it back with its true key
        hn -= 1
        last = heap[hn]
        if newkey > key:
            last_val = newkey
            heap[hn] = last  # keep the element count; reinsert below
            hn += 1
            heap[0] = last_val
        else:
            heap[0] = last
            offsets[i] = o
            top = o + size[i]
            a = lo_
            b = hi_
            while a < b:
                if a & 1:
                    t[a] = max(t[a], top)
                    tag[a] = max(tag[a], top)
                    a += 1
                if b & 1:
                    b -= 1
                    t[b] = max(t[b], top)
                    tag[b] = max(tag[b], top)
                a >>= 1
                b >>= 1
            p = lo_ >> 1
            while p >= 1:
                t[p] = max(t[p], max(t[2 * p], t[2 * p + 1]))
                p >>= 1
            p = (hi_ - 1) >> 1
            while p >= 1:
                t[p] = max(t[p], max(t[2 * p], t[2 * p + 1]))
                p >>= 1
        _sift_down(heap, hn, 0)
