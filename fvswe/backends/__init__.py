"""Backends run the per-step passes over a :class:`~fvswe.backends.layout.Layout`.

``cpu`` (Numba) is always available; ``gpu`` (CuPy) when CuPy sees a device. What the
rest of the package may use of a backend is :class:`fvswe.backends.base.Backend`.
"""

from __future__ import annotations

from ..errors import ConfigError

BACKENDS = ("cpu", "gpu", "auto")


def backend_class(name: str):
    """The backend class for ``cpu``, ``gpu`` or ``auto`` (the GPU when one is usable)."""
    if name not in BACKENDS:
        raise ConfigError(f"backend: unknown {name!r} (choose from {', '.join(BACKENDS)})")
    if name in ("gpu", "auto"):
        from . import gpu

        if name == "gpu" or gpu.available()[0]:  # the GPU backend says why it cannot run
            return gpu.GpuBackend
    from .cpu.pipeline import CpuBackend

    return CpuBackend
