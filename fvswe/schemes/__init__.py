"""NumPy reference edge fluxes of every scheme (docs/SCHEMES.md), vectorised over edges.

Each scheme module exposes ``flux(Wi, Wj, Hi, Hj, normal, g=9.81, r=0.5,
eps_h=5e-3, return_flags=False) -> (F-, F+, ||D||_inf[, flags])`` taking (E, 6)
two-layer or (E, 3) one-layer states. :func:`get_flux` picks one by name.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..errors import ConfigError
from . import hll, ir_roe, pvm_ifcp, roe, wetdry

#: (scheme name, layers) -> the kernel that implements it, ``"module.function"``. The NumPy
#: reference (here), the Numba kernels (:mod:`fvswe.backends.cpu`) and the CUDA modules
#: (:mod:`fvswe.backends.gpu`) all follow this one table. Single-layer "pvm-ifcp" is HLL
#: (docs/SCHEMES.md §6).
KERNELS: dict[tuple[str, int], str] = {
    ("roe", 2): "roe.flux2",
    ("ir-roe", 2): "ir_roe.flux2",
    ("pvm-ifcp", 2): "pvm_ifcp.flux2",
    ("roe", 1): "roe.flux1",
    ("ir-roe", 1): "ir_roe.flux1",
    ("hll", 1): "hll.flux1",
    ("hll-wd", 1): "wetdry.flux1",
    ("pvm-ifcp", 1): "hll.flux1",
}


def kernel(name: str, layers: int) -> str:
    """The ``"module.function"`` of scheme ``name`` for ``layers``, or a one-line error."""
    try:
        return KERNELS[(name, layers)]
    except KeyError:
        names = sorted({n for n, lay in KERNELS if lay == layers})
        raise ConfigError(
            f"scheme: unknown {name!r} for {layers} layer(s) (choose from {', '.join(names)})"
        ) from None


def kernel_table(package) -> dict[tuple[str, int], Callable]:
    """:data:`KERNELS` resolved to the functions of ``package`` (this one, or a backend's)."""
    table = {}
    for key, ref in KERNELS.items():
        module, function = ref.split(".")
        table[key] = getattr(getattr(package, module), function)
    return table


#: (name, layers) -> reference flux.
FLUXES: dict[tuple[str, int], Callable] = kernel_table(sys.modules[__name__])


def get_flux(name: str, layers: int) -> Callable:
    """The reference flux of scheme ``name`` for ``layers`` (1 or 2) layers."""
    kernel(name, layers)
    return FLUXES[(name, layers)]


__all__ = [
    "FLUXES",
    "KERNELS",
    "get_flux",
    "hll",
    "ir_roe",
    "kernel",
    "kernel_table",
    "pvm_ifcp",
    "roe",
    "wetdry",
]
