"""Export every network of ``zoo.MODELS``, write its Problem as models/<name>.json and the
table in models/README.md (buffers, peak live load, torch's own cross-check).

    python models/export_models.py [name ...]

The cross-check runs the decomposed program on real tensors (optplan.frontends.torch_export.
eager_live_peak): live bytes after every node, from real storages and torch.fx's last-use
schedule. Dynamic models are measured at their upper bound, the size the plan must hold.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np
from zoo import MODELS

from optplan.bounds import lower_bounds
from optplan.formats import write_problem
from optplan.frontends.torch_export import eager_live_peak, problem_from_program


def live_curve(problem, steps: int) -> list[int]:
    delta = np.zeros(steps + 1, np.int64)
    for b in problem.buffers:
        delta[b.start] += b.size
        delta[b.end] -= b.size
    return np.cumsum(delta)[:steps].tolist()


def export_one(name: str) -> dict:
    shape, build = MODELS[name]
    torch.manual_seed(0)
    model, args, dynamic = build()
    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        ep = torch.export.export(model, args, dynamic_shapes=dynamic)
        ep = ep.run_decompositions()
    seconds = time.perf_counter() - t0
    problem = problem_from_program(ep, decompose=False, name=name)
    write_problem(problem, HERE / f"{name}.json")
    steps = int(problem.metadata["steps"])
    ours = live_curve(problem, steps)
    peak = max(ours)
    eager = eager_live_peak(ep, args, decompose=False)
    first = next(i for i, n in enumerate(ep.graph.nodes) if n.op != "placeholder")
    mismatched = sum(1 for a, b in zip(ours[first:], eager["curve"][first:]) if a != b)
    row = {
        "name": name, "input": shape, "nodes": steps, "buffers": len(problem.buffers),
        "total_bytes": sum(b.size for b in problem.buffers), "peak_live_load": peak,
        "lower_bound": lower_bounds(problem).lower["mem"], "torch_peak": eager["peak"],
        "steps_differing": mismatched, "export_seconds": round(seconds, 1),
    }
    print(json.dumps(row), flush=True)
    return row


def write_readme(rows: list[dict]) -> None:
    lines = [
        "# models/",
        "",
        "Real networks written in plain torch (`zoo.py`, random weights, no downloads), exported with",
        "`torch.export` + `run_decompositions()` and turned into optplan problems by",
        "`optplan.frontends.torch_export` (one buffer per storage, inputs and outputs planned as in",
        "ExecuTorch, parameters not planned, memory alignment 16). Regenerate with",
        "",
        "    python models/export_models.py",
        "",
        "*peak live load*: max over steps of the bytes live (a lower bound on any plan). *torch peak*:",
        "the same quantity measured by running the decomposed program on real tensors",
        "(`eager_live_peak`: distinct real storages held after each node under torch.fx's last-use",
        "schedule). *steps differing*: steps (after the placeholders) where the two live curves differ.",
        "The optplan lower bound accounts for the 16-byte alignment.",
        "",
        "| network | input | nodes | buffers | total bytes | peak live load | torch peak | steps differing | optplan lower bound | export s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(f"| {r['name']} | {r['input']} | {r['nodes']} | {r['buffers']} | {r['total_bytes']:,} | "
                     f"{r['peak_live_load']:,} | {r['torch_peak']:,} | {r['steps_differing']} | "
                     f"{r['lower_bound']:,} | {r['export_seconds']} |")
    lines += ["", "gpt2 is exported with a dynamic sequence length (2..512): sizes are taken at the upper",
              "bound 512, and torch's measurement runs at 512 tokens.", "",
              "The same networks lowered through ExecuTorch (its greedy vs optplan vs the lower bound, on",
              "ExecuTorch's own tensor specs): `experiments/results/executorch_models*.md`.", ""]
    (HERE / "README.md").write_text("\n".join(lines))


def main(argv: list[str]) -> None:
    names = argv or list(MODELS)
    rows_path = HERE / "summary.json"
    rows = {r["name"]: r for r in json.loads(rows_path.read_text())} if rows_path.exists() else {}
    for name in names:
        rows[name] = export_one(name)
    ordered = [rows[n] for n in MODELS if n in rows]
    rows_path.write_text(json.dumps(ordered, indent=1) + "\n")
    write_readme(ordered)


if __name__ == "__main__":
    main(sys.argv[1:])
