"""Issue 30's promises at every edge: the limit counted from the process's start to its exit,
large plans written fast, ``--deterministic`` byte for byte, signals at every moment, and a
refused model that is not a usage error."""

from __future__ import annotations

import json

import pytest

from optplan import Buffer, Memory, Problem, solve
from optplan.core.plan import Layout
from optplan.formats.native_json import plan_to_dict, plan_to_json


def _odd_problem() -> Problem:
    """Ids that JSON escapes (quotes, backslashes, non-ASCII, astral) in two memories."""
    ids = ['a"b', "c\\d", "é", "\U0001f600", "tab ok", "x/y"]
    return Problem(tuple(Buffer(b, k, k + 2, 8 * (k + 1)) for k, b in enumerate(ids)),
                   (Memory("sram", 64), Memory("dr\"am")))


@pytest.mark.parametrize("make", ["dict", "layout", "one"])
def test_the_fast_plan_writer_writes_what_json_dumps_writes(make: str) -> None:
    """The plan file's placements are formatted column by column (a million in about a second,
    not 20): the text is ``json.dumps(plan, indent=1)``'s, byte for byte, for escaped ids, two
    memories, a ``Layout`` and a dict."""
    problem = _odd_problem() if make != "one" else Problem((Buffer("only", 0, 1, 4),))
    plan = solve(problem, "naive")
    placements = plan.placements
    if make == "layout":
        names = problem.memory_names
        placements = Layout(list(placements), names, [names.index(p.memory) for p in placements.values()],
                            [p.offset for p in placements.values()])
    elif make == "dict":
        placements = dict(placements)
    plan.placements = placements  # type: ignore[misc]
    assert plan_to_json(plan) == json.dumps(plan_to_dict(plan), indent=1) + "\n"
