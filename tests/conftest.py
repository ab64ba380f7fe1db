"""Shared fixtures: the benchmark instances live in ../shared, never in the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared() -> Path:
    """../shared/benchmarks; tests that need it skip with a clear reason where it is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"benchmark instances not found at {SHARED} (../shared is absent)")
    return SHARED
