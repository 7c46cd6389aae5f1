"""Import-time benchmarks: ``import dpref`` against ``import numpy``, and ``dpref --help``
against a bare ``python -c "import numpy"``, each in fresh interpreters of the same run.

Targets: the ``-X importtime`` cumulative time of ``dpref`` at most 2× that of
``numpy``; the wall time of ``dpref --help`` at most 3× that of starting Python and
importing numpy.  A regression here usually means a heavy module (scipy.stats,
scipy.signal, scipy.sparse, sympy, matplotlib, tqdm) is imported at module level
somewhere on the path of ``import dpref`` or of a subcommand's ``add_parser``.
"""

from __future__ import annotations

import subprocess
import sys
import time

from dpref.bench import Row, row

__all__ = ["import_bench"]

_REPEAT = 9
"""Fresh interpreters per measurement; baseline and subject alternate, so a burst of load
on a busy machine hits both, and the best of each is compared."""


def _importtime_us(module: str) -> int:
    """Cumulative ``-X importtime`` microseconds of ``module`` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1])
    return 0


def _wall(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, capture_output=True, check=True)
    return time.perf_counter() - start


def import_bench(quick: bool = False) -> list[Row]:
    """``import dpref`` ≤ 2× ``import numpy``; ``dpref --help`` ≤ 3× starting Python with numpy."""
    repeat = 3 if quick else _REPEAT
    numpy_us = dpref_us = 10**12
    numpy_s = help_s = float("inf")
    for _ in range(repeat):  # interleaved: baseline, subject, baseline, subject, …
        numpy_us = min(numpy_us, _importtime_us("numpy"))
        dpref_us = min(dpref_us, _importtime_us("dpref"))
        numpy_s = min(numpy_s, _wall([sys.executable, "-c", "import numpy"]))
        help_s = min(help_s, _wall([sys.executable, "-m", "dpref", "--help"]))
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
