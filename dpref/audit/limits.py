"""The documented ranges of the audit tools' size parameters (API and CLI alike).

Every size an auditor chooses multiplies the work: a sample is ``T`` floats per side, a
conformance run ``T`` floats kept in memory, an exact audit a dense ``T × draws``
system.  Beyond these ranges the work is not bounded on an 8 GB laptop, so
:func:`~dpref.audit.audit`, :func:`~dpref.audit.conformance.conform.conform`,
:func:`~dpref.audit.exact_audit` and their command lines reject the value with a
:class:`~dpref.errors.ParameterError` naming it, before anything runs.
"""

from __future__ import annotations

from typing import Any

from dpref.errors import ParameterError
from dpref.validation import fmt

__all__ = [
    "CONNECT_TIMEOUT",
    "MAX_CHECKS",
    "MAX_EXACT_HORIZON",
    "MAX_HORIZON",
    "MAX_RUNS",
    "MAX_SAMPLES",
    "MAX_TIMEOUT",
    "MAX_WORKERS",
]

MAX_SAMPLES = 10**9
"""Largest number of samples per side of an audit (the docs' tightest audits use 10^7)."""
MAX_RUNS = 10**6
"""Largest number of conformance runs (each keeps its T outputs in memory; default 2000)."""
MAX_HORIZON = 10**5
"""Largest T of a sampled audit or a conformance check (the docs audit T <= 64)."""
MAX_EXACT_HORIZON = 1024
"""Largest T of an exact (noise-injecting) audit: it solves a dense system of T outputs
by the number of draws (Binary: 0.7 s at T = 256, 8.3 s and 120 MB at T = 1024 on the
2-core machine; the cost grows faster than T²)."""
MAX_CHECKS = 1000
"""Largest number of random verification points of an exact audit (default 4)."""
MAX_TIMEOUT = 86_400.0
"""Largest per-call timeout, seconds (one day per call of the target)."""
MAX_WORKERS = 64
"""Largest number of worker processes of a local Dask cluster (``workers=``/``--workers``);
beyond the cores of one machine more processes only add start-up time and memory."""
CONNECT_TIMEOUT = 10.0
"""Longest wait, in seconds, for an existing Dask scheduler (``scheduler=``/``--scheduler``)
to answer before the run is refused: an unreachable address is an error, never a hang."""


def refuse_zcdp(name: str, mechanism: Any) -> None:
    """Raise :class:`~dpref.errors.ParameterError` when ``mechanism`` is a ρ-zCDP
    (Gaussian-noise) dpref mechanism and the tool measures a pure-ε loss (Laplace
    likelihood ratios, a pure-ε claim), which does not apply to Gaussian noise; the
    sampled audit's approximate-DP view (``privacy='gdp'`` / ``'zcdp'``, docs/auditing.md
    §11) is what audits such a mechanism."""
    if getattr(mechanism, "privacy", "pure") == "zcdp":
        raise ParameterError(
            f"{name}={fmt(mechanism)}: a ρ-zCDP (Gaussian-noise) mechanism; the pure-ε "
            "audit does not apply to Gaussian noise (audit it with privacy='gdp' or 'zcdp', "
            "docs/auditing.md §11)"
        )
