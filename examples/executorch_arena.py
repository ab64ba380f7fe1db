# examples/executorch_arena.py: optplan as ExecuTorch's memory planner, beside ExecuTorch's greedy
import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.passes.constant_prop_pass import constant_prop_pass

from optplan.frontends.executorch import make_algo, memory_planning_pass

model = torch.nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, batch_first=True).eval()
example = (torch.randn(1, 16, 32),)


def arena_bytes(planning_pass: MemoryPlanningPass) -> int:
    """Lower the model with ``planning_pass`` and return the size of its planned arena (mem_id 1)."""
    edge = to_edge(torch.export.export(model, example))
    # fold the weights' transposes (permute_copy of a constant) into constants first, as ExecuTorch's
    # own tests do (it has no public hook for a program pass): else the copies are planned memory
    edge._edge_programs["forward"] = constant_prop_pass(edge.exported_program())
    program = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning_pass))
    return program.executorch_program.execution_plan[0].non_const_buffer_sizes[1]


algo = make_algo("auto", time_limit=5)
ours = arena_bytes(memory_planning_pass(algo))
greedy = arena_bytes(MemoryPlanningPass())  # ExecuTorch's default: its greedy
plan = algo.runs[-1].plan
print(f"optplan: {ours:,} bytes ({plan.status.value}, lower bound {plan.lower_bound['mem1']:,})")
print(f"ExecuTorch's greedy: {greedy:,} bytes")
