"""Auditing other implementations: privacy loss on neighbouring streams and
conformance to a reference mechanism.

* :func:`audit` — a Clopper–Pearson lower bound on the privacy loss of a target on
  event-level neighbouring streams (``dpref audit``);
* :func:`exact_loss` — the exact loss of a built-in mechanism at small T;
* targets are dpref mechanisms or untrusted callables ``f(stream, rng)``
  (:func:`as_target`), whose crashes become :class:`Finding` s.
"""

from dpref.audit.exact import ExactLoss, exact_loss
from dpref.audit.loss import AuditReport, EventResult, NeighbourPair, audit, standard_pairs
from dpref.audit.targets import Finding, Target, as_target, load_callable

__all__ = [
    "AuditReport",
    "EventResult",
    "ExactLoss",
    "Finding",
    "NeighbourPair",
    "Target",
    "as_target",
    "audit",
    "exact_loss",
    "load_callable",
    "standard_pairs",
]
