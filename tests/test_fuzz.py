"""Fuzzing the readers and the command line: any input gives a Problem (or a parsed command) or
one OptplanError line, never another exception, and a Problem read can be written again (a lone
surrogate in an id once crashed the CSV writer). Cells reach long fields, control characters, lone
surrogates and digits int() reads but MiniMalloc's CSV does not hold. Derandomized with fixed
example counts, so CI repeats the same inputs (about 10 s in all)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optplan.cli import _parser
from optplan.core.bounds import lower_bounds
from optplan.core.buffer import Buffer
from optplan.core.errors import OptplanError
from optplan.core.problem import Problem
from optplan.formats import read_placements, read_problem
from optplan.formats.minimalloc_csv import problem_to_csv
from optplan.formats.native_json import problem_to_json

FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
DIR = Path(tempfile.mkdtemp(prefix="optplan-fuzz-"))  # one directory for every example
PARSER = _parser()  # parsing leaves no state behind in the parser
PLAN_FOR = Problem((Buffer("a", 4, 0, 2), Buffer("b", 4, 1, 3)))

# integers that reach every edge: small, negative, around 2^31, 2^63 and past them
EDGE_INTS = st.one_of(st.integers(-3, 40), st.sampled_from([2**31 - 1, 2**31, 2**62, 2**63 - 1, 2**63, 2**64, -(2**63) - 1]),
                      st.integers())
# what int() reads but MiniMalloc's CSV does not hold: signs, spaces, underscores, other scripts' digits
ODD_DIGITS = st.sampled_from(["1_000", "+8", " 8", "8 ", " 8 ", "\t8", "\u0663", "\u0661\u0662", "\uff18", "\u0968", "8\u0663",
                              "0x10", "1e3", "--1", "-", "1-2", "-0", "007"])
# past the csv module's field limit (131,072 characters), and at it
LONG_CELLS = st.sampled_from(["x" * 131_072, "x" * 131_073, "9" * 131_073, '"' + "y" * 140_000 + '"', "0-1 " * 33_000])
# text with the characters an id may not hold: control characters and lone surrogates
ODD_TEXT = st.one_of(st.sampled_from(["\ud800", "a\udfff", "\x00", "a\tb", "\r", "\x85", "\u2028", "\ufeffa", "a\u200bb"]),
                     st.text(st.characters(categories=["Cc", "Cs", "L", "Nd", "Zs"]), max_size=4))
CELL = st.one_of(EDGE_INTS.map(str), st.sampled_from(["", " ", "x", "1.5", "1e3", "0-2", "1-3@0:2", "0-1 2-3", "\ufeff", '"a,b"']),
                 st.text(max_size=6), ODD_DIGITS, ODD_TEXT)
COLUMNS = ["id", "lower", "upper", "size", "alignment", "hint", "offset", "gaps", "begin", "end", "start", "buffer", "buffer_id"]


def read_bytes(data: bytes, ext: str) -> Problem | None:
    """The problem ``data`` holds, usable: its sums hold and it can be written in every format
    that takes it (a lone surrogate in an id once crashed the CSV writer); else one error line."""
    path = DIR / f"fuzz{ext}"
    path.write_bytes(data)
    try:
        problem = read_problem(path)
    except OptplanError as e:
        assert "\n" not in str(e).strip() and str(e).startswith(str(path))
        return None
    lower_bounds(problem)  # sums over what was read must hold too
    problem_to_json(problem).encode("utf-8")
    if len(problem.memories) == 1 and not problem.relative and not problem.concurrent:
        problem_to_csv(problem).encode("utf-8")
    return problem


@FUZZ
@given(st.binary(max_size=200))
def test_any_bytes_as_csv_or_json(data: bytes) -> None:
    read_bytes(data, ".csv")
    read_bytes(data, ".json")


@st.composite
def csv_text(draw: st.DrawFn) -> str:
    """Mostly well-formed MiniMalloc files (so that the checks after parsing are reached too)."""
    required = ["id", draw(st.sampled_from(["lower", "begin", "start"])), draw(st.sampled_from(["upper", "end"])), "size"]
    extra = draw(st.lists(st.sampled_from(["alignment", "hint", "offset", "gaps"]), unique=True, max_size=2))
    header = draw(st.one_of(st.permutations(required + extra), st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=6)))
    small = st.integers(0, 12).map(str)
    cell = st.one_of(small, small, small, CELL)
    ids = st.sampled_from(["a", "b", "c", ""])
    rows = draw(st.lists(st.lists(cell, min_size=len(header) - 1, max_size=len(header) + 1), max_size=5))
    for r in rows:  # an id where the header has it, most of the time
        if "id" in header and header.index("id") < len(r) and draw(st.integers(0, 9)):
            r[header.index("id")] = draw(ids)
    long = [r for r in rows if r]
    if long and draw(st.integers(0, 9)) == 0:  # now and then a field past the limit
        r = draw(st.sampled_from(long))
        r[draw(st.integers(0, len(r) - 1))] = draw(LONG_CELLS)
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    bom = draw(st.sampled_from(["", "\ufeff"]))
    return bom + newline.join([",".join(header)] + [",".join(r) for r in rows]) + newline


@FUZZ
@given(csv_text())
def test_csv_shaped_text(text: str) -> None:
    read_bytes(text.encode("utf-8", "surrogatepass"), ".csv")
    path = DIR / "plan.csv"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        read_placements(path, PLAN_FOR)
    except OptplanError as e:
        assert "\n" not in str(e).strip() and str(e).startswith(str(path))


JSON_VALUE = st.one_of(EDGE_INTS, st.sampled_from([None, True, 1.5, -0.0, "", "m", "a", [], ["m"], ["x", 1], {}, {"start": 0},
                                                    [{"start": 0, "end": 1}], [{"start": 1, "end": 2, "window": [0, 1]}],
                                                    [{"start": 0, "end": 1, "window": [2, 1]}], [[[]]]]))
BUFFER = st.fixed_dictionaries({"id": st.one_of(st.sampled_from(["a", "b", "c"]), JSON_VALUE, ODD_TEXT), "size": EDGE_INTS,
                                "start": EDGE_INTS, "end": EDGE_INTS},
                               optional={k: JSON_VALUE for k in ("alignment", "allowed", "blocked", "fixed_memory",
                                                                 "fixed_offset", "hint_memory", "hint_offset", "gaps")}
                               | {"alignment": EDGE_INTS, "fixed_offset": EDGE_INTS, "fixed_memory": st.sampled_from(["m", "n", "x"])})
MEMORY = st.fixed_dictionaries({"name": st.one_of(st.sampled_from(["m", "n", ""]), ODD_TEXT)},
                               optional={"capacity": st.one_of(st.none(), EDGE_INTS), "alignment": EDGE_INTS,
                                         "weight": st.one_of(st.none(), EDGE_INTS), "base_address": EDGE_INTS})
RELATIVE = st.fixed_dictionaries({"buffer": st.sampled_from(["a", "b", "c"]), "base": st.sampled_from(["a", "b", "c"]),
                                  "delta": EDGE_INTS})


@FUZZ
@given(st.lists(BUFFER, max_size=4), st.lists(MEMORY, max_size=3), st.lists(RELATIVE, max_size=2), st.booleans())
def test_json_shaped_documents(buffers: list, memories: list, relative: list, with_memories: bool) -> None:
    doc: dict = {"format": "optplan-problem", "version": 1, "buffers": buffers, "relative": relative}
    if with_memories:
        doc["memories"] = memories
    read_bytes(json.dumps(doc).encode(), ".json")


@FUZZ
@given(st.lists(st.one_of(ODD_TEXT, st.text(max_size=3)), min_size=1, max_size=4, unique=True))
def test_ids_of_any_text_in_either_format(ids: list[str]) -> None:
    """Otherwise valid buffers: an id is text without control characters (one error line), and what
    is read can be written back."""
    doc = {"format": "optplan-problem", "version": 1,
           "buffers": [{"id": i, "size": 4, "start": k, "end": k + 1} for k, i in enumerate(ids)]}
    read_bytes(json.dumps(doc).encode(), ".json")
    text = "id,lower,upper,size\n" + "".join(f'"{i.replace(chr(34), chr(34) * 2)}",{k},{k + 1},4\n' for k, i in enumerate(ids))
    read_bytes(text.encode("utf-8", "surrogatepass"), ".csv")


ARGS = st.one_of(
    st.sampled_from(["solve", "compare", "validate", "bounds", "info", "convert", "plot", "extract", "export-model",
                     "import-solution", "planners", "-o", "--output", "--planner", "--time-limit", "--workers", "--seed",
                     "--capacity", "--objective", "--json", "--deterministic", "--planners", "--alignment",
                     "--plan-inputs", "--no-plan-outputs", "-h", "--", "p.csv", "x.json", "min-peak", "auto"]),
    EDGE_INTS.map(str), st.sampled_from(["nan", "inf", "-inf", "1e400", "0.5", "-0", "1_000", " 3", "٣"]), st.text(max_size=5))


@FUZZ
@given(argv=st.lists(ARGS, max_size=8))
def test_cli_argument_parsing(argv: list[str], capsys: pytest.CaptureFixture) -> None:
    """A parsed command has checked values; anything else exits 2 (0 for --help) with one line."""
    try:
        args = PARSER.parse_args(argv)
    except SystemExit as e:
        err = capsys.readouterr().err
        assert e.code == 0 or (e.code == 2 and len(err.strip().splitlines()) == 1), (e.code, err)
        return
    capsys.readouterr()
    limit = getattr(args, "time_limit", None)
    assert limit is None or 0 < limit < float("inf")
    assert getattr(args, "seed", None) is None or 0 <= args.seed < 2**31
    assert getattr(args, "workers", None) is None or 1 <= args.workers <= 1024


def teardown_module() -> None:
    for p in DIR.iterdir():
        p.unlink()
    os.rmdir(DIR)
