"""The ``dpref`` command.

Every subcommand takes ``--json`` and then prints exactly one JSON object on stdout.
Bad input prints one line on stderr and exits 2; a failed check exits 1.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from dpref.domains import Domain, bits, bounded_integers, bounded_reals
from dpref.errors import DprefError, ParameterError
from dpref.registry import build_mechanism, mechanism_names
from dpref.validation import fmt

__all__ = ["main"]

PLUGINS: list[str] = [
    "proofs.cli",
    "dpref.cli_sensitivity",
    "dpref.audit.cli",
]
"""Modules that add subcommands: each has ``add_parser(subparsers)`` and ``run(args) -> int``."""


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"dpref: error: {message}\n")
        raise SystemExit(2)


def add_mechanism_args(p: argparse.ArgumentParser, *, with_name: bool = True) -> None:
    """The mechanism selection and parameter flags shared by release/audit/conform."""
    if with_name:
        p.add_argument("mechanism", help="one of: " + ", ".join(mechanism_names()))
    p.add_argument("--epsilon", required=True, help="privacy budget ε > 0 (e.g. 1, 0.5, 1/3)")
    p.add_argument("--horizon", type=int, default=None, help="T (default: the stream length)")
    p.add_argument("--block-size", type=int, default=None, help="Two-Level block size B")
    p.add_argument("--window", type=int, default=None, help="WindowSum window W")
    p.add_argument("--delta", default=None, help="AllWindowSum level exponent δ > 1")
    p.add_argument("--alpha", default=None, help="ExponentialSum decay α in (0, 1)")
    p.add_argument("--c", default=None, help="PolynomialSum exponent c > 1")
    p.add_argument("--beta", default=None, help="PolynomialSum approximation β in (0, 1)")
    p.add_argument(
        "--domain",
        default="bits",
        help="item domain: bits, int:LO:HI or real:LO:HI (default bits)",
    )
    p.add_argument(
        "--neighbours",
        choices=["replace", "add_remove"],
        default="replace",
        help="event-level neighbour relation (default replace)",
    )
    p.add_argument(
        "--noise",
        choices=["laplace", "discrete"],
        default="laplace",
        help="continuous Laplace or exact discrete Laplace (integer domains)",
    )


def parse_domain(text: str, neighbours: str) -> Domain:
    """``bits``, ``int:LO:HI`` or ``real:LO:HI``."""
    if text == "bits":
        if neighbours != "replace":
            return bounded_integers(0, 1, "add_remove")
        return bits()
    kind, _, rest = text.partition(":")
    parts = rest.split(":")
    if kind not in ("int", "real") or len(parts) != 2:
        raise ParameterError(f"domain={fmt(text)}: expected bits, int:LO:HI or real:LO:HI")
    nb: Any = neighbours
    if kind == "int":
        try:
            lo, hi = int(parts[0]), int(parts[1])
        except ValueError:
            raise ParameterError(f"domain={fmt(text)}: integer bounds expected") from None
        return bounded_integers(lo, hi, nb)
    return bounded_reals(parts[0], parts[1], nb)


def mechanism_from_args(args: argparse.Namespace, horizon: int | None = None) -> Any:
    """Build the mechanism named on the command line."""
    from dpref.registry import MECHANISM_PARAMS

    params: dict[str, Any] = {
        "horizon": args.horizon if args.horizon is not None else horizon,
        "block_size": args.block_size,
        "window": args.window,
        "delta": args.delta,
        "alpha": args.alpha,
        "c": args.c,
        "beta": args.beta,
    }
    allowed = MECHANISM_PARAMS.get(args.mechanism, ())
    if args.horizon is None and "horizon" in allowed:
        from dpref.mechanisms import MECHANISMS

        cls = MECHANISMS.get(args.mechanism)
        if cls is not None and not cls.needs_horizon:
            params["horizon"] = None
    domain = parse_domain(args.domain, args.neighbours)
    return build_mechanism(
        args.mechanism, epsilon=args.epsilon, domain=domain, noise=args.noise, **params
    )


def read_stream(source: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    """One value per line from a file or ``-`` (stdin), or a ``.npy`` array."""
    if source != "-" and source.endswith(".npy"):
        try:
            raw = np.load(source, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ParameterError(f"input={fmt(source)}: cannot read .npy ({exc})") from None
        if not isinstance(raw, np.ndarray) or raw.dtype.kind not in "biuf":
            kind = raw.dtype if isinstance(raw, np.ndarray) else type(raw).__name__
            raise ParameterError(f"input={fmt(source)}: .npy must hold real numbers, got {kind}")
        return np.asarray(raw, dtype=np.float64)
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text()
    except OSError as exc:
        raise ParameterError(f"input={fmt(source)}: cannot read ({exc.strerror})") from None
    values = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            values.append(float(line))
        except ValueError:
            raise ParameterError(f"input line {lineno}={fmt(line)}: not a number") from None
    return np.array(values, dtype=np.float64)


# ------------------------------------------------------------------ commands
def _cmd_release(args: argparse.Namespace) -> int:
    stream = read_stream(args.input)
    mech = mechanism_from_args(args, horizon=max(1, stream.size))
    out = mech.release(stream, rng=args.seed)
    std = np.sqrt(mech.variance(stream.size))
    if args.json:
        print(
            json.dumps(
                {
                    "mechanism": args.mechanism,
                    "parameters": repr(mech),
                    "epsilon": str(mech.declared_epsilon),
                    "seed": args.seed,
                    "estimates": out.tolist(),
                    "std": std.tolist(),
                }
            )
        )
    else:
        sys.stdout.write("".join(f"{v!r}\n" for v in out.tolist()))
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from dpref.verify import VerifyOptions, VerifyRow, run_verify

    opts = VerifyOptions(
        max_exhaustive=args.max_horizon,
        random_horizons=args.random_horizons,
        seed=args.seed,
        mechanisms=tuple(args.mechanism or ()),
    )
    header = (
        f"{'suite':<11} {'mechanism':<26} {'checks':>7} {'declared ε':>10} "
        f"{'proven sum':>10}  status  seconds"
    )

    def short(value: str) -> str:
        """Long exact fractions are shown as ≈ a float (JSON keeps them exact)."""
        if len(value) <= 10 or "/" not in value:
            return value
        try:
            return f"≈{float(Fraction(value)):.6g}"
        except (ValueError, ZeroDivisionError, OverflowError):
            return value[:9] + "…"

    def show(row: VerifyRow) -> None:
        if not args.json:
            print(
                f"{row.suite:<11} {row.mechanism:<26} {row.checks:>7} "
                f"{short(row.declared_epsilon):>10} {short(row.proven_sum):>10}  "
                f"{row.status:<6} {row.seconds:>8.2f}",
                flush=True,
            )
            if row.failed:
                print(f"    {row.detail}", flush=True)

    if not args.json:
        print(header)
    rows = run_verify(opts, progress=show)
    failed = [r for r in rows if r.failed]
    if args.json:
        print(json.dumps({"passed": not failed, "rows": [r.as_dict() for r in rows]}))
    else:
        total = sum(r.checks for r in rows)
        verdict = "FAILED" if failed else "all passed"
        print(f"{total} checks in {len(rows)} rows: {verdict}")
    return 1 if failed else 0


def _cell(value: object) -> str:
    """A benchmark table cell: floats to 4 significant digits, the rest as text."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _cmd_bench(args: argparse.Namespace) -> int:
    from dpref.bench import run_bench

    rows = run_bench(quick=args.quick, only=args.only, progress=not args.json)
    if args.json:
        print(json.dumps({"rows": rows}))
    else:
        print(f"{'benchmark':<52} {'value':>12} {'baseline':>12} {'ratio':>8} {'target':>10}  ok")
        for r in rows:
            ratio = r.get("ratio")
            ratio_s = (
                f"{ratio:8.3f}"
                if isinstance(ratio, float) and math.isfinite(ratio)
                else f"{'-':>8}"
            )
            print(
                f"{r['name']:<52} {_cell(r['value']):>12} {_cell(r['baseline']):>12} {ratio_s} "
                f"{_cell(r['target']):>10}  {'yes' if r['ok'] else 'NO'}"
            )
            if r.get("detail"):
                print(f"    {r['detail']}")
    return 0


def _cmd_golden(args: argparse.Namespace) -> int:
    from dpref.golden import check_golden, golden_vectors, load_shipped

    if args.action == "export":
        doc = golden_vectors()
        text = json.dumps(doc, indent=1)
        if args.file and args.file != "-":
            try:
                Path(args.file).write_text(text + "\n")
            except OSError as exc:
                raise ParameterError(f"file={fmt(args.file)}: cannot write ({exc})") from None
            if args.json:
                print(json.dumps({"written": args.file, "vectors": len(doc["vectors"])}))
            else:
                print(f"wrote {len(doc['vectors'])} vectors to {args.file}")
        else:
            print(text)
        return 0
    if args.file:
        try:
            doc = json.loads(Path(args.file).read_text())
        except (OSError, ValueError) as exc:
            raise ParameterError(
                f"file={fmt(args.file)}: cannot read golden vectors ({exc})"
            ) from None
    else:
        doc = load_shipped()
    problems = check_golden(doc)
    if args.json:
        print(
            json.dumps(
                {"vectors": len(doc["vectors"]), "passed": not problems, "problems": problems}
            )
        )
    else:
        for p in problems:
            print(p)
        print(
            f"{len(doc['vectors'])} golden vectors: {'all match' if not problems else 'MISMATCH'}"
        )
    return 1 if problems else 0


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser."""
    parser = _Parser(prog="dpref", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("release", help="release a noisy estimate after every item")
    add_mechanism_args(p)
    p.add_argument("--seed", type=int, default=None, help="random seed (reproducible output)")
    p.add_argument("--input", default="-", help="FILE (one value per line, or .npy) or - for stdin")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_release)

    p = sub.add_parser("verify", help="run every check dpref knows (the main job)")
    p.add_argument("--max-horizon", type=int, default=256, help="check every T up to this")
    p.add_argument("--random-horizons", type=int, default=4, help="random larger T per mechanism")
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--mechanism", action="append", help="restrict to this mechanism (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("bench", help="speed and memory benchmarks, as ratios to baselines")
    p.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    p.add_argument("--only", default=None, help="run only benchmarks whose name contains this")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("golden", help="export or check golden vectors (stream + noise -> outputs)")
    p.add_argument("action", choices=["export", "check"])
    p.add_argument("file", nargs="?", default=None, help="export: output file; check: input file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_golden)

    for module in PLUGINS:
        plugin = importlib.import_module(module)
        plugin.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpref`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except DprefError as exc:
        sys.stderr.write(f"dpref: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("dpref: interrupted\n")
        return 130
    return code


if __name__ == "__main__":
    raise SystemExit(main())
