"""Concurrent lifetimes (vector clocks): format, conflicts, validator, bounds and every planner
that handles them, on the issue's two-stream example and on random small instances checked
against brute force."""

from __future__ import annotations

import csv
import itertools
import json
import random
from dataclasses import replace

import pytest

from optplan import Buffer, Memory, Problem, RelativePlacement, registry, solve
from optplan.cli import main
from optplan.core.bounds import lower_bounds
from optplan.core.buffer import Gap, concurrent
from optplan.core.clocks import clock_graph, heaviest_clique
from optplan.core.errors import OptplanError, ProblemError
from optplan.core.plan import Placement
from optplan.core.validate import validate
from optplan.formats import read_problem, write_problem

EXAMPLE = [Buffer("x", 4096, (0, 0), (2, 0)), Buffer("y", 4096, (0, 0), (0, 2)),
           Buffer("w", 4096, (2, 0), (3, 0)), Buffer("z", 8192, (2, 2), (3, 3))]
EXACT = ("cpsat", "milp-cbc", "auto")


def _pairs(problem):
    g = clock_graph(problem)
    return {frozenset((g.roots[i], g.roots[j])) for i, row in enumerate(g.apart) for j in row}


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


def test_every_planner_but_search_handles_clocks():
    assert set(registry.names()) - set(registry.clock_planners()) == {"search"}


@pytest.mark.parametrize("name", registry.clock_planners())
def test_every_clock_planner_plans_the_example_validly(name):
    p = Problem(EXAMPLE)
    plan = solve(p, name, time_limit=10)
    assert plan.found and not validate(p, plan.placements)
    assert plan.peak["mem"] >= 12288
    if name not in ("naive", "recycle"):  # recycle: z needs a slot of its own, above the two 4 KiB ones
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
    with pytest.raises(OptplanError, match="vector clocks"):
        solve(p, "search")
    assert "search" not in registry.clock_planners() and "auto" in registry.clock_planners()
    path = tmp_path / "p.json"
    write_problem(p, path)
    assert main(["solve", str(path), "--planner", "search"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(["solve", str(path), "-o", str(tmp_path / "plan.json")]) == 0
    assert "plan written to" in capsys.readouterr().out
    assert main(["validate", str(path), str(tmp_path / "plan.json")]) == 0
    assert capsys.readouterr().out.strip().endswith("VALID")


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


def _random_problem(rng, n, streams=2, relative=False, gaps=False, fixed=False):
    """``n`` buffers on ``streams`` streams, sizes and deltas multiples of 16 (alignment 16);
    with ``relative`` some buffers placed relative to an earlier one, with ``gaps`` some buffers
    given a gap of clocks (full, or a window of their lower half), with ``fixed`` the first
    buffer pinned to an offset."""
    bufs, rel = [], []
    for i in range(n):
        s = tuple(rng.randint(0, 4) for _ in range(streams))
        e = tuple(x + rng.randint(0, 3) for x in s)
        if e == s:
            e = (e[0] + 1, *e[1:])
        size = rng.choice([16, 32, 48, 64])
        gap = ()
        if gaps and rng.random() < 0.7 and sum(e) - sum(s) >= 2:
            g0 = tuple(rng.randint(a, b) for a, b in zip(s, e))
            g1 = tuple(rng.randint(a, b) for a, b in zip(g0, e))
            if g1 != g0 and (g0, g1) != (s, e):
                gap = (Gap(g0, g1, None if rng.random() < 0.5 else (0, size // 2)),)
        pin = 16 * rng.randint(0, 3) if fixed and i == 0 else None
        bufs.append(Buffer(f"b{i}", size, s, e, alignment=16, gaps=gap, fixed_offset=pin))
        if relative and i and rng.random() < 0.3:
            rel.append(RelativePlacement(f"b{i}", f"b{rng.randrange(i)}", 16 * rng.randint(-2, 3)))
    return Problem(bufs, (Memory("mem", alignment=16),), rel)


def _spans(b, offset):
    """Independent of the library: the clock spans in which ``b`` holds bytes, as absolute rectangles."""
    out, t = [], b.start
    for g in b.gaps:
        if t != g.start:
            out.append((t, g.start, offset, offset + b.size))
        if g.window:
            out.append((g.start, g.end, offset + g.window[0], offset + g.window[1]))
        t = g.end
    if t != b.end:
        out.append((t, b.end, offset, offset + b.size))
    return out if b.size else []


def _before(p, q):
    return all(x <= y for x, y in zip(p[1], q[0]))


def _brute_force(p):
    """The lowest peak over every placement of the units on the 16-byte grid (depth first, pruned
    by the best peak found): root offsets from the lowest legal one up."""
    groups = {}
    for b in p.buffers:
        root, rel = b.id, 0
        while any(r.buffer == root for r in p.relative):
            r = next(r for r in p.relative if r.buffer == root)
            root, rel = r.base, rel + r.delta
        groups.setdefault(root, []).append((b, rel))
    units = sorted(groups.values(), key=lambda g: -sum(b.size for b, _ in g))
    best = [sum(max(rel + b.size for b, rel in g) - min(rel for _, rel in g) for g in units) + 16 * len(units)]
    placed = []

    def collides(members, o):
        mine = [r for b, rel in members for r in _spans(b, o + rel)]
        return any(a[2] < c[3] and c[2] < a[3] and not _before(a, c) and not _before(c, a)
                   for other in placed for c in other for a in mine)

    def dfs(k, peak):
        if peak >= best[0]:
            return
        if k == len(units):
            best[0] = peak
            return
        members = units[k]
        low = min(rel for _, rel in members)
        top = max((rel + b.size for b, rel in members if b.size), default=0)
        o = -(low // 16) * 16 if low < 0 else 0
        pinned = next((b.fixed_offset - rel for b, rel in members if b.fixed_offset is not None), None)
        while max(peak, o + top) < best[0] and (pinned is None or o <= pinned):
            if pinned is not None and o < pinned:
                o = pinned
            if not collides(members, o):
                placed.append([r for b, rel in members for r in _spans(b, o + rel)])
                dfs(k + 1, max(peak, o + top))
                placed.pop()
            o += 16

    dfs(0, 0)
    return best[0]


@pytest.mark.parametrize("seed", range(4))
def test_exact_planners_match_brute_force_on_small_two_stream_instances(seed):
    p = _random_problem(random.Random(seed), 6)
    optimum = _brute_force(p)
    assert lower_bounds(p).lower["mem"] <= optimum
    for name in ("cpsat", "milp-cbc"):
        plan = solve(p, name, time_limit=20)
        assert plan.status.value == "OPTIMAL" and plan.peak["mem"] == optimum, name
    assert solve(p, "auto", time_limit=10).peak["mem"] == optimum


HEURISTICS = [n for n in registry.clock_planners() if n in registry.heuristic_names()]


@pytest.mark.parametrize("seed", range(6))
def test_relative_placements_and_gaps_with_clocks_against_brute_force(seed):
    """Every planner that handles clocks on two-stream instances with relative placements and gaps
    of clocks (odd seeds: a buffer pinned to a fixed offset too): the validator accepts each plan, none beats the brute-force optimum, the bound does
    not pass it, and the exact models reach it."""
    rng = random.Random(100 + seed)
    p = _random_problem(rng, 5, relative=True, gaps=True, fixed=seed % 2 == 1)
    while not (p.relative and any(b.gaps for b in p.buffers)):
        p = _random_problem(rng, 5, relative=True, gaps=True, fixed=seed % 2 == 1)
    optimum = _brute_force(p)
    assert lower_bounds(p).lower["mem"] <= optimum
    for name in HEURISTICS:
        plan = solve(p, name)
        assert plan.found and not validate(p, plan.placements), name
        assert plan.peak["mem"] >= optimum, name
    for name in ("cpsat", "milp-cbc"):
        plan = solve(p, name, time_limit=20)
        assert plan.status.value == "OPTIMAL" and plan.peak["mem"] == optimum, name
    assert solve(p, "auto", time_limit=10).peak["mem"] == optimum


def test_recycle_reuses_a_slot_only_after_its_user_in_every_stream():
    """memonger's DAG case: b follows a on stream 0 and takes its slot; c runs on stream 1 meanwhile
    and needs its own; d waits for both a and c (clock [1, 1]) and takes the first slot again."""
    p = Problem([Buffer("a", 64, (0, 0), (1, 0)), Buffer("b", 64, (1, 0), (2, 0)),
                 Buffer("c", 64, (0, 0), (0, 1)), Buffer("d", 64, (1, 1), (1, 2))])
    plan = solve(p, "recycle")
    at = {k: v.offset for k, v in plan.placements.items()}
    assert at["a"] == 0 and at["c"] == 64 and at["d"] in (0, 64) and at["b"] != at["c"]
    assert plan.stats["kept_bytes"] == {"mem": 128} and not validate(p, plan.placements)
    assert plan.peak["mem"] == 128 == lower_bounds(p).lower["mem"]


def test_a_gap_of_clocks_frees_the_bytes_for_a_buffer_that_fits_in_it():
    """Gaps keep MiniMalloc's meaning on a span of clocks: g is idle from [1, 0] to [2, 0] (stream 0),
    and h runs inside that span, so they may share bytes; k (stream 1) is concurrent with both."""
    g = Buffer("g", 64, (0, 0), (3, 0), gaps=(Gap((1, 0), (2, 0)),))
    h = Buffer("h", 64, (1, 0), (2, 0))
    k = Buffer("k", 64, (0, 0), (0, 1))
    p = Problem([g, h, k])
    assert _pairs(p) == {frozenset("gk"), frozenset("hk")}
    assert validate(p, {"g": Placement("mem", 0), "h": Placement("mem", 0), "k": Placement("mem", 64)}) == []
    (v,) = validate(p, {"g": Placement("mem", 0), "h": Placement("mem", 64), "k": Placement("mem", 0)})
    assert v.kind == "overlap" and "[0, 0]->[1, 0]" in v.message
    for name in ("cpsat", "greedy-size", "auto"):
        assert solve(p, name, time_limit=10).peak["mem"] == 128, name
    windowed = Problem([replace(g, gaps=(Gap((1, 0), (2, 0), (0, 32)),)), replace(h, size=32), k])
    plan = solve(windowed, "cpsat", time_limit=10)  # h above g's window: g, h and k need 128 bytes
    assert plan.peak["mem"] == 128 and not validate(windowed, plan.placements)


def test_relative_members_keep_their_own_clocks():
    """o's input i is placed inside o (delta 0) and ends before o starts in every stream: the unit
    (i, o) then conflicts with t only through i, and t may sit on o's bytes after i ends."""
    i = Buffer("i", 64, (0, 0), (1, 0))
    o = Buffer("o", 128, (1, 0), (2, 0))
    t = Buffer("t", 128, (0, 0), (1, 0))
    p = Problem([o, i, t], relative=[RelativePlacement("i", "o", 0)])
    assert solve(p, "cpsat", time_limit=10).peak["mem"] == 192
    ok = {"o": Placement("mem", 0), "i": Placement("mem", 0), "t": Placement("mem", 64)}
    assert validate(p, ok) == []  # t shares o's upper bytes: o starts when t ends
    assert validate(p, dict(ok, t=Placement("mem", 32)))  # t meets i
    for name in HEURISTICS:
        plan = solve(p, name)
        assert plan.found and not validate(p, plan.placements), name


def test_clock_gaps_and_relative_in_json_and_bad_gaps(tmp_path):
    p = Problem([Buffer("g", 64, (0, 0), (3, 1), gaps=(Gap((1, 0), (2, 1), (0, 16)),)), Buffer("h", 16, (1, 0), (2, 0))],
                relative=[RelativePlacement("h", "g", 16)])
    path = tmp_path / "p.json"
    write_problem(p, path)
    q = read_problem(path)
    assert q.buffers == p.buffers and q.relative == p.relative
    with pytest.raises(ProblemError, match="'g'.*field 'gaps'.*vector clock of 2 integers") as e:
        Problem([Buffer("g", 64, (0, 0), (3, 1), gaps=(Gap(1, 2),))])
    assert "\n" not in str(e.value)
    with pytest.raises(ProblemError, match="'g'.*not inside the lifetime"):
        Problem([Buffer("g", 64, (0, 0), (3, 1), gaps=(Gap((1, 0), (2, 2)),))])
    with pytest.raises(ProblemError, match="'g'.*full gaps cover the whole lifetime"):
        Problem([Buffer("g", 64, (0, 0), (3, 1), gaps=(Gap((0, 0), (3, 1)),))])
    with pytest.raises(ProblemError, match="'g'.*follow one another"):
        Problem([Buffer("g", 64, (0, 0), (3, 1), gaps=(Gap((1, 0), (2, 0)), Gap((1, 1), (3, 1))))])


def test_compare_and_study_run_every_default_planner_on_a_clock_problem(tmp_path, capsys):
    path = tmp_path / "p.json"
    write_problem(Problem(EXAMPLE), path)
    assert main(["compare", str(path), "--time-limit", "20"]) == 0
    shown = capsys.readouterr().out
    assert "not run" not in shown and "recycle" in shown and "banked-greedy" in shown
    assert main(["compare", str(path), "--planners", "search,greedy-size", "--json"]) == 0
    docs = {d["planner"]: d for d in json.loads(capsys.readouterr().out)}
    assert docs["search"]["message"] == "not run: does not handle vector clocks" and docs["greedy-size"]["peak"]["mem"] == 12288
    assert main(["compare", str(path), "--planners", "search,recycle"]) == 0
    assert "search: not run: does not handle vector clocks" in capsys.readouterr().out
    out = tmp_path / "study"
    assert main(["study", str(path), "-o", str(out), "--planners", "search,recycle,banked-greedy", "--time-limit", "5"]) == 0
    rows = {r["planner"]: r for r in csv.DictReader((out / "runs.csv").open())}
    assert rows["search"]["message"] == "not run: does not handle vector clocks"
    assert rows["recycle"]["status"] == "FEASIBLE" and rows["banked-greedy"]["status"] == "OPTIMAL"
    assert "not run: does not handle vector clocks" in capsys.readouterr().err


def test_deterministic_clock_models_run_as_every_deterministic_cpsat(monkeypatch):
    """--deterministic on concurrent lifetimes: CP-SAT's vector-clock model gets one worker and a
    deterministic-time budget (several workers do not repeat), charged to the deadline; the plan repeats."""
    from ortools.sat.python import cp_model

    seen = []
    real = cp_model.CpSolver.solve

    def spy(self, model, callback=None):  # type: ignore[no-untyped-def]
        seen.append((self.parameters.num_workers, self.parameters.max_deterministic_time))
        return real(self, model, callback)

    monkeypatch.setattr(cp_model.CpSolver, "solve", spy)
    p = _random_problem(random.Random(7), 30)
    plans = [solve(p, "cpsat", time_limit=2, deterministic=True, seed=1, workers=2) for _ in range(2)]
    assert plans[0].placements == plans[1].placements and plans[0].found
    assert seen and all(workers == 1 and 0 < dtime < 1e9 for workers, dtime in seen)
    seen.clear()
    solve(p, "cpsat", time_limit=2, seed=1, workers=2)  # wall clock: the workers asked for
    assert seen and all(workers == 2 for workers, _ in seen)
