"""MiniMalloc's CSV format: ``id,lower,upper,size`` problems, ``...,offset`` solutions.

``lower,upper`` are half-open; the alternative ``begin,end`` columns have an inclusive end and
are converted here. Optional columns: ``alignment``, ``hint`` (a suggested offset), ``offset``
(a fixed offset in a problem; the solution in a plan). Lines may end in LF or CRLF; we write LF,
since MiniMalloc's own reader rejects CRLF.
"""

from __future__ import annotations

import csv
import io

from optplan.errors import FormatError, ProblemError
from optplan.plan import Placement, Plan
from optplan.problem import Buffer, Memory, Problem

_KNOWN = {"id", "lower", "upper", "begin", "end", "size", "alignment", "hint", "offset", "gaps"}


def _rows(text: str, source: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise FormatError(f"{source}: empty file (expected a header line 'id,lower,upper,size')")
    reader.fieldnames = header
    missing = [c for c in ("id", "size") if c not in header]
    if not ({"lower", "upper"} <= set(header) or {"begin", "end"} <= set(header)):
        missing.append("lower,upper")
    if missing:
        raise FormatError(f"{source}: missing required column(s) {', '.join(missing)} (header: {','.join(header)})")
    unknown = [c for c in header if c not in _KNOWN]
    if unknown:
        raise FormatError(f"{source}: unknown column(s) {', '.join(unknown)}")
    rows = []
    for row in reader:
        if None in row:
            raise FormatError(f"{source}: line {reader.line_num}: more fields than columns")
        rows.append((reader.line_num, {k: (v or "").strip() for k, v in row.items()}))
    return header, rows


def _int(row: dict[str, str], field: str, line: int, source: str, optional: bool = False) -> int | None:
    text = row.get(field, "")
    if text == "" and optional:
        return None
    try:
        return int(text)
    except ValueError:
        raise FormatError(f"{source}: line {line} (buffer {row.get('id', '')!r}): field '{field}': not an integer: {text!r}") from None


def problem_from_csv(text: str, source: str = "<csv>") -> Problem:
    header, rows = _rows(text, source)
    inclusive = "lower" not in header
    buffers = []
    for line, row in rows:
        if row.get("gaps"):
            raise FormatError(f"{source}: line {line} (buffer {row['id']!r}): field 'gaps': gaps are not supported yet")
        if inclusive:
            start, end = _int(row, "begin", line, source), _int(row, "end", line, source) + 1  # type: ignore[operator]
        else:
            start, end = _int(row, "lower", line, source), _int(row, "upper", line, source)
        buffers.append(Buffer(
            row["id"], _int(row, "size", line, source), start, end,  # type: ignore[arg-type]
            alignment=_int(row, "alignment", line, source, optional=True) or 1,
            fixed_offset=_int(row, "offset", line, source, optional=True),
            hint_offset=_int(row, "hint", line, source, optional=True),
        ))
    try:
        return Problem(tuple(buffers), (Memory("mem"),), metadata={"source": source})
    except ProblemError as e:
        raise ProblemError(f"{source}: {e}") from None


def problem_to_csv(problem: Problem) -> str:
    if len(problem.memories) != 1 or problem.relative:
        raise FormatError("MiniMalloc CSV holds single-memory problems without relative placements; use .json")
    extra = [c for c, f in (("alignment", "alignment"), ("hint", "hint_offset"), ("offset", "fixed_offset"))
             if any(getattr(b, f) not in (None, 1) for b in problem.buffers)]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["id", "lower", "upper", "size", *extra])
    fields = {"alignment": "alignment", "hint": "hint_offset", "offset": "fixed_offset"}
    for b in problem.buffers:
        w.writerow([b.id, b.start, b.end, b.size, *["" if getattr(b, fields[c]) is None else getattr(b, fields[c]) for c in extra]])
    return out.getvalue()


def plan_to_csv(problem: Problem, plan: Plan) -> str:
    """The solution as MiniMalloc writes it: ``id,lower,upper,size,offset``."""
    if len(problem.memories) != 1:
        raise FormatError("a MiniMalloc CSV plan holds one memory; write the plan as .json")
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["id", "lower", "upper", "size", "offset"])
    for b in problem.buffers:
        w.writerow([b.id, b.start, b.end, b.size, plan.placements[b.id].offset])
    return out.getvalue()


def placements_from_csv(text: str, memory: str, source: str = "<csv>") -> dict[str, Placement]:
    header, rows = _rows(text, source)
    if "offset" not in header:
        raise FormatError(f"{source}: missing required column offset (a plan CSV is id,lower,upper,size,offset)")
    return {row["id"]: Placement(memory, _int(row, "offset", line, source)) for line, row in rows}  # type: ignore[misc]
