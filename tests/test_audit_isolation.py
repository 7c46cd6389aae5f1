"""Isolation of untrusted targets: every attack on dpref's process becomes a finding.

Each hostile target of ``tests/hostile_targets.py`` is audited through the command
line, in a subprocess, as a CI gate would run it; the test checks that stdout is
exactly one JSON object written by dpref, that the findings name what happened, and
that the exit status is not 0.  Timeouts are 1 s; no test asserts a wall-clock time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref.audit import audit
from dpref.audit.isolation import protocol as P
from dpref.audit.isolation.targets import MAX_DEATHS, Target, TargetFailure, as_target
from dpref.errors import DprefTypeError, ParameterError

sys.path.insert(0, str(Path(__file__).parent))
import hostile_targets as ht

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "tests/hostile_targets.py"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _cli(spec: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    argv = [sys.executable, "-m", "dpref", "audit", spec, "--horizon", "4", "--epsilon", "1"]
    argv += ["--samples", "2000", "--json", "--timeout", "1", "--seed", "1", *extra]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=60)
    assert done.stdout.count("\n") == 1, done.stdout
    data = json.loads(done.stdout)  # exactly one JSON object, nothing else
    assert isinstance(data, dict) and "findings" in data and "violation" in data
    return done.returncode, data, done.stderr


def _kinds(data: dict[str, Any]) -> set[str]:
    return {f["kind"] for f in data["findings"]}


_SLOW_CI = (pytest.mark.slow, pytest.mark.ci)
"""One ``dpref audit`` process each (~2–4 s of CPU): the default run keeps one target per
finding kind, the further targets of a kind are ``slow`` and run by CI."""


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("exits", "exited"),
        pytest.param("os_exits", "exited", marks=_SLOW_CI),
        ("segfaults", "killed"),
        ("zeroes_input", "mutates-input"),
        ("catches_everything", "timeout"),
        pytest.param("ignores_alarm", "timeout", marks=_SLOW_CI),
        pytest.param("endless_len", "timeout", marks=_SLOW_CI),
        ("forges_frames", "protocol"),
        ("forks", "forked"),
        ("returns_complex", "bad-output"),
        pytest.param("returns_numeric_strings", "bad-output", marks=_SLOW_CI),
        pytest.param("returns_one_string", "bad-output", marks=_SLOW_CI),
        pytest.param("returns_datetime", "bad-output", marks=_SLOW_CI),
        pytest.param("returns_bools", "bad-output", marks=_SLOW_CI),
        pytest.param("returns_nested", "bad-output", marks=_SLOW_CI),
        ("hogs_memory", "memory"),
    ],
)
def test_hostile_target_is_a_finding_in_one_json_report(name: str, kind: str) -> None:
    # a hang is detected after --timeout (+0.25 s), three times over: keep it short
    extra = ("--timeout", "0.3") if kind == "timeout" else ()
    code, data, _ = _cli(f"{HOSTILE}:{name}", *extra)
    assert kind in _kinds(data), data["findings"]
    assert code == 3 and data["verdict"] == "inconclusive"  # nothing sampled: nothing shown
    assert data["epsilon_lower_bound"] is None  # nothing could be sampled


@pytest.mark.parametrize("name", ["writes_fd1", "prints", "hijacks_printer"])
def test_target_cannot_write_or_forge_the_report(name: str) -> None:
    """Exact prefix sums: the real report proves a violation, whatever the target prints."""
    code, data, err = _cli(f"{HOSTILE}:{name}")
    assert data["violation"] is True and code == 1
    if name in ("writes_fd1", "prints"):
        assert '{"violation": false}' in err  # the target's text: diagnostics on stderr


@pytest.mark.parametrize(
    ("body", "kind"),
    [("import sys\nsys.exit(0)\n", "exited"), ("import os\nos._exit(0)\n", "exited")],
)
def test_exit_at_import_is_a_finding(tmp_path: Path, body: str, kind: str) -> None:
    mod = tmp_path / "ends_at_import.py"
    mod.write_text(body + "def f(x, rng):\n    return x\n")
    code, data, _ = _cli(f"{mod}:f")
    assert kind in _kinds(data) and data["verdict"] == "inconclusive" and code == 3


def test_print_at_import_reaches_stderr_only(tmp_path: Path) -> None:
    mod = tmp_path / "prints_at_import.py"
    mod.write_text(
        "import os\nprint('{\"violation\": false}')\nos.write(1, b'garbage\\n')\n"
        "import numpy as np\ndef f(x, rng):\n    return np.cumsum(x)\n"
    )
    code, data, err = _cli(f"{mod}:f")
    assert data["violation"] is True and code == 1
    assert "garbage" in err


def test_import_error_is_still_bad_input(tmp_path: Path) -> None:
    mod = tmp_path / "broken.py"
    mod.write_text("raise ImportError('nope')\n")
    argv = [sys.executable, "-m", "dpref", "audit", f"{mod}:f", "--horizon", "4"]
    argv += ["--epsilon", "1", "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=60)
    assert done.returncode == 2 and done.stdout.count("\n") == 1  # --json: one error object
    assert "ImportError: nope" in json.loads(done.stdout)["error"]["message"]
    assert "importing it raised ImportError: nope" in done.stderr


def test_spec_is_never_imported_in_dpref(tmp_path: Path) -> None:
    mod = tmp_path / "marker_target.py"
    mod.write_text("import numpy as np\ndef f(x, rng):\n    return np.cumsum(x)\n")
    with as_target(f"{mod}:f", timeout=5) as tgt:
        tgt.sample(np.zeros(3), 10, np.random.default_rng(1))
    assert not [m for m in sys.modules if "marker_target" in m]


# ------------------------------------------------------- the Python API (forked)
def test_forked_worker_survives_deaths_and_starts_fresh() -> None:
    r = audit(ht.exits_on_last_one, horizon=4, epsilon=1, samples=2_000, seed=1, timeout=5)
    assert "exited" in {f.kind for f in r.findings}
    assert r.epsilon_lower_bound is not None  # the other streams were still sampled
    assert not r.ok


def test_consecutive_deaths_give_up() -> None:
    tgt = as_target(ht.os_exits, timeout=5)
    x = np.zeros(3)
    for _ in range(MAX_DEATHS + 2):
        with pytest.raises(TargetFailure, match=r"exited|gave-up"):
            tgt.sample(x, 10, np.random.default_rng(1))
    assert [f.kind for f in tgt.findings] == ["exited", "gave-up"]


def test_memory_limit_stops_a_hog_that_touches_its_memory() -> None:
    tgt = as_target(ht.hogs_touched_memory, timeout=5, memory_limit=64 << 20)
    r = audit(tgt, horizon=3, epsilon=1, samples=2_000, seed=1)
    assert "memory" in {f.kind for f in r.findings}
    tgt.close()


def test_hijacking_json_in_a_forked_worker_leaves_dpref_alone() -> None:
    before = json.dumps
    r = audit(ht.hijacks_printer, horizon=3, epsilon=1, samples=2_000, seed=1)
    assert json.dumps is before and json.loads(json.dumps(r.as_dict()))["violation"] is True


def test_each_call_gets_its_own_copy_of_the_stream() -> None:
    r = audit(ht.zeroes_input, horizon=3, epsilon=1, samples=2_000, seed=1)
    assert r.findings[0].kind == "mutates-input"


# ------------------------------------------------------------ reproducibility
def test_outputs_do_not_depend_on_batching() -> None:
    import audit_targets as at

    x = np.array([1.0, 0.0, 1.0, 1.0])
    with as_target(at.simple2_ok) as tgt:
        few = tgt.sample(x, 5, np.random.default_rng(7))
        many = tgt.sample(x, 5_000, np.random.default_rng(7))
        again = tgt.sample(x, 5_000, np.random.default_rng(7))
    assert np.array_equal(few, many[:5]) and np.array_equal(many, again)
    # the worker draws what the target drew in dpref's process, from the same Generator
    assert np.array_equal(few[0], at.simple2_ok(x, np.random.default_rng(7)))


def test_spec_and_callable_give_the_same_report() -> None:
    import audit_targets as at

    a = audit(at.simple2_half_noise, horizon=3, epsilon=1, samples=5_000, seed=3)
    b = audit(
        "tests/audit_targets.py:simple2_half_noise", horizon=3, epsilon=1, samples=5_000, seed=3
    )
    assert a.epsilon_lower_bound == b.epsilon_lower_bound and a.event == b.event


# ------------------------------------------------------------ batched protocol
def test_batched_target_is_sampled_vectorised() -> None:
    x = np.array([1.0, 0.0, 1.0, 1.0])
    with as_target(ht.laplace_batched) as tgt:
        Y = tgt.sample(x, 100_000, np.random.default_rng(1))
        assert tgt.batched
    assert Y.shape == (100_000, 4)
    assert np.allclose(Y.mean(axis=0), np.cumsum(x), atol=0.05)
    assert np.allclose(Y.var(axis=0), 2.0 * np.arange(1, 5), rtol=0.05)


def test_batched_violation_is_proven() -> None:
    r = audit(ht.half_noise_batched, horizon=3, epsilon=1, samples=20_000, seed=1)
    assert r.violation and not r.findings


def test_batched_wrong_shape_is_a_finding() -> None:
    r = audit(ht.wrong_shape_batched, horizon=3, epsilon=1, samples=2_000, seed=1)
    assert [f.kind for f in r.findings] == ["wrong-length"]


# ------------------------------------------------------------------ protocol
def test_frames_that_do_not_parse_exactly_are_rejected() -> None:
    good = b"".join(bytes(b) for b in P.encode(P.Frame(P.OP_CALL, count=1)))
    frame, n, t = P.parse_header(good[: P.HEADER.size])
    assert (frame.op, frame.count, n, t) == (P.OP_CALL, 1, 0, 0)
    for bad in (
        b"XXXX" + good[4 : P.HEADER.size],  # magic
        good[:4] + bytes([99]) + good[5 : P.HEADER.size],  # op
        good[:5] + bytes([42]) + good[6 : P.HEADER.size],  # status
        good[: P.HEADER.size - 1],  # short
    ):
        with pytest.raises(P.ProtocolError):
            P.parse_header(bad)
    u64 = P.ARRAY.pack(P.U64, 1, 0, 4, 0)
    with pytest.raises(P.ProtocolError, match="dtype"):
        P.parse_array_header(u64, (P.F64,))
    with pytest.raises(P.ProtocolError):
        P.parse_array_header(P.ARRAY.pack(P.F64, 3, 0, 4, 4), (P.F64,))


def test_dpref_never_unpickles_worker_output() -> None:
    for mod in ("protocol", "supervisor", "targets"):
        text = (ROOT / "dpref" / "audit" / "isolation" / f"{mod}.py").read_text()
        assert "import pickle" not in text and "pickle.load" not in text
        assert "multiprocessing" not in text


def test_bad_limits_name_the_parameter() -> None:
    with pytest.raises(ParameterError, match="memory_limit=10"):
        as_target(ht.exact, memory_limit=10)
    with pytest.raises(DprefTypeError, match="memory_limit="):
        as_target(ht.exact, memory_limit=1.5)  # type: ignore[arg-type]
    assert isinstance(as_target(ht.exact, memory_limit=None), Target)


# ------------------------------------------------------------ the exact audit
@pytest.mark.parametrize(
    ("name", "kind"),
    [("exits", "exited"), ("os_exits", "exited"), ("catches_everything", "timeout")],
)
def test_exact_audit_runs_hostile_targets_in_the_worker(name: str, kind: str) -> None:
    """``--exact`` calls the target through the same worker: exits and hangs are findings,
    the report is one JSON object, the verdict inconclusive (exit 3)."""
    argv = [sys.executable, "-m", "dpref", "audit", f"{HOSTILE}:{name}", "--exact"]
    argv += ["--horizon", "4", "--epsilon", "1", "--json", "--timeout", "0.3"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=60)
    assert done.stdout.count("\n") == 1, done.stdout
    data = json.loads(done.stdout)
    assert kind in _kinds(data), data["findings"]
    assert data["verdict"] == "inconclusive" and done.returncode == 3


def test_exact_audit_never_imports_a_spec_in_dpref(tmp_path: Path) -> None:
    """The spec is imported only in the worker: its import-time code never runs here."""
    from dpref.audit import exact_audit

    mod = tmp_path / "marks_its_import.py"
    mod.write_text(
        "import builtins\nimport numpy as np\nbuiltins.DPREF_TARGET_IMPORTED = True\n"
        "def f(x, rng):\n    return np.cumsum(x) + rng.laplace(0.0, 1.0, len(x))\n"
    )
    report = exact_audit(f"{mod}:f", 4, epsilon=1)
    import builtins

    assert not hasattr(builtins, "DPREF_TARGET_IMPORTED")
    # prefix sums with fresh Lap(1) per output: item 1 moves all 4 outputs, ε = 4 exactly
    assert report.verdict == "violation" and report.epsilon == 4


def _tree(root: int) -> set[int]:
    """``root`` and its descendants, from /proc (the worker's keeper, init, worker …)."""
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo.extend(kids.get(pid, []))
    return found


def _alive(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _shared_dir() -> Path:
    """A directory a target dropped to uid 65534 can write to (tmp_path is root's 0700)."""
    import tempfile

    where = Path(tempfile.mkdtemp(prefix="dpref-test-"))
    where.chmod(0o777)
    return where


def test_a_killed_dpref_takes_its_worker_with_it(tmp_path: Path) -> None:
    """dpref killed mid-audit (SIGKILL: no clean-up) must not leave the target running."""
    import signal
    import time

    marker = _shared_dir() / "started"
    mod = tmp_path / "spins.py"
    mod.write_text(
        "import time\n"
        f"def f(x, rng):\n    open({str(marker)!r}, 'w').write('1')\n"
        "    while True:\n        time.sleep(0.01)\n"
    )
    argv = [sys.executable, "-m", "dpref", "audit", f"{mod}:f", "--horizon", "4"]
    argv += ["--epsilon", "1", "--samples", "2000", "--timeout", "30", "--json"]
    proc = subprocess.Popen(argv, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    tree = _tree(proc.pid) - {proc.pid}
    assert tree  # the worker (and its keeper and init, when namespaces are available)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not any(_alive(p) for p in tree)
    finally:  # a failure must not leave the spinning target behind
        for pid in tree:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
