"""Float32-aware exact audits (issue 25 item 1; dpref/audit/injected/rounding.py,
docs/auditing.md §9).

A float32 target's outputs are linear only within float32 rounding.  The exact audit
detects float32 outputs (or takes ``precision="float32"``), checks linearity against the
float32 error model and states a rigorous rounding slack ``[lower, upper]`` around the
exact loss of the probed structure; the verdict rests on that interval.  Everything
here is deterministic exact arithmetic (no statistical test, no false-failure rate).
"""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref.audit import exact_audit
from dpref.audit.gaussian.l2loss import item_mu_squared, mu_squared_lower_bound
from dpref.audit.injected.rounding import (
    FLOAT32,
    FLOAT64,
    PrecisionChooser,
    is_float32,
    loss_upper_bounds,
    min_eigen_lower,
)
from dpref.audit.isolation.runners import InProcessRunner
from dpref.audit.pure.l1loss import item_losses
from dpref.cli import main
from dpref.errors import ParameterError

sys.path.insert(0, str(Path(__file__).parent))
import float32_targets as f32
import injectable_gaussian_targets as ig

HERE = Path(__file__).parent

SPEC = str(HERE / "float32_targets.py")
HALF = Fraction(1, 2)


def _audit(fn: Any, T: int, **kw: Any) -> Any:
    return exact_audit(fn, T, runner=InProcessRunner(fn), **kw)


# ------------------------------------------------------------ the done-when targets
def test_float32_gaussian_tree_holds_up_to_its_stated_slack() -> None:
    r = _audit(f32.gaussian_ok, 16, rho=HALF)
    assert r.precision == "float32" and "auto-detected" in r.precision_source
    assert r.unit_roundoff == Fraction(1, 2**24)
    assert r.verdict == "no-violation-found" and r.outcome == "holds-within-rounding"
    assert r.mu_squared_stated == 1 and r.mu_squared != 1  # σ rounded to float32
    lo, hi = r.slack_lower, r.slack_upper
    assert lo is not None and hi is not None and lo <= r.mu_squared <= hi
    assert lo <= 1 <= hi and hi - lo < Fraction(1, 1000)  # a slack, not a shrug
    d = r.as_dict()
    assert d["precision"] == "float32" and d["unit_roundoff"] == "1/16777216"
    assert Fraction(d["rounding_slack"]["lower"]) == lo
    assert Fraction(d["rounding_slack"]["upper"]) == hi
    text = r.summary()
    assert "precision   float32 (unit roundoff u = 2⁻²⁴" in text and "slack       μ² ∈ [" in text


def test_float32_gaussian_tree_at_sigma_over_sqrt2_is_a_violation() -> None:
    r = _audit(f32.gaussian_sigma_over_sqrt2, 16, rho=HALF)
    assert r.verdict == "violation" and r.exit_code == 1
    assert r.mu_squared_stated == 2
    assert r.slack_lower is not None and r.slack_lower > 1  # what the violation rests on
    assert r.mu_squared_lower == r.slack_lower


@pytest.mark.parametrize(
    ("fn", "verdict", "stated"),
    [
        (f32.laplace_ok, "no-violation-found", Fraction(3, 10)),
        (f32.laplace_half_scale, "violation", Fraction(3, 5)),
    ],
)
def test_float32_laplace_tree_exact_epsilon_up_to_slack(
    fn: Any, verdict: str, stated: Fraction
) -> None:
    r = _audit(fn, 16, epsilon=Fraction(3, 10))
    assert r.precision == "float32" and r.verdict == verdict
    assert r.epsilon_stated == stated
    lo, hi = r.slack_lower, r.slack_upper
    assert lo is not None and hi is not None and lo <= r.epsilon <= hi and lo <= stated <= hi
    if verdict == "violation":
        assert r.epsilon_lower_rounding is not None and r.epsilon_lower_rounding > Fraction(3, 10)


def test_float64_error_model_on_a_float32_target_stays_inconclusive() -> None:
    """The bug of issue 25, kept reachable: forcing float64 refuses the float32 outputs."""
    r = _audit(f32.gaussian_ok, 8, rho=HALF, precision="float64")
    assert r.verdict == "inconclusive" and r.precision == "float64"
    assert [f.kind for f in r.findings] == ["not-linear"]


def test_float32_tolerance_still_sees_clipped_noise() -> None:
    r = _audit(f32.gaussian_clipped, 8, rho=HALF)
    assert r.verdict == "inconclusive"
    assert [f.kind for f in r.findings] == ["not-linear"]
    assert "float32" in r.findings[0].detail and "noise ladder" in r.findings[0].detail


def test_float64_targets_are_audited_as_before() -> None:
    r = _audit(ig.binary_ok, 8, rho=HALF)
    assert r.precision == "float64" and "not a float32" in r.precision_source
    assert r.slack_lower is None and r.as_dict()["rounding_slack"] is None
    assert "\nprecision   " not in r.summary() and "\nslack   " not in r.summary()
    forced = _audit(ig.binary_ok, 8, rho=HALF, precision="float32")
    assert forced.precision == "float32" and forced.verdict == "no-violation-found"
    assert forced.slack_lower is not None and forced.slack_upper is not None
    assert forced.slack_lower <= 1 <= forced.slack_upper


# ------------------------------------------------------------------ the pieces
def test_is_float32_and_the_chooser() -> None:
    assert is_float32(np.array([1.0, 0.5, -3.0, np.inf, np.nan, 2.0**-149]))
    assert not is_float32(np.array([0.1]))
    assert not is_float32(np.array([1e39]))
    ch = PrecisionChooser("auto")
    assert not ch.see(np.array([1.0, 2.0])) and ch.current is FLOAT32
    assert ch.see(np.array([0.1])) and ch.current is FLOAT64
    assert PrecisionChooser("float32").current is FLOAT32
    with pytest.raises(ParameterError, match="precision='half'"):
        PrecisionChooser("half")
    with pytest.raises(ParameterError, match="precision"):
        exact_audit(f32.gaussian_ok, 4, rho=HALF, precision="float16")


def test_min_eigen_lower_is_a_certified_lower_bound() -> None:
    """Below the true smallest eigenvalue of M·Mᵀ, near it when well conditioned, and
    None when M·Mᵀ is singular."""
    rng = np.random.default_rng(3)
    for n, k in ((3, 3), (8, 12), (40, 60)):
        M = rng.standard_normal((n, k))
        true = float(np.linalg.eigvalsh(M @ M.T).min())
        lam = min_eigen_lower(M)
        assert lam is not None and 0.85 * true < float(lam) < true
    assert min_eigen_lower(np.array([[1.0, 2.0], [2.0, 4.0]])) is None  # rank 1
    # badly conditioned (Hilbert rows, λ_min ≈ 1e-13 of λ_max): certified or refused,
    # never above the truth
    H = np.array([[1.0 / (i + j + 1) for j in range(6)] for i in range(6)])
    lam = min_eigen_lower(H)
    assert lam is None or float(lam) <= float(np.linalg.eigvalsh(H @ H.T).min())


def _tree_structure(T: int, sigma: float) -> tuple[Any, Any]:
    """M (node noise of the Fenwick tree, scale σ) and A (prefix sums) of size T."""
    R = np.zeros((T, T))
    for t in range(1, T + 1):
        k = t
        while k:
            R[t - 1, k - 1] = 1.0
            k -= k & -k
    return R * sigma, np.tril(np.ones((T, T)))


def test_the_slack_contains_every_structure_in_the_error_box() -> None:
    """The power check of the slack: real structures at the edge of the box (random
    signs, 99 % of the allowed error) have exact losses inside [lower, upper]; and the
    slack is not vacuous (it fails for a structure 30 % outside the box)."""
    T = 8
    M, A = _tree_structure(T, float(np.float32(math.sqrt(4.0))))
    c = np.zeros(T)
    gamma = 4 * (T + T + 2) * 2.0**-24
    mus = item_mu_squared(M, A, Fraction(1)).mu_squared
    upper, why = loss_upper_bounds(M, A, c, Fraction(1), 1.0, FLOAT32, mus)
    assert upper is not None and why == ""
    top = max(q for q in upper if q is not None)
    i = mus.index(max(mus))  # type: ignore[type-var]
    lower, _ = mu_squared_lower_bound(
        M, A[:, i], c, Fraction(1), 1.0, unit=FLOAT32.unit, tiny=FLOAT32.tiny
    )
    rng = np.random.default_rng(7)
    for _ in range(5):
        EM = 0.99 * gamma * 3 * np.abs(M) * rng.choice([-1.0, 1.0], size=M.shape)
        EA = 0.99 * gamma * 3 * np.abs(A) * rng.choice([-1.0, 1.0], size=A.shape)
        real = item_mu_squared(M + EM, A + EA, Fraction(1)).mu_squared
        worst = max(q for q in real if q is not None)
        assert lower <= worst <= top
    EM = 30 * gamma * 3 * np.abs(M)  # far outside the box: below the lower end
    assert max(q for q in item_mu_squared(M + EM, A, Fraction(1)).mu_squared if q) < lower


def test_upper_slack_needs_full_row_rank_and_says_why() -> None:
    M = np.array([[1.0], [1.0]])  # two noisy outputs, one draw
    A = np.eye(2)
    eps = item_losses(M, A, Fraction(1)).upper
    upper, why = loss_upper_bounds(M, A, np.zeros(2), Fraction(1), 1.0, FLOAT32, eps, l1=True)
    assert upper is None and "full row rank" in why


# ------------------------------------------------------------------------ CLI
def test_cli_exact_float32(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["audit", f"{SPEC}:gaussian_sigma_over_sqrt2", "--exact", "--rho", "1/2"]
    assert main([*argv, "--horizon", "8", "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["verdict"] == "violation" and d["precision"] == "float32"
    assert Fraction(d["rounding_slack"]["lower"]) > 1
    assert (
        main(["audit", "binary", "--rho", "1/2", "--horizon", "4", "--precision", "float32"]) == 2
    )
    assert "--precision=float32: used only by --exact" in capsys.readouterr().err


# ------------------------------------------------------------------ golden run
GOLDEN32 = str(HERE / "float32_golden_targets.py")


def test_golden_run_float32_preset() -> None:
    """A float32 implementation fails the float64 preset (rtol = 1e-12), matches every
    Honaker vector under the float32 bound, and a doubled node noise still fails it."""
    import float32_golden_targets as g

    from dpref.audit.conformance.golden_run import (
        _first_wrong,
        float32_bound,
        run_golden,
        select_vectors,
    )
    from dpref.golden import load_shipped

    sel = {"mechanism": "honaker", "case": "honaker[T=16]*e*"}  # 8 vectors
    vecs = select_vectors(load_shipped(), **sel)
    caught = 0
    for vec in vecs:  # in this process: the float64 rule refuses the float32 outputs,
        # the float32 bound takes them, and refuses a doubled node noise
        got = np.asarray(g.float32_release(vec["stream"], vec["noise"], vec), dtype=float)
        assert _first_wrong(vec, got, 1e-12, 1e-9, True) is not None
        assert _first_wrong(vec, got, 1e-12, 1e-9, True, "float32") is None
        bad = np.asarray(g.float32_node0_doubled(vec["stream"], vec["noise"], vec), float)
        wrong = _first_wrong(vec, bad, 1e-12, 1e-9, True, "float32")
        if float(vec["noise"][0]) != 0.0:  # doubling a zero changes nothing
            assert wrong is not None and "float32 bound" in wrong.rule
            caught += 1
    assert caught >= 5
    as32 = run_golden(f"{GOLDEN32}:float32_release", precision="float32", **sel)
    assert as32.ok and as32.vectors == len(vecs) >= 5  # end to end, in the worker
    assert as32.as_dict()["precision"] == "float32"
    assert "tolerance: float32 bound" in as32.text()
    vec = vecs[0]
    bound = float32_bound(vec)  # a float32 bound: about 1e-6 of the outputs, not 1e-12
    scale = np.abs(np.array([float(Fraction(s)) for s in vec["outputs_exact"]])).max()
    assert 1e-9 * scale < bound.max() < 1e-3 * scale
    with pytest.raises(ParameterError, match="precision='float16'"):
        run_golden(f"{GOLDEN32}:float32_release", precision="float16", **sel)


def test_float32_laplace_lp_case_has_a_tight_slack() -> None:
    """Dependent noise (Honaker: 2T − 1 nodes): ε is an LP optimum; its slack uses the
    LP's primal (upper end) and dual (lower end) and holds the claim."""
    r = _audit(f32.honaker_laplace, 8, epsilon=Fraction(3, 10))
    assert r.scope == "upper bound" and r.precision == "float32"
    assert r.verdict == "no-violation-found" and r.epsilon_stated == Fraction(3, 10)
    lo, hi = r.slack_lower, r.slack_upper
    assert lo is not None and hi is not None and lo <= Fraction(3, 10) <= hi
    assert hi - lo < Fraction(3, 10) * Fraction(1, 100)


def _mixed_precision(stream: Any, rng: Any) -> Any:
    """A float64 tree whose outputs are rounded to float32 only when the first item is
    0: float32 outputs at some probes, float64 at others, nonlinear by ~1e-7."""
    T = len(stream)
    z = rng.normal(0.0, math.sqrt(T.bit_length()), size=T)
    y = np.cumsum(np.asarray(stream, dtype=float)) + np.cumsum(z)
    out = y.astype(np.float32).astype(float) if stream[0] == 0 else y
    return out + 0.0  # no signed zeros (a separate finding)


def test_auto_rejudges_points_passed_under_float32() -> None:
    """auto is float32 only while every output is a float32 number: once one is not, the
    points already passed are judged again in float64, and a float32 rounding there is
    a departure from the fit (no float32 slack for a float64 target)."""
    r = _audit(_mixed_precision, 8, rho=HALF)
    assert r.verdict == "inconclusive" and r.precision == "float64"
    assert [f.kind for f in r.findings] == ["not-linear"]
    assert "of float32" not in r.findings[0].detail  # judged by float64's tolerance
    forced = _audit(_mixed_precision, 8, rho=HALF, precision="float32")
    assert forced.available and forced.precision == "float32"  # what auto refused
