"""Arena bytes of every models/ network lowered through ExecuTorch: its greedy vs optplan.

    python experiments/bench_executorch.py [--time-limit 30] [--planner auto] [name ...]

Each network of models/zoo.py is exported, constant-propagated (so no weight copy lands in
planned memory; ``--no-constant-prop`` keeps ExecuTorch's default flow), lowered with ``to_edge(...).to_executorch(...)`` with optplan as the planner;
ExecuTorch's ``greedy`` runs on the very same specs inside the same call, so both columns
plan one problem. The lower bound is optplan's (peak live load, alignment-aware) for those
specs. Also run: 1.5's banked greedy vs optplan on two banks (a fast bank of a quarter of the
lower bound, then a large slow one). Prints a markdown table (written with ``-o``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "models"))

from zoo import MODELS


def lower(name: str, planner: str, time_limit: float, constant_prop: bool = True) -> dict:
    from executorch.exir import ExecutorchBackendConfig, to_edge
    from executorch.exir.banked_memory_planning import (
        Bank,
        BankedGreedy,
        TargetMemoryMap,
    )
    from executorch.exir.memory_planning import greedy
    from executorch.exir.passes.constant_prop_pass import constant_prop_pass

    from optplan.core.bounds import lower_bounds
    from optplan.frontends.executorch import (
        MemoryConfig,
        make_algo,
        memory_planning_pass,
        problem_from_specs,
    )

    _, build = MODELS[name]
    torch.manual_seed(0)
    model, args, dynamic = build()
    t0 = time.perf_counter()
    with torch.no_grad():
        ep = torch.export.export(model.eval(), args, dynamic_shapes=dynamic)
        # the edge dialect copies transposed weights (permute_copy): fold them into constants
        # (as ExecuTorch's own emitter test does: there is no public hook for a program pass)
        edge = to_edge(ep)
        if constant_prop:
            edge._edge_programs["forward"] = constant_prop_pass(edge.exported_program())
    algo = make_algo(planner, time_limit, options={"workers": 2})
    row: dict = {"name": name}

    def compare(alignment, specs, gm, gs, pad):
        specs = list(specs)
        t = time.perf_counter()
        row["greedy"] = greedy(alignment, specs, gm, gs, pad).bufsizes[1]
        row["greedy_s"] = time.perf_counter() - t
        result = algo(alignment, specs, gm, gs, pad)
        run = algo.runs[-1]
        row.update(specs=len(specs), optplan=result.bufsizes[1], status=run.plan.status.value,
                   optplan_s=run.plan.seconds, bound=run.plan.lower_bound["mem1"],
                   constant_bytes=run.constant_derived_bytes)
        # two banks: a fast one holding a quarter of the bound, a large slow one
        fast = max(16, lower_bounds(built(specs, alignment)).lower["mem1"] // 4 // 16 * 16)
        slow = 1 << 40
        banks = TargetMemoryMap([Bank("fast", fast, 1), Bank("slow", slow, 2)])
        b = BankedGreedy(banks)(alignment, specs, gm, gs, pad).bufsizes
        two = make_algo(planner, time_limit, config=MemoryConfig([fast, slow], [16, 16], ["fast", "slow"]),
                        options={"workers": 2})
        o = two(alignment, specs, gm, gs, pad).bufsizes
        row.update(fast=fast, banked=(b[1], b[2]), optplan_banks=(o[1], o[2]))
        for spec in specs:  # the banked runs realigned the specs; restore before write-back
            spec.realign(alignment)
        return result

    def built(specs, alignment):
        return problem_from_specs(specs, alignment).problem

    compare.__name__ = algo.__name__
    edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass(compare)))
    row["lower_s"] = time.perf_counter() - t0
    return row


NOTES = """Notes. Lowering time (export, to_edge, to_executorch) dominates; greedy takes milliseconds.
With two banks optplan's default objective minimizes the slow bank's peak; the fast bank has a
fixed size, so its own peak weighs nothing (it is filled from the heuristic start, not emptied):
compare the slow columns."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(MODELS))
    ap.add_argument("--planner", default="auto")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--no-constant-prop", action="store_true",
                    help="skip constant_prop_pass: weight copies (permute_copy) stay in planned memory")
    ap.add_argument("-o", "--output", help="also write the table (markdown) here")
    args = ap.parse_args()
    rows = []
    for name in args.names:
        rows.append(lower(name, args.planner, args.time_limit, not args.no_constant_prop))
        print(rows[-1], file=sys.stderr, flush=True)
    lines = [
        f"Planner `{args.planner}`, time limit {args.time_limit:g} s per graph, 2 workers; same ExecuTorch specs for every column; "
        + ("constant_prop_pass not run (weight copies are planned)." if args.no_constant_prop else "after constant_prop_pass."),
        "",
        "| network | planned specs | ExecuTorch greedy (bytes) | optplan (bytes) | lower bound | greedy / bound | optplan / bound | optplan status | optplan s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for r in rows:
        lines.append(f"| {r['name']} | {r['specs']} | {r['greedy']:,} | {r['optplan']:,} | {r['bound']:,} | "
                     f"{r['greedy'] / r['bound']:.4f} | {r['optplan'] / r['bound']:.4f} | {r['status']} | {r['optplan_s']:.1f} |")
    lines += [
        "",
        "Two banks (fast bank = a quarter of the lower bound, then a large slow bank): bytes used per bank.",
        "",
        "| network | fast bank size | banked greedy fast / slow | optplan fast / slow | slow-bank saving |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        (bf, bs), (of, os_) = r["banked"], r["optplan_banks"]
        lines.append(f"| {r['name']} | {r['fast']:,} | {bf:,} / {bs:,} | {of:,} / {os_:,} | {1 - os_ / bs:.1%} |" if bs else
                     f"| {r['name']} | {r['fast']:,} | {bf:,} / {bs:,} | {of:,} / {os_:,} | n/a |")
    lines += ["", NOTES]
    table = "\n".join(lines) + "\n"
    print(table)
    if args.output:
        cmd = "python experiments/bench_executorch.py " + " ".join(sys.argv[1:])
        Path(args.output).write_text(f"`{cmd.strip()}`\n\n" + table)


if __name__ == "__main__":
    main()
