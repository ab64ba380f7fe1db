"""Lower bounds over every order from the exact search on small windows of ops.

Any order of the graph runs a subset ``U`` of its ops in an order of ``U`` that respects their
ancestry (through ops outside ``U`` too). At the step of an op ``k`` of ``U``, what is live includes
(a) the tensors *internal* to ``U`` (made by an op of ``U`` or a graph input, read only by ops of
``U``, or made in ``U`` and a graph output) exactly as the order of ``U`` says, since their
liveness depends only on where their producer and readers run relative to ``k``; and (b) every
other tensor live at ``k`` in every order (the necessary sets). So the least peak over orders of
``U`` of (a) + (b), found by the exact search over sets of ops run (``exact``), bounds the least peak
of every order of the graph. The other reuses at ``k`` are subtracted at their most from (b).

Windows are the ops around the peak steps of a good order: where the order's load is highest,
a small window often proves more than the necessary sets alone (RandWire DAGs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from optplan.graph import exact
from optplan.graph.loads import Loads, Relations
from optplan.graph.model import Structure


def window_bound(st: Structure, rel: Relations, sets: np.ndarray, ops: Sequence[int], reuse: bool,
                 max_states: int, stop: Callable[[], bool]) -> int:
    """A lower bound on every order's peak live load from the window ``ops`` (see the module
    docstring); ``sets``: the necessary sets (tensors x ops)."""
    sub, sub_rel = _window(st, rel, sets, list(ops), reuse)
    seg = exact.Segment(sub, sub_rel, range(sub.ops), reuse)
    try:
        got = exact.best_first(seg, None, max_states, stop)
    except exact.Unfinished as e:
        return e.bound
    return got.peak if got is not None else 0


def _window(st: Structure, rel: Relations, sets: np.ndarray, ops: list[int], reuse: bool) -> tuple[Structure, Relations]:
    """The window as a graph of its own: its internal tensors, and per op a tensor read by none
    holding what else is live there in every order."""
    local = {k: j for j, k in enumerate(ops)}
    inside = set(ops)
    internal = [t for t in range(len(st.size)) if _internal(st, t, inside)]
    index = {t: i for i, t in enumerate(internal)}
    size = [st.size[t] for t in internal]
    producer = [local[st.producer[t]] if st.producer[t] >= 0 else -1 for t in internal]
    consumers = [tuple(sorted(local[c] for c in st.consumers[t] if c in inside)) for t in internal]  # (an output's others: it stays)
    output = [st.output[t] for t in internal]
    reads = [tuple(index[x] for x in st.reads[k] if x in index) for k in ops]
    writes = [[index[y] for y in st.writes[k] if y in index] for k in ops]
    reuses = [tuple((index[y], index[x]) for y, x in st.reuse[k] if reuse and y in index and x in index) for k in ops]
    mask = np.zeros(len(st.size), bool)
    mask[internal] = True
    for j, k in enumerate(ops):  # what else is live at k in every order: one tensor, at k's step only
        extra = int(np.asarray(st.size)[sets[:, k] & ~mask].sum())
        if reuse:
            best: dict[int, int] = {}
            for y, x in st.reuse[k]:
                if not (y in index and x in index):
                    best[x] = max(best.get(x, 0), st.size[y])
            extra = max(0, extra - sum(best.values()))
        size.append(extra)
        producer.append(j)
        consumers.append(())
        output.append(False)
        writes[j].append(len(size) - 1)
    preds = [tuple(local[p] for p in ops if rel.before[k] >> p & 1) for k in ops]  # ancestry, through any op
    succs: list[list[int]] = [[] for _ in ops]
    for j, ps in enumerate(preds):
        for p in ps:
            succs[p].append(j)
    sub = Structure(tuple(size), tuple(producer), tuple(consumers), tuple(output), tuple(reads),
                    tuple(tuple(w) for w in writes), tuple(preds), tuple(tuple(s) for s in succs), tuple(reuses))
    return sub, Relations.of(sub)


def _internal(st: Structure, t: int, inside: set[int]) -> bool:
    p = st.producer[t]
    if p >= 0 and p not in inside:
        return False
    if st.output[t]:
        return p >= 0  # made in the window, live to the end: live at every later op of the window
    return bool(st.consumers[t]) and all(c in inside for c in st.consumers[t]) or (p >= 0 and not st.consumers[t])


def windows_around_peaks(loads: Loads, order: Sequence[int], sizes: Sequence[int], count: int) -> list[list[int]]:
    """Windows of ``sizes`` ops centred on the ``count`` highest steps of ``order``, distinct."""
    curve = loads.curve(order)
    out: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    for step in np.argsort(-curve, kind="stable")[:count].tolist():
        for w in sizes:
            lo = max(0, min(step - w // 2, len(order) - w))
            win = sorted(order[lo:lo + w])
            if tuple(win) not in seen:
                seen.add(tuple(win))
                out.append(win)
    return out
