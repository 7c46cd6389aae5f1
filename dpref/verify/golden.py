"""The ``golden`` suite of ``dpref verify``: the shipped vectors still come out exactly."""

from __future__ import annotations

import time

from dpref.golden import check_golden, load_shipped
from dpref.verify import VerifyOptions, VerifyRow

__all__ = ["golden_suite"]


def golden_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """The shipped golden vectors still come out of this dpref, exactly (with
    ``--mechanism``: only the named mechanisms' vectors)."""
    start = time.perf_counter()
    doc = load_shipped()
    if opts.mechanisms:
        doc = {**doc, "vectors": [v for v in doc["vectors"] if v["mechanism"] in opts.mechanisms]}
    problems = check_golden(doc)
    return [
        VerifyRow(
            "golden",
            f"{len(doc['vectors'])} vectors",
            len(doc["vectors"]),
            len(problems),
            seconds=time.perf_counter() - start,
            detail=problems[0] if problems else "stream + canonical noise -> shipped outputs",
        )
    ]
