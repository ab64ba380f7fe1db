"""Start-up as a user feels it (issue 29 §1): whole ``optplan`` processes, old code beside new.

    python experiments/bench_startup.py [--runs 5] [--before /work/wt/before] [--tree NAME=PATH] [--instance FILE]

Each figure is the wall time of a fresh process, from its start to its exit: the interpreter, the
imports, reading the problem, planning, checking and printing. The commands:

- ``python -c pass``: the interpreter and its site packages alone, the floor under every other row
  (on a loaded machine every row grows with it);
- ``import optplan``: ``python -c "import optplan"``;
- ``optplan --help``, ``optplan info FILE``, ``optplan solve FILE`` (``auto``, the default planner, no
  time limit) and ``optplan solve FILE --time-limit 10``: ``python -c`` running ``optplan.cli.main``
  as the installed ``optplan`` script does (a pyenv shim in front of it would add its own start-up).

``--tree`` adds a column for another checkout (e.g. a merge being tried). Every tree runs with
``PYTHONPATH=<tree>`` from a temporary working directory (``python -c`` puts the
working directory first on ``sys.path``: run from a checkout, it would import that checkout instead).
Runs are interleaved (round r: every command on every tree), so load drifts hit both columns alike;
one run of each before the rounds loads numba's caches and the file cache, and is not counted. The
table gives the best and the median of ``--runs`` rounds, the CPU seconds of the best run (user and
system: on a loaded machine the wall time is about the CPU time times the load per core, while the
CPU time moves less), the ratio new / old of the best, the target, and the load average (1 min) at the
start and end. Where ``MINIMALLOC_BIN`` names MiniMalloc's
binary, it packs FILE at the capacity in its name (``example.12.csv``: 12) in the same rounds, as
``minimalloc --capacity=C --input=FILE --output=OUT``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT.parent / "shared" / "benchmarks" / "minimalloc" / "example.12.csv"
CLI = "import sys; from optplan.cli import main; sys.exit(main(sys.argv[1:]))"
TARGETS = {"import optplan": 0.2, "optplan --help": 0.25, "optplan solve FILE": 0.5}


def commands(instance: Path) -> dict[str, list[str]]:
    """Command name -> the arguments of ``python`` that run it."""
    return {
        "python (the interpreter alone)": ["-c", "pass"],
        "import optplan": ["-c", "import optplan"],
        "optplan --help": ["-c", CLI, "--help"],
        "optplan info FILE": ["-c", CLI, "info", str(instance)],
        "optplan solve FILE": ["-c", CLI, "solve", str(instance)],
        "optplan solve FILE --time-limit 10": ["-c", CLI, "solve", str(instance), "--time-limit", "10"],
    }


def timed(argv: list[str], env: dict[str, str] | None, cwd: str) -> tuple[float, float]:
    """Wall seconds of one process, and its CPU seconds (user and system, its children included);
    it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({run.returncode}): {run.stderr[-500:]}")
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def minimalloc(instance: Path, out: str) -> list[str] | None:
    """MiniMalloc's command on ``instance`` at the capacity in its name, if ``MINIMALLOC_BIN`` is set."""
    binary = os.environ.get("MINIMALLOC_BIN")
    capacity = re.search(r"\.(\d+)\.csv$", instance.name)
    if not binary or capacity is None:
        return None
    return [binary, f"--capacity={capacity.group(1)}", f"--input={instance}", f"--output={out}"]


Times = dict[tuple[str, str], list[tuple[float, float]]]  # (command, tree) -> (wall, CPU) seconds of each round


def measure(trees: dict[str, Path], instance: Path, runs: int) -> tuple[Times, list[float]]:
    """Seconds per (command, tree), interleaved rounds; and the load average before and after."""
    load = [os.getloadavg()[0]]
    times: Times = {}
    with tempfile.TemporaryDirectory() as cwd:
        mm = minimalloc(instance, str(Path(cwd) / "mm.csv"))
        jobs = [(name, tree_name, [sys.executable, *argv], dict(os.environ, PYTHONPATH=str(tree)))
                for name, argv in commands(instance).items() for tree_name, tree in trees.items()]
        if mm is not None:
            jobs.append(("optplan solve FILE", "MiniMalloc", mm, None))
        for _, _, argv, env in jobs:  # warm: numba's caches and the file cache (not counted)
            timed(argv, env, cwd)
        for _ in range(runs):
            for name, tree_name, argv, env in jobs:
                times.setdefault((name, tree_name), []).append(timed(argv, env, cwd))
    load.append(os.getloadavg()[0])
    return times, load


def _cell(runs: list[tuple[float, float]] | None) -> str:
    """Wall best / median, and the CPU seconds of the fastest run."""
    if not runs:
        return ""
    walls = [w for w, _ in runs]
    return f"{min(walls):.3f} / {statistics.median(walls):.3f} ({min(runs)[1]:.2f})"


def table(times: Times, trees: list[str], mm: bool) -> list[str]:
    head = ["command"] + [f"{t}: best / median (CPU of the best), s" for t in trees] + ["new / old (best)", "target"]
    head += ["MiniMalloc: best / median (CPU), s"] if mm else []
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name in dict.fromkeys(name for name, _ in times):
        cells = [name] + [_cell(times[(name, t)]) for t in trees]
        ratio = min(times[(name, "new")])[0] / min(times[(name, "old")])[0] if {"old", "new"} <= set(trees) else None
        cells.append(f"{ratio:.2f}" if ratio is not None else "")
        cells.append(f"<= {TARGETS[name]}" if name in TARGETS else "")
        if mm:
            cells.append(_cell(times.get((name, "MiniMalloc"))))
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def commit(tree: Path) -> str:
    """The tree's commit (with ``+`` when its optplan/ has changes), or its path."""
    git = ["git", "-C", str(tree)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "optplan"], capture_output=True, text=True).stdout.strip()
    return f"{tree} ({head.stdout.strip()}{'+' if dirty else ''})" if head.returncode == 0 else str(tree)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", type=Path, default=Path(os.environ.get("OPTPLAN_BEFORE", "/work/wt/before")),
                    help="the old code's checkout (its column is left out where it does not exist)")
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH", help="another checkout, a column of its own")
    ap.add_argument("--instance", type=Path, default=EXAMPLE)
    args = ap.parse_args()
    trees = {"old": args.before.resolve(), "new": ROOT} if args.before.is_dir() else {"new": ROOT}
    trees.update({name: Path(path).resolve() for name, _, path in (t.partition("=") for t in args.tree)})
    times, load = measure(trees, args.instance.resolve(), args.runs)
    mm = any(t == "MiniMalloc" for _, t in times)
    print(f"# Start-up: whole processes, best and median of {args.runs} interleaved rounds\n")
    env = f"MINIMALLOC_BIN={os.environ['MINIMALLOC_BIN']} " if mm else ""
    print(f"    {env}python experiments/bench_startup.py {shlex.join(sys.argv[1:])}\n")
    print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} cores, load average (1 min) {load[0]:.2f} at the "
          f"start, {load[1]:.2f} at the end. FILE: {args.instance.name}. Trees: "
          + ", ".join(f"{k} = {commit(v)}" for k, v in trees.items())
          + ("" if mm else ". MiniMalloc: not measured (MINIMALLOC_BIN not set)") + ".\n")
    print("\n".join(table(times, list(trees), mm)))


if __name__ == "__main__":
    main()
