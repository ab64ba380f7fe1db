"""A graph of operators and the tensors they read and write: a problem whose lifetimes follow from
the order the operators run in.

Op ``k`` of an order runs at step ``k``. A graph input is live from step 0, any other tensor from
its producer's step; a tensor stays live through the step of its last consumer (an output is
allocated while its op's inputs are live, the torch front end's convention); a graph output is live
to the last step; a tensor nobody reads lives at its producer's step only.

``Op.reuse`` ``{out: in}`` lets the op write ``out`` into ``in``'s bytes when this op is ``in``'s
last consumer in the order (in-place, as an elementwise kernel can). A reuse taken is a relative
placement ``out = in + 0`` in the problem: the two move as one unit, whose footprint counts their
shared step once, so the core planners, bounds and validator need nothing new. Which reuses hold
depends on the order; the graph's checks reject one that can hold in no order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from optplan.core.buffer import Buffer, Memory, RelativePlacement
from optplan.core.errors import ProblemError
from optplan.core.problem import Problem


class GraphError(ProblemError):
    """A graph violates the model (a cycle, two producers, an unknown tensor, a reuse that can
    never hold): one line naming the op or tensor."""


@dataclass(frozen=True)
class Tensor:
    """A tensor to place: the buffer fields of the problem format but its lifetime, which the
    order decides. ``input``: live from step 0 (no op produces it); ``output``: live to the end."""

    id: str
    size: int
    input: bool = False
    output: bool = False
    alignment: int = 1
    allowed: tuple[str, ...] | None = None
    blocked: tuple[str, ...] = ()
    fixed_memory: str | None = None
    fixed_offset: int | None = None
    hint_memory: str | None = None
    hint_offset: int | None = None
    benefit: int | None = None

    def __post_init__(self) -> None:
        for name in ("allowed", "blocked"):
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def buffer(self, start: int, end: int) -> Buffer:
        return Buffer(self.id, self.size, start, end, alignment=self.alignment, allowed=self.allowed,
                      blocked=self.blocked, fixed_memory=self.fixed_memory, fixed_offset=self.fixed_offset,
                      hint_memory=self.hint_memory, hint_offset=self.hint_offset, benefit=self.benefit)


@dataclass(frozen=True)
class Op:
    """An operator: the tensors it reads and writes; ``reuse``: (output, input) pairs it may
    write in place."""

    id: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    reuse: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in ("inputs", "outputs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if isinstance(self.reuse, Mapping):
            object.__setattr__(self, "reuse", tuple(self.reuse.items()))
        object.__setattr__(self, "reuse", tuple(tuple(p) for p in self.reuse))


@dataclass(frozen=True, order=True)
class Reuse:
    """Op ``op`` writes ``output`` into ``input``'s bytes."""

    op: str
    output: str
    input: str


@dataclass(frozen=True, eq=False)
class Structure:
    """The graph as index arrays, what the orders, bounds and validator walk: ops and tensors by
    position in the graph's lists."""

    size: tuple[int, ...]  # per tensor
    producer: tuple[int, ...]  # per tensor: op index, -1 for an input
    consumers: tuple[tuple[int, ...], ...]  # per tensor: distinct op indices, ascending
    output: tuple[bool, ...]  # per tensor: a graph output
    reads: tuple[tuple[int, ...], ...]  # per op: distinct input tensors
    writes: tuple[tuple[int, ...], ...]  # per op: output tensors
    preds: tuple[tuple[int, ...], ...]  # per op: distinct ops producing its inputs
    succs: tuple[tuple[int, ...], ...]
    reuse: tuple[tuple[tuple[int, int], ...], ...]  # per op: (output tensor, input tensor)

    @property
    def ops(self) -> int:
        return len(self.reads)

    @property
    def steps(self) -> int:
        """Steps of any order: one per op (at least one: a graph without ops still holds its inputs)."""
        return max(len(self.reads), 1)


@dataclass(frozen=True, eq=False)
class Graph:
    """Ops in their given order, tensors, memories (fastest first). Checked on construction
    (raises GraphError, or ProblemError for a tensor's buffer fields)."""

    tensors: tuple[Tensor, ...]
    ops: tuple[Op, ...]
    memories: tuple[Memory, ...] = (Memory("mem"),)
    metadata: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tensors", tuple(self.tensors))
        object.__setattr__(self, "ops", tuple(self.ops))
        object.__setattr__(self, "memories", tuple(self.memories))
        _check_ids(self.tensors, self.ops)
        st = _structure(self.tensors, self.ops)
        object.__setattr__(self, "structure", st)
        _check_acyclic(self, st)
        _check_given_order(self, st)
        try:
            base = self.problem()
        except ProblemError as e:  # the tensor's buffer fields: name it a tensor
            raise ProblemError(str(e).replace("buffer ", "tensor ", 1)) from None
        object.__setattr__(self, "base", base)
        _check_reuses(self, st)

    structure: Structure = field(init=False, repr=False)
    base: Problem = field(init=False, repr=False)  # the given order, no reuse taken

    # -- lookups ---------------------------------------------------------------------------
    @cached_property
    def op_index(self) -> dict[str, int]:
        return {o.id: k for k, o in enumerate(self.ops)}

    @cached_property
    def tensor_index(self) -> dict[str, int]:
        return {t.id: i for i, t in enumerate(self.tensors)}

    @property
    def given_order(self) -> tuple[int, ...]:
        return tuple(range(len(self.ops)))

    def order_of(self, ids: Iterable[str]) -> tuple[int, ...]:
        """Op ids -> op indices (KeyError for an unknown id)."""
        return tuple(self.op_index[i] for i in ids)

    def ids_of(self, order: Sequence[int]) -> tuple[str, ...]:
        return tuple(self.ops[k].id for k in order)

    @cached_property
    def candidates(self) -> tuple[Reuse, ...]:
        """Every reuse the ops declare (each can hold in some order: the checks saw to it)."""
        return tuple(Reuse(o.id, out, inp) for o in self.ops for out, inp in o.reuse)

    def with_memories(self, memories: Iterable[Memory]) -> Graph:
        """The same ops and tensors in another hierarchy (fastest first)."""
        return Graph(self.tensors, self.ops, tuple(memories), dict(self.metadata))

    def with_capacity(self, capacity: int) -> Graph:
        """Cap a single-memory graph (as ``Problem.with_capacity``)."""
        self.base.with_capacity(capacity)  # the same check and message
        return self.with_memories((replace(self.memories[0], capacity=capacity),))

    @cached_property
    def descendants(self) -> list[int]:
        """Per op, a bit mask of the ops that run after it in every order."""
        return _descendants(self.structure)

    def never(self, k: int, out: str, inp: str) -> str | None:
        """Why op ``k`` writing ``out`` into ``inp`` can hold in no order (None: it can in some;
        both must be tensors of the op's outputs and inputs)."""
        return _never(self, k, self.tensor_index[out], self.tensor_index[inp])

    # -- lifetimes and problems ------------------------------------------------------------
    def lifetimes(self, order: Sequence[int] | None = None) -> tuple[list[int], list[int]]:
        """``(start, end)`` per tensor, half-open, under ``order`` (op indices; default: given)."""
        st = self.structure
        pos = _positions(st.ops, order)
        steps = st.steps
        start = [0 if p < 0 else pos[p] for p in st.producer]
        end = []
        for i, cons in enumerate(st.consumers):
            if st.output[i]:
                end.append(steps)
            elif cons:
                end.append(max(pos[c] for c in cons) + 1)
            else:
                end.append(start[i] + 1)
        return start, end

    def holds(self, reuse: Reuse, order: Sequence[int] | None = None) -> str | None:
        """Why ``reuse`` cannot be taken under ``order`` (None: it can): its op must be the input's
        last consumer, and the reuse one the op declares."""
        k = self.op_index.get(reuse.op)
        if k is None:
            return f"unknown op {reuse.op!r}"
        if (reuse.output, reuse.input) not in self.ops[k].reuse:
            return f"op {reuse.op!r} declares no reuse of {reuse.input!r} for {reuse.output!r}"
        pos = _positions(self.structure.ops, order)
        cons = self.structure.consumers[self.tensor_index[reuse.input]]
        later = [c for c in cons if pos[c] > pos[k]]
        if later:
            c = max(later, key=lambda c: pos[c])
            return f"{reuse.input!r} is still live: read by op {self.ops[c].id!r} at step {pos[c]}, after op {reuse.op!r} at step {pos[k]}"
        return None

    def problem(self, order: Sequence[int] | None = None, reuses: Iterable[Reuse] = ()) -> Problem:
        """The problem of ``order`` (op indices; default: the given order) with ``reuses`` taken
        (each a relative placement at delta 0; the caller checks they hold)."""
        start, end = self.lifetimes(order)
        buffers = tuple(t.buffer(s, e) for t, s, e in zip(self.tensors, start, end))
        relative = tuple(RelativePlacement(r.output, r.input, 0) for r in reuses)
        meta = {**self.metadata, "steps": self.structure.steps}
        return Problem(buffers, self.memories, relative, meta)


def _positions(n: int, order: Sequence[int] | None) -> list[int]:
    if order is None:
        return list(range(n))
    pos = [0] * n
    for step, k in enumerate(order):
        pos[k] = step
    return pos


# -- the checks --------------------------------------------------------------------------------

def _check_ids(tensors: tuple[Tensor, ...], ops: tuple[Op, ...]) -> None:
    for kind, items in (("tensor", tensors), ("op", ops)):
        seen: set[str] = set()
        for x in items:
            if not isinstance(x.id, str) or not x.id:
                raise GraphError(f"{kind} {x.id!r}: field 'id': must be a non-empty string")
            if x.id in seen:
                raise GraphError(f"{kind} {x.id!r}: field 'id': duplicate id")
            seen.add(x.id)


def _structure(tensors: tuple[Tensor, ...], ops: tuple[Op, ...]) -> Structure:
    index = {t.id: i for i, t in enumerate(tensors)}
    producer = [-1] * len(tensors)
    consumers: list[set[int]] = [set() for _ in tensors]
    reads, writes, reuse = [], [], []
    for k, o in enumerate(ops):
        for name in ("inputs", "outputs"):
            for tid in getattr(o, name):
                if tid not in index:
                    raise GraphError(f"op {o.id!r}: field {name!r}: unknown tensor {tid!r}")
        if len(set(o.outputs)) != len(o.outputs):
            twice = next(t for t in o.outputs if o.outputs.count(t) > 1)
            raise GraphError(f"op {o.id!r}: field 'outputs': tensor {twice!r} listed twice")
        own = set(o.outputs) & set(o.inputs)
        if own:
            raise GraphError(f"op {o.id!r}: reads its own output {sorted(own)[0]!r} (a cycle)")
        for tid in o.outputs:
            i = index[tid]
            if producer[i] >= 0:
                raise GraphError(f"tensor {tid!r}: produced by two ops, {ops[producer[i]].id!r} and {o.id!r}")
            if tensors[i].input:
                raise GraphError(f"tensor {tid!r}: a graph input (\"input\": true) cannot be produced by op {o.id!r}")
            producer[i] = k
        ins = tuple(dict.fromkeys(index[t] for t in o.inputs))
        for i in ins:
            consumers[i].add(k)
        reads.append(ins)
        writes.append(tuple(index[t] for t in o.outputs))
        reuse.append(_reuse_pairs(o, index))
    for i, t in enumerate(tensors):
        if producer[i] < 0 and not t.input:
            raise GraphError(f"tensor {t.id!r}: no op produces it and it is not a graph input (set \"input\": true)")
    preds = [tuple(dict.fromkeys(producer[i] for i in r if producer[i] >= 0)) for r in reads]
    succs: list[list[int]] = [[] for _ in ops]
    for k, ps in enumerate(preds):
        for p in ps:
            succs[p].append(k)
    return Structure(tuple(t.size for t in tensors), tuple(producer), tuple(tuple(sorted(c)) for c in consumers),
                     tuple(bool(t.output) for t in tensors), tuple(reads), tuple(writes), tuple(preds),
                     tuple(tuple(s) for s in succs), tuple(reuse))


def _reuse_pairs(o: Op, index: Mapping[str, int]) -> tuple[tuple[int, int], ...]:
    pairs = []
    outs = set()
    for p in o.reuse:
        if len(p) != 2 or not all(isinstance(x, str) for x in p):
            raise GraphError(f"op {o.id!r}: field 'reuse': expected output -> input tensor ids, got {p!r}")
        out, inp = p
        if out in outs:
            raise GraphError(f"op {o.id!r}: field 'reuse': output {out!r} listed twice")
        outs.add(out)
        if out not in o.outputs:
            raise GraphError(f"op {o.id!r}: field 'reuse': {out!r} is not an output of the op")
        if inp not in o.inputs:
            raise GraphError(f"op {o.id!r}: field 'reuse': {inp!r} is not an input of the op")
        pairs.append((index[out], index[inp]))
    return tuple(pairs)


def _check_acyclic(graph: Graph, st: Structure) -> None:
    """Raise GraphError naming a cycle of ops if there is one."""
    indegree = [len(p) for p in st.preds]
    ready = [k for k, d in enumerate(indegree) if d == 0]
    seen = 0
    while ready:
        k = ready.pop()
        seen += 1
        for s in st.succs[k]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    if seen == st.ops:
        return
    left = {k for k, d in enumerate(indegree) if d > 0}
    k = min(left)
    path: list[int] = []
    while k not in path:  # walk back through unfinished predecessors until one repeats
        path.append(k)
        k = next(p for p in st.preds[k] if p in left)
    cycle = path[path.index(k):][::-1]
    names = " -> ".join(graph.ops[c].id for c in [*cycle, cycle[0]])
    raise GraphError(f"op {graph.ops[cycle[0]].id!r}: the ops form a cycle: {names}")


def _check_given_order(graph: Graph, st: Structure) -> None:
    """The given order must be one the ops can run in: every input produced by an earlier op."""
    for k, reads in enumerate(st.reads):
        for i in reads:
            if st.producer[i] > k:
                raise GraphError(f"op {graph.ops[k].id!r}: reads {graph.tensors[i].id!r} before op "
                                 f"{graph.ops[st.producer[i]].id!r} produces it (list the ops in an order they can run)")


def _check_reuses(graph: Graph, st: Structure) -> None:
    """Each declared reuse must be able to hold in some order (``never``)."""
    for k, o in enumerate(graph.ops):
        for out, inp in o.reuse:
            why = graph.never(k, out, inp)
            if why:
                raise GraphError(f"op {o.id!r}: field 'reuse': {out!r} into {inp!r} can never hold: {why}")


def _never(graph: Graph, k: int, y: int, x: int) -> str | None:
    """Why op ``k`` can write tensor ``y`` into tensor ``x`` in no order: the output does not fit,
    the input is a graph output or another reader of it runs after the op in every order, or the
    two cannot share an offset (memories, alignments, fixed offsets)."""
    st = graph.structure
    out, inp = graph.tensors[y].id, graph.tensors[x].id
    if st.size[y] > st.size[x]:
        return f"{out!r} ({st.size[y]} bytes) does not fit in {inp!r} ({st.size[x]} bytes)"
    if st.output[x]:
        return f"{inp!r} is a graph output, live to the last step"
    after = graph.descendants[k]
    later = next((c for c in st.consumers[x] if c != k and after >> c & 1), None)
    if later is not None:
        return f"{inp!r} is also read by op {graph.ops[later].id!r}, which runs after {graph.ops[k].id!r} in every order"
    return _offset_conflict(graph, x, y)


def _offset_conflict(graph: Graph, x: int, y: int) -> str | None:
    """Why tensors ``x`` and ``y`` cannot share an offset (memories, alignment, fixed offsets)."""
    a, b = graph.tensors[x], graph.tensors[y]
    free = tuple(replace(m, capacity=None) for m in graph.memories)  # the output fits in the input: its bytes decide
    try:
        Problem((a.buffer(0, 2), b.buffer(1, 2)), free, (RelativePlacement(b.id, a.id, 0),))
    except ProblemError as e:
        return str(e).split(": ", 2)[-1]
    return None


def _descendants(st: Structure) -> list[int]:
    """Per op, a bit mask of the ops that must run after it."""
    out = [0] * st.ops
    for k in reversed(_topological(st)):
        m = 0
        for s in st.succs[k]:
            m |= out[s] | (1 << s)
        out[k] = m
    return out


def _topological(st: Structure) -> list[int]:
    indegree = [len(p) for p in st.preds]
    ready = [k for k, d in enumerate(indegree) if d == 0]
    out = []
    while ready:
        k = ready.pop()
        out.append(k)
        for s in st.succs[k]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    return out


__all__ = ["Graph", "GraphError", "Op", "Reuse", "Structure", "Tensor"]
