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
  (``_valleys_fail``, single rectangles).

Every rule is a switch (``Rules``; the order rule and the floors are the search itself).

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

from collections import namedtuple

import numpy as np
from numba import njit

FOUND, INFEASIBLE, LIMIT = 1, 0, 2
POLL_NODES = 64  # the search reads its stop flag every this many nodes (a power of two): a raced ordering
# that lost stops within a millisecond, not 1024 nodes (20-40 ms at load) later
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


# -- the search's state: one named structure ---------------------------------------------------

Arrays = namedtuple("Arrays", ["size", "s0", "s1", "pp", "ps0", "ps1", "py0", "ph", "mod", "res", "lo", "hi",
                               "fixed", "nb_ptr", "nb_idx", "fx_ptr", "fx_idx", "twin", "nsec"])
Arrays.__doc__ = "An ordering's static arrays (``search``'s docstring); ``nsec`` the number of sections."

Rules = namedtuple("Rules", ["dominance", "sections", "lift", "twins", "decomposition", "hatless", "valleys", "tight",
                             "forced"])
Rules.__doc__ = """Pruning rules that can be switched off one by one (module docstring; MiniMalloc's
``SolverParams`` is the model). Each is sound on its own: switching any off changes node counts, never
the answer. ``lift`` only sharpens the section check's thresholds. The order rule and the canonical
floors are the search itself, not switches; the failed-state table is switched off by an empty ``table``."""
ALL_RULES = Rules(True, True, True, True, True, True, True, True, True)

# Frames: one row per depth, Pending: one row per component waiting to be searched (int64 columns).
# A frame holds its component (pool slice, unplaced count, L and Li), its owner (the frame to return
# to on failure), what to restore (pending top, pool top, trail mark, placement hashes), the last
# candidate tried (offset LO, index I), the dominance bounds (U1/U1A/U2, fixed F/FA), HAT (the last
# unit placed has no unplaced unit above it), and the failed-state table's component hash (C1, C2),
# key (K1, K2) and whether to store the key when the frame fails (REC).
(_F_START, _F_LEN, _F_CNT, _F_L, _F_LI, _F_OWNER, _F_PT, _F_POOL, _F_TRAIL, _F_I, _F_LO, _F_U1, _F_U1A, _F_U2, _F_F,
 _F_FA, _F_HAT, _F_REC, _F_C1, _F_C2, _F_K1, _F_K2, _F_HP1, _F_HP2, _F_HF1, _F_HF2, _F_CEIL, _F_FS, _NF) = range(29)
# a pending component: pool slice, unplaced count, L and Li, owner, member hashes
_P_START, _P_LEN, _P_CNT, _P_L, _P_LI, _P_OWNER, _P_H1, _P_H2, _NP = range(9)
Scratch = namedtuple("Scratch", ["cuts", "acc", "min1", "min1c", "min2", "ev", "lg", "rmax", "sel", "evb", "members",
                                 "vst", "vend", "head", "nxt", "reach"])
State = namedtuple("State", ["placed", "mf", "floor", "load", "cross", "tk", "ti", "tv", "reg", "f", "p", "w"])
# reg: the scalars (trail top, pool top, pending top, placed-set and floor hashes, capacity words)
_TTOP, _POOL, _PT, _HP1, _HP2, _HF1, _HF2, _HK1, _HK2 = range(9)
_ZW = 3  # zob columns: placed units at 0, component members at n, last unit at 2n (+1), sections at 3n+1


@njit(cache=True)
def _new_state(a, cap, use_tt, zob):
    """Every array the search works on, sized for ``a``, with the loads of all units and floors at 0."""
    n = a.size.shape[0]
    nsec = a.nsec
    mf = a.lo.copy()  # highest floor under each unit's pieces (its lowest offset before alignment)
    load = np.zeros(nsec, np.int64)
    cross = np.zeros(nsec + 1, np.int64)  # unplaced units crossing the boundary before section k
    tsize = n + 16 + a.nb_idx.shape[0]
    for i in range(n):
        for q in range(a.pp[i], a.pp[i + 1]):
            for s in range(a.ps0[q], a.ps1[q]):
                load[s] += a.ph[q]
            tsize += a.ps1[q] - a.ps0[q]
        for k in range(a.s0[i] + 1, a.s1[i]):
            cross[k] += 1
    m = n + 2
    f = np.zeros((m, _NF), np.int64)
    p = np.zeros((m, _NP), np.int64)
    lg = np.zeros(nsec + 2, np.int64)  # floor(log2(x)) for the range maxima of the remaining load
    for x in range(2, nsec + 2):
        lg[x] = lg[x >> 1] + 1
    w = Scratch(np.empty(nsec + 1, np.int64), np.zeros(nsec + 1, np.int64), np.empty(nsec + 1, np.int64),
                np.empty(nsec + 1, np.int64), np.empty(nsec + 1, np.int64), np.empty(n, np.int64), lg,
                np.empty((lg[nsec + 1] + 1, nsec + 1), np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
                np.empty(n, np.int64), np.empty(nsec + 1, np.int64), np.empty(nsec + 1, np.int64),
                np.empty(nsec + 1, np.int64), np.empty(n, np.int64), np.zeros(nsec + 1, np.bool_))
    reg = np.zeros(9, np.int64)
    if use_tt:
        za = _ZW * n + 1
        zL = za + nsec
        reg[_HK1] = _word(zob[0, zL + 1], cap)
        reg[_HK2] = _word(zob[1, zL + 1], cap)
        for s in range(nsec):  # every floor starts at 0
            reg[_HF1] ^= _word(zob[0, za + s], 0)
            reg[_HF2] ^= _word(zob[1, za + s], 0)
    return State(np.zeros(n, np.bool_), mf, np.zeros(nsec, np.int64), load, cross, np.empty(tsize, np.int64),
                 np.empty(tsize, np.int64), np.empty(tsize, np.int64), reg, f, p, w)


@njit(cache=True)
def _push_split(st, a, pool, nmem, ncut, cap, owner, use_tt, zob):
    """Split ``st.w.members[:nmem]`` (unplaced, in index order) at the time cuts ``st.w.cuts[:ncut]``
    and push one pending component per non-empty part, the least slack on top (``pool`` has room
    for ``nmem`` more from ``reg[_POOL]``). With the table, each part's member hash goes with it.
    Returns the number of parts (one: nothing pushed, the caller continues)."""
    pe = st.p
    members, cuts = st.w.members, st.w.cuts
    a_s0, a_s1, a_size = a.s0, a.s1, a.size
    floor = st.floor
    load = st.load
    reg = st.reg
    seg = np.empty(nmem, np.int64)
    cnt = np.zeros(ncut + 1, np.int64)
    smin = np.full(ncut + 1, _BIG, np.int64)
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
    slack = np.full(ncut + 1, _BIG, np.int64)
    start = np.zeros(ncut + 1, np.int64)
    pos = reg[_POOL]
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
    pt = reg[_PT]
    for _ in range(parts):  # push the loosest first so the tightest ends on top
        best = -1
        for j in range(ncut + 1):
            if cnt[j] > 0 and not done[j] and (best < 0 or slack[j] > slack[best]):
                best = j
        done[best] = True
        pe[pt, _P_START] = start[best]
        pe[pt, _P_LEN] = cnt[best]
        pe[pt, _P_CNT] = cnt[best]
        pe[pt, _P_L] = -1
        pe[pt, _P_LI] = -1
        pe[pt, _P_OWNER] = owner
        h1 = np.int64(0)
        h2 = np.int64(0)
        if use_tt:
            for p in range(start[best], start[best] + cnt[best]):
                h1 ^= zob[0, zc + pool[p]]
                h2 ^= zob[1, zc + pool[p]]
        pe[pt, _P_H1] = h1
        pe[pt, _P_H2] = h2
        pt += 1
    reg[_PT] = pt
    reg[_POOL] = pos
    return parts


@njit(cache=True)
def _initial_components(st, a, pool, cap, use_tt, zob, split):
    """Push the instance's components (with ``split``, one per stretch of time that no unit
    crosses the ends of)."""
    n = a.size.shape[0]
    for i in range(n):
        pool[i] = i
        st.w.members[i] = i
    ncut = 0
    for k in range(1, a.nsec if split else 0):
        if st.cross[k] == 0:
            st.w.cuts[ncut] = k
            ncut += 1
    st.reg[_POOL] = n
    if _push_split(st, a, pool, n, ncut, cap, -1, use_tt, zob) == 1:
        pe = st.p
        pe[0, _P_START] = 0
        pe[0, _P_LEN] = n
        pe[0, _P_CNT] = n
        pe[0, _P_L] = -1
        pe[0, _P_LI] = -1
        pe[0, _P_OWNER] = -1
        pe[0, _P_H1] = 0
        pe[0, _P_H2] = 0
        if use_tt:
            for i in range(n):
                pe[0, _P_H1] ^= zob[0, n + i]
                pe[0, _P_H2] ^= zob[1, n + i]
        st.reg[_PT] = 1


@njit(cache=True, inline="always")
def _enter(st, d, use_tt):
    """Open frame ``d`` on the pending component on top (and keep the placement hashes to restore)."""
    fr = st.f
    pe = st.p
    reg = st.reg
    pt = reg[_PT]
    j = pt - 1
    fr[d, _F_START] = pe[j, _P_START]
    fr[d, _F_LEN] = pe[j, _P_LEN]
    fr[d, _F_CNT] = pe[j, _P_CNT]
    fr[d, _F_L] = pe[j, _P_L]
    fr[d, _F_LI] = pe[j, _P_LI]
    fr[d, _F_OWNER] = pe[j, _P_OWNER]
    fr[d, _F_PT] = pt
    fr[d, _F_POOL] = reg[_POOL]
    fr[d, _F_I] = 0
    fr[d, _F_LO] = -1
    fr[d, _F_HAT] = False
    fr[d, _F_REC] = False
    fr[d, _F_FS] = -1
    if use_tt:
        fr[d, _F_C1] = pe[j, _P_H1]
        fr[d, _F_C2] = pe[j, _P_H2]
        fr[d, _F_HP1] = reg[_HP1]
        fr[d, _F_HP2] = reg[_HP2]
        fr[d, _F_HF1] = reg[_HF1]
        fr[d, _F_HF2] = reg[_HF2]


@njit(cache=True, inline="always")
def _lookup(st, a, d, table, zob, blocked):
    """True when the failed-state table knows frame ``d``'s key (the frame then fails at once).
    The key: capacity, placed set, floors, component members, and L and Li only while the order
    rule keeps some unplaced unit from its lowest offset (``blocked``): otherwise nothing below
    depends on them (docstring), and states reached in different orders meet."""
    fr = st.f
    reg = st.reg
    n = a.size.shape[0]
    zL = _ZW * n + 1 + a.nsec
    L = fr[d, _F_L] if blocked else -1
    Li = fr[d, _F_LI] if blocked else -1
    k1 = reg[_HK1] ^ reg[_HP1] ^ reg[_HF1] ^ fr[d, _F_C1] ^ _word(zob[0, zL], L) ^ zob[0, 2 * n + Li + 1]
    k2 = reg[_HK2] ^ reg[_HP2] ^ reg[_HF2] ^ fr[d, _F_C2] ^ _word(zob[1, zL], L) ^ zob[1, 2 * n + Li + 1]
    fr[d, _F_K1] = k1
    fr[d, _F_K2] = k2
    if k1 == 0 and k2 == 0:  # (0, 0) marks an empty slot: such a key is never stored
        return False
    nbk = (table.shape[0] - 2) // 4
    at = 2 + 4 * (k1 & (nbk - 1))
    if (table[at] == k1 and table[at + 1] == k2) or (table[at + 2] == k1 and table[at + 3] == k2):
        table[0] += 1
        return True  # this very subtree failed before
    fr[d, _F_REC] = True
    return False


@njit(cache=True, inline="always")
def _bounds(st, a, rules, d, pool, cap):
    """Entry checks of frame ``d`` (every unplaced unit still fits above L and under ``cap``;
    dominance) and the dominance bounds its candidates need. Returns (fails, emin, smin, smax, blocked):
    the lowest offset any unplaced unit may still take and the sections they span."""
    fr = st.f
    a_fixed, a_hi, a_mod, a_nsec, a_res, a_s0, a_s1, a_size = a.fixed, a.hi, a.mod, a.nsec, a.res, a.s0, a.s1, a.size
    placed = st.placed
    mf = st.mf
    L = fr[d, _F_L]
    Li = fr[d, _F_LI]
    U1 = _BIG
    U1a = -1
    U2 = _BIG
    F = _BIG
    Fa = -1
    emin = _BIG
    smin = a_nsec
    smax = 0
    fails = False
    blocked = False  # the order rule keeps some unit from its lowest offset
    for p in range(fr[d, _F_LEN]):
        c = pool[fr[d, _F_START] + p]
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
            oc = _align(mf[c], a_mod[c], a_res[c])
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
                e = _align(L, a_mod[c], a_res[c])
        if e + a_size[c] > cap or e > a_hi[c]:
            fails = True
            break
        emin = min(emin, e)
        smin = min(smin, a_s0[c])
        smax = max(smax, a_s1[c])
    ceil = _BIG
    if rules.tight and not fails:
        floor, load = st.floor, st.load
        for s in range(smin, smax):
            if load[s] > 0 and floor[s] + load[s] >= cap and floor[s] < ceil:
                ceil = floor[s]
    fr[d, _F_CEIL] = ceil
    if not rules.dominance:
        U1 = U2 = F = _BIG
        U1a = Fa = -1
    if U1 <= L:  # some unit fits wholly below every offset still allowed: dominated
        fails = True
    fr[d, _F_U1] = U1
    fr[d, _F_U1A] = U1a
    fr[d, _F_U2] = U2
    fr[d, _F_F] = F
    fr[d, _F_FA] = Fa
    return fails, emin, smin, smax, blocked


@njit(cache=True, inline="always")
def _thresholds(st, a, rules, d, pool, single, base, smin, smax):
    """Each unplaced unit's threshold (its lowest offset, lifted above L when it lies below it)
    into ``w.ev`` (unit in ``w.evb``); returns how many."""
    fr = st.f
    a_fixed, a_mod, a_nb_idx, a_nb_ptr, a_ph, a_pp, a_ps0, a_ps1, a_res = a.fixed, a.mod, a.nb_idx, a.nb_ptr, a.ph, a.pp, a.ps0, a.ps1, a.res
    w_ev, w_evb, w_min1, w_min1c, w_min2 = st.w.ev, st.w.evb, st.w.min1, st.w.min1c, st.w.min2
    placed = st.placed
    mf = st.mf
    L = fr[d, _F_L]
    Li = fr[d, _F_LI]
    st0 = fr[d, _F_START]
    ln = fr[d, _F_LEN]
    lift = rules.lift
    if lift and not single:  # per section, the smallest unplaced piece (and whose) and the next
        for s in range(smin, smax):
            w_min1[s] = _BIG
            w_min2[s] = _BIG
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
        elif lift and (_align(mf[c], a_mod[c], a_res[c]) < L or (_align(mf[c], a_mod[c], a_res[c]) == L and c < Li)):
            ms = _BIG
            if single:  # neighbours lowest first: the first unplaced one is the smallest
                for q in range(a_nb_ptr[c], a_nb_ptr[c + 1]):
                    if not placed[a_nb_idx[q]]:
                        ms = a_ph[a_nb_idx[q]]
                        break
            else:
                for q in range(_piece(a_pp, c, single), _piece(a_pp, c + 1, single)):
                    for s in range(a_ps0[q], a_ps1[q]):
                        ms = min(ms, w_min2[s] if w_min1c[s] == c else w_min1[s])
            w_ev[k] = _align(max(mf[c], base, L + ms), a_mod[c], a_res[c])
        else:
            w_ev[k] = _align(max(mf[c], base), a_mod[c], a_res[c])
        w_evb[k] = c
        k += 1
    return k


@njit(cache=True, inline="always")
def _sections_fail(st, a, rules, d, pool, cap, single, emin, smin, smax):
    """The section check: in each section, the pieces of the unplaced units whose threshold is
    >= t stack between t and ``cap``, for every t. A section's sum never exceeds its remaining
    load, so only a unit whose threshold plus the highest load over its span exceeds ``cap`` can
    fail: the pass runs over the sections those units span, with the units from the lowest such
    threshold up (the same answer)."""
    fr = st.f
    rmax, lg, ev, evb, acc, sel = st.w.rmax, st.w.lg, st.w.ev, st.w.evb, st.w.acc, st.w.sel
    a_nsec, a_ph, a_pp, a_ps0, a_ps1, a_s0, a_s1 = a.nsec, a.ph, a.pp, a.ps0, a.ps1, a.s0, a.s1
    load = st.load
    k = _thresholds(st, a, rules, d, pool, single, max(fr[d, _F_L], emin), smin, smax)
    for s in range(smin, smax):
        rmax[0, s] = load[s]
    span = 1
    for lv in range(1, lg[smax - smin] + 1):
        for s in range(smin, smax - 2 * span + 1):
            rmax[lv, s] = max(rmax[lv - 1, s], rmax[lv - 1, s + span])
        span *= 2
    dmin = a_nsec
    dmax = 0
    tmin = -1  # none (a threshold can reach _BIG: a unit with nothing left to lift it)
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
        for q in range(_piece(a_pp, c, single), _piece(a_pp, c + 1, single)):
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
def _valleys_fail(st, a, d, pool, cap, smin, smax):
    """The valley check (single rectangles only). A section is *tight* when its floor plus the
    load still to come reaches ``cap``: every completion stacks that load from the floor up with
    no room to spare, so some unit starts exactly at the floor there. In a *valley* (a maximal run
    of sections at one floor ``f`` whose neighbours in the component are higher, or its ends) a unit
    at offset ``f`` lies wholly inside the valley, and those units are disjoint in time: the
    valley's sections must be covered by disjoint spans of unplaced units that fit inside it and
    may sit at ``f``, except for sections that are not tight (they may stay empty at ``f``). If no
    such cover reaches the valley's end, no completion exists, whatever the order of placement:
    the check depends only on floors, loads and the placed set (the failed-state table's key)."""
    floor, load, placed, mf = st.floor, st.load, st.placed, st.mf
    vst, vend, head, nxt, reach = st.w.vst, st.w.vend, st.w.head, st.w.nxt, st.w.reach
    a_s0, a_s1, a_size, a_mod, a_res, a_fixed, a_hi = a.s0, a.s1, a.size, a.mod, a.res, a.fixed, a.hi
    fr = st.f
    L = fr[d, _F_L]
    Li = fr[d, _F_LI]
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
    st0 = fr[d, _F_START]
    for p in range(fr[d, _F_LEN]):
        c = pool[st0 + p]
        if placed[c] or a_s1[c] <= a_s0[c]:
            continue
        k0 = a_s0[c]
        r = vst[k0]
        f = floor[k0]
        if vend[r] < 0 or a_s1[c] > vend[r] or f + a_size[c] > cap or f > a_hi[c]:
            continue
        if (a_fixed[c] if a_fixed[c] >= 0 else _align(mf[c], a_mod[c], a_res[c])) != f:
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
def _forced(st, a, d, pool, cap, emin, smin, smax):
    """Forced-section branching: when no unplaced unit can go below ``ceil`` (the lowest floor of a
    tight section, ``emin >= ceil``), every tight section at that floor must be covered by a unit at
    exactly ``ceil``, whichever order the rest is placed in. The frame then branches on which unit
    covers the one such section with the fewest units able to (first fail; the leftmost on ties):
    each branch is a different plan, so the order rule's tie-break by index is not needed at ``ceil``
    (the child starts it afresh: ``Li = -1``). Sets ``_F_FS`` (-1: the ordinary candidates)."""
    fr = st.f
    ceil = fr[d, _F_CEIL]
    if ceil >= _BIG or emin < ceil:
        return
    floor, load, placed, mf = st.floor, st.load, st.placed, st.mf
    cnt = st.w.acc
    a_s0, a_s1, a_size, a_mod, a_res, a_fixed, a_hi = a.s0, a.s1, a.size, a.mod, a.res, a.fixed, a.hi
    L = fr[d, _F_L]
    Li = fr[d, _F_LI]
    for k in range(smin, smax):
        cnt[k] = 0
    st0 = fr[d, _F_START]
    for p in range(fr[d, _F_LEN]):
        c = pool[st0 + p]
        if placed[c]:
            continue
        oc = a_fixed[c] if a_fixed[c] >= 0 else _align(mf[c], a_mod[c], a_res[c])
        if oc != ceil or oc + a_size[c] > cap or oc > a_hi[c] or (oc == L and c < Li):
            continue
        for k in range(a_s0[c], a_s1[c]):
            cnt[k] += 1
    best = -1
    for k in range(smin, smax):
        if load[k] > 0 and floor[k] == ceil and floor[k] + load[k] >= cap and (best < 0 or cnt[k] < cnt[best]):
            best = k
    fr[d, _F_FS] = best


@njit(cache=True, inline="always")
def _next_candidate(st, a, rules, d, pool, cap):
    """The next candidate of frame ``d`` in (offset, index) order after the last one tried, at
    its lowest legal offset: (unit, offset), unit -1 when none is left."""
    fr = st.f
    a_fixed, a_fx_idx, a_fx_ptr, a_hi, a_mod, a_ph, a_pp, a_ps0, a_ps1, a_py0, a_res, a_size, a_twin = a.fixed, a.fx_idx, a.fx_ptr, a.hi, a.mod, a.ph, a.pp, a.ps0, a.ps1, a.py0, a.res, a.size, a.twin
    a_s0, a_s1 = a.s0, a.s1
    placed = st.placed
    mf = st.mf
    L = fr[d, _F_L]
    Li = fr[d, _F_LI]
    st0 = fr[d, _F_START]
    b = -1
    ob = 0
    for p in range(fr[d, _F_LEN]):
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
            oc = _align(mf[c], a_mod[c], a_res[c])
        if oc < fr[d, _F_LO] or (oc == fr[d, _F_LO] and c <= fr[d, _F_I]):
            continue
        if b >= 0 and (oc > ob or (oc == ob and c > b)):
            continue
        if oc < L or (oc == L and c < Li):
            continue
        if oc + a_size[c] > cap or oc > a_hi[c]:
            continue
        if oc > fr[d, _F_CEIL]:
            continue  # a tight section's floor would stay a hole
        fs = fr[d, _F_FS]
        if fs >= 0 and (oc != fr[d, _F_CEIL] or a_s0[c] > fs or a_s1[c] <= fs):
            continue  # forced: only a unit covering the forced section at ceil
        u = fr[d, _F_U2] if fr[d, _F_U1A] == c else fr[d, _F_U1]
        if u <= oc:
            continue
        if fr[d, _F_FA] >= 0 and fr[d, _F_FA] != c and (fr[d, _F_F] < oc or (fr[d, _F_F] == oc and fr[d, _F_FA] < c
                                                                           and fs < 0)):
            continue  # a fixed unit lower in (offset, index) order goes first (forced: lower offset)
        bad = False
        for q in range(a_fx_ptr[c], a_fx_ptr[c + 1]):
            x = a_fx_idx[q]
            if (not placed[x] and a_fixed[x] < oc + a_size[c] and oc < a_fixed[x] + a_size[x]
                    and _collide(c, oc, x, a_fixed[x], a_pp, a_ps0, a_ps1, a_py0, a_ph)):
                bad = True
                break
        if bad:
            continue
        b = c
        ob = oc
    return b, ob


@njit(cache=True, inline="always")
def _place(st, a, rules, d, b, ob, pool, offsets, cap, single, use_tt, zob):
    """Place unit ``b`` at ``ob`` from frame ``d`` (on the trail), raise floors and neighbours'
    lowest offsets, and push what is left of the component (split where nothing crosses any
    more). Returns the pool (grown when a split needs more room)."""
    fr = st.f
    pe = st.p
    cuts, members = st.w.cuts, st.w.members
    a_nb_idx, a_nb_ptr, a_ph, a_pp, a_ps0, a_ps1, a_py0, a_s0, a_s1, a_size = a.nb_idx, a.nb_ptr, a.ph, a.pp, a.ps0, a.ps1, a.py0, a.s0, a.s1, a.size
    placed = st.placed
    mf = st.mf
    floor = st.floor
    load = st.load
    cross = st.cross
    tk = st.tk
    ti = st.ti
    tv = st.tv
    reg = st.reg
    n = a_size.shape[0]
    za = _ZW * n + 1
    fr[d, _F_LO] = ob
    fr[d, _F_I] = b
    ttop = reg[_TTOP]
    fr[d, _F_TRAIL] = ttop
    reg[_PT] = fr[d, _F_PT] - 1
    reg[_POOL] = fr[d, _F_POOL]
    tk[ttop] = _PLACE
    ti[ttop] = b
    ttop += 1
    placed[b] = True
    offsets[b] = ob
    if use_tt:
        reg[_HP1] ^= zob[0, b]
        reg[_HP2] ^= zob[1, b]
    hf1 = reg[_HF1]
    hf2 = reg[_HF2]
    for q in range(_piece(a_pp, b, single), _piece(a_pp, b + 1, single)):
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
                    hf1 ^= _word(zob[0, za + s], v) ^ _word(zob[0, za + s], t)
                    hf2 ^= _word(zob[1, za + s], v) ^ _word(zob[1, za + s], t)
    reg[_HF1] = hf1
    reg[_HF2] = hf2
    ncut = 0
    for k in range(a_s0[b] + 1, a_s1[b]):
        cross[k] -= 1
        if cross[k] == 0:
            cuts[ncut] = k
            ncut += 1
    hatless = True
    t = ob + a_ph[_piece(a_pp, b, single)]
    for q in range(a_nb_ptr[b], a_nb_ptr[b + 1]):
        c = a_nb_idx[q]
        if placed[c]:
            continue
        # one piece each: the spans overlap, so the pieces share a section (py0 == 0)
        tc = t if single else _shared_top(b, ob, c, a_pp, a_ps0, a_ps1, a_py0, a_ph)
        if tc == -_BIG:
            continue  # only the spans overlap (a gap): nothing of b lies under c
        hatless = False
        if mf[c] < tc:
            tk[ttop] = _MF
            ti[ttop] = c
            tv[ttop] = mf[c]
            ttop += 1
            mf[c] = tc
    reg[_TTOP] = ttop
    fr[d, _F_HAT] = hatless
    rem = fr[d, _F_CNT] - 1
    parts = 1
    st0 = fr[d, _F_START]
    ln = fr[d, _F_LEN]
    if rem > 0 and ncut > 0 and rules.decomposition:
        nmem = 0
        for q in range(ln):
            c = pool[st0 + q]
            if not placed[c]:
                members[nmem] = c
                nmem += 1
        if reg[_POOL] + nmem > pool.shape[0]:
            # grow rather than skip the split: what a subtree does may depend only on its state
            grown = np.empty(2 * pool.shape[0] + nmem, np.int64)
            grown[:reg[_POOL]] = pool[:reg[_POOL]]
            pool = grown
        parts = _push_split(st, a, pool, nmem, ncut, cap, d, use_tt, zob)
    if rem > 0 and parts == 1:
        pt = reg[_PT]
        pe[pt, _P_START] = st0
        pe[pt, _P_LEN] = ln
        pe[pt, _P_CNT] = rem
        pe[pt, _P_L] = ob
        # forced: no order among the units at ob is implied; the parent's tie-break still binds there
        pe[pt, _P_LI] = b if fr[d, _F_FS] < 0 else (fr[d, _F_LI] if fr[d, _F_L] == ob else -1)
        pe[pt, _P_OWNER] = d
        pe[pt, _P_H1] = fr[d, _F_C1] ^ zob[0, n + b] if use_tt else 0
        pe[pt, _P_H2] = fr[d, _F_C2] ^ zob[1, n + b] if use_tt else 0
        reg[_PT] = pt + 1
    return pool


@njit(cache=True, inline="always")
def _record(st, d, table):
    """Frame ``d``'s component has no completion from its state: store its key (newest first)."""
    fr = st.f
    if not fr[d, _F_REC]:
        return
    k1 = fr[d, _F_K1]
    k2 = fr[d, _F_K2]
    nbk = (table.shape[0] - 2) // 4
    at = 2 + 4 * (k1 & (nbk - 1))
    if table[at] != k1 or table[at + 1] != k2:
        table[at + 2] = table[at]
        table[at + 3] = table[at + 1]
        table[at] = k1
        table[at + 1] = k2
        table[1] += 1
    fr[d, _F_REC] = False


@njit(cache=True, inline="always")
def _backtrack(st, a, o, single, use_tt):
    """Undo the trail down to frame ``o``'s mark (its placement and everything after it)."""
    fr = st.f
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
    if use_tt:
        reg[_HP1] = fr[o, _F_HP1]
        reg[_HP2] = fr[o, _F_HP2]
        reg[_HF1] = fr[o, _F_HF1]
        reg[_HF2] = fr[o, _F_HF2]
    mark = fr[o, _F_TRAIL]
    ttop = reg[_TTOP]
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
            for q in range(_piece(a_pp, x, single), _piece(a_pp, x + 1, single)):
                for s in range(a_ps0[q], a_ps1[q]):
                    load[s] += a_ph[q]
            for k in range(a_s0[x] + 1, a_s1[x]):
                cross[k] += 1
    reg[_TTOP] = ttop


@njit(cache=True, nogil=True)  # engine.decide_parallel runs orderings in threads
def search(a, rules, cap, node_limit, stop, offsets, table, zob):
    """Is there a canonical plan of ``a`` (an ``Arrays``) with every top <= ``cap``, under the
    pruning ``rules`` (a ``Rules``)? Returns (status, nodes); on FOUND ``offsets`` holds it. LIMIT:
    ``node_limit`` nodes spent or ``stop[0]`` set by another worker.

    ``table``: the failed-state table (module docstring), kept across calls on the same ordering:
    ``table[0]`` counts hits, ``table[1]`` stores, then 2-slot buckets of two words per key
    (length ``2 + 2 * slots``, ``slots`` a power of two >= 2; length 0: no table); ``zob``: its
    random words, shape ``(2, table_words(n, nsec))``.

    Unit ``i`` reaches ``size[i]`` above its offset in the peak, spans ``[s0[i], s1[i])``, may go
    to offsets in ``[lo[i], hi[i]]`` (``hi``: the memory's capacity) and has pieces
    ``pp[i]:pp[i + 1]``: piece ``q`` covers sections ``[ps0[q], ps1[q])`` and bytes
    ``[o + py0[q], o + py0[q] + ph[q])`` when the unit is at ``o`` (``min py0 == 0`` per unit)."""
    n = a.size.shape[0]
    single = a.pp[n] == n  # one rectangle per unit
    use_tt = table.shape[0] >= 6
    st = _new_state(a, cap, use_tt, zob)
    pool = np.empty(16 * n + 64, np.int64)
    _initial_components(st, a, pool, cap, use_tt, zob, rules.decomposition)
    nodes = 0
    depth = 0
    new_frame = True
    while True:
        d = depth
        exhausted = False
        if new_frame:
            new_frame = False
            if st.reg[_PT] == 0:
                return FOUND, nodes
            nodes += 1
            if nodes > node_limit:
                return LIMIT, nodes
            if (nodes & (POLL_NODES - 1)) == 0 and stop[0] != 0:
                return LIMIT, nodes
            _enter(st, d, use_tt)
            exhausted, emin, smin, smax, blocked = _bounds(st, a, rules, d, pool, cap)
            if not exhausted and use_tt:
                exhausted = _lookup(st, a, d, table, zob, blocked)
            if not exhausted and rules.valleys and single:
                exhausted = _valleys_fail(st, a, d, pool, cap, smin, smax)
            if not exhausted and rules.sections:
                exhausted = _sections_fail(st, a, rules, d, pool, cap, single, emin, smin, smax)
            if not exhausted and rules.forced and rules.tight:
                _forced(st, a, d, pool, cap, emin, smin, smax)
        elif rules.hatless and st.f[d, _F_HAT] and st.f[d, _F_FS] < 0:
            exhausted = True  # hatless: the reference plan is not in a later branch (docstring)
        if not exhausted:
            b, ob = _next_candidate(st, a, rules, d, pool, cap)
            if b >= 0:
                pool = _place(st, a, rules, d, b, ob, pool, offsets, cap, single, use_tt, zob)
                depth = d + 1
                new_frame = True
                continue
        # no (further) candidate here: the owner of this component tries its next choice
        _record(st, d, table)
        o = st.f[d, _F_OWNER]
        if o < 0:
            return INFEASIBLE, nodes
        depth = o
        _backtrack(st, a, o, single, use_tt)



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
