"""Every mechanism class has a proof module (OpenDP's rule: an unproven construction does
not build).  When decayed sums land, this fails until ``proofs.registry.PROOF_MODULES``
maps WindowSum, AllWindowSum, ExponentialSum and PolynomialSum to their proof module."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

import dpref
from dpref import Binary, Mechanism
from dpref.errors import ParameterError
from dpref.mechanisms.base import EXACT, BudgetTerm
from proofs.registry import PROOF_MODULES, proof_for


@pytest.mark.parametrize("name", sorted(dpref.MECHANISMS))
def test_every_mechanism_class_has_a_proof_module(name: str) -> None:
    cls = dpref.MECHANISMS[name]
    key = f"{cls.__module__}.{cls.__qualname__}"
    assert key in PROOF_MODULES, f"{key} has no proof module in proofs.registry.PROOF_MODULES"
    module = importlib.import_module(PROOF_MODULES[key])
    assert cls.__qualname__ in module.PROOFS, f"{module.__name__}.PROOFS lacks {cls.__qualname__}"
    doc = module.__doc__ or ""
    assert "Theorem" in doc and "Proof" in doc and "References" in doc
    held_to, fn = proof_for(cls)
    assert held_to is cls and callable(fn)


def test_registered_modules_exist_and_name_their_classes() -> None:
    for key, module_name in PROOF_MODULES.items():
        module = importlib.import_module(module_name)
        assert key.rsplit(".", 1)[1] in module.PROOFS


def test_a_subclass_is_held_to_its_parents_theorem() -> None:
    class Sub(Binary):
        pass

    held_to, _ = proof_for(Sub)
    assert held_to is Binary


def test_an_unregistered_mechanism_has_no_proof() -> None:
    class Unproven(Mechanism):
        name = "unproven"

        def budget_terms(self, ops: Any = EXACT, **symbols: Any) -> list[BudgetTerm]:
            return []

        nodes = recombination = variance_exact = combine = target = online = None  # type: ignore[assignment]

    with pytest.raises(ParameterError, match="no proof module"):
        proof_for(Unproven)
