"""Sharded sampling (``dpref.audit.cluster``): the same result in this process and on Dask.

The audit's test split and conformance's main sample are drawn in shards whose layout
and seeds depend on the seed and the sample count only.  These tests run one real
2-process ``LocalCluster`` (shared by the module, reached through ``scheduler=``) plus
one audit that starts its own (``workers=2``), and require reports *identical* to the
in-process ones — exact integer counts, bounds and findings; no statistical judgement is
made here, so there is no false-failure rate to state.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref import Binary
from dpref.audit import audit
from dpref.audit import cluster as C
from dpref.audit.conformance.conform import conform
from dpref.audit.isolation.targets import as_target
from dpref.audit.limits import MAX_WORKERS
from dpref.audit.pure.events import Condition, ConjunctionEvent
from dpref.cli import main
from dpref.errors import DprefError, ParameterError

HERE = Path(__file__).parent
TARGETS = str(HERE / "audit_targets.py")
HOSTILE = str(HERE / "hostile_targets.py")

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """The address of a 2-process local Dask cluster, shared by this module's tests."""
    import logging

    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    try:
        yield str(cluster.scheduler_address)
    finally:
        cluster.close()


def _same_audit(a: Any, b: Any) -> None:
    """Two audit reports agree on everything but the wall time."""
    da, db = a.as_dict(), b.as_dict()
    da.pop("seconds")
    db.pop("seconds")
    assert da == db


def _same_conform(a: Any, b: Any) -> None:
    da, db = a.as_dict(), b.as_dict()
    da.pop("seconds")
    db.pop("seconds")
    assert da == db


# ------------------------------------------------------------------ layout and seeds
@pytest.mark.parametrize("total", [1, 200, C.SHARD_SAMPLES, C.SHARD_SAMPLES + 1, 10**6, 10**9])
def test_layout_covers_the_samples_and_depends_on_the_count_only(total: int) -> None:
    sizes = C.shard_layout(total)
    assert sum(sizes) == total
    assert all(0 < s <= C.SHARD_SAMPLES for s in sizes)
    assert all(s == C.SHARD_SAMPLES for s in sizes[:-1])
    # the signature takes no worker count: the layout cannot depend on one
    assert C.shard_layout(total) == sizes


def test_shard_seeds_are_spawned_children_and_independent_of_the_spawn_order() -> None:
    root = np.random.SeedSequence(12345)
    direct = [C.shard_seed(root, side, i) for side in (0, 1) for i in range(5)]
    spawned = [child for side in root.spawn(2) for child in side.spawn(5)]
    for d, s in zip(direct, spawned, strict=True):
        assert d.generate_state(4).tolist() == s.generate_state(4).tolist()
    # a second call (after root.spawn moved the root's counter) gives the same seeds
    assert C.shard_seed(root, 1, 3).generate_state(4).tolist() == (
        direct[8].generate_state(4).tolist()
    )
    states = {tuple(d.generate_state(4).tolist()) for d in direct}
    assert len(states) == len(direct)


def test_root_seed_is_fixed_by_the_run_seed() -> None:
    a = C.root_seed(np.random.default_rng(7)).generate_state(4).tolist()
    b = C.root_seed(np.random.default_rng(7)).generate_state(4).tolist()
    c = C.root_seed(np.random.default_rng(8)).generate_state(4).tolist()
    assert a == b != c


def test_shard_counts_merge_to_the_counts_of_the_whole_sample() -> None:
    """Counting shard by shard and summing equals counting the concatenated outputs."""
    tgt = as_target(Binary(epsilon=1, horizon=4))
    x = np.array([0.0, 1.0, 1.0, 0.0])
    event = ConjunctionEvent((Condition(0, -1, True, 0.5),))
    root = np.random.SeedSequence(3)
    layout = C.shard_layout(1000, 300)
    assert layout == [300, 300, 300, 100]
    summed = sum(
        int(C.count_events(tgt, x, [event], C.shard_seed(root, 0, i), n).counts[0])
        for i, n in enumerate(layout)
    )
    rows = np.concatenate(
        [
            tgt.sample(x, n, np.random.default_rng(C.shard_seed(root, 0, i)))
            for i, n in enumerate(layout)
        ]
    )
    assert summed == int(np.count_nonzero(event.indicator(rows)))
    assert 0 < summed < 1000


# ------------------------------------------------------------------ identical results
SMALL_SHARD = 2000
"""Shard size in the tests below (monkeypatched: many shards from a few samples)."""


@pytest.fixture
def small_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(C, "SHARD_SAMPLES", SMALL_SHARD)
    monkeypatch.setattr(C, "SHARD_RUNS", SMALL_SHARD // 4)


def test_builtin_audit_is_identical_in_process_and_on_a_two_process_cluster(
    scheduler: str, small_shards: None
) -> None:
    kw: dict[str, Any] = {"horizon": 5, "samples": 20_500, "seed": 11}
    here = audit(Binary(epsilon=1, horizon=5), **kw)
    there = audit(Binary(epsilon=1, horizon=5), scheduler=scheduler, **kw)
    _same_audit(here, there)
    assert len(here.events) == 2  # black-box and plan-aware events, both counted
    assert len(C.shard_layout(here.test_samples)) == 9  # 8 full shards and a part per side


def test_local_cluster_of_two_workers_gives_the_same_audit(small_shards: None) -> None:
    """``workers=2`` starts (and closes) its own LocalCluster."""
    kw: dict[str, Any] = {"horizon": 4, "samples": 12_000, "seed": 5}
    here = audit(Binary(epsilon=1, horizon=4), **kw)
    there = audit(Binary(epsilon=1, horizon=4), workers=2, **kw)
    _same_audit(here, there)


def test_untrusted_audit_is_identical_and_still_isolated(
    scheduler: str, small_shards: None
) -> None:
    """A spec target: on the cluster each shard imports it only in dpref's own worker
    process; the report (bound, counts, verdict) is the in-process one."""
    kw: dict[str, Any] = {"horizon": 5, "epsilon": 1, "samples": 10_000, "seed": 2}
    target = f"{TARGETS}:binary_log_t"
    here = audit(target, **kw)
    there = audit(target, scheduler=scheduler, **kw)
    _same_audit(here, there)
    assert here.events and not here.findings


def test_findings_from_shards_are_merged_as_in_process(scheduler: str, small_shards: None) -> None:
    """A target with NaN outputs: the non-finite finding is the same wherever it ran."""
    kw: dict[str, Any] = {"horizon": 4, "epsilon": 1, "samples": 8_000, "seed": 4}
    target = f"{TARGETS}:returns_nan"
    here = audit(target, **kw)
    there = audit(target, scheduler=scheduler, **kw)
    _same_audit(here, there)
    assert any(f.kind == "non-finite" for f in there.findings)


def test_conform_is_identical_in_process_and_on_the_cluster(
    scheduler: str, small_shards: None
) -> None:
    kw: dict[str, Any] = {"horizon": 8, "runs": 3 * C.SHARD_RUNS + 100, "seed": 9}
    ref = Binary(epsilon=1, horizon=8)
    here = conform(f"{TARGETS}:binary_ok", ref, **kw)
    there = conform(f"{TARGETS}:binary_ok", ref, scheduler=scheduler, **kw)
    _same_conform(here, there)
    assert here.runs == 3 * C.SHARD_RUNS + 100 and len(here.checks) == 6


def test_a_crashing_target_in_a_shard_task_is_a_finding_not_a_crash() -> None:
    """The task a Dask worker runs, run here: the target exits in its own worker process
    and the shard reports the failure (dpref's process carries on)."""
    recipe = C.TargetRecipe.of(as_target(f"{HOSTILE}:os_exits", timeout=20.0))
    x = np.zeros(3)
    event = ConjunctionEvent((Condition(0, -1, True, 0.0),))
    shard = C.remote_count(recipe, [event], x, np.random.SeedSequence(1), 50)
    assert shard.failure is not None and shard.failure.kind == "exited"
    assert shard.samples == 0 and shard.findings
    rows = C.remote_rows(recipe, x, np.random.SeedSequence(1), 10)
    assert rows.failure is not None and rows.rows.shape == (0, 3)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"workers": 0}, r"workers=0: must be >= 1"),
        ({"workers": MAX_WORKERS + 1}, rf"workers={MAX_WORKERS + 1}: must be <= {MAX_WORKERS}"),
        ({"workers": 2.0}, r"workers=2.0: must be an int"),
        ({"workers": True}, r"workers=True: must be an int"),
        ({"scheduler": 8786}, r"scheduler=8786: must be an address string"),
        ({"scheduler": " "}, r"scheduler=' ': must be a scheduler address host:port"),
        ({"scheduler": "abc"}, r"scheduler='abc': must be a scheduler address host:port"),
        ({"scheduler": "tcp://h:1/x"}, r"scheduler='tcp://h:1/x': must be a scheduler addr"),
        ({"workers": 2, "scheduler": "tcp://h:1"}, r"workers=2, scheduler='tcp://h:1': give one"),
    ],
)
def test_bad_cluster_options_are_refused_before_the_target_is_loaded(
    kwargs: dict[str, Any], match: str
) -> None:
    never = f"{HOSTILE}:does_not_exist"  # loading it would be a TargetError instead
    with pytest.raises(DprefError, match=match):
        audit(never, horizon=4, epsilon=1, samples=1000, **kwargs)
    with pytest.raises(DprefError, match=match):
        conform(never, Binary(epsilon=1, horizon=4), horizon=4, **kwargs)


def test_cluster_options_need_a_reference_in_conform() -> None:
    with pytest.raises(ParameterError, match=r"workers=2: applies only with a reference"):
        conform(Binary(epsilon=1, horizon=4), None, horizon=4, workers=2)


def test_missing_dask_names_the_option_and_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` fails
    for kwargs, name in (({"workers": 2}, "workers=2"), ({"scheduler": "tcp://h:1"}, "scheduler")):
        with pytest.raises(ParameterError, match=name) as err:
            audit(Binary(epsilon=1, horizon=4), horizon=4, samples=1000, **kwargs)
        assert "pip install 'dpref[cluster]'" in str(err.value)
    # the default, in-process run does not need Dask
    assert audit(Binary(epsilon=1, horizon=4), horizon=4, samples=1000, seed=1).events


def test_unreachable_scheduler_fails_after_the_bounded_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(C, "CONNECT_TIMEOUT", 1.0)
    with pytest.raises(ParameterError, match=r"scheduler='tcp://127.0.0.1:1': no Dask sched") as e:
        audit(Binary(epsilon=1, horizon=4), horizon=4, samples=1000, scheduler="tcp://127.0.0.1:1")
    assert "\n" not in str(e.value) and "within 1 s" in str(e.value)


def test_a_server_that_is_not_a_scheduler_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTP server (e.g. a proxy) answers at the address: Dask's handshake reads
    ``b"HTTP/1.1"`` as a frame length of 3.5·10¹⁸ bytes and fails allocating it (a
    MemoryError, not an OSError) — seen against a sandbox's network proxy."""
    import socket
    import threading

    monkeypatch.setattr(C, "CONNECT_TIMEOUT", 2.0)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def serve() -> None:
        for _ in range(4):
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        with pytest.raises(ParameterError, match="scheduler=") as e:
            audit(
                Binary(epsilon=1, horizon=4),
                horizon=4,
                samples=1000,
                scheduler=f"tcp://127.0.0.1:{port}",
            )
    finally:
        server.close()
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["audit", "binary", "--horizon", "4", "--epsilon", "1", "--workers", "0"], "--workers=0"),
        (
            [
                *("conform", "binary", "--reference", "binary", "--horizon", "4"),
                *("--epsilon", "1", "--workers", "2", "--scheduler", "tcp://h:1"),
            ],
            "--workers=2, --scheduler='tcp://h:1': give one",
        ),
        (
            ["conform", "binary", "--horizon", "4", "--epsilon", "1", "--workers", "2"],
            "--workers=2: applies only with --reference",
        ),
        (
            ["audit", "binary", "--horizon", "4", "--epsilon", "1", "--exact", "--workers", "2"],
            "--workers=2: not used by --exact",
        ),
    ],
)
def test_cli_bad_cluster_flags(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err
    assert main([*argv, "--json"]) == 2
    out, err = capsys.readouterr()
    assert message in json.loads(out)["error"]["message"]


def test_cli_unreachable_scheduler_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(C, "CONNECT_TIMEOUT", 1.0)
    argv = ["audit", "binary", "--horizon", "4", "--epsilon", "1", "--samples", "1000"]
    assert main([*argv, "--scheduler", "tcp://127.0.0.1:1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "--scheduler='tcp://127.0.0.1:1'" in err


def test_cli_audit_on_the_cluster_prints_the_in_process_report(
    scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["audit", "binary", "--horizon", "4", "--epsilon", "1", "--seed", "3", "--json"]
    argv += ["--samples", "20000"]
    codes = []
    docs = []
    for extra in ([], ["--scheduler", scheduler]):
        codes.append(main(argv + extra))
        doc = json.loads(capsys.readouterr().out)
        doc.pop("seconds")
        docs.append(doc)
    assert codes[0] == codes[1] == 0
    assert docs[0] == docs[1]


def test_import_of_the_cluster_module_does_not_load_dask() -> None:
    import subprocess

    code = (
        "import sys, dpref.audit.cluster, dpref.audit.pure.loss, dpref.audit.conformance.conform; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_a_callable_target_runs_forked_on_the_cluster_with_the_same_result(
    scheduler: str, small_shards: None
) -> None:
    """A lambda travels by value (cloudpickle) and runs in a forked worker of the Dask worker."""

    def f(x: Any, rng: np.random.Generator) -> Any:
        return np.cumsum(x) + rng.laplace(0.0, 2.0, x.size)

    kw: dict[str, Any] = {"horizon": 3, "epsilon": 1, "samples": 6_000, "seed": 8}
    _same_audit(audit(f, **kw), audit(f, scheduler=scheduler, **kw))


def test_a_callable_that_cannot_be_sent_is_refused_before_sampling() -> None:
    import threading

    lock = threading.Lock()

    def holds_a_lock(x: Any, rng: np.random.Generator) -> Any:
        with lock:
            return np.cumsum(x)

    with pytest.raises(ParameterError, match=r"cannot be sent to the Dask workers of workers=2"):
        audit(holds_a_lock, horizon=3, epsilon=1, samples=1000, workers=2)
