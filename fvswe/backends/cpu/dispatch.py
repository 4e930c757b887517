"""The CPU's dispatch over the registries (:mod:`fvswe.registry`): chains of branches, generated.

One compiled edge pass serves every scheme, boundary kind and reconstruction: each is a
run-time id that selects its physics through a chain of branches built here from the
registry entries (a branch the CPU predicts perfectly), which Numba inlines into the
passes. The GPU compiles the same choices in (``FVSWE_SCHEME``, the generated
``schemes.cuh`` and ``boundaries.cuh``). A new registry entry needs nothing here.
"""

from __future__ import annotations

from numba import njit

from ... import physics, registry
from ...registry import resolve

_inline = njit(inline="always", error_model="numpy")


@_inline
def _pad(F):
    z = F[0] * 0
    return (F[0], F[1], F[2], z, z, z)


def _on_six(flux1):
    """A one-layer kernel on the 6-tuples of the passes (docs/SCHEMES.md §6)."""

    @_inline
    def flux(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
        wi = (Wi[0], Wi[1], Wi[2])
        wj = (Wj[0], Wj[1], Wj[2])
        Fm, Fp, d, f = flux1(wi, wj, Hi, Hj, ex, ey, g, r, eps_h)
        return _pad(Fm), _pad(Fp), d, f

    return flux


def _flux_branch(kid, flux, otherwise):
    """``flux`` for dispatch id ``kid``, else ``otherwise`` (``flux`` alone when None)."""

    @_inline
    def edge_flux(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
        if otherwise is None or scheme == kid:
            return flux(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
        return otherwise(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)

    return edge_flux


def _scheme_chain():
    """``edge_flux(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)``: the kernel of dispatch id
    ``scheme`` (:data:`fvswe.registry.KERNEL_IDS`) on 6-tuples; the last takes any other id."""
    kernels = []
    for ref, kid in registry.KERNEL_IDS.items():
        flux = physics.kernel(ref)
        kernels.append((kid, flux if registry.KERNEL_LAYERS[ref] == 2 else _on_six(flux)))
    (_, last), *rest = reversed(kernels)
    chain = _flux_branch(None, last, None)
    for kid, flux in rest:
        chain = _flux_branch(kid, flux, chain)
    return njit(error_model="numpy")(chain.py_func)


@_inline
def _own_state(bc, Wi, Hi, a, b, ex, ey, g, layers, eps_h):
    return Wi


def _ghost_branch(code, ghost, otherwise):
    @_inline
    def ghost_of(bc, Wi, Hi, a, b, ex, ey, g, layers, eps_h):
        if bc == code:
            return ghost(Wi, Hi, a, b, ex, ey, g, layers, eps_h)
        return otherwise(bc, Wi, Hi, a, b, ex, ey, g, layers, eps_h)

    return ghost_of


def _ghost_chain():
    """``ghost_of(bc, Wi, Hi, a, b, ex, ey, g, layers, eps_h)``: the ghost state of boundary
    kind ``bc`` (:data:`fvswe.registry.BOUNDARIES`), the cell's own where a kind has none."""
    chain = _own_state
    for code, kind in reversed(registry.boundary_cases("ghost")):
        chain = _ghost_branch(code, resolve("fvswe.physics", kind.ghost), chain)
    return chain


@_inline
def _unchanged(bc, Fm, Wi, a, b, ex, ey, layers):
    return Fm


def _fluctuation_branch(code, fluctuation, otherwise):
    @_inline
    def impose(bc, Fm, Wi, a, b, ex, ey, layers):
        if bc == code:
            return fluctuation(Fm, Wi, a, b, ex, ey, layers)
        return otherwise(bc, Fm, Wi, a, b, ex, ey, layers)

    return impose


def _fluctuation_chain():
    """``impose(bc, Fm, Wi, a, b, ex, ey, layers)``: ``F-`` of a boundary edge of kind ``bc``
    after its kind's imposed fluxes (unchanged for the kinds without)."""
    chain = _unchanged
    for code, kind in reversed(registry.boundary_cases("fluctuation")):
        chain = _fluctuation_branch(code, resolve("fvswe.physics", kind.fluctuation), chain)
    return chain


#: The scheme's per-edge flux; returns 6-tuples F⁻, F⁺, ‖D‖∞, flags.
edge_flux = _scheme_chain()
#: The ghost state of a boundary edge, and its imposed fluxes.
ghost_of = _ghost_chain()
impose = _fluctuation_chain()
#: The one reconstruction there is so far (:data:`fvswe.registry.RECONSTRUCTIONS`).
faces = resolve("fvswe.physics", registry.RECONSTRUCTIONS[0].faces)


@_inline
def has_tables(bc):
    """Whether edges of boundary kind ``bc`` read tables (:data:`fvswe.registry.TABLE_MASK`)."""
    return (registry.TABLE_MASK >> bc) & 1 == 1


@_inline
def midpoint(bc):
    """Whether kind ``bc`` reads its tables at the stage's quadrature time
    (:data:`fvswe.registry.MIDPOINT_MASK`): row 1 of the edge pass's table values."""
    return (registry.MIDPOINT_MASK >> bc) & 1


@_inline
def ghost_bed(bc):
    """Whether the ghost of kind ``bc`` stands on the bed ``H_i + a`` (its first table,
    :data:`fvswe.registry.BED_MASK`) rather than on the cell's."""
    return (registry.BED_MASK >> bc) & 1 == 1


@_inline
def second_table(bc, layers):
    """Whether a boundary edge of kind ``bc`` reads a second table (two layers, ``layered``)."""
    return layers == 2 and (registry.LAYERED_MASK >> bc) & 1 == 1
