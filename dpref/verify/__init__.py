"""``dpref verify``: the main job — every check dpref knows, in one table.

A suite is a function ``(VerifyOptions) -> list[VerifyRow]``.  Subsystems register
their suites in the ``dpref.verify_suites`` entry-point group of ``pyproject.toml`` (names
``NN-label`` fix the order; the proofs run first); this package names none of them,
so it depends on no subsystem.  The suites today: ``proofs`` (:mod:`proofs.cli`),
``plans`` and ``agreement`` (:mod:`dpref.verify.plans`), ``golden``
(:mod:`dpref.verify.golden`) and ``audit`` (:mod:`dpref.audit.suite`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dpref.plugins import VERIFY, load, ordered
from dpref.validation import check_int_range

__all__ = ["SUITES", "Suite", "VerifyOptions", "VerifyRow", "run_verify", "suite_specs"]


MAX_EXHAUSTIVE = 4096
"""Largest ``--max-horizon``: verify checks every T from 1 to it."""
MAX_RANDOM_HORIZONS = 1000
"""Most random larger horizons per mechanism."""
MAX_RANDOM_T = 1 << 16
"""Largest random horizon."""


@dataclass(frozen=True)
class VerifyOptions:
    """Knobs of a verify run."""

    max_exhaustive: int = 256
    """Check every T from 1 to this."""
    random_horizons: int = 4
    """How many random larger T to check per mechanism."""
    random_max: int = 2048
    """Largest random T."""
    seed: int = 20261122
    """Seed for the random choices (reproducible)."""
    mechanisms: tuple[str, ...] = ()
    """Restrict to these mechanism names (empty: all)."""

    def __post_init__(self) -> None:
        # every T up to max_horizon is checked exactly (O(T) each, O(T²) in all); the
        # bounds keep a run to minutes, and refuse what numpy cannot even allocate
        check_int_range("max_horizon", self.max_exhaustive, 1, MAX_EXHAUSTIVE)
        check_int_range("random_horizons", self.random_horizons, 0, MAX_RANDOM_HORIZONS)
        check_int_range("random_max", self.random_max, 1, MAX_RANDOM_T)
        check_int_range("seed", self.seed, 0, None)


@dataclass
class VerifyRow:
    """One line of the verify table."""

    suite: str
    """Which suite produced it."""
    mechanism: str
    """Mechanism (or subject) checked."""
    checks: int
    """How many individual checks ran."""
    failed: int
    """How many failed."""
    declared_epsilon: str = ""
    """The declared ε (exact, as text)."""
    proven_sum: str = ""
    """The exact privacy sum / proven budget (as text)."""
    seconds: float = 0.0
    """Wall time."""
    detail: str = ""
    """First failure, or a summary."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Suite-specific data for JSON output."""

    @property
    def status(self) -> str:
        """``ok`` or ``FAIL``."""
        return "ok" if self.failed == 0 else "FAIL"

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "suite": self.suite,
            "mechanism": self.mechanism,
            "checks": self.checks,
            "failed": self.failed,
            "declared_epsilon": self.declared_epsilon,
            "proven_sum": self.proven_sum,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "detail": self.detail,
            **self.extra,
        }


Suite = Callable[[VerifyOptions], list[VerifyRow]]


def suite_specs() -> list[str]:
    """The registered suites as ``module:function``, in the order they run."""
    return [ep.value for ep in ordered(VERIFY)]


def __getattr__(name: str) -> Any:
    if name == "SUITES":  # computed on use: reading the entry points costs a little
        return suite_specs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_verify(
    opts: VerifyOptions | None = None, progress: Callable[[VerifyRow], None] | None = None
) -> list[VerifyRow]:
    """Run every suite; ``progress`` is called with each row as it completes."""
    opts = opts or VerifyOptions()
    rows: list[VerifyRow] = []
    for suite in load(VERIFY):
        for row in suite(opts):
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows
