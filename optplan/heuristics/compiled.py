"""The heuristics' kernels compiled by numba, cached on disk: imported only where they pay
(``kernels.pick``; importing this module starts numba).

Every function marked ``@kernel`` in ``tree_packer``, ``skyline`` and ``recycle_heap`` is compiled
from its own code, so the Python form the small problems run and the machine code the large ones
run cannot drift apart. A kernel calls others by their global names, so each module's kernels are
compiled over a copy of its namespace in which those names are the compiled kernels (the Python
functions keep calling each other in Python). A kernel's cache is keyed by every file of the call
graph (``jit.key_cache``): numba alone would notice a change to its own file only.
"""

from __future__ import annotations

import types
from typing import Any

from optplan.core import jit
from optplan.heuristics import arrays, kernels, recycle_heap, skyline, tree_packer

_SOURCES = (tree_packer, skyline, recycle_heap)


def _call_graph(module: types.ModuleType) -> list[str]:
    """The files ``module``'s kernels are compiled from: its own, those of the kernels it imports
    from the other sources, ``arrays`` (the constants they read) and this one (numba's options)."""
    calls = [m for m in _SOURCES if m is module or kernels.KERNELS[m.__name__].keys() & vars(module).keys()]
    return [m.__file__ or "" for m in (*calls, arrays)] + [__file__]


for _module in _SOURCES:
    jit.key_cache(_module.__file__ or "", _call_graph(_module))  # before numba decorates them

from numba import njit  # noqa: E402 - after the cache is keyed


def _compile() -> dict[str, Any]:
    """Every kernel of ``_SOURCES`` as a numba dispatcher (compiled or loaded on its first call),
    by name."""
    compiled: dict[str, Any] = {}
    namespaces = []
    for module in _SOURCES:
        namespace = dict(vars(module))
        for name, options in kernels.KERNELS[module.__name__].items():
            python = getattr(module, name)
            twin = types.FunctionType(python.__code__, namespace, name, python.__defaults__, python.__closure__)
            twin.__qualname__, twin.__module__, twin.__doc__ = python.__qualname__, python.__module__, python.__doc__
            assert name not in compiled, f"two kernels named {name}"
            compiled[name] = njit(cache=True, **options)(twin)
        namespaces.append(namespace)
    for namespace in namespaces:  # the names a kernel calls, bound to the compiled kernels
        namespace.update((name, compiled[name]) for name in namespace.keys() & compiled.keys())
    return compiled


KERNELS = _compile()
globals().update(KERNELS)  # ``compiled._pack`` etc.: the forms ``kernels.pick`` and the kernel group name
_pack, _banked, _recycle = KERNELS["_pack"], KERNELS["_banked"], KERNELS["_recycle"]  # called from Python
