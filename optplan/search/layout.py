"""What the search's Python code and its kernels share, importable without numba: an ordering's
arrays as one named tuple, the kernel's statuses, and the failed-state table's size.

The kernels (``kernel`` over ``state``, ``pruning`` and ``placing``) import numba; the engine, the
instance builder and the orderings import this instead, so that a process running the search
ahead of time compiled (``compiled``) never loads numba at all.
"""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

# every file of the kernels' call graph: numba's cache key (``kernel``) and the native module's (``compiled``)
CALL_GRAPH = tuple(str(Path(__file__).with_name(f"{m}.py"))
                   for m in ("kernel", "state", "pruning", "placing", "overlaps", "skyline", "layout"))

FOUND, INFEASIBLE, LIMIT = 1, 0, 2  # kernel.search's statuses

Arrays = namedtuple("Arrays", ["size", "s0", "s1", "pp", "ps0", "ps1", "py0", "ph", "mod", "res", "lo", "hi",
                               "fixed", "nb_ptr", "nb_idx", "fx_ptr", "fx_idx", "twin", "nsec"])
Arrays.__doc__ = "An ordering's static arrays (``kernel.search``'s docstring); ``nsec`` the number of sections."


def table_words(n: int, nsec: int) -> int:
    """Random words per hash the failed-state table needs (``zob`` has two rows of this many):
    placed units, component members, last unit placed (+1 for none), sections, L, capacity."""
    return 3 * n + 1 + nsec + 2
