"""The fenced code blocks of the README and docs/, for the tests that keep them true.

Conventions the pages follow (and ``tests/test_examples.py`` enforces):

- ```` ```console ````: ``$ optplan ...`` lines, each followed by the output it prints (none: it
  only has to succeed); run in order in one directory that holds ``examples/`` and ``models/``.
- ```` ```python ````: run as written; a ```` ```text ```` block right after it (blank lines
  between at most) is what it prints. A first line ``# examples/NAME.py...`` says the block is
  that file, byte for byte.
- A block right after a line ``<!-- file: examples/NAME -->`` is that file's content.
- ```` ```bash ````: shown, not run (installs, hour-long studies, files users bring); its
  ``optplan`` lines are still parsed by the real parser (``tests/test_docs.py``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\s*$")
_FILE = re.compile(r"^<!-- file: (\S+) -->$")


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    output: str | None = None  # a python block: the text block after it
    file: str | None = None  # the repository file the block shows

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i, after_fence = 0, -10
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m[1]:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        block = Block(page, i + 1, m[1], "\n".join(lines[i + 1:end]) + "\n")
        marker = _FILE.match(lines[i - 1]) if i else None
        if marker:
            block.file = marker[1]
        elif block.lang == "python" and block.code.startswith("# examples/"):
            block.file = block.code.split()[1].rstrip(":")
        previous = found[-1] if found else None
        if (block.lang == "text" and previous is not None and previous.lang == "python" and previous.output is None
                and all(not s.strip() for s in lines[after_fence + 1:i])):
            previous.output = block.code
        else:
            found.append(block)
        i, after_fence = end + 1, end
    return found


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


def commands(block: Block) -> list[tuple[str, str]]:
    """``(command, expected output)`` of a console block; of a bash block, its optplan lines."""
    out: list[tuple[str, list[str]]] = []
    for line in block.code.splitlines():
        if block.lang == "console" and line.startswith("$ "):
            out.append((line[2:], []))
        elif block.lang == "console" and out:
            out[-1][1].append(line)
        elif block.lang == "bash":
            for part in line.split("&&"):
                if part.strip().startswith("optplan "):
                    out.append((part.strip(), []))
    return [(cmd, "\n".join(text).strip("\n")) for cmd, text in out]


def optplan_args(command: str) -> list[str]:
    """The arguments of an ``optplan ...`` command line (a trailing ``# comment`` dropped)."""
    argv = shlex.split(command, comments=True)
    assert argv and argv[0] == "optplan", command
    return argv[1:]
