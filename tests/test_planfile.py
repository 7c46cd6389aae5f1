"""Plan files (dpref/planfile) and ``dpref plan check`` on the Toeplitz and BLT forms, float
hygiene (tolerance in the budget comparison, float32 plans), and B·C ≠ target as a failed
check (docs/plan-format.md).  The T = 2¹⁶ and 2²⁰ runs are ``slow``; the default tests stay
at T ≤ 4096."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpref.mechanisms.factorization as fz
from dpref.errors import ParameterError
from dpref.mechanisms.factorization import BLT
from dpref.planfile import (
    MAX_DENSE_STEPS,
    MAX_NPZ_BYTES,
    load_plan_schema,
    make_plan,
    plan_document,
    read_plan_file,
    write_plan_file,
)
from dpref.planfile.numeric import convolution_error_bound, convolve, exact_dot

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"

# BLT.optimise(1024, 3) (defaults: seed 0, 3 starts, 3000 evaluations) returns these θ, ω on
# the 2⁻³² grid; as float64 they are exact.  Its largest variance at T = 1024, ρ = 1/2 is
# 10.74266091753360 (BLT(...).variance), the 10.7426609175361 to within 3·10⁻¹².
BLT_THETA = ["1072638935/1073741824", "2101441069/2147483648", "1596189413/2147483648"]
BLT_OMEGA = ["190872759/4294967296", "517736801/4294967296", "1337408841/4294967296"]


def sqrt_coefficients(T: int, dtype: Any = np.float64) -> Any:
    """jax_privacy's ``optimal_max_error_strategy_coefs``: a cumulative product of
    (2k−1)/(2k) in floats."""
    k = np.arange(1, T, dtype=np.float64)
    c = np.empty(T)
    c[0] = 1.0
    np.cumprod((2 * k - 1) / (2 * k), out=c[1:])
    return c.astype(dtype)


def check(path: Path | str, **kw: Any) -> dict[str, Any]:
    from dpref.cli.plan import check_file

    return check_file(str(path), **kw)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from dpref.cli import main

    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / name
    if name.endswith(".npz"):
        np.savez(path, **doc)
    else:
        path.write_text(json.dumps(doc))
    return path


# ------------------------------------------------------------------ reading
def test_read_the_three_forms_and_round_trip(tmp_path: Path) -> None:
    dense = read_plan_file(EXAMPLES / "sqrt-T8.json")
    assert (dense.kind, dense.horizon, dense.exact, dense.precision) == ("dense", 8, True, "exact")
    assert dense.nodes == 8 and dense.scales is None
    toe = make_plan({"kind": "toeplitz", "C": [1, "1/2", "3/8"], "B": [1, "1/2", "3/8"]})
    assert toe.exact and toe.strategy_column() == [1, Fraction(1, 2), Fraction(3, 8)]
    B, C = toe.to_dense()
    assert C == [[1, 0, 0], [Fraction(1, 2), 1, 0], [Fraction(3, 8), Fraction(1, 2), 1]]
    assert B == C
    banded = make_plan({"kind": "toeplitz", "C": [1.0, 0.5], "horizon": 4})
    assert banded.horizon == 4 and not banded.exact and banded.precision == "float64"
    assert banded.strategy_column().tolist() == [1.0, 0.5, 0.0, 0.0]
    # the derived decoder of c = 1 + x/2 for prefix sums: 1/((1−x)(1+x/2))
    np.testing.assert_allclose(banded.decoder_column(), [1, 0.5, 0.75, 0.625], rtol=1e-15)
    blt = make_plan({"kind": "blt", "theta": ["1/2"], "omega": ["1/4"], "horizon": 4})
    assert blt.strategy_column() == [1, Fraction(1, 4), Fraction(1, 8), Fraction(1, 16)]
    assert blt.strategy_column(False).tolist() == [1, 0.25, 0.125, 0.0625]
    for plan in (toe, blt, banded):
        for name in ("p.json", "p.npz"):
            write_plan_file(tmp_path / name, plan)
            back = read_plan_file(tmp_path / name)
            assert back.kind == plan.kind and back.horizon == plan.horizon
            assert np.array_equal(back.strategy_column(False), plan.strategy_column(False))
        assert make_plan(plan_document(plan)).exact == plan.exact
    assert read_plan_file(tmp_path / "p.json", precision="float32").precision == "float32"
    with pytest.raises(ParameterError, match="to_dense materialises at most 2"):
        banded.to_dense(limit=2)
    with pytest.raises(ParameterError, match="a dense plan has no coefficient column"):
        dense.strategy_column()


@pytest.mark.parametrize(
    ("doc", "named"),
    [
        ({"kind": "band", "C": [1]}, "kind='band'"),
        ({"kind": "toeplitz"}, "C=missing"),
        ({"kind": "toeplitz", "C": [1, 0], "B": [1, 1, 1]}, "B: 3 coefficients"),
        ({"kind": "toeplitz", "C": [1, 0], "horizon": 1}, "horizon=1"),
        ({"kind": "toeplitz", "C": [[1]]}, "C[0]=[1]"),
        ({"kind": "toeplitz", "C": [1.0, "inf"]}, "C[1]='inf'"),
        ({"kind": "toeplitz", "C": [1.0, 1e308 * 10]}, "C[1]=inf"),
        ({"kind": "toeplitz", "C": [1], "scales": [1]}, "scales=...: unknown; choose from "),
        ({"kind": "blt", "theta": ["1/2"], "omega": ["1/4"]}, "horizon=missing"),
        ({"kind": "blt", "theta": ["1/2"], "omega": [1, 2], "horizon": 3}, "omega: 2 scales"),
        ({"kind": "blt", "theta": [1.5], "omega": [0.1], "horizon": 3}, "theta[0]=1.5"),
        ({"kind": "blt", "theta": [0.5], "omega": [0.1], "horizon": 2**21}, "horizon=2097152"),
        ({"kind": "toeplitz", "C": [1], "precision": "float32"}, "is exact"),
        ({"kind": "toeplitz", "C": [1.0], "precision": "float16"}, "precision='float16'"),
    ],
)
def test_malformed_coefficient_plans_name_the_entry(doc: dict[str, Any], named: str) -> None:
    with pytest.raises(ParameterError) as info:
        make_plan(doc)
    assert named in str(info.value)


@pytest.mark.parametrize(
    ("arrays", "named"),
    [
        ({"kind": np.array(3), "C": np.ones(3)}, "kind: must be a string"),
        ({"kind": np.array("toeplitz"), "C": np.ones((2, 2))}, "C: shape (2, 2)"),
        ({"kind": np.array("blt"), "theta": [0.5], "omega": [0.5], "horizon": 2.0}, "horizon:"),
        ({"kind": np.array("toeplitz"), "C": np.array(["a"])}, "dtype <U1"),
    ],
)
def test_malformed_npz_plans_name_the_entry(
    arrays: dict[str, Any], named: str, tmp_path: Path
) -> None:
    path = write(tmp_path, "bad.npz", arrays)
    with pytest.raises(ParameterError) as info:
        read_plan_file(path)
    assert named in str(info.value)
    with pytest.raises(ParameterError, match="must be an object"):
        make_plan([1, 2])  # type: ignore[arg-type]


def test_npz_caps_match_the_documented_4096() -> None:
    # two float64 4096 × 4096 matrices (the docs' limit) and their .npz headers fit
    assert MAX_DENSE_STEPS == 4096
    assert 1000 <= MAX_NPZ_BYTES - 2 * 4096 * 4096 * 8 <= 2**20
    doc = (ROOT / "docs" / "plan-format.md").read_text()
    assert "4096" in doc and f"{MAX_NPZ_BYTES:,}" in doc


def test_schema_validates_the_examples_and_rejects_broken_ones() -> None:
    import jsonschema

    schema = load_plan_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = [
        json.loads((EXAMPLES / name).read_text())
        for name in ("sqrt-T8.json", "binary-T4.json", "sqrt-T8-toeplitz.json", "blt-T16.json")
    ]
    good.append({"kind": "toeplitz", "C": [1.0, 0.5], "horizon": 4, "precision": "float32"})
    for doc in good:
        validator.validate(doc)
        make_plan(doc)  # and the reader accepts what the schema accepts
    for bad in (
        {"kind": "blt", "theta": [0.5], "omega": [0.1]},
        {"kind": "toeplitz", "B": [1]},
        {"kind": "toeplitz", "C": [1], "precision": "float16"},
        {"C": [[1]], "B": [[1]], "extra": 1},
        {"kind": "toeplitz", "C": [True]},
    ):
        assert not validator.is_valid(bad), bad


# ------------------------------------------------------------------ numerics
def test_fft_error_bound_holds_and_is_not_vacuous() -> None:
    rng = np.random.default_rng(26)
    for T in (7, 300, 4096):
        a = rng.standard_normal(T) * np.exp(-rng.uniform(0, 20, T))
        b = rng.standard_normal(T)
        z = convolve(a, b, T)
        bound = convolution_error_bound(a, b, T)
        assert bound < 1e-9 * float(np.linalg.norm(a) * np.abs(b).sum())
        for k in rng.integers(0, T, 12).tolist():
            exact = exact_dot(a[: k + 1], b[k::-1])
            assert abs(z[k] - exact) <= bound


def test_exact_dot_is_exact_including_tiny_entries() -> None:
    a = np.array([1e-300, 3.0, 2.0**-600, 0.1])
    b = np.array([1e-300, 1.0 / 3, 2.0**-600, 10.0])
    want = sum((Fraction(x) * Fraction(y) for x, y in zip(a, b, strict=True)), Fraction(0))
    assert exact_dot(a, b) == float(want)


# ------------------------------------------------------------------ checks
def test_exact_toeplitz_agrees_with_the_dense_and_the_mechanism(tmp_path: Path) -> None:
    T = 16
    c = [str(v) for v in fz.sqrt_coefficients(T).fractions()]
    toe = check(write(tmp_path, "t.json", {"kind": "toeplitz", "C": c, "B": c}), rho="1/2")
    derived = check(write(tmp_path, "d.json", {"kind": "toeplitz", "C": c}), rho="1/2")
    B, C = make_plan({"kind": "toeplitz", "C": c}).to_dense()
    dense_doc = {"C": [[str(v) for v in r] for r in C], "B": [[str(v) for v in r] for r in B]}
    dense = check(write(tmp_path, "dense.json", dense_doc), rho="1/2")
    for r in (toe, derived, dense):
        assert r["mode"] == "exact" and r["unbiased"] is True
        assert Fraction(r["sensitivity_l2_squared_exact"]) == fz.sqrt_s2(T)
        assert Fraction(r["variance"]["max_exact"]) == fz.sqrt_s2(T) ** 2
        assert r["variance"]["mean_exact"] == dense["variance"]["mean_exact"]
        assert r["sensitivity_l1_exact"] == str(fz.sqrt_s1(T))
    # docs/plan-format.md: the shipped Toeplitz example prints what the dense one prints
    a, b = (
        check(EXAMPLES / "sqrt-T8-toeplitz.json", rho="1/2"),
        check(EXAMPLES / "sqrt-T8.json", rho="1/2"),
    )
    for key in ("sensitivity_l1_exact", "sensitivity_l2_squared_exact", "variance", "sigma_needed"):
        assert a[key] == b[key]


def test_float_sqrt_coefficients_give_fsum_and_s2_squared(tmp_path: Path) -> None:
    """The cheap companion of the slow T = 2¹⁶ / 2²⁰ runs."""
    T = 4096
    c = sqrt_coefficients(T)
    s2 = math.fsum((c * c).tolist())
    for doc in (
        {"kind": "toeplitz", "C": c.tolist(), "B": c.tolist()},
        {"kind": "toeplitz", "C": c.tolist()},
    ):
        r = check(write(tmp_path, "s.json", doc), rho="1/2")
        assert r["unbiased"] is True and r["mode"] == "float (tolerance 1e-09)"
        assert r["sensitivity_l2_squared"] == pytest.approx(s2, rel=1e-12)
        assert r["sensitivity_l2_squared_upper"] >= s2
        assert r["variance"]["max"] == pytest.approx(s2 * s2, rel=1e-12)
        assert r["variance"]["argmax_t"] == T
    # and the exact S₂(T)² of the mechanism (ρ = 1/2: σ² = S₂, the largest variance σ²·S₂)
    assert r["variance"]["max"] == pytest.approx(float(fz.sqrt_s2(T) ** 2), rel=1e-12)


def test_blt_with_jax_style_float_parameters_at_1024(tmp_path: Path) -> None:
    theta = [float(Fraction(v)) for v in BLT_THETA]
    omega = [float(Fraction(v)) for v in BLT_OMEGA]
    doc = {"kind": "blt", "theta": theta, "omega": omega, "horizon": 1024}
    r = check(write(tmp_path, "blt.json", doc), rho="1/2")
    assert r["unbiased"] is True and r["decoder"] == "derived"
    assert r["variance"]["max"] == pytest.approx(10.7426609175361, abs=1e-9)
    m = BLT(rho=Fraction(1, 2), horizon=1024, theta=BLT_THETA, omega=BLT_OMEGA)
    assert r["variance"]["max"] == pytest.approx(float(m.variance_float(1024).max()), rel=1e-12)
    assert Fraction(r["sensitivity_l2_squared_upper"]) >= m.s2(1024)
    assert r["sensitivity_l2_squared"] == pytest.approx(float(m.s2(1024)), rel=1e-14)


def _normalised_plan(excess_ulps: int) -> Any:
    """A banded, column-normalised Toeplitz strategy whose float L2² is 1 + excess ulps."""
    c = sqrt_coefficients(8)
    c = c / np.linalg.norm(c)
    while math.fsum((c * c).tolist()) < 1 + excess_ulps * 2.0**-52:
        c[0] = np.nextafter(c[0], np.inf)
    return c


def test_column_normalised_plan_is_sufficient_within_the_tolerance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = _normalised_plan(4)
    assert math.fsum((c * c).tolist()) == 1.0000000000000009
    path = write(tmp_path, "band.json", {"kind": "toeplitz", "C": c.tolist(), "horizon": 64})
    code, out, _ = run_cli(["plan", "check", str(path), "--sigma", "1", "--rho", "1/2"], capsys)
    assert code == 0, out
    assert "noise sufficient: yes (ρ supported ≤ 0.500000000000000" in out
    r = check(path, sigma="1", rho="1/2")
    assert r["noise_sufficient"] is True and r["noise_sufficient_without_tolerance"] is False
    # power: without the tolerance (and float64's 2u), the same plan is a NO with the digits
    code, out, _ = run_cli(
        ["plan", "check", str(path), "--sigma", "1", "--rho", "1/2", "--tolerance", "1e-30"], capsys
    )
    assert code == 1 and "noise sufficient: NO (ρ supported ≤ 0.500000000000000" in out
    # the same as a dense float .npz (jax's materialised banded strategy)
    B, C = read_plan_file(path).to_dense()
    dense = write(tmp_path, "band.npz", {"C": C, "B": B})
    assert check(dense, sigma="1", rho="1/2")["noise_sufficient"] is True
    assert check(dense, sigma="1", rho="1/2", tolerance="1e-30")["noise_sufficient"] is False


def test_float32_plan_is_checked_at_float32_roundoff(tmp_path: Path) -> None:
    c = sqrt_coefficients(512, np.float32)
    path = write(tmp_path, "f32.npz", {"kind": np.array("toeplitz"), "C": c, "B": c})
    r = check(path, rho="1/2")
    assert r["precision"] == "float32" and r["mode"] == "float32 (tolerance 1e-09)"
    assert r["unbiased"] is True and r["max_abs_error"] > 1e-8  # float32's rounding
    # power: the same entries checked as a float64 plan miss the target by more than 1e-9
    assert check(path, rho="1/2", precision="float64")["unbiased"] is False
    doc = {"kind": "toeplitz", "C": c.tolist(), "B": c.tolist(), "precision": "float32"}
    assert check(write(tmp_path, "f32.json", doc), rho="1/2")["unbiased"] is True


def test_wrong_decoder_entry_exits_1_with_the_full_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = sqrt_coefficients(256)
    b = c.copy()
    b[40] += 1e-6
    path = write(tmp_path, "wrong.json", {"kind": "toeplitz", "C": c.tolist(), "B": b.tolist()})
    code, out, err = run_cli(["plan", "check", str(path), "--rho", "1/2", "--json"], capsys)
    assert code == 1 and err == ""
    r = json.loads(out)
    assert r["unbiased"] is False and r["mismatch"]["t"] == 41 and r["mismatch"]["i"] == 1
    assert r["mismatch"]["got"] == pytest.approx(1 + 1e-6, abs=1e-12)
    assert r["sensitivity_l2_squared"] == pytest.approx(math.fsum((c * c).tolist()), rel=1e-15)
    assert {"max", "argmax_t", "mean"} <= set(r["variance"]) and "sigma_needed" in r
    code, out, _ = run_cli(["plan", "check", str(path), "--rho", "1/2"], capsys)
    assert code == 1 and "B·C = prefix sums: NO (B·C[40][0] = 1.000001" in out
    # exact dense plans and float dense plans alike (one decoder entry wrong)
    C4 = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1]]
    B4 = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]]
    r = check(write(tmp_path, "d.json", {"C": C4, "B": B4}), epsilon="1")
    assert r["unbiased"] is False and r["mismatch"] == {"t": 3, "i": 3, "got": "0", "want": "1"}
    assert r["sensitivity_l1_exact"] == "3" and r["variance"]["max_exact"] == "18"
    Bf = [[1.0, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0.5, 0], [0, 0, 0, 1]]
    r = check(write(tmp_path, "f.json", {"C": C4, "B": Bf}), epsilon="1")
    assert r["unbiased"] is False and r["mismatch"]["got"] == 0.5
    # power: the right decoder passes
    B4[2][2] = 1
    assert check(write(tmp_path, "ok.json", {"C": C4, "B": B4}), epsilon="1")["unbiased"]


def test_entries_the_fft_bound_cannot_decide_are_recomputed_exactly(tmp_path: Path) -> None:
    T = 64
    c = np.zeros(T)
    c[0] = 1.0
    b = np.ones(T)
    b[3] += 2.0**-30  # residual exactly 2^-30 at k = 3, far inside the FFT error band
    path = write(tmp_path, "edge.json", {"kind": "toeplitz", "C": c.tolist(), "B": b.tolist()})
    at = check(path, tolerance=repr(2.0**-30))
    assert at["unbiased"] is True and at["error_bound"] > 0
    # 2⁻⁴⁴ below: above the plan's rounding allowance, inside the FFT bound
    below = check(path, tolerance=repr(2.0**-30 - 2.0**-44))
    assert below["precision_allowance"] < 2.0**-44 < below["error_bound"]
    assert below["unbiased"] is False and below["mismatch"]["t"] == 4
    assert below["mismatch"]["got"] == 1 + 2.0**-30


def test_an_undecided_product_is_not_established(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dpref.planfile.checks as checks

    c = np.zeros(64)
    c[0] = 1.0
    b = np.ones(64)
    b[3] += 2.0**-30
    path = write(tmp_path, "edge.json", {"kind": "toeplitz", "C": c.tolist(), "B": b.tolist()})
    monkeypatch.setattr(checks, "MAX_RECHECK", 0)  # no exact recomputation allowed
    code, out, _ = run_cli(["plan", "check", str(path), "--tolerance", repr(2.0**-30)], capsys)
    assert code == 1 and "B·C = prefix sums: not established (1 entries" in out
    monkeypatch.setattr(checks, "MAX_RECHECK", 64)
    assert run_cli(["plan", "check", str(path), "--tolerance", repr(2.0**-30)], capsys)[0] == 0


def test_window_target_by_coefficients(tmp_path: Path) -> None:
    T, W = 32, 5
    doc = {"kind": "toeplitz", "C": [1] + [0] * (T - 1), "B": [1] * W + [0] * (T - W)}
    r = check(write(tmp_path, "w.json", doc), target=f"window:{W}", scale="1")
    assert r["unbiased"] is True and r["variance"]["max_exact"] == str(2 * W)
    assert check(write(tmp_path, "w.json", doc), target="prefix")["unbiased"] is False
    derived = check(
        write(tmp_path, "d.json", {"kind": "toeplitz", "C": [1.0, 0.0] * 16}), target="window:5"
    )
    # b = (1 + x + … + x⁴)(1 − x²) = 1 + x − x⁵ − x⁶: Σ b_k² = 4
    assert derived["unbiased"] is True
    assert derived["variance_per_unit_noise_variance"]["max"] == pytest.approx(4, rel=1e-14)


# ------------------------------------------------------------------ slow: production sizes
@pytest.mark.slow
@pytest.mark.parametrize("T", [2**16, 2**20])
def test_sqrt_coefficients_at_production_sizes(T: int, tmp_path: Path) -> None:
    c = sqrt_coefficients(T)
    s2 = math.fsum((c * c).tolist())
    path = write(tmp_path, "s.json", {"kind": "toeplitz", "C": c.tolist(), "B": c.tolist()})
    r = check(path, rho="1/2")
    assert r["unbiased"] is True
    assert r["sensitivity_l2_squared"] == pytest.approx(s2, rel=1e-12)
    assert r["variance"]["max"] == pytest.approx(s2 * s2, rel=1e-12)
    derived = check(write(tmp_path, "d.json", {"kind": "toeplitz", "C": c.tolist()}), rho="1/2")
    assert derived["unbiased"] is True
    assert derived["variance"]["max"] == pytest.approx(s2 * s2, rel=1e-12)


@pytest.mark.parametrize("c", [[0, 1, 0], [0.0, 1.0, 0.0]])
def test_singular_strategy_without_decoder_is_a_failed_check(c: list[Any], tmp_path: Path) -> None:
    """c₀ = 0: no decoder exists; B·C ≠ Q at t = 1 (exit 1, report), not a malformed file."""
    r = check(write(tmp_path, "s.json", {"kind": "toeplitz", "C": c}), rho="1/2")
    assert r["unbiased"] is False and r["mismatch"]["t"] == 1
    assert r["sensitivity_l2_squared"] == 1
