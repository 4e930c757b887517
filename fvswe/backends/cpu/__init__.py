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


def kernels_cached(dtype: str) -> bool | None:
    """Whether the edge and volume passes for states of ``dtype`` are compiled already.

    True when this process compiled them or Numba's on-disk cache (``cache=True``)
    holds them, so a run starts without compiling; None when Numba's cache
    cannot be inspected (its layout is not public API).
    """
    from . import pipeline

    try:
        for dispatcher, w in ((pipeline.edge_pass, 1), (pipeline.volume_pass, 0)):
            index = dispatcher._cache._cache_file._load_index()
            signatures = [*dispatcher.signatures, *(key[0] for key in index)]
            if not any(str(sig[w].dtype) == dtype for sig in signatures):
                return False
    except (AttributeError, IndexError, TypeError, OSError):
        return None
    return True
