"""Plan files: a factorization ``B·C`` of prefix (or window) sums given by someone else, as
dense matrices, as Toeplitz coefficient columns, or as BLT buffers (docs/plan-format.md).

* :func:`read_plan_file` reads and validates a ``.json`` or ``.npz`` file into a
  :class:`PlanFile` (kind, horizon, exact, precision, scales; the coefficient columns and
  the dense matrices on demand); :func:`make_plan` does the same for an in-memory object;
  :func:`write_plan_file` writes one.
* :mod:`dpref.planfile.checks` holds the checks ``dpref plan check`` reports: the product
  is the target, causality, the L1 and L2 column sensitivities, the per-step variance —
  O(T log T) for the coefficient forms.
* The JSON Schema of the format is ``dpref/data/plan.schema.json``
  (:func:`load_plan_schema`).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from dpref.planfile.model import (
    KINDS,
    MAX_BUFFERS,
    MAX_DENSE_EXACT,
    MAX_DENSE_STEPS,
    MAX_EXACT_DERIVED,
    MAX_EXACT_STEPS,
    MAX_STEPS,
    PRECISIONS,
    PlanFile,
)
from dpref.planfile.read import (
    MAX_JSON_BYTES,
    MAX_NPZ_BYTES,
    make_plan,
    plan_document,
    read_plan_file,
    write_plan_file,
)

PLAN_SCHEMA_ID = "urn:dpref:schema:plan:1"
"""The ``$id`` of the plan-file JSON Schema."""

__all__ = [
    "KINDS",
    "MAX_BUFFERS",
    "MAX_DENSE_EXACT",
    "MAX_DENSE_STEPS",
    "MAX_EXACT_DERIVED",
    "MAX_EXACT_STEPS",
    "MAX_JSON_BYTES",
    "MAX_NPZ_BYTES",
    "MAX_STEPS",
    "PLAN_SCHEMA_ID",
    "PRECISIONS",
    "PlanFile",
    "load_plan_schema",
    "make_plan",
    "plan_document",
    "read_plan_file",
    "write_plan_file",
]


def load_plan_schema() -> dict[str, Any]:
    """The JSON Schema of plan files (``dpref/data/plan.schema.json``)."""
    text = resources.files("dpref").joinpath("data/plan.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
