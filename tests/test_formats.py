"""CSV and JSON round trips, and one clear message per class of bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from optplan import Buffer, Memory, Problem, RelativePlacement, solve, validate
from optplan.core.errors import FormatError, ProblemError
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
    ("id,lower,upper,size\na,0,2,lots\n", "p.csv: line 2 (buffer 'a'): field 'size': not an integer: 'lots'"),
    ("id,lower,upper,size\na,0,2,4,9\n", "p.csv: line 2: more fields than columns"),
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
