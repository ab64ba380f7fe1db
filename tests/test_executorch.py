"""optplan as ExecuTorch's memory planner: conventions on hand-made specs, then end to end.

End to end: a small model is lowered with optplan as the planner, ExecuTorch's own Verifier
checks storage reuse, ExecuTorch's runtime runs the program and its outputs are compared with
eager PyTorch; arena sizes are compared with ExecuTorch's greedy and 1.5's banked greedy on
the same specs. CI installs executorch (extra ``optplan[executorch]``); importorskip only
spares local runs without it.
"""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.banked_memory_planning import Bank, BankedGreedy, TargetMemoryMap
from executorch.exir.memory_planning import Verifier, collect_specs_from_nodes, greedy
from executorch.exir.tensor import TensorSpec
from executorch.runtime import Runtime

from optplan.core.errors import OptplanError
from optplan.frontends.executorch import (
    MemoryConfig,
    make_algo,
    memory_planning_pass,
    problem_from_specs,
)


def _spec(nbytes: int, start: int, end: int, mem_id: int | None = None) -> TensorSpec:
    spec = TensorSpec(torch.uint8, torch.Size([nbytes]))
    spec.lifetime = [start, end]
    spec.mem_id = mem_id
    return spec


def _gm(reserved=None) -> torch.fx.GraphModule:
    gm = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())
    if reserved is not None:
        gm.input_mem_buffer_sizes = reserved
    return gm


def _overlap(a, b, ra, rb) -> bool:
    return (ra.mem_id == rb.mem_id and ra.mem_offset < rb.mem_offset + b.allocated_memory
            and rb.mem_offset < ra.mem_offset + a.allocated_memory)


def test_inclusive_lifetimes_become_half_open_at_the_border():
    a, b, c = _spec(16, 0, 2), _spec(16, 2, 4), _spec(16, 3, 5)
    built = problem_from_specs([a, b, c], 16)
    assert [(x.start, x.end) for x in built.problem.buffers] == [(0, 3), (2, 5), (3, 6)]
    res = make_algo("greedy-size")(16, [a, b, c], _gm(), None, 0)
    d = res.spec_dict
    assert not _overlap(a, b, d[a], d[b])  # a ends at 2 where b starts: they conflict
    assert res.bufsizes == [0, 32]  # a and c may share, b needs its own bytes


def test_realign_arena_zero_and_extra_padding():
    spec = TensorSpec(torch.float32, torch.Size([3]))  # 12 bytes
    spec.lifetime = [0, 1]
    res = make_algo("greedy-size")(16, [spec], _gm(), None, 8)
    assert spec.allocated_memory == 16
    assert res.bufsizes == [0, 16 + 8]  # arena 0 is reserved; padding per used arena


def test_preset_mem_id_is_a_pin_and_other_specs_stay_out_of_that_arena():
    pinned, free = _spec(32, 0, 3, mem_id=2), _spec(64, 0, 3)
    res = make_algo("greedy-size")(16, [pinned, free], _gm(), None, 0)
    assert res.spec_dict[pinned].mem_id == 2 and res.spec_dict[free].mem_id == 1
    assert res.bufsizes == [0, 64, 32]


def test_storage_base_alias_is_placed_relative_to_its_base():
    base, other = _spec(64, 0, 5), _spec(64, 1, 3)
    alias = _spec(32, 2, 4)
    alias.storage_base, alias.storage_base_offset = base, 16
    zero = _spec(64, 3, 5)
    zero.inplace_base = base  # the 1.4 spelling (offset 0)
    res = make_algo("greedy-size")(16, [base, other, alias, zero], _gm(), None, 0)
    d = res.spec_dict
    assert d[alias].mem_offset == d[base].mem_offset + 16
    assert d[zero].mem_offset == d[base].mem_offset
    assert not _overlap(other, base, d[other], d[base])
    assert d[alias].mem_obj_id == d[base].mem_obj_id  # overlapping storage: one object


def test_submodule_reservation_is_kept_and_not_mutated():
    specs = [_spec(48, 0, 2), _spec(32, 1, 3)]
    reserved = [0, 100]
    res = make_algo("greedy-size")(16, specs, _gm(reserved), None, 0)
    assert reserved == [0, 100]
    assert all(r.mem_offset >= 100 for r in res.spec_dict.values())
    assert res.bufsizes[1] == max(r.mem_offset + s.allocated_memory for s, r in res.spec_dict.items())


def test_cadence_style_hierarchy_blocklist_and_capacity():
    config = MemoryConfig(memory_sizes=[64, 4096], memory_alignments=[16, 64], memory_names=["sram", "dram"])
    small, blocked, big = _spec(32, 0, 2), _spec(16, 0, 2), _spec(128, 1, 3)
    algo = make_algo("greedy-size", config=config, blocklist={blocked: [1]})
    res = algo(16, [small, blocked, big], _gm(), None, 0)
    d = res.spec_dict
    assert d[small].mem_id == 1  # fastest memory first
    assert d[blocked].mem_id == 2  # blocked from sram
    assert d[big].mem_id == 2 and d[big].mem_offset % 64 == 0  # too big for sram; dram alignment
    assert res.bufsizes[1] <= 64
    assert [m.name for m in algo.runs[-1].problem.memories] == ["sram", "dram"]
    tiny = MemoryConfig(memory_sizes=[64])
    with pytest.raises(OptplanError, match="'t0'"):
        make_algo("greedy-size", config=tiny)(16, [big], _gm(), None, 0)


def test_relative_placements_and_a_cadence_constraints_object():
    class Constraints:  # the part of Cadence's MemConstraints optplan reads
        def is_mem_id_in_blocklist(self, spec, mem_id):
            return spec is out and mem_id == 1

    config = MemoryConfig(memory_sizes=[1024, 1024], memory_names=["sram", "dram"])
    out, first, second = _spec(64, 2, 4), _spec(32, 0, 2), _spec(32, 1, 2)
    relative = {first: (out, 0), second: (out, 32)}  # concat inputs written inside the output
    res = make_algo("greedy-size", config=config, blocklist=Constraints(), relative=relative)(16, [out, first, second], _gm(), None, 0)
    d = res.spec_dict
    assert d[out].mem_id == 2  # blocked from sram; its members follow it
    assert (d[first].mem_id, d[first].mem_offset) == (2, d[out].mem_offset)
    assert (d[second].mem_id, d[second].mem_offset) == (2, d[out].mem_offset + 32)


# -- end to end -----------------------------------------------------------------------------

class Small(torch.nn.Module):
    """Convolution, split views, in-place buffer mutation, a linear on 4D input, concat."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.lin = torch.nn.Linear(8, 8)
        self.register_buffer("count", torch.zeros(4))

    def forward(self, x):
        y = self.conv(x).relu()
        a, b = y.split(4, dim=1)
        self.count.add_(1)
        z = self.lin(y.permute(0, 2, 3, 1)).sigmoid()
        return torch.cat([b, a], 1) * 2, z.sum() + self.count.sum()


def _lower(model, args, algo, **pass_kwargs):
    """Lower with ``algo`` inside the suite; also run greedy and banked greedy on the same specs."""
    others = {}
    banks = pass_kwargs.pop("banks", None)

    def compare(alignment, specs, gm, gs, pad):
        specs = list(specs)
        others.setdefault("greedy", []).append(greedy(alignment, specs, gm, gs, pad).bufsizes)
        if banks is not None:
            others.setdefault("banked_greedy", []).append(BankedGreedy(banks)(alignment, specs, gm, gs, pad).bufsizes)
        return algo(alignment, specs, gm, gs, pad)

    compare.__name__ = algo.__name__
    ep = torch.export.export(model, args)
    et = to_edge(ep).to_executorch(ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass(compare, **pass_kwargs)))
    return et, others


def _verify_and_run(et, model, inputs_list):
    program = et.exported_program()
    Verifier(program.graph_module, True, True, True, program.graph_signature).verify_storage_reuse()
    method = Runtime.get().load_program(et.buffer).load_method("forward")
    for inputs in inputs_list:  # twice: the mutated buffer must carry over
        got = method.execute(list(inputs))
        want = model(*inputs)
        want = want if isinstance(want, tuple) else (want,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert torch.allclose(g, w, atol=1e-5), (g, w)


def test_end_to_end_lowering_verifier_runtime_and_arena_sizes():
    torch.manual_seed(0)
    model, x = Small().eval(), torch.randn(1, 3, 16, 16)
    algo = make_algo(time_limit=5)
    et, others = _lower(model, (x,), algo)
    reference = Small().eval()
    reference.load_state_dict(model.state_dict())
    _verify_and_run(et, reference, [(x,), (x * 2,)])
    run = algo.runs[-1]
    ours, theirs = run.bufsizes, others["greedy"][-1]
    assert et.exported_program().graph_module.meta["non_const_buffer_sizes"] == ours
    assert ours[0] == 0 and ours[1] >= run.plan.lower_bound["mem1"]
    assert run.constant_derived_bytes > 0  # the linear's weight is transposed into planned memory
    logging.getLogger(__name__).info(f"arena bytes: optplan ({algo.resolved_planner()}) {ours[1]}, "
                                     f"ExecuTorch greedy {theirs[1]}, lower bound {run.plan.lower_bound['mem1']}")


def test_end_to_end_two_banks_against_banked_greedy():
    torch.manual_seed(0)
    model, x = Small().eval(), torch.randn(1, 3, 16, 16)
    fast, slow = 4096, 1 << 20
    config = MemoryConfig(memory_sizes=[fast, slow], memory_alignments=[16, 16], memory_names=["sram", "dram"])
    banks = TargetMemoryMap([Bank("sram", fast, 1), Bank("dram", slow, 2)])
    algo = make_algo(time_limit=5, config=config)
    et, others = _lower(model, (x,), algo, banks=banks)
    reference = Small().eval()
    reference.load_state_dict(model.state_dict())
    _verify_and_run(et, reference, [(x,), (x * 2,)])
    ours, theirs = algo.runs[-1].bufsizes, others["banked_greedy"][-1]
    assert len(ours) == 3 and ours[1] <= fast and ours[2] <= slow
    logging.getLogger(__name__).info(f"sram/dram bytes: optplan {ours[1]}/{ours[2]}, banked greedy {theirs[1]}/{theirs[2]}")


class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x, flag):
        y = self.lin(x).relu()
        z = torch.cond(flag.sum() > 0, lambda a: (a * 2 + 1).sin(), lambda a: a.cos() * 3, (y,))
        return z + y


def test_end_to_end_control_flow_reserves_submodule_space():
    torch.manual_seed(0)
    model, x = Branchy().eval(), torch.randn(4, 16)
    algo = make_algo(time_limit=5)
    et, _ = _lower(model, (x, torch.tensor([1.0])), algo)
    assert len(algo.runs) == 3  # both branches, then the parent graph
    reserved = max(r.bufsizes[1] for r in algo.runs[:2])
    parent = algo.runs[-1]
    assert reserved > 0 and parent.bufsizes[1] == reserved + parent.plan.peak["mem1"]
    program = et.exported_program()
    offsets = [s.mem_offset for s in collect_specs_from_nodes(program.graph_module.graph.nodes, program.graph_signature)
               if s.mem_offset is not None and s.allocated_memory > 0]
    assert offsets and min(offsets) >= reserved  # the parent plans above the branches' space
    _verify_and_run(et, model, [(x, torch.tensor([1.0])), (x, torch.tensor([-1.0]))])
