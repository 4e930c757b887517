"""The reference of a kernel that has no NumPy module: its Numba physics looped over edges.

A new kernel may come as its physics file alone (docs/ARCHITECTURE.md "Adding a
scheme"): where ``fvswe/schemes/<module>.py`` does not exist,
:func:`fvswe.schemes.get_flux` returns :func:`looped` of ``fvswe.physics.<module>``. The
reference is then the physics itself, so its tests use independent oracles
(tests/test_rusanov.py) instead of a second implementation. Today's schemes keep their
hand-written NumPy references.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
from numba import njit
from numba.np.unsafe.ndarray import to_fixed_tuple

from .common import FLUX_RETURNS, as_inputs


@cache
def edge_loop(nvar: int) -> Callable:
    """A jitted loop calling a per-edge kernel on the ``nvar``-tuples of each edge (row)."""

    @njit(error_model="numpy")
    def loop(kernel, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, Fm, Fp, d, flags):
        for e in range(Hi.shape[0]):
            wi = to_fixed_tuple(Wi[e], nvar)
            wj = to_fixed_tuple(Wj[e], nvar)
            a, b, dm, f = kernel(wi, wj, Hi[e], Hj[e], ex[e], ey[e], g, r, eps_h)
            for k in range(nvar):
                Fm[e, k] = a[k]
                Fp[e, k] = b[k]
            d[e] = dm
            flags[e] = f

    return loop


def looped(kernel: Callable, layers: int) -> Callable:
    """The vectorised flux ``(Wi, Wj, Hi, Hj, normal, g, r, eps_h, return_flags)`` of the
    Numba per-edge ``kernel`` on ``layers``-layer states, as the NumPy references take it."""
    nvar = 3 * layers

    def flux(
        Wi, Wj, Hi, Hj, normal, g: float = 9.81, r: float = 0.5, eps_h: float = 5e-3,
        return_flags: bool = False,
    ) -> tuple[np.ndarray, ...]:  # fmt: skip
        Wi, Wj, Hi, Hj, ex, ey = as_inputs(Wi, Wj, Hi, Hj, normal, nvar)
        E = Wi.shape[0]
        Fm, Fp, d = np.empty((E, nvar)), np.empty((E, nvar)), np.empty(E)
        flags = np.empty(E, dtype=np.int32)
        loop = edge_loop(nvar)
        loop(kernel, Wi, Wj, Hi, Hj, ex, ey, float(g), float(r), float(eps_h), Fm, Fp, d, flags)
        return (Fm, Fp, d, flags) if return_flags else (Fm, Fp, d)

    name = kernel.py_func.__module__.rsplit(".", 1)[-1]
    flux.__doc__ = f"{name} (the Numba physics looped over edges). {FLUX_RETURNS}"
    return flux
