"""Every example of the README and docs/ runs as written and prints what its page says it prints
(the conventions are in ``doc_blocks.py``): the commands of the console blocks, the Python blocks,
and the files of ``examples/`` that the pages show."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import REPO, Block, all_blocks, commands, optplan_args

from optplan.formats.native_json import problem_from_json

BLOCKS = all_blocks()
CONSOLE = [b for b in BLOCKS if b.lang == "console"]
PYTHON = [b for b in BLOCKS if b.lang == "python"]
SHOWN_FILES = [b for b in BLOCKS if b.file is not None]
_SECONDS = re.compile(r"\b\d+\.\d+ s\b")


def _normal(text: str) -> str:
    """Output as compared: trailing spaces and blank edges dropped, times (``0.25 s``) as ``<t> s``."""
    return _SECONDS.sub("<t> s", "\n".join(line.rstrip() for line in text.strip("\n").splitlines()))


def _workdir(tmp_path: Path) -> Path:
    """Where an example runs: a fresh directory with the repository's examples/ and models/."""
    for name in ("examples", "models"):
        (tmp_path / name).symlink_to(REPO / name)
    return tmp_path


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def _needs(code: str) -> None:
    for extra in ("torch", "executorch"):
        if re.search(rf"^\s*(import|from) {extra}\b", code, re.M):
            pytest.importorskip(extra)


def test_the_pages_have_examples() -> None:
    """The conventions are used: a change to the parser that finds nothing must not pass silently."""
    assert len(CONSOLE) >= 2 and len(PYTHON) >= 4 and len(SHOWN_FILES) >= 3
    assert sum(b.output is not None for b in PYTHON) >= 4


@pytest.mark.parametrize("block", SHOWN_FILES, ids=lambda b: b.where)
def test_a_shown_file_is_the_file(block: Block) -> None:
    assert block.file is not None
    assert (REPO / block.file).read_text() == block.code, f"{block.where} differs from {block.file}"


@pytest.mark.parametrize("block", CONSOLE, ids=lambda b: b.where)
def test_console_examples_run_and_print_what_the_page_shows(block: Block, tmp_path: Path) -> None:
    cwd = _workdir(tmp_path)
    for command, expected in commands(block):
        if "extract" in command:
            pytest.importorskip("torch")
        run = subprocess.run([sys.executable, "-m", "optplan.cli", *optplan_args(command)], cwd=cwd, env=_env(),
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, f"{block.where}: {command}\n{run.stdout}\n{run.stderr}"
        assert "Warning" not in run.stderr, f"{block.where}: {command} leaks a warning:\n{run.stderr}"
        if expected:
            assert _normal(run.stdout) == _normal(expected), f"{block.where}: {command}"


@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.where)
def test_python_examples_run_and_print_what_the_page_shows(block: Block, tmp_path: Path) -> None:
    _needs(block.code)
    run = subprocess.run([sys.executable, "-c", block.code], cwd=_workdir(tmp_path), env=_env(),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{block.where}\n{run.stdout}\n{run.stderr}"
    if block.output is not None:
        assert _normal(run.stdout) == _normal(block.output), block.where


def test_the_problem_example_is_a_valid_problem() -> None:
    """formats.md's problem: every field it shows means what the page says."""
    (block,) = [b for b in SHOWN_FILES if b.file == "examples/problem.json"]
    problem = problem_from_json(block.code, block.where)
    assert [m.name for m in problem.memories] == ["sram", "dram"]
    from optplan.registry import solve

    plan = solve(problem, "greedy-size")
    assert plan.found and plan.placements["x"].offset == plan.placements["z"].offset + 1024
    assert plan.placements["y"].memory == "dram" and plan.placements["z"] == type(plan.placements["z"])("sram", 0)


def test_extract_prints_no_third_party_warning(tmp_path: Path) -> None:
    """torch's FutureWarning from run_decompositions (``isinstance(treespec, LeafSpec)``) stays inside
    optplan's torch front end; every Python warning stays enabled (``-W default``)."""
    pytest.importorskip("torch")
    run = subprocess.run([sys.executable, "-W", "default", "-m", "optplan.cli", "extract", "examples/mlp.py:make",
                          "-o", "mlp.json"], cwd=_workdir(tmp_path), env=_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert run.stderr == "", run.stderr
