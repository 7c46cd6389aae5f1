"""Float32 implementations for ``dpref golden run --precision float32`` (issue 25).

Each is a ``dpref_golden = "vector"`` target: it builds the vector's plan with dpref and
evaluates ``y = R·(A·x + z)`` entirely in float32 (the matrices, the stream and the
injected noise cast to float32, float32 matrix products), as a float32 library would.

* ``float32_release`` — correct: within the float32 bound of every vector, though not
  bit for bit and not within the float64 preset's rtol = 1e-12;
* ``float32_node0_doubled`` — node 0's noise doubled: a mismatch under either preset.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpref.golden import vector_mechanism


def _release(stream: Any, noise: Any, config: Any, factor: float) -> Any:
    plan = vector_mechanism(config).plan(int(config["horizon"]))
    A = plan.A().toarray().astype(np.float32)
    R = plan.R().toarray().astype(np.float32)
    z = np.asarray(noise, dtype=np.float32).copy()
    z[0] = np.float32(z[0] * factor)
    nodes = A @ np.asarray(stream, dtype=np.float32) + z
    return R @ nodes


def float32_release(stream: Any, noise: Any, config: Any) -> Any:
    """The vector's release in float32."""
    return _release(stream, noise, config, 1.0)


def float32_node0_doubled(stream: Any, noise: Any, config: Any) -> Any:
    """The release in float32 with node 0's noise doubled."""
    return _release(stream, noise, config, 2.0)


float32_release.dpref_golden = "vector"  # type: ignore[attr-defined]
float32_node0_doubled.dpref_golden = "vector"  # type: ignore[attr-defined]
