"""CBC and HiGHS on a PuLP model (``milp.Model.lp``, or the vector-clock model), each in a child
process that the deadline stops.

Both solvers run in child processes (``lifecycle.run_child``), which are stopped at the time
limit if they overrun it (CBC checks it rarely) and killed when optplan leaves; HiGHS runs
through ``highs_child.py`` (OR-Tools and highspy cannot share a process). Their files (model,
warm start, solution, log) live in a temporary directory that ``lifecycle`` removes even on the
fast exit of a second signal. A cancelled or spent deadline starts no solver: the caller keeps
its warm start.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import signal
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pulp

from optplan.core.deadline import GUARD_FACTOR, GUARD_PLUS, Deadline
from optplan.core.errors import OptplanError
from optplan.core.lifecycle import run_child, temp_dir
from optplan.solvers.outcome import Outcome, stop_reason

SOLVERS = ("cbc", "highs")
DISPLAY = {"cbc": "CBC", "highs": "HiGHS"}
_STARTUP = {"cbc": 0.4, "highs": 0.5}  # seconds a solver's child process needs to start and report
# CBC looks at its own limit only between phases: in its root cuts on minimalloc A and C it ran 0.5-2 s
# past it (load 1-6), and it answers SIGINT as late. So it is asked to stop (its limit, then SIGINT)
# this long before the deadline, at most this share of the time, and killed at the deadline.
CBC_STOP_WINDOW, CBC_STOP_SHARE = 2.0, 0.3
# Deterministic mode: branch-and-bound nodes per deterministic second (single thread), instead of a
# wall-clock limit, and a wall cap far out, as the deadline's guard (``deadline.guard_seconds``):
# max(4 x the budget, the budget + 10 s), and no later than that guard (``Deadline.wall_left``);
# at the budget + 1 s (before issue 30) it fired on a loaded machine and the plan did not repeat. A node budget does not bound the root: CBC spent 32 s there on minimalloc A (7 nodes).
# A capped solver is killed at once and its answer dropped (SIGINT let CBC hand over what it had
# after up to 2 s, different on every run): the warm start stays, the same plan on every capped run.
MIP_NODES_PER_SECOND = 100
MIP_WALL_CAP = (GUARD_FACTOR, GUARD_PLUS)  # (times the budget, plus seconds)
CAPPED = "stopped by the wall-clock cap of a deterministic run (its answer dropped)"

Values = dict[str, float]  # a MIP solver's solution: variable name -> value


@dataclass(frozen=True)
class MilpSettings:
    """How the MILP planners run their solver, one value for a whole planner call."""

    solver: str = "cbc"  # one of SOLVERS
    workers: int = 1  # solver threads (deterministic runs use one)
    seed: int = 0
    warm_start: bool = True  # start from the best heuristic plan (False: the MIP alone)
    nodes_per_second: int = MIP_NODES_PER_SECOND  # deterministic runs: the node budget per deterministic second
    wall_cap: tuple[float, float] = MIP_WALL_CAP  # deterministic runs: (times the budget, plus seconds)
    stop_window: float = CBC_STOP_WINDOW  # CBC: asked to stop this long before a wall-clock deadline,
    stop_share: float = CBC_STOP_SHARE  # at most this share of the time left

    @property
    def display(self) -> str:
        return DISPLAY[self.solver]


@dataclass(frozen=True)
class _Request:
    """What one solver run is asked besides its time limit (computed at its launch)."""

    gap_abs: float  # an absolute gap below which a solution is optimal
    workers: int
    seed: int
    warm: bool  # the model's initial values are a warm start
    nodes: int | None  # deterministic: the node budget
    wall: float | None  # deterministic: the wall-clock cap, past which the answer is dropped


def run(lp: pulp.LpProblem, settings: MilpSettings, deadline: Deadline, warm: bool = False, step: int = 1,
        optimizes: bool = True) -> Outcome[Values]:
    """Solve ``lp`` with the settings' solver until ``deadline``; its objective values are
    multiples of ``step``, so a gap below that is optimal (``warm``: its variables' initial values
    are a warm start; ``optimizes`` False: no bound to read). The deterministic work (nodes) is
    charged to a deterministic deadline."""
    if _over(deadline):
        return Outcome(None, status=stop_reason(deadline))
    t0 = time.perf_counter()
    request = _Request(0.999 * step, max(1, int(settings.workers)), settings.seed, warm, None, None)
    if deadline.deterministic:  # a node budget: the same search on every run, whatever the load
        request = _Request(request.gap_abs, 1, settings.seed, warm, None, None)
        if deadline.limited:
            times, plus = settings.wall_cap
            nodes = max(1, int(deadline.left() * settings.nodes_per_second))
            wall = min(times * deadline.left() + plus, deadline.wall_left())
            if wall <= _STARTUP[settings.solver]:  # it could not even start: the limit's wall time is up
                deadline.hit_guard()
                return Outcome(None, status=CAPPED, stats={"deterministic_wall_capped": 1})
            request = _Request(request.gap_abs, 1, settings.seed, warm, nodes, wall)
    if settings.solver == "highs":
        out = _run_highs(lp, deadline, request, optimizes)
    else:
        out = _run_cbc(lp, settings, deadline, request, optimizes)
    out.seconds = time.perf_counter() - t0
    if deadline.deterministic:
        done = out.stats.get("nodes", 0)  # branch-and-bound nodes the solver reported
        out.dtime = (done if isinstance(done, int) else 0) / settings.nodes_per_second
        deadline.spend(out.dtime)
        if "deterministic_wall_capped" in out.stats:
            deadline.hit_guard()
    return out


def _over(deadline: Deadline) -> bool:
    """Nothing to start a solver for: the deadline is cancelled, or (on a wall clock) spent. A
    spent deterministic budget still gets its one node, as it always has (its plan repeats)."""
    return deadline.cancelled is not None or (not deadline.deterministic and deadline.expired())


def _own_limit(deadline: Deadline, solver: str, window: float = 0.0) -> float | None:
    """The solver's own wall-clock limit, taken at its launch: what is left less its start-up and
    ``window``; None without one (no limit, or deterministic: the node budget and cap instead)."""
    if not deadline.limited or deadline.deterministic:
        return None
    return max(deadline.left() - window - _STARTUP[solver], 0.05)


def _stop_window(settings: MilpSettings, deadline: Deadline) -> float:
    """Seconds before a wall-clock deadline at which CBC is asked to stop."""
    if not deadline.limited or deadline.deterministic:
        return 0.0
    return min(settings.stop_window, settings.stop_share * deadline.left())


def mip_bound(x: float) -> int:
    """A MIP solver's bound on an integer objective, as an integer: rounded down by more than
    its tolerances (absolute and relative), never up."""
    return math.ceil(x - 1e-6 - 1e-9 * abs(x))


def _run_cbc(lp: pulp.LpProblem, settings: MilpSettings, deadline: Deadline, request: _Request,
             optimizes: bool) -> Outcome[Values]:
    """CBC on the model, run by us: PuLP's own runner waits forever and leaves CBC in our process group.
    SIGINT ``stop_window`` seconds before the deadline (no window: at it), SIGKILL at it (or 2 s later)."""
    options = ([f"randomCbcSeed {request.seed}"] if request.seed else []) + (
        [f"maxNodes {request.nodes}"] if request.nodes is not None else [])
    with warnings.catch_warnings():  # PuLP 3.3 deprecates its bundled CBC for 4.0 (pin pulp<4)
        warnings.simplefilter("ignore", DeprecationWarning)
        s = pulp.PULP_CBC_CMD(msg=False, gapRel=0.0, gapAbs=request.gap_abs, threads=request.workers,
                              warmStart=request.warm, options=options)
    with temp_dir("optplan-cbc-") as tmp:
        mps, mst, sol, log = (os.path.join(tmp, n) for n in ("model.mps", "start.mst", "model.sol", "cbc.log"))
        variables, var_names, con_names, _ = lp.writeMPS(mps, rename=1)
        args = [s.path, mps]
        if request.warm:
            s.writesol(mst, lp, variables, var_names, con_names)
            args += ["-mips", mst]
        if _over(deadline):  # the files took the time left, or a signal came: no CBC for nothing
            return Outcome(None, status=stop_reason(deadline))
        window = _stop_window(settings, deadline)
        seconds = _own_limit(deadline, "cbc", window)
        if seconds is not None:
            args += ["-sec", f"{seconds:.3f}"]
        for option in s.options + s.getOptions():  # PuLP's spelling of the options: "-name value"
            name, *value = option.split()
            args += [f"-{name}", *value]
        args += ["-solve", "-printingOptions", "all", "-solution", sol]
        with open(log, "w", encoding="utf-8") as f:
            asked = deadline.part(max(deadline.left() - window, 0.0)) if window else deadline
            code, stopped = run_child(args, asked, grace=window or 2.0, stop=signal.SIGINT, log=f, wall=request.wall)
        if stopped and request.wall is not None and not deadline.cancelled:
            return Outcome(None, status=CAPPED, stats={"deterministic_wall_capped": 1})
        if not _read_cbc_solution(s, sol, lp, variables, var_names, con_names):
            why = "killed: CBC ignored the time limit" if stopped else f"CBC wrote no solution (exit code {code})"
            return Outcome(None, status="interrupted" if deadline.cancelled else why)
        with open(log, encoding="utf-8", errors="replace") as f:
            text = f.read()
    return _cbc_outcome(lp, text, optimizes)


def _read_cbc_solution(s: pulp.PULP_CBC_CMD, sol: str, lp: pulp.LpProblem, variables: list,
                       var_names: dict, con_names: dict) -> bool:
    """Read CBC's solution file into ``lp``; False when there is none or it is cut short (CBC
    killed while writing it: PuLP's reader fails on an empty first line or a partial one)."""
    if not os.path.exists(sol):
        return False
    try:
        status, values, _, _, _, sol_status = s.readsol_MPS(sol, lp, variables, var_names, con_names)
    except (IndexError, ValueError, KeyError):
        return False
    lp.assignVarsVals(values)
    lp.assignStatus(status, sol_status)
    return True


def _cbc_outcome(lp: pulp.LpProblem, log: str, optimizes: bool) -> Outcome[Values]:
    """CBC's verdict: status from PuLP, the best bound from the log (PuLP does not report it)."""
    result = re.search(r"^Result - (.*)$", log, re.MULTILINE)
    status = result.group(1).strip() if result else pulp.LpStatus[lp.status]
    out: Outcome[Values] = Outcome(None, status=status)
    out.infeasible = lp.status == pulp.LpStatusInfeasible
    out.optimal = lp.status == pulp.LpStatusOptimal and lp.sol_status == pulp.LpSolutionOptimal
    if lp.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        out.solution = {v.name: v.varValue for v in lp.variables() if v.varValue is not None}
        out.value = round(pulp.value(lp.objective) or 0.0)
    if optimizes:
        lower = re.search(r"^Lower bound:\s*(\S+)", log, re.MULTILINE)
        if out.optimal:
            out.bound = out.value
        elif lower:
            out.bound = mip_bound(float(lower.group(1)))
    nodes = re.search(r"^Enumerated nodes:\s*(\d+)", log, re.MULTILINE)
    out.stats = {"nodes": int(nodes.group(1))} if nodes else {}
    return out


def _run_highs(lp: pulp.LpProblem, deadline: Deadline, request: _Request, optimizes: bool) -> Outcome[Values]:
    """HiGHS on the model's MPS file in a child process (see ``highs_child`` for why)."""
    if importlib.util.find_spec("highspy") is None:
        raise OptplanError("planner 'milp-highs' needs highspy: pip install 'optplan[highs]'")
    options: dict[str, object] = {"mip_rel_gap": 0.0, "mip_abs_gap": request.gap_abs, "random_seed": int(request.seed),
                                  "threads": int(request.workers)}
    if request.nodes is not None:
        options["mip_max_nodes"] = request.nodes
    with temp_dir("optplan-highs-") as tmp:
        mps, req, res, log = (os.path.join(tmp, n) for n in ("model.mps", "request.json", "result.json", "log"))
        lp.writeMPS(mps)
        start = {v.name: v.varValue for v in lp.variables() if v.varValue is not None} if request.warm else None
        if _over(deadline):  # the files took the time left, or a signal came: no HiGHS for nothing
            return Outcome(None, status=stop_reason(deadline))
        seconds = _own_limit(deadline, "highs")
        due = None if seconds is None else time.time() + seconds
        with open(req, "w", encoding="utf-8") as f:
            json.dump({"options": options, "start": start, "deadline": due}, f)
        with open(log, "w+", encoding="utf-8") as f:
            code, stopped = run_child([sys.executable, str(Path(__file__).with_name("highs_child.py")), mps, req, res],
                                      deadline, stop=signal.SIGKILL, log=f, late=0.5, wall=request.wall)
            f.seek(0)
            err = f.read().strip().splitlines()[-1:]
        if stopped and request.wall is not None and not deadline.cancelled:
            return Outcome(None, status=CAPPED, stats={"deterministic_wall_capped": 1})
        if code != 0 or not os.path.exists(res):
            if deadline.cancelled or stopped:
                return Outcome(None, status="interrupted" if deadline.cancelled else "killed: HiGHS ignored the time limit")
            raise RuntimeError(f"HiGHS child process failed: {err or code}")
        with open(res, encoding="utf-8") as f:
            r = json.load(f)
    return _highs_outcome(r, optimizes)


def _highs_outcome(r: dict, optimizes: bool) -> Outcome[Values]:
    """HiGHS's verdict from the child's result file."""
    out: Outcome[Values] = Outcome(r["values"], status=r["status"])
    if out.solution is not None:
        out.value = round(r["objective"])
    out.optimal = r["status"] == "Optimal"
    out.infeasible = r["status"] == "Infeasible"
    if optimizes and math.isfinite(r["bound"]):
        bound = mip_bound(r["bound"])
        out.bound = bound if not out.optimal or out.value is None else max(bound, out.value)
    out.stats = {"nodes": r["nodes"]}
    return out
