"""optplan: optimal static memory plans for machine-learning models.

The public names load on first use (module ``__getattr__``): ``import optplan`` costs milliseconds and
pulls in no solver, numba, or even numpy, so a command such as ``optplan --help`` starts at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the checker sees; at run time each name is imported when first read
    from optplan.core.bounds import lower_bounds
    from optplan.core.buffer import Buffer, Gap, Memory, RelativePlacement
    from optplan.core.errors import OptplanError, ProblemError
    from optplan.core.plan import Placement, Plan, Status
    from optplan.core.problem import Problem
    from optplan.core.validate import validate
    from optplan.frontends.training import extract_training
    from optplan.registry import solve

# the package's version: pyproject.toml reads it from here (``[tool.setuptools.dynamic]``), ``optplan --version`` prints it
__version__ = "0.1.0"

# public name -> the module that defines it
_HOMES = {
    "Buffer": "optplan.core.buffer", "Gap": "optplan.core.buffer", "Memory": "optplan.core.buffer",
    "RelativePlacement": "optplan.core.buffer", "OptplanError": "optplan.core.errors", "ProblemError": "optplan.core.errors",
    "Placement": "optplan.core.plan", "Plan": "optplan.core.plan", "Status": "optplan.core.plan",
    "Problem": "optplan.core.problem", "lower_bounds": "optplan.core.bounds", "validate": "optplan.core.validate",
    "extract_training": "optplan.frontends.training",  # torch is imported when it is called
    "solve": "optplan.registry",
}
__all__ = ["Buffer", "Gap", "Memory", "OptplanError", "Placement", "Plan", "Problem", "ProblemError",
           "RelativePlacement", "Status", "extract_training", "lower_bounds", "solve", "validate"]  # (= sorted(_HOMES))


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use (and kept here, so later reads are plain)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'optplan' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
