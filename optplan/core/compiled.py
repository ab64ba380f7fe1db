"""The core's sweeps (``optplan.core.sweeps``) compiled by numba, cached on disk; imported only
where a plan is large enough for them to pay (``optplan.core.jit`` decides)."""

from optplan.core import jit, sweeps

jit.skip_blas_probe()  # before numba loads its array functions

from numba import njit  # noqa: E402

any_overlap = njit(cache=True)(sweeps.any_overlap)
highest = njit(cache=True)(sweeps.highest)
