"""The event-level sensitivity of one stream item, for :mod:`dpref.domains`.

Light on purpose: importing this module loads no other part of the calculator, and of
:mod:`dpref` only :mod:`dpref.errors` and :mod:`dpref.validation`, so :mod:`dpref.domains`
can import it at module level without a cycle.  The calculator is loaded on the first call.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from dpref.validation import check_choice, check_fraction

if TYPE_CHECKING:
    from dpref.sensitivity.model import Model

__all__ = ["stream_item_sensitivity"]


def stream_item_sensitivity(lower: Fraction, upper: Fraction, neighbours: str) -> Fraction:
    """Event-level Δ of one stream item with values in ``[lower, upper]``.

    Computed by the calculator itself: the exact sum-query sensitivity for the range
    universe ``{lower, upper}``, release size 1, Hamming distance 1, with ``"replace"``
    → bounded (``upper − lower``) and ``"add_remove"`` → unbounded
    (``max(|lower|, |upper|)``).  The stream mechanisms and the calculator therefore
    agree by construction.
    """
    model: Model = (
        "bounded"
        if check_choice("neighbours", neighbours, ("replace", "add_remove")) == "replace"
        else "unbounded"
    )
    lo = check_fraction("lower", lower)
    hi = check_fraction("upper", upper)
    from dpref.sensitivity.api import exact_global_sensitivity  # the calculator, on first use

    return exact_global_sensitivity(
        [lo, hi], size=1, query="sum", hamming=1, model=model, universe="range"
    )
