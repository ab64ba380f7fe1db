"""Compiling every numba kernel (``optplan warmup``, the package build, a child compile under a
limit): a top-level concern, since it needs every planner family imported, and the core's kernel
gate (``optplan.core.jit``) never imports a family. Each family registers its kernel group and the
code that warms it when its package is imported."""

from __future__ import annotations

import importlib

from optplan.core import jit

FAMILIES = ("optplan.heuristics", "optplan.search")  # the packages that register kernel groups


def warm(groups: list[str] | None = None) -> dict[str, float]:
    """Compile (or load) the kernels of ``groups`` (default: every family's); seconds per group."""
    for family in FAMILIES:
        importlib.import_module(family)
    return jit.warmup(groups)


def groups() -> list[str]:
    """Every kernel group, the families' included."""
    for family in FAMILIES:
        importlib.import_module(family)
    return list(jit.GROUPS)


if __name__ == "__main__":
    warm()
