"""The one "skip without a GPU" of the tests that run a GPU case beside CPU ones."""

from __future__ import annotations

import pytest


def skip_without_gpu() -> None:
    """Skip the calling test, with the reason, where no GPU backend is available."""
    from fvswe.backends import gpu

    ok, why = gpu.available()
    if not ok:
        pytest.skip(f"no GPU backend here: {why}")
