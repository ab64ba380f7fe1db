"""The instances of a study: files named on the command line, or every problem file under a directory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from optplan.core.errors import OptplanError
from optplan.formats import EXTENSIONS


@dataclass(frozen=True)
class Instance:
    label: str  # "minimalloc/A": the file's folder and the name before its first dot
    path: Path


def is_problem(path: Path) -> bool:
    """A .csv under a directory is a MiniMalloc problem; a .json only when it says it is one
    (directories also hold summaries such as models/summary.json)."""
    if path.suffix.lower() == ".csv":
        return True
    try:
        head = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(head, dict) and head.get("format") == "optplan-problem"


def discover(paths: Sequence[str | Path]) -> tuple[list[Instance], list[Path]]:
    """Instances under ``paths`` in the order given (directories recursively, sorted), and the files
    skipped there because they are not problems. A file named explicitly is always an instance."""
    files: list[Path] = []
    skipped: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(q for q in p.rglob("*") if q.is_file() and q.suffix.lower() in EXTENSIONS):
                (files if is_problem(f) else skipped).append(f)
        elif p.is_file():
            files.append(p)
        else:
            raise OptplanError(f"{p}: no such file or directory")
    first: dict[Path, Path] = {}
    for f in files:
        first.setdefault(f.resolve(), f)  # a file named twice runs once
    files = list(first.values())
    short = [f"{f.parent.name}/{f.name.split('.')[0]}" for f in files]
    labels = [s if short.count(s) == 1 else str(f) for s, f in zip(short, files)]
    return [Instance(label, f) for label, f in zip(labels, files)], skipped
