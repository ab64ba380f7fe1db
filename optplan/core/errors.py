"""Exceptions. Every user-facing error carries one line naming what is wrong and where."""


class OptplanError(Exception):
    """Bad input the user can fix (a problem, a plan, a file, an option)."""


class ProblemError(OptplanError):
    """A Problem violates the model's rules (names the buffer and the field)."""


class FormatError(OptplanError):
    """A file could not be read or written in the format its extension names."""


class Refused(OptplanError):
    """A planner declines a valid problem (its model would not fit in memory): no plan, but not the
    user's mistake in writing the command (the CLI exits 1, not 2). Still an OptplanError, so a
    program that catches those catches this."""


class PlannerBug(RuntimeError):
    """A planner produced a plan the independent validator rejects: a bug, never user error."""
