"""Issue 24, "a gate a target can hang, stop or forge": each defect, reproduced by a
hostile target of ``tests/hostile_isolation_targets.py``, is now a finding in one valid
report, and nothing the target started outlives its request.

Timeouts are 0.3 s; a hang is bounded by the subprocess' own 120 s limit (the defect
made the run endless), and no test asserts a wall-clock time.  Where Linux refuses a
mechanism (no PID namespace, no root) the tests that need it are skipped, and the report
names the weaker level (:data:`dpref.audit.isolation.sandbox.LEVELS`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref import SimpleII
from dpref.audit import audit
from dpref.audit.conformance.conform import conform
from dpref.audit.conformance.golden_run import run_golden
from dpref.audit.injected.structural import exact_audit
from dpref.audit.isolation import sandbox
from dpref.audit.isolation.targets import as_target

sys.path.insert(0, str(Path(__file__).parent))
import hostile_isolation_targets as hit

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "tests/hostile_isolation_targets.py"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def _cli(
    spec: str, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], str]:
    argv = [sys.executable, "-m", "dpref", "audit", spec, "--horizon", "4", "--epsilon", "1"]
    if "--exact" not in extra:
        argv += ["--samples", "2000", "--seed", "1"]
    argv += ["--json", "--timeout", "0.3", *extra]
    done = subprocess.run(
        argv, capture_output=True, text=True, cwd=ROOT, env=env or _env(), timeout=120
    )
    assert done.stdout.count("\n") == 1, done.stdout  # exactly one object, dpref's
    data = json.loads(done.stdout)
    assert isinstance(data, dict) and "findings" in data
    return done.returncode, data, done.stderr


def _kinds(findings: Any) -> set[str]:
    return {f["kind"] if isinstance(f, dict) else f.kind for f in findings}


@pytest.fixture(scope="module")
def level() -> str:
    with as_target(f"{HOSTILE}:laplace", timeout=30) as t:
        assert t.isolation in sandbox.LEVELS
        return str(t.isolation)


def _strong(level: str) -> bool:
    """dpref's pid is out of the target's reach (a PID namespace, or another uid)."""
    return level.startswith("pid-namespace") or level.endswith("+uid")


def test_the_report_names_the_isolation_level(level: str) -> None:
    """Defect: the report did not say which isolation was in force."""
    _, data, _ = _cli(f"{HOSTILE}:laplace", "--timeout", "30")
    assert data["isolation"] == level
    if os.geteuid() == 0:  # root always drops something
        assert "+" in level
    weak = _env(DPREF_NO_NAMESPACES="1")
    _, data, _ = _cli(f"{HOSTILE}:laplace", "--timeout", "30", env=weak)
    assert data["isolation"].startswith("subreaper") or data["isolation"] == "none"


def test_exact_and_conform_reports_name_the_isolation_level(level: str) -> None:
    """Defect: the report did not say which isolation was in force (`--exact`, conform)."""
    exact = exact_audit(f"{HOSTILE}:laplace", horizon=4, epsilon=1, timeout=30)
    assert exact.isolation == level and exact.as_dict()["isolation"] == level
    report = conform(f"{HOSTILE}:laplace", None, horizon=4, timeout=30)  # reference-free
    assert report.isolation == level and report.as_dict()["isolation"] == level
    in_process = conform(SimpleII(epsilon=1, horizon=4), None, horizon=4)
    assert in_process.isolation is None


# ---------------------------------------------------------------- heartbeats
@pytest.mark.parametrize(
    "name", ["beats_forever", pytest.param("beats_counting", marks=pytest.mark.slow)]
)
def test_heartbeats_cannot_extend_the_cli_timeout(name: str) -> None:
    """Defect: `--timeout` defeated by well-formed progress frames every 50 ms (audit CLI)."""
    code, data, _ = _cli(f"{HOSTILE}:{name}")
    assert _kinds(data["findings"]) & {"timeout", "protocol"}, data["findings"]
    assert code == 3 and data["verdict"] == "inconclusive"


def test_heartbeats_cannot_extend_the_exact_audit_timeout() -> None:
    """Defect: `--timeout` defeated by progress frames (`audit --exact`)."""
    code, data, _ = _cli(f"{HOSTILE}:beats_forever", "--exact")
    assert _kinds(data["findings"]) & {"timeout", "protocol"}, data["findings"]
    assert code == 3


def test_heartbeats_cannot_extend_the_api_timeouts() -> None:
    """Defect: `timeout=` defeated by progress frames (Python API: audit, conform, exact
    audit of a callable run in a forked worker)."""
    rep = audit(hit.beats_forever, horizon=4, epsilon=1, samples=2000, timeout=0.3, seed=1)
    assert rep.verdict == "inconclusive" and _kinds(rep.findings) & {"timeout", "protocol"}
    ref = SimpleII(epsilon=1, horizon=4)
    crep = conform(hit.beats_counting, ref, horizon=4, runs=50, timeout=0.3, seed=1)
    assert not crep.conforms and _kinds(crep.findings) & {"timeout", "protocol"}
    erep = exact_audit(hit.beats_forever, 4, epsilon=1, timeout=0.3)
    assert erep.verdict == "inconclusive" and _kinds(erep.findings) & {"timeout", "protocol"}


def test_heartbeats_cannot_extend_the_golden_run_timeout() -> None:
    """Defect: `--timeout` defeated by progress frames (`golden run`)."""
    run = run_golden(
        f"{HOSTILE}:injected_beats_forever", mechanism="binary", case="binary[T=5]*", timeout=0.3
    )
    kinds = {f.kind for _, f in run.findings}
    assert not run.ok and kinds & {"timeout", "protocol", "gave-up"}, kinds


# ---------------------------------------------------------------- dpref's process
@pytest.mark.parametrize("name", ["stops_parent", "forges_report", "forges_then_kills_parent"])
def test_target_cannot_stop_kill_or_write_into_dpref(name: str, level: str) -> None:
    """Defects: the target could SIGSTOP or kill its parent, and write a forged report into
    dpref's stdout through /proc/PPID/fd/1 ("write, then kill dpref" left one forged
    no-violation-found).  The real report proves the violation of the exact prefix sums."""
    if not _strong(level):
        pytest.skip(f"isolation {level}: the target shares dpref's uid and PID namespace")
    code, data, _ = _cli(f"{HOSTILE}:{name}")
    assert data["violation"] is True and code == 1 and data["isolation"] == level


# ---------------------------------------------------------------- no survivors
def _named(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                comm = (entry / "comm").read_text().strip()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if comm == token and state != "Z":
                found.append(int(entry.name))
    return found


def _gone(token: str) -> bool:
    """No live process named ``token`` (the kernel ends a killed namespace asynchronously:
    wait for it up to 10 s, then kill the survivors so a failure leaves nothing behind)."""
    deadline = time.monotonic() + 10
    while _named(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _named(token)
    for pid in left:
        os.kill(pid, 9)
    return not left


@pytest.mark.parametrize(
    ("name", "namespaces"),
    [
        ("libc_forks", True),
        ("double_forks_detached", True),
        ("spawns_session", True),
        ("double_forks_detached", False),
        pytest.param("libc_forks", False, marks=pytest.mark.slow),
        pytest.param("spawns_session", False, marks=pytest.mark.slow),
    ],
)
def test_every_process_a_target_starts_is_found_and_killed(name: str, namespaces: bool) -> None:
    """Defects: children in a new session and libc fork() copies of the worker outlived the
    run, and only Python's os.fork was reported.  With and without a PID namespace (the
    subreaper fallback), each is a `forked` finding and no process is left."""
    token = "dpx" + uuid.uuid4().hex[:10]
    extra = {} if namespaces else {"DPREF_NO_NAMESPACES": "1"}
    code, data, _ = _cli(
        f"{HOSTILE}:{name}", "--timeout", "30", env=_env(DPREF_TEST_TOKEN=token, **extra)
    )
    assert "forked" in _kinds(data["findings"]), data["findings"]
    assert code != 0
    assert _gone(token)


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "no-namespaces"])
def test_a_worker_that_exits_leaves_no_orphan(namespaces: bool) -> None:
    """Defect: a process detached by the target outlived the run when the worker itself
    ended (its orphan was reparented away from dpref's reach)."""
    token = "dpw" + uuid.uuid4().hex[:10]
    extra = {} if namespaces else {"DPREF_NO_NAMESPACES": "1"}
    env = _env(DPREF_TEST_TOKEN=token, **extra)
    code, data, _ = _cli(f"{HOSTILE}:forks_then_exits", "--timeout", "30", env=env)
    assert "exited" in _kinds(data["findings"]) and code == 3
    assert _gone(token)


def test_forked_worker_kills_a_libc_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect: a libc fork() of a callable's forked worker (Python API) outlived the run."""
    token = "dpy" + uuid.uuid4().hex[:10]
    monkeypatch.setenv("DPREF_TEST_TOKEN", token)
    with as_target(hit.libc_forks, timeout=30) as t:
        with pytest.raises(Exception, match="forked"):
            t.sample(np.zeros(4), 3, np.random.default_rng(1))
    assert _gone(token)


# ---------------------------------------------------------------- golden run --command
def _command(code: str) -> str:
    import shlex

    return shlex.join([sys.executable, "-c", code])


def test_golden_command_output_is_bounded() -> None:
    """Defect: `golden run --command` read output without a bound (MemoryError traceback)."""
    endless = "import sys\nwhile True:\n    sys.stdout.write('1' * 65536)\n"
    run = run_golden(command=_command(endless), mechanism="binary", case="binary[T=5]*", timeout=30)
    details = [f.detail for _, f in run.findings]
    assert not run.ok and any("bytes on stdout" in d for d in details), details


def test_golden_command_slow_output_cannot_extend_the_timeout() -> None:
    """Defect class: a command writing one byte every 50 ms kept a per-read timeout alive."""
    drip = "import sys, time\nwhile True:\n    print(end=' ', flush=True); time.sleep(0.05)\n"
    run = run_golden(command=_command(drip), mechanism="binary", case="binary[T=5]*", timeout=0.3)
    assert {f.kind for _, f in run.findings} & {"timeout", "gave-up"}


def test_golden_command_leaves_no_orphan() -> None:
    """Defect: `golden run --command` left one orphan per vector (a child in a new session)."""
    token = "dpz" + uuid.uuid4().hex[:10]
    child = (
        "import ctypes, time\n"
        f"ctypes.CDLL(None).prctl(15, ctypes.c_char_p({token.encode()!r}), 0, 0, 0)\n"
        "time.sleep(100)\n"
    )
    code = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', {child!r}], start_new_session=True)\n"
        "print('[]')\n"
    )
    run = run_golden(command=_command(code), mechanism="binary", case="binary[T=5]*", timeout=30)
    assert not run.ok  # [] is the wrong length
    assert run.isolation in sandbox.LEVELS and run.as_dict()["isolation"] == run.isolation
    assert _gone(token)
