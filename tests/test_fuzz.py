"""Fuzz harness: every public entry point against a catalogue of odd values.

What is covered (all of it derived at run time, nothing listed by hand):

* the constructor of every class in :data:`dpref.MECHANISMS`, fuzzing each keyword
  (``epsilon``, ``horizon``, ``noise`` and each name in ``cls.parameters()``) while the
  others come from ``cls.examples[0].kwargs(cls, 8)``, and ``rho`` (with no ``epsilon``)
  and ``noise`` beside ``rho=1``; and on that example instance the
  methods ``release(stream)``, ``release_many(stream, runs)``, ``variance(horizon)``,
  ``plan(horizon)``, ``online().step(x)`` and ``target(stream)``;
* every callable in ``dpref.__all__`` that is not a class (``bits``, ``lower_bound``,
  ``bounded_integers``, ``bounded_reals``, ...) and
  :func:`dpref.sensitivity.global_sensitivity`, fuzzing each parameter of its
  signature while the others take a known-good value (:data:`FUNCTION_BASELINES`, else
  the signature default, else ``1``);
* the command line: every subcommand of ``dpref.cli.build_parser()`` (the plugins of
  ``dpref.plugins.COMMANDS``) with an odd value in each of its numeric options
  (``type=int``/``float``, ``--epsilon``, ``--rho`` and the mechanism flags of
  ``dpref.registry.parameter_flags()``, each given to the first mechanism taking it),
  starting from a known-good command line (:data:`CLI_BASELINES`, else
  ``SUBCOMMAND --json``).

The property of an API call: it returns normally, or raises a
:class:`dpref.errors.DprefError` whose message names the parameter (``NAME=`` or
``NAME[i]=``), and a ``numpy.random.Generator`` given as ``rng`` is untouched when it
raises; no other exception, no hang, no memory blow-up.  The property of a command
line: exit 0, or exit 2 with exactly one stderr line (and, under ``--json``, one JSON
object on stdout); never a traceback.

How it runs: one subprocess per entry point (a mechanism class, a function, a
subcommand) runs its whole batch of calls and prints the failures as JSON; inside,
each call has a SIGALRM budget (:data:`CALL_SECONDS`) and the address space is capped
(:data:`MEMORY_BYTES`); the parent's ``subprocess.run(timeout=...)`` is the outer bound.
Deterministic: no randomness in the catalogue, so the false-failure rate is nil.
The ``slow`` profile (``pytest -m slow``) adds values and fuzzes every mechanism flag
in ``audit``/``conform`` too.

To add an entry: nothing — a new mechanism, a new public function or a new subcommand
is picked up from the registry, ``dpref.__all__`` or the plugins.  A function whose
required arguments cannot be ``1`` gets a line in :data:`FUNCTION_BASELINES`; a
subcommand with required arguments one in :data:`CLI_BASELINES`.

A call that exposes a defect not yet fixed goes in :data:`KNOWN_DEFECTS` (call label
→ exception type and message fragment); the harness asserts it still fails that way,
so fixing the defect forces removing the entry.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_values import RaisingRepr, odd_values

ROOT = Path(__file__).resolve().parents[1]
CALL_SECONDS = 10.0
"""CPU-time budget of one call inside the worker (``ITIMER_PROF``: the seconds the worker
itself computes, which do not grow with the machine's load — a wall-clock limit made
``cli:verify`` fail at load 10)."""
WALL_FACTOR = 12.0
"""A call blocked without computing (a FIFO, a sleep) is stopped after this many times
:data:`CALL_SECONDS` of wall clock: a backstop for hangs, far above any loaded run."""
BATCH_SECONDS = 1800.0
"""The parent's bound on one worker subprocess (an outer backstop only)."""
MEMORY_BYTES = 2 * 1024**3
"""RLIMIT_AS of the worker."""
HORIZON = 8
"""T of the example instance whose methods are fuzzed."""

KNOWN_DEFECTS: tuple[tuple[str, str, str, str], ...] = (
    # (entry point: a regex matched against the call label from its start, argument,
    #  observed problem: a regex matched against the exception type or "exit N" from the
    #  start of the reported problem, a fragment of the message)
)
"""Calls that still break the property.  A failure is known when its label matches an
entry's regex, its problem starts with the entry's type and contains its fragment;
every entry whose regex matches a call of a batch must still match a failure there."""

FUNCTION_BASELINES: dict[str, Callable[[], dict[str, Any]]] = {
    "private_quantiles": lambda: {
        "stream": [0, 1, 1],
        "q": 0.5,
        "domain": [0, 1],
        "epsilon": 1,
        "block_size": 1000,
    },
    "sanitize.private_quantiles": lambda: FUNCTION_BASELINES["private_quantiles"](),
    "sanitize.exponential_quantile": lambda: {
        "data": [0, 1, 1],
        "q": 0.5,
        "domain": [0, 1],
        "epsilon": 1,
    },
    "sanitize.exact_quantiles": lambda: {"sorted_values": [0, 1, 2], "qs": [0.5]},
    "sanitize.rank_errors": lambda: {"sorted_truth": [0, 1, 2], "values": [1], "qs": [0.5]},
    "sanitize.project_cdf": lambda: {"noisy": [0.5, 2.5, 1.0], "total": 3, "capacity": 3},
    "sanitize.effective_probability": lambda: {"p": 0.5},
    "lower_bound": lambda: {
        "g": __import__("dpref.lower_bounds", fromlist=["x"]).window_decay(3),
        "epsilon": 1,
        "q": 10,
    },
    "bounded_integers": lambda: {"lower": 0, "upper": 3},
    "bounded_reals": lambda: {"lower": 0, "upper": 1},
    "sensitivity.global_sensitivity": lambda: {"values": [1, 2, 3], "size": 1, "query": "sum"},
    "sensitivity.exact_global_sensitivity": lambda: {
        "values": [1, 2, 3],
        "size": 1,
        "query": "sum",
    },
    "sensitivity.oracle_sensitivity": lambda: {"values": [1, 2, 3], "size": 1, "query": "sum"},
    "sensitivity.global_sensitivity_table": lambda: {
        "columns": {"a": [1, 2]},
        "size": 1,
        "query": "sum",
    },
    "sensitivity.evaluate_query": lambda: {"query": "sum", "values": [1, 2]},
    "sensitivity.stream_item_sensitivity": lambda: {
        "lower": 0,
        "upper": 1,
        "neighbours": "replace",
    },
    "audit.audit": lambda: {
        "target": _example_mechanism(),
        "horizon": 2,
        "epsilon": 1,
        "samples": 200,
        "seed": 0,
        "exact": False,
        "timeout": 10,
    },
    "audit.exact_audit": lambda: {"target": _example_mechanism(), "horizon": 2, "timeout": 10},
    "audit.exact_loss": lambda: {"mech": _example_mechanism(), "horizon": 2},
    "golden.vector_mechanism": lambda: {
        "vec": __import__("dpref.golden", fromlist=["x"]).load_shipped()["vectors"][0]
    },
    "audit.mechanism_target": lambda: {"mech": _example_mechanism()},
    "audit.as_target": lambda: {"target": _example_mechanism(), "timeout": 10},
    "audit.load_callable": lambda: {"target": "tests/audit_targets.py:binary_ok"},
    "audit.standard_pairs": lambda: {
        "horizon": 2,
        "domain": __import__("dpref").bits(),
        "rng": __import__("numpy").random.default_rng(0),
    },
    "golden.check_golden": lambda: {
        "doc": {"format": __import__("dpref.golden").golden.FORMAT, "vectors": []}
    },
    "golden.loads_golden": lambda: {"text": "{}"},
    "proofs.prove": lambda: {"cls": __import__("dpref").SimpleI, "limit": 4},
    "proofs.prove_all": lambda: {"names": ["simple1"], "limit": 4},
    "proofs.proof_for": lambda: {"cls": __import__("dpref").SimpleI},
}
"""Known-good arguments of the module functions (the rest: signature default or 1)."""

PUBLIC_MODULES = {
    "dpref": "",
    "dpref.audit": "audit.",
    "dpref.sensitivity": "sensitivity.",
    "dpref.golden": "golden.",
    "dpref.sanitize": "sanitize.",
    "proofs": "proofs.",
}
"""The modules whose ``__all__`` functions are fuzzed, with their label prefix."""
SKIP_FUNCTIONS = {"golden.golden_vectors", "golden.golden_cases", "golden.load_shipped"}
"""Functions without parameters (nothing to fuzz; the golden tests run them)."""
SKIP_PARAMETERS = {"progress", "runner"}
"""Parameters that only choose presentation or inject test doubles (typed by mypy)."""
SKIP_CALLS = {
    "proofs.prove_all(names=[])",
    "proofs.prove_all(names=np.zeros(0))",
    "audit.audit(workers=1)",
    "audit.audit(workers=np.int8(3))",
    "audit.audit(workers=np.int32(7))",
}
"""Valid calls whose work is bounded but longer than :data:`CALL_SECONDS`: an empty
selection proves every mechanism (``dpref verify``'s proofs suite runs exactly that); a
valid ``workers`` starts a local Dask cluster of that many processes (seconds of start-up,
and more address space than the worker's RLIMIT_AS; ``tests/test_audit_cluster.py`` runs
audits on real clusters)."""
SKIP_LINES = re.compile(r".* --workers= 7 $|verify .*--mechanism=kary .*--jobs=1")
"""Valid command lines skipped for the same reason: ``int(" 7 ") == 7`` workers; and
``verify --mechanism=kary --jobs=1``, whose proofs are bounded but take about 12 s of CPU
(``dpref verify --max-horizon 2 --random-horizons 0 --mechanism kary --jobs 1``: 11.6 s user
on an idle machine), above :data:`CALL_SECONDS`."""


def _example_mechanism() -> Any:
    import dpref

    return dpref.Binary(epsilon=1, horizon=2)


CLI_BASELINES: dict[str, list[str]] = {
    "release": ["release", "{mechanism}", "--epsilon=1", "--input={stream}", "--json"],
    "audit": [
        "audit", "{mechanism}", "--epsilon=1", "--horizon=2", "--samples=200", "--no-exact",
        "--seed=0", "--timeout=10", "--json",
    ],
    "conform": [
        "conform", "{mechanism}", "--epsilon=1", "--horizon=2", "--reference={mechanism}",
        "--runs=20", "--seed=0", "--timeout=10", "--json",
    ],
    "sensitivity": ["sensitivity", "--universe=1,2,3", "--size=2", "--query=sum", "--json"],
    "quantiles": [
        "quantiles", "--input={stream}", "--domain=0:3", "--epsilon=1", "--block-size=2",
        "--json",
    ],
    "verify": [
        "verify", "--max-horizon=2", "--random-horizons=0", "--mechanism={mechanism}",
        "--jobs=1", "--json",
    ],
}  # fmt: skip
"""Known-good command lines ({mechanism}: the mechanism under test; {stream}: a file)."""

CLI_VALUES = ["0", "-1", str(2**70), "nan", "1e999999999", "1e-999999999", "abc", ""]
CLI_VALUES_SLOW = [*CLI_VALUES, "inf", "-inf", "1e308", "5e-324", "1/3", "1.5", "0x10", " 7 "]
SKIP_SUBCOMMANDS = {"bench"}
"""Subcommands whose valid runs are long benchmarks (no numeric options either)."""


# --------------------------------------------------------------------- the calls
Call = tuple[str, str, Callable[[], Any], Any]
"""(label, parameter name, thunk, Generator or None)."""


def _budget_named(exc: BaseException, message: str, param: str) -> bool:
    """An enumeration budget refused the call and names ``max_enumeration=``: the
    documented bound on the work the other arguments ask for (a universe of 10⁶ values
    is valid; its brute-force oracle is what the budget refuses), so naming the budget
    is naming the knob."""
    from dpref.errors import EnumerationBudgetError

    return isinstance(exc, EnumerationBudgetError) and _names(message, "max_enumeration")


def _names(message: str, name: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(name)}(\[\d+\])*=", message) is not None


def _mechanism_calls(mname: str, slow: bool) -> Iterator[Call]:
    import numpy as np

    import dpref

    cls = dpref.MECHANISMS[mname]
    base = cls.examples[0].kwargs(cls, HORIZON)
    values = odd_values(slow)
    for param in dict.fromkeys(("epsilon", "horizon", "noise", *cls.parameters())):
        for label, value in values:
            kw = {"epsilon": 1, **base, param: value}
            yield f"{cls.__name__}({param}={label})", param, lambda kw=kw: cls(**kw), None
    for label, value in values:  # the zCDP budget, and a noise kind beside it
        kw = {**base, "rho": value}
        yield f"{cls.__name__}(rho={label})", "rho", lambda kw=kw: cls(**kw), None
        kw = {**base, "rho": 1, "noise": value}
        yield f"{cls.__name__}(rho=1, noise={label})", "noise", lambda kw=kw: cls(**kw), None

    mech = cls(epsilon=1, **base)
    stream = [1, 0, 1]

    def gen() -> Any:
        return np.random.default_rng(0)

    for label, value in values:
        g = gen()
        yield (
            f"{mname}.release(stream={label})",
            "stream",
            lambda v=value, g=g: mech.release(v, rng=g),
            g,
        )
        g = gen()
        yield (
            f"{mname}.release_many(stream={label})",
            "stream",
            lambda v=value, g=g: mech.release_many(v, 2, rng=g),
            g,
        )
        g = gen()
        yield (
            f"{mname}.release_many(runs={label})",
            "runs",
            lambda v=value, g=g: mech.release_many(stream, v, rng=g),
            g,
        )
        yield (
            f"{mname}.variance(horizon={label})",
            "horizon",
            lambda v=value: mech.variance(v),
            None,
        )
        yield f"{mname}.plan(horizon={label})", "horizon", lambda v=value: mech.plan(v), None
        yield f"{mname}.target(stream={label})", "stream", lambda v=value: mech.target(v), None
        g = gen()
        counter = mech.online(rng=g)
        yield f"{mname}.online().step(x={label})", "x", lambda v=value, c=counter: c.step(v), g


def _functions() -> dict[str, Callable[..., Any]]:
    import importlib

    out = {}
    for module_name, prefix in PUBLIC_MODULES.items():
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            label = prefix + name
            if callable(obj) and not isinstance(obj, type) and label not in SKIP_FUNCTIONS:
                if getattr(obj, "__module__", "") == "typing":
                    continue  # a type alias (Model, UniverseKind), not a function
                out[label] = obj
    return out


def _function_calls(fname: str, slow: bool) -> Iterator[Call]:
    func = _functions()[fname]
    sig = inspect.signature(func)
    known = FUNCTION_BASELINES.get(fname, lambda: {})()
    base = {
        p.name: known.get(p.name, 1 if p.default is inspect.Parameter.empty else p.default)
        for p in sig.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        base.update(known)  # keyword arguments passed on (oracle_sensitivity(**kwargs))
    yield f"{fname}(baseline)", "", lambda: func(**base), None
    for param in base:
        if param in SKIP_PARAMETERS:
            continue
        for label, value in odd_values(slow):
            kw = {**base, param: value}
            call = f"{fname}({param}={label})"
            if call not in SKIP_CALLS:
                yield call, param, lambda kw=kw: func(**kw), None


class _CallTimeout(BaseException):
    """Raised by SIGALRM: a BaseException, so no ``except Exception`` swallows it."""


def _run_call(label: str, param: str, thunk: Callable[[], Any], rng: Any) -> str | None:
    """None when the property holds, else what went wrong."""
    from dpref.errors import DprefError

    before = rng.bit_generator.state if rng is not None else None
    _arm()
    try:
        thunk()
    except _CallTimeout:
        return f"TimeoutError: no answer within {CALL_SECONDS} s of CPU time"
    except DprefError as exc:
        _disarm()
        message = str(exc)
        if not param:
            return f"the known-good call raised {type(exc).__name__}: {message[:200]}"
        if not _names(message, param) and not _budget_named(exc, message, param):
            return f"{type(exc).__name__}: message does not name {param}=: {message[:200]}"
        if rng is not None and rng.bit_generator.state != before:
            return f"{type(exc).__name__}: rng advanced before raising: {message[:200]}"
    except Exception as exc:
        _disarm()
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(tb.filename).name}:{tb.lineno}"
        return f"{type(exc).__name__}: {_text(exc)} (at {where})"
    finally:
        _disarm()
    return None


def _text(exc: BaseException) -> str:
    try:
        return str(exc)[:200]
    except Exception:
        return "<unprintable>"


def _arm() -> None:
    """Start a call's budget: :data:`CALL_SECONDS` of CPU time (SIGPROF) and the wall-clock
    backstop (SIGALRM); both raise :class:`_CallTimeout`."""
    signal.setitimer(signal.ITIMER_PROF, CALL_SECONDS)
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS * WALL_FACTOR)


def _disarm() -> None:
    signal.setitimer(signal.ITIMER_PROF, 0.0)
    signal.setitimer(signal.ITIMER_REAL, 0.0)


# --------------------------------------------------------------------- the CLI
def _subparsers() -> dict[str, argparse.ArgumentParser]:
    from dpref.cli import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _numeric_options(sub: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """(option string, dest) of the numeric options of one subcommand."""
    from dpref.registry import parameter_flags

    flags = set(parameter_flags())
    out = []
    for action in sub._actions:
        if not action.option_strings or action.nargs == 0 or action.choices is not None:
            continue
        numeric = (
            action.type in (int, float) or action.dest in flags or action.dest in ("epsilon", "rho")
        )
        if numeric:
            out.append((action.option_strings[-1], action.dest))
    return out


def _mechanism_for(dest: str) -> str:
    """The first registered mechanism taking parameter ``dest`` (else the first one)."""
    import dpref

    for name, cls in dpref.MECHANISMS.items():
        if dest in cls.parameters() and dest != "horizon":
            return name
    return next(iter(dpref.MECHANISMS))


def _cli_lines(subcommand: str, slow: bool, stream_file: str) -> Iterator[list[str]]:
    from dpref.registry import parameter_flags

    flags = set(parameter_flags())
    sub = _subparsers()[subcommand]
    base = CLI_BASELINES.get(subcommand, [subcommand, "--json"])
    for option, dest in _numeric_options(sub):
        if dest in flags and subcommand != "release" and not slow:
            continue  # the mechanism flags are shared code: fuzzed via release by default
        mechanism = _mechanism_for(dest) if dest in flags else next(iter(_mech_names()))
        line = [
            a.format(mechanism=mechanism, stream=stream_file)
            for a in base
            if a.split("=")[0] != option
        ]
        for value in CLI_VALUES_SLOW if slow else CLI_VALUES:
            yield [*line, f"{option}={value}"]


FILE_OPTIONS: dict[str, list[str]] = {
    "release": ["release", "binary", "--epsilon=1", "--horizon=4", "--json"],
    "quantiles": ["quantiles", "--domain=0:3", "--epsilon=1", "--block-size=2", "--json"],
    "sensitivity": ["sensitivity", "--column=a", "--size=2", "--query=sum", "--json"],
}
"""Subcommands reading a file: the known-good line without its file option."""
_FILE_FLAG = {"release": "--input", "quantiles": "--input", "sensitivity": "--csv"}


def _odd_files(tmp: Path) -> list[str]:
    """Files that hung or traced back as inputs (issue 24): devices, a FIFO with no
    writer, a directory, a file above the size cap (sparse: no disk used), a ``.npy``
    declaring a huge shape, binary garbage, an empty file, a missing one."""
    import numpy as np

    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    big = tmp / "big.csv"
    with open(big, "wb") as fh:
        fh.truncate(60 << 20)
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1))
    header["shape"] = (10**12,)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    (tmp / "huge.npy").write_bytes(buf.getvalue() + bytes(8))
    (tmp / "garbage.npy").write_bytes(b"\x93NUMPY\x01\x00" + bytes(40))
    (tmp / "binary.txt").write_bytes(bytes(range(256)))
    (tmp / "empty.txt").write_bytes(b"")
    return [
        "/dev/zero",
        "/dev/urandom",
        "/dev/null",
        str(fifo),
        str(tmp),
        str(big),
        str(tmp / "huge.npy"),
        str(tmp / "garbage.npy"),
        str(tmp / "binary.txt"),
        str(tmp / "empty.txt"),
        str(tmp / "missing.txt"),
    ]


def _file_lines(subcommand: str, tmp: Path) -> list[list[str]]:
    """The file option of ``subcommand`` given each odd file."""
    if subcommand not in FILE_OPTIONS:
        return []
    flag = _FILE_FLAG[subcommand]
    return [[*FILE_OPTIONS[subcommand], f"{flag}={f}"] for f in _odd_files(tmp)]


def _mech_names() -> list[str]:
    import dpref

    return list(dpref.MECHANISMS)


def _run_line(argv: list[str]) -> str | None:
    from dpref.cli import main

    out, err = io.StringIO(), io.StringIO()
    _arm()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except _CallTimeout:
        return f"TimeoutError: no exit within {CALL_SECONDS} s of CPU time"
    except SystemExit as exc:
        return f"SystemExit({exc.code!r}) escaped main; stderr={err.getvalue()[-300:]!r}"
    except BaseException as exc:
        return f"traceback: {type(exc).__name__}: {_text(exc)}"
    finally:
        _disarm()
    stdout, stderr = out.getvalue(), err.getvalue()
    if "Traceback" in stderr:
        return f"traceback on stderr: {stderr[-300:]!r}"
    as_json = "--json" in argv
    if code not in (0, 2):
        return f"exit {code}; stderr={stderr[-300:]!r}"
    if code == 2 and len(stderr.splitlines()) != 1:
        return f"exit 2 with {len(stderr.splitlines())} stderr lines: {stderr[-300:]!r}"
    if as_json:
        try:
            json.loads(stdout)
        except ValueError:
            return f"exit {code} without one JSON object on stdout: {stdout[:300]!r}"
    return None


# --------------------------------------------------------------------- worker
def batches() -> list[str]:
    """Every batch id: ``mechanism:NAME``, ``function:NAME``, ``cli:SUBCOMMAND``."""
    out = [f"mechanism:{name}" for name in _mech_names()]
    out += [f"function:{name}" for name in _functions()]
    out += [
        f"cli:{name}"
        for name, sub in _subparsers().items()
        if name not in SKIP_SUBCOMMANDS and _numeric_options(sub)
    ]
    return out


def _worker(batch: str, slow: bool) -> dict[str, Any]:
    """Run one batch; return {"calls": n, "failures": {label: problem}, "labels": [...]}."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))

    def _alarm(signum: int, frame: object) -> None:
        raise _CallTimeout

    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGPROF, _alarm)
    kind, _, name = batch.partition(":")
    failures: dict[str, str] = {}
    labels: list[str] = []
    if kind == "cli":
        with tempfile.TemporaryDirectory() as tmp:
            stream_file = os.path.join(tmp, "stream.txt")
            Path(stream_file).write_text("1\n0\n1\n", encoding="utf-8")
            lines = list(_cli_lines(name, slow, stream_file))
            lines += _file_lines(name, Path(tmp))
            for argv in lines:
                label = " ".join(argv).replace(stream_file, "STREAM")
                if SKIP_LINES.match(label):
                    continue
                labels.append(label)
                problem = _run_line(argv)
                if problem is not None:
                    failures[label] = problem
        return {"calls": len(labels), "failures": failures, "labels": labels}
    calls = _mechanism_calls(name, slow) if kind == "mechanism" else _function_calls(name, slow)
    for label, param, thunk, rng in calls:
        labels.append(label)
        problem = _run_call(label, param, thunk, rng)
        if problem is not None:
            failures[label] = problem
    return {"calls": len(labels), "failures": failures, "labels": labels}


def _run_batches(batches: list[str], slow: bool) -> dict[str, dict[str, Any]]:
    """Run batches one after another in one worker subprocess; their results by batch."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        [sys.executable, __file__, ",".join(batches), "slow" if slow else "fast"],
        capture_output=True,
        text=True,
        timeout=BATCH_SECONDS,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, f"worker {batches} died ({proc.returncode}): {proc.stderr[-2000:]}"
    result: dict[str, dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(result) == sorted(batches)
    return result


def _known(label: str, problem: str) -> tuple[str, str, str, str] | None:
    for entry in KNOWN_DEFECTS:
        pattern, _, kind, fragment = entry
        if re.match(pattern, label) and re.match(kind, problem) and fragment in problem:
            return entry
    return None


def _problems(batch: str, result: dict[str, Any]) -> list[str]:
    """What is wrong with one batch's result (empty when the property holds)."""
    if result["calls"] == 0:
        return [f"{batch}: no calls generated"]
    failures: dict[str, str] = result["failures"]
    unexpected = {k: v for k, v in failures.items() if _known(k, v) is None}
    problems = []
    if unexpected:
        problems.append(
            f"{batch}: {len(unexpected)} calls break the property:\n"
            + "\n".join(f"  {k} -> {v}" for k, v in sorted(unexpected.items()))
        )
    still = {_known(k, v) for k, v in failures.items()}
    for entry in KNOWN_DEFECTS:
        applies = any(re.match(entry[0], label) for label in result["labels"])
        if applies and entry not in still:
            problems.append(
                f"KNOWN_DEFECTS entry {entry[:3]} no longer fails in {batch}: remove it"
            )
    return problems


def _check(batches: list[str], slow: bool) -> None:
    results = _run_batches(batches, slow)
    problems = [p for batch in batches for p in _problems(batch, results[batch])]
    assert not problems, "\n".join(problems)


BATCHES = batches()

DEFAULT_GROUPS = {
    kind: [b for b in BATCHES if b.startswith(f"{kind}:")] for kind in ("mechanism", "function")
}
"""The default run's API batches share one worker per kind (a worker's start-up, importing
dpref, costs more CPU than a fast batch's calls); each batch's result is still checked on
its own.  ``cli`` batches, whose calls are processes anyway, and the slow profile keep one
worker per batch."""


SLOW_CI_BATCHES = {"cli:verify"}
"""Default-profile batches that are ``slow`` (CI runs them): ``cli:verify`` is ~45 runs of
``dpref verify`` (~30 s of CPU).  In the default run, verify's command line is covered by
tests/test_cli.py (valid runs) and tests/test_review_regressions.py (refused numbers)."""


def _default_param(group: str) -> Any:
    if group in SLOW_CI_BATCHES:
        return pytest.param(group, marks=(pytest.mark.slow, pytest.mark.ci))
    return group


@pytest.mark.parametrize(
    "group",
    [
        _default_param(g)
        for g in (
            *DEFAULT_GROUPS,
            *(b for b in BATCHES if b.partition(":")[0] not in DEFAULT_GROUPS),
        )
    ],
)
def test_fuzz(group: str) -> None:
    _check(DEFAULT_GROUPS.get(group, [group]), slow=False)


def test_slow_ci_batches_are_batches() -> None:
    assert SLOW_CI_BATCHES <= set(BATCHES)


@pytest.mark.slow
@pytest.mark.parametrize("batch", BATCHES)
def test_fuzz_slow(batch: str) -> None:
    _check([batch], slow=True)


def test_harness_detects_violations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property checker itself: each kind of violation is reported, a good call not."""
    import time

    import numpy as np

    from dpref.errors import ParameterError

    def _alarm(signum: int, frame: object) -> None:
        raise _CallTimeout

    previous = signal.signal(signal.SIGALRM, _alarm)
    previous_prof = signal.signal(signal.SIGPROF, _alarm)
    monkeypatch.setattr(sys.modules[__name__], "CALL_SECONDS", 0.2)
    try:

        def named() -> None:
            raise ParameterError("runs=-1: must be >= 1")

        def advances(g: Any) -> None:
            g.random()
            raise ParameterError("runs=-1: must be >= 1")

        def other() -> None:
            raise ValueError("runs")

        assert _run_call("ok", "runs", lambda: 1, None) is None
        assert _run_call("named", "runs", named, np.random.default_rng(0)) is None
        assert "does not name" in str(_run_call("unnamed", "stream", named, None))
        g = np.random.default_rng(0)
        assert "rng advanced" in str(_run_call("rng", "runs", lambda: advances(g), g))
        assert str(_run_call("other", "runs", other, None)).startswith("ValueError")
        assert "TimeoutError" in str(_run_call("hang", "runs", lambda: time.sleep(5), None))

        def spin() -> None:
            while True:
                pass

        assert "CPU time" in str(_run_call("spin", "runs", spin, None))
        assert "RuntimeError" in str(_run_call("repr", "runs", lambda: repr(RaisingRepr()), None))
    finally:
        _disarm()
        signal.signal(signal.SIGALRM, previous)
        signal.signal(signal.SIGPROF, previous_prof)


if __name__ == "__main__":  # python tests/test_fuzz.py BATCH[,BATCH...] fast|slow
    print(json.dumps({b: _worker(b, sys.argv[2] == "slow") for b in sys.argv[1].split(",")}))
