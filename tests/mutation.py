"""The mutation self-test of ``dpref verify`` (issue 23, item 7): harness and table.

For each mutant of :mod:`mutants` (tests/mutants.py) a scratch copy of ``dpref/`` and
``proofs/`` is patched and ``python -m dpref verify --json --jobs 1 [--mechanism NAME …]``
is run there with ``PYTHONPATH`` pointing at the copy.  The mutant is *killed* when verify —
alone, not the test suite — exits non-zero; the kill is *deterministic* when at least one
failed row is deterministic (an exact check: proofs, plans, agreement, golden, the exact
audit parts, the coverage rows, the samplers' exact laws, the floats' scripted draws), and
*statistical* when only sampled audits or conformance tests failed.  A run that ends with
a traceback (exit code other than 0, 1) is recorded as ``crash`` (verify still fails,
deterministically).

The copy really is what runs: :func:`check_scratch_imports` asserts that ``dpref`` and
``proofs`` are imported from it (the entry points of the verify suites are read from the
installed metadata and resolve by module name, so they load the copy's modules too).
Before any mutant, the unmutated copy must pass verify restricted to the union of the
mutants' mechanisms (the control); otherwise nothing can be concluded and the harness
says so.

Run it::

    .venv/bin/python tests/mutation.py              # every mutant, then the table
    .venv/bin/python tests/mutation.py ID [ID …]    # some of them
    .venv/bin/python tests/mutation.py --check      # only: does every mutant apply once?
    .venv/bin/python tests/mutation.py --markdown   # the table as Markdown

``--markdown`` prints the table in the format of /work/team/mutants-survivors.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mutants import KINDS, MUTANTS, Mutant, by_id

ROOT = Path(__file__).resolve().parents[1]
"""The repository root (the package copied is the one beside the tests)."""
PACKAGES = ("dpref", "proofs")
"""Copied to the scratch directory."""
DETERMINISTIC_SUITES = frozenset(
    {"proofs", "plans", "agreement", "golden", "coverage", "samplers", "floats"}
)
"""Suites whose rows are exact (a failure is a deterministic kill): ``samplers`` enumerates
the samplers' laws exactly, ``floats`` drives every path with scripted draws."""
MIXED_SUITES = frozenset({"audit", "audit-gaussian", "sanitize"})
"""Suites with exact and sampled parts (:func:`_deterministic` reads the failed row)."""
STATISTICAL_MARKERS = ("audit: ", "does not conform", "sampled")
"""A failed audit/sanitize problem mentioning one of these is statistical."""
TIMEOUT = 900
"""Seconds one verify run may take before it counts as not killed (a hang)."""


class MutantError(Exception):
    """A mutant that does not apply exactly once (re-anchor its snippet)."""


def check_applies(mutant: Mutant, root: Path = ROOT) -> str:
    """The mutated text of ``mutant.file``; raises :class:`MutantError` unless ``old``
    occurs exactly once (and the replacement changes something)."""
    path = root / mutant.file
    if not path.is_file():
        raise MutantError(f"{mutant.id}: {mutant.file} does not exist")
    text = path.read_text(encoding="utf-8")
    n = text.count(mutant.old)
    if n != 1:
        raise MutantError(
            f"{mutant.id}: its snippet occurs {n} times in {mutant.file} (must be exactly "
            f"once; re-anchor it): {mutant.old.strip().splitlines()[0][:70]!r}"
        )
    if mutant.old == mutant.new:
        raise MutantError(f"{mutant.id}: the replacement is the snippet itself")
    return text.replace(mutant.old, mutant.new)


def validate(mutants: Sequence[Mutant] = MUTANTS, root: Path = ROOT) -> list[str]:
    """Every problem of the mutant set: duplicate ids, unknown kinds or mechanisms,
    snippets that do not apply exactly once, mutants that do not compile."""
    from dpref.mechanisms import MECHANISMS

    problems: list[str] = []
    seen: set[str] = set()
    for m in mutants:
        if m.id in seen:
            problems.append(f"{m.id}: duplicate id")
        seen.add(m.id)
        if m.kind not in KINDS:
            problems.append(f"{m.id}: unknown kind {m.kind!r}")
        problems.extend(
            f"{m.id}: unknown mechanism {name!r}" for name in m.mechanisms if name not in MECHANISMS
        )
        try:
            text = check_applies(m, root)
        except MutantError as exc:
            problems.append(str(exc))
            continue
        try:
            compile(text, m.file, "exec")
        except SyntaxError as exc:
            problems.append(f"{m.id}: the mutated file does not compile ({exc})")
    return problems


@dataclass
class Outcome:
    """What ``dpref verify`` did to one mutant (or to the control)."""

    mutant: str
    kind: str
    command: list[str]
    returncode: int
    seconds: float
    failed_rows: list[dict[str, str]] = field(default_factory=list)
    stderr_tail: str = ""

    @property
    def killed(self) -> bool:
        """verify exited non-zero."""
        return self.returncode != 0

    @property
    def verdict(self) -> str:
        """``deterministic``, ``statistical``, ``crash``, ``timeout`` or ``survived``."""
        if self.returncode == 0:
            return "survived"
        if self.returncode == -9999:
            return "timeout"
        if self.returncode != 1 or not self.failed_rows:
            return "crash"
        if any(_deterministic(row) for row in self.failed_rows):
            return "deterministic"
        return "statistical"

    @property
    def rows(self) -> str:
        """The failed rows, ``suite/mechanism`` (or the crash's last line)."""
        if self.verdict == "crash":
            last = [line for line in self.stderr_tail.splitlines() if line.strip()]
            return "crash: " + (last[-1][:90] if last else f"exit {self.returncode}")
        return ", ".join(f"{r['suite']}/{r['mechanism']}" for r in self.failed_rows)


def _deterministic(row: dict[str, str]) -> bool:
    suite = row["suite"]
    if suite in DETERMINISTIC_SUITES:
        return True
    if suite in ("audit", "audit-gaussian"):
        problems = row["detail"].split("; ")
        return any(not any(s in p for s in STATISTICAL_MARKERS) for p in problems)
    if suite == "sanitize":
        return "sampled" not in row["mechanism"]
    return False  # an unknown suite: not claimed deterministic


@contextmanager
def scratch(root: Path = ROOT) -> Iterator[Path]:
    """A temporary copy of the packages (no byte code), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="dpref-mutant-") as tmp:
        dest = Path(tmp)
        for pkg in PACKAGES:
            shutil.copytree(
                root / pkg, dest / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        yield dest


def _env(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["XDG_CACHE_HOME"] = str(copy / ".cache")  # no cache shared with other runs
    env.pop("PYTHONSTARTUP", None)
    return env


def check_scratch_imports(copy: Path) -> None:
    """Assert that a process run as the harness runs verify imports the copy, and that
    the verify suites' entry points load from it."""
    code = (
        "import dpref, proofs, json\n"
        "from dpref.plugins import VERIFY, load\n"
        "mods = sorted({f.__module__ for f in load(VERIFY)})\n"
        "import sys\n"
        "print(json.dumps([dpref.__file__, proofs.__file__,"
        " [sys.modules[m.split(':')[0]].__file__ for m in mods]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(copy),
        cwd=copy,
        capture_output=True,
        text=True,
        check=True,
    )
    dpref_file, proofs_file, suite_files = json.loads(out.stdout)
    for f in [dpref_file, proofs_file, *suite_files]:
        if not Path(f).resolve().is_relative_to(copy.resolve()):
            raise RuntimeError(f"the scratch run imports {f}, not the copy in {copy}")


def verify_command(mechanisms: Iterable[str], options: Sequence[str] = ()) -> list[str]:
    """``python -m dpref verify --json --jobs 1 [OPTIONS] [--mechanism NAME …]``."""
    cmd = [sys.executable, "-m", "dpref", "verify", "--json", "--jobs", "1", *options]
    for name in mechanisms:
        cmd += ["--mechanism", name]
    return cmd


def run_verify(
    copy: Path, mechanisms: Sequence[str], label: str, kind: str, options: Sequence[str] = ()
) -> Outcome:
    """Run the restricted verify in ``copy`` (with extra verify ``options``); its outcome."""
    cmd = verify_command(mechanisms, options)
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, env=_env(copy), cwd=copy, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return Outcome(label, kind, cmd, -9999, time.perf_counter() - start)
    seconds = time.perf_counter() - start
    failed: list[dict[str, str]] = []
    if proc.returncode == 1:
        try:
            rows = json.loads(proc.stdout)["rows"]
        except (ValueError, KeyError):
            rows = []
        failed = [
            {k: str(r.get(k, "")) for k in ("suite", "mechanism", "detail")}
            for r in rows
            if r.get("failed")
        ]
    return Outcome(label, kind, cmd, proc.returncode, seconds, failed, proc.stderr[-2000:])


@contextmanager
def applied(copy: Path, mutant: Mutant) -> Iterator[None]:
    """``mutant`` applied to the copy for the duration of the block, then undone."""
    path = copy / mutant.file
    original = path.read_text(encoding="utf-8")
    path.write_text(check_applies(mutant, copy), encoding="utf-8")
    try:
        yield
    finally:
        path.write_text(original, encoding="utf-8")


def control_mechanisms(mutants: Sequence[Mutant]) -> tuple[str, ...]:
    """The mechanisms of the control run: the union of the mutants' (empty, i.e. the
    whole verify, when one of them needs the whole verify).  A verify part is seeded from
    its options alone, so the union passing means every restricted run passes."""
    if any(not m.mechanisms for m in mutants):
        return ()
    return tuple(sorted({name for m in mutants for name in m.mechanisms}))


def run_mutants(
    mutants: Sequence[Mutant],
    *,
    progress: bool = False,
    control: bool = True,
    options: Sequence[str] = (),
    root: Path = ROOT,
) -> tuple[list[Outcome], list[Outcome]]:
    """``(controls, outcomes)``: the unmutated copy's run (over :func:`control_mechanisms`;
    none with ``control=False``) and one outcome per mutant, every run with the extra verify
    ``options`` (default none: verify's own defaults).  Raises :class:`MutantError` when a
    mutant does not apply, RuntimeError when the control fails."""
    for m in mutants:
        check_applies(m, root)
    controls: list[Outcome] = []
    outcomes: list[Outcome] = []
    with scratch(root) as copy:
        check_scratch_imports(copy)
        if control:
            names = control_mechanisms(mutants)
            ctl = run_verify(copy, names, f"control {','.join(names) or 'all'}", "", options)
            controls.append(ctl)
            if progress:
                print(f"# {ctl.mutant}: exit {ctl.returncode} ({ctl.seconds:.1f} s)", flush=True)
            if ctl.killed:
                raise RuntimeError(
                    f"the unmutated copy fails {' '.join(ctl.command[2:])}: {ctl.rows}; "
                    "no mutant can be judged"
                )
        for m in mutants:
            with applied(copy, m):
                out = run_verify(copy, m.mechanisms, m.id, m.kind, options)
            outcomes.append(out)
            if progress:
                print(f"# {m.id}: {out.verdict} ({out.seconds:.1f} s) {out.rows}", flush=True)
    return controls, outcomes


def table(outcomes: Sequence[Outcome], markdown: bool = False) -> str:
    """The kill table: mutant, class, killed?, by which rows."""
    head = ("mutant", "class", "killed", "by (failed rows)")
    lines = []
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
    else:
        lines.append(f"{head[0]:<30} {head[1]:<26} {head[2]:<14} {head[3]}")
    for o in outcomes:
        cells = (o.mutant, o.kind, o.verdict, o.rows or "—")
        if markdown:
            lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
        else:
            lines.append(f"{cells[0]:<30} {cells[1]:<26} {cells[2]:<14} {cells[3]}")
    det = sum(o.verdict in ("deterministic", "crash") for o in outcomes)
    stat = sum(o.verdict == "statistical" for o in outcomes)
    lines.append(
        f"{len(outcomes)} mutants: {det} killed deterministically, {stat} only statistically, "
        f"{len(outcomes) - det - stat} survived"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (see the module docstring); 1 when a mutant survives or is only
    killed statistically, 2 when a mutant does not apply."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ids", nargs="*", help="mutant ids (default: all)")
    p.add_argument("--check", action="store_true", help="only check that every mutant applies")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--json", metavar="FILE", help="also write the outcomes as JSON")
    p.add_argument(
        "--skip-control",
        action="store_true",
        help="do not run verify on the unmutated copy first (only when it has just passed)",
    )
    args = p.parse_args(argv)
    problems = validate()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if args.check:
        print(f"{len(MUTANTS)} mutants, each applies exactly once")
        return 0
    chosen = [by_id(i) for i in args.ids] if args.ids else list(MUTANTS)
    controls, outcomes = run_mutants(chosen, progress=True, control=not args.skip_control)
    print(table(outcomes, markdown=args.markdown))
    if args.json:
        Path(args.json).write_text(
            json.dumps([o.__dict__ for o in [*controls, *outcomes]], indent=1), encoding="utf-8"
        )
    bad = [o for o in outcomes if o.verdict not in ("deterministic", "crash")]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
