"""optplan: optimal static memory plans for machine-learning models."""

from optplan.core.bounds import lower_bounds
from optplan.core.buffer import Buffer, Gap, Memory, RelativePlacement
from optplan.core.errors import OptplanError, ProblemError
from optplan.core.plan import Placement, Plan, Status
from optplan.core.problem import Problem
from optplan.core.validate import validate
from optplan.frontends.training import extract_training  # torch is imported when it is called
from optplan.registry import solve

__all__ = ["Buffer", "Gap", "Memory", "OptplanError", "Placement", "Plan", "Problem", "ProblemError",
           "RelativePlacement", "Status", "extract_training", "lower_bounds", "solve", "validate"]
__version__ = "0.1.0"
