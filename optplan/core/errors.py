"""Exceptions. Every user-facing error carries one line naming what is wrong and where."""


class OptplanError(Exception):
    """Bad input the user can fix (a problem, a plan, a file, an option)."""


class ProblemError(OptplanError):
    """A Problem violates the model's rules (names the buffer and the field)."""


class FormatError(OptplanError):
    """A file could not be read or written in the format its extension names."""


class PlannerBug(RuntimeError):
    """A planner produced a plan the independent validator rejects: a bug, never user error."""
