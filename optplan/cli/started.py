"""When this program started: the first module the ``optplan`` command imports.

``--time-limit`` counts from the process's start (``core.deadline.process_age``: the interpreter
and the imports count). But a process is older than its program where a shell ran other commands
and then exec'ed this one in its place: ``bash -c "pip install -e . && optplan solve ..."`` runs
the last command so, and the process's age then held the install's two minutes, so that a 20 s
limit had run out before the problem was read (the README's first command, run that way).
"""

from __future__ import annotations

import time

_IMPORTED = time.perf_counter()
_CPU_BEFORE = time.process_time()  # the interpreter's start, in CPU seconds (a shell's wait costs none)
# the process may be this much older than the interpreter's own account before it counts as exec'ed
# into an older process: the interpreter's start and the imports took up to 3-4 wall seconds for
# their 0.6 CPU seconds at load 8, and those seconds count against the limit
EXEC_GAP = 5.0


def program_age() -> float:
    """Seconds since this program started: the process's age, unless that is more than
    ``EXEC_GAP`` beyond the interpreter's own account (the seconds since this module's import
    plus the CPU seconds before it), which it then is."""
    from optplan.core.deadline import process_age

    age = process_age()
    ours = time.perf_counter() - _IMPORTED + _CPU_BEFORE
    return ours if age > ours + EXEC_GAP else age
