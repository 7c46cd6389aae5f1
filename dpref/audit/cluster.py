"""Sharded sampling for the audit tools, run in this process or on a Dask cluster.

An audit's test split and a conformance run's main sample are cut into *shards* whose
layout is a function of the sample count alone (:func:`shard_layout`), each drawn from
its own child seed of one root :class:`numpy.random.SeedSequence` (:func:`shard_seed`:
child ``i`` of child ``side`` of the root, exactly what ``root.spawn(2)[side].spawn(n)[i]``
returns).  A shard produces a small summary — the event counts of the audit, or the
rows of a conformance run — and the summaries are merged in shard order, exactly
(integer sums; concatenation).  Neither the layout, nor the seeds, nor the merge
depend on where or in which order the shards ran, so the result for a given seed and
sample count is the same in this process (:class:`Sequential`, the default), on a local
Dask cluster of N worker processes (``workers=N``) and on an existing cluster
(``scheduler=ADDRESS``).

Untrusted targets stay isolated on a cluster: each shard task rebuilds the
:class:`~dpref.audit.isolation.targets.Target` from its recipe (:class:`TargetRecipe`) inside the
Dask worker, so a spec is imported, and a callable runs, only in dpref's own worker
process started there (:mod:`dpref.audit.isolation.supervisor`), under the same time-out and memory
limit; its failures come back as findings in the shard's summary.

Dask is an optional extra (``pip install 'dpref[cluster]'``) and is imported only
inside the functions that start or join a cluster.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.isolation.targets import Finding, Target, TargetFailure
from dpref.audit.limits import CONNECT_TIMEOUT, MAX_WORKERS
from dpref.errors import ClusterError, DprefError, DprefTypeError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.validation import check_int_range, fmt

__all__ = [
    "CONNECT_TIMEOUT",
    "SHARD_RUNS",
    "SHARD_SAMPLES",
    "ClusterOptions",
    "CountShard",
    "Executor",
    "RowsShard",
    "Sequential",
    "TargetRecipe",
    "check_cluster",
    "check_sendable",
    "count_events",
    "open_executor",
    "option_names",
    "root_seed",
    "sample_rows",
    "shard_layout",
    "shard_seed",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

SHARD_SAMPLES = 1 << 17
"""Samples per side in one shard of an audit's test split (the last shard takes the rest).
Large enough that a task's overhead (a few ms on Dask, a worker start for an untrusted
target) is small beside its sampling, small enough that 10⁶ samples make 8 shards."""
SHARD_RUNS = 1 << 12
"""Runs in one shard of a conformance run's main sample (the last shard takes the rest)."""
_CHUNK_BYTES = 32 << 20
"""Largest block of outputs a shard holds at once (rows × T × 8 bytes)."""
_INSTALL = "pip install 'dpref[cluster]'"
_ADDRESS = re.compile(
    r"(?:[a-z][a-z0-9+.-]*://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):[0-9]{1,5}\Z"
)
"""A scheduler address: an optional protocol, a host name, IPv4 or [IPv6] address, a port."""


# ------------------------------------------------------------------ layout and seeds
def shard_layout(total: int, size: int | None = None) -> list[int]:
    """The sizes of the shards of ``total`` samples: ``size`` each (default
    :data:`SHARD_SAMPLES`), the last the rest.

    A function of ``total`` (and the fixed shard size) only, never of the number of
    workers: that is what makes a sharded run's result independent of where it ran.
    """
    size = SHARD_SAMPLES if size is None else size
    if total <= 0:
        return []
    full, rest = divmod(total, size)
    return [size] * full + ([rest] if rest else [])


def root_seed(gen: np.random.Generator) -> np.random.SeedSequence:
    """The root of a run's shard seeds: four 64-bit words drawn from the run's generator
    (so it is fixed by the run's seed and by nothing else)."""
    words = gen.integers(0, 2**64, size=4, dtype=np.uint64)
    return np.random.SeedSequence([int(w) for w in words.tolist()])


def shard_seed(root: np.random.SeedSequence, side: int, index: int) -> np.random.SeedSequence:
    """Child ``index`` of child ``side`` of ``root``: ``root.spawn(2)[side].spawn(n)[index]``.

    Built directly from the root's entropy and spawn key, so it neither depends on nor
    changes how many children were spawned before (``spawn`` does both).
    """
    return np.random.SeedSequence(
        root.entropy,
        spawn_key=(*root.spawn_key, side, index),
        pool_size=root.pool_size,
    )


# ------------------------------------------------------------------ the target, rebuilt
@dataclass(frozen=True)
class TargetRecipe:
    """How a shard task rebuilds the run's target in a Dask worker (picklable)."""

    name: str
    """The target's name in reports."""
    mechanism: Mechanism | None
    """A built-in mechanism (sampled in the Dask worker's process), else None."""
    spec: str | None
    """``module:function`` / ``file.py:function``: imported only in a spawned worker."""
    func: Callable[..., Any] | None
    """A callable target (pickled by Dask): run only in a forked worker."""
    timeout: float | None
    """Longest a single call may run (seconds)."""
    memory_limit: int | None
    """Address space the target's worker may add (bytes)."""

    @staticmethod
    def of(tgt: Target) -> TargetRecipe:
        """The recipe of a target."""
        return TargetRecipe(
            tgt.name, tgt.mechanism, tgt.spec, tgt.func, tgt.timeout, tgt.memory_limit
        )

    def build(self) -> Target:
        """A fresh target (its worker starts on the first call)."""
        return Target(
            self.name,
            mechanism=self.mechanism,
            func=self.func,
            timeout=self.timeout,
            spec=self.spec,
            memory_limit=self.memory_limit,
        )


# ------------------------------------------------------------------ shard work
@dataclass(frozen=True)
class CountShard:
    """What one shard of an audit's test split sends back: counts, findings, a failure."""

    counts: IntArray
    """How many of the shard's samples fall in each event."""
    samples: int
    """Samples drawn (the shard size, unless the target failed)."""
    findings: tuple[Finding, ...]
    """Findings recorded while the shard ran, in order."""
    failure: Finding | None
    """The failure that stopped the shard (None: it ran to the end)."""


@dataclass(frozen=True)
class RowsShard:
    """What one shard of a conformance run sends back: its rows, findings, a failure."""

    rows: FloatArray
    """The outputs, shape (runs of the shard, T) (empty when the target failed)."""
    findings: tuple[Finding, ...]
    """Findings recorded while the shard ran, in order."""
    failure: Finding | None
    """The failure that stopped the shard (None: it ran to the end)."""


def _chunk_rows(T: int) -> int:
    return max(1, min(1 << 16, _CHUNK_BYTES // (8 * max(T, 1))))


def count_events(
    tgt: Target,
    stream: FloatArray,
    events: Sequence[Any],
    seed: np.random.SeedSequence,
    size: int,
    progress: Callable[[int], object] | None = None,
) -> CountShard:
    """Draw ``size`` outputs of ``tgt`` on ``stream`` from ``seed`` and count each event.

    The outputs are drawn in blocks of at most 32 MiB (a number of rows fixed by T), and
    only the counts are kept.  A target failure ends the shard; the counts so far are
    discarded by the caller (the failure is in the summary).
    """
    gen = np.random.default_rng(seed)
    counts = np.zeros(len(events), dtype=np.int64)
    before = len(tgt.findings)
    chunk = _chunk_rows(int(stream.size))
    done = 0
    failure = None
    while done < size:
        k = min(chunk, size - done)
        try:
            Y = tgt.sample(stream, k, gen, progress)
        except TargetFailure as exc:
            failure = exc.finding
            break
        for e, event in enumerate(events):
            counts[e] += int(np.count_nonzero(event.indicator(Y)))
        done += k
    return CountShard(counts, done, tuple(tgt.findings[before:]), failure)


def sample_rows(
    tgt: Target,
    stream: FloatArray,
    seed: np.random.SeedSequence,
    size: int,
    progress: Callable[[int], object] | None = None,
) -> RowsShard:
    """``size`` outputs of ``tgt`` on ``stream`` drawn from ``seed`` (one conformance shard)."""
    gen = np.random.default_rng(seed)
    before = len(tgt.findings)
    try:
        rows = tgt.sample(stream, size, gen, progress)
    except TargetFailure as exc:
        return RowsShard(np.zeros((0, stream.size)), tuple(tgt.findings[before:]), exc.finding)
    return RowsShard(rows, tuple(tgt.findings[before:]), None)


def _remote(recipe: TargetRecipe, work: Callable[[Target], Any]) -> Any:
    """Run ``work`` on a fresh target in this (Dask worker) process; end its worker after."""
    tgt = recipe.build()
    try:
        return work(tgt)
    except DprefError as exc:  # e.g. the spec cannot be imported on this machine
        finding = Finding("exception", f"on a Dask worker: {exc}")
        return TargetFailure(finding)
    finally:
        tgt.close()


def remote_count(
    recipe: TargetRecipe,
    events: Sequence[Any],
    stream: FloatArray,
    seed: np.random.SeedSequence,
    size: int,
) -> CountShard:
    """:func:`count_events` as a Dask task: on a target rebuilt from ``recipe``."""
    out = _remote(recipe, lambda t: count_events(t, stream, events, seed, size))
    if isinstance(out, TargetFailure):
        return CountShard(np.zeros(len(events), dtype=np.int64), 0, (out.finding,), out.finding)
    result: CountShard = out
    return result


def remote_rows(
    recipe: TargetRecipe, stream: FloatArray, seed: np.random.SeedSequence, size: int
) -> RowsShard:
    """:func:`sample_rows` as a Dask task: on a target rebuilt from ``recipe``."""
    out = _remote(recipe, lambda t: sample_rows(t, stream, seed, size))
    if isinstance(out, TargetFailure):
        return RowsShard(np.zeros((0, stream.size)), (out.finding,), out.finding)
    result: RowsShard = out
    return result


# ------------------------------------------------------------------ options
@dataclass(frozen=True)
class ClusterOptions:
    """Where the shards run: this process, a local cluster of N processes, or a scheduler."""

    workers: int | None = None
    """Worker processes of a local Dask cluster (None: not a local cluster)."""
    scheduler: str | None = None
    """Address of an existing Dask scheduler (None: not an existing cluster)."""
    names: tuple[str, str] = ("workers", "scheduler")
    """How errors name the two options (the CLI's flags, or the API's parameters)."""

    @property
    def sequential(self) -> bool:
        """The shards run one after another in this process."""
        return self.workers is None and self.scheduler is None


_NAMES: ContextVar[tuple[str, str]] = ContextVar("_NAMES", default=("workers", "scheduler"))


@contextlib.contextmanager
def option_names(workers: str, scheduler: str) -> Iterator[None]:
    """Within the block, errors about the two options name them so (the CLI: its flags)."""
    token = _NAMES.set((workers, scheduler))
    try:
        yield
    finally:
        _NAMES.reset(token)


def check_cluster(workers: Any, scheduler: Any) -> ClusterOptions:
    """Validate ``workers`` / ``scheduler`` (before anything is sampled or started).

    ``workers`` is an int in [1, :data:`~dpref.audit.limits.MAX_WORKERS`], ``scheduler``
    a non-empty address string; at most one of them; either needs Dask installed.
    Errors name the options as :func:`option_names` says (default: the parameters).
    """
    names = _NAMES.get()
    wname, sname = names
    if workers is not None and scheduler is not None:
        raise ParameterError(
            f"{wname}={fmt(workers)}, {sname}={fmt(scheduler)}: give one of them (a local "
            "cluster of N processes, or an existing scheduler), not both"
        )
    if workers is not None:
        workers = check_int_range(wname, workers, 1, MAX_WORKERS)
    if scheduler is not None:
        if not isinstance(scheduler, str):
            raise DprefTypeError(f"{sname}={fmt(scheduler)}: must be an address string")
        if len(scheduler) > 1000 or not _ADDRESS.match(scheduler.strip()):
            raise ParameterError(
                f"{sname}={fmt(scheduler)}: must be a scheduler address host:port, such as "
                "tcp://head:8786"
            )
    opts = ClusterOptions(workers, None if scheduler is None else scheduler.strip(), names)
    if not opts.sequential:
        _distributed(wname if workers is not None else sname, workers or scheduler)
    return opts


def check_sendable(tgt: Target, opts: ClusterOptions) -> None:
    """A callable target must pickle (by reference or, via cloudpickle, by value) to reach
    the Dask workers: checked before anything is sampled (a :class:`ParameterError`)."""
    if opts.sequential or tgt.func is None:
        return
    import cloudpickle  # a dependency of Dask, present whenever Dask is

    try:
        cloudpickle.dumps(tgt.func)
    except Exception as exc:
        name = opts.names[0] if opts.workers is not None else opts.names[1]
        value = opts.workers if opts.workers is not None else opts.scheduler
        raise ParameterError(
            f"target={fmt(tgt.name)}: cannot be sent to the Dask workers of "
            f"{name}={fmt(value)} ({_line(exc)}); pass a 'module:function' spec instead"
        ) from None


def _distributed(name: str, value: Any) -> Any:
    """The ``distributed`` module, or a :class:`ParameterError` saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ParameterError(
            f"{name}={fmt(value)}: needs Dask, which is not installed ({_INSTALL})"
        ) from None
    return distributed


# ------------------------------------------------------------------ executors
class Executor(abc.ABC):
    """Runs shard tasks and yields their summaries in shard order."""

    workers: int | None = None
    """Worker processes (None: this process)."""
    sequential: bool = True
    """The shards run in this process, on the caller's live target."""

    @abc.abstractmethod
    def results(
        self,
        local: Callable[[int], Any],
        remote: Callable[..., Any],
        shared: tuple[Any, ...],
        tasks: Sequence[tuple[Any, ...]],
    ) -> Iterator[Any]:
        """The summary of each task, in order: ``local(i)`` in this process, or
        ``remote(*shared, *tasks[i])`` on the cluster."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the cluster, if any."""


class Sequential(Executor):
    """The shards one after another in this process (no Dask needed)."""

    def results(
        self,
        local: Callable[[int], Any],
        remote: Callable[..., Any],
        shared: tuple[Any, ...],
        tasks: Sequence[tuple[Any, ...]],
    ) -> Iterator[Any]:
        """``local(i)`` for each task, lazily (the caller may stop at a failure)."""
        for i in range(len(tasks)):
            yield local(i)

    def close(self) -> None:
        """Nothing to release: the shards ran in this process."""


class DaskExecutor(Executor):
    """Shard tasks submitted to a Dask client; results gathered in shard order."""

    sequential = False

    def __init__(self, client: Any, cluster: Any, workers: int | None) -> None:
        self.client = client
        self.cluster = cluster
        self.workers = workers

    def results(
        self,
        local: Callable[[int], Any],
        remote: Callable[..., Any],
        shared: tuple[Any, ...],
        tasks: Sequence[tuple[Any, ...]],
    ) -> Iterator[Any]:
        """Submit every task (the shared arguments sent once), then yield the results in
        order; the tasks not yet gathered are cancelled when the caller stops early."""
        if not tasks:
            return
        sent = self.client.scatter(list(shared), broadcast=True, hash=False)
        futures = [self.client.submit(remote, *sent, *task, pure=False) for task in tasks]
        try:
            for fut in futures:
                try:
                    out = fut.result()
                except Exception as exc:  # a lost worker, a task that could not run
                    raise ClusterError(f"the Dask cluster failed a shard: {_line(exc)}") from None
                yield out
        finally:
            self.client.cancel(futures)

    def close(self) -> None:
        """Close the client, and the local cluster if this executor started it."""
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()


@contextlib.contextmanager
def open_executor(opts: ClusterOptions) -> Iterator[Executor]:
    """The executor of ``opts`` (a started local cluster or a connected client), closed
    on exit.  An existing scheduler that does not answer within
    :data:`CONNECT_TIMEOUT` seconds is a :class:`ParameterError`."""
    if opts.sequential:
        yield Sequential()
        return
    ex = _start(opts)
    try:
        yield ex
    finally:
        ex.close()


def _start(opts: ClusterOptions) -> DaskExecutor:
    wname, sname = opts.names
    if opts.workers is not None:
        distributed = _distributed(wname, opts.workers)
        try:
            with warnings.catch_warnings():  # "port 8787 is in use": not the user's concern
                warnings.simplefilter("ignore", UserWarning)
                cluster = distributed.LocalCluster(
                    n_workers=opts.workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
        except Exception as exc:
            raise ClusterError(
                f"{wname}={opts.workers}: the local Dask cluster did not start ({_line(exc)})"
            ) from None
        try:
            client = distributed.Client(cluster)
        except BaseException:
            cluster.close()
            raise
        return DaskExecutor(client, cluster, opts.workers)
    distributed = _distributed(sname, opts.scheduler)
    try:
        client = distributed.Client(opts.scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ParameterError(
            f"{sname}={fmt(opts.scheduler)}: no Dask scheduler answered within "
            f"{CONNECT_TIMEOUT:g} s ({_line(exc)})"
        ) from None
    except Exception as exc:  # something answered, but not a Dask scheduler (garbage
        # frames can even make distributed try to allocate exabytes: a MemoryError)
        raise ParameterError(
            f"{sname}={fmt(opts.scheduler)}: what answered there is not a Dask scheduler "
            f"({type(exc).__name__}: {_line(exc)})"
        ) from None
    try:  # a scheduler without workers would leave every task waiting
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
    except Exception as exc:  # OSError, TimeoutError, or a scheduler that misbehaves
        client.close()
        raise ParameterError(
            f"{sname}={fmt(opts.scheduler)}: the scheduler has no workers after "
            f"{CONNECT_TIMEOUT:g} s ({_line(exc)})"
        ) from None
    n = len(client.scheduler_info().get("workers", {}))
    return DaskExecutor(client, None, n or None)


def _line(exc: BaseException) -> str:
    """An exception as one short line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
