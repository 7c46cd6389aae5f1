"""The float precision of an exact audit: detection, tolerance and a rigorous rounding slack.

An exact audit (:mod:`dpref.audit.injected.structural`) fits ``y = A·(x − x₀) + M·ξ + c`` to the
outputs of a target and computes the loss of that linear release.  The outputs are
floats, so the fit holds only up to rounding, and how much rounding depends on the
precision the target computes in.  :class:`Precision` holds what the audit needs of it.

**Error model** (docs/auditing.md §9, "float32 targets").  The target is a *linear
pipeline in precision p* (unit roundoff u: 2⁻⁵³ for float64, 2⁻²⁴ for float32): each
output is the float evaluation, in any order, of a sum of at most ``n = T + K + 1``
terms — a constant times an item, a constant times a draw, or a constant — each term
itself computed with relative error at most u.  Then ``|fl(y) − y| ≤ γ·Σ|terms|`` with
``γ_n = n·u/(1 − n·u)`` (Higham, *Accuracy and Stability of Numerical Algorithms*,
§3.1), and the audit uses ``γ = 4·(n + 1)·u`` (a factor ≥ 2 above γ_{n+1}, for the
rounding of the terms themselves and of the draw handed over) plus an absolute
``4·(n + 1)·tiny`` per output for the subnormal range (``tiny`` the smallest subnormal of
p).  The linearity check (:func:`~dpref.audit.injected.structural.linearity_tolerance`) tests
every probe against exactly that bound, and the probed A and M — differences of such
outputs — are then within an entrywise box of the real-arithmetic structure
``(A*, M*)`` the pipeline evaluates: ``|M* − M| ≤ γ·(4|c| + 3|M|) + 8(n + 1)·tiny`` and
``|Δ·A*·e_i − Δ·A·e_i| ≤ Δ·(γ·((3 + s)/s·|c| + 3|A·e_i|) + 8(n + 1)·tiny/s)`` (s the
probe step; :func:`~dpref.audit.gaussian.l2loss.mu_squared_lower_bound`).

**The slack.**  The loss reported is exact for the probed (A, M); the *rounding slack*
is an interval ``[lower, upper]`` that contains the loss of every real structure in the
box: ``lower`` from a dual certificate (:func:`~dpref.audit.gaussian.l2loss.mu_squared_lower_bound`,
which a violation rests on), ``upper`` from :func:`loss_upper_bounds` — a primal
perturbation bound that needs M (on its noisy outputs) to have full row rank, certified
by a float Cholesky with Demmel's backward-error bound (:func:`min_eigen_lower`).  An
output that is exactly 0 at every fit probe is taken as the zero function (no subnormal
floor there).

**Detection** (``precision="auto"``): the audit uses float32 when every output of every
probe is exactly a float32 number (a float32 array converted to float64 is; a float64
computation with random noise is not, but for a set of measure zero), else float64.
The choice is stated in the report, as is the slack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.validation import check_choice

__all__ = [
    "FLOAT32",
    "FLOAT64",
    "PRECISIONS",
    "PRECISION_HELP",
    "Precision",
    "PrecisionChooser",
    "add_precision_argument",
    "check_precision",
    "check_precision_unused",
    "is_float32",
    "loss_upper_bounds",
    "min_eigen_lower",
]

FloatArray = npt.NDArray[np.float64]

PRECISIONS = ("auto", "float64", "float32")
"""The values of ``precision`` (``dpref audit --exact --precision``)."""


@dataclass(frozen=True, kw_only=True)
class Precision:
    """A float format as the exact audit's error model uses it."""

    name: str
    """``float64`` or ``float32``."""
    unit: Fraction
    """The unit roundoff u (2⁻⁵³ or 2⁻²⁴), exactly."""
    tiny: float
    """The smallest positive subnormal (2⁻¹⁰⁷⁴ or 2⁻¹⁴⁹): the absolute error floor."""
    output_cap: float
    """Largest output magnitude the noise ladder aims at (below the format's overflow)."""

    @property
    def u(self) -> float:
        """The unit roundoff as a float (exact: a power of two)."""
        return float(self.unit)


FLOAT64 = Precision(name="float64", unit=Fraction(1, 2**53), tiny=2.0**-1074, output_cap=1e300)
FLOAT32 = Precision(name="float32", unit=Fraction(1, 2**24), tiny=2.0**-149, output_cap=1e36)
_BY_NAME = {"float64": FLOAT64, "float32": FLOAT32}
_F32_MAX = float(np.finfo(np.float32).max)


def check_precision(value: object) -> str:
    """``value`` as one of :data:`PRECISIONS`, else a :class:`~dpref.errors.ParameterError`."""
    return check_choice("precision", value, PRECISIONS)


def is_float32(y: FloatArray) -> bool:
    """True when every finite entry of ``y`` is exactly a float32 number."""
    a = np.asarray(y, dtype=np.float64)
    f = a[np.isfinite(a)]
    if f.size == 0:
        return True
    if float(np.abs(f).max()) > _F32_MAX:
        return False
    return bool(np.array_equal(f.astype(np.float32).astype(np.float64), f))


class PrecisionChooser:
    """The precision while a structure is probed: fixed, or (``auto``) float32 as long as
    every output seen is a float32 number."""

    def __init__(self, requested: str) -> None:
        self.requested = check_precision(requested)
        self.all_float32 = True

    def see(self, y: FloatArray) -> bool:
        """Record the outputs of one probe; True when this switched auto to float64."""
        if self.requested != "auto" or not self.all_float32 or is_float32(y):
            return False
        self.all_float32 = False
        return True

    @property
    def current(self) -> Precision:
        """The precision the outputs seen so far call for."""
        if self.requested != "auto":
            return _BY_NAME[self.requested]
        return FLOAT32 if self.all_float32 else FLOAT64

    @property
    def source(self) -> str:
        """How the precision was chosen, in words."""
        if self.requested != "auto":
            return "requested"
        if self.all_float32:
            return "auto-detected: every output of every probe is a float32 number"
        return "auto-detected: some output is not a float32 number"


_INFLATE = 1.0 + 2.0**-30
"""Factor covering the float64 rounding of our own bound arithmetic: each bound is a
chain of at most 10⁶ operations on non-negative numbers (and ``sqrt``), whose relative
error is below 10⁶·2⁻⁵³ < 2⁻³⁰."""


# ------------------------------------------------- a certified eigenvalue bound
def _cholesky_succeeds(B: FloatArray) -> bool:
    """Whether the (right-looking, unpivoted) float64 Cholesky of B meets only positive
    pivots."""
    L = np.array(B, dtype=np.float64, copy=True)
    n = L.shape[0]
    for k in range(n):
        p = float(L[k, k])
        if not p > 0.0:
            return False
        r = math.sqrt(p)
        col = L[k + 1 :, k] / r
        L[k + 1 :, k] = col
        L[k + 1 :, k + 1 :] -= np.outer(col, col)
    return True


def min_eigen_lower(Mr: FloatArray) -> Fraction | None:
    """A rational λ > 0 with ``λ_min(Mr·Mrᵀ) ≥ λ``, rigorously; None when none of the
    candidates (0.9, 0.5, 0.1 of the float estimate) can be certified.

    With ``G̃ = fl(Mr·Mrᵀ)`` (``|G̃ − G| ≤ γ_k·|Mr|·|Mr|ᵀ``, k columns, any summation
    order) and ``B = fl(G̃ − λ·I)``: if the float Cholesky of B meets only positive
    pivots, ``B + ΔB = R̃ᵀR̃`` with ``|ΔB| ≤ γ_{n+1}·d·dᵀ``, ``d_i = √b_ii`` (Demmel;
    Higham, *Accuracy and Stability*, Thm 10.3 and §10.1.1), so ``λ_min(B) ≥ −γ_{n+1}·tr B``
    and ``λ_min(G) ≥ λ − γ_{n+1}·tr B − u·max|b_ii| − ‖G̃ − G‖_F`` (the middle term: the
    rounding of the shift).  The γ's are taken as ``2m·u`` (``m·u < 1/2``), and every
    float of the bound rounded the safe way."""
    n, k = Mr.shape
    u = 2.0**-53
    if 2 * (max(n, k) + 1) * u >= 0.5:
        return None
    G = Mr @ Mr.T
    absM = np.abs(Mr)
    eg = 2.0 * (k + 1) * u * (absM @ absM.T)
    eg_norm = math.sqrt(float((eg * eg).sum())) * _INFLATE
    est = float(np.linalg.eigvalsh(G).min())
    if not est > 0.0:
        return None
    for frac in (0.9, 0.5, 0.1):
        lam = est * frac
        B = G - lam * np.eye(n)
        if not _cholesky_succeeds(B):
            continue
        diag = np.abs(np.diag(B))
        loss = (2.0 * (n + 2) * u * float(diag.sum()) + u * float(diag.max()) + eg_norm) * _INFLATE
        bound = lam * (1.0 - 2.0**-50) - loss
        if bound > 0.0:
            return Fraction(math.nextafter(bound, 0.0))
    return None


MAX_SLACK_OUTPUTS = 4096
"""Most noisy outputs for which the upper slack is certified (the eigenvalue bound is
a dense n × n Cholesky)."""


def loss_upper_bounds(
    M: FloatArray,
    A: FloatArray,
    c: FloatArray,
    delta: Fraction,
    step: float,
    precision: Precision,
    measured: list[Fraction | None],
    *,
    l1: bool = False,
    vectors: list[FloatArray | None] | None = None,
) -> tuple[list[Fraction | None] | None, str]:
    """Per item, an upper bound on the loss of every real structure in the error box
    (module doc): ``μ_i²`` (``l1``: the Laplace ``ε_i``).  Returns ``(bounds, why)``;
    bounds is None (with the reason) when it cannot be certified; an entry is None where
    the measured loss is ∞.

    For any v on M's used columns and ``r = d* − M*·v`` (bounded entrywise by the exact
    float residual ``|d − M·v|``, its own rounding and the box), a w with ``M*·w = r``
    and ``‖w‖₂ ≤ ‖r‖₂/σ_min(M*)`` exists when M* has full row rank; ``v + w`` is feasible
    for the real structure, so ``μ_i ≤ ‖v‖₂ + ‖r‖₂/σ`` and ``ε_i ≤ ‖v‖₁ + √k·‖r‖₂/σ``
    (k used draws), with ``σ ≥ σ_min(M) − ‖M* − M‖_F`` (Weyl) and ``σ_min(M)²`` bounded
    below by a certified eigenvalue bound (:func:`min_eigen_lower`).  v is
    the least-norm solution (``l1``: ``vectors[i]``, the LP's, when given)."""
    T, K = M.shape
    used = [j for j in range(K) if np.any(M[:, j] != 0.0)]
    k = len(used)
    if k == 0:
        return None, "no draw reaches the outputs"
    Mu = M[:, used]
    rows = np.flatnonzero(np.any(Mu != 0.0, axis=1))
    quiet = np.setdiff1d(np.arange(T), rows)
    if np.any(c[quiet] != 0.0):
        return None, "an output no draw reaches is not 0 at x₀"
    if rows.size > k:
        return None, f"{rows.size} noisy outputs but only {k} draws (M has no full row rank)"
    if rows.size > MAX_SLACK_OUTPUTS:
        return None, f"more than {MAX_SLACK_OUTPUTS} noisy outputs"
    Mr = Mu[rows]
    lam = min_eigen_lower(Mr)
    if lam is None:
        return None, "M's full row rank could not be certified"
    u64 = 2.0**-53
    n = T + K + 1
    gamma = math.nextafter(float(4 * (n + 1) * precision.unit), math.inf)
    floor = 8.0 * (n + 1) * precision.tiny
    s = abs(float(step))
    cr = np.abs(c[rows])
    EM = (gamma * (4.0 * cr[:, None] + 3.0 * np.abs(Mr)) + floor) * _INFLATE
    em_norm = math.sqrt(float((EM * EM).sum())) * _INFLATE
    sigma = math.sqrt(float(lam)) * (1.0 - 2.0**-50) - em_norm
    if not sigma > 0.0:
        return None, "the rounding box reaches a rank-deficient M"
    dlt = float(delta)
    d_err = abs(Fraction(dlt) - delta) / delta if delta else Fraction(0)
    pinv = np.linalg.pinv(Mr)
    out: list[Fraction | None] = []
    for i in range(A.shape[1]):
        if measured[i] is None:
            out.append(None)
            continue
        a_col = A[:, i]
        if np.any(a_col[quiet] != 0.0):
            out.append(None)
            continue
        d = dlt * a_col[rows]
        given = vectors[i] if vectors is not None and i < len(vectors) else None
        v = np.asarray(given, dtype=np.float64) if given is not None else pinv @ d
        absd = np.abs(d)
        mv = np.abs(Mr) @ np.abs(v)
        res = np.abs(d - Mr @ v) + (2.0 * (k + 3) * u64 + float(d_err)) * (absd + mv)
        Ed = dlt * (gamma * ((3.0 + s) / s * cr + 3.0 * np.abs(a_col[rows])) + floor / s)
        r = (res + Ed + EM @ np.abs(v)) * _INFLATE
        b = math.sqrt(float((r * r).sum())) / sigma * _INFLATE
        if l1:
            bound = (float(np.abs(v).sum()) + math.sqrt(k) * b) * _INFLATE
        else:
            bound = ((math.sqrt(float((v * v).sum())) + b) ** 2) * _INFLATE**2
        out.append(Fraction(math.nextafter(bound * _INFLATE, math.inf)))
    return out, ""


# ------------------------------------------------------------------ CLI hooks
PRECISION_HELP = (
    "with --exact: the float precision of the target's rounding error model — auto, the default "
    "(float32 when every output of every probe is a float32 number, else float64), "
    "float64 or float32 (unit roundoff 2^-24; the report states the rounding slack of the "
    "loss and the verdict rests on it); docs/auditing.md §9"
)


def add_precision_argument(p: Any) -> None:
    """``--precision`` on an argparse parser (``dpref audit``; used by ``--exact``)."""
    p.add_argument("--precision", choices=list(PRECISIONS), default=None, help=PRECISION_HELP)


def check_precision_unused(args: Any) -> None:
    """``--precision`` given to a run that does not use it (the sampled audit) is an error."""
    value = getattr(args, "precision", None)
    if value is not None:
        raise ParameterError(
            f"--precision={value}: used only by --exact (the sampled audit compares "
            "distributions, not float outputs)"
        )
