"""The ``optplan`` command.

Exit codes: 0 a valid plan was found (or the checked plan is valid), 1 infeasible / no plan /
invalid plan, 2 bad input or usage. Errors are one line on stderr, never a traceback.

``parser`` holds the grammar, ``commands`` (and ``extract``) what each command does, ``report`` the
plan report, ``output`` where it is written. Each command imports its dependencies when it runs.

``command()`` is the program (the console script, ``python -m optplan.cli``): its ``--time-limit``
counts from the process's start, and it leaves with ``os._exit`` once its output is flushed, its
children killed and its temporary directories removed (the interpreter's teardown of numba,
OR-Tools and a million objects took up to a second past the limit). A signal before ``main`` took
over the signals (while this package's imports run) or after it (while leaving) prints one line
and exits 128 + signal, never a KeyboardInterrupt traceback. ``main(argv)`` is the same command
for a caller in Python (tests): it returns the exit code and counts the limit from its call.
"""

from __future__ import annotations

import os
import signal
import sys

from optplan.cli import started  # noqa: F401  # first: when this program started (``started.program_age``)


def _started_as_the_command() -> bool:
    """This process is the ``optplan`` command (its console script, or ``python -m optplan.cli``),
    not a program that imports the package: only then are the process's signals ours from the start."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    if "-m" in argv[1:]:
        k = argv.index("-m", 1)
        return argv[k + 1:k + 2] == ["optplan.cli"]
    return os.path.basename(sys.argv[0]) == "optplan"


def _leave(code: int) -> None:
    """Exit now with ``code``: kill the children and remove the temporary directories of
    ``optplan.core.lifecycle`` (if it was ever imported), skip the interpreter's teardown."""
    lifecycle = sys.modules.get("optplan.core.lifecycle")
    if lifecycle is not None:
        lifecycle.leave_now(code)
    os._exit(code)


def _on_signal(signum: int, frame: object) -> None:
    """A signal before ``main``'s own handling (the imports): nothing to keep; one line, 128 + signal."""
    try:
        os.write(2, b"optplan: interrupted while starting: no plan yet\n")
    finally:
        _leave(128 + signum)


def _on_signal_leaving(signum: int, frame: object) -> None:
    """A signal after ``main`` (flushing, leaving): its output is written; 128 + signal."""
    _leave(128 + signum)


_EARLY = _started_as_the_command()
if _EARLY:  # before the imports below (and numpy's, numba's, ...): a Ctrl-C there is one line, exit 130
    for _sig, _default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        if signal.getsignal(_sig) is _default:  # (one ignored by whoever started us stays ignored)
            signal.signal(_sig, _on_signal)

from collections.abc import Sequence  # noqa: E402

from optplan.cli.output import EXIT_NO_PLAN, EXIT_USAGE, warn  # noqa: E402
from optplan.cli.parser import parser as _parser  # noqa: E402  # (tests/test_fuzz.py parses with it)
from optplan.core.errors import OptplanError, PlannerBug, Refused  # noqa: E402

__all__ = ["command", "main"]


def main(argv: Sequence[str] | None = None, whole_process: bool = False) -> int:
    """Run the command ``argv`` (default: this process's arguments) and return its exit code;
    ``whole_process``: its time limit counts from the process's start (``command()``)."""
    early = signal.getsignal(signal.SIGINT) is _on_signal
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        # building the parser imports numpy: a KeyboardInterrupt inside its C extension's import comes out
        # as an ImportError with a traceback, so until the arguments are parsed a Ctrl-C stays _on_signal's line
        args = _parser(argv).parse_args(argv)
        if early:  # within the command, a Ctrl-C is a KeyboardInterrupt (or the solve's own handling)
            signal.signal(signal.SIGINT, signal.default_int_handler)
        args.argv = argv  # a study records how it was started
        args.whole_process = whole_process
        if getattr(args, "output", None):  # a bad output path fails now, not after the work
            from optplan.formats.output import check_output

            check_output(args.output, args.output_kind)
        return args.run(args)
    except Refused as e:  # a planner that declines the problem (too large): no plan, not a usage error
        warn(f"optplan: error: {e}")
        return EXIT_NO_PLAN
    except OptplanError as e:
        warn(f"optplan: error: {e}")
        return EXIT_USAGE
    except PlannerBug as e:
        warn(f"optplan: internal error: {e}")
        return EXIT_NO_PLAN
    except KeyboardInterrupt as e:  # before the solve started (reading): nothing to keep
        warn("optplan: interrupted: nothing written")
        return getattr(e, "code", 130)
    finally:
        if early:
            signal.signal(signal.SIGINT, _on_signal)


def command() -> None:
    """The program: ``main`` with the limit counted from the process's start, then the fast exit
    (see the module's docstring)."""
    try:
        code = main(whole_process=True)
    except SystemExit as e:  # argparse: --help, --version, a usage error
        if isinstance(e.code, str):
            warn(e.code)
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is _on_signal:
            signal.signal(sig, _on_signal_leaving)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what was not read is lost anyway
            pass
    _leave(code)
