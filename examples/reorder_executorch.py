# examples/reorder_executorch.py: choose the operator order of a torch program, apply it, lower it to ExecuTorch
import copy

import torch
from executorch.exir import ExecutorchBackendConfig, to_edge

from optplan.frontends.executorch import make_algo, memory_planning_pass
from optplan.frontends.torch_graph import graph_from_program, reorder_program
from optplan.graph.planner import solve_graph


class TwoProducts(torch.nn.Module):
    def forward(self, x):
        big_a = x @ x.T  # written in this order, both 256 x 256 temporaries are alive at once
        big_b = (x + 1) @ x.T
        return big_a.sum(dim=1) + big_b.sum(dim=0)


def arena_bytes(ep: torch.export.ExportedProgram) -> int:
    """Lower ``ep`` to ExecuTorch with optplan as its planner: the planned arena's bytes."""
    config = ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass(make_algo()))
    return to_edge(ep).to_executorch(config).executorch_program.execution_plan[0].non_const_buffer_sizes[1]


model, inputs = TwoProducts().eval(), (torch.randn(256, 64),)
ep = torch.export.export(model, inputs).run_decompositions()
graph = graph_from_program(ep, decompose=False)  # op ids: the node names of ep
given, chosen = solve_graph(graph, time_limit=10), solve_graph(graph, reorder=True, time_limit=10)
print(f"given order {given.plan.peak['mem']:,} bytes, chosen order {chosen.plan.peak['mem']:,} ({chosen.plan.status.value})")
reordered = copy.deepcopy(ep)
reorder_program(reordered, chosen.order)  # the nodes now run in the plan's order: the same outputs
torch.testing.assert_close(reordered.module()(*inputs), model(*inputs))
print(f"ExecuTorch arena: {arena_bytes(ep):,} bytes as written, {arena_bytes(reordered):,} reordered")
