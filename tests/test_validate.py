"""One passing and one violating plan for every constraint kind the validator checks."""

from __future__ import annotations

import pytest

from optplan import Buffer, Memory, Placement, Problem, RelativePlacement, validate

MEMS = (Memory("sram", capacity=64, alignment=8), Memory("dram"))


def kinds(problem: Problem, placements: dict[str, Placement]) -> list[str]:
    return [v.kind for v in validate(problem, placements)]


CASES = {
    "overlap": (
        (Buffer("a", 16, 0, 4), Buffer("b", 16, 3, 6)), (),
        {"a": Placement("sram", 0), "b": Placement("sram", 16)},
        {"a": Placement("sram", 0), "b": Placement("sram", 8)},
    ),
    "capacity": (
        (Buffer("a", 16, 0, 4),), (),
        {"a": Placement("sram", 48)},
        {"a": Placement("sram", 56)},
    ),
    "alignment": (
        (Buffer("a", 16, 0, 4, alignment=32),), (),
        {"a": Placement("sram", 32)},
        {"a": Placement("sram", 8)},
    ),
    "allowed": (
        (Buffer("a", 16, 0, 4, blocked=("sram",)),), (),
        {"a": Placement("dram", 3)},
        {"a": Placement("sram", 0)},
    ),
    "fixed": (
        (Buffer("a", 16, 0, 4, fixed_memory="sram", fixed_offset=16),), (),
        {"a": Placement("sram", 16)},
        {"a": Placement("sram", 24)},
    ),
    "relative": (
        (Buffer("a", 32, 0, 4), Buffer("b", 16, 0, 2)), (RelativePlacement("b", "a", 16),),
        {"a": Placement("dram", 8), "b": Placement("dram", 24)},
        {"a": Placement("dram", 8), "b": Placement("sram", 24)},
    ),
    "missing": (
        (Buffer("a", 16, 0, 4),), (),
        {"a": Placement("dram", 0)},
        {},
    ),
    "memory": (
        (Buffer("a", 16, 0, 4),), (),
        {"a": Placement("dram", 0)},
        {"a": Placement("l3", 0)},
    ),
}


@pytest.mark.parametrize("kind", CASES)
def test_each_constraint_kind(kind: str) -> None:
    buffers, relative, good, bad = CASES[kind]
    problem = Problem(buffers, MEMS, relative)
    assert validate(problem, good) == []
    assert kind in kinds(problem, bad)


def test_half_open_lifetimes_do_not_conflict() -> None:
    p = Problem((Buffer("a", 16, 0, 3), Buffer("b", 16, 3, 6)), MEMS)
    assert validate(p, {"a": Placement("sram", 0), "b": Placement("sram", 0)}) == []


def test_zero_size_and_other_memories_never_overlap() -> None:
    p = Problem((Buffer("a", 16, 0, 3), Buffer("z", 0, 0, 3), Buffer("d", 16, 0, 3)), MEMS)
    assert validate(p, {"a": Placement("sram", 0), "z": Placement("sram", 8), "d": Placement("dram", 0)}) == []


def test_relative_members_may_overlap_each_other() -> None:
    # concat inputs placed inside the output share its bytes at the concat step on purpose
    p = Problem((Buffer("out", 32, 2, 5), Buffer("x", 16, 0, 3)), MEMS, (RelativePlacement("x", "out", 16),))
    assert validate(p, {"out": Placement("sram", 0), "x": Placement("sram", 16)}) == []


def test_unknown_buffer_in_plan() -> None:
    p = Problem((Buffer("a", 16, 0, 3),), MEMS)
    assert "unknown" in kinds(p, {"a": Placement("sram", 0), "zz": Placement("sram", 0)})


def test_overlap_message_names_both_buffers() -> None:
    p = Problem((Buffer("a", 16, 0, 4), Buffer("b", 16, 3, 6)), MEMS)
    (v,) = validate(p, {"a": Placement("sram", 0), "b": Placement("sram", 8)})
    assert str(v) == "buffer 'a': overlap: overlaps 'b' in 'sram': time [3, 4) and bytes [8, 16)"
