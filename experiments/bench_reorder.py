"""Lowering the live load itself: the operator order and in-place reuse, per graph (issue 33).

    python experiments/bench_reorder.py [--time-limit 30] [--given-limit 10] [--families inference training randwire]
                                        [--only NAME ...] [-o experiments/results/reorder.md]

Graphs: the inference networks of ``models/`` (``models/zoo.py``: exported with torch.export and
decomposed, as ``models/export_models.py`` does; ``hf_gpt2`` and ``hf_bert`` are GPT-2 and BERT
built by Hugging Face ``transformers`` from their configs), their training steps
(``extract_training(..., graph=True)``: forward, backward, SGD step; the loss sums every output, so
every parameter gets a gradient), and RandWire-style random DAGs (``randwire``: a Watts-Strogatz
graph, k=4, p=0.75, oriented from lower to higher node index as in Xie et al. 2019; each node an op
reading its predecessors' outputs and writing a tensor of 1, 1, 2 or 4 units of 64 KiB, declaring
reuse of its first input when that fits; the given order is the node index order).

Per graph, each setting is a whole ``optplan solve`` process (``--json``): the given order with reuse
off and on (``--given-limit`` seconds), ``--reorder`` with reuse off and on (``--time-limit``), and
the best of the simple orders Inductor tries (bfs, dfs, least-peak-memory-first greedy, scored by
their live load with reuse) planned as a given order. Each simple order's live load is reported as
its distance to optplan's ``--reorder`` plan and to the proven bound over every order. PyTorch
Inductor's own scheduler (``torch._inductor.memory.reorder_for_peak_memory``) runs only inside
``torch.compile`` on Inductor's fused scheduler nodes: no public API takes an arbitrary graph, so
its three methods appear here as optplan's ``bfs``, ``dfs`` and ``greedy`` (written from Inductor's
descriptions). Raw rows go to the ``.jsonl`` beside the table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "models"))

from optplan.formats import write_graph
from optplan.frontends.graph_build import feasible_reuses
from optplan.graph.model import Graph, Op, Tensor
from optplan.graph.search import OrderSearch, OrderSettings

KIB = 1024


def randwire(n: int, seed: int, k: int = 4, p: float = 0.75, unit: int = 64 * KIB) -> Graph:
    """A RandWire-style DAG of ``n`` nodes (see the module docstring) and a final op summing the sinks."""
    r = random.Random(seed)
    lattice = sorted({(i, (i + j) % n) for i in range(n) for j in range(1, k // 2 + 1)})
    edges: set[tuple[int, int]] = set()
    for a, b in lattice:
        if r.random() < p:
            choices = [c for c in range(n) if c != a and (min(a, c), max(a, c)) not in edges]
            b = r.choice(choices) if choices else b
        edges.add((min(a, b), max(a, b)))
    preds = {i: sorted(a for a, b in edges if b == i) for i in range(n)}
    has_succ = {a for a, _ in edges}
    size = {i: unit * r.choice((1, 1, 2, 4)) for i in range(n)}
    tensors = [Tensor("x", unit, input=True), *(Tensor(f"n{i}", size[i]) for i in range(n)), Tensor("y", unit, output=True)]
    ops = []
    for i in range(n):
        reads = tuple(f"n{a}" for a in preds[i]) or ("x",)
        first = preds[i][0] if preds[i] else None
        reuse = ((f"n{i}", f"n{first}"),) if first is not None and size[first] >= size[i] else ()
        ops.append(Op(f"node{i}", reads, (f"n{i}",), reuse))
    ops.append(Op("sum", tuple(f"n{i}" for i in range(n) if i not in has_succ), ("y",)))
    plain = Graph(tuple(tensors), tuple(Op(o.id, o.inputs, o.outputs) for o in ops))
    return Graph(plain.tensors, feasible_reuses(plain, ops), metadata={"model": f"randwire-{n}-{seed}"})


def zoo_graph(name: str, training: bool) -> Graph:
    import torch
    from zoo import MODELS

    from optplan.frontends.torch_graph import graph_from_program
    from optplan.frontends.training import extract_training

    torch.manual_seed(0)
    model, args, dynamic = MODELS[name][1]()
    if training:
        def loss(out):  # every output, so that every parameter has a gradient
            leaves = [x for x in torch.utils._pytree.tree_leaves(out) if isinstance(x, torch.Tensor) and x.is_floating_point()]
            return sum(x.sum() for x in leaves)

        return extract_training(model, args, loss, name=name, graph=True)  # type: ignore[return-value]
    with torch.no_grad():
        ep = torch.export.export(model.eval(), args, dynamic_shapes=dynamic)
    return graph_from_program(ep, name=name)


def graphs(families: list[str], only: list[str]) -> list[tuple[str, str, object]]:
    """(family, name, builder) in table order."""
    from zoo import MODELS

    out: list[tuple[str, str, object]] = []
    for fam in families:
        if fam == "randwire":
            out += [("randwire", f"randwire-{n}-{s}", (lambda n=n, s=s: randwire(n, s))) for n in (50, 100, 200, 500) for s in (0, 1)]
        else:
            out += [(fam, name + ("-train" if fam == "training" else ""), (lambda name=name, t=fam == "training": zoo_graph(name, t)))
                    for name in MODELS]
    return [g for g in out if not only or g[1] in only or g[1].split("-train")[0] in only]


def solve(path: Path, seconds: float, *flags: str) -> dict:
    """One whole ``optplan solve --json`` process."""
    cmd = [sys.executable, "-m", "optplan.cli", "solve", str(path), "--time-limit", str(seconds), "--json", *flags]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - t0
    if run.returncode not in (0, 1):
        return {"error": (run.stderr.strip().splitlines() or ["?"])[-1], "wall": round(wall, 1)}
    doc = json.loads(run.stdout)
    return {"peak": sum(doc["peak"].values()), "bound": sum(doc["lower_bound"].values()), "status": doc["status"],
            "seconds": doc["seconds"], "wall": round(wall, 1), "reuses": len(doc.get("reuse", {})),
            "method": doc["stats"].get("order_method"), "bound_at": doc["stats"].get("bound_at")}


def measure(family: str, name: str, graph: Graph, tmp: Path, limit: float, given_limit: float) -> dict:
    search = OrderSearch(graph, True, OrderSettings())
    search.simple()
    plain = OrderSearch(graph, False, OrderSettings())
    live = {k: search.score(o)[0] for k, o in search.found.items()}
    best_simple = min(("bfs", "dfs", "greedy"), key=lambda k: live[k])
    path = tmp / f"{name}.json"
    write_graph(graph, path)
    permuted = Graph(graph.tensors, tuple(graph.ops[k] for k in search.found[best_simple]), graph.memories, graph.metadata)
    simple_path = tmp / f"{name}.{best_simple}.json"
    write_graph(permuted, simple_path)
    row = {"family": family, "name": name, "ops": len(graph.ops), "tensors": sum(t.size > 0 for t in graph.tensors),
           "reuses": len(graph.candidates), "live": live, "live_no_reuse": plain.score(list(graph.given_order))[0],
           "best_simple": best_simple,
           "given": solve(path, given_limit, "--no-reuse"), "given_reuse": solve(path, given_limit),
           "simple_planned": solve(simple_path, given_limit),
           "reorder": solve(path, limit, "--reorder", "--no-reuse"), "reorder_reuse": solve(path, limit, "--reorder"),
           "load": os.getloadavg()[0]}
    return row


def _mib(x: int | None) -> str:
    return "-" if x is None else f"{x / 2**20:,.2f}"


def _cell(r: dict, method: bool = False) -> str:
    if "error" in r:
        return f"error: {r['error'][:60]}"
    proven = "**OPT**" if r["status"] == "OPTIMAL" else f"{r['peak'] / max(r['bound'], 1):.3f}x bd"
    via = f", {r['method']}" if method and r.get("method") else ""
    return f"{_mib(r['peak'])} ({proven}, {r['wall']:.0f} s{via})"


def table(rows: list[dict]) -> list[str]:
    head = ["graph", "ops", "tensors", "reuses", "given: live / planned", "given + reuse: planned",
            "best simple order (+ reuse): live / planned", "--reorder: planned", "--reorder + reuse: planned", "bound (every order)",
            "reduction", "bfs / dfs / greedy live vs optplan (vs bound)"]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        best = r["reorder_reuse"] if "peak" in r["reorder_reuse"] else r["reorder"]
        base = r["given"].get("peak")
        red = f"{base / best['peak']:.2f}x" if base and "peak" in best else "-"
        simple = " / ".join(f"{r['live'][k] / best['peak']:.2f} ({r['live'][k] / max(best['bound'], 1):.2f})"
                            for k in ("bfs", "dfs", "greedy")) if "peak" in best else "-"
        out.append(f"| {r['name']} | {r['ops']} | {r['tensors']} | {r['reuses']} | {_mib(r['live_no_reuse'])} / {_cell(r['given'])} | "
                   f"{_cell(r['given_reuse'])} | {r['best_simple']} {_mib(r['live'][r['best_simple']])} / {_cell(r['simple_planned'])} | "
                   f"{_cell(r['reorder'], True)} | {_cell(r['reorder_reuse'], True)} | {_mib(best.get('bound'))} | {red} | {simple} |")
    return out


def summary(rows: list[dict]) -> list[str]:
    """Per family: the peak reduction (the given order without reuse, planned, over --reorder with
    reuse, planned), and how many plans are proven optimal in each setting."""
    out = ["| family | graphs | reduction: min / geometric mean / max | reuse alone (given order) | reorder alone (no reuse) | "
           "proven optimal: given / given + reuse / reorder / reorder + reuse |", "| --- | --- | --- | --- | --- | --- |"]
    for fam in dict.fromkeys(r["family"] for r in rows):
        rs = [r for r in rows if r["family"] == fam and all("peak" in r[k] for k in ("given", "given_reuse", "reorder", "reorder_reuse"))]
        if not rs:
            continue

        def ratios(a: str, b: str, rs: list[dict] = rs) -> list[float]:
            return [r[a]["peak"] / r[b]["peak"] for r in rs]

        def gm(xs: list[float]) -> float:
            return math.exp(sum(map(math.log, xs)) / len(xs))

        red = ratios("given", "reorder_reuse")
        proven = " / ".join(str(sum(r[k]["status"] == "OPTIMAL" for r in rs)) for k in ("given", "given_reuse", "reorder", "reorder_reuse"))
        out.append(f"| {fam} | {len(rs)} | {min(red):.2f}x / {gm(red):.2f}x / {max(red):.2f}x | {gm(ratios('given', 'given_reuse')):.2f}x | "
                   f"{gm(ratios('given', 'reorder')):.2f}x | {proven} of {len(rs)} |")
    return out


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--given-limit", type=float, default=10.0)
    ap.add_argument("--families", nargs="+", default=["inference", "training", "randwire"])
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("-o", "--output", default=str(HERE / "results" / "reorder.md"))
    args = ap.parse_args(argv)
    raw = Path(args.output).with_suffix(".jsonl")
    rows = [json.loads(x) for x in raw.read_text().splitlines()] if raw.exists() else []
    done = {r["name"] for r in rows}
    with tempfile.TemporaryDirectory() as tmp:
        for family, name, build in graphs(args.families, args.only):
            if name in done:
                continue
            t0 = time.perf_counter()
            try:
                graph = build()  # type: ignore[operator]
            except Exception as e:  # noqa: BLE001 - a network whose step does not record: reported, not fatal
                print(f"{name}: not built: {type(e).__name__}: {str(e).splitlines()[0][:120]}", flush=True)
                continue
            built = time.perf_counter() - t0
            row = measure(family, name, graph, Path(tmp), args.time_limit, args.given_limit) | {"build_s": round(built, 1)}
            print(json.dumps(row), flush=True)
            with raw.open("a") as f:
                f.write(json.dumps(row) + "\n")
            rows.append(row)
    command = "python experiments/bench_reorder.py " + shlex.join(argv)
    loads = [r["load"] for r in rows]
    lines = ["# The operator order and in-place reuse (issue 33)", "", "```", command, "```", "",
             f"{os.cpu_count()} cores, shared; load average during the rows {min(loads):.1f}-{max(loads):.1f}. "
             f"Limits: given order {args.given_limit:g} s, --reorder {args.time_limit:g} s; peaks in MiB; **OPT**: proven optimal "
             "(given order: over its reuse choices; --reorder: over every order and reuse choice), else the plan over its "
             "bound; seconds are whole processes. reduction: the given order without reuse over --reorder with reuse, both planned.", ""]
    old = Path(args.output).read_text() if Path(args.output).exists() else ""
    notes = old[old.index("## Notes"):] if "## Notes" in old else ""  # hand-written: kept across reruns
    Path(args.output).write_text("\n".join(lines + summary(rows) + [""] + table(rows)) + "\n" + ("\n" + notes if notes else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
