"""Reading and writing problems and plans; the format is chosen by the file's extension."""

from __future__ import annotations

from pathlib import Path

from optplan.core.errors import FormatError
from optplan.core.plan import Placement, Plan
from optplan.core.problem import Problem
from optplan.formats import minimalloc_csv, native_json
from optplan.formats.output import check_output, write_text

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
    """The problem in ``path``: ``.csv`` (MiniMalloc) or ``.json`` (optplan, checked against its
    schema). A bad file raises FormatError or ProblemError naming the file, line or buffer, and field."""
    ext, text = _ext(path), _read(path)
    if ext == ".csv":
        return minimalloc_csv.problem_from_csv(text, str(path))
    return native_json.problem_from_json(text, str(path))


def write_problem(problem: Problem, path: str | Path) -> None:
    """Write ``problem`` to ``path`` in the format its extension names (a CSV holds one memory)."""
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
    """Write a found plan to ``path``: ``.json`` (the plan document, as ``solve --json`` prints it)
    or ``.csv`` (MiniMalloc's ``id,lower,upper,size,offset``, one memory)."""
    if not plan.found:
        raise FormatError(f"{path}: not written: the plan is {plan.status.value}")
    ext = _ext(path)
    text = minimalloc_csv.plan_to_csv(problem, plan) if ext == ".csv" else native_json.plan_to_json(plan)
    write_text(path, text)


__all__ = ["check_output", "read_placements", "read_plan_file", "read_problem", "write_plan", "write_problem", "write_text"]
