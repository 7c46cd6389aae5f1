"""Global L1 sensitivity of one-dimensional queries (docs/spec.md §4).

The definitions are the sensitivity notebook's (OpenMined, "Global Sensitivity From
Scratch", 2021; docs/spec.md §4), made exact.  A *universe* ``U`` is either

* ``universe="dataset"``: a multiset of people; equal values are different people, and a
  dataset uses each person at most once (notebook scenario (a)); or
* ``universe="range"``: a set of allowed values, each usable any number of times
  (scenario (b)).

Release datasets are the sub-multisets of ``U`` of size ``n``.  At Hamming distance ``k``:

* **unbounded** (add/remove): the neighbours of a release ``D`` are ``D − R`` for every
  ``R ⊆ D`` with ``|R| = k`` and ``D + A`` for every ``A ⊆ U − D`` with ``|A| = k``;
* **bounded** (replace): ``D = C + A`` and ``D' = C + B`` share a core ``C`` of ``n − k``
  records and ``A, B ⊆ U − C`` have ``k`` records each (so ``D`` and ``D'`` share at least
  ``n − k`` records; when ``A`` and ``B`` overlap they share more).

The global sensitivity is ``max |q(D) − q(D')|`` over all such pairs, or 0 when the only
pair is ``D = D'`` (bounded, ``universe="dataset"``, ``n = |U|``: the only release is
``U`` itself; the notebook raises on ``max([])`` there).

Queries (numpy semantics): ``count``, ``sum``, ``mean``, ``median``, ``var`` and ``std``
(population, ``ddof=0``) and ``percentile_<p>`` (numpy's ``linear`` method, ``0 ≤ p ≤ 100``;
the notebook uses ``percentile_25``, ``_50``, ``_75``, ``_90``).  The mean, median, variance,
standard deviation and percentiles of an empty dataset are undefined, so those queries with
``model="unbounded"`` and ``hamming == size`` raise :class:`~dpref.errors.ParameterError`
instead of comparing against an empty neighbour.  ``count`` under the bounded model is 0:
every dataset has ``n`` records (the notebook's prose says 1, its code computes 0).

Two implementations agree on every input the tests can enumerate:

* :func:`oracle_sensitivity` enumerates the definition above literally (index combinations
  of people, or combinations with replacement of range values) and evaluates every query
  exactly with :class:`~fractions.Fraction`;
* the default fast path uses closed forms for ``count``, ``sum`` and ``mean``, and
  polynomial families of structured candidates, each proven to contain an optimal pair:
  for percentiles the ``ℓ + 1`` prefix + suffix subsets of the sorted people
  (:func:`~dpref.sensitivity.percentiles._fast_percentile`); for ``var``/``std`` a block
  of consecutive people plus sorted extremes (Lemmas U, D, B of
  :func:`~dpref.sensitivity.moments._fast_moment`; ``std`` reduces to a weighted variance
  difference by quasi-convexity).  Sums are exact integers.

Every result except ``std`` is an exact rational, rounded up when converted to a float.

Notes
-----
The notebook emulates a range by repeating each allowed value ``n`` times and calling its
dataset function.  That forbids adding a value already used ``n`` times to a release, so the
neighbours with k more records are fewer than ``universe="range"`` allows.  Example: values
``{1, 11}``, ``n = k = 3``, median, ``unbounded_side="add"``: ``range`` gives 10
(``{1, 11, 11}`` has median 11, ``{1, 1, 1, 1, 11, 11}`` has median 1), the emulation
``[1, 11] * 3`` gives 5, because the first pair needs four 1s.  With both sides (the
default) we found no input where the two differ: the tests search small cases, and the
removal side reaches the same maximum.

Modules
-------
``queries`` (names, parsing, exact evaluation), ``model`` (validation into a problem,
the universe's records, work budgets), ``oracle`` (literal enumeration), ``closed_forms``
(count, sum, mean), ``percentiles`` and ``moments`` (the structured candidate families and
their proofs), ``api`` (the public functions), ``items`` (Δ of one stream item for
:mod:`dpref.domains`; loads nothing else), ``cli`` (``dpref sensitivity``) and ``bench``.
Importing this package is cheap: the names below are loaded from their module on first
use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpref.lazy import lazy_exports

if TYPE_CHECKING:
    from dpref.sensitivity.api import (
        exact_global_sensitivity,
        global_sensitivity,
        global_sensitivity_table,
        oracle_sensitivity,
    )
    from dpref.sensitivity.items import stream_item_sensitivity
    from dpref.sensitivity.model import DEFAULT_MAX_ENUMERATION, Model, UniverseKind
    from dpref.sensitivity.moments import _std_down_needs_search as _std_down_needs_search
    from dpref.sensitivity.queries import NOTEBOOK_QUERIES, evaluate_query

__all__ = [
    "DEFAULT_MAX_ENUMERATION",
    "NOTEBOOK_QUERIES",
    "Model",
    "UniverseKind",
    "evaluate_query",
    "exact_global_sensitivity",
    "global_sensitivity",
    "global_sensitivity_table",
    "oracle_sensitivity",
    "stream_item_sensitivity",
]

_HOME: dict[str, str] = {
    "DEFAULT_MAX_ENUMERATION": "model",
    "Model": "model",
    "NOTEBOOK_QUERIES": "queries",
    "UniverseKind": "model",
    "_std_down_needs_search": "moments",  # used by tests/test_sensitivity.py
    "evaluate_query": "queries",
    "exact_global_sensitivity": "api",
    "global_sensitivity": "api",
    "global_sensitivity_table": "api",
    "oracle_sensitivity": "api",
    "stream_item_sensitivity": "items",
}
"""The submodule defining each name importable from the package."""

__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOME)
