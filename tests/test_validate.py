"""One passing and one violating plan for every constraint kind the validator checks."""

from __future__ import annotations

import numpy as np
import pytest

from optplan import Buffer, Memory, Placement, Problem, RelativePlacement, validate
from optplan.core.plan import Layout

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


def _layout_case() -> tuple[Problem, Layout]:
    p = Problem.from_columns(["a", "b", "c"], np.array([0, 3, 1]), np.array([4, 6, 5]), np.array([16, 16, 8]),
                             memories=(Memory("sram", capacity=64),))
    return p, Layout(p.columns.ids, p.memory_names, np.zeros(3, np.int64), np.array([0, 16, 32]))


def test_a_layout_reads_as_its_placements_and_is_checked_once(monkeypatch) -> None:
    """A plan as arrays (``Layout``, what the compiled heuristics return) is the same mapping as
    its placements, valid or not; found valid for a problem, it is not checked again for it (auto
    hands its heuristic's plan on), but it is for another problem."""
    import pickle
    import sys

    validate_module = sys.modules["optplan.core.validate"]  # (the package's ``validate`` is the function)

    p, layout = _layout_case()
    same = {"a": Placement("sram", 0), "b": Placement("sram", 16), "c": Placement("sram", 32)}
    assert layout == same and dict(layout.items()) == same and layout["c"] == Placement("sram", 32)
    assert "c" in layout and "z" not in layout and list(layout) == ["a", "b", "c"] and len(layout) == 3
    assert pickle.loads(pickle.dumps(layout)) == layout
    with pytest.raises(ValueError):
        layout.offset[0] = 8  # read-only: a check passed once holds
    bad = Layout(p.columns.ids, p.memory_names, np.zeros(3, np.int64), np.array([0, 8, 32]))
    assert kinds(p, bad) == kinds(p, {**same, "b": Placement("sram", 8)}) == ["overlap"]
    calls = []
    real = validate_module._plain_valid
    monkeypatch.setattr(validate_module, "_plain_valid", lambda *a: calls.append(1) or real(*a))
    assert validate(p, layout) == [] and validate(p, layout) == [] and len(calls) == 1
    other = Problem.from_columns(["a", "b", "c"], np.array([0, 3, 1]), np.array([4, 6, 5]), np.array([16, 16, 8]),
                                 memories=(Memory("sram", capacity=16),))
    assert kinds(other, layout) == ["capacity", "capacity"] and len(calls) == 2


def test_a_layout_on_several_memories_checks_each() -> None:
    p = Problem.from_columns(["a", "b"], np.array([0, 0]), np.array([4, 4]), np.array([16, 16]), memories=MEMS)
    apart = Layout(p.columns.ids, p.memory_names, np.array([0, 1]), np.array([0, 0]))
    together = Layout(p.columns.ids, p.memory_names, np.array([1, 1]), np.array([0, 8]))
    assert validate(p, apart) == [] and kinds(p, together) == ["overlap"]
    from optplan.core.plan import peaks

    assert peaks(p, apart) == peaks(p, dict(apart.items())) == {"sram": 16, "dram": 16}
