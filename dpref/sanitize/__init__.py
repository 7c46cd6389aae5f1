"""Streaming sanitizer and private quantiles (Kaplan, Stemmer 2021; docs/spec.md §3,
docs/quantiles.md).

* :class:`ThresholdSanitizer` — the pure ε-DP offline sanitizer for threshold queries:
  a tree counter of dpref run over the domain, projected to a monotone CDF;
* :class:`StreamingSanitizer` — the offline sanitizer on disjoint blocks of a stream,
  with optional Poisson subsampling;
* :class:`PrivateQuantiles` — the sanitized stream fed into a KLL sketch (optional
  extra ``quantiles``), answerable after every block.

The proofs are in ``proofs/sanitize.py``.
"""

from dpref.sanitize.amplification import effective_probability, subsampled_epsilon
from dpref.sanitize.quantiles import (
    PrivateQuantiles,
    exact_quantiles,
    exponential_quantile,
    private_quantiles,
    rank_errors,
)
from dpref.sanitize.streaming import SanitizedStream, StreamingRun, StreamingSanitizer
from dpref.sanitize.threshold import (
    ThresholdRelease,
    ThresholdSanitizer,
    project_cdf,
    tree_counters,
)

__all__ = [
    "PrivateQuantiles",
    "SanitizedStream",
    "StreamingRun",
    "StreamingSanitizer",
    "ThresholdRelease",
    "ThresholdSanitizer",
    "effective_probability",
    "exact_quantiles",
    "exponential_quantile",
    "private_quantiles",
    "project_cdf",
    "rank_errors",
    "subsampled_epsilon",
    "tree_counters",
]
