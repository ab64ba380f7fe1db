"""Tiny random graphs for the graph tests, and brute force over every order and reuse choice."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from brute_force import brute_force_optimum

from optplan.core.buffer import Memory
from optplan.graph.loads import Loads, is_topological
from optplan.graph.model import Graph, GraphError, Op, Tensor


def tiny_graph(draw: Callable[[int, int], int], ops: int = 4, alignment: bool = True) -> Graph:
    """A random DAG of up to ``ops`` ops (one or two inputs and outputs each), sizes 0-5, some
    declared reuses (those that can never hold are dropped), a graph output or two, one memory."""
    tensors = [Tensor("x", draw(1, 4), input=True)]
    avail = ["x"]
    made: list[Op] = []
    for k in range(draw(1, ops)):
        reads = tuple(dict.fromkeys(avail[draw(0, len(avail) - 1)] for _ in range(draw(1, 2))))
        writes = tuple(f"t{k}{j}" for j in range(draw(1, 2)))
        tensors += [Tensor(w, draw(0, 5), alignment=(1, 1, 2)[draw(0, 2)] if alignment else 1) for w in writes]
        reuse = tuple((w, reads[draw(0, len(reads) - 1)]) for w in writes if draw(0, 1))
        made.append(Op(f"o{k}", reads, writes, reuse))
        avail += writes
    outs = {avail[draw(1, len(avail) - 1)] for _ in range(draw(1, 2))} if len(avail) > 1 else set()
    tensors = [Tensor(t.id, t.size, t.input, t.id in outs, t.alignment) for t in tensors]
    mem = (Memory("mem", alignment=(1, 1, 2)[draw(0, 2)] if alignment else 1),)
    kept: list[Op] = []
    for i, o in enumerate(made):  # keep the reuses that can hold in some order
        pairs: list[tuple[str, str]] = []
        for p in o.reuse:
            try:
                Graph(tuple(tensors), (*kept, Op(o.id, o.inputs, o.outputs, (*pairs, p)), *made[i + 1:]), mem)
                pairs.append(p)
            except GraphError:
                pass
        kept.append(Op(o.id, o.inputs, o.outputs, tuple(pairs)))
    return Graph(tuple(tensors), tuple(kept), mem)


def topological_orders(graph: Graph) -> list[tuple[int, ...]]:
    st = graph.structure
    return [o for o in itertools.permutations(range(st.ops)) if is_topological(st, o)]


def least_live_load(graph: Graph, reuse: bool = True) -> int:
    """The least peak live load over every order, by enumeration."""
    loads = Loads(graph.structure)
    return min(loads.score(o, reuse)[0] for o in topological_orders(graph))


def brute_force_graph(graph: Graph) -> int:
    """The least objective value over every order x every set of reuses that hold in it (one
    output per input) x every packing (tests/brute_force.py)."""
    best = None
    for order in topological_orders(graph):
        holding = [r for r in graph.candidates if graph.holds(r, order) is None]
        for k in range(len(holding) + 1):
            for subset in itertools.combinations(holding, k):
                inputs = [r.input for r in subset]
                if len(set(inputs)) < len(inputs):
                    continue
                found = brute_force_optimum(graph.problem(order, subset))
                assert found is not None
                best = found[0] if best is None else min(best, found[0])
    assert best is not None
    return best


def random_dag(n: int, seed: int, width: int = 3) -> Graph:
    """A wider random DAG: ``n`` ops, each reading one to three of the last ``4 * width`` outputs
    (or the input), writing one tensor of 1-4 units; the outputs nobody reads summed at the end."""
    import random

    r = random.Random(seed)
    tensors = [Tensor("x", 4, input=True)]
    ops: list[Op] = []
    for k in range(n):
        pool = [t.id for t in tensors[-4 * width:]]
        reads = tuple(dict.fromkeys(r.choice(pool) for _ in range(r.randint(1, 3))))
        tensors.append(Tensor(f"t{k}", 4 * r.randint(1, 4)))
        ops.append(Op(f"o{k}", reads, (f"t{k}",)))
    read = {x for o in ops for x in o.inputs}
    ops.append(Op("end", tuple(t.id for t in tensors[1:] if t.id not in read), ()))
    return Graph(tuple(tensors), tuple(ops))
