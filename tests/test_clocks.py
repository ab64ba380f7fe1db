"""Concurrent lifetimes (vector clocks): format, conflicts, validator, bounds and every planner
that handles them, on the issue's two-stream example and on random small instances checked
against brute force."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from optplan import Buffer, Memory, Problem, planners, solve
from optplan.bounds import lower_bounds
from optplan.cli import main
from optplan.clocks import concurrent, heaviest_clique
from optplan.errors import OptplanError, ProblemError
from optplan.formats import read_problem, write_problem
from optplan.plan import Placement
from optplan.validate import validate

EXAMPLE = [Buffer("x", 4096, (0, 0), (2, 0)), Buffer("y", 4096, (0, 0), (0, 2)),
           Buffer("w", 4096, (2, 0), (3, 0)), Buffer("z", 8192, (2, 2), (3, 3))]
EXACT = ("cpsat", "milp-cbc", "auto")


def _pairs(problem):
    return {frozenset((a, b)) for a, others in problem.conflicts.items() for b in others}


def _own_axis(b):
    """Steps read on one axis: the stream the buffer advances in (the error clocks prevent)."""
    k = next(i for i, (s, e) in enumerate(zip(b.start, b.end)) if e > s)
    return b.start[k], b.end[k]


def _axis_overlap(a, b):
    (s0, e0), (s1, e1) = _own_axis(a), _own_axis(b)
    return s0 < e1 and s1 < e0


def test_the_two_stream_example_conflicts_where_one_time_axis_would_be_wrong_both_ways():
    p = Problem(EXAMPLE)
    assert p.concurrent and p.streams == 2
    assert _pairs(p) == {frozenset("xy"), frozenset("yw"), frozenset("wz")}
    x, y, w, z = EXAMPLE
    assert concurrent(y, w) and not _axis_overlap(y, w)  # a missed conflict: y [0, 2) and w [2, 3)
    # a false conflict: a on stream 1 for steps [0, 3), b on stream 0 for [1, 2) after a ended
    a, b = Buffer("a", 1, (0, 0), (0, 3)), Buffer("b", 1, (1, 3), (2, 3))
    assert _axis_overlap(a, b) and not concurrent(a, b)
    assert lower_bounds(p).lower["mem"] == 12288  # the heaviest clique: w and z
    assert solve(p, "cpsat", time_limit=10).peak["mem"] == 12288


@pytest.mark.parametrize("name", [n for n in ("naive", "position-greedy", "greedy-size", "greedy-breadth",
                                              "greedy-conflicts", "linear-scan", "best-fit-heap",
                                              "first-fit-orders", "hill-climb", *EXACT)])
def test_every_clock_planner_plans_the_example_validly(name):
    p = Problem(EXAMPLE)
    plan = solve(p, name, time_limit=10)
    assert plan.found and not validate(p, plan.placements)
    assert plan.peak["mem"] >= 12288
    if name != "naive":
        assert plan.peak["mem"] == 12288


def test_the_validator_rejects_overlapping_concurrent_buffers_and_accepts_ordered_ones():
    p = Problem(EXAMPLE[:4])
    at = {"x": 0, "y": 4096, "w": 0, "z": 4096}  # x and w share bytes (x ends before w starts)
    ok = {k: Placement("mem", v) for k, v in at.items()}
    assert validate(p, ok) == []
    bad = dict(ok, z=Placement("mem", 0))  # z on w's bytes: concurrent
    (v,) = validate(p, bad)
    assert v.kind == "overlap" and {v.buffer, v.message.split("'")[1]} == {"w", "z"}


def test_planners_without_clocks_refuse_and_the_cli_says_so_in_one_line(tmp_path, capsys):
    p = Problem(EXAMPLE)
    for name in ("search", "recycle", "banked-greedy"):
        with pytest.raises(OptplanError, match="vector clocks"):
            solve(p, name)
    assert "search" not in planners.clock_planners() and "auto" in planners.clock_planners()
    path = tmp_path / "p.json"
    write_problem(p, path)
    assert main(["solve", str(path), "--planner", "search"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(["solve", str(path), "-o", str(tmp_path / "plan.json")]) == 0
    assert main(["validate", str(path), str(tmp_path / "plan.json")]) == 0


def test_json_round_trip_schema_and_bad_clocks(tmp_path):
    path = tmp_path / "p.json"
    write_problem(Problem(EXAMPLE), path)
    doc = json.loads(path.read_text())
    assert doc["buffers"][0]["start"] == [0, 0] and doc["buffers"][3]["end"] == [3, 3]
    assert [b.start for b in read_problem(path).buffers] == [b.start for b in EXAMPLE]
    with pytest.raises(ProblemError, match="'w'.*streams"):
        Problem([Buffer("v", 1, (0, 0), (1, 0)), Buffer("w", 1, (0, 0, 0), (1, 1, 1))])
    with pytest.raises(ProblemError, match="'v'.*empty or reversed"):
        Problem([Buffer("v", 1, (2, 0), (1, 3))])
    with pytest.raises(ProblemError, match="'w'.*every buffer needs a vector clock"):
        Problem([Buffer("v", 1, (0, 0), (1, 0)), Buffer("w", 1, 0, 1)])
    assert not Problem([Buffer("v", 1, (0,), (1,))]).concurrent  # one stream is a scalar
    doc["buffers"][0]["end"] = "soon"
    path.write_text(json.dumps(doc))
    with pytest.raises(OptplanError, match="'x'"):
        read_problem(path)


def test_heaviest_clique_is_exact_and_an_odd_cycle_needs_more_than_its_clique():
    rng = random.Random(1)
    for _ in range(30):
        n = rng.randint(1, 9)
        w = [rng.randint(1, 50) for _ in range(n)]
        nb = [set() for _ in range(n)]
        for i, j in itertools.combinations(range(n), 2):
            if rng.random() < 0.5:
                nb[i].add(j)
                nb[j].add(i)
        brute = max(sum(w[i] for i in c) for k in range(1, n + 1) for c in itertools.combinations(range(n), k)
                    if all(j in nb[i] for i, j in itertools.combinations(c, 2)))
        assert heaviest_clique(w, nb) == (brute, True)
    assert heaviest_clique([1] * 5, [set(), set(), set(), set(), set()], node_limit=0)[0] == 1  # greedy stands


def _random_problem(rng, n, streams=2):
    bufs = []
    for i in range(n):
        s = tuple(rng.randint(0, 4) for _ in range(streams))
        e = tuple(x + rng.randint(0, 3) for x in s)
        if e == s:
            e = (e[0] + 1, *e[1:])
        bufs.append(Buffer(f"b{i}", rng.choice([16, 32, 48, 64]), s, e, alignment=16))
    return Problem(bufs, (Memory("mem", alignment=16),))


def _brute_force(p):
    """Lowest peak over all orders of first-fit placement: optimal for interval-free conflict
    graphs too, since some optimal plan is a first-fit packing in some order."""
    best = None
    for order in itertools.permutations(p.buffers):
        placed = {}
        for b in order:
            o = 0
            while True:
                hit = [c for c in placed if c in p.conflicts[b.id] and placed[c] < o + b.size and o < placed[c] + p.buffer(c).size]
                if not hit:
                    break
                o = max(placed[c] + p.buffer(c).size for c in hit)
            placed[b.id] = o
        peak = max((placed[b.id] + b.size for b in p.buffers), default=0)
        best = peak if best is None else min(best, peak)
    return best


@pytest.mark.parametrize("seed", range(4))
def test_exact_planners_match_brute_force_on_small_two_stream_instances(seed):
    p = _random_problem(random.Random(seed), 6)
    optimum = _brute_force(p)
    assert lower_bounds(p).lower["mem"] <= optimum
    for name in ("cpsat", "milp-cbc"):
        plan = solve(p, name, time_limit=20)
        assert plan.status.value == "OPTIMAL" and plan.peak["mem"] == optimum, name
    assert solve(p, "auto", time_limit=10).peak["mem"] == optimum
