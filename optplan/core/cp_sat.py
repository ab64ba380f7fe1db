"""OR-Tools' CP-SAT module (``ortools.sat.python.cp_model``), imported without importing pandas.

Why: the module imports pandas at its top, for helpers over pandas Series that optplan never calls,
and names pandas' classes at import time only in annotations. pandas' import is about 0.45 s of
the 1.0 s the module costs a fresh process (this project's machine, idle), and every run whose
portfolio loads CP-SAT paid it, on instances that otherwise plan in tenths of a second.

How: the module is imported with a stand-in for pandas in ``sys.modules`` (any class it names is
an empty class), which is removed at once; the module's ``pd`` is then a proxy that imports the
real pandas at its first use, so its pandas helpers work as before, for optplan and for a caller
that uses the same module. Where pandas is imported already, or the module does not import
beside the stand-in (another OR-Tools version), it is imported as usual.
"""

from __future__ import annotations

import importlib
import sys
import threading
import types
from typing import TYPE_CHECKING, Any

MODULE = "ortools.sat.python.cp_model"
_lock = threading.Lock()


class _StandIn(types.ModuleType):
    """pandas while the module imports: every public name an empty class of that name."""

    def __getattr__(self, name: str) -> type:
        if name.startswith("__"):
            raise AttributeError(name)
        made = type(name, (), {})
        setattr(self, name, made)
        return made


class _OnFirstUse(types.ModuleType):
    """The module's ``pd`` after its import: the real pandas, imported when first used."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module("pandas"), name)


def load(name: str = MODULE) -> types.ModuleType:
    """The module ``name`` (CP-SAT's), imported once beside the stand-in (module docstring)."""
    with _lock:
        if name in sys.modules or "pandas" in sys.modules:
            return importlib.import_module(name)
        stand_in = sys.modules["pandas"] = _StandIn("pandas")
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not this version's shape: the usual import below
            sys.modules.pop(name, None)
            module = None
        finally:
            if sys.modules.get("pandas") is stand_in:
                del sys.modules["pandas"]
        if module is None:
            return importlib.import_module(name)
        module.pd = _OnFirstUse("pandas")  # type: ignore[attr-defined]
        return module


if TYPE_CHECKING:  # the checker reads the module itself
    from ortools.sat.python import cp_model
else:
    cp_model = load()
