"""NumPy reference edge fluxes of every scheme (docs/SCHEMES.md), vectorised over edges.

Each scheme module exposes ``flux(Wi, Wj, Hi, Hj, normal, g=9.81, r=0.5,
eps_h=5e-3, return_flags=False) -> (F-, F+, ||D||_inf[, flags])`` taking (E, 6)
two-layer or (E, 3) one-layer states. :func:`get_flux` picks one by name; which
schemes exist, and their kernels, is :mod:`fvswe.registry`'s. A kernel
without a module here has its Numba physics looped over the edges as its reference
(:mod:`fvswe.schemes.looped`).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from functools import cache

from ..registry import KERNEL_LAYERS, KERNELS, kernel, resolve


@cache
def reference(ref: str) -> Callable:
    """The NumPy reference of kernel ``ref``: ``fvswe.schemes.<module>.<function>``, or
    where that module does not exist the physics kernel looped over the edges."""
    if importlib.util.find_spec(f"{__name__}.{ref.split('.')[0]}") is not None:
        return resolve(__name__, ref)
    from .. import physics
    from .looped import looped

    return looped(physics.kernel(ref), KERNEL_LAYERS[ref])


#: (name, layers) -> reference flux.
FLUXES: dict[tuple[str, int], Callable] = {key: reference(ref) for key, ref in KERNELS.items()}


def get_flux(name: str, layers: int) -> Callable:
    """The reference flux of scheme ``name`` for ``layers`` (1 or 2) layers."""
    kernel(name, layers)
    return FLUXES[(name, layers)]


__all__ = ["FLUXES", "KERNELS", "get_flux", "kernel", "reference"]
