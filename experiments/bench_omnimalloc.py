"""optplan's search beside OmniMalloc's SuperMalloc, minimizing the peak, in one run.

    pip install -e ".[peers]"
    python experiments/bench_omnimalloc.py [--budgets 3 60] [--workers 2] [-o experiments/results/omnimalloc.md]

OmniMalloc (Apache-2.0, C++ backend) is what a Python user would pick instead of optplan; its
SuperMalloc is a portfolio branch and bound that minimizes the peak with no capacity. Both get the
same wall-clock budget and the same number of threads (``--workers``) on the same instance, one
after the other; SuperMalloc runs in a child process capped at 12 GiB of address space (a run that
exceeds it is reported, not fatal). Every OmniMalloc plan is checked by optplan's independent validator before its
peak is reported. "proven" says whether the tool itself proved its peak optimal. The numba
compile/load time is measured once and not counted; the load average is printed (the machine is
shared).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import shlex
import sys
import time

from instances import find

from optplan.core.bounds import lower_bounds
from optplan.core.plan import Placement
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.formats import read_problem, write_text
from optplan.registry import solve
from optplan.search import engine

NAMES = ["A", "B", "C", "D", "E", "resnet50", "G_1", "S_1"]


MEMORY_LIMIT = 12 << 30  # bytes of address space for SuperMalloc: on S_1 in 60 s it grew past 24 GiB (OOM-killed)


def _supermalloc_child(problem: Problem, seconds: float, threads: int, conn) -> None:
    import omnimalloc
    from omnimalloc.allocators.supermalloc import SupermallocAllocator

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    allocs = tuple(omnimalloc.Allocation(id=b.id, size=b.size, start=b.start, end=b.end) for b in problem.buffers)
    try:
        result = SupermallocAllocator(timeout=seconds, num_threads=threads).solve(allocs)
        conn.send(([(str(a.id), int(a.offset)) for a in result.allocations], bool(result.proved_optimal)))
    except MemoryError:
        conn.send(None)


def supermalloc(problem: Problem, seconds: float, threads: int) -> tuple[int | None, bool, float]:
    """OmniMalloc's SuperMalloc on a single-memory problem, in a child process capped at
    ``MEMORY_LIMIT``: (peak, proven optimal, seconds); peak None when it ran out of memory."""
    recv, send = mp.Pipe(duplex=False)
    t0 = time.perf_counter()
    child = mp.get_context("fork").Process(target=_supermalloc_child, args=(problem, seconds, threads, send))
    child.start()
    send.close()
    try:
        got = recv.recv()
    except EOFError:  # killed (allocation failure inside the C++ backend)
        got = None
    child.join()
    took = time.perf_counter() - t0
    if got is None:
        return None, False, took
    offsets, proven = got
    memory = problem.memories[0].name
    placements = {bid: Placement(memory, off) for bid, off in offsets}
    violations = validate(problem, placements)
    if violations:
        raise SystemExit(f"OmniMalloc's plan is invalid: {violations[0]}")
    peak = max((placements[b.id].offset + b.size for b in problem.buffers), default=0)
    return peak, proven, took


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", type=float, nargs="+", default=[3.0, 60.0], help="seconds per run")
    ap.add_argument("--workers", type=int, default=2, help="threads / worker processes for each tool")
    ap.add_argument("--only", nargs="*", help="instance names (default: all)")
    ap.add_argument("-o", "--output")
    args = ap.parse_args(argv)
    try:
        import omnimalloc
    except ImportError:
        print("bench_omnimalloc: omnimalloc is not installed; run: pip install -e \".[peers]\"", file=sys.stderr)
        return 2

    t_start = time.perf_counter()
    compile_s = engine.ensure_compiled()
    lines = ["```", "python " + " ".join(shlex.quote(a) for a in sys.argv), "```", "",
             f"omnimalloc {omnimalloc.__version__}; numba kernels loaded/compiled in {compile_s:.2f} s (not counted); "
             f"{os.cpu_count()} cores, {args.workers} threads each; load average before: {load()}", "",
             "| instance | buffers | budget s | lower bound | SuperMalloc peak / bound | proven | s "
             "| optplan search peak / bound | proven | s | peak ratio optplan / SuperMalloc |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    print("\n".join(lines), flush=True)
    ratios: list[float] = []
    for path in find(["minimalloc", "idealloc"], args.only or NAMES):
        name = path.stem.split(".")[0]
        problem = read_problem(path).with_capacity(None)
        memory = problem.memories[0].name
        bound = lower_bounds(problem).lower[memory]
        for budget in args.budgets:
            sm_peak, sm_proven, sm_s = supermalloc(problem, budget, args.workers)
            plan = solve(problem, "search", time_limit=budget, workers=args.workers, objective="min-peak")
            if not plan.found:
                raise SystemExit(f"optplan search found no plan for {name}: {plan.message}")
            peak = plan.peak[memory]
            if sm_peak is None:
                sm_cell, ratio = f"out of memory ({MEMORY_LIMIT >> 30} GiB)", "-"
            else:
                ratios.append(peak / sm_peak)
                sm_cell, ratio = f"{sm_peak} ({sm_peak / bound:.4f})", f"{peak / sm_peak:.4f}"
            row = (f"| {name} | {len(problem.buffers)} | {budget:g} | {bound} | {sm_cell} | "
                   f"{'yes' if sm_proven else 'no'} | {sm_s:.2f} | {peak} ({peak / bound:.4f}) | "
                   f"{'yes' if plan.status.value == 'OPTIMAL' else 'no'} | {plan.seconds:.2f} | {ratio} |")
            lines.append(row)
            print(row, flush=True)
    lines += ["", f"optplan's peak is at most SuperMalloc's in {sum(r <= 1 for r in ratios)} of {len(ratios)} runs "
              f"and below it in {sum(r < 1 for r in ratios)}; load average after: {load()}; "
              f"wall time {time.perf_counter() - t_start:.0f} s"]
    print(lines[-1], flush=True)
    if args.output:
        write_text(args.output, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
