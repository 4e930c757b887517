"""The physics, written once (docs/CODEGEN.md): edge fluxes, boundary ghosts, friction, forcing.

Scalar ``@jit`` functions on float tuples, one module per scheme plus ``common``, and
the per-edge ghosts (``ghosts``) and per-cell sources (``friction``, ``forcing``):
compiled with ``numba.njit`` for the CPU backend (:mod:`fvswe.backends.cpu`) and
translated by :mod:`fvswe.codegen` into the GPU's device functions. Each edge flux is
``flux(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h) -> (F-, F+, ||D||_inf, flag)``, mirroring
the NumPy reference :mod:`fvswe.schemes` operation for operation.
"""

from functools import cache

from . import (  # noqa: F401
    common,
    forcing,
    friction,
    ghosts,
    hll,
    ir_roe,
    limiter,
    maxima,
    pvm_ifcp,
    reconstruction,
    roe,
    slide,
    sources,
    sphere,
    update,
    wetdry,
)


@cache
def kernel(ref: str):
    """The Numba kernel ``"module.function"`` of :mod:`fvswe.registry`: the function itself, or
    for a kernel of :data:`~fvswe.registry.BOUND` its function with ``fixed`` bound."""
    from ..registry import resolve, target

    function, bound = target(ref)
    flux = resolve(__name__, function)
    return common.bound(flux, *bound) if bound else flux
