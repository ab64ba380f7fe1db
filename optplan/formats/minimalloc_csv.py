"""MiniMalloc's CSV format: ``id,lower,upper,size`` problems, ``...,offset`` solutions.

``lower,upper`` are half-open; an ``end`` column is inclusive and converted here. Header spellings
MiniMalloc accepts are read too: ``begin``/``start`` for ``lower``, ``buffer``/``buffer_id`` for ``id``. Optional columns: ``alignment``, ``hint`` (a suggested offset), ``benefit`` (value in faster memory, default the size), ``offset``
(a fixed offset in a problem; the solution in a plan), ``gaps``: space-separated entries
``lo-hi`` (inactive then) or ``lo-hi@wlo:whi`` (only bytes ``[offset+wlo, offset+whi)`` in use),
with ``hi`` inclusive under an ``end`` header as ``end`` is (MiniMalloc's converter reads
them so). Lines may end in LF or CRLF; we write LF, since MiniMalloc's own reader rejects CRLF.

Integers are plain: ASCII digits with an optional leading ``-``, as MiniMalloc writes them
(Python's ``int`` would also take ``+8``, `` 8 ``, ``1_000`` and other scripts' digits). A field
holds at most ``field_limit()`` characters (the csv module's limit) in the bulk readers as in the
general one; a longer one is an error naming its line.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Mapping
from itertools import repeat
from operator import attrgetter

import numpy as np

from optplan.core.buffer import INT64_MAX, Buffer, Gap, Memory
from optplan.core.errors import FormatError, ProblemError
from optplan.core.plan import Layout, Placement, Plan, offsets
from optplan.core.problem import Problem
from optplan.core.validate import Violation

_KNOWN = {"id", "lower", "upper", "size", "alignment", "hint", "offset", "gaps", "benefit"}
_ALIASES = {"begin": "lower", "start": "lower", "end": "upper", "buffer": "id", "buffer_id": "id"}  # as MiniMalloc reads them
_INTEGER = re.compile(r"-?[0-9]+")  # plain ASCII digits: int() would also take "+8", " 8 ", "1_000" and other scripts' digits
_COLUMN_BYTES = b"0123456789-,"  # what a column of them, joined by commas, may hold (the bulk readers)
_GAP = re.compile(r"(-?[0-9]+)-(-?[0-9]+)(?:@(-?[0-9]+):(-?[0-9]+))?")


def field_limit() -> int:
    """The most characters a field may hold, in every reader here: the csv module's limit
    (131,072 unless the host program changed it; read, never set, since it is the whole process's)."""
    return csv.field_size_limit()


def _records(text: str, source: str) -> Iterator[tuple[int, list[str]]]:
    """(line, fields) of each record; a field past ``field_limit()`` is one error line naming it."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] = []
    try:
        for record in reader:
            header = header or record
            yield reader.line_num, record
    except csv.Error as e:
        line = reader.line_num
        if "field limit" not in str(e):
            raise FormatError(f"{source}: line {line}: not read as CSV: {e}") from None
        raise FormatError(f"{source}: line {line}: {_long_field(text, line, header)} is longer than "
                          f"{field_limit():,} characters, the most a CSV field may hold") from None


def _long_field(text: str, line: int, header: list[str]) -> str:
    """Which field of ``line`` is too long: named by its column where the line has no quotes."""
    physical = io.StringIO(text, newline="").readlines()[line - 1].rstrip("\r\n")
    cells = physical.split(",")
    column = next((k for k, c in enumerate(cells) if len(c) > field_limit()), None)
    if '"' in physical or column is None or column >= len(header) or line == 1:
        return "a field"
    return f"field '{header[column].strip()}'"


def _rows(text: str, source: str) -> tuple[list[str], list[tuple[int, dict[str, str]]], bool]:
    """Canonical column names, (line, row) pairs keyed by them, and whether ``end`` is inclusive.
    Cells are as written (integers are checked as written: ``_int``); ids and column names are stripped."""
    records = _records(text.removeprefix("\ufeff"), source)  # a BOM, as Excel writes
    header = [h.strip() for h in next(records, (0, []))[1]]
    if not header:
        raise FormatError(f"{source}: empty file (expected a header line 'id,lower,upper,size')")
    if "" in header:
        column = header.index("") + 1
        why = " (a trailing comma?)" if column == len(header) else ""
        raise FormatError(f"{source}: line 1: column {column} of {len(header)} has no name{why}")
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
    rows = []
    for line, record in records:
        if not record:
            continue  # a blank line
        if len(record) > len(canonical):
            why = " (a trailing comma?)" if len(record) == len(canonical) + 1 and record[-1] == "" else ""
            raise FormatError(f"{source}: line {line}: more fields than columns ({len(record)} fields, "
                              f"{len(canonical)} columns){why}")
        row = dict(zip(canonical, record))
        row["id"] = row.get("id", "").strip(" ")
        rows.append((line, row))
    return canonical, rows, "end" in header


def _int(row: dict[str, str], field: str, line: int, source: str, optional: bool = False) -> int | None:
    """The cell as MiniMalloc writes integers: ASCII digits, an optional leading '-'; an empty
    cell of an ``optional`` column is None."""
    text = row.get(field, "")
    if text == "" and optional:
        return None
    where = f"{source}: line {line} (buffer {row.get('id', '')!r}): field '{field}'"
    if _INTEGER.fullmatch(text) is None:
        raise FormatError(f"{where}: not an integer: {text[:40]!r} (ASCII digits with an optional leading '-', "
                          "no spaces, '+' or '_')")
    value = int(text)
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise FormatError(f"{where}: {value} does not fit a 64-bit integer (at most 2^63-1)")
    return value


def _default(value: int | None, default: int) -> int:
    return default if value is None else value


def _gaps(row: dict[str, str], line: int, source: str, inclusive: bool) -> tuple[Gap, ...]:
    out = []
    for entry in filter(None, row.get("gaps", "").split(" ")):  # as MiniMalloc splits them
        m = _GAP.fullmatch(entry)
        if m is None:
            raise FormatError(f"{source}: line {line} (buffer {row.get('id', '')!r}): field 'gaps': "
                              f"malformed entry {entry!r} (expected lo-hi or lo-hi@wlo:whi)")
        window = None if m[3] is None else (int(m[3]), int(m[4]))
        out.append(Gap(int(m[1]), int(m[2]) + inclusive, window))
    return tuple(out)


def _gaps_text(b: Buffer) -> str:
    return " ".join(f"{g.start}-{g.end}" + ("" if g.window is None else f"@{g.window[0]}:{g.window[1]}") for g in b.gaps)


def _plain_columns(text: str, columns: set[str]) -> tuple[list[str], list[str], dict[str, np.ndarray]] | None:
    """Header, ids and integer columns of a plain file (only ``columns``, the required ones among
    them; no quotes, no empty cells, every field as the general reader would take it) parsed in
    bulk; None for anything else, which the general reader handles (and reports, line by line)."""
    head, _, body = text.partition("\n")
    header = [h.strip() for h in head.rstrip("\r").split(",")]
    canonical = [_ALIASES.get(c, c) for c in header]
    if (len(set(canonical)) != len(canonical) or not {"id", "lower", "upper", "size"} <= set(canonical)
            or not set(canonical) <= columns or '"' in text):
        return None
    body = body.replace("\r\n", "\n")
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    commas = len(header) - 1
    if (not lines or "\r" in body or max(map(len, lines)) > field_limit()
            or set(map(str.count, lines, repeat(","))) != {commas}):
        return None
    cells = ",".join(lines).split(",")
    ids: list[str] = []
    cols = {}
    for k, c in enumerate(canonical):
        column = cells[k::len(header)]
        if c == "id":
            ids = [s.strip(" ") for s in column]
        else:
            values = _integers(column)
            if values is None:
                return None
            cols[c] = values
    return header, ids, cols


def _integers(column: list[str]) -> np.ndarray | None:
    """The column's integers, or None where a cell is not one ``int`` takes in int64."""
    joined = ",".join(column)
    if not _plain_integers(joined):
        return None
    unsigned = ("," + joined).replace(",-", ",")
    if "-" not in unsigned and ",," not in unsigned + "," and max(map(len, column)) <= 18:
        # every cell -?[0-9]+ of at most 18 characters (no overflow): numpy's C parser, 10x int()'s pace
        return np.fromstring(joined, np.int64, sep=",")
    try:  # (int refuses "", "-", "1-2"; the rest of what it takes, _plain_integers refused)
        return np.fromiter(map(int, column), np.int64, len(column))
    except (ValueError, OverflowError):
        return None


def _plain_integers(joined: str) -> bool:
    """Only ASCII digits, '-' and ',' (bytes.translate: a regular expression takes 20x as long)."""
    return joined.isascii() and not joined.encode("ascii").translate(None, _COLUMN_BYTES)


def _plain_problem(text: str, source: str) -> Problem | None:
    """The problem of a plain file (columns id, lower or begin/start, upper or end, size and
    optionally alignment) read in bulk into columns (``Problem.from_columns``); None for anything
    else."""
    parsed = _plain_columns(text, {"id", "lower", "upper", "size", "alignment"})
    if parsed is None:
        return None
    header, ids, cols = parsed
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


def placements_from_csv(text: str, memory: str, source: str = "<csv>",
                        problem: Problem | None = None) -> tuple[Mapping[str, Placement], list[Violation]]:
    """A plan's offsets (in ``memory``), and what makes it a plan for another problem than
    ``problem``: a row whose ``lower,upper,size`` differ from its buffer's, a buffer placed twice
    (its first row counts). A plain plan of ``problem``'s buffers in their order is read in bulk,
    as a ``Layout``."""
    if problem is not None:
        plain = _plain_plan(text, memory, problem)
        if plain is not None:
            return plain
    header, rows, inclusive = _rows(text, source)
    if "offset" not in header:
        raise FormatError(f"{source}: missing required column offset (a plan CSV is id,lower,upper,size,offset)")
    out: dict[str, Placement] = {}
    first: dict[str, int] = {}
    violations = []
    for line, row in rows:
        bid, offset = row["id"], _int(row, "offset", line, source)
        if bid in out:
            violations.append(Violation("duplicate", bid, f"line {line} places it again (first on line {first[bid]})"))
            continue
        if problem is not None and problem.has_buffer(bid):
            b = problem.buffer(bid)
            stated = [_int(row, f, line, source) for f in ("lower", "upper", "size")]
            violations.extend(_disagreements(b.id, line, inclusive, stated, [b.start, b.end - inclusive, b.size]))
        out[bid], first[bid] = Placement(memory, offset), line  # type: ignore[arg-type]
    return out, violations


def _plain_plan(text: str, memory: str, problem: Problem) -> tuple[Layout, list[Violation]] | None:
    """A plain plan CSV (``_plain_columns``) with a row per buffer of ``problem``, in its order,
    read as arrays; None for any other."""
    parsed = _plain_columns(text, {"id", "lower", "upper", "size", "offset"})
    cols = problem.columns
    if parsed is None or "offset" not in parsed[2] or problem.concurrent or parsed[1] != cols.ids:
        return None
    header, _, got = parsed
    inclusive = "end" in header
    want = {"lower": cols.start, "upper": cols.end - inclusive, "size": cols.size}
    differ = np.zeros(len(cols.ids), bool)
    for field, values in want.items():
        differ |= got[field] != values
    violations = []
    for k in np.flatnonzero(differ).tolist():
        violations.extend(_disagreements(cols.ids[k], k + 2, inclusive, [int(got[f][k]) for f in want],
                                         [int(v[k]) for v in want.values()]))
    return Layout(cols.ids, (memory,), np.zeros(len(cols.ids), np.int64), got["offset"]), violations


def _disagreements(bid: str, line: int, inclusive: bool, stated: list[int | None], want: list[int]) -> list[Violation]:
    """The first of a plan row's ``lower, upper, size`` that differs from the problem's, as a violation."""
    for field, got, value in zip(("lower", "upper", "size"), stated, want):
        if got != value:
            column = "end" if field == "upper" and inclusive else field
            return [Violation("mismatch", bid, f"line {line}: field '{column}': {got} in the plan but {value} in the "
                                               "problem (a plan for another problem?)")]
    return []
