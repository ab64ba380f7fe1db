"""The heuristics' kernels come in two forms: plain Python, and the same functions compiled by numba.

The kernels of ``tree_packer``, ``skyline`` and ``recycle_heap`` are plain Python over numpy
arrays, marked ``@kernel``; ``compiled`` hands the very same functions to numba. The Python form
costs 15-400 µs per unit placed (recycle's heap the least, the packers more as the time index
grows), the compiled one 0.5-6 µs, but the first compiled call of a process starts numba and
loads the kernels from its cache: about 0.55 CPU s. So, as the core's sweeps do
(``optplan.core.jit.kernel``), a process runs the Python form (same code, same plans) while numba
is not loaded and its Python work stays within a budget, ``PYTHON_MAX_PLACEMENTS``, counted over
the process rather than per call because heuristics make many passes: ``optplan solve`` on a
handful of buffers never starts numba for its heuristics, and a larger problem loses at most the
budget. A caller that knows it will make many passes says so first (``expect``): hill-climb, the
heuristic stage of ``run``.

Where the install built the kernels ahead of time for these sources (``NATIVE``,
``optplan.core.native``) they load in milliseconds without numba, and every pass runs them: the
budget is for numba's start, which then never comes.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from optplan.core import jit
from optplan.core.native import NativeKernels, observed

F = TypeVar("F", bound=Callable[..., Any])

# numba's options per kernel, by module: what ``compiled`` compiles (each with ``cache=True``)
KERNELS: dict[str, dict[str, dict[str, Any]]] = {}

# unit placements a process runs in Python before it starts numba (``python_pays``). Measured at
# load 5-10 (2 cores): numba's start and loading the packers' kernels from its cache take 0.52-0.57
# CPU s; the Python form places a unit in 90-100 µs with the tree packer on 150-1,500 units (285-350
# on idealloc/G_1's 816), 160-180 with the banked packer, 13-17 with the recycle heap. So 2,000 take
# about 0.2 s: at most that is lost where numba starts anyway, a third of its start. Every heuristic
# on the five buffers of example.12 (hill-climb's full patience on up to six) stays in Python.
PYTHON_MAX_PLACEMENTS = 2_000


class _Budget:
    """Unit placements this process ran in Python so far (threads of the heuristic stage share it)."""

    def __init__(self) -> None:
        self.spent = 0
        self._lock = threading.Lock()

    def take(self, placements: int) -> bool:
        """Spend ``placements`` if they fit in ``PYTHON_MAX_PLACEMENTS``; whether they did."""
        with self._lock:
            if self.spent + placements > PYTHON_MAX_PLACEMENTS:
                return False
            self.spent += placements
            return True

    def fits(self, placements: int) -> bool:
        """Whether ``placements`` more fit in the budget (nothing is spent)."""
        with self._lock:
            return self.spent + placements <= PYTHON_MAX_PLACEMENTS

    def close_unless(self, placements: int) -> None:
        """Spend what is left unless ``placements`` more fit in it."""
        with self._lock:
            if self.spent + placements > PYTHON_MAX_PLACEMENTS:
                self.spent = PYTHON_MAX_PLACEMENTS


_BUDGET = _Budget()
CALLED = ("_pack", "_banked", "_recycle")  # the kernels called from Python (``compiled`` compiles the rest in)


# the kernels built ahead of time, from the files ``compiled`` compiles them from
NATIVE = NativeKernels("optplan_heuristics_native", [str(Path(__file__).with_name(f"{m}.py")) for m in
                                                     ("tree_packer", "skyline", "recycle_heap", "arrays", "compiled")],
                       observed("optplan.heuristics.compiled", CALLED))
# inside ``numba_not_started``: every pass runs in Python while numba is not loaded, whatever the budget
_KEEP_NUMBA_OFF: contextvars.ContextVar[bool] = contextvars.ContextVar("keep_numba_off", default=False)


@contextlib.contextmanager
def numba_not_started() -> Iterator[None]:
    """Run the heuristics inside in Python unless numba is loaded already, past the budget too, and
    spend none of it: for a first look that must stay cheap (``portfolio.quick``). Starting numba
    there cost 0.45 s of a 0.05 s look (a generated pinwheel of 215 units: first-fit-orders' passes
    ran past the budget), while its four Python passes take about 0.1 s."""
    token = _KEEP_NUMBA_OFF.set(True)
    try:
        yield
    finally:
        _KEEP_NUMBA_OFF.reset(token)


def kernel(**options: Any) -> Callable[[F], F]:
    """Mark a function as a kernel: ``compiled`` compiles it with numba's ``options``; the
    function itself stays its pure-Python form, unchanged."""
    def mark(f: F) -> F:
        KERNELS.setdefault(f.__module__, {})[f.__name__] = options
        return f
    return mark


def python_pays(placements: int) -> bool:
    """Whether a pass placing ``placements`` units runs in Python: numba is not loaded in this
    process yet and the Python work so far, with this pass, stays within
    ``PYTHON_MAX_PLACEMENTS`` (then it is counted). While the kernels may not be used
    (``jit.usable``; callers then take their pure-Python references) Python is the only form.
    Built ahead of time, they always run compiled."""
    if NATIVE.load() is not None:  # (the gate still rules: ``usable`` looks at the native module first)
        return not jit.usable("heuristics")
    if not jit.loaded() and (_KEEP_NUMBA_OFF.get() or _BUDGET.take(placements)):  # (first: ``usable`` reads numba's cache)
        return True
    return not jit.usable("heuristics")


def ready(placements: int) -> bool:
    """Whether a kernel can run a pass placing ``placements`` units: in Python within what is left
    of the budget (numba not loaded), or compiled (``jit.usable``). Asked first, the budget spares a
    small problem's run under a time limit from deciding ``usable``, which reads numba's cache."""
    return (not jit.loaded() and (_KEEP_NUMBA_OFF.get() or _BUDGET.fits(placements))) or jit.usable("heuristics")


def expect(placements: int) -> None:
    """A caller is about to make passes placing ``placements`` units in all: if they would not fit
    in what is left of the Python budget, every pass runs compiled from the first (its Python
    passes would only be time lost before numba starts anyway)."""
    _BUDGET.close_unless(placements)


def pick(python: F, placements: int, compiled: bool | None = None) -> F:
    """The form of the kernel ``python`` to run for a pass placing ``placements`` units: compiled
    (``compiled`` True), Python (False), or as ``python_pays`` decides (None)."""
    if compiled is None:
        compiled = not python_pays(placements)
    if not compiled:
        return python
    return getattr(jit.compiled_forms("heuristics"), python.__name__)  # type: ignore[no-any-return]
