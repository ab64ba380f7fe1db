"""Export every network of ``zoo.MODELS``, write its Problem as models/<name>.json and the
table in models/README.md (buffers, peak live load, torch's own cross-check).

    python models/export_models.py [--onnx] [--solve S] [--executorch] [name ...]

``--onnx`` also exports the program with ``torch.onnx.export`` and extracts it with the ONNX
front end (models/<name>.onnx.json); ``--solve S`` plans both problems with ``auto`` in S
seconds; ``--executorch`` lowers the network through ExecuTorch and records its greedy's arena
next to optplan's on the same specs (experiments/bench_executorch.py's ``lower``).

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

from optplan.core.bounds import lower_bounds
from optplan.formats import write_problem
from optplan.frontends.torch_export import eager_live_peak, problem_from_program


def live_curve(problem, steps: int) -> list[int]:
    delta = np.zeros(steps + 1, np.int64)
    for b in problem.buffers:
        delta[b.start] += b.size
        delta[b.end] -= b.size
    return np.cumsum(delta)[:steps].tolist()


def export_one(name: str, onnx: bool = False, solve: float | None = None, executorch: bool = False) -> dict:
    shape, build = MODELS[name]
    torch.manual_seed(0)
    model, args, dynamic = build()
    model.eval()
    t0 = time.perf_counter()
    with torch.no_grad():
        exported = torch.export.export(model, args, dynamic_shapes=dynamic)
        ep = exported.run_decompositions()
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
    if solve is not None:
        row["optplan"] = solved(problem, solve)
    if onnx:
        from optplan.frontends.onnx_model import extract_onnx

        proto = torch.onnx.export(exported, dynamo=True, verbose=False).model_proto
        op = extract_onnx(proto, name=name)
        write_problem(op, HERE / f"{name}.onnx.json")
        row["onnx"] = {"nodes": len(proto.graph.node), "buffers": len(op.buffers),
                       "total_bytes": sum(b.size for b in op.buffers), "peak_live_load": max(live_curve(op, int(op.metadata["steps"]))),
                       "lower_bound": lower_bounds(op).lower["mem"]}
        if solve is not None:
            row["onnx"]["optplan"] = solved(op, solve)
    if executorch:
        sys.path.insert(0, str(HERE.parent / "experiments"))
        from bench_executorch import lower

        et = lower(name, "auto", solve or 30.0)
        row["executorch"] = {k: et[k] for k in ("specs", "greedy", "optplan", "bound", "status")}
    print(json.dumps(row), flush=True)
    return row


def solved(problem, time_limit: float) -> dict:
    from optplan import registry

    plan = registry.solve(problem, "auto", time_limit=time_limit, workers=2)
    return {"peak": plan.peak["mem"], "status": plan.status.value, "seconds": round(plan.seconds, 1)}


def write_readme(rows: list[dict]) -> None:
    lines = [
        "# models/",
        "",
        "Real networks written in plain torch (`zoo.py`, random weights, no downloads) and two built by",
        "Hugging Face `transformers` from their configs (`hf_gpt2`: GPT2LMHeadModel at GPT2Config's defaults,",
        "`hf_bert`: BertModel at BertConfig's defaults; random weights, nothing downloaded), exported with",
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
    more = [r for r in rows if "onnx" in r or "optplan" in r or "executorch" in r]
    if more:
        lines += ["", "Extracted also through ONNX (`torch.onnx.export` of the same program, `--onnx`), planned by",
                  "`auto` (`--solve`), and lowered through ExecuTorch (`--executorch`: its greedy and optplan on",
                  "ExecuTorch's own specs, after constant_prop_pass, as in experiments/bench_executorch.py):", "",
                  "| network | torch.export: buffers / load bound / optplan | ONNX: nodes / buffers / load bound / optplan | ExecuTorch: specs / bound / greedy / optplan |",
                  "| --- | --- | --- | --- |"]
        for r in more:
            opt = r.get("optplan", {})
            on = r.get("onnx", {})
            et = r.get("executorch", {})
            cell1 = f"{r['buffers']} / {r['lower_bound']:,} / " + (f"{opt['peak']:,} {opt['status']}" if opt else "-")
            cell2 = (f"{on['nodes']} / {on['buffers']} / {on['lower_bound']:,} / "
                     + (f"{on['optplan']['peak']:,} {on['optplan']['status']}" if "optplan" in on else "-")) if on else "-"
            cell3 = (f"{et['specs']} / {et['bound']:,} / {et['greedy']:,} / {et['optplan']:,} {et['status']}") if et else "-"
            lines.append(f"| {r['name']} | {cell1} | {cell2} | {cell3} |")
    if more:
        lines += ["", "ONNX vs torch.export: the ONNX exporter folds what depends on weights and shapes only (position",
                  "ids, token types, the extended attention mask: weights in ONNX, planned tensors in ATen; onnxruntime",
                  "folds any node computed from weights only, and so does the ONNX front end), runs Transpose and Slice",
                  "as copies where ATen has views, and drops layer norm's saved statistics. hf_bert's ONNX peak is lower",
                  "by 65,536 bytes: at torch.export's peak the 128x128 float32 attention mask (`where`, computed from",
                  "shapes and constants) is live, and the ONNX exporter folds it into a constant; hf_gpt2's peaks are",
                  "equal. ExecuTorch plans its own specs (the edge dialect's copies included), so compare its columns",
                  "with each other."]
    lines += ["", "gpt2 is exported with a dynamic sequence length (2..512): sizes are taken at the upper",
              "bound 512, and torch's measurement runs at 512 tokens.", "",
              "The same networks lowered through ExecuTorch (its greedy vs optplan vs the lower bound, on",
              "ExecuTorch's own tensor specs): `experiments/results/executorch_models*.md`.", ""]
    (HERE / "README.md").write_text("\n".join(lines))


def main(argv: list[str]) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(MODELS))
    ap.add_argument("--onnx", action="store_true")
    ap.add_argument("--solve", type=float, default=None, metavar="S")
    ap.add_argument("--executorch", action="store_true")
    args = ap.parse_args(argv)
    rows_path = HERE / "summary.json"
    rows = {r["name"]: r for r in json.loads(rows_path.read_text())} if rows_path.exists() else {}
    for name in args.names:
        # the columns of flags not given this time stay as measured before (same program, same sizes)
        row = export_one(name, args.onnx, args.solve, args.executorch)
        rows[name] = row | {k: v for k, v in rows.get(name, {}).items() if k in ("onnx", "optplan", "executorch") and k not in row}
    ordered = [rows[n] for n in MODELS if n in rows]
    rows_path.write_text(json.dumps(ordered, indent=1) + "\n")
    write_readme(ordered)


if __name__ == "__main__":
    main(sys.argv[1:])
