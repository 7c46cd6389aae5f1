"""What the ``dpref`` subcommands share: the parser class, the plugin loader, the
mechanism flags (derived from the registry), domains and stream input."""

from __future__ import annotations

import argparse
import csv
import difflib
import io
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from dpref.domains import Domain, bits, bounded_integers, bounded_reals
from dpref.errors import DprefError, ParameterError
from dpref.mechanisms import MECHANISMS
from dpref.mechanisms.float_params import binary_hint, binary_parameters
from dpref.noise import NOISE_KINDS
from dpref.registry import build_mechanism, mechanism_names, parameter_flags
from dpref.validation import choose_from, fmt

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_INPUT_VALUES",
    "DprefParser",
    "UsageError",
    "add_mechanism_args",
    "cell",
    "check_npy",
    "check_target",
    "mechanism_from_args",
    "mechanism_params_from_args",
    "parse_domain",
    "plain_text",
    "pyplot_for",
    "read_csv_column",
    "read_input",
    "read_stream",
    "run_standalone",
]


class UsageError(SystemExit):
    """A command-line usage error (already printed on stderr); exit code 2.

    A :class:`SystemExit`, as argparse's own, with the ``message`` kept so that
    :func:`dpref.cli.main` can repeat it as a JSON error object under ``--json``."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


class DprefParser(argparse.ArgumentParser):
    """argparse, but usage errors are one line on stderr and exit code 2, and no option
    may be abbreviated (``allow_abbrev=False``): ``--eps`` is refused, not read as
    ``--epsilon``, so a command written today cannot change meaning when a later version
    adds a flag sharing the prefix.  Every ``dpref`` parser and subparser is one of these
    (``add_subparsers`` makes its children of the parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False  # not a default a subcommand could switch back on
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """argparse's, but a leaf command (one without subcommands) that is left an unknown
        option names it with the close options: ``--eps`` is not ``--epsilon``; an unknown
        option before the subcommand (``dpref --eps 1 release …``) is named, not mistaken
        for the subcommand's value."""
        if self._subparsers:
            self._check_options_before_command(list(sys.argv[1:] if args is None else args))
        ns, extras = super().parse_known_args(args, namespace)
        if extras and not self._subparsers:
            options = [o for o in self._option_string_actions if o.startswith("--")]
            for token in extras:
                name = token.split("=", 1)[0]
                if name.startswith("--") and name not in options:
                    started = [o for o in options if o.startswith(name)]
                    close = started or difflib.get_close_matches(name, options, n=3)
                    if close:
                        why = " (options are never abbreviated)" if started else ""
                        self.error(
                            f"unrecognized arguments: {' '.join(extras)}; {name}: did you mean "
                            f"{' or '.join(close)}?{why}"
                        )
                    break
        return ns, extras

    def _check_options_before_command(self, args: list[str]) -> None:
        """An option this parser does not know, before its subcommand, is a usage error in
        :func:`choose_from`'s format that says where a subcommand's options go.  Close names
        are an abbreviation or a near-miss of the option's word (``--epsilon`` is no typo of
        ``--version``, though :mod:`difflib` rates the two 0.78 with their dashes)."""
        known = self._option_string_actions
        for token in args:
            if token == "--" or not token.startswith("-") or token == "-":
                return  # the subcommand (or an operand): the rest is its business
            name = token.split("=", 1)[0]
            if name not in known:
                options = [o for o in known if o.startswith("--")]
                words = {o.lstrip("-"): o for o in options}
                close = [o for o in options if o.startswith(name) and name.startswith("--")]
                near = difflib.get_close_matches(name.lstrip("-"), list(words), n=3, cutoff=0.8)
                self.error(
                    f"{name}: {choose_from(name, options, close=close or [words[w] for w in near])}"
                    f" (a command's own options go after it: {self.prog} COMMAND {name} …)"
                )
            # a known option: dpref's group parsers have none that takes a value

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A value outside ``choices`` (a subcommand, ``--noise``) is named with the close
        ones and the list, in the format of every other unknown name (:func:`choose_from`)."""
        if action.choices is not None and value not in action.choices:
            names = [str(c) for c in action.choices]
            raise argparse.ArgumentError(action, f"{fmt(value)}: {choose_from(value, names)}")

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"dpref: error: {message}\n")
        raise UsageError(message)


_Parser = DprefParser  # the name earlier versions exported


_ROLE = re.compile(r":[a-z]+:`~?(?:[\w.]*\.)?([^`<]+?)(?:\s*<[^>]*>)?`")
"""A reStructuredText role, ``:data:`~pkg.NAME``` (its last dotted part is kept)."""


def run_standalone(
    name: str, add_parser: Callable[[Any], None], argv: Sequence[str] | None = None
) -> int:
    """Run one subcommand, ``dpref NAME ARGV``, from its module's ``add_parser`` alone — for
    ``python -m dpref.<pkg>.cli`` without the installed entry points.  Usage errors and
    :class:`~dpref.errors.DprefError` are one line on stderr and exit code 2."""
    parser = DprefParser(prog="dpref")
    add_parser(parser.add_subparsers(parser_class=DprefParser))
    try:
        args = parser.parse_args([name, *(sys.argv[1:] if argv is None else argv)])
    except UsageError:
        return 2
    try:
        return int(args.func(args))
    except DprefError as exc:
        sys.stderr.write(f"dpref: error: {exc}\n")
        return 2


def plain_text(text: str) -> str:
    """A docstring fragment as plain words for ``--help``: roles become their name,
    ``literals`` lose their backquotes."""
    return _ROLE.sub(r"\1", text).replace("``", "").replace("`", "")


def cell(value: object) -> str:
    """A table cell: floats to 4 significant digits, the rest as text."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _number_or_text(text: str) -> int | str:
    """An integer flag value as an int; anything else is passed on as text, which the
    mechanism validates (and parses exactly: ``1/3``, ``0.5``)."""
    try:
        return int(text)
    except ValueError:
        return text


def add_mechanism_args(p: argparse.ArgumentParser, *, with_name: bool = True) -> None:
    """The mechanism selection and parameter flags shared by release/audit/conform."""
    if with_name:
        p.add_argument("mechanism", help="one of: " + ", ".join(mechanism_names()))
    p.add_argument(
        "--epsilon",
        default=None,
        help="pure ε-DP budget ε > 0 (e.g. 1, 0.5, 1/3); give exactly one of --epsilon, --rho",
    )
    p.add_argument(
        "--rho",
        default=None,
        help="ρ-zCDP budget ρ > 0 (e.g. 1/2) for Gaussian noise (docs/gaussian.md)",
    )
    p.add_argument("--horizon", type=int, default=None, help="T (default: the stream length)")
    for param, text in parameter_flags().items():
        p.add_argument(
            f"--{param.replace('_', '-')}",
            type=_number_or_text,
            default=None,
            help=plain_text(text) + binary_hint(param),
        )
    p.add_argument(
        "--domain",
        default="bits",
        help="item domain: bits, LO:HI (integers when both bounds are, else reals), "
        "int:LO:HI or real:LO:HI (default bits)",
    )
    p.add_argument(
        "--neighbours",
        choices=["replace", "add_remove"],
        default="replace",
        help="event-level neighbour relation (default replace)",
    )
    p.add_argument(
        "--noise",
        choices=list(NOISE_KINDS),
        default=None,
        help="laplace (default with --epsilon) or discrete (exact discrete Laplace); gaussian "
        "(default with --rho) or discrete_gaussian (exact); the discrete kinds need an "
        "integer domain",
    )


def check_target(spec: str, option: str = "target") -> None:
    """An audit or conform target: a registered mechanism name or ``module:function`` /
    ``file.py:function``; anything else (a mistyped name) is an error with the close names."""
    names = mechanism_names()
    if spec not in names and ":" not in spec:
        raise ParameterError(
            f"{option}={fmt(spec)}: {choose_from(spec, names)} "
            "(or a black box: module:function or file.py:function)"
        )


def pyplot_for(path: str, option: str = "--plot") -> Any:
    """matplotlib's pyplot (Agg), once ``path`` is known to name a writable file in an image
    format matplotlib writes: checked before anything is computed or drawn.  An unknown
    format is named with the close ones and the list (:func:`choose_from`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise ParameterError(
            f"{option}={fmt(path)}: needs matplotlib; install it with: pip install 'dpref[plot]'"
        ) from None
    target = os.path.abspath(path)
    ext = os.path.splitext(target)[1][1:].lower()
    formats = sorted(FigureCanvasBase.get_supported_filetypes())
    if ext not in formats:
        raise ParameterError(
            f"{option}={fmt(path)}: image format {fmt(ext)}: {choose_from(ext, formats)}"
        )
    parent = os.path.dirname(target)
    if not os.path.isdir(parent):
        raise ParameterError(f"{option}={fmt(path)}: directory {fmt(parent)} does not exist")
    return plt


def parse_domain(text: str, neighbours: str) -> Domain:
    """``bits``, ``LO:HI``, ``int:LO:HI`` or ``real:LO:HI``.

    ``LO:HI`` is the range as everywhere else on the command line (``quantiles
    --domain``): the integers from LO to HI when both bounds are integers, else the reals.
    """
    if text == "bits":
        if neighbours != "replace":
            return bounded_integers(0, 1, "add_remove")
        return bits()
    parts = text.split(":")
    if len(parts) == 2 and parts[0] not in ("int", "real"):
        kind = "int" if all(_is_int(p) for p in parts) else "real"
    elif len(parts) == 3 and parts[0] in ("int", "real"):
        kind = parts.pop(0)
    else:
        forms = ["bits", "LO:HI", "int:LO:HI", "real:LO:HI"]
        raise ParameterError(f"--domain={fmt(text)}: {choose_from(text, forms)}")
    nb: Any = neighbours
    if kind == "int" and not all(_is_int(p) for p in parts):
        raise ParameterError(f"--domain={fmt(text)}: integer bounds expected")
    try:
        if kind == "int":
            return bounded_integers(int(parts[0]), int(parts[1]), nb)
        return bounded_reals(parts[0], parts[1], nb)
    except ParameterError as exc:  # named as the flag: lower='a' is --domain's LO
        raise ParameterError(f"--domain={fmt(text)}: {exc}") from None


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def mechanism_params_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The mechanism-specific flags given on the command line (None: not given)."""
    return {param: getattr(args, param, None) for param in parameter_flags()}


def mechanism_from_args(args: argparse.Namespace, horizon: int | None = None) -> Any:
    """Build the mechanism named on the command line.

    ``horizon`` (the stream length) is the default T of a mechanism that needs one;
    an unbounded mechanism gets a horizon only when ``--horizon`` is given.
    """
    params = mechanism_params_from_args(args)
    cls = MECHANISMS.get(args.mechanism)
    params = binary_parameters(cls, params, args)  # dpref/mechanisms/float_params.py
    needs = cls is None or cls.needs_horizon
    params["horizon"] = args.horizon if args.horizon is not None else (horizon if needs else None)
    domain = parse_domain(args.domain, args.neighbours)
    return build_mechanism(
        args.mechanism,
        epsilon=args.epsilon,
        rho=getattr(args, "rho", None),
        domain=domain,
        noise=args.noise,
        **params,
    )


def read_csv_column(
    source: str, column: str, option: str = "--input", column_option: str = "--column"
) -> list[tuple[int, str]]:
    """The cells of one column of a CSV file with a header row, each with the line of the
    file it is on: ``[(line, text), …]`` (a row shorter than the header has ``""``).

    Read through :func:`read_input` (bounded; FIFOs and devices refused).  A column that
    is not in the header is an error naming ``column_option`` and listing the columns.
    """
    data = read_input(source, option)
    try:
        text = data.decode("utf-8-sig")  # a spreadsheet's byte-order mark is not a name
    except UnicodeDecodeError as exc:
        raise ParameterError(f"{option}={fmt(source)}: not UTF-8 text (byte {exc.start})") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise ParameterError(f"{option}={fmt(source)}: empty; a CSV file needs a header row")
        if column not in header:
            names = [h for h in header if h] or ["(none)"]
            raise ParameterError(
                f"{column_option}={fmt(column)}: {choose_from(column, names)} "
                f"(the columns of {fmt(source)})"
            )
        k = header.index(column)
        cells: list[tuple[int, str]] = []
        for row in reader:
            if len(cells) >= MAX_INPUT_VALUES:
                raise ParameterError(
                    f"{option}={fmt(source)}: more than {MAX_INPUT_VALUES:,} rows (the input limit)"
                )
            cells.append((reader.line_num, row[k] if k < len(row) else ""))
    except csv.Error as exc:  # e.g. a field over csv.field_size_limit() characters
        raise ParameterError(f"{option}={fmt(source)}: not a readable CSV file ({exc})") from None
    return cells


def read_stream(
    source: str, option: str = "--input", column: str | None = None
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """One value per line from a file or ``-`` (stdin), or a ``.npy`` array, or with
    ``column`` one column of a CSV file (:func:`read_csv_column`); bounded by
    :func:`read_input` (size, no FIFOs or devices) and :data:`MAX_INPUT_VALUES`.

    Every line of a text input is one number, except comment lines, whose first
    non-blank character is ``#``.  A blank line is an error naming its line number, as
    is a line that is not a number: skipping it would silently shift every later item
    to another time step (and reading it as 0 would invent an item).  Errors name
    ``option``, the command-line flag that gave ``source``.
    """
    is_npy = source != "-" and source.endswith(".npy")
    if column is not None:
        if is_npy:
            raise ParameterError(f"--column={fmt(column)}: {option} is a .npy array, not a CSV")
        values: list[float] = []
        for lineno, cell in read_csv_column(source, column, option):
            values.append(_number(cell.strip(), source, option, f"line {lineno}, {column}"))
        return np.array(values, dtype=np.float64)
    data = read_input(source, option)
    if is_npy:
        check_npy(data, option, source)
        try:
            raw = np.load(io.BytesIO(data), allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            # EOFError: an empty file; ValueError: a bad or oversized header (numpy's
            # message spans several lines, so only its first line is kept)
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ParameterError(f"{option}={fmt(source)}: cannot read .npy ({why})") from None
        if not isinstance(raw, np.ndarray) or raw.dtype.kind not in "biuf":
            kind = raw.dtype if isinstance(raw, np.ndarray) else type(raw).__name__
            raise ParameterError(f"{option}={fmt(source)}: .npy must hold real numbers, got {kind}")
        return np.asarray(raw, dtype=np.float64)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParameterError(
            f"{option}={fmt(source)}: not UTF-8 text (byte {exc.start}); "
            "give one number per line, or a .npy file"
        ) from None
    values = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line.startswith("#"):
            continue
        if len(values) >= MAX_INPUT_VALUES:
            raise ParameterError(
                f"{option}={fmt(source)}: more than {MAX_INPUT_VALUES:,} values (the input limit)"
            )
        values.append(_number(line, source, option, f"line {lineno}"))
    return np.array(values, dtype=np.float64)


def _number(text: str, source: str, option: str, where: str) -> float:
    """One stream value; a blank or non-numeric one is an error naming ``where``."""
    if not text:
        raise ParameterError(
            f"{option}={fmt(source)}: {where} is blank; give one number per item "
            "(a blank is neither skipped nor read as 0)"
        )
    try:
        return float(text)
    except ValueError:
        shown = text if len(text) <= 40 else text[:37] + "..."
        hint = ""
        if where == "line 1" and source.endswith(".csv"):
            hint = " (a CSV file: name its column with --column)"
        raise ParameterError(
            f"{option}={fmt(source)}: {where} is {fmt(shown)}, not a number{hint}"
        ) from None


MAX_INPUT_BYTES = 32 << 20
"""Largest input file (32 MiB: about four million numbers of text, one per line)."""
MAX_INPUT_VALUES = 1 << 22
"""Largest number of values an input (text or ``.npy``) may hold (4,194,304)."""


def _kind(mode: int) -> str | None:
    """What a non-regular file is (None: a regular file)."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def read_input(source: str, option: str = "input") -> bytes:
    """The bytes of ``source`` (``-``: standard input), at most :data:`MAX_INPUT_BYTES`.

    A FIFO, device, socket or directory named as a file is refused (pipe it through
    standard input instead: ``--input - < FIFO``); so is a larger file, before it is
    read.  Raises :class:`~dpref.errors.ParameterError` naming ``option``.
    """
    if source == "-":
        stream: Any = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None
        try:
            data = (
                stream.read(MAX_INPUT_BYTES + 1)
                if stream is not None
                else sys.stdin.read(MAX_INPUT_BYTES + 1).encode("utf-8")
            )
        except OSError as exc:
            raise ParameterError(f"{option}='-': cannot read ({exc.strerror})") from None
        return _capped(data, option, source)
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise ParameterError(f"{option}={fmt(source)}: cannot read ({why})") from None
    try:
        info = os.fstat(fd)
        kind = _kind(info.st_mode)
        if kind is not None:
            raise ParameterError(
                f"{option}={fmt(source)}: is {kind}, not a regular file (to read it anyway, "
                f"give '-' and redirect it to standard input)"
            )
        if info.st_size > MAX_INPUT_BYTES:
            raise ParameterError(
                f"{option}={fmt(source)}: {info.st_size:,} bytes, above the limit of "
                f"{MAX_INPUT_BYTES:,} bytes"
            )
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise ParameterError(f"{option}={fmt(source)}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)
    return _capped(data, option, source)


def _capped(data: bytes, option: str, source: str) -> bytes:
    if len(data) > MAX_INPUT_BYTES:
        raise ParameterError(
            f"{option}={fmt(source)}: more than {MAX_INPUT_BYTES:,} bytes (the input limit)"
        )
    return data


def check_npy(data: bytes, option: str, source: str) -> None:
    """Refuse a ``.npy`` whose header declares more than :data:`MAX_INPUT_VALUES` values or
    more bytes than it holds (a huge shape), before numpy allocates the array."""
    fh = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    except (ValueError, TypeError, OSError, EOFError) as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ParameterError(f"{option}={fmt(source)}: cannot read .npy ({why})") from None
    count = math.prod(int(d) for d in shape)
    if count > MAX_INPUT_VALUES:
        raise ParameterError(
            f"{option}={fmt(source)}: .npy of shape {tuple(shape)} holds {count:,} values, "
            f"above the limit of {MAX_INPUT_VALUES:,}"
        )
    if count * dtype.itemsize > len(data) - fh.tell():
        raise ParameterError(
            f"{option}={fmt(source)}: .npy header declares shape {tuple(shape)}, more data "
            "than the file holds"
        )
