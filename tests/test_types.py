"""The package type-checks: mypy runs here so that CI (which runs only pytest) checks the hints."""

from __future__ import annotations

import os
from pathlib import Path

from mypy import api

REPO = Path(__file__).resolve().parents[1]


def test_mypy_clean() -> None:
    cwd = os.getcwd()
    os.chdir(REPO)  # the [tool.mypy] section of pyproject.toml names the files
    try:
        out, err, code = api.run(["--no-error-summary"])
    finally:
        os.chdir(cwd)
    assert code == 0, f"mypy found errors:\n{out}{err}"
