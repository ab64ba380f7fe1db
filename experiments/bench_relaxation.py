"""The staging relaxation's least lost benefit: CP-SAT against the MIP solver, on generated hierarchies.

Guillotine and pinwheel instances from ``gen_instances`` (800 buffers, live load = 1 MiB at every
step) get a fast memory of 25 / 50 % of the load before an unbounded slow one (fast-first, benefit
= size). Per row, one process, one thread each: ``Staging.least_lost`` with CP-SAT alone
(``MIP_SOLVER`` off) and with the MIP first (``MIP_SHARE`` of the limit; its selection hints CP-SAT, which proves), each
under the same wall-clock limit: whether the least lost benefit was proven, its value and bound,
CPU seconds (building the model included). The tuning set for ``optplan.solvers.selection``'s MIP,
not the benchmark rows.

    PYTHONPATH=. python experiments/bench_relaxation.py --seeds 3 --seconds 15 -o experiments/results/relaxation.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_instances import cut_instance  # noqa: E402

from optplan.core.buffer import Memory  # noqa: E402
from optplan.core.deadline import Deadline  # noqa: E402
from optplan.core.objective import Objective  # noqa: E402
from optplan.parts import Part, reduce  # noqa: E402
from optplan.solvers import selection  # noqa: E402
from optplan.solvers.cpsat import Settings  # noqa: E402

FRACTIONS = (0.25, 0.5)


def least_lost(objective: Objective, part: Part, seconds: float, mip: str) -> tuple[str, float]:
    c0 = time.process_time()
    model = selection.Staging(objective, part, selection.RelaxationSettings(mip_solver=mip))
    lost, chosen, optimal = model.least_lost(Deadline(seconds), Settings(1, 0))
    cpu = time.process_time() - c0
    value = "-" if chosen is None else f"{model.lost_of(chosen):,}"
    return f"{'proven' if optimal else 'not proven'} / {value} / {'-' if lost is None else f'{lost:,}'} / {cpu:.1f}", optimal


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--buffers", type=int, default=800)
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    load0 = os.getloadavg()
    lines = ["| instance | fast % | CP-SAT: least lost / value / bound / CPU s | MIP then CP-SAT: least lost / value / bound / CPU s |",
             "|---|---|---|---|"]
    proven = {"": 0, selection.MIP_SOLVER: 0}
    for family in ("guillotine", "pinwheel"):
        for seed in range(100, 100 + args.seeds):
            base = cut_instance(family, seed, n=args.buffers)
            load = base.memories[0].capacity or 0  # the cut families' live load is the capacity at every step
            for fraction in FRACTIONS:
                p = base.with_memories((Memory("fast", capacity=int(fraction * load)), Memory("slow")))
                objective = Objective.parse(None, p)
                for part in (q for q in reduce(p, objective).parts if len(q.memories) > 1):
                    cells = []
                    for mip in proven:
                        text, ok = least_lost(objective, part, args.seconds, mip)
                        proven[mip] += ok
                        cells.append(text)
                    lines.append(f"| {family}-{seed} ({len(part.units)} units) | {int(100 * fraction)} | " + " | ".join(cells) + " |")
                    print(lines[-1], flush=True)
    load = os.getloadavg()
    summary = (f"\n{len(lines) - 2} rows at {args.seconds:g} s: least lost benefit proven by CP-SAT alone on {proven['']}, "
               f"by the MIP then CP-SAT on {proven[selection.MIP_SOLVER]}; load average {load0[0]:.1f} / {load0[1]:.1f} / "
               f"{load0[2]:.1f} at the start, {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end (1 / 5 / 15 min), 2 cores")
    print(summary)
    if args.output:
        cmd = "PYTHONPATH=. python experiments/bench_relaxation.py " + " ".join(sys.argv[1:])
        start = f"Load average at the start {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f} (1 / 5 / 15 min), 2 cores.\n\n"
        Path(args.output).write_text(f"```\n{cmd}\n```\n\n" + start + f"{__doc__.strip().splitlines()[0]}\n\n" + "\n".join(lines)
                                     + "\n" + summary + "\n")


if __name__ == "__main__":
    main()
