"""Staging limits on generated instances (tuning set for issue 16's proofs, not the benchmark rows).

Guillotine and pinwheel instances from ``gen_instances`` (100-300 buffers, live load = 1 MiB at
every step) get a fast memory of 50 / 75 % of the load before an unbounded slow one, objective
fast-first, benefit = size. auto with the staging relaxation solved by CP-SAT at linearization
level 1 and 2 (``RelaxationSettings.linearization``), side by side per row (one process):
status, the gap, the relaxation's state and selections tried, CPU seconds.

    PYTHONPATH=. python experiments/bench_hierarchy_gen.py --seeds 6 --seconds 20 -o experiments/results/hierarchy_gen.md
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_instances import cut_instance  # noqa: E402

from optplan import registry  # noqa: E402
from optplan.core.buffer import Memory  # noqa: E402
from optplan.core.plan import Status  # noqa: E402
from optplan.core.problem import Problem
from optplan.report.summary import percent, quantity_name  # noqa: E402
from optplan.solvers import selection  # noqa: E402

FRACTIONS = (0.5, 0.75)


def hierarchy(p: Problem, fraction: float) -> Problem:
    load = p.memories[0].capacity or 0  # the cut families' live load is the capacity at every step
    return p.with_memories((Memory("fast", capacity=int(fraction * load)), Memory("slow")))


def run(p: Problem, seconds: float, level: int) -> tuple[str, float]:
    # auto takes no relaxation settings (yet): its Staging is given them for this call
    patched = functools.partial(selection.Staging, settings=selection.RelaxationSettings(linearization=level))
    with mock.patch.object(selection, "Staging", patched):  # (the portfolio's staging looks it up there when it runs)
        c0 = time.process_time()
        plan = registry.solve(p, "auto", time_limit=seconds, workers=1, seed=0)
        cpu = time.process_time() - c0
    staging = plan.stats.get("staging") or {}
    gap = "-" if plan.gap is None and plan.gap_of is None else f"{quantity_name(p, plan, plan.gap_of)} {percent(plan.gap)}".strip()
    info = f"relaxation {staging.get('relaxation', '-')}, tries {staging.get('tries', '-')}" if staging else "-"
    return f"{plan.status.value} | {gap} | {info} | {cpu:.1f}", float(plan.status is Status.OPTIMAL)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    load0 = os.getloadavg()
    lines = ["| instance | fast % | level 1: status / gap / relaxation / CPU s | level 2: status / gap / relaxation / CPU s |",
             "|---|---|---|---|"]
    total = {1: 0.0, 2: 0.0}
    for family in ("guillotine", "pinwheel"):
        for seed in range(args.seeds):
            base = cut_instance(family, seed)
            for fraction in FRACTIONS:
                p = hierarchy(base, fraction)
                cells = []
                for level in (1, 2):
                    text, ok = run(p, args.seconds, level)
                    total[level] += ok
                    cells.append(text.replace(" | ", " / "))
                lines.append(f"| {family}-{seed} ({len(p.buffers)}) | {int(100 * fraction)} | " + " | ".join(cells) + " |")
                print(lines[-1], flush=True)
    rows = len(lines) - 2
    load = os.getloadavg()
    summary = (f"\n{rows} rows at {args.seconds:g} s: proven optimal at level 1 {total[1]:.0f}, at level 2 "
               f"{total[2]:.0f}; load average {load0[0]:.1f} at the start, {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end")
    print(summary)
    if args.output:
        cmd = "PYTHONPATH=. python experiments/bench_hierarchy_gen.py " + " ".join(sys.argv[1:])
        Path(args.output).write_text(f"```\n{cmd}\n```\n\n{__doc__.strip().splitlines()[0]}\n\n" + "\n".join(lines) + "\n" + summary + "\n")


if __name__ == "__main__":
    main()
