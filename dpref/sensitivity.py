"""Global sensitivity (SPEC §4).  The full calculator is built in its own issue.

This module already owns the event-level Δ of one stream item, so the stream
mechanisms and the calculator agree by construction.
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["stream_item_sensitivity"]


def stream_item_sensitivity(lower: Fraction, upper: Fraction, neighbours: str) -> Fraction:
    """Δ of one item of a stream with values in ``[lower, upper]``.

    Replace-one neighbours: the largest change of a sum of one record,
    ``upper − lower``.  Add/remove neighbours: the largest value removed,
    ``max(|lower|, |upper|)``.
    """
    if neighbours == "replace":
        return upper - lower
    return max(abs(lower), abs(upper))
