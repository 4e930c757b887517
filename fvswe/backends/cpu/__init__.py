"""CPU backend (Numba). Per-edge scheme kernels live in one module per scheme.

Each kernel is ``flux(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h) -> (F-, F+, ||D||_inf, flag)``
on float tuples (6 for two layers, 3 for one), ``@njit(cache=True)``, callable
from other jitted code. Inputs may be float32 or float64; the kernels compute
and return float64 (callers cast on store). Flags: 1 non-hyperbolic, 2
near-coincident internal pair, 4 thin-layer fallback.
"""

from __future__ import annotations

from ...errors import ConfigError
from . import hll, ir_roe, pvm_ifcp, roe, wetdry

#: (name, layers) -> Numba per-edge kernel. Single-layer "pvm-ifcp" is HLL (SCHEMES.md §6).
EDGE_FLUXES = {
    ("roe", 2): roe.flux2,
    ("ir-roe", 2): ir_roe.flux2,
    ("pvm-ifcp", 2): pvm_ifcp.flux2,
    ("roe", 1): roe.flux1,
    ("ir-roe", 1): ir_roe.flux1,
    ("hll", 1): hll.flux1,
    ("hll-wd", 1): wetdry.flux1,
    ("pvm-ifcp", 1): hll.flux1,
}


def get_edge_flux(name: str, layers: int):
    """The Numba per-edge kernel of scheme ``name`` for ``layers`` (1 or 2) layers."""
    try:
        return EDGE_FLUXES[(name, layers)]
    except KeyError:
        names = sorted({n for n, lay in EDGE_FLUXES if lay == layers})
        raise ConfigError(
            f"scheme: unknown {name!r} for {layers} layer(s) (choose from {', '.join(names)})"
        ) from None
