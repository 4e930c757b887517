"""NumPy reference edge fluxes of every scheme (SCHEMES.md), vectorised over edges.

Each scheme module exposes ``flux(Wi, Wj, Hi, Hj, normal, g=9.81, r=0.5,
eps_h=5e-3, return_flags=False) -> (F-, F+, ||D||_inf[, flags])`` taking (E, 6)
two-layer or (E, 3) one-layer states. :func:`get_flux` picks one by name.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ConfigError
from . import hll, ir_roe, pvm_ifcp, roe, wetdry

#: (name, layers) -> reference flux. Single-layer "pvm-ifcp" is HLL (SCHEMES.md §6).
FLUXES: dict[tuple[str, int], Callable] = {
    ("roe", 2): roe.flux2,
    ("ir-roe", 2): ir_roe.flux2,
    ("pvm-ifcp", 2): pvm_ifcp.flux2,
    ("roe", 1): roe.flux1,
    ("ir-roe", 1): ir_roe.flux1,
    ("hll", 1): hll.flux1,
    ("hll-wd", 1): wetdry.flux1,
    ("pvm-ifcp", 1): hll.flux1,
}


def get_flux(name: str, layers: int) -> Callable:
    """The reference flux of scheme ``name`` for ``layers`` (1 or 2) layers."""
    try:
        return FLUXES[(name, layers)]
    except KeyError:
        names = sorted({n for n, lay in FLUXES if lay == layers})
        raise ConfigError(
            f"scheme: unknown {name!r} for {layers} layer(s) (choose from {', '.join(names)})"
        ) from None


__all__ = ["FLUXES", "get_flux", "hll", "ir_roe", "pvm_ifcp", "roe", "wetdry"]
