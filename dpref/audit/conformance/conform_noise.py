"""Conformance's noise probe: a release without noise where the reference has noise.

The crash probes of :func:`~dpref.audit.conformance.conform.conform` run the target once at each of
T = 1, 2, 3, 4, 5, every power of two, T − 1 and T.  A bug can make a horizon
*noiseless* without crashing — a Binary tree that counts ``⌈log₂T⌉`` levels adds
``Lap(0)`` at T = 1 — and one call cannot show it.  :func:`noiseless` calls the target
again on the same stream with a different seed: an output step where the two runs agree
bit for bit, and a third run agrees too, while the reference adds continuous noise there
(positive variance), was released without noise — a difference from the reference
(``noiseless`` finding: the target does not conform).

False alarms: only steps where the reference's noise is continuous (Laplace or
Gaussian) are judged.  conform accepts a reference only when its smallest noise scale is
at least ``2⁻³⁰`` of the outputs' magnitude M (``NOISE_RESOLUTION``), so one noisy float64
output takes a given value with probability at most about ``ulp(M)/scale ≤ 2⁻²³``; three
independent runs agree with probability at most ``2⁻⁴⁶ ≈ 1.4·10⁻¹⁴`` per step, and the
probes cover at most ``4T ≤ 4·10⁵`` steps: below ``10⁻⁸`` for a conforming target.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.isolation.targets import Finding, Target, TargetFailure

__all__ = ["CONTINUOUS", "noiseless"]

FloatArray = npt.NDArray[np.float64]

CONTINUOUS = ("laplace", "gaussian")
"""Reference noise kinds whose draws coincide with probability 0 (discrete noise can
repeat a value: its steps are not judged)."""


def noiseless(
    tgt: Target, x: FloatArray, y: FloatArray, words: Sequence[int], reference: Any
) -> Finding | None:
    """The ``noiseless`` finding for output ``y`` of ``tgt`` on ``x`` (seeded by ``words``),
    or None; a crash of a repeat call is returned as its own finding (a crash is a crash).

    No reference, or one with discrete noise: None, without calling the target."""
    if reference is None or getattr(reference, "noise", None) not in CONTINUOUS:
        return None
    h = int(x.size)
    noisy = np.asarray(reference.variance(h), dtype=np.float64) > 0
    same = noisy.copy()
    for extra in (1, 2):  # a third run only when two already agree somewhere
        try:
            again = tgt.call_once(x, np.random.default_rng([*words, extra]))
        except TargetFailure as exc:
            return exc.finding
        same &= again == y
        if not same.any():
            return None
    t = int(np.flatnonzero(same)[0])
    var = float(np.asarray(reference.variance(h))[t])
    return Finding(
        "noiseless",
        f"output at t={t + 1} is {float(y[t])!r} in 3 runs with different seeds: released "
        f"without noise (the reference's output at t={t + 1} has variance {var:.4g})",
        h,
    )
