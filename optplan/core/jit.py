"""The numba kernels under a time limit: never compile inside one.

Numba compiles a kernel on its first call and keeps the machine code in its on-disk cache
(``__pycache__`` beside the source, or ``$NUMBA_CACHE_DIR``; keyed by the source's content, the
numba version and the CPU); a later process loads it in about a second. Compiling all of optplan's
kernels takes about 60 s of CPU (minutes of wall time on a loaded machine) and cannot be
interrupted. Building the package compiles them (``setup_hooks.py``), ``optplan warmup`` does it
on demand, and when code first asks for a group's kernels (``usable``, ``kernel``) under a
planner's deadline, the gate decides for that group alone (numba is not even imported before
some kernel is wanted: a plan of five buffers needs none):

- compiled (in the cache, or loaded in this process): used; loading counts against the limit;
- no time limit, or a deterministic one (its answer must not depend on the cache): compiled where
  first used, and that time is counted in the plan's seconds;
- a wall-clock limit and not compiled: compiled in a child process if half the time left is at
  least ``COMPILE_MIN_SECONDS`` (killed at that budget; once per process, every registered group
  missing), else not at all; what is still not compiled is done without: the reference
  heuristics and validator in pure Python, no ``search``. The plan's message and
  ``stats["jit"]`` say so (``note``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from optplan.core import native
from optplan.core.deadline import Deadline, planning
from optplan.core.native import NativeKernels
from optplan.core.numba_blas import skip_blas_probe

# group -> (module, its kernels called from Python: compiled means each is in numba's cache). The
# core's own groups are here; a planner family adds its group with ``register`` when its package is
# imported, so this gate never imports a family (``optplan.warmup`` imports them all to compile).
GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "validate": ("optplan.core.compiled", ("any_overlap",)),
    "plan": ("optplan.core.compiled", ("highest",)),  # usage curves of the reports
}
COMPILE_MIN_SECONDS = 60.0  # a child compile is tried when half the time left is at least this
_usable: dict[str, bool] = {}  # decided for this process; a group not in it compiles where first used
_checked: dict[str, Deadline] = {}  # group -> the run (root deadline) that last found it not compiled
_tried_child = False
_deciding = threading.Lock()  # (the heuristics ask from several threads)


def register(group: str, module: str, kernels: tuple[str, ...], warm: Callable[[], None],
             native: NativeKernels | None = None) -> None:
    """Add a family's kernel group: ``module`` defines ``kernels`` (numba dispatchers), and ``warm()``
    compiles or loads every one of them by running the family's code on a small problem.
    ``native``: the same kernels built ahead of time (``optplan.core.native``), which the family
    runs instead where they were built for its present sources; ``warmup`` builds them."""
    GROUPS[group] = (module, kernels)
    _WARMUPS[group] = warm
    if native is not None:
        NATIVE[group] = native


def usable(group: str) -> bool:
    """Whether code may call ``group``'s kernels now (False: a time limit is running and they are
    not compiled; use the pure-Python way). Decided here on the first question of each run (module
    docstring); outside a planner the last decision holds (never asked: compiled where used)."""
    if _usable.get(group):
        return True
    deadline = planning()
    if deadline is None:
        return group not in _usable
    with _deciding:
        return _decide(group, deadline)


def _decide(group: str, deadline: Deadline) -> bool:
    """``usable(group)`` for a planner running on ``deadline``: a group found not compiled is looked
    up again once per run (another process may have compiled it since)."""
    global _tried_child
    if not deadline.limited or deadline.deterministic:
        _usable[group] = True
    elif group not in _usable or _checked.get(group) is not deadline.root:
        _checked[group] = deadline.root
        ok = compiled(group)
        if not ok and not _tried_child and deadline.left() / 2 >= COMPILE_MIN_SECONDS:
            _tried_child = True
            missing = [g for g in GROUPS if not _usable.get(g) and not compiled(g)]
            compile_in_child(missing, deadline.part(deadline.left() / 2))
            ok = compiled(group)
        _usable[group] = ok
    return _usable[group]


# up to this many items a kernel's Python form runs while numba is not loaded yet: starting numba and
# loading a kernel costs about 0.5 CPU s, more than the Python form of a sweep over 50,000 intervals
PYTHON_MAX_ITEMS = 50_000


def kernel(group: str, n: int, python: Callable[..., Any], name: str) -> Callable[..., Any]:
    """The function to run on ``n`` items: ``group``'s compiled ``name`` where it may be used and
    pays (built ahead of time, numba loaded already, or more than ``PYTHON_MAX_ITEMS``), else
    ``python``, the same code.
    (Where Python pays anyway, nothing is decided or imported.)"""
    if (_native(group) is None and n <= PYTHON_MAX_ITEMS and not loaded()) or not usable(group):
        return python
    return getattr(compiled_forms(group), name)  # type: ignore[no-any-return]


def compiled_forms(group: str) -> ModuleType:
    """The module of ``group``'s compiled kernels: the one built ahead of time for its present
    sources, else numba's (imported here: numba starts)."""
    return _native(group) or importlib.import_module(GROUPS[group][0])


def _native(group: str) -> ModuleType | None:
    """``group``'s kernels built ahead of time for its present sources, if it has them."""
    native = NATIVE.get(group)
    return None if native is None else native.load()


def not_compiled() -> list[str]:
    """The groups this process runs without: every registered group, decided now if it was not
    (``usable``; under a wall-clock limit that looks in numba's cache)."""
    return [g for g in list(GROUPS) if not usable(g)]


def loaded() -> bool:
    """Some kernel is loaded in this process: numba's compiler is up, so loading another from the
    cache takes milliseconds (the first one costs about a second of CPU). Looked up in the modules
    as they stand: one another thread is still importing (numba with it) has none loaded yet, and
    waiting for its import would hold up a plan's validation by a third of a second."""
    return any(getattr(getattr(sys.modules.get(module), name, None), "signatures", None)
               for module, names in list(GROUPS.values()) for name in names)


def _kernels(group: str) -> list[object]:
    module, names = GROUPS[group]
    mod = importlib.import_module(module)
    return [getattr(mod, name) for name in names]


def _cached(kernel: object) -> bool:
    """Loaded in this process, or compiled for this code, numba and CPU in numba's on-disk cache
    (read from numba's cache index: the key it would look up, without compiling anything)."""
    if getattr(kernel, "signatures", None):
        return True
    try:
        cache = kernel._cache  # type: ignore[attr-defined]
        index = cache._cache_file._load_index()  # {} when the source or numba changed
        want = cache._index_key(None, kernel.targetctx.codegen())[1:]  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - numba internals moved: say "not compiled" (tests/test_jit.py notices)
        return False
    return any(key[1:] == want for key in index)


def compiled(group: str) -> bool:
    """Every kernel of ``group`` is built ahead of time for its sources, or loaded or in numba's
    on-disk cache for this machine (the ahead-of-time module is looked at first, and the cache's
    directory before numba is imported to read its index: neither needs numba)."""
    if _native(group) is not None:
        return True
    return not _surely_uncached(group) and all(_cached(k) for k in _kernels(group))


def _surely_uncached(group: str) -> bool:
    """Some kernel of ``group`` has no index file where numba would keep it: it is not compiled,
    known without importing numba and the group's kernels only to read their index (1-1.5 s at
    load 4, where a fresh install without its built modules had 3 s for a plan). False whenever
    that is not certain: the group loaded in this process, numba's cache in a user-wide directory
    (a read-only install), or an index file for each kernel (which ``_cached`` then reads)."""
    module, names = GROUPS[group]
    cache = None if module in sys.modules else _cache_path(module)
    if cache is None:
        return False
    try:
        files = os.listdir(cache)
    except OSError:
        return True  # (no directory: nothing was ever cached there)
    indexed = {f.split("-")[0].rpartition(".")[2] for f in files if f.endswith(".nbi")}  # <file>.<kernel>-<line>...
    return not indexed.issuperset(names)


def _cache_path(module: str) -> str | None:
    """The directory where numba caches the kernels of ``module``'s package (a family's kernels live
    in its package's directory), found as numba's locators find it but without importing numba;
    None where numba would use its user-wide directory (sources in a read-only place)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return None
    where = os.path.dirname(os.path.abspath(spec.origin))
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:  # numba's UserProvidedCacheLocator: <dir>/<parent name>_<sha1 of the source directory>
        return os.path.join(user, f"{os.path.basename(where)}_{hashlib.sha1(where.encode()).hexdigest()}")
    if os.access(os.path.join(where, "__pycache__"), os.W_OK) or os.access(where, os.W_OK):
        return os.path.join(where, "__pycache__")  # numba's InTreeCacheLocator
    return None


def key_cache(kernel_file: str, call_graph: Sequence[str]) -> None:
    """Key numba's on-disk cache of the kernels defined in ``kernel_file`` by the content of every
    file of their call graph (``call_graph``: paths, ``kernel_file`` among them). Numba stamps a
    cached kernel with its own file alone, so a change to a function it calls from another file
    would load stale machine code. Call it before the kernels are defined (numba picks a kernel's
    cache locator when it is decorated)."""
    from numba.core import caching

    skip_blas_probe()
    files = tuple(sorted({os.path.abspath(f) for f in (kernel_file, *call_graph)}))
    _CALL_GRAPHS[os.path.abspath(kernel_file)] = files
    if _CallGraphLocator is None:
        _install_locator(caching)


_CALL_GRAPHS: dict[str, tuple[str, ...]] = {}  # kernel file -> every file of its call graph
_CallGraphLocator: Any = None


def _install_locator(caching: Any) -> None:
    """Put a locator before numba's own: for a file named in ``_CALL_GRAPHS`` it finds the cache
    where numba's would, and stamps it with the content of the whole call graph."""
    global _CallGraphLocator
    standard = list(caching.CacheImpl._locator_classes)

    class CallGraphLocator(caching._CacheLocator):
        def __init__(self, inner: Any, files: tuple[str, ...]) -> None:
            self._inner, self._files = inner, files

        def ensure_cache_path(self) -> None:
            self._inner.ensure_cache_path()

        def get_cache_path(self) -> str:
            return self._inner.get_cache_path()

        def get_disambiguator(self) -> str:
            return self._inner.get_disambiguator()

        def get_source_stamp(self) -> object:
            stamps = []
            for f in self._files:
                st = os.stat(f)
                stamps.append(caching._hash_source_file(f, st.st_mtime, st.st_size))
            return tuple(stamps)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            files = _CALL_GRAPHS.get(os.path.abspath(py_file))
            if files is None:
                return None
            for locator in standard:
                inner = locator.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner, files)
            return None

    caching.CacheImpl._locator_classes.insert(0, CallGraphLocator)
    _CallGraphLocator = CallGraphLocator


def compile_in_child(groups: list[str], deadline: Deadline) -> bool:
    """``warmup(groups)`` in a child process (it fills numba's cache), stopped at ``deadline``;
    whether it finished."""
    from optplan.core import lifecycle

    root = str(Path(__file__).resolve().parents[1])  # the optplan this process runs
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    code, stopped = lifecycle.run_child([sys.executable, "-c", f"from optplan.warmup import warm; warm({groups!r})"],
                                        deadline, env=env)
    return code == 0 and not stopped


def note() -> tuple[str, dict[str, object]] | None:
    """What a plan made without some kernels says: (message, ``stats["jit"]``), or None. Only the
    groups decided so far count: one never asked for was not needed."""
    missing = [g for g in GROUPS if _usable.get(g) is False]
    if not missing:
        return None
    return (f"numba kernels not compiled ({', '.join(missing)}): ran without them to keep the time limit; "
            "`optplan warmup` compiles them once", {"not_compiled": missing, "cache": cache_dir()})


def cache_dir() -> str:
    """Where numba keeps the kernels: ``$NUMBA_CACHE_DIR``, else ``__pycache__`` beside the sources
    (or a user-wide directory where those cannot be written); the directories, comma-separated.
    Found without importing numba (a plan made without kernels says it, and had no time for that)."""
    dirs = [_cache_path(module) or "numba's user-wide cache directory" for module, _ in GROUPS.values()]
    return ", ".join(dict.fromkeys(dirs))


def warmup(groups: list[str] | None = None) -> dict[str, float]:
    """Compile (or load) every kernel of ``groups`` (default: every group registered so far) by
    running the code that uses them on small problems, and build a group's kernels ahead of time
    where it has them and they are not built for its present sources (a C compiler's half minute;
    without one they are not, and the JIT serves); seconds per group. Afterwards ``compiled(group)``
    holds. ``optplan.warmup.warm`` registers every family first."""
    out = {}
    for group in groups or list(GROUPS):
        t0 = time.perf_counter()
        _usable[group] = True
        _WARMUPS[group]()
        if group in NATIVE and not native.disabled() and _native(group) is None:
            try:
                NATIVE[group].build()
            except Exception as e:  # noqa: BLE001 - no C compiler, numba's AOT compiler gone: the JIT serves
                print(f"optplan: {group}: kernels not built ahead of time ({type(e).__name__}: {e}); "
                      "numba's just-in-time kernels serve", file=sys.stderr)
        out[group] = time.perf_counter() - t0
    return out


def sample_problem(n: int = 40, seed: int = 0):  # noqa: ANN201 - Problem; imported lazily
    """``n`` buffers with overlapping lifetimes, sizes in 32-byte steps: enough for the search to
    backtrack and restart (its tables grow) and for every heuristic's code path."""
    import random

    from optplan.core.buffer import Buffer
    from optplan.core.problem import Problem

    rng = random.Random(seed)
    out = []
    for i in range(n):
        start = rng.randrange(n // 2)
        out.append(Buffer(f"b{i}", 32 * rng.randint(1, 16), start, start + rng.randint(1, 8)))
    return Problem(tuple(out))


def _warm_validate() -> None:
    import numpy as np

    from optplan.core.compiled import any_overlap

    one = np.arange(4, dtype=np.int64)
    any_overlap(one, one + 2, one, one + 1)


def _warm_plan() -> None:
    import numpy as np

    from optplan.core.compiled import highest

    one = np.arange(4, dtype=np.int64)
    highest(one, one + 1, one, 5)


_WARMUPS: dict[str, Callable[[], None]] = {"validate": _warm_validate, "plan": _warm_plan}
_SWEEPS = [str(Path(__file__).with_name(f)) for f in ("sweeps.py", "compiled.py")]  # the core kernels' sources
NATIVE: dict[str, NativeKernels] = {  # group -> its kernels built ahead of time (``register``)
    "validate": NativeKernels("optplan_validate_native", _SWEEPS, native.observed("optplan.core.compiled", ("any_overlap",))),
    "plan": NativeKernels("optplan_plan_native", _SWEEPS, native.observed("optplan.core.compiled", ("highest",))),
}

