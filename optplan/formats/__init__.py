"""Reading and writing problems, graphs and plans; the format is chosen by the file's extension
(and, for JSON, by its ``format`` field: a graph reads as the problem of its given order)."""

from __future__ import annotations

from pathlib import Path

from optplan.core.errors import FormatError
from optplan.core.plan import Placement, Plan
from optplan.core.problem import Problem
from optplan.formats import graph_json, minimalloc_csv, native_json
from optplan.formats.output import check_output, write_text
from optplan.graph.model import Graph
from optplan.graph.plan import GraphPlan

EXTENSIONS = (".csv", ".json")


def _ext(path: str | Path) -> str:
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
    """A problem file, or a graph's problem under its given order (no reuse taken)."""
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


def write_graph_plan(gp: GraphPlan, path: str | Path) -> None:
    """A graph's plan: the plan format with its order and reuses (JSON only: CSV has no room)."""
    if not gp.found:
        raise FormatError(f"{path}: not written: the plan is {gp.plan.status.value}")
    if Path(path).suffix.lower() != ".json":
        raise FormatError(f"{path}: a graph's plan carries its order: write it as .json")
    write_text(path, graph_json.graph_plan_to_json(gp))


def write_problem(problem: Problem, path: str | Path) -> None:
    ext = _ext(path)
    text = minimalloc_csv.problem_to_csv(problem) if ext == ".csv" else native_json.problem_to_json(problem)
    write_text(path, text)


def read_placements(path: str | Path, problem: Problem) -> dict[str, Placement]:
    """A plan file's placements (CSV plans are in the problem's only memory)."""
    return read_plan_file(path, problem)[0]


def read_plan_file(path: str | Path, problem: Problem) -> tuple[dict[str, Placement], dict | None]:
    """A plan file's placements, and what a JSON plan records about itself (status, planner, peak,
    gap, ...; None for a CSV plan, which records only placements)."""
    ext, text = _ext(path), _read(path)
    if ext == ".csv":
        if len(problem.memories) != 1:
            raise FormatError(f"{path}: a CSV plan holds one memory but the problem has {len(problem.memories)}")
        return minimalloc_csv.placements_from_csv(text, problem.memories[0].name, str(path), problem), None
    doc = native_json.plan_document(text, str(path))
    return native_json.placements_of(doc), {k: v for k, v in doc.items() if k != "placements"}


def write_plan(problem: Problem, plan: Plan, path: str | Path) -> None:
    if not plan.found:
        raise FormatError(f"{path}: not written: the plan is {plan.status.value}")
    ext = _ext(path)
    text = minimalloc_csv.plan_to_csv(problem, plan) if ext == ".csv" else native_json.plan_to_json(plan)
    write_text(path, text)


__all__ = ["check_output", "read_input", "read_placements", "read_plan_file", "read_problem", "write_graph", "write_graph_plan",
           "write_plan", "write_problem", "write_text"]
