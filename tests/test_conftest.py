"""Without ../shared the tests that need the benchmarks skip, naming the missing path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_missing_shared_skips_with_the_path(tmp_path: Path) -> None:
    tests = tmp_path / "checkout" / "repo" / "tests"  # ../shared would be tmp_path/checkout/shared
    tests.mkdir(parents=True)
    shutil.copy(REPO / "tests" / "conftest.py", tests)
    (tests / "test_needs_shared.py").write_text("def test_x(shared):\n    assert False\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tests)],
                         capture_output=True, text=True, cwd=tests.parent, timeout=120,
                         env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})  # no third-party plugins: faster
    missing = str(tmp_path / "checkout" / "shared" / "benchmarks")
    assert run.returncode == 0 and "1 skipped" in run.stdout, run.stdout
    assert f"benchmark instances not found at {missing}" in run.stdout
