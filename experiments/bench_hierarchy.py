"""Staging limits: a fast memory of 25/50/75 % of the peak load before an unbounded slow one.

For every instance (models/*.json and the shared real instances), the fast memory's capacity is
a fraction of the peak live load; the objective is fast-first (the default for such a
hierarchy): the most benefit in the fast memory, then the lowest slow-memory peak. Rows compare
the Vela staging rule, ExecuTorch's fastest-fit greedy, banked greedy (ExecuTorch 1.5) and
optplan (auto) with a time limit: benefit kept in fast memory, slow-memory peak, whether each
heuristic's usage-curve selection packed, optplan's status, gap and seconds.

    PYTHONPATH=. python experiments/bench_hierarchy.py --seconds 60 -o experiments/results/hierarchy.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instances import find  # noqa: E402

from optplan import registry  # noqa: E402
from optplan.core.bounds import lower_bounds  # noqa: E402
from optplan.core.buffer import Memory  # noqa: E402
from optplan.core.plan import Plan, Status  # noqa: E402
from optplan.core.problem import Problem
from optplan.formats import read_problem  # noqa: E402
from optplan.report.summary import percent, quantity_name  # noqa: E402

BASELINES = ("vela-staging", "executorch-fastest-fit", "banked-greedy")
FRACTIONS = (0.25, 0.50, 0.75)
SKIP = {"S_1": "28k buffers: beyond the full model (LNS only) in a short limit"}
NETWORKS = ("bert_base", "gpt2", "mobilenet_v2", "resnet50", "unet", "vit_b16")  # issue 16's six (not the hf_* ones)


def hierarchy(problem: Problem, fraction: float) -> Problem:
    load = lower_bounds(problem.with_memories((Memory("mem"),))).lower["mem"]
    return problem.with_memories((Memory("fast", capacity=int(fraction * load)), Memory("slow")))


def kept(problem: Problem, plan: Plan) -> int:
    return sum(b.gain for b in problem.buffers if plan.placements[b.id].memory == "fast")


def cell(problem: Problem, plan: Plan) -> tuple[str, str]:
    if not plan.found:
        return "-", "-"
    total = sum(b.gain for b in problem.buffers)
    return f"{100 * kept(problem, plan) / total:.1f}", f"{plan.peak['slow'] / 2**20:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0, help="optplan's time limit per row")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("-o", "--output", default=None)
    ap.add_argument("--only", nargs="*", default=None, help="instance stems")
    args = ap.parse_args()
    files = [f for f in find(["models", "minimalloc", "idealloc"], args.only)
             if not f.name.startswith("example") and (f.parent.name != "models" or f.stem in NETWORKS)]
    head = ("| instance | fast % of load | " + " | ".join(f"{b} kept % / slow MiB / packs" for b in BASELINES)
            + " | optplan kept % / slow MiB | status | gap | s | CPU s | load | ≥ all |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    rows = better = proven = 0
    load0 = os.getloadavg()
    t_all = time.perf_counter()
    for f in files:
        stem = f.stem.split(".")[0]
        if stem in SKIP:
            lines.append(f"| {stem} | - | skipped: {SKIP[stem]} |")
            continue
        base = read_problem(f)
        for fraction in FRACTIONS:
            p = hierarchy(base, fraction)
            cells, ok = [], True
            c0 = time.process_time()
            best = registry.solve(p, "auto", time_limit=args.seconds, workers=args.workers, seed=0)
            cpu_row = time.process_time() - c0
            for name in BASELINES:
                plan = registry.solve(p, name)
                k, s = cell(p, plan)
                packs = plan.stats.get("selection_packs", "-") if plan.found else "fails"
                cells.append(f"{k} / {s} / {'yes' if packs is True else 'no' if packs is False else packs}")
                ok &= not plan.found or (best.found and best.objective_value <= plan.objective_value)
            k, s = cell(p, best)
            gap = "-" if best.gap is None and best.gap_of is None else f"{quantity_name(p, best, best.gap_of)} {percent(best.gap)}".strip()
            rows += 1
            better += ok
            proven += best.status is Status.OPTIMAL
            lines.append(f"| {stem} | {int(100 * fraction)} | " + " | ".join(cells)
                         + f" | {k} / {s} | {best.status.value} | {gap} | {best.seconds:.1f} | {cpu_row:.1f} | {os.getloadavg()[0]:.1f}"
                         f" | {'yes' if ok else 'NO'} |")
            print(lines[-1], flush=True)
    load = os.getloadavg()
    cpu = time.process_time()
    summary = (f"\n{rows} rows: optplan >= every baseline on {better} ({100 * better / max(rows, 1):.0f} %), "
               f"proven optimal on {proven} ({100 * proven / max(rows, 1):.0f} %); "
               f"{time.perf_counter() - t_all:.0f} s in all ({cpu:.0f} s CPU in this process); "
               f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min)")
    text = "\n".join(lines) + "\n" + summary + "\n"
    print(summary)
    if args.output:
        cmd = "PYTHONPATH=. python experiments/bench_hierarchy.py " + " ".join(sys.argv[1:])
        start = f"Load average at the start {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} (1 / 5 / 15 min), 2 cores.\n\n"
        Path(args.output).write_text(f"```\n{cmd}\n```\n\n{__doc__.strip().splitlines()[0]}\n\n" + start + _notes(args) + text)


def _notes(args: argparse.Namespace) -> str:
    return ("Fast memory ('fast') of 25/50/75 % of the instance's peak live load, unbounded slow memory behind "
            "it; objective fast-first (most benefit in fast memory, then lowest slow peak); benefit: the "
            "networks' size x accesses (one write + one read per consumer, from the torch.export front end), "
            "the shared instances' size (their CSV carries no accesses). "
            f"optplan = planner auto with a time limit of {args.seconds:g} s per row ({args.workers} worker(s)). "
            "Heuristic cells: benefit kept in fast memory (% of all), slow-"
            "memory peak (MiB), whether the usage-curve selection packed at offsets (banked greedy selects "
            "and packs at once: '-'). '≥ all': optplan's value (fast-first order) is at least as good as "
            "every baseline's. 's': optplan's wall seconds; 'CPU s': this process's CPU seconds for it; "
            "'load': the 1-minute load average when the row finished. 'gap': of the objective's first quantity not "
            "at its bound, named ('benefit': most possible / kept - 1; 'slow peak': peak / bound - 1, the bound "
            "holding among plans that keep the most benefit): gaps of different quantities do not compare.\n\n")


if __name__ == "__main__":
    main()
