"""The causality check of :func:`~dpref.audit.conformance.conform.conform`: replay with one seed.

A causal target's outputs up to step s cannot depend on items after s.  With the same rng
seed the target is called on the test stream and on copies whose items after s are
reflected (every item changed); the outputs up to s must stay the same within ``1e-9``
relative.  Two calls with one seed that differ make causality untestable by replay and
are a ``not-deterministic`` finding.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dpref.audit.conformance.conform_checks import Check
from dpref.audit.isolation.targets import Finding, Target, TargetFailure
from dpref.domains import Domain

__all__ = ["causality_check"]

FloatArray = npt.NDArray[np.float64]


def _reflect(x: FloatArray, domain: Domain) -> FloatArray:
    """Change every item: ``lower + upper − x`` (bits: 1 − x); mid-points move to lower."""
    lo, hi = float(domain.lower), float(domain.upper)
    out = lo + hi - x
    same = out == x
    out[same] = lo if lo != x[same].max(initial=lo) else hi
    return out


def causality_check(tgt: Target, x: FloatArray, ref: Domain, gen: np.random.Generator) -> Check:
    """Replay with the same seeds: outputs up to s must not see items after s."""
    T = x.size
    if T == 1:
        return Check("causality", True, None, None, None, 0.0, "T = 1: nothing to replay")
    seeds = [int(s) for s in gen.integers(0, 2**63 - 1, 2)]
    cuts = sorted({1, (T + 1) // 2, T - 1})
    try:
        for s0 in seeds:
            found = _replay(tgt, x, ref, s0, cuts)
            if found is not None:
                return found
    except TargetFailure as exc:
        return Check("causality", None, None, None, None, 0.0, f"not run: {exc.finding}")
    return Check(
        "causality",
        True,
        None,
        None,
        None,
        0.0,
        f"outputs up to s unchanged when items after s = {', '.join(map(str, cuts))} "
        f"change ({len(seeds)} seeds; deterministic given the rng)",
    )


def _replay(tgt: Target, x: FloatArray, ref: Domain, s0: int, cuts: list[int]) -> Check | None:
    """One seed: the verdict when determinism or causality fails, else None."""
    T = x.size
    y1 = tgt.call_once(x, np.random.default_rng(s0))
    y2 = tgt.call_once(x, np.random.default_rng(s0))
    if not np.array_equal(y1, y2, equal_nan=True):
        return _not_deterministic(tgt, y1, y2, T)
    flipped = _reflect(x, ref)
    for s in cuts:
        x_alt = x.copy()
        x_alt[s:] = flipped[s:]
        y3 = tgt.call_once(x_alt, np.random.default_rng(s0))
        tol = 1e-9 * (1.0 + np.abs(y1[:s]))
        bad = np.flatnonzero(~(np.abs(y3[:s] - y1[:s]) <= tol))
        if bad.size:
            t = int(bad[0]) + 1
            return Check(
                "causality",
                False,
                float(abs(y3[t - 1] - y1[t - 1])),
                None,
                None,
                0.0,
                f"the output at t={t} changed (by {abs(y3[t - 1] - y1[t - 1]):.3g}) "
                f"when only items after s={s} changed, with the same rng seed",
            )
    return None


def _not_deterministic(tgt: Target, y1: FloatArray, y2: FloatArray, T: int) -> Check:
    """Record the finding that two runs with one seed differ; causality is then untestable."""
    same = (y1 == y2) | (np.isnan(y1) & np.isnan(y2))  # exactly what array_equal compared
    t = int(np.flatnonzero(~same)[0]) + 1
    tgt.record(
        Finding(
            "not-deterministic",
            f"two runs with the same rng seed differ at t={t}: the target "
            "draws randomness from somewhere other than its rng",
            T,
        )
    )
    return Check(
        "causality",
        None,
        None,
        None,
        None,
        0.0,
        "not testable by replay: the target is not deterministic given its rng "
        f"(two runs with the same seed differ at t={t})",
    )
