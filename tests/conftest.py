"""Test-wide settings.

Hypothesis runs on shared, noisy CI machines: the default profile drops the wall-clock deadline
and the "generation is slow" health check, which fail on load rather than on code. Tests that
need a time bound set their own ``@settings(deadline=...)``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "shared-machine"))
