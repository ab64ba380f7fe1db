"""Build hook: numba's compiled kernels made while the package is built (``optplan.core.jit``).

``pip install .`` builds a wheel whose ``__pycache__`` folders hold numba's cache of optplan's
kernels, and ``pip install -e .`` compiles them beside the sources, so the first ``optplan solve``
loads them in about a second instead of compiling for a minute or more (which ``optplan.core.jit`` never
does inside a time limit: it plans without them instead). Numba keys its cache by the sources'
content, its own version and the CPU, so the cache serves where the build ran, with the numba the
build environment resolved (the same one ``pip install`` resolves); anywhere else numba ignores it,
and ``optplan warmup`` compiles the kernels after the install. The same warm-up builds every kernel
ahead of time into extension modules (``optplan.core.native``: a run then never imports numba,
half a second of every run). The search's
kernels and all the others build in two processes side by side (a fresh install: 2:53 -> 2:24). A failure here only warns.
``OPTPLAN_NO_PRECOMPILE=1`` skips it.

An editable install also writes the package's bytecode (``pip install .`` does for a wheel's files):
where nothing else writes it (``PYTHONDONTWRITEBYTECODE``, set on many CI images and containers),
every ``optplan`` process compiled its 130-odd modules from source, 0.3-0.4 s of a 1.5 s run on a
small instance.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
from pathlib import Path

from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if os.environ.get("OPTPLAN_NO_PRECOMPILE"):
            return
        root = Path(__file__).resolve().parent if self.editable_mode else Path(self.build_lib).resolve()
        if self.editable_mode:
            compileall.compile_dir(str(root / "optplan"), quiet=1)
        env = dict(os.environ)
        if not self.editable_mode:  # a wheel's files move: only the cache beside them moves with them
            env.pop("NUMBA_CACHE_DIR", None)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))  # keep the build env's
        # two processes side by side: the search's kernels take as long to compile and build as all the others
        halves = ("warm(['search'])", "warm([g for g in groups() if g != 'search'])")
        try:
            runs = [subprocess.Popen([sys.executable, "-c", f"from optplan.warmup import groups, warm; {half}"], env=env,
                                     cwd=root) for half in halves]
            failed = [run.args[-1] for run in runs if run.wait() != 0]
        except OSError as e:
            failed = [str(e)]
        if failed:
            self.warn(f"numba kernels not compiled during the build ({failed}); `optplan warmup` compiles them")
