"""The compiled search's state: its arrays, frames and trail, and the failed-state table.

Everything ``kernel.search`` works on is a named tuple of int64 arrays (numba compiles one
signature for them): ``layout.Arrays`` (an ordering's static arrays), ``State`` (what a search changes
as it places and backtracks: placed set, floors, loads, the trail, the frame and pending stacks,
scratch space) and ``Run`` (one call's constants). Frames and pending components are rows of
int64 columns named by the ``F_*`` and ``P_*`` indices, the scalars of a run are ``reg[R_*]``.

Failed-state table (a transposition table of failures). A frame whose candidates are exhausted
(entry checks, hatless, or every candidate's subtree failed back to it) has found that its
component cannot be completed from its state; the state's key is stored, and a frame entered
with a stored key fails at once. Sound because what the search does below a frame until its
component is complete is a function of the key: the capacity, the placed set, the floors (an
unplaced unit's lowest offset ``mf`` is the highest floor under its pieces less their ``py0``, or
``lo``: offsets are >= ``lo`` >= 0, so a covered section's floor is > 0), the component's unplaced
members and ``L``, ``Li`` determine every rule (``pruning``: candidates, dominance bounds, twins,
fixed units, sections and lift, hatless, and decomposition: the parts, their order by slack from
floors and load, their members), with the ordering's static arrays. Nothing else enters: the
components pending below are reached only once this one is complete (their failure jumps past the
frame, which is then not stored); the pool grows rather than skip a split; LIMIT (node budget,
stop flag) returns at once, so a cut-off subtree is never stored. By induction over the order of
stores, the table-free search below a stored key fails too: the table changes node counts, never
the answer, and INFEASIBLE stays a proof. Keys are two 64-bit Zobrist hashes: XORs of random words
drawn per table from the ordering's seed (engine) for the capacity, each placed unit, each component
member, ``Li``, and ``fmix64(word ^ v * phi)`` for each section's floor ``v`` and for ``L``; placing
a unit XORs in its word and each raised floor's old and new words, a frame keeps the hashes from
before its placement for backtracking, and a component's member hash is built at a split and
continued by XOR-ing out the unit placed. Two different states differ in a non-empty set of words;
taking these as independent and uniform, both hashes agree with probability 2^-128, and with two
keys compared per lookup a false hit within 2^40 lookups (far beyond any run) has probability below
2^-87. The all-zero key marks an empty slot and is never stored. Buckets hold two keys, newest
first: a full table forgets failures, never invents them.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from optplan.search.layout import Arrays  # noqa: F401 - numba cache indexes built before it moved name it here

BIG = np.int64(1) << np.int64(62)  # above every offset and load the search computes
_M1 = np.int64(-49064778989728563)  # 0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53: MurmurHash3's fmix64
_M2 = np.int64(-4265267296055464877)
_PHI = np.int64(-7046029254386353131)  # 0x9e3779b97f4a7c15: odd, so v -> v * _PHI is a bijection
_LOW31 = np.int64((1 << 31) - 1)

Run = namedtuple("Run", ["rules", "cap", "single", "use_tt", "zob", "table"])
Run.__doc__ = """One search call's constants, passed as one value: the pruning ``rules`` (``params.Rules``), the
capacity ``cap``, ``single`` (one rectangle per unit), ``use_tt`` (a failed-state table is given), and the
table with its random words ``zob`` (``kernel.search``'s docstring)."""

# Frames: one row per depth, Pending: one row per component waiting to be searched (int64 columns).
# A frame holds its component (pool slice, unplaced count, L and Li), its owner (the frame to return
# to on failure), what to restore (pending top, pool top, trail mark, placement hashes), the last
# candidate tried (offset LO, index I), the dominance bounds (U1/U1A/U2, fixed F/FA), HAT (the last
# unit placed has no unplaced unit above it), the failed-state table's component hash (C1, C2),
# key (K1, K2) and whether to store the key when the frame fails (REC), the lowest floor of a tight
# section (CEIL) and the forced section (FS, -1: none).
(F_START, F_LEN, F_CNT, F_L, F_LI, F_OWNER, F_PT, F_POOL, F_TRAIL, F_I, F_LO, F_U1, F_U1A, F_U2, F_F,
 F_FA, F_HAT, F_REC, F_C1, F_C2, F_K1, F_K2, F_HP1, F_HP2, F_HF1, F_HF2, F_CEIL, F_FS, NF) = range(29)
# a pending component: pool slice, unplaced count, L and Li, owner, member hashes
P_START, P_LEN, P_CNT, P_L, P_LI, P_OWNER, P_H1, P_H2, NP = range(9)
Scratch = namedtuple("Scratch", ["cuts", "acc", "min1", "min1c", "min2", "ev", "lg", "rmax", "sel", "evb", "members",
                                 "vst", "vend", "head", "nxt", "reach"])
State = namedtuple("State", ["placed", "mf", "floor", "load", "cross", "tk", "ti", "tv", "reg", "f", "p", "w"])
# reg: the scalars (trail top, pool top, pending top, placed-set and floor hashes, capacity words)
R_TTOP, R_POOL, R_PT, R_HP1, R_HP2, R_HF1, R_HF2, R_HK1, R_HK2 = range(9)
ZOB_BLOCKS = 3  # zob columns: placed units at 0, component members at n, last unit at 2n (+1), sections at 3n+1


@njit(cache=True, inline="always")
def _mix(x):
    """MurmurHash3's 64-bit finalizer (wrapping int64 arithmetic, logical shifts)."""
    x = (x ^ ((x >> 33) & _LOW31)) * _M1
    x = (x ^ ((x >> 33) & _LOW31)) * _M2
    return x ^ ((x >> 33) & _LOW31)


@njit(cache=True, inline="always")
def word(key, v):
    """The Zobrist word of value ``v`` under the random ``key`` (a section's floor, L)."""
    return _mix(key ^ (v * _PHI))


@njit(cache=True, inline="always")
def align(x, m, r):
    """``x`` rounded up to the next value that is ``r`` modulo ``m`` (an aligned offset)."""
    return x + (r - x) % m


@njit(cache=True, inline="always")
def piece(pp, i, single):
    """The first piece of unit ``i`` (``pp[i]``; on one-rectangle instances ``i``, one load less)."""
    return i if single else pp[i]


@njit(cache=True)
def shared_top(b, ob, c, pp, ps0, ps1, py0, ph):
    """The lowest offset of unit ``c`` that keeps each of its pieces above every piece of ``b``
    (placed at ``ob``) in the sections they share; -BIG when they share none."""
    best = -BIG
    for p in range(pp[b], pp[b + 1]):
        top = ob + py0[p] + ph[p]
        for q in range(pp[c], pp[c + 1]):
            if ps0[p] < ps1[q] and ps0[q] < ps1[p]:
                best = max(best, top - py0[q])
    return best


@njit(cache=True)
def collide(b, ob, f, of, pp, ps0, ps1, py0, ph):
    """Do unit ``b`` at ``ob`` and unit ``f`` at ``of`` share a byte in a shared section?"""
    for p in range(pp[b], pp[b + 1]):
        for q in range(pp[f], pp[f + 1]):
            if (ps0[p] < ps1[q] and ps0[q] < ps1[p] and ob + py0[p] < of + py0[q] + ph[q]
                    and of + py0[q] < ob + py0[p] + ph[p]):
                return True
    return False


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


@njit(cache=True)
def new_state(a, run):
    """Every array the search works on, sized for ``a``, with the loads of all units and floors at 0
    (and, with the table, the hashes of that state: the capacity's words and each floor at 0)."""
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
    f = np.zeros((m, NF), np.int64)
    p = np.zeros((m, NP), np.int64)
    lg = np.zeros(nsec + 2, np.int64)  # floor(log2(x)) for the range maxima of the remaining load
    for x in range(2, nsec + 2):
        lg[x] = lg[x >> 1] + 1
    w = Scratch(np.empty(nsec + 1, np.int64), np.zeros(nsec + 1, np.int64), np.empty(nsec + 1, np.int64),
                np.empty(nsec + 1, np.int64), np.empty(nsec + 1, np.int64), np.empty(n, np.int64), lg,
                np.empty((lg[nsec + 1] + 1, nsec + 1), np.int64), np.empty(n, np.int64), np.empty(n, np.int64),
                np.empty(n, np.int64), np.empty(nsec + 1, np.int64), np.empty(nsec + 1, np.int64),
                np.empty(nsec + 1, np.int64), np.empty(n, np.int64), np.zeros(nsec + 1, np.bool_))
    reg = np.zeros(9, np.int64)
    if run.use_tt:
        zob = run.zob
        za = ZOB_BLOCKS * n + 1
        zL = za + nsec
        reg[R_HK1] = word(zob[0, zL + 1], run.cap)
        reg[R_HK2] = word(zob[1, zL + 1], run.cap)
        for s in range(nsec):  # every floor starts at 0
            reg[R_HF1] ^= word(zob[0, za + s], 0)
            reg[R_HF2] ^= word(zob[1, za + s], 0)
    return State(np.zeros(n, np.bool_), mf, np.zeros(nsec, np.int64), load, cross, np.empty(tsize, np.int64),
                 np.empty(tsize, np.int64), np.empty(tsize, np.int64), reg, f, p, w)


@njit(cache=True, inline="always")
def enter(st, d, run):
    """Open frame ``d`` on the pending component on top (and keep the placement hashes to restore)."""
    fr = st.f
    pe = st.p
    reg = st.reg
    pt = reg[R_PT]
    j = pt - 1
    fr[d, F_START] = pe[j, P_START]
    fr[d, F_LEN] = pe[j, P_LEN]
    fr[d, F_CNT] = pe[j, P_CNT]
    fr[d, F_L] = pe[j, P_L]
    fr[d, F_LI] = pe[j, P_LI]
    fr[d, F_OWNER] = pe[j, P_OWNER]
    fr[d, F_PT] = pt
    fr[d, F_POOL] = reg[R_POOL]
    fr[d, F_I] = 0
    fr[d, F_LO] = -1
    fr[d, F_HAT] = False
    fr[d, F_REC] = False
    fr[d, F_FS] = -1
    if run.use_tt:
        fr[d, F_C1] = pe[j, P_H1]
        fr[d, F_C2] = pe[j, P_H2]
        fr[d, F_HP1] = reg[R_HP1]
        fr[d, F_HP2] = reg[R_HP2]
        fr[d, F_HF1] = reg[R_HF1]
        fr[d, F_HF2] = reg[R_HF2]


@njit(cache=True, inline="always")
def lookup(st, a, run, d, blocked):
    """True when the failed-state table knows frame ``d``'s key (the frame then fails at once).
    The key: capacity, placed set, floors, component members, and L and Li only while the order
    rule keeps some unplaced unit from its lowest offset (``blocked``): otherwise nothing below
    depends on them (docstring), and states reached in different orders meet."""
    fr = st.f
    reg = st.reg
    table, zob = run.table, run.zob
    n = a.size.shape[0]
    zL = ZOB_BLOCKS * n + 1 + a.nsec
    L = fr[d, F_L] if blocked else -1
    Li = fr[d, F_LI] if blocked else -1
    k1 = reg[R_HK1] ^ reg[R_HP1] ^ reg[R_HF1] ^ fr[d, F_C1] ^ word(zob[0, zL], L) ^ zob[0, 2 * n + Li + 1]
    k2 = reg[R_HK2] ^ reg[R_HP2] ^ reg[R_HF2] ^ fr[d, F_C2] ^ word(zob[1, zL], L) ^ zob[1, 2 * n + Li + 1]
    fr[d, F_K1] = k1
    fr[d, F_K2] = k2
    if k1 == 0 and k2 == 0:  # (0, 0) marks an empty slot: such a key is never stored
        return False
    nbk = (table.shape[0] - 2) // 4
    at = 2 + 4 * (k1 & (nbk - 1))
    if (table[at] == k1 and table[at + 1] == k2) or (table[at + 2] == k1 and table[at + 3] == k2):
        table[0] += 1
        return True  # this very subtree failed before
    fr[d, F_REC] = True
    return False


@njit(cache=True, inline="always")
def record(st, d, run):
    """Frame ``d``'s component has no completion from its state: store its key (newest first)."""
    fr = st.f
    if not fr[d, F_REC]:
        return
    k1 = fr[d, F_K1]
    k2 = fr[d, F_K2]
    table = run.table
    nbk = (table.shape[0] - 2) // 4
    at = 2 + 4 * (k1 & (nbk - 1))
    if table[at] != k1 or table[at + 1] != k2:
        table[at + 2] = table[at]
        table[at + 3] = table[at + 1]
        table[at] = k1
        table[at + 1] = k2
        table[1] += 1
    fr[d, F_REC] = False
