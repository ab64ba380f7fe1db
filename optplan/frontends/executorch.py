"""optplan as ExecuTorch's memory planner (tested with ExecuTorch 1.5.1).

ExecuTorch's MemoryPlanningPass hands a planning algorithm the tensor specs of a graph;
``make_algo(...)`` returns such an algorithm,
``algo(alignment, specs, graph_module, graph_signature, extra_padding) -> MemoryAlgoResult``,
to be run inside ``MemoryPlanningAlgorithmSuite(algo_list=[algo])`` (``memory_planning_pass``
does that: in 1.4/1.5 a bare suite member passed as ``memory_planning_algo`` crashes).

ExecuTorch's conventions, translated here and nowhere else:
- ``spec.realign(alignment)`` before reading ``allocated_memory`` (sizes rounded up);
- lifetimes are inclusive node indices ``[s, e]``: a tensor ending at step i and one starting
  at i conflict, so ``[s, e]`` becomes optplan's half-open ``[s, e + 1)``;
- arena (``mem_id``) 0 is reserved for constants: arenas are 1..N, ``bufsizes[0] == 0``, and
  ``extra_padding`` is added to every arena that holds something;
- a ``mem_id`` already set on a spec (a custom pool pass) is a pin to that arena;
- a spec backed by another's storage (``storage_base`` + ``storage_base_offset`` in 1.5,
  ``inplace_base`` in 1.4) is placed relative to its base;
- control-flow submodules planned first leave ``graph_module.input_mem_buffer_sizes``: that
  prefix of each arena is reserved and the plan starts above it (read, never mutated);
- specs overlapping in storage must share a ``mem_obj_id`` (ExecuTorch's Verifier checks it):
  ids are the connected runs of overlapping byte ranges per arena.

A Cadence-style ``MemoryConfig`` (sizes, alignments, names, base addresses; any object with
those attributes works, including Cadence's own) becomes optplan's memory hierarchy, fastest
first; per-spec blocklists and relative placements map onto Buffer.blocked and
RelativePlacement.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optplan import registry
from optplan.core.buffer import Buffer, Memory, RelativePlacement
from optplan.core.errors import OptplanError
from optplan.core.plan import Plan
from optplan.core.problem import Problem

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class MemoryConfig:
    """A memory hierarchy in Cadence's terms: arena ``i + 1`` has ``memory_sizes[i]`` bytes."""

    memory_sizes: Sequence[int]
    memory_alignments: Sequence[int] | None = None
    memory_names: Sequence[str] | None = None
    base_addrs: Sequence[int] | None = None


@dataclass
class Run:
    """One call of the algorithm: the problem it built, the plan, the arena sizes returned."""

    problem: Problem
    plan: Plan
    bufsizes: list[int]
    constant_derived_bytes: int = 0  # planned bytes computed from constants only (see below)


Blocklist = Mapping[Any, Iterable[int]] | Callable[[Any, int], bool] | Any


@dataclass
class OptplanAlgo:
    """The planning algorithm ExecuTorch calls. ``runs`` keeps every call's problem and plan."""

    planner: str | None = None  # None: "auto" when registered, else "greedy-size"
    time_limit: float | None = 10.0
    config: Any = None  # MemoryConfig-like; None: one unbounded arena
    blocklist: Blocklist = None  # spec -> mem_ids, callable(spec, mem_id) -> bool, or Cadence MemConstraints
    relative: Mapping[Any, tuple[Any, int]] | None = None  # spec -> (base spec, byte delta)
    options: dict[str, object] = field(default_factory=dict)
    runs: list[Run] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.__name__ = f"optplan_{self.planner or 'auto'}"

    def resolved_planner(self) -> str:
        if self.planner is not None:
            return self.planner
        return "auto" if "auto" in registry.names() else "greedy-size"

    def __call__(self, alignment: int, specs: Iterable[Any], graph_module: torch.fx.GraphModule,
                 graph_signature: Any = None, extra_padding: int = 0) -> Any:
        from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult

        specs = list(specs)
        reserved = list(getattr(graph_module, "input_mem_buffer_sizes", None) or [])
        built = problem_from_specs(specs, alignment, self.config, extra_padding=extra_padding,
                                   reserved=reserved, blocklist=self.blocklist, relative=self.relative,
                                   reads=_reads(graph_module))
        name = self.resolved_planner()
        plan = registry.solve(built.problem, name, time_limit=self.time_limit, **self.options)
        if not plan.found:
            raise OptplanError(f"optplan planner {name!r}: {plan.status.value}: {plan.message or 'no plan found'}")
        result = MemoryAlgoResult({}, [])
        n_arenas = len(built.problem.memories)
        bufsizes = [0] * (n_arenas + 1)
        for mem_id in range(1, n_arenas + 1):
            mem = built.problem.memories[mem_id - 1].name
            base = built.reserved[mem_id]
            used = plan.peak[mem] > 0 or any(p.memory == mem for p in plan.placements.values())
            if used or base:
                bufsizes[mem_id] = base + plan.peak[mem] + extra_padding
        for spec, (mem_id, offset) in built.assign(plan).items():
            result.spec_dict[spec] = SpecAllocResult(mem_id, 0, offset)
        for spec, obj in _mem_obj_ids(result.spec_dict).items():
            result.spec_dict[spec].mem_obj_id = obj
        result.bufsizes = bufsizes
        self.runs.append(Run(built.problem, plan, list(bufsizes), _constant_derived_bytes(graph_module, specs)))
        return result


def make_algo(planner: str | None = None, time_limit: float | None = 10.0, **kwargs: Any) -> OptplanAlgo:
    """An ExecuTorch planning algorithm backed by an optplan planner (named ``optplan_<planner>``).

    Extra keyword arguments: ``config`` (MemoryConfig-like hierarchy), ``blocklist``,
    ``relative``, ``options`` (more planner options, e.g. ``{"workers": 2}``).
    """
    return OptplanAlgo(planner, time_limit, **kwargs)


def memory_planning_pass(algo: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
    """A MemoryPlanningPass running ``algo`` (default ``make_algo()``) inside the suite."""
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
    from executorch.exir.passes import MemoryPlanningPass

    algo = algo if algo is not None else make_algo()
    return MemoryPlanningPass(memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=[algo]), **kwargs)


# -- specs -> Problem ----------------------------------------------------------------------------

@dataclass
class BuiltProblem:
    problem: Problem
    ids: dict[str, Any]  # buffer id -> spec
    reserved: list[int]  # mem_id -> bytes reserved at the bottom (submodules)
    mem_ids: dict[str, int]  # memory name -> mem_id
    empty: dict[Any, int]  # zero-byte specs -> mem_id (offset 0, nothing to plan)

    def assign(self, plan: Plan) -> dict[Any, tuple[int, int]]:
        """spec -> (mem_id, absolute offset in the arena)."""
        out = {}
        for bid, p in plan.placements.items():
            mem_id = self.mem_ids[p.memory]
            out[self.ids[bid]] = (mem_id, self.reserved[mem_id] + p.offset)
        for spec, mem_id in self.empty.items():
            out[spec] = (mem_id, self.reserved[mem_id] if mem_id < len(self.reserved) else 0)
        return out


def memories_from_config(config: Any, alignment: int = 1) -> tuple[Memory, ...]:
    """A Cadence-style MemoryConfig as optplan memories (arena i + 1 is memory i), fastest first.
    Offsets in a memory are multiples of lcm(graph alignment, the memory's alignment)."""
    if config is None:
        return (Memory("mem1", None, alignment),)
    sizes = list(config.memory_sizes)
    aligns = list(getattr(config, "memory_alignments", None) or [1] * len(sizes))
    names = list(getattr(config, "memory_names", None) or [f"mem{i + 1}" for i in range(len(sizes))])
    bases = list(getattr(config, "base_addrs", None) or [0] * len(sizes))
    if not (len(aligns) == len(names) == len(bases) == len(sizes)):
        raise OptplanError("memory config: memory_sizes, memory_alignments, memory_names and base_addrs differ in length")
    return tuple(Memory(str(n), int(s), math.lcm(alignment, int(a)), None, int(b))
                 for s, a, n, b in zip(sizes, aligns, names, bases))


def problem_from_specs(specs: Sequence[Any], alignment: int, config: Any = None, *, extra_padding: int = 0,
                       reserved: Sequence[int] = (), blocklist: Blocklist = None,
                       relative: Mapping[Any, tuple[Any, int]] | None = None,
                       reads: Mapping[int, int] | None = None) -> BuiltProblem:
    """The optplan Problem of ExecuTorch tensor specs (realigned here, as greedy does).
    ``reads``: id(spec) -> number of consumers; a buffer's benefit is then its size x accesses
    (one write plus one read per consumer), else its size."""
    declared = memories_from_config(config, alignment)
    pinned = {int(s.mem_id) for s in specs if getattr(s, "mem_id", None) is not None}
    if 0 in pinned:
        raise OptplanError("a spec is pinned to mem_id 0, which ExecuTorch reserves for constants")
    memories = list(declared)
    for mem_id in range(len(declared) + 1, max(pinned, default=0) + 1):
        memories.append(Memory(f"mem{mem_id}", None, alignment))  # a custom pool: pins only
    n = len(memories)
    reserved_l = [0] * (n + 1)
    for i, r in enumerate(list(reserved)[: n + 1]):
        a = memories[i - 1].alignment if i else 1
        reserved_l[i] = -(-int(r) // a) * a  # the plan starts at the first aligned byte above it
    # capacities left after the submodule reservation and the padding
    memories = [Memory(m.name, None if m.capacity is None else max(0, m.capacity - reserved_l[i + 1] - extra_padding),
                       m.alignment, m.weight, m.base_address) for i, m in enumerate(memories)]
    names = [m.name for m in memories]
    mem_ids = {m.name: i + 1 for i, m in enumerate(memories)}
    declared_names = tuple(names[: len(declared)])

    ids: dict[str, Any] = {}
    key: dict[int, str] = {}
    buffers, empty = [], {}
    for k, spec in enumerate(specs):
        spec.realign(alignment)
        size = int(spec.allocated_memory)
        pin = getattr(spec, "mem_id", None)
        start, end = spec.lifetime
        if start is None or end is None or start > end:
            raise OptplanError(f"tensor spec {k} (shape {list(spec.shape)}): invalid lifetime {spec.lifetime}")
        if size == 0 and _storage_base(spec)[0] is None:
            empty[spec] = int(pin) if pin is not None else 1
            continue
        bid = f"t{k}"
        ids[bid], key[id(spec)] = spec, bid
        blocked = tuple(m for m in names if _blocked(blocklist, spec, mem_ids[m]))
        buffers.append(Buffer(
            bid, size, int(start), int(end) + 1,  # inclusive [s, e] -> half-open [s, e + 1)
            fixed_memory=names[int(pin) - 1] if pin is not None else None,
            allowed=None if pin is not None else declared_names,
            blocked=tuple(m for m in blocked if pin is None or m != names[int(pin) - 1]),
            benefit=None if reads is None else size * (1 + reads.get(id(spec), 0)),
        ))
    rel = []
    links = dict(relative or {})
    for spec in specs:
        base, delta = _storage_base(spec)
        if base is not None:
            links[spec] = (base, delta)
    for spec, (base, delta) in links.items():
        if id(spec) not in key:
            continue
        if id(base) not in key:
            raise OptplanError(f"tensor spec {key[id(spec)]} (shape {list(spec.shape)}): its base storage is not planned in this graph")
        rel.append(RelativePlacement(key[id(spec)], key[id(base)], int(delta)))
    # a relative member follows its base: its own pin/allow lists must not contradict the base's
    members = {r.buffer for r in rel}
    buffers = [b if b.id not in members else Buffer(b.id, b.size, b.start, b.end, blocked=b.blocked, benefit=b.benefit)
               for b in buffers]
    problem = Problem(tuple(buffers), tuple(memories), tuple(rel),
                      {"frontend": "executorch", "alignment": alignment, "extra_padding": extra_padding})
    return BuiltProblem(problem, ids, reserved_l, mem_ids, empty)


def _reads(graph_module: torch.fx.GraphModule) -> dict[int, int]:
    """id(spec) -> how many nodes consume the tensor (its reads, for the benefit)."""
    out: dict[int, int] = {}
    for node in graph_module.graph.nodes:
        spec = node.meta.get("spec")
        for s in spec if isinstance(spec, (list, tuple)) else [spec]:
            if s is not None and hasattr(s, "allocated_memory"):
                out[id(s)] = out.get(id(s), 0) + len(node.users)
    return out


def _storage_base(spec: Any) -> tuple[Any, int]:
    """(base spec, byte offset) for a storage-backed spec: 1.5's storage_base, 1.4's inplace_base."""
    base = getattr(spec, "storage_base", None)
    if base is not None:
        return base, int(getattr(spec, "storage_base_offset", 0) or 0)
    return getattr(spec, "inplace_base", None), 0  # 1.4 (in 1.5 it reads storage_base: None here)


def _blocked(blocklist: Blocklist, spec: Any, mem_id: int) -> bool:
    if blocklist is None:
        return False
    if hasattr(blocklist, "is_mem_id_in_blocklist"):  # Cadence MemConstraints
        return bool(blocklist.is_mem_id_in_blocklist(spec, mem_id))
    if callable(blocklist):
        return bool(blocklist(spec, mem_id))
    return mem_id in set(blocklist.get(spec, ()))


def _mem_obj_ids(spec_dict: Mapping[Any, Any]) -> dict[Any, int]:
    """Connected runs of overlapping byte ranges per arena get one id (the Verifier requires
    specs with overlapping storage to share ``mem_obj_id``)."""
    out: dict[Any, int] = {}
    next_id = 0
    by_mem: dict[int, list[tuple[int, int, Any]]] = {}
    for spec, r in spec_dict.items():
        by_mem.setdefault(r.mem_id, []).append((r.mem_offset, r.mem_offset + spec.allocated_memory, spec))
    for mem_id in sorted(by_mem):
        top = None
        for lo, hi, spec in sorted(by_mem[mem_id], key=lambda x: (x[0], x[1])):
            if hi <= lo:  # empty: overlaps nothing
                out[spec] = next_id
                next_id += 1
                continue
            if top is None or lo >= top:
                next_id += 1
                top = hi
            else:
                top = max(top, hi)
            out[spec] = next_id - 1
    return out


def _constant_derived_bytes(graph_module: torch.fx.GraphModule, specs: Sequence[Any]) -> int:
    """Planned bytes produced by ops whose tensor inputs are all constants.

    ExecuTorch's portable lowering turns ``linear`` into a run-time ``permute_copy`` of the
    weight: a constant's copy lands in planned memory (reference: 262 MB of a 332 MB Llama
    peak). ``constant_prop_pass`` removes it; we warn when it is there.
    """
    from executorch.exir import memory
    from executorch.exir.memory_planning import get_node_tensor_specs

    planned = {id(s) for s in specs}
    total, seen = 0, set()
    for node in graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        inputs = [a for a in node.all_input_nodes if a.op != "get_attr" and a.target is not memory.alloc]
        in_specs = [s for a in inputs for s in get_node_tensor_specs(a)]
        if not in_specs or not all(getattr(s, "const", False) for s in in_specs):
            continue
        for s in get_node_tensor_specs(node):
            if id(s) in planned and id(s) not in seen:
                seen.add(id(s))
                total += s.allocated_memory
    if total:
        warnings.warn(f"optplan: {total} planned bytes are computed from constants only "
                      "(e.g. permute_copy of a weight); run executorch.exir.passes.constant_prop_pass first",
                      stacklevel=3)
    return total
