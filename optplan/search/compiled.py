"""The search's kernels as its Python code calls them: built ahead of time where the install built
them for these sources (``optplan.core.native``: no numba in the process), else numba's
just-in-time kernels (``kernel``, loaded from numba's cache or compiled).

``kernels`` is one namespace for both: ``kernels.search(...)``, ``kernels.overlap_graph(...)``,
the statuses ``kernels.FOUND``... It picks the implementation on first use, not on import, so that
importing the engine costs nothing (and tests can replace a kernel on it).
"""

from __future__ import annotations

from typing import Any

from optplan.core import jit
from optplan.core.native import Export, NativeKernels
from optplan.search import layout

NAMES = ("search", "overlap_graph", "count_overlaps", "skyline_dive", "move_table")  # called from Python


def exports() -> list[Export]:
    """Each kernel called from Python with the one signature its callers use (tests/test_native.py
    checks it against the just-in-time kernels' after a warm-up)."""
    from numba import types

    from optplan.search import kernel
    from optplan.search.params import Rules

    i64 = types.int64
    vec, mat = types.Array(i64, 1, "C"), types.Array(i64, 2, "C")
    arrays = types.NamedTuple([vec] * 18 + [i64], layout.Arrays)
    rules = types.NamedUniTuple(types.boolean, len(Rules._fields), Rules)
    signatures = {
        "search": types.UniTuple(i64, 3)(arrays, rules, i64, i64, vec, vec, vec, mat),
        "overlap_graph": types.UniTuple(vec, 2)(vec, vec),
        "count_overlaps": i64(vec, vec),
        "skyline_dive": types.none(vec, vec, vec, vec, vec, vec, vec, i64, vec),
        "move_table": types.none(vec, vec),
    }
    return [(name, getattr(kernel, name).py_func, signatures[name]) for name in NAMES]


NATIVE = NativeKernels("optplan_search_native", layout.CALL_GRAPH, exports)


class _Kernels:
    """The namespace (module docstring): filled from the native module or ``kernel`` on first use."""

    FOUND, INFEASIBLE, LIMIT = layout.FOUND, layout.INFEASIBLE, layout.LIMIT

    def __getattr__(self, name: str) -> Any:
        if name not in NAMES:
            raise AttributeError(name)
        module = jit.compiled_forms("search")  # (registered by the package: ``optplan.search``)
        for kernel_name in NAMES:
            self.__dict__.setdefault(kernel_name, getattr(module, kernel_name))
        return self.__dict__[name]


kernels = _Kernels()
