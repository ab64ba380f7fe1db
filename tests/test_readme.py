"""The README's examples must stay true."""

from __future__ import annotations

import re

from conftest import REPO

from optplan.formats.native_json import problem_from_json
from optplan.registry import names, solve

README = (REPO / "README.md").read_text()


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_json_example_is_a_valid_problem() -> None:
    (text,) = blocks("json")
    problem = problem_from_json(text, "README.md")
    plan = solve(problem, "greedy-size")
    assert plan.found and plan.placements["x"].offset == plan.placements["z"].offset + 1024


def test_python_examples_run() -> None:
    for code in blocks("python"):  # the planning example and the training extraction
        exec(compile(code, "README.md", "exec"), {})


def test_executorch_example_names_the_real_entry_points() -> None:
    """Lowering through ExecuTorch costs tens of seconds: tests/test_executorch.py runs the same
    ``memory_planning_pass(make_algo(...))`` end to end; here the example compiles and its names exist."""
    (code,) = blocks("py")
    compile(code, "README.md", "exec")
    from optplan.frontends import executorch

    assert "memory_planning_pass(make_algo(" in code
    assert callable(executorch.memory_planning_pass) and callable(executorch.make_algo)


def test_the_readme_names_exactly_the_registered_planners() -> None:
    section = README.split("## What is inside")[1].split("## Command line")[0]
    listed = set(re.findall(r"`([a-z][a-z0-9-]+)`", section)) - {"export-model"}
    assert listed == set(names())
