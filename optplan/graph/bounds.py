"""Lower bounds on a graph's peaks: over the reuse choices of one order, or over every order.

One order: the problem of that order with each output that a holding reuse may place in its input
left out at its op's step (in place or not, the rest of its bytes are live then), bounded by the
core (``optplan.core.bounds``: live load, alignment, hierarchy, fixed offsets); with one memory,
also the live load with the best reuses (``Loads``), which every choice of reuses meets or exceeds.

Every order: a tensor is live at op ``k``'s step in *every* order when ``k`` produces it, or when its
producer runs before ``k`` in every order (or it is a graph input) and a reader runs at or after
``k`` in every order (or it is a graph output). These *necessary* sets, the graph inputs (all live at
step 0) and the graph outputs (all live at the last step) are steps any order has, so the core's
bounds on them hold for every order: with one memory in closed form (the bytes, rounded to the
alignment all offsets share but for the top one; reuses at ``k`` save at most each input's
largest declared output), else on a problem of the heaviest such steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from optplan.core.bounds import lower_bounds
from optplan.core.errors import ProblemError
from optplan.core.problem import Problem
from optplan.graph.loads import Loads, Relations
from optplan.graph.model import Graph

HEAVIEST_STEPS = 256  # steps of the necessary sets a problem-based bound looks at (the heaviest)


@dataclass(frozen=True)
class GraphBound:
    lower: dict[str, int]  # memory -> a lower bound on its peak
    infeasible: str | None = None  # why no plan exists (in this order, or in any)
    at: str | None = None  # where the single-memory bound is attained, in words


def order_bound(graph: Graph, order: Sequence[int], loads: Loads) -> GraphBound:
    """A bound on the peaks of ``order`` whichever of its holding reuses are taken."""
    start, end = graph.lifetimes(order)
    pos = loads.positions(order)
    _, _, last = loads.spans(pos)
    late = set()
    for k, y, x in zip(loads.r_op.tolist(), loads.r_out.tolist(), loads.r_in.tolist()):
        if last[x] == pos[k]:
            late.add(y)
    buffers = []
    for i, t in enumerate(graph.tensors):
        s = start[i] + (i in late)
        if s < end[i]:
            buffers.append(t.buffer(s, end[i]))
    b = lower_bounds(Problem(tuple(buffers), graph.memories))
    lower = dict(b.lower)
    at = None
    if len(graph.memories) == 1:
        m = graph.memories[0].name
        curve = loads.curve(order)
        if len(curve) and int(curve.max()) > lower[m]:
            lower[m] = int(curve.max())
            at = f"the live load at step {int(curve.argmax())}"
    if b.infeasible:
        return GraphBound(lower, f"in this order: {b.infeasible}", at)
    return GraphBound(lower, None, at)


def any_order_bound(graph: Graph, rel: Relations, loads: Loads, exact: int = 0) -> GraphBound:
    """A bound on the peaks of every order and reuse choice; ``exact``: a proven least peak live
    load over all orders (the exact order search's), raising the single-memory bound."""
    st = graph.structure
    sets = necessary(graph, rel)
    dropped = sets.copy()
    for k, y in zip(loads.r_op.tolist(), loads.r_out.tolist()):
        dropped[y, k] = False  # the output may sit in its input's bytes at its op's step
    inputs = np.array([t.input for t in graph.tensors], bool)
    ends = np.column_stack([dropped, inputs, loads.output]) if len(graph.tensors) else dropped
    if len(graph.memories) > 1 or any(_pinned(graph, i) for i in range(len(graph.tensors))):
        return _problem_bound(graph, ends)
    mem = graph.memories[0]
    size = loads.size
    raw = size @ sets if st.ops else np.zeros(0, np.int64)
    if len(loads.r_op):
        save: dict[tuple[int, int], int] = {}  # (input, op) -> its largest declared output
        for k, y, x in zip(loads.r_op.tolist(), loads.r_out.tolist(), loads.r_in.tolist()):
            save[x, k] = max(save.get((x, k), 0), int(size[y]))
        raw = raw.copy()
        for (_, k), b in save.items():
            raw[k] -= b
    g = math.gcd(*(math.lcm(t.alignment, mem.alignment) for t in graph.tensors)) if graph.tensors else 1
    rounded = -(-size // g) * g
    tops = (rounded @ ends).tolist()
    if g > 1:  # all but the top tensor of a step rounded up
        tops = [v - int((rounded - size)[ends[:, j]].max(initial=0)) for j, v in enumerate(tops)]
    best, at = max(((int(v), f"the step of op {graph.ops[k].id!r} (what is live there in every order)")
                    for k, v in enumerate(raw)), default=(0, None))
    named = [f"the step of op {o.id!r} (what is live there in every order)" for o in graph.ops] + [
        "step 0 (every graph input)", "the last step (every graph output)"]
    for v, where in zip(tops, named):
        if v > best:
            best, at = v, where
    if int(size.max(initial=0)) > best:
        best, at = int(size.max()), "the largest tensor"
    if exact > best:
        best, at = exact, "the least peak live load over all orders (exact order search)"
    if mem.capacity is not None and best > mem.capacity:
        return GraphBound({mem.name: best}, f"memory {mem.name!r}: at {at}, {best} bytes must be live in every order "
                                            f"but the capacity is {mem.capacity}", at)
    return GraphBound({mem.name: best}, None, at)


def necessary(graph: Graph, rel: Relations) -> np.ndarray:
    """Tensors x ops: whether the tensor is live at the op's step in every order."""
    st = graph.structure
    n = st.ops
    every = (1 << n) - 1
    masks = []
    for t in range(len(st.size)):
        p = st.producer[t]
        born = every if p < 0 else (1 << p) | rel.after[p]
        if st.output[t]:
            masks.append(born)
            continue
        reach = 0
        for c in st.consumers[t]:
            reach |= (1 << c) | rel.before[c]
        masks.append((born & reach) | (0 if p < 0 else 1 << p))
    width = (n + 7) // 8
    raw = np.frombuffer(b"".join(m.to_bytes(width, "little") for m in masks), np.uint8) if n else np.zeros(0, np.uint8)
    return np.unpackbits(raw.reshape(len(masks), width), axis=1, bitorder="little")[:, :n].astype(bool) if n else (
        np.zeros((len(masks), 0), bool))


def _pinned(graph: Graph, i: int) -> bool:
    t = graph.tensors[i]
    return t.allowed is not None or bool(t.blocked) or t.fixed_memory is not None or t.fixed_offset is not None


def _problem_bound(graph: Graph, sets: np.ndarray) -> GraphBound:
    """The core's bounds on a problem whose steps are the heaviest columns of ``sets``."""
    size = np.array([t.size for t in graph.tensors], np.int64)
    load = size @ sets if sets.size else np.zeros(0, np.int64)
    steps = np.argsort(-load, kind="stable")[:HEAVIEST_STEPS]
    buffers = []
    for s, col in enumerate(steps.tolist()):
        for i in np.flatnonzero(sets[:, col]).tolist():
            t = graph.tensors[i]
            buffers.append(replace(t.buffer(s, s + 1), id=f"{t.id}@{s}", hint_memory=None, hint_offset=None))
    try:
        b = lower_bounds(Problem(tuple(buffers), graph.memories))
    except ProblemError:  # two ids alike after the '@step' suffix: numbered instead
        b = lower_bounds(Problem(tuple(replace(x, id=str(i)) for i, x in enumerate(buffers)), graph.memories))
    why = b.infeasible
    if why:
        why = f"in every order: {why}"
    return GraphBound(dict(b.lower), why, None)




def graph_bounds(graph: Graph) -> tuple[GraphBound, GraphBound]:
    """The bounds of the given order (over its reuse choices) and of every order (the necessary
    sets: no search)."""
    loads = Loads(graph.structure)
    return order_bound(graph, graph.given_order, loads), any_order_bound(graph, Relations.of(graph.structure), loads)
