"""The ``optplan`` command.

Exit codes: 0 a valid plan was found (or the checked plan is valid), 1 infeasible / no plan /
invalid plan, 2 bad input or usage. Errors are one line on stderr, never a traceback.

``parser`` holds the grammar, ``commands`` (and ``extract``) what each command does, ``report`` the
plan report, ``output`` where it is written. Each command imports its dependencies when it runs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from optplan.cli.output import EXIT_NO_PLAN, EXIT_USAGE, warn
from optplan.cli.parser import parser as _parser  # (tests/test_fuzz.py parses with it)
from optplan.core.errors import OptplanError, PlannerBug

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser(argv).parse_args(argv)
    args.argv = argv  # a study records how it was started
    try:
        if getattr(args, "output", None):  # a bad output path fails now, not after the work
            from optplan.formats.output import check_output

            check_output(args.output, args.output_kind)
        return args.run(args)
    except OptplanError as e:
        warn(f"optplan: error: {e}")
        return EXIT_USAGE
    except PlannerBug as e:
        warn(f"optplan: internal error: {e}")
        return EXIT_NO_PLAN
    except KeyboardInterrupt as e:  # before the solve started (reading): nothing to keep
        warn("optplan: interrupted")
        return getattr(e, "code", 130)
