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
    from dpref.audit.exact import ExactLoss, exact_loss
    from dpref.audit.loss import AuditReport, EventResult, NeighbourPair, audit, standard_pairs
    from dpref.audit.recording import NoiseCallback, RecordingGenerator
    from dpref.audit.structural import StructuralReport, exact_audit, mechanism_target
    from dpref.audit.targets import Finding, Target, as_target, load_callable

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
    "ExactLoss": "exact",
    "exact_loss": "exact",
    "AuditReport": "loss",
    "EventResult": "loss",
    "NeighbourPair": "loss",
    "audit": "loss",
    "standard_pairs": "loss",
    "Finding": "targets",
    "Target": "targets",
    "as_target": "targets",
    "load_callable": "targets",
    "NoiseCallback": "recording",
    "RecordingGenerator": "recording",
    "StructuralReport": "structural",
    "exact_audit": "structural",
    "mechanism_target": "structural",
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOME)
