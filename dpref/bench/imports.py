"""Import-time benchmarks: ``import dpref`` against ``import numpy``, and ``dpref --help``
against a bare ``python -c "import numpy"``, each in fresh interpreters of the same run.

Targets: the ``-X importtime`` cumulative time of ``dpref`` at most 2× that of
``numpy``; the wall time of ``dpref --help`` at most 3× that of starting Python and
importing numpy.  A regression here usually means a heavy module (scipy.stats,
scipy.signal, scipy.sparse, sympy, matplotlib, tqdm) is imported at module level
somewhere on the path of ``import dpref`` or of a subcommand's ``add_parser``.

Both sides are measured from bytecode, as any installation runs: numpy's wheel ships
compiled ``.pyc`` files, while an editable checkout under ``PYTHONDONTWRITEBYTECODE=1``
would recompile dpref's sources in every interpreter (about 0.1 s of ``compile`` here) —
so the interpreters run with bytecode writing on, into a temporary
``PYTHONPYCACHEPREFIX``, after one warm-up import of each module.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from dpref.bench import Row, row

__all__ = ["import_bench"]

_REPEAT = 9
"""Fresh interpreters per measurement; baseline and subject alternate, so a burst of load
on a busy machine hits both, and the best of each is compared."""


def _env(cache: str) -> dict[str, str]:
    """The environment of the measured interpreters: bytecode written to ``cache``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def _importtime_us(module: str, env: dict[str, str]) -> int:
    """Cumulative ``-X importtime`` microseconds of ``module`` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1])
    return 0


def _wall(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def import_bench(quick: bool = False) -> list[Row]:
    """``import dpref`` ≤ 2× ``import numpy``; ``dpref --help`` ≤ 3× starting Python with numpy."""
    repeat = 3 if quick else _REPEAT
    numpy_us = dpref_us = 10**12
    numpy_s = help_s = float("inf")
    with tempfile.TemporaryDirectory() as cache:
        env = _env(cache)
        for warm in (["-c", "import numpy, dpref"], ["-m", "dpref", "--help"]):
            subprocess.run([sys.executable, *warm], capture_output=True, check=True, env=env)
        for _ in range(repeat):  # interleaved: baseline, subject, baseline, subject, …
            numpy_us = min(numpy_us, _importtime_us("numpy", env))
            dpref_us = min(dpref_us, _importtime_us("dpref", env))
            numpy_s = min(numpy_s, _wall([sys.executable, "-c", "import numpy"], env))
            help_s = min(help_s, _wall([sys.executable, "-m", "dpref", "--help"], env))
    return [
        row(
            "import dpref (-X importtime, cumulative)",
            dpref_us / 1e6,
            numpy_us / 1e6,
            2.0,
            "s",
            f"baseline: import numpy; best of {repeat} fresh interpreters each",
        ),
        row(
            "dpref --help (wall time)",
            help_s,
            numpy_s,
            3.0,
            "s",
            f'baseline: python -c "import numpy"; best of {repeat}',
        ),
    ]
