"""The core's sweeps (``optplan.core.sweeps``) compiled by numba, cached on disk; imported only
where a plan is large enough for them to pay (``optplan.core.jit`` decides)."""

from numba import njit

from optplan.core import sweeps

any_overlap = njit(cache=True)(sweeps.any_overlap)
highest = njit(cache=True)(sweeps.highest)
