"""The MILP model as a file for other MIP solvers (Gurobi, CPLEX, ...), and their solutions back.

``export_model`` writes the model of ``optplan.solvers.milp`` for the whole problem as one part
(``reduce`` without splitting: one file, one peak variable per memory), with its grid scaling,
pair reduction and symmetry breaking, big-M from the best heuristic plan. Its variable names are
the contract: ``o_<i>`` is the root offset of the i-th unit that has bytes, in units of the grid
``scale`` (``ModelInfo.scale``), ``x_<i>_<j>`` = 1 when that unit lives in memory number j.
``import_solution`` rebuilds the same reduction from the problem (no model needed), reads those
variables from a solution file, and returns a Plan that passed the validator.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import pulp

from optplan.core.deadline import Deadline
from optplan.core.errors import FormatError, OptplanError
from optplan.core.objective import Objective
from optplan.core.plan import Plan
from optplan.core.problem import Problem
from optplan.formats.output import atomic_output
from optplan.parts import Reduction, reduce, settle
from optplan.registry import Result, finish
from optplan.solvers.milp import (
    assign_name,
    best_heuristic,
    build_model,
    decode,
    offset_name,
    read_choices,
)

MODEL_EXTENSIONS = (".lp", ".mps")


@dataclass(frozen=True)
class ModelInfo:
    variables: int
    binaries: int
    integers: int
    constraints: int
    scale: int  # offsets in the model are multiples of this many bytes


def _whole(problem: Problem, objective: Objective | None = None) -> Reduction:
    return reduce(problem, objective or Objective.default(problem), split=False)


def export_model(problem: Problem, path: str | Path, objective: Objective | str | None = None) -> ModelInfo:
    """Write the MILP of ``problem`` as ``.lp`` (CPLEX LP format) or ``.mps`` (free MPS)."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext not in MODEL_EXTENSIONS:
        raise FormatError(f"{path}: unknown model extension {ext or '(none)'!r}; use .lp or .mps")
    objective = Objective.parse(objective, problem)
    red = _whole(problem, objective)
    if not red.parts:
        raise OptplanError("nothing to optimize: no buffer of the problem has bytes")
    part = red.parts[0]
    incumbent = best_heuristic(problem, Deadline(1.0), objective=objective)
    start = settle(part, incumbent) if incumbent is not None else None
    model = build_model(part, objective, start)
    if model.stages:
        raise OptplanError("the default memory weights times the peaks exceed what a MIP solver resolves to one byte "
                           "(optplan then minimizes the peaks one memory at a time); set smaller weights per memory "
                           "or export with --objective feasible")
    lp = model.lp
    with atomic_output(path) as name:  # pulp writes by name: the new, still unnamed file
        if ext == ".lp":
            lp.writeLP(name)
        else:
            lp.writeMPS(name)
    variables = lp.variables()
    binaries = sum(v.cat == pulp.LpInteger and v.lowBound == 0 and v.upBound == 1 for v in variables)
    integers = sum(v.cat == pulp.LpInteger for v in variables) - binaries
    return ModelInfo(len(variables), binaries, integers, lp.numConstraints(), part.scale)


def read_solution(path: str | Path) -> dict[str, float]:
    """Variable values from a Gurobi ``.sol`` file or any file of ``name value`` lines
    (``#`` starts a comment line)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise FormatError(f"{path}: cannot read: {e}") from None
    values: dict[str, float] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tokens = line.split()
        if len(tokens) != 2:
            raise FormatError(f"{path}: line {n}: expected 'name value', got {line[:60]!r}")
        try:
            value = float(tokens[1])
        except ValueError:
            raise FormatError(f"{path}: line {n}: value of {tokens[0]!r} is not a number: {tokens[1]!r}") from None
        if not math.isfinite(value):
            raise FormatError(f"{path}: line {n}: value of {tokens[0]!r} is not finite")
        values[tokens[0]] = value
    return values


def import_solution(problem: Problem, path: str | Path) -> Plan:
    """A validated Plan from a solver's solution of the model ``export_model`` wrote."""
    t0 = time.perf_counter()
    values = read_solution(path)
    red = _whole(problem)
    placements = dict(red.empty)
    message = f"imported from {Path(path).name}"
    if red.parts:
        part = red.parts[0]
        names = problem.memory_names
        for i, u in enumerate(part.scaled):
            wanted = [offset_name(i)] + ([assign_name(i, names.index(m)) for m in u.memories] if len(u.memories) > 1 else [])
            for name in wanted:
                if name not in values:
                    raise OptplanError(f"{path}: no value for {name} (buffer {u.root!r}); is this a solution of the model "
                                       "exported for this problem (same --capacity)?")
        raw = read_choices(part, values.get)
        assert raw is not None  # every name was checked above
        found = decode(part, raw)
        if not found:
            raise OptplanError(f"{path}: the solution is not a valid plan even after re-placing its units lowest first "
                               "(a capacity is exceeded or it belongs to another problem)")
        choices, how = found[0]  # the solution's own offsets whenever they are valid
        if how != "offsets":
            message += "; offsets re-placed lowest first in the solution's order (its rounded offsets overlapped)"
        placements.update(part.placements(choices))
    return finish(problem, Result(placements, message=message), "import", time.perf_counter() - t0)
