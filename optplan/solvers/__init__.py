"""Exact planners and the portfolio; importing this package registers them."""

import optplan.heuristics  # noqa: F401 - registered first, whichever package is imported first
from optplan.solvers import cpsat, milp, portfolio  # noqa: F401
