"""Exact planners; importing this package registers them (the portfolio ``auto`` is in
``optplan.portfolio``, above them)."""

import optplan.heuristics  # noqa: F401 - registered first, whichever package is imported first
from optplan.solvers import cpsat, milp  # noqa: F401
