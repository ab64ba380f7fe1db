"""Numba's BLAS probe, skipped where optplan loads its kernels (``skip_blas_probe``). A module of its
own: the kernel gate (``jit``) and the core's own kernels (``compiled``) both call it before numba
loads its array functions, and neither may import the other."""

from __future__ import annotations

import importlib
import sys


def skip_blas_probe() -> None:
    """Load numba's array functions (``numba.np.arraymath``) with its BLAS probe answering "none".
    The probe imports ``scipy.linalg`` wherever SciPy is installed: 0.3-0.9 s of every process that
    loads a kernel (measured here, loading the search's kernels: 0.68-1.34 s with it, 0.37-0.58 s
    without), for inner products that no kernel of optplan takes (``np.dot`` of two 1-D float
    arrays then runs numba's own loop). The probe is put back afterwards: other numba code in the
    process that multiplies matrices still finds SciPy, when it first needs it."""
    if "numba.np.arraymath" in sys.modules:
        return
    import numba.np.linalg as linalg

    probe = linalg.ensure_blas

    def no_blas() -> None:
        raise ImportError("optplan loads numba's array functions without BLAS")

    linalg.ensure_blas = no_blas
    try:
        importlib.import_module("numba.np.arraymath")
    finally:
        linalg.ensure_blas = probe
