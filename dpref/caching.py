"""A cache bounded by the bytes of the arrays it holds, not by its number of entries.

The vectorised paths cache index arrays whose size grows with the horizon: an
``lru_cache`` of k entries holds k times the largest, which at T = 10⁶ is hundreds of
MB (64 popcount-group entries could hold 1 GB).  :class:`BytesCache` keeps the most
recent entry whatever its size — so repeated use at one horizon never rebuilds — and
drops older entries, least recently used first, while the total exceeds its budget.
It therefore holds at most ``budget`` bytes plus one entry.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["BytesCache", "array_bytes"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def array_bytes(value: Any) -> int:
    """Bytes of the numpy arrays in a value (arrays nested in tuples and lists)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, tuple | list):
        return sum(array_bytes(v) for v in value)
    return 0


class BytesCache(Generic[K, V]):
    """Values of ``build(key)`` by key, bounded by bytes (see the module docstring).

    ``build`` runs outside the lock (two threads missing the same key may both build
    it; either result is kept).  Cached arrays should be read-only: callers share them.
    """

    def __init__(self, build: Callable[[K], V], budget: int) -> None:
        self.build = build
        self.budget = budget
        """Bytes kept for entries other than the most recent one."""
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V:
        """The value of ``key``, built on a miss."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit[0]
        value = self.build(key)
        with self._lock:
            self._entries[key] = (value, array_bytes(value))
            self._entries.move_to_end(key)
            self._evict()
        return value

    def _evict(self) -> None:
        total = sum(n for _, n in self._entries.values())
        while len(self._entries) > 1 and total > self.budget:
            _, (_, n) = self._entries.popitem(last=False)
            total -= n

    def nbytes(self) -> int:
        """Bytes held."""
        with self._lock:
            return sum(n for _, n in self._entries.values())

    def __len__(self) -> int:
        """Entries held."""
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
