"""The CPU's dispatch over the registries (:mod:`fvswe.registry`): chains of branches, generated.

One compiled edge pass per layer count serves its schemes, every boundary kind and
reconstruction: each is a run-time id that selects its physics through a chain of branches
built here from the registry entries (a branch the CPU predicts perfectly), which Numba
inlines into the passes. The layer count is the type of the scheme's id
(:class:`OneLayer`, :class:`TwoLayers`), so a one-layer run compiles no two-layer kernel and
the reverse. The GPU compiles the same choices in (``FVSWE_SCHEME``, the generated
``schemes.cuh`` and ``boundaries.cuh``). A new registry entry needs nothing here.
"""

from __future__ import annotations

from typing import NamedTuple

from numba import njit
from numba.extending import overload

from ... import physics, registry
from ...physics.common import symbol_name
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


def _scheme_chain(layers: int):
    """``edge_flux(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)``: the kernel of dispatch id
    ``scheme`` (:data:`fvswe.registry.KERNEL_IDS`) among those of ``layers`` layers, on
    6-tuples; the last takes any other id."""
    kernels = []
    for ref, kid in registry.KERNEL_IDS.items():
        if registry.KERNEL_LAYERS[ref] == layers:
            flux = physics.kernel(ref)
            kernels.append((kid, flux if layers == 2 else _on_six(flux)))
    (_, last), *rest = reversed(kernels)
    chain = _flux_branch(None, last, None)
    for kid, flux in rest:
        chain = _flux_branch(kid, flux, chain)
    top = chain.py_func
    top.__qualname__ = symbol_name(f"edge_flux_{layers}_layers")  # one name per layer count
    return njit(error_model="numpy")(top)


class OneLayer(NamedTuple):
    """A one-layer scheme's dispatch id: the edge pass of this type has the one-layer
    kernels only."""

    kid: int


class TwoLayers(NamedTuple):
    """A two-layer scheme's dispatch id: the edge pass of this type has the two-layer
    kernels only."""

    kid: int


def dispatch_id(kid: int, layers: int) -> OneLayer | TwoLayers:
    """Dispatch id ``kid`` typed by its layer count, as the edge pass takes it."""
    return OneLayer(kid) if layers == 1 else TwoLayers(kid)


#: Per layer count, its kernels' chain.
_CHAINS = {1: _scheme_chain(1), 2: _scheme_chain(2)}


def edge_flux(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """The scheme's per-edge flux on 6-tuples: F⁻, F⁺, ‖D‖∞, flags; ``scheme`` a
    :func:`dispatch_id`, whose type picks the chain of its layer count (:func:`_edge_flux`)."""


@overload(edge_flux, inline="always")
def _edge_flux(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    chain = _CHAINS[1 if scheme.instance_class is OneLayer else 2]

    def flux(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
        return chain(scheme.kid, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)

    return flux


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
