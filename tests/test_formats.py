"""CSV and JSON round trips, and one clear message per class of bad file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from optplan import Buffer, Memory, Problem, RelativePlacement, solve, validate
from optplan.core.errors import FormatError, OptplanError, ProblemError
from optplan.formats import read_placements, read_problem, write_plan, write_problem

INSTANCES = ["A", "B", "C", "D", "E"]


@pytest.mark.parametrize("name", INSTANCES)
def test_minimalloc_round_trip(shared: Path, tmp_path: Path, name: str) -> None:
    src = shared / "minimalloc" / f"{name}.1048576.csv"
    problem = read_problem(src)
    write_problem(problem, tmp_path / "p.json")
    write_problem(read_problem(tmp_path / "p.json"), tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text() == src.read_text().replace("\r\n", "\n")
    plan = solve(problem, "greedy-size")
    for ext in ("csv", "json"):
        write_plan(problem, plan, tmp_path / f"plan.{ext}")
        back = read_placements(tmp_path / f"plan.{ext}", problem)
        assert back == plan.placements and validate(problem, back) == []
    lines = (tmp_path / "plan.csv").read_text().split("\n")
    assert lines[0] == "id,lower,upper,size,offset" and "\r" not in lines[1]


def test_json_round_trip_keeps_every_field(tmp_path: Path) -> None:
    p = Problem(
        (Buffer("a", 32, 0, 4, alignment=16, allowed=("sram", "dram"), hint_memory="sram", hint_offset=0),
         Buffer("b", 16, 1, 3, blocked=("sram",), fixed_memory="dram", fixed_offset=64), Buffer("c", 8, 0, 2)),
        (Memory("sram", capacity=128, alignment=16, weight=3, base_address=4096), Memory("dram")),
        (RelativePlacement("c", "a", 16),), {"model": "toy"})
    write_problem(p, tmp_path / "p.json")
    q = read_problem(tmp_path / "p.json")
    assert q.buffers == p.buffers and q.memories == p.memories and q.relative == p.relative
    assert q.metadata == {"model": "toy"}


def test_csv_crlf_inclusive_and_optional_columns(tmp_path: Path) -> None:
    f = tmp_path / "p.csv"
    f.write_bytes(b"id,begin,end,size,alignment,hint,offset\r\nx,0,2,8,4,,\r\ny,3,3,4,,8,16\r\n")
    p = read_problem(f)
    x, y = p.buffers
    assert (x.start, x.end, x.alignment, x.fixed_offset) == (0, 3, 4, None)
    assert (y.start, y.end, y.hint_offset, y.fixed_offset) == (3, 4, 8, 16)


@pytest.mark.parametrize("header", ["buffer,start,end,size", "buffer_id,begin,end,size", "id,lower,end,size"])
def test_csv_minimalloc_header_spellings(tmp_path: Path, header: str) -> None:
    """MiniMalloc reads these spellings; an ``end`` column is inclusive whatever starts the span."""
    f = tmp_path / "p.csv"
    f.write_text(f"{header}\nx,2,4,8\n")
    (x,) = read_problem(f).buffers
    assert (x.id, x.start, x.end, x.size) == ("x", 2, 5, 8)


@pytest.mark.parametrize("content, message", [
    ("", "p.csv: empty file (expected a header line 'id,lower,upper,size')"),
    ("id,lower,size\n", "p.csv: missing required column(s) upper (header: id,lower,size)"),
    ("id,lower,upper,size,colour\n", "p.csv: unknown column(s) colour"),
    ("id,lower,begin,upper,size\n", "p.csv: column(s) lower, begin name the same field twice"),
    ("id,lower,upper,size\na,0,2,lots\n", "p.csv: line 2 (buffer 'a'): field 'size': not an integer: 'lots' "
                                          "(ASCII digits with an optional leading '-', no spaces, '+' or '_')"),
    ("id,lower,upper,size\na,0,2,4,9\n", "p.csv: line 2: more fields than columns (5 fields, 4 columns)"),
    ("id,lower,upper,size\na,0,2,4,\n", "p.csv: line 2: more fields than columns (5 fields, 4 columns) (a trailing comma?)"),
    ("id,lower,upper,size\na,2,2,4\n", "p.csv: buffer 'a': field 'end': lifetime [2, 2) is empty (start must be < end)"),
    ("id,lower,upper,size\na,0,2,4\na,1,3,4\n", "p.csv: buffer 'a': field 'id': duplicate id"),
])
def test_bad_csv(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "p.csv"
    f.write_text(content)
    with pytest.raises((FormatError, ProblemError)) as e:
        read_problem(f)
    assert str(e.value) == str(f).replace("p.csv", "") + message


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    ('{"format": "optplan-problem", "version": 2, "buffers": []}', "$.version: 1 was expected"),
    ('{"format": "optplan-problem", "version": 1, "buffers": [{"id": "a", "size": "big", "start": 0, "end": 1}]}',
     "buffer 'a': field 'size': 'big' is not of type 'integer'"),
    ('{"format": "optplan-problem", "version": 1, "buffers": [{"id": "a", "size": 1, "start": 0}]}',
     "buffer 'a': 'end' is a required property"),
    ('{"format": "optplan-problem", "version": 1, "buffers": [{"id": "a", "size": 1, "start": 0, "end": 1, "allowed": ["x"]}]}',
     "buffer 'a': field 'allowed': unknown memory 'x'"),
])
def test_bad_json(tmp_path: Path, content: str, message: str) -> None:
    f = tmp_path / "p.json"
    f.write_text(content)
    with pytest.raises((FormatError, ProblemError)) as e:
        read_problem(f)
    assert str(e.value) == f"{f}: {message}"


def test_unknown_extension_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"unknown extension '\.txt'"):
        read_problem(tmp_path / "p.txt")
    with pytest.raises(FormatError, match="no such file"):
        read_problem(tmp_path / "p.csv")


def test_multi_memory_plan_cannot_be_csv(tmp_path: Path) -> None:
    p = Problem((Buffer("a", 4, 0, 1),), (Memory("s", capacity=8), Memory("d")))
    with pytest.raises(FormatError, match="a MiniMalloc CSV plan holds one memory"):
        write_plan(p, solve(p, "greedy-size"), tmp_path / "plan.csv")
    assert not (tmp_path / "plan.csv").exists()
    assert list(tmp_path.iterdir()) == []


# -- issue 30: fields of any length, ids that are text, integers as MiniMalloc writes them ------------

LONG = "x" * 200_000  # past the csv module's 131,072 characters


@pytest.mark.parametrize("content, says", [
    (f"id,lower,upper,size\n{LONG},0,2,4\nb,1,3,4\n", "line 2: field 'id' is longer than 131,072 characters"),  # the bulk reader's shape
    (f'id,lower,upper,size\n"{LONG}",0,2,4\n', "line 2: a field is longer than 131,072 characters"),
    (f"id,lower,upper,size,gaps\na,0,9,4,{'0-1 ' * 40_000}\n", "line 2: field 'gaps' is longer than 131,072 characters"),
    (f"id,lower,upper,size\na,0,2,{'9' * 200_000}\n", "line 2: field 'size' is longer than 131,072 characters"),
    (f"id,lower,upper,size,{LONG}\n", "line 1: a field is longer than 131,072 characters"),
], ids=["id", "quoted-id", "gaps", "size", "header"])
@pytest.mark.parametrize("command", ["info", "solve", "validate"])
def test_a_field_past_the_limit_is_one_line_in_every_reader(tmp_path: Path, capsys: pytest.CaptureFixture, content: str,
                                                            says: str, command: str) -> None:
    """One rule for the bulk and the general reader (a long unquoted id went through the bulk one), one line."""
    from optplan.cli import main

    (tmp_path / "ok.csv").write_text("id,lower,upper,size\na,0,2,4\nb,1,3,4\n")
    (tmp_path / "p.csv").write_text(content)
    plan = ["validate", str(tmp_path / "ok.csv"), str(tmp_path / "p.csv")]  # a plan with the long field
    argv = plan if command == "validate" else [command, str(tmp_path / "p.csv")]
    if command == "validate":
        (tmp_path / "p.csv").write_text(content.replace("size\n", "size,offset\n", 1).replace(",4\n", ",4,0\n"))
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    assert f"{tmp_path / 'p.csv'}: " in err


def test_a_field_at_the_limit_is_read(tmp_path: Path) -> None:
    name = "x" * 131_072
    for text in (f"id,lower,upper,size\n{name},0,2,4\n", f'id,lower,upper,size\n"{name}",0,2,4\n'):
        (tmp_path / "p.csv").write_text(text)
        assert read_problem(tmp_path / "p.csv").buffers[0].id == name


@pytest.mark.parametrize("cell", ["1_000", "+8", " 8", "8 ", " 8 ", "\u0663", "8\u0663", "0x8", "8.0", "--8", "-"])
@pytest.mark.parametrize("shape", ["plain", "quoted"])
def test_csv_integers_are_plain_ascii_digits(tmp_path: Path, cell: str, shape: str) -> None:
    """As MiniMalloc writes them: int() would take 1_000 (as 1000), +8, spaces and Arabic-Indic digits."""
    quote = '"' if shape == "quoted" else ""  # quoted: the general reader; plain: the bulk one first
    (tmp_path / "p.csv").write_text(f"id,lower,upper,size\n{quote}a{quote},0,2,{cell}\n")
    with pytest.raises(FormatError) as e:
        read_problem(tmp_path / "p.csv")
    assert str(e.value) == (f"{tmp_path / 'p.csv'}: line 2 (buffer 'a'): field 'size': not an integer: {cell!r} "
                            "(ASCII digits with an optional leading '-', no spaces, '+' or '_')")


def test_csv_integers_that_are_plain_are_read(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text("id,lower,upper,size,alignment\na,-3,0007,8,\nb,-0,1,0,2\n")
    a, b = read_problem(tmp_path / "p.csv").buffers
    assert (a.start, a.end, a.size, a.alignment, b.start, b.alignment) == (-3, 7, 8, 1, 0, 2)
    (tmp_path / "g.csv").write_text("id,lower,upper,size,gaps\na,0,9,4,1-2 3-4@0:2\nb,0,9,4,1-\u0662\n")
    with pytest.raises(FormatError, match=re.escape("line 3 (buffer 'b'): field 'gaps': malformed entry '1-\u0662'")):
        read_problem(tmp_path / "g.csv")


@pytest.mark.parametrize("header, says", [
    ("id,lower,upper,size,", "line 1: column 5 of 5 has no name (a trailing comma?)"),
    ("id,,lower,upper,size", "line 1: column 2 of 5 has no name"),
])
def test_a_nameless_column_says_so(tmp_path: Path, header: str, says: str) -> None:
    (tmp_path / "p.csv").write_text(f"{header}\na,0,2,4\n")
    with pytest.raises(FormatError) as e:
        read_problem(tmp_path / "p.csv")
    assert str(e.value) == f"{tmp_path / 'p.csv'}: {says}"


@pytest.mark.parametrize("name, says", [
    ("\ud800", "contains a lone surrogate (not valid Unicode text), U+D800"),
    ("a\udfffb", "contains a lone surrogate (not valid Unicode text), U+DFFF"),
    ("a\x00", "contains a control character, U+0000"),
    ("a\tb", "contains a control character, U+0009"),
    ("a\nb", "contains a control character, U+000A"),
    ("\x7f", "contains a control character, U+007F"),
    ("a\x85", "contains a control character, U+0085"),
])
def test_ids_and_memory_names_are_text_without_control_characters(tmp_path: Path, name: str, says: str) -> None:
    """Checked on read (JSON, CSV) and by Problem itself: a lone surrogate was accepted, and writing
    the plan as CSV then crashed with UnicodeEncodeError."""
    doc = {"format": "optplan-problem", "version": 1, "buffers": [{"id": name, "size": 4, "start": 0, "end": 1}]}
    (tmp_path / "p.json").write_text(json.dumps(doc))  # (ASCII: the surrogate as \ud800)
    with pytest.raises(ProblemError) as e:
        read_problem(tmp_path / "p.json")
    assert str(e.value) == f"{tmp_path / 'p.json'}: buffer {name!r}: field 'id': {says}" and "\n" not in str(e.value)
    doc = {"format": "optplan-problem", "version": 1, "memories": [{"name": name}],
           "buffers": [{"id": "a", "size": 4, "start": 0, "end": 1}]}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    with pytest.raises(ProblemError, match=re.escape(f"memory {name!r}: field 'name': {says}")):
        read_problem(tmp_path / "p.json")
    with pytest.raises(ProblemError, match=re.escape(f"buffer {name!r}: field 'id': {says}")):
        Problem((Buffer("b", 4, 0, 1), Buffer(name, 4, 0, 1)))
    with pytest.raises(ProblemError, match=re.escape(f"buffer {name!r}: field 'id': {says}")):
        Problem.from_columns(["b", name], np.array([0, 0]), np.array([1, 1]), np.array([4, 4]))
    if any("\ud800" <= c <= "\udfff" for c in name):
        return  # no UTF-8 file holds a lone surrogate: a CSV cannot carry one
    for quoted in (name, f'"{name}"'):  # the bulk reader, and the general one
        (tmp_path / "p.csv").write_text(f"id,lower,upper,size\nb,0,1,4\n{quoted},0,1,4\n")
        with pytest.raises(OptplanError) as e:
            read_problem(tmp_path / "p.csv")
        assert "\n" not in str(e.value)


def test_a_file_is_named_by_a_string_or_a_path() -> None:
    with pytest.raises(FormatError, match="a file is named by a str or a path, got int 5"):
        read_problem(5)  # type: ignore[arg-type]
