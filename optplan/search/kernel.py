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

The search is split by concern, one compiled call graph over four files (its numba cache is keyed
by all of them): ``state`` (arrays, frames, trail, failed-state table), ``pruning`` (the rules
that fail a frame, and why each is sound), ``placing`` (candidates, placing, backtracking) and
this driver. The search's other kernels live apart: ``overlaps`` (the adjacency lists the
instance builder needs) and ``skyline`` (the dive of instances too large for those lists); they
are named here for the kernel gate (``optplan.core.jit``: group "search").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from optplan.core import jit
from optplan.search.layout import CALL_GRAPH, FOUND, INFEASIBLE, LIMIT
from optplan.search.overlaps import count_overlaps, overlap_graph
from optplan.search.placing import backtrack, initial_components, next_candidate, place
from optplan.search.pruning import bounds, pick_forced_section, sections_fail, valleys_fail
from optplan.search.skyline import skyline_dive
from optplan.search.state import F_FS, F_HAT, F_OWNER, R_PT, Run, enter, lookup, move_table, new_state, record

__all__ = ["FOUND", "INFEASIBLE", "LIMIT", "count_overlaps", "move_table", "overlap_graph", "search", "skyline_dive"]

# numba stamps a cached kernel with its own file only: ``search`` inlines state, pruning and placing (the
# key covers every kernel file imported here, as tests/test_search.py checks)
jit.key_cache(__file__, CALL_GRAPH)

POLL_NODES = 64  # the search reads its stop flag every this many nodes (a power of two): a raced ordering
# that lost stops within a millisecond, not 1024 nodes (20-40 ms at load) later


@njit(cache=True, nogil=True)  # engine.decide_parallel runs orderings in threads
def search(a, rules, cap, node_limit, stop, offsets, table, zob):
    """Is there a canonical plan of ``a`` (an ``Arrays``) with every top <= ``cap``, under the
    pruning ``rules`` (a ``params.Rules``)? Returns (status, nodes, forced); on FOUND ``offsets``
    holds it. ``forced``: frames that branched on a forced section; with none, the same run
    without the forced-section rule would have searched the same tree (``engine`` skips it).
    LIMIT: ``node_limit`` nodes spent or ``stop[0]`` set by another worker.

    ``table``: the failed-state table (``state``'s docstring), kept across calls on the same
    ordering: ``table[0]`` counts hits, ``table[1]`` stores, then 2-slot buckets of two words per
    key (length ``2 + 2 * slots``, ``slots`` a power of two >= 2; length 0: no table); ``zob``: its
    random words, shape ``(2, table_words(n, nsec))``.

    Unit ``i`` reaches ``size[i]`` above its offset in the peak, spans ``[s0[i], s1[i])``, may go
    to offsets in ``[lo[i], hi[i]]`` (``hi``: the memory's capacity) and has pieces
    ``pp[i]:pp[i + 1]``: piece ``q`` covers sections ``[ps0[q], ps1[q])`` and bytes
    ``[o + py0[q], o + py0[q] + ph[q])`` when the unit is at ``o`` (``min py0 == 0`` per unit)."""
    n = a.size.shape[0]
    run = Run(rules, cap, a.pp[n] == n, table.shape[0] >= 6, zob, table)  # single: one rectangle per unit
    st = new_state(a, run)
    pool = np.empty(16 * n + 64, np.int64)
    initial_components(st, a, run, pool)
    nodes = 0
    forced = 0
    depth = 0
    new_frame = True
    while True:
        d = depth
        exhausted = False
        if new_frame:
            new_frame = False
            if st.reg[R_PT] == 0:
                return FOUND, nodes, forced
            nodes += 1
            if nodes > node_limit:
                return LIMIT, nodes, forced
            if (nodes & (POLL_NODES - 1)) == 0 and stop[0] != 0:
                return LIMIT, nodes, forced
            enter(st, d, run)
            exhausted, emin, smin, smax, blocked = bounds(st, a, run, d, pool)
            if not exhausted and run.use_tt:
                exhausted = lookup(st, a, run, d, blocked)
            if not exhausted and rules.valleys and run.single:
                exhausted = valleys_fail(st, a, run, d, pool, smin, smax)
            if not exhausted and rules.sections:
                exhausted = sections_fail(st, a, run, d, pool, emin, smin, smax)
            if not exhausted and rules.forced and rules.tight:
                pick_forced_section(st, a, run, d, pool, emin, smin, smax)
                if st.f[d, F_FS] >= 0:
                    forced += 1
        elif rules.hatless and st.f[d, F_HAT] and st.f[d, F_FS] < 0:
            exhausted = True  # hatless: the reference plan is not in a later branch (pruning's docstring)
        if not exhausted:
            b, ob = next_candidate(st, a, run, d, pool)
            if b >= 0:
                pool = place(st, a, run, d, b, ob, pool, offsets)
                depth = d + 1
                new_frame = True
                continue
        # no (further) candidate here: the owner of this component tries its next choice
        record(st, d, run)
        o = st.f[d, F_OWNER]
        if o < 0:
            return INFEASIBLE, nodes, forced
        depth = o
        backtrack(st, a, run, o)
