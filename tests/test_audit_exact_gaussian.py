"""The exact μ of noise-injectable Gaussian targets (dpref/audit/gaussian/l2loss.py, structural.py;
docs/auditing.md §9, "Gaussian draws: the exact μ").

Everything here is deterministic exact arithmetic (no statistical test, so no
false-failure rate): the expected values are closed forms evaluated exactly on the float
σ each target computes.
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

from dpref.audit import RecordingGenerator, exact_audit, mechanism_target
from dpref.audit.gaussian.gaussian_model import GaussianModel
from dpref.audit.gaussian.l2loss import item_mu_squared
from dpref.audit.isolation.recording import NoiseCallback, Requests
from dpref.audit.isolation.runners import InProcessRunner, _requests, call_in_process
from dpref.audit.reports.audit_report import AuditReport
from dpref.cli import main
from dpref.errors import DprefError, ParameterError
from dpref.mechanisms import BLT, Binary, Honaker, SqrtFactorization
from dpref.mechanisms.base import MECHANISMS

sys.path.insert(0, str(Path(__file__).parent))
import injectable_gaussian_targets as ig
import injectable_targets as it

HERE = Path(__file__).parent
SPEC = str(HERE / "injectable_gaussian_targets.py")
HALF = Fraction(1, 2)
REL = Fraction(1, 10**12)


def _audit(fn: Any, T: int, **kw: Any) -> Any:
    """The exact audit of a third-party function, called in this process (the analysis
    under test; the worker path is tested through the CLI and below)."""
    return exact_audit(fn, T, runner=InProcessRunner(fn), **kw)


def _sigma(T: int) -> Fraction:
    return Fraction(math.sqrt(T.bit_length() / (2 * 0.5)))


# ------------------------------------------------------------ the recorder
def test_normal_draws_are_scripted_and_recorded_with_their_law() -> None:
    rng = RecordingGenerator([1.0, -2.0, 0.5, 3.0, 4.0, 5.0])
    assert rng.normal(10.0, 2.0) == 12.0
    assert rng.normal([0.0, 1.0], [1.0, 3.0]).tolist() == [-2.0, 2.5]
    assert rng.laplace(0.0, 2.0) == 6.0
    z = rng.standard_normal(2)
    assert z.tolist() == [4.0, 5.0]
    assert rng.requests.scales == [2.0, 1.0, 3.0, 2.0, 1.0, 1.0]
    assert rng.requests.laws == [("normal", 3), ("laplace", 1), ("normal", 2)]
    assert rng.requests.law() == "mixed" and rng.requests.other == []
    only = RecordingGenerator([1.5])
    out = np.empty(2, dtype=np.float32)
    assert only.standard_normal(out=out, dtype=np.float32) is out and out.tolist() == [1.5, 0.0]
    assert isinstance(only.standard_normal(), float)
    assert only.requests.law() == "normal" and Requests().law() == "none"
    with pytest.raises(ValueError, match="scale < 0"):
        only.normal(0.0, -1.0)
    assert NoiseCallback([2.0])(1.0) == 2.0  # the callback protocol stays Laplace
    noise = NoiseCallback([2.0])
    noise(1.0)
    assert noise.requests.laws == [("laplace", 1)]


def test_worker_replies_carry_the_laws_and_malformed_ones_are_refused() -> None:
    scales = np.array([1.0, 2.0])
    good = json.dumps({"detail": "", "other": [], "unknown": [], "laws": [["normal", 2]]})
    parsed = _requests(scales, good)
    assert parsed is not None and parsed[1].laws == [("normal", 2)]
    for laws in ([["normal", 1]], [["cauchy", 2]], [["normal", 0], ["normal", 2]], "x"):
        bad = json.dumps({"detail": "", "other": [], "unknown": [], "laws": laws})
        assert _requests(scales, bad) is None, laws
    old = json.dumps({"detail": "", "other": [], "unknown": []})
    assert _requests(scales, old) is None


# ------------------------------------------------------------ the algebra
def _lstsq(M: Any, A: Any) -> list[float | None]:
    out: list[float | None] = []
    for i in range(A.shape[1]):
        v = np.linalg.lstsq(M, A[:, i], rcond=None)[0] if M.shape[1] else np.zeros(0)
        fit = M @ v if M.shape[1] else np.zeros(A.shape[0])
        out.append(float(v @ v) if np.abs(fit - A[:, i]).max(initial=0.0) < 1e-8 else None)
    return out


def test_least_norm_agrees_with_float_least_squares() -> None:
    rng = np.random.default_rng(7)
    methods = set()
    for _ in range(60):
        T, K = int(rng.integers(1, 7)), int(rng.integers(0, 10))
        M = rng.integers(-2, 3, size=(T, K)).astype(float) * rng.choice([1.0, 0.5, 3.0], K)
        if K > 1 and rng.random() < 0.3:
            M[:, 1] = M[:, 0]  # a duplicate draw
        if K and rng.random() < 0.3:
            M[:, -1] = 0.0  # an unused draw
        A = rng.integers(-1, 2, size=(T, T)).astype(float)
        got = item_mu_squared(M, A, Fraction(1))
        methods.add(got.method)
        for g, want in zip(got.mu_squared, _lstsq(M, A), strict=True):
            assert (g is None) == (want is None)
            if g is not None and want is not None:
                assert abs(float(g) - want) <= 1e-9 * max(1.0, want)
    assert methods == {"unique", "free", "rows"}


def test_hand_computed_cases() -> None:
    one = Fraction(1)
    # duplicate draws: y = σ(ξ₁ + ξ₂) + x → v = (1/2σ, 1/2σ), μ² = 1/(2σ²)
    M = np.array([[2.0, 2.0]])
    r = item_mu_squared(M, np.array([[1.0]]), one)
    assert r.mu_squared == [Fraction(1, 8)] and (r.rank, r.used, r.free) == (1, 2, 1)
    # an unused draw changes nothing; Δ scales μ² by Δ²
    M = np.array([[2.0, 0.0]])
    r = item_mu_squared(M, np.array([[1.0]]), Fraction(3))
    assert r.mu_squared == [Fraction(9, 4)] and r.used == 1 and r.method == "unique"
    # singular M, consistent and inconsistent items: y₁ = ξ + x₁, y₂ = ξ + x₂
    M = np.array([[1.0], [1.0]])
    assert item_mu_squared(M, np.eye(2), one).mu_squared == [None, None]
    A2 = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert item_mu_squared(M, A2, one).mu_squared == [Fraction(1), Fraction(0)]
    # no draws at all: an item that moves an output is not covered
    assert item_mu_squared(np.zeros((2, 0)), A2, one).mu_squared == [None, Fraction(0)]
    # two outputs, three draws (f = 1 ≤ r = 2): y = [ξ₁ + ξ₃, ξ₂ + ξ₃] + x₁·(1, 1)
    M = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    A = np.array([[1.0, 0.0], [1.0, 0.0]])
    # least norm of v₁ + v₃ = 1, v₂ + v₃ = 1: v = (1/3, 1/3, 2/3), ‖v‖² = 2/3
    assert item_mu_squared(M, A, one).mu_squared == [Fraction(2, 3), Fraction(0)]


def test_work_limit_is_a_parameter_error_naming_the_horizon() -> None:
    M = np.tril(np.ones((6, 6))) * 0.3
    with pytest.raises(ParameterError, match=r"horizon=6: .* word operations"):
        item_mu_squared(M, np.eye(6), Fraction(1), max_work=10)


# ------------------------------------------------------------ planted targets
def _binary_closed_forms(T: int) -> dict[str, Fraction]:
    L = T.bit_length()
    s = _sigma(T)
    s15 = Fraction(0.85 * float(s))
    redraw = sum((Fraction(1, bin(t).count("1")) for t in range(1, T + 1)), Fraction(0))
    return {
        "binary_ok": L / s**2,
        "binary_standard_normal": L / s**2,
        "binary_sigma_15pct": L / s15**2,
        "binary_level0_under": (L + 3) / s**2,
        "binary_node_sensitivity": Fraction(L),
        "binary_redraw": redraw / s**2,
    }


@pytest.mark.parametrize(
    ("name", "stated", "outcome"),
    [
        ("binary_ok", Fraction(1), "holds-exactly"),
        ("binary_standard_normal", Fraction(1), "holds-exactly"),
        ("binary_sigma_15pct", Fraction(400, 289), "violation"),
        ("binary_level0_under", Fraction(8, 5), "violation"),
        ("binary_node_sensitivity", Fraction(5), "violation"),
        ("binary_redraw", Fraction(23, 12), "violation"),
    ],
)
def test_planted_binary_targets_exact_mu(name: str, stated: Fraction, outcome: str) -> None:
    r = _audit(getattr(ig, name), 16, rho=HALF)
    assert r.available and r.law == "normal" and r.privacy == "zcdp", r.summary()
    assert r.mu_squared == _binary_closed_forms(16)[name]  # exact, on the float σ
    assert r.mu_squared_stated == stated and r.outcome == outcome
    assert r.rho == r.mu_squared / 2 and r.mu is not None
    assert Fraction(r.mu) ** 2 >= r.mu_squared  # rounded up
    assert r.mu_item == 1 and r.exit_code == (1 if outcome == "violation" else 0)


def test_sqrt_targets_and_the_decoder_bug() -> None:
    for fn in (ig.sqrt_ok, ig.sqrt_decoder_off):
        r = _audit(fn, 16, mu=1)
        assert r.privacy == "gdp" and r.mu_squared is not None and r.mu_squared_stated == 1
        # the decoder is post-processing: item 1's μ² = Σ c_k²/σ² = 2ρ = 1 (up to the
        # rounding of σ), whatever it decodes with
        assert abs(r.mu_squared - 1) <= REL, r.summary()
        assert r.outcome in ("holds-exactly", "holds-within-rounding") and r.ok


@pytest.mark.parametrize(
    ("fn", "kind", "text"),
    [
        (ig.binary_mixed, "mixed-noise", "both Laplace and normal"),
        (ig.binary_data_sigma, "structure-depends", "depends on the input/noise"),
        (ig.binary_global_normal, "not-reproducible", "does not control"),
    ],
)
def test_unanalysable_gaussian_targets_are_findings(fn: Any, kind: str, text: str) -> None:
    r = _audit(fn, 8, rho=HALF)
    assert r.outcome == "unavailable" and r.exit_code == 3 and r.mu_squared is None
    found = [f for f in r.findings if f.kind == kind]
    assert found and text in found[0].detail, r.summary()
    json.dumps(r.as_dict())


def test_claims_of_the_other_law_are_reported_not_misanalysed() -> None:
    # a Gaussian target with a pure-ε claim: its pure loss is unbounded, exactly
    r = _audit(ig.binary_ok, 8, epsilon=1)
    assert r.privacy == "pure" and r.outcome == "violation" and r.infinite
    assert "Gaussian noise" in r.reason and r.mu_squared == 4 / _sigma(8) ** 2
    # a Laplace target with a μ claim: its ε is computed, the claim is not judged
    r = _audit(it.binary_ok, 8, mu=1)
    assert r.outcome == "law-mismatch" and r.verdict == "inconclusive" and r.epsilon == 1
    # no claim: the law picks the view
    assert _audit(ig.binary_ok, 8).privacy == "gdp"
    assert _audit(ig.binary_ok, 8).outcome == "no-claim"
    assert _audit(it.binary_ok, 8).privacy == "pure"


def test_over_noised_and_report_fields() -> None:
    r = _audit(ig.binary_ok, 16, rho=1)
    assert r.outcome == "over-noised" and r.claimed_mu_squared == 2
    d = r.as_dict()
    json.dumps(d)
    assert d["law"] == "normal" and d["privacy"] == "zcdp" and d["claimed_rho"] == "1"
    assert Fraction(d["mu_squared"]) == r.mu_squared and d["mu_squared_stated"] == "1"
    assert d["rho"] == str(r.mu_squared / 2) and len(d["item_mu_squared"]) == 16
    assert d["mu_method"] == "unique" and d["structure"]["free_draws"] == 0
    text = r.summary()
    assert "16 Gaussian draws" in text and "μ² = 1" in text and "claimed     ρ = 1" in text


class _WithMu(AuditReport):
    mu_lower_bound = 0.93


def test_sampled_bound_shown_in_the_gdp_view() -> None:
    sampled = object.__new__(_WithMu)
    sampled.confidence = 0.99  # type: ignore[misc]
    r = _audit(ig.binary_ok, 8, mu=1, sampled=sampled)
    assert r.sampled_lower_bound == 0.93 and "μ ≥ 0.9300" in r.summary()
    plain = object.__new__(AuditReport)  # no mu_lower_bound: nothing is shown
    plain.confidence = 0.99  # type: ignore[misc]
    r = _audit(ig.binary_ok, 8, mu=1, sampled=plain)
    assert r.sampled_lower_bound is None and "sampled" not in r.summary()


# ------------------------------------------------------------ built-in mechanisms
def _model_mu_squared(mech: Any, T: int) -> float:
    model = GaussianModel.of(mech, T)
    zero = np.zeros(T)
    return max(model.shift(zero, np.eye(T)[i]).mu ** 2 for i in range(T))


@pytest.mark.parametrize(
    "build",
    [
        lambda: Binary(rho=HALF, horizon=16),
        lambda: Honaker(rho=HALF, horizon=16),
        lambda: SqrtFactorization(rho=HALF, horizon=16),
        lambda: BLT(rho=HALF, horizon=16),
    ],
    ids=["binary", "honaker", "sqrt", "blt"],
)
def test_builtin_gaussian_mechanisms_match_the_gaussian_model(build: Any) -> None:
    mech = build()
    r = exact_audit(mech, 16, rho=mech.declared_rho)
    assert r.available and not r.findings and r.law == "normal", r.summary()
    assert r.mu_squared is not None
    assert abs(float(r.mu_squared) - _model_mu_squared(mech, 16)) <= 1e-9
    assert r.ok, r.summary()


def test_every_zcdp_example_holds_its_claim() -> None:
    T = 8
    for cls in MECHANISMS.values():
        for ex in cls.examples:
            if ex.privacy != "zcdp":
                continue
            mech = ex.build(cls, HALF, T)
            r = exact_audit(mech, T, rho=HALF)
            assert r.available and r.ok, (ex.label(cls, T), r.summary())
            assert abs(float(r.mu_squared or 0) - _model_mu_squared(mech, T)) <= 1e-9


def test_mechanism_target_draws_normal_noise_for_gaussian_mechanisms() -> None:
    mech = Binary(rho=HALF, horizon=4)
    f = mechanism_target(mech)
    y, req = call_in_process(f, "rng", np.zeros(4), np.ones(4))
    sd = float(mech.noise_multipliers(4))  # type: ignore[arg-type]
    assert req.law() == "normal" and req.scales == [sd] * 4
    assert np.allclose(y, mech.release(np.zeros(4), noise=np.full(4, sd)))


# ------------------------------------------------------------ the command line
def test_cli_exact_gaussian(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["audit", f"{SPEC}:binary_sigma_15pct", "--exact", "--horizon", "8", "--rho", "1/2"]
    )
    out = capsys.readouterr().out
    assert code == 1 and "VIOLATION" in out and "μ² = 400/289" in out, out
    code = main(["audit", f"{SPEC}:binary_ok", "--exact", "--horizon", "8", "--mu", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["outcome"] == "holds-exactly" and data["privacy"] == "gdp"
    code = main(["audit", "honaker", "--rho", "1/2", "--exact", "--horizon", "8", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["outcome"] == "over-noised" and data["law"] == "normal"


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--rho", "1/2", "--epsilon", "1"], "give one claim"),
        (["--rho", "1/2", "--mu", "1"], "give one claim"),
        (["--mu", "0"], "mu="),
        (["--mu", "-1"], "mu="),
        (["--rho", "0"], "rho="),
        (["--mu", "nan"], "mu="),
    ],
)
def test_cli_exact_gaussian_bad_input(
    args: list[str], text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["audit", f"{SPEC}:binary_ok", "--exact", "--horizon", "4", *args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and text in err, err


def test_cli_builtin_takes_rho_not_mu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "binary", "--exact", "--horizon", "4", "--mu", "1"]) == 2
    assert "--mu=1" in capsys.readouterr().err


def test_api_bad_claims() -> None:
    with pytest.raises(ParameterError, match="give one claim"):
        exact_audit(ig.binary_ok, 4, rho=HALF, mu=1)
    with pytest.raises(ParameterError, match="privacy="):
        exact_audit(ig.binary_ok, 4, rho=HALF, privacy="gdp")
    with pytest.raises(DprefError, match="privacy="):
        exact_audit(ig.binary_ok, 4, privacy="approx")
    with pytest.raises(ParameterError, match="mu="):
        exact_audit(ig.binary_ok, 4, mu=Fraction(2) ** 201)


# ------------------------------------------------------------ larger T (slow)
@pytest.mark.slow
@pytest.mark.parametrize(
    ("build", "T"),
    [
        (lambda T: Binary(rho=HALF, horizon=T), 1024),
        (lambda T: Honaker(rho=HALF, horizon=T), 64),
        (lambda T: SqrtFactorization(rho=HALF, horizon=T), 64),
        (lambda T: BLT(rho=HALF, horizon=T), 128),
    ],
    ids=["binary-1024", "honaker-64", "sqrt-64", "blt-128"],
)
def test_builtins_at_larger_horizons_match_the_model(build: Any, T: int) -> None:
    mech = build(T)
    r = exact_audit(mech, T, rho=HALF)
    assert r.available and r.ok and r.mu_squared is not None, r.summary()
    # GaussianModel.shift's formula for every item at once (one SVD, not T)
    model = GaussianModel.of(mech, T)
    U, S, _ = np.linalg.svd(model.R * model.sigma, full_matrices=False)
    base = model.mean(np.zeros(T))
    D = np.stack([model.mean(np.eye(T)[i]) - base for i in range(T)], axis=1)
    want = float((((U.T @ D) / S[:, None]) ** 2).sum(axis=0).max())
    assert abs(float(r.mu_squared) - want) <= 1e-9


@pytest.mark.slow
def test_dense_decoder_beyond_the_work_budget_is_refused() -> None:
    with pytest.raises(ParameterError, match=r"horizon=128: .* word operations"):
        exact_audit(SqrtFactorization(rho=HALF, horizon=128), 128, rho=HALF)
