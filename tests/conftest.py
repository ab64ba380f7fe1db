"""Shared fixtures: the benchmark instances live in ../shared, never in the repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Every property test draws the same examples on every run: a random draw once made a brute force run
# for 15+ minutes (test_cpsat_matches_brute_force), and CI must not depend on luck. A test's own
# @settings inherit this.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.load_profile("repeatable")

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared() -> Path:
    """../shared/benchmarks beside the repository: where it is absent the tests that need it skip,
    each saying which path is missing (pytest's -ra summary lists them, so such a run cannot pass
    silently for a full one)."""
    if not SHARED.is_dir():
        pytest.skip(f"benchmark instances not found at {SHARED} (../shared/benchmarks beside the repository)")
    return SHARED


@pytest.fixture(scope="session", autouse=True)
def _compiled_kernels() -> None:
    """The numba kernels compiled (or loaded from numba's on-disk cache) before any test: a test
    with a time limit, in this process or a child, must find them compiled, or it runs without
    them (optplan.core.jit), which tests/test_jit.py checks on purpose."""
    from optplan.warmup import warm

    warm()



