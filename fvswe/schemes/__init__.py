"""NumPy reference edge fluxes of every scheme (docs/SCHEMES.md), vectorised over edges.

Each scheme module exposes ``flux(Wi, Wj, Hi, Hj, normal, g=9.81, r=0.5,
eps_h=5e-3, return_flags=False) -> (F-, F+, ||D||_inf[, flags])`` taking (E, 6)
two-layer or (E, 3) one-layer states. :func:`get_flux` picks one by name; which
schemes exist, and their kernels, is :mod:`fvswe.schemes.registry`'s.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from .registry import KERNELS, kernel


def kernel_table(package: str) -> dict[tuple[str, int], Callable]:
    """:data:`KERNELS` resolved to the functions of ``package`` (this one, or a backend's),
    importing its scheme modules."""
    table = {}
    for key, ref in KERNELS.items():
        module, function = ref.split(".")
        table[key] = getattr(importlib.import_module(f"{package}.{module}"), function)
    return table


#: (name, layers) -> reference flux.
FLUXES: dict[tuple[str, int], Callable] = kernel_table(__name__)


def get_flux(name: str, layers: int) -> Callable:
    """The reference flux of scheme ``name`` for ``layers`` (1 or 2) layers."""
    kernel(name, layers)
    return FLUXES[(name, layers)]


__all__ = ["FLUXES", "KERNELS", "get_flux", "kernel", "kernel_table"]
