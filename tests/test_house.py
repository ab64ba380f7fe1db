"""The house: one direction of dependency between optplan's layers (``pyproject.toml``'s
import-linter contract), checked on the package as it is and on a copy with an upward import
planted, which must fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lint(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    script = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_layers_hold() -> None:
    run = _lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 kept, 0 broken" in run.stdout


def test_an_upward_import_breaks_the_build(tmp_path: Path) -> None:
    """The core importing the portfolio (a layer far above it) is reported, naming the import."""
    shutil.copytree(ROOT / "optplan", tmp_path / "optplan", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    errors = tmp_path / "optplan" / "core" / "errors.py"
    errors.write_text(errors.read_text() + "\n\ndef _upward() -> None:\n    from optplan import portfolio  # noqa: F401\n")
    run = _lint(tmp_path)
    assert run.returncode != 0
    assert "optplan.core.errors -> optplan.portfolio" in run.stdout, run.stdout
