"""Where benchmark instances live: models/ here, ../shared/benchmarks beside the repository
(read there, never copied in)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "benchmarks"


def find(groups: list[str], names: list[str] | None = None) -> list[Path]:
    """Instance files of the given groups ("models", "minimalloc", "idealloc"), in that order,
    optionally only those whose stem (before the first dot) or file name is in ``names``."""
    files: list[Path] = []
    for group in groups:
        if group == "models":
            files += sorted(f for f in (ROOT / "models").glob("*.json") if f.name != "summary.json")
        else:
            files += sorted((SHARED / group).glob("*.csv"))
    if names:
        files = [f for f in files if f.stem.split(".")[0] in names or f.name in names]
    return files
