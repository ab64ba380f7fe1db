"""Reading and writing problems, graphs and plans; the format is chosen by the file's extension
(and, for JSON, by its ``format`` field: a graph reads as the problem of its given order)."""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from pathlib import Path

from optplan.core.errors import FormatError
from optplan.core.plan import Placement, Plan
from optplan.core.problem import Problem
from optplan.core.validate import Violation, check_claims, validate
from optplan.formats import graph_json, minimalloc_csv, native_json
from optplan.formats.output import check_output, write_text
from optplan.graph.model import Graph
from optplan.graph.plan import GraphPlan

EXTENSIONS = (".csv", ".json")


def _ext(path: str | Path) -> str:
    if not isinstance(path, (str, PathLike)):
        raise FormatError(f"a file is named by a str or a path, got {type(path).__name__} {path!r:.60}")
    ext = Path(path).suffix.lower()
    if ext not in EXTENSIONS:
        raise FormatError(f"{path}: unknown extension {ext or '(none)'!r}; use .csv (MiniMalloc) or .json (optplan)")
    return ext


def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")  # a leading BOM is dropped
    except FileNotFoundError:
        raise FormatError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise FormatError(f"{path}: cannot read: {e}") from None


def read_problem(path: str | Path) -> Problem:
    """The problem in ``path``: ``.csv`` (MiniMalloc) or ``.json`` (optplan, checked against its
    schema); a graph's problem under its given order (no reuse taken). A bad file raises
    FormatError or ProblemError naming the file, line or buffer, and field."""
    found = read_input(path)
    return found.base if isinstance(found, Graph) else found


def read_input(path: str | Path) -> Problem | Graph:
    """A problem, or a graph (an ``optplan-graph`` JSON file)."""
    ext, text = _ext(path), _read(path)
    if ext == ".csv":
        return minimalloc_csv.problem_from_csv(text, str(path))
    doc = graph_json.graph_document(text, str(path))
    if doc is not None:
        return graph_json.graph_from_document(doc, str(path))
    return native_json.problem_from_json(text, str(path))


def write_graph(graph: Graph, path: str | Path) -> None:
    if Path(path).suffix.lower() != ".json":
        raise FormatError(f"{path}: a graph is written as .json (optplan-graph)")
    write_text(path, graph_json.graph_to_json(graph))


def write_graph_plan(gp: GraphPlan, path: str | Path, times: bool = True) -> None:
    """A graph's plan: the plan format with its order and reuses (JSON only: CSV has no room);
    ``times=False``: without wall-clock figures (``--deterministic``: the same bytes every run)."""
    if not gp.found:
        raise FormatError(f"{path}: not written: the plan is {gp.plan.status.value}")
    if Path(path).suffix.lower() != ".json":
        raise FormatError(f"{path}: a graph's plan carries its order: write it as .json")
    write_text(path, graph_json.graph_plan_to_json(gp, times))


def write_problem(problem: Problem, path: str | Path) -> None:
    """Write ``problem`` to ``path`` in the format its extension names (a CSV holds one memory)."""
    ext = _ext(path)
    text = minimalloc_csv.problem_to_csv(problem) if ext == ".csv" else native_json.problem_to_json(problem)
    write_text(path, text)


def read_placements(path: str | Path, problem: Problem) -> Mapping[str, Placement]:
    """A plan file's placements (CSV plans are in the problem's only memory)."""
    return read_plan_file(path, problem)[0]


def read_plan_file(path: str | Path, problem: Problem) -> tuple[Mapping[str, Placement], dict | None]:
    """A plan file's placements, and what a JSON plan records about itself (status, planner, peak,
    gap, ...; None for a CSV plan, which records only placements). A CSV plan for another problem
    (a row that disagrees with the problem's buffer, a buffer placed twice) is a FormatError."""
    placements, fields, violations = _read_plan(path, problem)
    if violations:
        raise FormatError(f"{path}: {violations[0]}")
    return placements, fields


def validate_plan_file(path: str | Path, problem: Problem) -> tuple[Mapping[str, Placement], list[Violation]]:
    """A plan file's placements and everything wrong with them for ``problem``: the rows of a CSV
    plan that disagree with the problem, the validator's violations, and (once those are none)
    what a JSON plan claims that its placements refute (``check_claims``). FormatError only for a
    file that cannot be read as a plan."""
    placements, fields, violations = _read_plan(path, problem)
    violations += validate(problem, placements)
    if not violations and fields is not None:
        violations = check_claims(problem, placements, fields)
    return placements, violations


def _read_plan(path: str | Path, problem: Problem) -> tuple[Mapping[str, Placement], dict | None, list[Violation]]:
    ext, text = _ext(path), _read(path)
    if ext == ".csv":
        if len(problem.memories) != 1:
            raise FormatError(f"{path}: a CSV plan holds one memory but the problem has {len(problem.memories)}")
        placements, violations = minimalloc_csv.placements_from_csv(text, problem.memories[0].name, str(path), problem)
        return placements, None, violations
    doc = native_json.plan_document(text, str(path))
    return native_json.placements_of(doc, problem), {k: v for k, v in doc.items() if k != "placements"}, []


def write_plan(problem: Problem, plan: Plan, path: str | Path, times: bool = True) -> None:
    """Write a found plan to ``path``: ``.json`` (the plan document, as ``solve --json`` prints it;
    ``times=False``: without its wall-clock figures, as ``--deterministic`` writes it, the same
    bytes on every run) or ``.csv`` (MiniMalloc's ``id,lower,upper,size,offset``, one memory)."""
    if not plan.found:
        raise FormatError(f"{path}: not written: the plan is {plan.status.value}")
    ext = _ext(path)
    text = minimalloc_csv.plan_to_csv(problem, plan) if ext == ".csv" else native_json.plan_to_json(plan, times)
    write_text(path, text)


__all__ = ["check_output", "read_input", "read_placements", "read_plan_file", "read_problem", "validate_plan_file",
           "write_graph", "write_graph_plan", "write_plan", "write_problem", "write_text"]
