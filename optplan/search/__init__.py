"""Exact search over canonical solutions, compiled with numba (planner ``search``).

Importing this package registers the planner; ``kernel`` holds the compiled search,
``instance`` the integer arrays it runs on, ``engine`` the portfolio and minimization.
"""

from optplan.search import planner  # noqa: F401
