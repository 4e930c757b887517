"""CPU backend (Numba). Per-edge scheme kernels live in one module per scheme.

Each kernel is ``flux(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h) -> (F-, F+, ||D||_inf, flag)``
on float tuples (6 for two layers, 3 for one), ``@njit(cache=True)``, callable
from other jitted code. Inputs may be float32 or float64; the kernels compute
and return float64 (callers cast on store). Flags: 1 non-hyperbolic, 2
near-coincident internal pair, 4 thin-layer fallback.
"""

from __future__ import annotations

import sys

from ...schemes import kernel, kernel_table
from . import hll, ir_roe, pvm_ifcp, roe, wetdry  # noqa: F401  (resolved by kernel_table)

#: (name, layers) -> Numba per-edge kernel, from :data:`fvswe.schemes.KERNELS`.
EDGE_FLUXES = kernel_table(sys.modules[__name__])


def get_edge_flux(name: str, layers: int):
    """The Numba per-edge kernel of scheme ``name`` for ``layers`` (1 or 2) layers."""
    kernel(name, layers)
    return EDGE_FLUXES[(name, layers)]
