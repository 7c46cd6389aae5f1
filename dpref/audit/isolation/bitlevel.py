"""Bit-level channels in a target's outputs that no numeric event sees.

Two outputs that compare equal can still differ in their bits: ``0.0`` and ``-0.0`` (the
sign of an exact zero), and NaNs with different payloads.  A target can publish an item
through such a bit (``copysign(0.0, 0.5 − x₁)``) while every half-line event, every
moment and every exact linear fit treats the two values as one.  :class:`BitChannels`
accumulates, per output coordinate, which signs of zero and which NaN bit patterns
occurred across every output the audit drew, and reports each coordinate that shows both
signs of zero, or more than one NaN payload, as a finding (``signed-zero``,
``nan-payload``).  A finding makes the audit's verdict inconclusive at best
(docs/auditing.md §5): the analysed model of the outputs does not include the channel.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dpref.audit.isolation.targets import Finding

__all__ = ["BitChannels"]

FloatArray = npt.NDArray[np.float64]

_MAX_PAYLOADS = 8
"""Distinct NaN bit patterns kept per run (two already make the finding)."""


class BitChannels:
    """Signs of zero and NaN payloads seen per output coordinate (module doc)."""

    def __init__(self) -> None:
        self.pos_zero: npt.NDArray[np.bool_] | None = None
        self.neg_zero: npt.NDArray[np.bool_] | None = None
        self.payloads: set[int] = set()

    def add(self, y: FloatArray) -> None:
        """Record outputs: shape (T,) or (runs, T), float64."""
        a = np.asarray(y, dtype=np.float64)
        if a.ndim == 1:
            a = a[None, :]
        zero = a == 0.0
        neg = np.signbit(a)
        pos_t = (zero & ~neg).any(axis=0)
        neg_t = (zero & neg).any(axis=0)
        if self.pos_zero is None or self.neg_zero is None or self.pos_zero.size != pos_t.size:
            self.pos_zero, self.neg_zero = pos_t, neg_t
        else:
            self.pos_zero |= pos_t
            self.neg_zero |= neg_t
        if len(self.payloads) < _MAX_PAYLOADS:
            nan = np.isnan(a)
            if nan.any():
                bits = np.unique(a[nan].view(np.uint64))[:_MAX_PAYLOADS]
                self.payloads.update(int(b) for b in bits)

    def findings(self, horizon: int | None) -> list[Finding]:
        """``signed-zero`` / ``nan-payload`` findings for what was recorded."""
        out = []
        if self.pos_zero is not None and self.neg_zero is not None:
            both = np.flatnonzero(self.pos_zero & self.neg_zero)
            if both.size:
                ts = ", ".join(f"t={int(t) + 1}" for t in both[:6])
                out.append(
                    Finding(
                        "signed-zero",
                        f"output {ts} is sometimes 0.0 and sometimes -0.0: the sign of an exact "
                        "zero is a channel no event or linear model sees",
                        horizon,
                    )
                )
        if len(self.payloads) > 1:
            shown = ", ".join(f"0x{p:016x}" for p in sorted(self.payloads)[:3])
            out.append(
                Finding(
                    "nan-payload",
                    f"NaN outputs carry {len(self.payloads)}{'+' * (len(self.payloads) >= 8)} "
                    f"different bit patterns ({shown}): a channel no numeric event sees",
                    horizon,
                )
            )
        return out
