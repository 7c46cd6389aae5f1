"""The recording generator is a ``numpy.random.Generator`` (issue 25, item 2).

A target may hand it to code that checks that type (dpref's own mechanisms, scipy, a wrapper
Generator) and still be audited exactly; every way out of the script is recorded, so the
exact audit is unavailable (inconclusive) instead of wrong.
"""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction
from typing import Any

import library_rng_targets as lt
import numpy as np
import pytest

import dpref
from dpref.audit import RecordingGenerator, exact_audit
from dpref.audit.isolation.recording import _ESCAPES, OTHER_LAWS, Requests, settle
from dpref.audit.isolation.runners import call_in_process
from dpref.noise import make_rng

SCRIPTED = {"laplace", "normal", "standard_normal"}
ESCAPES = {n for n in _ESCAPES if not n.startswith("_")}


def test_it_is_a_generator_that_dpref_and_scipy_accept() -> None:
    rng = RecordingGenerator([1.0, -2.0])
    assert isinstance(rng, np.random.Generator)
    assert make_rng(rng) is rng  # dpref's own check
    out = dpref.Honaker(epsilon=1, horizon=2).release([1, 0], rng=rng)
    assert out.shape == (2,) and rng.requests.law() == "laplace"
    assert rng.requests.other == [] and rng.requests.unknown == []


def test_every_public_generator_method_is_scripted_recorded_or_an_escape() -> None:
    """No method of numpy's Generator is inherited unrecorded (a new numpy method would be a
    way around the script)."""
    public = {n for n in dir(np.random.Generator) if not n.startswith("_")}
    methods = {n for n in public if callable(getattr(np.random.Generator, n))}
    assert methods <= SCRIPTED | ESCAPES | OTHER_LAWS, methods - SCRIPTED - ESCAPES - OTHER_LAWS
    for name in public | set(_ESCAPES):
        assert getattr(RecordingGenerator, name) is not getattr(np.random.Generator, name), name
    rng = RecordingGenerator()
    rng.random(2)
    rng.choice(5)
    assert rng.requests.other == [("random", 1), ("choice", 1)]


@pytest.mark.parametrize(
    ("use", "unknown"),
    [
        (lambda r: r.bit_generator.random_raw(), ["bit_generator"]),
        (lambda r: r._bit_generator, ["_bit_generator"]),
        (lambda r: r.spawn(2)[0].laplace(), ["spawn"]),
        (lambda r: copy.deepcopy(r).laplace(), ["__reduce__"]),
        (lambda r: pickle.loads(pickle.dumps(r)).normal(), ["__reduce__"]),
        (lambda r: np.random.Generator.laplace(r), ["bit_generator"]),  # behind the methods
        (lambda r: np.random.Generator.random(r), ["bit_generator"]),
    ],
)
def test_escapes_are_recorded(use: Any, unknown: list[str]) -> None:
    rng = RecordingGenerator([1.0])
    use(rng)
    settle(rng)
    assert rng.requests.unknown == unknown
    assert rng.requests.scales == []  # nothing was scripted


def test_no_escape_records_nothing_and_a_copy_is_a_recording_generator() -> None:
    rng = RecordingGenerator([3.0, 5.0])
    assert rng.laplace() == 3.0
    twin = copy.copy(rng)
    assert isinstance(twin, RecordingGenerator) and twin.laplace() == 5.0  # the rest of the script
    assert twin.requests == Requests(scales=[1.0], laws=[("laplace", 1)])
    clean = RecordingGenerator()
    clean.normal(size=3)
    settle(clean)
    assert clean.requests.unknown == [] and repr(clean) == "RecordingGenerator()"


def test_call_in_process_settles() -> None:
    _, req = call_in_process(lt.base_method, "rng", np.zeros(4), np.ones(4))
    assert req.unknown == ["bit_generator"] and req.scales == []


@pytest.mark.parametrize("fn", [lt.raw_bits, lt.spawned, lt.base_method])
def test_escaping_targets_are_inconclusive_in_the_worker(fn: Any) -> None:
    report = exact_audit(fn, 4, epsilon=1)
    assert not report.available and report.outcome == "unavailable" and not report.ok
    assert any(f.kind == "unknown-attribute" for f in report.findings), report.summary()


def test_a_target_calling_scipy_is_audited_exactly() -> None:
    report = exact_audit(lt.scipy_counter, 6, epsilon="1/2")
    assert report.epsilon == Fraction(1, 2) and report.outcome == "holds-exactly"


def test_a_target_calling_dpref_honaker_release_is_audited_exactly() -> None:
    """Through the worker, ``Honaker(...).release(stream, rng=rng)`` gets dpref's own exact
    μ²; with node std σ² instead of σ (σ² = L/(2ρ) = 1/2 at T = 8, ρ = 4) each node's std
    is multiplied by σ, so μ² is divided by σ² = 1/2: exactly twice, up to the float
    rounding of σ."""
    T = 8
    own = exact_audit(dpref.Honaker(rho=4, horizon=T), T, rho=4)
    via = exact_audit(lt.honaker, T, rho=4)
    assert via.mu_squared is not None and own.mu_squared is not None
    assert abs(via.mu_squared / own.mu_squared - 1) < Fraction(1, 10**12)
    assert via.outcome == own.outcome and via.ok
    buggy = exact_audit(lt.honaker_sigma2, T, rho=4)
    assert buggy.mu_squared is not None and buggy.findings == []
    assert abs(buggy.mu_squared / own.mu_squared - 2) < Fraction(1, 10**12)
    assert buggy.mu_squared > 2 * 4 and not buggy.ok  # μ² > 2ρ: a violation at T = 8
    wrapped = exact_audit(lt.honaker_wrapped_sigma2, T, rho=4)
    assert wrapped.mu_squared == buggy.mu_squared


@pytest.mark.slow
def test_honaker_variance_as_std_at_t64_stays_within_rho_4() -> None:
    """Issue 25's case: ρ = 4, T = 64 (L = 7, σ² = 7/8): the plan-level ρ is 4/(7/8) = 4.57,
    but the released outputs are exactly μ² = 7.9556 < 8 = 2ρ: no violation."""
    report = exact_audit(lt.honaker_sigma2, 64, rho=4)
    assert report.mu_squared is not None and report.findings == []
    assert round(float(report.mu_squared), 4) == 7.9556
    assert report.ok


def test_a_laplace_honaker_release_is_audited_like_dprefs_own() -> None:
    own = exact_audit(dpref.Honaker(epsilon=1, horizon=8), 8, epsilon=1)
    via = exact_audit(lt.honaker_laplace, 8, epsilon=1)
    assert via.findings == [] and via.law == "laplace"
    assert via.epsilon == own.epsilon and via.scope == own.scope and via.ok
