"""Shared fixtures: the benchmark instances live in ../shared, never in the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared() -> Path:
    """../shared/benchmarks, which every checkout (and CI) has beside the repository: where it is
    absent the tests that need it fail, so that a run without it cannot pass for a full one."""
    if not SHARED.is_dir():
        pytest.fail(f"benchmark instances not found at {SHARED}: the tests expect ../shared beside the repository")
    return SHARED
