"""Kernels compiled ahead of time: a family's numba kernels as a Python extension module, loaded
without numba.

Loading numba and one cached kernel costs a process about 0.6 s (importing numba 0.28 s, its
target context and runtime 0.2-0.27 s), most of what a user waits on an instance the search packs
at once (generated guillotine at 1 MiB: 0.8-1.0 s end to end). The same kernels built into an
extension module with numba's ahead-of-time compiler (``numba.pycc``) at install time load in
milliseconds and run as fast (minimalloc C and E at 1 MiB, one thread: the same nodes, 3-8 % more
nodes per second; the generic x86-64 target, so the file serves any CPU of the platform).

``NativeKernels`` names a family's module, the source files its kernels are made of and what it
exports. ``load`` imports the module built from exactly those sources (their content is in the
file name), or says None: no build, sources changed since, or a numpy whose ABI it does not fit;
the caller then runs numba's just-in-time kernels (``optplan.core.jit``). ``build`` runs at install
(``optplan.warmup``), with numba; the exported functions release the GIL, as the ``nogil``
kernels do, so threads still search side by side.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

_loading = threading.Lock()  # (the search's threads and the heuristics' may ask at once)
# (exported name, the kernel's Python function, its numba signature): made only when building
Export = tuple[str, Callable[..., object], Any]


@dataclass
class NativeKernels:
    """A family's kernels compiled ahead of time: the extension ``name`` (a valid identifier), in
    ``__pycache__`` beside ``sources`` (the files of the kernels' call graph, the first one's folder),
    with the functions ``exports()`` returns (called only by ``build``: it imports numba)."""

    name: str
    sources: Sequence[str]
    exports: Callable[[], list[Export]]
    _module: ModuleType | None = field(default=None, repr=False)
    _looked: bool = field(default=False, repr=False)

    def key(self) -> str:
        """The sources' content, hashed: a file built from other sources is never loaded."""
        digest = hashlib.sha256()
        for path in sorted(self.sources):
            digest.update(Path(path).name.encode() + b"\0" + Path(path).read_bytes() + b"\0")
        return digest.hexdigest()[:20]

    def path(self) -> Path:
        """Where this family's module for the present sources lives (or would)."""
        suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        return Path(self.sources[0]).parent / "__pycache__" / f"{self.name}-{self.key()}{suffix}"

    def load(self) -> ModuleType | None:
        """The module built from the present sources, imported once; None where there is none or
        it does not import (``disabled``: never)."""
        with _loading:
            if not self._looked:
                self._looked = True
                self._module = None if disabled() else _import(self.name, self.path())
        return self._module

    def build(self) -> Path:
        """Compile the exports into the module for the present sources (replacing older builds of
        this family); its path. Needs numba, and a C compiler (as numba's AOT compiler does)."""
        with warnings.catch_warnings():  # pending deprecation since numba 0.57, and still its one AOT compiler
            warnings.simplefilter("ignore")
            from numba.pycc import CC

        target = self.path()
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp, _releasing_gil():
            cc = CC(self.name)
            cc.output_dir = tmp
            cc.verbose = False
            for name, function, signature in self.exports():
                cc.export(name, signature)(function)
            cc.compile()
            built = next(Path(tmp).glob(f"{self.name}*{importlib.machinery.EXTENSION_SUFFIXES[0]}"))
            staged = target.with_name(target.name + ".tmp")
            shutil.copyfile(built, staged)
            os.replace(staged, target)  # a process loading it meanwhile sees the whole file or none
        for old in target.parent.glob(f"{self.name}-*"):
            if old != target:
                old.unlink(missing_ok=True)
        self._looked = False
        return target


def observed(module: str, names: Sequence[str]) -> Callable[[], list[Export]]:
    """Exports of the numba dispatchers ``names`` of ``module``, each with the one signature numba
    compiled it for in this process (``jit.warmup`` builds right after the warm-up ran them)."""
    def exports() -> list[Export]:
        dispatchers = importlib.import_module(module)
        out: list[Export] = []
        for name in names:
            signatures = getattr(dispatchers, name).nopython_signatures
            if len(signatures) != 1:
                raise RuntimeError(f"{name} is compiled for {len(signatures)} signatures, not one: run the warm-up first")
            out.append((name, getattr(dispatchers, name).py_func, signatures[0]))
        return out
    return exports


def disabled() -> bool:
    """``OPTPLAN_NO_NATIVE=1``: the just-in-time kernels only, none loaded or built ahead of time
    (a fresh install's state, for tests; or to compare the two)."""
    return bool(os.environ.get("OPTPLAN_NO_NATIVE"))


def _import(name: str, path: Path) -> ModuleType | None:
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return None
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except ImportError:  # a numpy of another ABI, a truncated file: the just-in-time kernels serve
        return None
    return module


class _releasing_gil:  # noqa: N801 - used as a context manager, named for what it does
    """While building: numba's AOT compiler builds each export's Python wrapper with the GIL held
    throughout; these compile them as ``@njit(nogil=True)`` does, releasing it around the kernel."""

    def __enter__(self) -> None:
        import numba.pycc.compiler as pycc_compiler

        self._module, self._flags = pycc_compiler, pycc_compiler.Flags
        base = self._flags

        class Flags(base):  # type: ignore[misc, valid-type]
            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, **kwargs)
                self.release_gil = True

        setattr(pycc_compiler, "Flags", Flags)  # noqa: B010 - numba's module, restored on exit

    def __exit__(self, *exc: object) -> None:
        setattr(self._module, "Flags", self._flags)  # noqa: B010
