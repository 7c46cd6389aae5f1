"""Exact audits of noise-injectable targets (dpref/audit/injected/structural.py,
docs/auditing.md §6)."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpref.audit import RecordingGenerator, exact_audit, mechanism_target
from dpref.audit.injected.structural import item_losses, stated_epsilon
from dpref.audit.isolation.recording import NoiseCallback, Requests
from dpref.audit.isolation.runners import call_in_process
from dpref.audit.pure.events import used_nodes
from dpref.cli import main
from dpref.domains import bounded_integers
from dpref.errors import DprefError, DprefTypeError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.mechanisms.base import MECHANISMS
from dpref.validation import ceil_float

sys.path.insert(0, str(Path(__file__).parent))
import injectable_targets as it

REL = Fraction(1, 10**12)


# ------------------------------------------------------------ the recorder
def test_laplace_is_scripted_and_recorded_with_numpy_broadcasting() -> None:
    rng = RecordingGenerator([1.0, -2.0, 0.5, 3.0, 4.0, 5.0, 6.0])
    a = rng.laplace(10.0, 2.0)
    assert isinstance(a, float) and a == 12.0
    b = rng.laplace([0.0, 1.0], [1.0, 3.0])  # shape from broadcasting loc and scale
    assert b.tolist() == [-2.0, 2.5]
    c = rng.laplace(0.0, [1.0, 2.0], size=(2, 2))  # scale broadcast to size
    assert c.tolist() == [[3.0, 8.0], [5.0, 12.0]]
    d = rng.laplace(scale=5.0, size=2)  # beyond the script: ξ = 0
    assert d.tolist() == [0.0, 0.0]
    assert rng.requests.scales == [2.0, 1.0, 3.0, 1.0, 2.0, 1.0, 2.0, 5.0, 5.0]


def test_laplace_rejects_what_numpy_rejects() -> None:
    rng = RecordingGenerator()
    with pytest.raises(ValueError, match="scale < 0"):
        rng.laplace(0.0, -1.0)
    with pytest.raises(ValueError, match="broadcast"):
        rng.laplace(0.0, [1.0, 2.0, 3.0], size=2)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=6),
    st.lists(st.floats(-50, 50), min_size=0, max_size=8),
    st.floats(-1e3, 1e3),
)
def test_laplace_returns_loc_plus_scale_times_xi(
    scales: list[float], script: list[float], loc: float
) -> None:
    rng = RecordingGenerator(script)
    out = rng.laplace(loc, np.array(scales))
    xi = (script + [0.0] * len(scales))[: len(scales)]
    assert out.tolist() == (loc + np.array(scales) * np.array(xi)).tolist()
    assert rng.requests.scales == scales


def test_other_laws_are_recorded_and_unknown_attributes_reported() -> None:
    rng = RecordingGenerator()
    assert rng.exponential(1.0, size=3).shape == (3,)
    rng.exponential()
    rng.integers(0, 5)
    with pytest.raises(AttributeError, match="bit_generator"):
        _ = rng.bit_generator
    assert rng.requests.other == [("exponential", 2), ("integers", 1)]
    assert rng.requests.unknown == ["bit_generator"]


def test_callback_protocol_is_scripted_laplace() -> None:
    noise = NoiseCallback([2.0, -1.0])
    assert noise(3.0, 2).tolist() == [6.0, -3.0]
    assert noise.requests.scales == [3.0, 3.0]


def test_call_in_process_turns_misbehaviour_into_findings() -> None:
    from dpref.audit.isolation.runners import CallFailure

    x = np.zeros(4)
    for fn, kind in [
        (it.raises, "exception"),
        (it.wrong_length, "wrong-length"),
        (it.returns_text, "bad-output"),
    ]:
        with pytest.raises(CallFailure) as info:
            call_in_process(fn, "rng", x, np.zeros(4))
        assert info.value.finding.kind == kind


# ------------------------------------------------------------- built-ins
def _used_node_sum(mech: Mechanism, T: int) -> Fraction:
    """``max_i Σ_{n used by the outputs} |a_ni|·Δ/b_n`` with the float (rounded-up) scales."""
    plan = mech.plan(T)
    A = plan.dense_A_exact()
    used = used_nodes(plan).tolist()
    scales = [Fraction(ceil_float(plan.scale(n))) for n in range(plan.n_nodes)]
    delta = plan.sensitivity
    return max(sum((abs(A[n][i]) * delta / scales[n] for n in used), Fraction(0)) for i in range(T))


def _examples() -> list[Any]:
    """Every pure ε-DP example (a zCDP example is refused by the audits: test_gaussian.py)."""
    return [
        pytest.param(cls, ex, id=ex.label(cls, 16))
        for cls in MECHANISMS.values()
        for ex in cls.examples
        if ex.privacy == "pure"
    ]


@pytest.mark.parametrize(("cls", "example"), _examples())
def test_builtin_exact_loss_equals_the_plan(cls: type[Mechanism], example: Any) -> None:
    T = 16
    mech = example.build(cls, 1, T)
    plan = mech.plan(T)
    report = exact_audit(mech, T, epsilon=1)
    assert report.available and not report.findings, report.summary()
    assert report.epsilon is not None and report.epsilon_lower is not None
    P = plan.privacy_sum()
    P_used = _used_node_sum(mech, T)
    U = report.epsilon
    # the loss never exceeds the node release's (plan) sum, up to float rounding of R·b
    assert U <= P * (1 + REL)
    assert report.epsilon_lower <= U <= report.epsilon_lower * (1 + REL)
    R_used = plan.R().toarray()[:, used_nodes(plan)]
    injective = int(np.linalg.matrix_rank(R_used)) == R_used.shape[1]
    assert (report.scope == "exact") == injective
    if injective:  # the outputs determine the used node noise: the loss is the used-node sum
        assert abs(U - P_used) <= REL * P_used
        if P_used.denominator <= 1000:
            assert report.epsilon_stated == P_used
        if P_used == P:
            # a dense non-integer decoder (a factorization) computes R·b in floats: its loss
            # may exceed the claim by rounding only, which the report then says
            allowed: tuple[str, ...] = ("holds-exactly", "over-noised")
            if not np.all(R_used == np.round(R_used)):
                allowed = (*allowed, "holds-within-rounding")
            assert report.outcome in allowed


@pytest.mark.parametrize("name", ["binary", "simple1", "simple2", "two-level", "hybrid"])
def test_builtin_counting_exact_at_64_is_the_privacy_sum_exactly(name: str) -> None:
    cls = MECHANISMS[name]
    mech = cls.examples[0].build(cls, Fraction(1, 3), 64)
    report = exact_audit(mech, 64, epsilon=Fraction(1, 3))
    assert report.scope == "exact"
    assert report.epsilon == mech.plan(64).privacy_sum() == Fraction(1, 3)
    assert report.outcome == "holds-exactly" and report.ok


def test_two_level_unit_blocks_outputs_leak_half_the_plan_sum() -> None:
    # block_size = 1: every item is in an item node and a block node, but the outputs use
    # only one of them, so the released vector's loss is half the node release's
    cls = MECHANISMS["two-level"]
    mech = cls(epsilon=1, horizon=16, block_size=1)
    report = exact_audit(mech, 16, epsilon=1)
    assert report.epsilon == Fraction(1, 2) and mech.plan(16).privacy_sum() == 1
    assert report.outcome == "over-noised"


def test_mechanism_target_draws_the_plan_scales_in_canonical_order() -> None:
    mech = MECHANISMS["hybrid"].examples[0].build(MECHANISMS["hybrid"], 1, 13)
    rng = RecordingGenerator(np.arange(1.0, 14.0))
    out = mechanism_target(mech)(np.zeros(13), rng)
    z = mech.plan(13).scales * np.arange(1.0, 14.0)
    assert rng.requests.scales == mech.plan(13).scales.tolist()
    assert out.tolist() == mech.release(np.zeros(13), noise=z).tolist()


# ---------------------------------------------------------- planted bugs
def test_binary_with_one_level_under_noised() -> None:
    report = exact_audit(it.binary_level0_under, 64, epsilon=1)
    assert report.scope == "exact" and report.epsilon == Fraction(8, 7)  # (L+1)/L, L = 7
    assert report.item == 1 and report.outcome == "violation" and not report.ok


@pytest.mark.parametrize("T", [1, 7, 64])
def test_fresh_noise_per_output_costs_t_epsilon(T: int) -> None:
    report = exact_audit(it.simple2_redraw, T, epsilon=1)
    assert report.epsilon == T and report.scope == "exact" and report.item == 1


def test_fresh_noise_per_output_on_integers_scales_with_delta() -> None:
    report = exact_audit(it.simple2_redraw, 6, domain=bounded_integers(0, 5))
    assert report.sensitivity == 5 and report.epsilon == 30


def test_binary_epsilon_over_log_t() -> None:
    r5 = exact_audit(it.binary_log_t, 5, epsilon=1)
    assert r5.epsilon == 3 / Fraction(float(np.log2(5)))  # the float computation, exactly
    assert abs(float(r5.epsilon) - 3 / np.log2(5)) < 1e-15 and r5.outcome == "violation"
    assert exact_audit(it.binary_log_t, 8).epsilon == Fraction(4, 3)
    r1 = exact_audit(it.binary_log_t, 1, epsilon=1)  # log₂1 = 0: no noise at all
    assert r1.infinite and r1.outcome == "violation"


def test_unnoised_output_is_an_infinite_loss() -> None:
    report = exact_audit(it.binary_exact_last, 8, epsilon=1)
    assert report.infinite and report.epsilon is None and report.outcome == "violation"
    assert "∞" in report.summary() and report.as_dict()["infinite"] is True


def test_correct_targets_and_the_callback_protocol() -> None:
    for fn in (it.binary_ok, it.binary_callback):
        report = exact_audit(fn, 64, epsilon=1)
        assert report.epsilon == 1 and report.outcome == "holds-exactly"
    assert exact_audit(it.binary_callback, 8).protocol == "callback"
    assert exact_audit(it.binary_ok, 8, epsilon=2).outcome == "over-noised"


def test_float_scales_are_stated_as_the_small_rational() -> None:
    report = exact_audit(it.simple2_seven_tenths, 16, epsilon="7/10")
    assert report.epsilon == 1 / Fraction(1 / 0.7)  # exact value of the float computation
    assert report.epsilon_stated == Fraction(7, 10) and report.outcome == "holds-exactly"
    assert stated_epsilon(Fraction(3, 7) + Fraction(1, 10**15), None) == Fraction(3, 7)
    irrational = 3 / Fraction(float(np.log2(5)))
    assert stated_epsilon(irrational, None) == irrational


@pytest.mark.parametrize(
    ("fn", "kind", "text"),
    [
        (it.binary_clipped, "not-linear", "not linear"),
        (it.binary_global_random, "not-reproducible", "does not control"),
        (it.binary_exponential, "non-laplace", "rng.exponential"),
        (it.binary_bit_generator, "unknown-attribute", "bit_generator"),
        (it.binary_data_scale, "structure-depends", "depends on the input/noise"),
        (it.raises, "exception", "boom"),
        (it.wrong_length, "wrong-length", "9 values"),
        (it.returns_text, "bad-output", "not a sequence of real numbers"),
    ],
)
def test_unanalysable_targets_are_reported_not_crashed(fn: Any, kind: str, text: str) -> None:
    report = exact_audit(fn, 8, epsilon=1)
    assert not report.available and report.outcome == "unavailable" and not report.ok
    found = [f for f in report.findings if f.kind == kind]
    assert found and text in found[0].detail + str(found[0]), report.summary()
    json.dumps(report.as_dict())


# ------------------------------------------------------ rank-deficient M
def _two_draws_per_step(x: Any, rng: Any) -> Any:
    """Each step adds two Lap(1) draws to the running count: M has repeated columns."""
    z = rng.laplace(0.0, 1.0, size=(len(x), 2)).sum(axis=1)
    return np.cumsum(np.asarray(x, dtype=float) + z)


def test_rank_deficient_structure_gives_a_certified_upper_bound() -> None:
    report = exact_audit(_two_draws_per_step, 6, epsilon=1)
    assert report.scope == "upper bound" and report.rank == 6 and report.draws == 12
    assert report.epsilon == report.epsilon_lower == 1  # LP optimum certified by the dual
    assert report.outcome == "holds-exactly"
    # an upper bound above the claim does not refute it
    assert exact_audit(_two_draws_per_step, 6, epsilon="1/2").outcome == "undetermined"


def test_item_losses_dual_bound_is_below_the_primal() -> None:
    rng = np.random.default_rng(3)
    M = rng.normal(size=(4, 7))
    A = rng.normal(size=(4, 4))
    losses = item_losses(M, A, Fraction(1))
    assert losses.method == "lp"
    for lo, up in zip(losses.lower, losses.upper, strict=True):
        assert lo is not None and up is not None and lo <= up
    top = max(u for u in losses.upper if u is not None)
    assert max(q for q in losses.lower if q is not None) >= top * (1 - REL)


# ------------------------------------------------------- API, runner, CLI
def test_runner_abstraction_is_used_for_every_call() -> None:
    from dpref.audit.isolation.runners import InProcessRunner

    calls: list[int] = []
    inner = InProcessRunner(it.binary_ok)

    def run(stream: Any, script: Any) -> tuple[Any, Requests]:
        calls.append(int(stream.size))
        return inner(stream, script)

    report = exact_audit(it.binary_ok, 8, runner=run, checks=2)
    # the fit (2 + T + K), 2 replayed random checks, 4 structured streams and the T
    # neighbours of all-high (ξ = 0 and random ξ each), the noise ladder (10 magnitudes × ±
    # at x₀, the 6 from 1e6 up also at all-high)
    fit, structured, ladder = 2 + 8 + 8, 2 * (4 + 8), 2 * (10 + 6)
    assert report.epsilon == 1 and len(calls) == report.calls == fit + 2 * 2 + structured + ladder


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"horizon": 0}, ParameterError, "horizon"),
        ({"epsilon": -1}, ParameterError, "epsilon"),
        ({"checks": 0}, ParameterError, "checks"),
        ({"protocol": "magic"}, ParameterError, "protocol"),
        ({"domain": "bits"}, DprefTypeError, "domain"),
    ],
)
def test_bad_options_name_the_parameter(kwargs: dict[str, Any], error: type, name: str) -> None:
    args: dict[str, Any] = {"horizon": 4, **kwargs}
    with pytest.raises(error, match=name) as info:
        exact_audit(it.binary_ok, **args)
    assert isinstance(info.value, DprefError)


def test_cli_exact(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(Path(__file__).parent / "injectable_targets.py")
    code = main(["audit", f"{path}:binary_log_t", "--exact", "--horizon", "8", "--epsilon", "1"])
    out = capsys.readouterr().out
    assert code == 1 and "ε = 4/3" in out and "VIOLATION" in out
    code = main(["audit", "binary", "--exact", "--horizon", "16", "--epsilon", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert (
        code == 0
        and data["epsilon"] == "1"
        and data["outcome"] == "holds-exactly"
        and data["verdict"] == "no-violation-found"
    )
