"""Test configuration: hypothesis profiles and shared fixtures.

CI (``CI=true``) uses the derandomised ``ci`` profile, so every run of the suite
tries the same examples; locally the ``dev`` profile explores new ones.

The contract tests are inherited by one class per mechanism, so the same
``@given`` test runs on several instances ("executors"); each subclass is a
separate, deterministic test, hence ``differing_executors`` is suppressed.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.differing_executors]

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SUPPRESS,
)
settings.register_profile("dev", deadline=None, suppress_health_check=_SUPPRESS)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
