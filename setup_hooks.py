"""Build hook: numba's compiled kernels made while the package is built (``optplan.core.jit``).

``pip install .`` builds a wheel whose ``__pycache__`` folders hold numba's cache of optplan's
kernels, and ``pip install -e .`` compiles them beside the sources, so the first ``optplan solve``
loads them in about a second instead of compiling for a minute or more (which ``optplan.core.jit`` never
does inside a time limit: it plans without them instead). Numba keys its cache by the sources'
content, its own version and the CPU, so the cache serves where the build ran, with the numba the
build environment resolved (the same one ``pip install`` resolves); anywhere else numba ignores it,
and ``optplan warmup`` compiles the kernels after the install. The same warm-up builds every kernel
ahead of time into extension modules (``optplan.core.native``: a run then never imports numba,
half a second of every run). A failure here only warns.
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
        try:
            subprocess.run([sys.executable, "-c", "from optplan.warmup import warm; warm()"], env=env, cwd=root, check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            self.warn(f"numba kernels not compiled during the build ({e}); `optplan warmup` compiles them")
