"""Auditing other implementations: privacy loss on neighbouring streams and
conformance to a reference mechanism.

* :func:`audit` — a Clopper–Pearson lower bound on the privacy loss of a target on
  event-level neighbouring streams (``dpref audit``);
* :func:`exact_loss` — the exact loss of a built-in mechanism at small T;
* :func:`exact_audit` — the exact loss of a noise-injectable target, from its linear
  structure recovered by scripting its noise (``dpref audit --exact``);
* targets are dpref mechanisms or untrusted callables ``f(stream, rng)``
  (:func:`as_target`), whose crashes become :class:`Finding` s.

The names load on first use (PEP 562): the statistics behind them import scipy.stats,
which ``import dpref`` and ``dpref --help`` should not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpref.lazy import lazy_exports

if TYPE_CHECKING:
    from dpref.audit.injected.structural import StructuralReport, exact_audit, mechanism_target
    from dpref.audit.isolation.recording import NoiseCallback, RecordingGenerator
    from dpref.audit.isolation.targets import Finding, Target, as_target, load_callable
    from dpref.audit.pure.exact import ExactLoss, exact_loss
    from dpref.audit.pure.loss import AuditReport, EventResult, NeighbourPair, audit, standard_pairs

__all__ = [
    "AuditReport",
    "EventResult",
    "ExactLoss",
    "Finding",
    "NeighbourPair",
    "NoiseCallback",
    "RecordingGenerator",
    "StructuralReport",
    "Target",
    "as_target",
    "audit",
    "exact_audit",
    "exact_loss",
    "load_callable",
    "mechanism_target",
    "standard_pairs",
]

_HOME = {
    "ExactLoss": "pure.exact",
    "exact_loss": "pure.exact",
    "AuditReport": "pure.loss",
    "EventResult": "pure.loss",
    "NeighbourPair": "pure.loss",
    "audit": "pure.loss",
    "standard_pairs": "pure.loss",
    "Finding": "isolation.targets",
    "Target": "isolation.targets",
    "as_target": "isolation.targets",
    "load_callable": "isolation.targets",
    "NoiseCallback": "isolation.recording",
    "RecordingGenerator": "isolation.recording",
    "StructuralReport": "injected.structural",
    "exact_audit": "injected.structural",
    "mechanism_target": "injected.structural",
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOME)
