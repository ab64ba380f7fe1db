"""MiniMalloc's CSV format: ``id,lower,upper,size`` problems, ``...,offset`` solutions.

``lower,upper`` are half-open; an ``end`` column is inclusive and converted here. Header spellings
MiniMalloc accepts are read too: ``begin``/``start`` for ``lower``, ``buffer``/``buffer_id`` for ``id``. Optional columns: ``alignment``, ``hint`` (a suggested offset), ``benefit`` (value in faster memory, default the size), ``offset``
(a fixed offset in a problem; the solution in a plan), ``gaps``: space-separated entries
``lo-hi`` (inactive then) or ``lo-hi@wlo:whi`` (only bytes ``[offset+wlo, offset+whi)`` in use),
with ``hi`` inclusive under an ``end`` header as ``end`` is (MiniMalloc's converter reads
them so). Lines may end in LF or CRLF; we write LF, since MiniMalloc's own reader rejects CRLF.
"""

from __future__ import annotations

import csv
import io
import re
from operator import attrgetter

import numpy as np

from optplan.core.buffer import INT64_MAX, Buffer, Gap, Memory
from optplan.core.errors import FormatError, ProblemError
from optplan.core.plan import Placement, Plan, offsets
from optplan.core.problem import Problem

_KNOWN = {"id", "lower", "upper", "size", "alignment", "hint", "offset", "gaps", "benefit"}
_ALIASES = {"begin": "lower", "start": "lower", "end": "upper", "buffer": "id", "buffer_id": "id"}  # as MiniMalloc reads them
_GAP = re.compile(r"(-?\d+)-(-?\d+)(?:@(-?\d+):(-?\d+))?")


def _rows(text: str, source: str) -> tuple[list[str], list[tuple[int, dict[str, str]]], bool]:
    """Canonical column names, (line, row) pairs keyed by them, and whether ``end`` is inclusive."""
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff"), newline=""))  # a BOM, as Excel writes
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise FormatError(f"{source}: empty file (expected a header line 'id,lower,upper,size')")
    canonical = [_ALIASES.get(c, c) for c in header]
    unknown = [c for c, k in zip(header, canonical) if k not in _KNOWN]
    if unknown:
        raise FormatError(f"{source}: unknown column(s) {', '.join(unknown)}")
    twice = [c for c, k in zip(header, canonical) if canonical.count(k) > 1]
    if twice:
        raise FormatError(f"{source}: column(s) {', '.join(twice)} name the same field twice")
    missing = [c for c in ("id", "lower", "upper", "size") if c not in canonical]
    if missing:
        raise FormatError(f"{source}: missing required column(s) {', '.join(missing)} (header: {','.join(header)})")
    reader.fieldnames = canonical
    rows = []
    for row in reader:
        if None in row:
            raise FormatError(f"{source}: line {reader.line_num}: more fields than columns")
        rows.append((reader.line_num, {k: (v or "").strip() for k, v in row.items()}))
    return canonical, rows, "end" in header


def _int(row: dict[str, str], field: str, line: int, source: str, optional: bool = False) -> int | None:
    text = row.get(field, "")
    if text == "" and optional:
        return None
    where = f"{source}: line {line} (buffer {row.get('id', '')!r}): field '{field}'"
    try:
        value = int(text)
    except ValueError:
        raise FormatError(f"{where}: not an integer: {text[:40]!r}") from None
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise FormatError(f"{where}: {value} does not fit a 64-bit integer (at most 2^63-1)")
    return value


def _default(value: int | None, default: int) -> int:
    return default if value is None else value


def _gaps(row: dict[str, str], line: int, source: str, inclusive: bool) -> tuple[Gap, ...]:
    out = []
    for entry in row.get("gaps", "").split():
        m = _GAP.fullmatch(entry)
        if m is None:
            raise FormatError(f"{source}: line {line} (buffer {row.get('id', '')!r}): field 'gaps': "
                              f"malformed entry {entry!r} (expected lo-hi or lo-hi@wlo:whi)")
        window = None if m[3] is None else (int(m[3]), int(m[4]))
        out.append(Gap(int(m[1]), int(m[2]) + inclusive, window))
    return tuple(out)


def _gaps_text(b: Buffer) -> str:
    return " ".join(f"{g.start}-{g.end}" + ("" if g.window is None else f"@{g.window[0]}:{g.window[1]}") for g in b.gaps)


def _plain_problem(text: str, source: str) -> Problem | None:
    """The problem of a plain file (columns id, lower or begin/start, upper or end, size and
    optionally alignment; no quotes, no empty cells) parsed in bulk into columns
    (``Problem.from_columns``); None for anything else, which the general reader handles (and
    reports, line by line)."""
    head, _, body = text.partition("\n")
    header = [h.strip() for h in head.rstrip("\r").split(",")]
    canonical = [_ALIASES.get(c, c) for c in header]
    if (len(set(canonical)) != len(canonical) or not {"id", "lower", "upper", "size"} <= set(canonical)
            or not set(canonical) <= {"id", "lower", "upper", "size", "alignment"} or '"' in text):
        return None
    lines = body.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    commas = len(header) - 1
    if not lines or any(line.count(",") != commas for line in lines):
        return None
    cells = ",".join(lines).split(",")
    cols = {}
    try:
        for k, c in enumerate(canonical):
            if c != "id":
                cols[c] = np.fromiter(map(int, cells[k::len(header)]), np.int64, len(lines))
    except (ValueError, OverflowError):
        return None
    ids = [s.strip() for s in cells[canonical.index("id")::len(header)]]
    upper = cols["upper"] + 1 if "end" in header else cols["upper"]
    if "end" in header and (cols["upper"] == INT64_MAX).any():
        return None  # the general reader names the overflowing row
    try:  # alignment 0 is an error, as in the general reader and JSON
        return Problem.from_columns(ids, cols["lower"], upper, cols["size"], cols.get("alignment"), metadata={"source": source})
    except ProblemError as e:
        raise ProblemError(f"{source}: {e}") from None


def problem_from_csv(text: str, source: str = "<csv>") -> Problem:
    problem = _plain_problem(text, source)
    if problem is not None:
        return problem
    _, rows, inclusive = _rows(text, source)
    buffers = []
    for line, row in rows:
        start, end = _int(row, "lower", line, source), _int(row, "upper", line, source) + inclusive  # type: ignore[operator]
        buffers.append(Buffer(
            row["id"], _int(row, "size", line, source), start, end,  # type: ignore[arg-type]
            alignment=_default(_int(row, "alignment", line, source, optional=True), 1),  # 0 is an error, as in JSON
            fixed_offset=_int(row, "offset", line, source, optional=True),
            hint_offset=_int(row, "hint", line, source, optional=True),
            gaps=_gaps(row, line, source, inclusive),
            benefit=_int(row, "benefit", line, source, optional=True),
        ))
    try:
        return Problem(tuple(buffers), (Memory("mem"),), metadata={"source": source})
    except ProblemError as e:
        raise ProblemError(f"{source}: {e}") from None


def problem_to_csv(problem: Problem) -> str:
    if len(problem.memories) != 1 or problem.relative or problem.concurrent:
        raise FormatError("MiniMalloc CSV holds single-memory problems with scalar lifetimes and no relative placements; use .json")
    columns = {"alignment": ("alignment", 1), "hint": ("hint_offset", None), "gaps": ("gaps", ()),
               "offset": ("fixed_offset", None), "benefit": ("benefit", None)}  # column -> (field, default): written when some buffer differs
    extra = [c for c, (f, default) in columns.items() if any(getattr(b, f) != default for b in problem.buffers)]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["id", "lower", "upper", "size", *extra])
    for b in problem.buffers:
        cells = [_gaps_text(b) if c == "gaps" else getattr(b, columns[c][0]) for c in extra]
        w.writerow([b.id, b.start, b.end, b.size, *["" if v is None else v for v in cells]])
    return out.getvalue()


def plan_to_csv(problem: Problem, plan: Plan) -> str:
    """The solution as MiniMalloc writes it: ``id,lower,upper,size,offset`` (``gaps`` before
    ``offset`` when some buffer has gaps)."""
    if len(problem.memories) != 1 or problem.concurrent:
        raise FormatError("a MiniMalloc CSV plan holds one memory and scalar lifetimes; write the plan as .json")
    cols = problem.columns
    joined = "\n".join(cols.ids)
    if cols.plain and not any(c in joined for c in ',"\r') and joined.count("\n") == len(cols.ids) - 1:  # nothing to quote
        off = offsets(problem, plan.placements)  # the plan's own array if it has one (``Layout``)
        column = off.tolist() if off is not None else map(attrgetter("offset"), map(plan.placements.__getitem__, cols.ids))
        rows = map("{},{},{},{},{}\n".format, cols.ids, cols.start.tolist(), cols.end.tolist(), cols.size.tolist(), column)
        return "id,lower,upper,size,offset\n" + "".join(rows)
    gaps = any(b.gaps for b in problem.buffers)
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["id", "lower", "upper", "size", *(["gaps"] if gaps else []), "offset"])
    for b in problem.buffers:
        w.writerow([b.id, b.start, b.end, b.size, *([_gaps_text(b)] if gaps else []), plan.placements[b.id].offset])
    return out.getvalue()


def placements_from_csv(text: str, memory: str, source: str = "<csv>", problem: Problem | None = None) -> dict[str, Placement]:
    """A plan's offsets; each row's ``lower,upper,size`` must match ``problem``'s buffer (a plan
    for another problem is an error), and an id may appear once."""
    header, rows, inclusive = _rows(text, source)
    if "offset" not in header:
        raise FormatError(f"{source}: missing required column offset (a plan CSV is id,lower,upper,size,offset)")
    out: dict[str, Placement] = {}
    for line, row in rows:
        bid = row["id"]
        if bid in out:
            raise FormatError(f"{source}: line {line} (buffer {bid!r}): field 'id': duplicate id")
        if problem is not None and problem.has_buffer(bid):
            _agrees(problem.buffer(bid), row, line, source, inclusive)
        out[bid] = Placement(memory, _int(row, "offset", line, source))  # type: ignore[arg-type]
    return out


def _agrees(b: Buffer, row: dict[str, str], line: int, source: str, inclusive: bool) -> None:
    expected = {"lower": b.start, "upper": b.end - inclusive, "size": b.size}
    for field, want in expected.items():
        got = _int(row, field, line, source)
        if got != want:
            column = "end" if field == "upper" and inclusive else field
            raise FormatError(f"{source}: line {line} (buffer {b.id!r}): field '{column}': {got} in the plan but "
                              f"{want} in the problem (a plan for another problem?)")
