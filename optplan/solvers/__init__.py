"""Exact planners; importing this package registers them (``planners``: cpsat, milp-cbc,
milp-highs; the portfolio ``auto`` is in ``optplan.portfolio``, above them).

By concern: ``cpsat`` (the CP-SAT model of a part, its solve and runner), ``milp`` (the MILP
model and the way back to a plan), ``milp_runners`` (CBC and HiGHS in child processes),
``clock_models`` (both for vector-clock lifetimes), ``selection`` (the staging relaxation),
``outcome`` (what one solver run produced), ``part_plans`` (a part's plan); the loop over parts
is ``optplan.parts.solve_parts``."""

import optplan.heuristics  # noqa: F401 - registered first, whichever package is imported first
from optplan.solvers import planners  # noqa: F401
