"""The executed-example convention: parse the fenced blocks of a Markdown page and run them.

Every fenced block of ``README.md`` and ``docs/**/*.md`` is one of

* ``pycon`` — a doctest session (``NORMALIZE_WHITESPACE | ELLIPSIS``);
* ``python`` — executed, must not raise, output not compared;
* ``console`` — ``$ `` commands run by bash; the lines up to the next ``$ `` line are the
  expected stdout (trailing whitespace stripped; a line ``...`` matches any number of
  lines; a final ``[exit N]`` line is the expected exit status, else 0);
* ``bash`` — run by bash, must exit 0, output not compared;
* ``text`` — not run;

unless the line before it (blank lines aside) is ``<!-- docs-test: skip REASON -->``.
All ``pycon`` and ``python`` blocks of a page share one namespace and run in order; every
block of a page runs in one temporary directory holding a copy of ``docs/examples/`` (both as
``docs/examples/FILE``, the path from the repository root, and as ``FILE`` in the directory
itself) and of the test helpers (``tests/*.py``, ``tests/targets/*.py``), with ``dpref``
(and ``.venv/bin/dpref``, ``.venv/bin/python``) on a shim that runs this checkout's
``python -m dpref``.

``tests/test_docs_examples.py`` runs every page with :func:`run_page`.
"""

from __future__ import annotations

import contextlib
import difflib
import doctest
import io
import os
import re
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ("pycon", "python", "console", "bash")
"""Languages that are executed."""
LANGUAGES = (*RUN, "text")
"""Every language a fence may declare."""
COMMAND_TIMEOUT = 600
"""Seconds one shell command may take before it counts as a failure."""

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_SKIP = re.compile(r"^\s*<!--\s*docs-test:\s*skip\b(?P<reason>.*?)-->\s*$")
_EXIT = re.compile(r"^\[exit (\d+)\]$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, body (indentation removed) and where it is."""

    page: str
    line: int
    """1-based line number of the opening fence."""
    language: str
    body: str
    skip: str | None
    """The skip marker's reason, or ``None`` when the block runs."""

    @property
    def where(self) -> str:
        """``page:line`` of the opening fence."""
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """Every page the convention covers: ``README.md`` and ``docs/**/*.md``."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def page_id(path: Path) -> str:
    """The page's path relative to the repository (the pytest id)."""
    return path.relative_to(ROOT).as_posix()


def parse(path: Path) -> list[Block]:
    """The fenced blocks of a page, in order.

    Raises
    ------
    ValueError
        On a fence that is never closed.
    """
    name = page_id(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m["indent"]), m["fence"], m["info"].strip()
        language = info.split()[0] if info else ""
        skip = None
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0 and (s := _SKIP.match(lines[j])):
            skip = s["reason"].strip()
        body: list[str] = []
        k = i + 1
        while k < len(lines):
            c = _FENCE.match(lines[k])
            if (
                c
                and c["fence"][0] == fence[0]
                and len(c["fence"]) >= len(fence)
                and not c["info"].strip()
            ):
                break
            line = lines[k]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            k += 1
        else:
            raise ValueError(f"{name}:{i + 1}: the fence opened here is never closed")
        blocks.append(Block(name, i + 1, language, "\n".join(body) + "\n", skip))
        i = k + 1
    return blocks


def label_errors(path: Path) -> list[str]:
    """One message per fence without a language, or with one the convention does not know."""
    errors = []
    for b in parse(path):
        if not b.language:
            errors.append(
                f"{b.where}: a fence without a language; say `text` if it is not to be run"
            )
        elif b.language not in LANGUAGES:
            errors.append(
                f"{b.where}: unknown fence language {b.language!r}; use one of "
                + ", ".join(LANGUAGES)
            )
        if b.skip is not None and not b.skip:
            errors.append(f"{b.where}: a docs-test skip marker without a reason")
    return errors


# ----------------------------------------------------------------- the sandbox
def make_sandbox(tmp: Path) -> dict[str, str]:
    """Fill ``tmp`` with the examples, the test helpers and the ``dpref`` shims.

    Returns the environment the page's commands run in.
    """
    examples = ROOT / "docs" / "examples"
    shutil.copytree(examples, tmp / "docs" / "examples")  # paths as from the repository root
    for item in examples.iterdir():  # and each file by its own name, in the working directory
        if item.is_file():
            shutil.copy(item, tmp / item.name)
    (tmp / "tests").mkdir()
    for helper in (ROOT / "tests").glob("*.py"):
        shutil.copy(helper, tmp / "tests" / helper.name)
    targets = ROOT / "tests" / "targets"  # third-party-style targets (tests/targets/*.py)
    if targets.is_dir():
        (tmp / "tests" / "targets").mkdir()
        for helper in targets.glob("*.py"):
            shutil.copy(helper, tmp / "tests" / "targets" / helper.name)
    bin_dir = tmp / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    shims = {"dpref": f'exec "{sys.executable}" -m dpref "$@"\n', "python": ""}
    shims["python"] = f'exec "{sys.executable}" "$@"\n'
    for name, line in shims.items():
        shim = bin_dir / name
        shim.write_text("#!/bin/sh\n" + line)
        shim.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    )
    env["COLUMNS"] = "100"  # argparse help is wrapped to the terminal width
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    return env


# ----------------------------------------------------------------- matching
def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` fits ``expected``, where a line ``...`` matches any number of lines."""
    memo: dict[tuple[int, int], bool] = {}

    def fit(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(expected):
                ok = j == len(actual)
            elif expected[i] == "...":
                ok = fit(i + 1, j) or (j < len(actual) and fit(i, j + 1))
            else:
                ok = j < len(actual) and expected[i] == actual[j] and fit(i + 1, j + 1)
            memo[i, j] = ok
        return memo[i, j]

    return fit(0, 0)


def _clean(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def console_commands(body: str) -> list[tuple[int, str, list[str], int]]:
    """``(offset, command, expected lines, expected exit)`` per ``$ `` command of a block.

    A command line ending in a backslash continues on the next line.
    """
    out: list[tuple[int, str, list[str], int]] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            if lines[i].strip():
                raise ValueError(f"line {i + 1} of the block is output before any `$ ` command")
            i += 1
            continue
        start = i
        command = lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command + "\n" + lines[i]
        i += 1
        expected: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i].rstrip())
            i += 1
        while expected and not expected[-1]:
            expected.pop()
        status = 0
        if expected and (e := _EXIT.match(expected[-1])):
            status = int(e[1])
            expected.pop()
        out.append((start, command, expected, status))
    return out


# ----------------------------------------------------------------- running
def _run_shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )


def _indent(text: str) -> str:
    return "".join("    " + line + "\n" for line in text.rstrip("\n").splitlines())


def run_console(block: Block, cwd: Path, env: dict[str, str]) -> list[str]:
    """Failure messages for one ``console`` block (empty when it passes)."""
    failures = []
    for offset, command, expected, status in console_commands(block.body):
        line = block.line + 1 + offset
        try:
            done = _run_shell(command, cwd, env)
        except subprocess.TimeoutExpired:
            failures.append(
                f"{block.page}:{line}: $ {command}\n  timed out after {COMMAND_TIMEOUT} s"
            )
            continue
        actual = _clean(done.stdout)
        problems = []
        if done.returncode != status:
            problems.append(f"  exit status {done.returncode}, expected {status}")
        if not matches(expected, actual):
            diff = difflib.unified_diff(
                expected, actual, "expected (the page)", "actual (the command)", lineterm="", n=2
            )
            problems.append("  stdout differs:\n" + _indent("\n".join(diff)))
        if problems:
            if done.stderr.strip():
                problems.append("  stderr:\n" + _indent(done.stderr[-3000:]))
            failures.append(f"{block.page}:{line}: $ {command}\n" + "\n".join(problems))
    return failures


def run_bash(block: Block, cwd: Path, env: dict[str, str]) -> list[str]:
    """Failure messages for one ``bash`` block (empty when it exits 0)."""
    try:
        done = _run_shell(block.body, cwd, env)
    except subprocess.TimeoutExpired:
        return [f"{block.where}: bash block timed out after {COMMAND_TIMEOUT} s"]
    if done.returncode == 0:
        return []
    return [
        f"{block.where}: bash block exited {done.returncode}\n"
        + _indent(block.body)
        + "  stdout:\n"
        + _indent(done.stdout[-3000:])
        + "  stderr:\n"
        + _indent(done.stderr[-3000:])
    ]


def run_python(block: Block, namespace: dict[str, object]) -> list[str]:
    """Failure messages for one ``python`` block (empty when it does not raise)."""
    try:
        code = compile("\n" * block.line + block.body, block.page, "exec")
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, namespace)
    except Exception:
        return [f"{block.where}: python block raised\n" + _indent(traceback.format_exc())]
    return []


_RUNNER_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def run_pycon(block: Block, namespace: dict[str, object]) -> list[str]:
    """Failure messages for one ``pycon`` block (empty when every example matches)."""
    parser = doctest.DocTestParser()
    try:
        test = parser.get_doctest(block.body, namespace, block.where, block.page, block.line)
    except ValueError as exc:
        return [f"{block.where}: pycon block does not parse: {exc}"]
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=_RUNNER_FLAGS)
    runner.run(test, out=report.write, clear_globs=False)
    namespace.update(test.globs)  # DocTest copies the namespace it is given
    if runner.failures:
        return [
            f"{block.where}: pycon block, {runner.failures} example(s) differ\n" + report.getvalue()
        ]
    return []


def run_page(path: Path, tmp: Path, limit: int | None = None) -> list[str]:
    """Run every block of a page in order; the failure messages, one per failing command.

    ``limit``: run only the page's first ``limit`` runnable blocks (a prefix, so every
    block still sees what the blocks before it set up).
    """
    runnable = [b for b in parse(path) if b.skip is None and b.language in RUN]
    env = make_sandbox(tmp)
    namespace: dict[str, object] = {"__name__": "__main__"}
    failures: list[str] = []
    old_cwd, old_path = Path.cwd(), list(sys.path)
    os.chdir(tmp)
    sys.path.insert(0, str(tmp / "tests"))
    try:
        for block in runnable[:limit]:
            if block.language == "pycon":
                failures += run_pycon(block, namespace)
            elif block.language == "python":
                failures += run_python(block, namespace)
            elif block.language == "console":
                try:
                    failures += run_console(block, tmp, env)
                except ValueError as exc:
                    failures.append(f"{block.where}: {exc}")
            else:
                failures += run_bash(block, tmp, env)
    finally:
        os.chdir(old_cwd)
        sys.path[:] = old_path
    return failures


if __name__ == "__main__":  # python tests/docs_examples.py PAGE...: run pages, print failures
    import tempfile

    status = 0
    for arg in sys.argv[1:] or [str(p) for p in pages()]:
        with tempfile.TemporaryDirectory() as d:
            found = run_page(Path(arg).resolve(), Path(d))
        print(f"{arg}: {'ok' if not found else f'{len(found)} failure(s)'}")
        for f in found:
            print(f)
        status |= bool(found)
    sys.exit(status)
