"""``dpref prove [--mechanism NAME] [--json]``: run the proofs, one row per claim.

Status is ``proven about the code`` (every step discharged, and the proof evaluated the
functions the release uses), ``proven lemma`` (discharged, about no class code),
``checked for T ≤ N`` (an exact exhaustive check), ``note`` (a citation, not a claim) or
``FAILED``; a table of the counts of each kind per mechanism follows.  The command exits
1 if any claim fails.  With ``--json`` it prints one object ``{"rows": [...], "counts":
{mechanism: {kind: n}}, "passed": bool}``.
This module also provides the ``proofs`` suite of ``dpref verify`` (:func:`verify_suite`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from dpref.cli.common import DprefParser
from dpref.errors import DprefError
from dpref.verify import Part, Suite, VerifyOptions, VerifyRow, splittable

if TYPE_CHECKING:
    from proofs.core import ClaimResult

__all__ = ["add_parser", "main", "run", "verify_suite"]

DESCRIPTION = """\
Run the proofs of every mechanism's declared privacy budget and print one row per claim.
A claim's status says what was shown: "proven about the code" (every step discharged, by
sympy or the z3 SMT solver, and the proof evaluated the functions the release uses, for
every parameter in range), "proven lemma" (discharged, but about no class code), "checked
for T ≤ N" (an exact check of every case up to N), "note" (a citation, not a claim) or
"FAILED". A table of the counts of each kind per mechanism follows the rows. Exits 1 if
any claim fails. With --json, one object {"rows": [...], "counts": {...}, "passed": true
or false}."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``prove`` subcommand to ``subparsers``."""
    p = subparsers.add_parser(
        "prove",
        help="prove every mechanism's declared budget with sympy (one row per claim)",
        description=DESCRIPTION,
    )
    _add_arguments(p)


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mechanism",
        action="append",
        help="only this mechanism (CLI or class name; repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _print_row(row: ClaimResult) -> None:
    print(f"{row.mechanism:<18} {row.claim:<24} {row.status:<22} {row.seconds:>7.2f}", flush=True)
    if not row.passed:
        print(f"    {row.detail}", flush=True)


def counts_by_mechanism(rows: list[ClaimResult]) -> dict[str, dict[str, int]]:
    """``{mechanism: {kind: n}}`` in row order, every kind present (zeros included)."""
    from proofs.core import kind_counts

    names = dict.fromkeys(r.mechanism for r in rows)
    return {name: kind_counts(r for r in rows if r.mechanism == name) for name in names}


COUNT_HEADERS = ("about code", "lemma", "checked", "note", "FAILED")
"""Column headers of the counts table, in the order of ``(*KINDS, FAILED)``."""


def _print_counts(counts: dict[str, dict[str, int]]) -> None:
    head = " ".join(f"{h:>10}" for h in COUNT_HEADERS)
    print(f"{'mechanism':<18} {head}")
    total = [0] * len(COUNT_HEADERS)
    for name, by_kind in counts.items():
        values = list(by_kind.values())
        total = [a + b for a, b in zip(total, values, strict=True)]
        print(f"{name:<18} " + " ".join(f"{v:>10}" for v in values))
    print(f"{'total':<18} " + " ".join(f"{v:>10}" for v in total))


def run(args: argparse.Namespace) -> int:
    """Run the proofs; 0 when every claim holds, 1 otherwise."""
    names = tuple(args.mechanism or ())
    if not args.json:
        print(f"{'mechanism':<18} {'claim':<24} {'status':<22} {'seconds':>7}", flush=True)
    from proofs.registry import prove_all, resolve_names  # sympy: loaded when proving

    resolve_names(names, "--mechanism")
    start = time.perf_counter()
    rows = prove_all(names)
    passed = all(r.passed for r in rows)
    counts = counts_by_mechanism(rows)
    if args.json:
        print(json.dumps({"rows": [r.as_dict() for r in rows], "counts": counts, "passed": passed}))
    else:
        for row in rows:
            _print_row(row)
        print()
        _print_counts(counts)
        n_failed = sum(not r.passed for r in rows)
        verdict = f"{n_failed} FAILED" if n_failed else "all hold"
        print(f"{len(rows)} claims in {time.perf_counter() - start:.1f} s: {verdict}")
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    """``python -m proofs``: the same as ``dpref prove``."""
    parser = DprefParser(prog="python -m proofs", description=DESCRIPTION)
    _add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except DprefError as exc:
        sys.stderr.write(f"proofs: error: {exc}\n")
        return 2


def _by_subject(suite: Suite, opts: VerifyOptions) -> list[Part]:
    """One part per proven class: every mechanism, then the non-mechanism subjects (a
    run restricted to named mechanisms is one part: the names may repeat a class)."""
    if opts.mechanisms:
        return [Part(suite, opts)]
    from dpref.mechanisms import MECHANISMS
    from proofs.registry import SUBJECTS

    names = [*MECHANISMS, *(spec.partition(":")[2] for spec in SUBJECTS)]
    return [Part(suite, replace(opts, mechanisms=(name,))) for name in names]


@splittable(_by_subject)
def verify_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """``dpref verify``'s ``proofs`` suite: one row per mechanism (checks = its claims)."""
    from proofs.registry import prove_all

    rows = prove_all(tuple(opts.mechanisms))
    out: list[VerifyRow] = []
    for name in dict.fromkeys(r.mechanism for r in rows):
        mine = [r for r in rows if r.mechanism == name]
        bad = [r for r in mine if not r.passed]
        budget = next((r for r in mine if r.claim == "budget"), None)
        proven_sum = budget.value if budget is not None and budget.passed else "-"
        kinds = counts_by_mechanism(mine)[name]
        detail = (
            f"{bad[0].claim}: {bad[0].detail}"
            if bad
            else ", ".join(
                f"{n} {h}" for h, n in zip(COUNT_HEADERS, kinds.values(), strict=True) if n
            )
        )
        out.append(
            VerifyRow(
                "proofs",
                name,
                len(mine),
                len(bad),
                declared_epsilon="ε",
                proven_sum=proven_sum,
                seconds=sum(r.seconds for r in mine),
                detail=detail,
                extra={"claims": [r.as_dict() for r in mine], "kinds": kinds},
            )
        )
    return out
