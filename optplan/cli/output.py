"""Where the command writes: plain lines as they are, rich only for what is drawn with it.

A line of text or a JSON document goes straight to the stream; rich (its console, tables, live
progress) is imported when a command first draws a table or a progress bar, not at every start
(``optplan --help``, ``--json``). The streams are looked up at each write (``sys.stdout`` may be
replaced, as pytest's capture does).
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK, EXIT_NO_PLAN, EXIT_USAGE = 0, 1, 2
WIDTH = 200  # columns of a table written to a file or a pipe: never truncate one


def say(text: str) -> None:
    """One line (or several) on stdout, as it is."""
    sys.stdout.write(f"{text}\n")


def warn(text: str) -> None:
    """One line (or several) on stderr, as it is."""
    sys.stderr.write(f"{text}\n")


@cache
def console(stderr: bool = False) -> Console:
    """The rich console of stdout (or stderr), made on first use: tables, progress, the studies' reports."""
    from rich.console import Console

    c = Console(stderr=stderr, highlight=False, soft_wrap=True)
    if not stderr and not c.is_terminal:  # logs and pipes: never truncate a column
        c.width = WIDTH
    return c
