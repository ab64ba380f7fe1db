"""optplan: optimal static memory plans for machine-learning models."""

from optplan.bounds import lower_bounds
from optplan.errors import OptplanError, ProblemError
from optplan.frontends.training import extract_training  # torch is imported when it is called
from optplan.plan import Placement, Plan, Status
from optplan.planners import solve
from optplan.problem import Buffer, Gap, Memory, Problem, RelativePlacement
from optplan.validate import validate

__all__ = ["Buffer", "Gap", "Memory", "OptplanError", "Placement", "Plan", "Problem", "ProblemError",
           "RelativePlacement", "Status", "extract_training", "lower_bounds", "solve", "validate"]
__version__ = "0.1.0"
