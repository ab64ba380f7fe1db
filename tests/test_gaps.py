"""MiniMalloc's gaps: spans when a buffer is inactive, or holds only a window of its bytes.

Model checks, the independent validator, both CSV header styles and JSON, the live-load bound,
and heuristics / exact planners against the brute force on tiny random problems with gaps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from brute_force import brute_force_optimum, tiny_problem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optplan import registry
from optplan.cli import main
from optplan.core.bounds import lower_bounds
from optplan.core.buffer import Buffer, Gap, Memory, RelativePlacement
from optplan.core.errors import FormatError, ProblemError
from optplan.core.load import usage_curve
from optplan.core.plan import Placement, Status, peaks
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.formats import read_placements, read_problem, write_problem
from optplan.formats.minimalloc_csv import plan_to_csv, problem_from_csv, problem_to_csv
from optplan.formats.native_json import problem_from_json, problem_to_json

HEURISTICS = ["naive", "peak-stack", "position-greedy", "greedy-size", "greedy-breadth", "greedy-conflicts", "linear-scan",
              "best-fit-heap", "first-fit-orders", "hill-climb", "recycle", "banked-greedy"]


def at(*offsets: tuple[str, int]) -> dict[str, Placement]:
    return {b: Placement("mem", o) for b, o in offsets}


# -- the model ----------------------------------------------------------------------------------

@pytest.mark.parametrize("gaps, message", [
    ((Gap("1", 3),), "start and end must be integers, got '1' and 3"),
    ((Gap(3, 3),), "gap [3, 3) is empty"),
    ((Gap(-1, 2),), "gap [-1, 2) is not inside the lifetime [0, 8)"),
    ((Gap(6, 9),), "gap [6, 9) is not inside the lifetime [0, 8)"),
    ((Gap(2, 4), Gap(3, 5)), "gap [3, 5) starts before the previous gap [2, 4) ends (gaps must be sorted"),
    ((Gap(4, 5), Gap(1, 2)), "gap [1, 2) starts before the previous gap [4, 5) ends"),
    ((Gap(1, 2, (2, 2)),), "gap [1, 2): window [2, 2) is empty (leave the window out for a full gap)"),
    ((Gap(1, 2, (0, 7)),), "gap [1, 2): window [0, 7) must satisfy 0 <= lo < hi <= size 6"),
    ((Gap(1, 2, (-1, 3)),), "window [-1, 3) must satisfy 0 <= lo < hi <= size 6"),
    ((Gap(1, 2, (1, 2, 3)),), "window must be a pair of integers (lo, hi), got (1, 2, 3)"),
    ((Gap(0, 3), Gap(3, 8)), "full gaps cover the whole lifetime [0, 8); a buffer must be active at some step"),
    (((1, 2),), "must hold Gap(start, end, window) entries, got (1, 2)"),
])
def test_bad_gaps_are_one_line_errors_naming_buffer_and_field(gaps, message) -> None:
    with pytest.raises(ProblemError) as e:
        Problem((Buffer("a", 6, 0, 8, gaps=gaps),))
    text = str(e.value)
    assert text.startswith("buffer 'a': field 'gaps': ") and message in text and "\n" not in text


def test_adjacent_and_windowed_gaps_are_accepted_and_lists_become_tuples() -> None:
    b = Buffer("a", 6, 0, 8, gaps=[Gap(1, 2), Gap(2, 4, [1, 3])])
    Problem((b,))
    assert b.gaps == (Gap(1, 2), Gap(2, 4, (1, 3)))
    # a window over the whole lifetime keeps the buffer active: allowed
    Problem((Buffer("w", 6, 0, 8, gaps=(Gap(0, 8, (0, 1)),)),))


def test_footprint_and_unit_pieces() -> None:
    a = Buffer("a", 10, 0, 8, gaps=(Gap(2, 4), Gap(4, 6, (3, 5)), Gap(6, 7, (0, 10))))
    # a window of all bytes is no gap: the last piece merges with the active tail
    assert a.footprint() == ((0, 2, 0, 10), (4, 6, 3, 5), (6, 8, 0, 10))
    assert Buffer("z", 0, 0, 4, gaps=(Gap(1, 2),)).footprint() == ()
    # fast path: a single sized member (plus a zero-size one) keeps its multi-piece footprint
    p = Problem((a, Buffer("e", 0, 0, 8)), relative=(RelativePlacement("e", "a", 20),))
    u = p.unit_of["a"]
    assert u.pieces == a.footprint() and u.top == 10 and u.high == 20
    # two members: the union, strip by strip, with the gap's bytes freed
    b = Buffer("c", 3, 0, 8)
    p = Problem((a, b), relative=(RelativePlacement("c", "a", 4),))
    assert p.unit_of["a"].pieces == ((0, 2, 0, 10), (2, 4, 4, 7), (4, 6, 3, 7), (6, 8, 0, 10))
    # a window over the whole lifetime: the peak still counts offset + size
    w = Problem((Buffer("w", 6, 0, 4, gaps=(Gap(0, 4, (1, 2)),)),)).unit_of["w"]
    assert w.pieces == ((0, 4, 1, 2),) and w.top == 6


def test_overlaps_is_lifetime_overlap() -> None:
    a = Buffer("a", 4, 0, 10, gaps=(Gap(2, 8),))
    assert a.overlaps(Buffer("b", 4, 3, 5))  # lifetimes meet even though a's gap separates them


# -- the validator ------------------------------------------------------------------------------

def test_a_plan_valid_only_thanks_to_a_gap() -> None:
    a, b = Buffer("a", 4, 0, 10, gaps=(Gap(3, 6),)), Buffer("b", 4, 3, 6)
    plan = at(("a", 0), ("b", 0))
    assert validate(Problem((a, b)), plan) == []
    v = validate(Problem((Buffer("a", 4, 0, 10), b)), plan)
    assert [x.kind for x in v] == ["overlap"]


def test_window_overlap_is_caught() -> None:
    p = Problem((Buffer("a", 8, 0, 10, gaps=(Gap(3, 6, (0, 2)),)), Buffer("b", 4, 3, 6)))
    assert validate(p, at(("a", 0), ("b", 2))) == []
    v = validate(p, at(("a", 0), ("b", 1)))
    assert len(v) == 1 and "time [3, 6) and bytes [1, 2)" in v[0].message


def test_a_gap_ending_one_step_too_early_is_caught() -> None:
    p = Problem((Buffer("a", 4, 0, 10, gaps=(Gap(3, 5),)), Buffer("b", 4, 3, 6)))
    v = validate(p, at(("a", 0), ("b", 0)))
    assert len(v) == 1 and "time [5, 6) and bytes [0, 4)" in v[0].message


def test_validator_reads_gaps_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """Independent of the planners' model: it must not need Buffer.footprint or units."""
    p = Problem((Buffer("a", 4, 0, 10, gaps=(Gap(3, 6, (2, 4)),)), Buffer("b", 2, 3, 6)))

    def boom(self):
        raise AssertionError("the validator used the planners' footprint")

    monkeypatch.setattr(Buffer, "footprint", boom)
    assert validate(p, at(("a", 0), ("b", 0))) == []
    assert len(validate(p, at(("a", 0), ("b", 3)))) == 1


# -- formats ------------------------------------------------------------------------------------

HALF_OPEN = "id,lower,upper,size,gaps\na,0,10,8,2-4 6-8@2:6\nb,2,4,5,\nc,6,8,2,\n"
INCLUSIVE = "id,begin,end,size,gaps\na,0,9,8,2-3 6-7@2:6\nb,2,3,5,\nc,6,7,2,\n"


@pytest.mark.parametrize("text", [HALF_OPEN, INCLUSIVE], ids=["lower-upper", "begin-end"])
def test_csv_gaps_in_both_header_styles(tmp_path: Path, text: str) -> None:
    path = tmp_path / "gapped.csv"
    path.write_text(text)
    p = read_problem(path)
    assert p.buffer("a").gaps == (Gap(2, 4), Gap(6, 8, (2, 6)))
    assert p.buffer("b").gaps == () and p.buffer("b").end == 4
    # b sits in a's full gap, c in a's window's free bytes [0, 2)
    assert validate(p, at(("a", 0), ("b", 0), ("c", 0))) == []
    assert problem_to_csv(p) == HALF_OPEN


@pytest.mark.parametrize("entry", ["2-", "x-4", "2-4@1", "2-4@1:x", "2:4", "2-4@1:2:3", "2--"])
def test_malformed_gap_entries_name_file_line_buffer_field(tmp_path: Path, entry: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(f"id,lower,upper,size,gaps\na,0,10,8,\nb,0,10,8,1-2 {entry}\n")
    with pytest.raises(FormatError) as e:
        read_problem(path)
    assert str(e.value) == (f"{path}: line 3 (buffer 'b'): field 'gaps': malformed entry {entry!r} "
                            "(expected lo-hi or lo-hi@wlo:whi)")


def test_csv_gap_outside_lifetime_names_file_buffer_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("id,lower,upper,size,gaps\na,0,10,8,8-12\n")
    with pytest.raises(ProblemError, match=r"bad\.csv: buffer 'a': field 'gaps': gap \[8, 12\) is not inside"):
        read_problem(path)


def test_csv_writes_gaps_only_when_present() -> None:
    assert "gaps" not in problem_to_csv(Problem((Buffer("a", 4, 0, 2),)))
    p = Problem((Buffer("a", 4, 0, 5, fixed_offset=1, gaps=(Gap(1, 2, (0, 1)),)), Buffer("b", 4, 0, 5)))
    assert problem_to_csv(p) == "id,lower,upper,size,gaps,offset\na,0,5,4,1-2@0:1,1\nb,0,5,4,,\n"


def test_round_trips_preserve_gaps(tmp_path: Path) -> None:
    p = problem_from_csv(HALF_OPEN)
    q = problem_from_json(problem_to_json(p))
    assert q.buffers == p.buffers
    assert problem_to_csv(q) == HALF_OPEN
    write_problem(p, tmp_path / "p.json")
    write_problem(read_problem(tmp_path / "p.json"), tmp_path / "p.csv")
    assert read_problem(tmp_path / "p.csv").buffers == p.buffers
    assert '"window"' in (tmp_path / "p.json").read_text()


def test_json_schema_checks_gap_entries() -> None:
    doc = ('{"format": "optplan-problem", "version": 1, "buffers": '
           '[{"id": "a", "size": 4, "start": 0, "end": 4, "gaps": [{"start": 1, "end": 2, "window": [1]}]}]}')
    with pytest.raises(FormatError, match=r"buffer 'a': field 'gaps'"):
        problem_from_json(doc, "p.json")
    with pytest.raises(ProblemError, match=r"p.json: buffer 'a': field 'gaps': gap \[1, 2\): window \[0, 9\)"):
        problem_from_json(doc.replace("[1]", "[0, 9]"), "p.json")


def test_plan_csv_carries_gaps_and_reads_back() -> None:
    p = problem_from_csv(HALF_OPEN)
    plan = registry.solve(p, "greedy-size")
    text = plan_to_csv(p, plan)
    assert text.splitlines()[0] == "id,lower,upper,size,gaps,offset"
    from optplan.formats.minimalloc_csv import placements_from_csv
    placements, disagreements = placements_from_csv(text, "mem", problem=p)
    assert disagreements == [] and validate(p, placements) == []


# -- bounds and peaks ---------------------------------------------------------------------------

def test_live_load_counts_only_window_bytes() -> None:
    # a holds 1 byte while b (4 bytes) lives: b fits right above it
    p = Problem((Buffer("a", 4, 0, 3, gaps=(Gap(1, 2, (0, 1)),)), Buffer("b", 4, 1, 2)))
    assert lower_bounds(p).lower == {"mem": 5}
    assert brute_force_optimum(p)[0] == 5
    # a full gap: nothing of a counts then
    p = Problem((Buffer("a", 4, 0, 3, gaps=(Gap(1, 2),)), Buffer("b", 4, 1, 2)))
    assert lower_bounds(p).lower == {"mem": 4}
    curve = usage_curve(p, at(("a", 0), ("b", 0)), "mem")
    assert curve.times.tolist() == [0, 1, 2, 3] and curve.live.tolist() == [4, 4, 4, 0]


def test_the_bound_counts_offset_plus_size_under_a_window() -> None:
    # a keeps only byte [0, 1) busy all its life, yet reserves 6 bytes
    p = Problem((Buffer("a", 6, 0, 3, gaps=(Gap(0, 3, (0, 1)),)), Buffer("b", 3, 0, 3)))
    assert lower_bounds(p).lower == {"mem": 6}


@pytest.mark.parametrize("name", ["cpsat", "milp-highs", "greedy-size"])
def test_planners_count_offset_plus_size_under_a_window(name: str) -> None:
    # b (aligned to 4) at 0 and a's busy byte at 3 would be a peak of 9, not 4: a at 0, b at 4 is best (7)
    p = Problem((Buffer("a", 6, 0, 3, gaps=(Gap(0, 3, (0, 1)),)), Buffer("b", 3, 0, 3, alignment=4)))
    assert brute_force_optimum(p)[0] == 7
    plan = registry.solve(p, name, time_limit=10, workers=1)
    assert plan.peak == {"mem": 7} and not validate(p, plan.placements)


def test_alignment_rounding_does_not_apply_to_windows() -> None:
    # both at offset 0 is valid (a's window [3, 4) misses b's byte): peak 4; rounding each
    # 1-byte piece up to the alignment 4 would claim 5
    p = Problem((Buffer("a", 4, 0, 2, gaps=(Gap(0, 2, (3, 4)),)), Buffer("b", 1, 0, 2)), (Memory("mem", alignment=4),))
    assert validate(p, at(("a", 0), ("b", 0))) == []
    assert lower_bounds(p).lower["mem"] <= 4 == brute_force_optimum(p)[0]


@pytest.mark.parametrize("name", ["cpsat", "milp-highs"])
def test_identical_windowed_units_stack_by_their_window(name: str) -> None:
    # each keeps one byte busy but reserves 6: offsets 0 and 1 give peak 7 (symmetry breaking
    # must not push them a whole buffer apart)
    p = Problem(tuple(Buffer(b, 6, 0, 3, gaps=(Gap(0, 3, (0, 1)),)) for b in ("a", "b")))
    plan = registry.solve(p, name, time_limit=10, **({"workers": 1} if name == "cpsat" else {}))
    assert plan.status is Status.OPTIMAL and plan.peak == {"mem": 7} == {"mem": brute_force_optimum(p)[0]}


def test_layout_draws_the_real_rectangles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib", reason="plotting needs the optional matplotlib extra")
    import matplotlib.collections
    import matplotlib.pyplot  # noqa: F401 - loads its PolyCollection subclasses before the spy goes in

    from optplan.report.layout import PlanHeader, draw_layout

    drawn = []
    real = matplotlib.collections.PolyCollection

    def spy(verts, *args, **kwargs):
        drawn.extend(verts)
        return real(verts, *args, **kwargs)

    monkeypatch.setattr(matplotlib.collections, "PolyCollection", spy)
    p = Problem((Buffer("a", 4, 0, 6, gaps=(Gap(2, 4, (1, 3)),)),))
    plan = registry.solve(p, "greedy-size")
    draw_layout(p, plan.placements, PlanHeader.of(plan), tmp_path / "l.png")
    boxes = sorted((v[0][0], v[1][0], v[0][1], v[2][1]) for v in drawn)
    assert boxes == [(0, 2, 0, 4), (2, 4, 1, 3), (4, 6, 0, 4)]


# -- planners against the brute force -----------------------------------------------------------

def gapped(data) -> Problem:
    return tiny_problem(lambda lo, hi: data.draw(st.integers(lo, hi)), gaps=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_heuristics_on_gapped_problems_are_valid_or_honest(data) -> None:
    problem = gapped(data)
    brute = brute_force_optimum(problem)
    bound = lower_bounds(problem)
    if brute is not None:  # the bounds hold for every plan, the optimal one included
        assert bound.infeasible is None
        best = peaks(problem, brute[1])
        assert all(bound.lower[m] <= best[m] for m in problem.memory_names), (bound.lower, best)
    for name in HEURISTICS:
        plan = registry.solve(problem, name, **({"iterations": 20} if name == "hill-climb" else {}))
        if plan.found:
            assert not validate(problem, plan.placements)
            assert brute is not None and plan.objective_value >= brute[0], name
            if plan.status is Status.OPTIMAL:
                assert plan.objective_value == brute[0], name
        elif plan.status is Status.INFEASIBLE:
            assert brute is None, name
        else:
            assert plan.status is Status.UNKNOWN and "buffer" in plan.message, name


@pytest.mark.parametrize("name, examples", [("cpsat", 100), ("milp-highs", 40), ("auto", 30)])
def test_exact_planners_reach_the_brute_force_optimum_with_gaps(name: str, examples: int) -> None:
    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(st.data())
    def check(data) -> None:
        problem = gapped(data)
        reference = brute_force_optimum(problem)
        plan = registry.solve(problem, name, time_limit=20, workers=1)  # options a planner lacks are dropped
        if reference is None:
            assert plan.status is Status.INFEASIBLE, (plan.status, plan.message)
            return
        assert plan.status is Status.OPTIMAL, (plan.status, plan.message)
        assert validate(problem, plan.placements) == []
        assert plan.objective_value == reference[0], (plan.objective_value, reference[0])

    check()


def test_auto_hands_gapped_parts_to_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain gaps keep the search exact: ``auto`` proves the optimum through it."""
    calls = []
    real = registry.member

    def spy(problem, name, deadline, **options):
        calls.append(name)
        return real(problem, name, deadline, **options)

    monkeypatch.setattr(registry, "member", spy)  # (the portfolio's members go through it)
    # live load 13 < optimum 15, so no heuristic proves itself and the part goes to the exact stage
    p = Problem((Buffer("b0", 1, 2, 6), Buffer("b1", 3, 2, 6, gaps=(Gap(3, 4),)), Buffer("b2", 6, 3, 5),
                 Buffer("b3", 5, 0, 4), Buffer("b4", 4, 2, 3), Buffer("b5", 1, 5, 7)))
    assert lower_bounds(p).lower == {"mem": 13} and brute_force_optimum(p)[0] == 15
    plan = registry.solve(p, "auto", time_limit=10, workers=1)
    assert plan.status is Status.OPTIMAL and plan.peak == {"mem": 15} and not validate(p, plan.placements)
    assert "search" in calls, (calls, plan.stats)


# -- the command line ---------------------------------------------------------------------------

def test_cli_solves_a_gapped_csv(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = tmp_path / "gapped.csv"
    src.write_text(HALF_OPEN)
    out = tmp_path / "plan.csv"
    assert main(["solve", str(src), "-o", str(out), "--time-limit", "5"]) == 0
    problem = read_problem(src)
    assert validate(problem, read_placements(out, problem)) == []
    assert main(["validate", str(src), str(out)]) == 0
    assert "VALID" in capsys.readouterr().out
