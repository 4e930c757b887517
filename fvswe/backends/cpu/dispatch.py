"""The CPU's dispatch over the registries (:mod:`fvswe.registry`): generated, not written.

The scheme is chosen when the edge pass compiles: a run hands the pass its kernel's
:class:`KernelToken`, whose Numba type (:class:`Kernel`, one per kernel id) selects the
flux (:func:`edge_flux`), so a run compiles (and Numba caches) its own scheme's pass only.
The boundary kinds and the reconstruction stay run-time ids that select their physics
through chains of branches built here from the registry entries (a branch the CPU
predicts perfectly), which Numba inlines into the passes. The GPU compiles the same
choices in (``FVSWE_SCHEME``, the generated ``schemes.cuh`` and ``boundaries.cuh``). A new
registry entry needs nothing here.
"""

from __future__ import annotations

import functools

from numba import njit, types
from numba.extending import NativeValue, models, overload, register_model, typeof_impl, unbox

from ... import registry
from ...registry import resolve

_inline = njit(inline="always", error_model="numpy")


class Kernel(types.Dummy):
    """The Numba type of a :class:`KernelToken`: kernel id ``kid``
    (:data:`fvswe.registry.KERNEL_IDS`), so each scheme's pass is a signature of its own."""

    def __init__(self, kid: int) -> None:
        self.kid = kid
        super().__init__(f"fvswe_kernel[{kid}]")


register_model(Kernel)(models.OpaqueModel)


class KernelToken:
    """The scheme argument of the edge pass: a value whose type carries the kernel id."""

    __slots__ = ("kid",)

    def __init__(self, kid: int) -> None:
        self.kid = kid


@typeof_impl.register(KernelToken)
def _typeof_token(token, context):
    return Kernel(token.kid)


@unbox(Kernel)
def _unbox_token(typ, obj, c):
    return NativeValue(c.context.get_dummy_value())  # nothing to carry: the type says it


@functools.cache
def kernel_token(kid: int) -> KernelToken:
    """The token of kernel id ``kid`` (one per id)."""
    return KernelToken(kid)


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


@functools.cache
def _on_tuples(kid: int):
    """The kernel of id ``kid`` on the 6-tuples of the passes."""
    ref = next(ref for ref, k in registry.KERNEL_IDS.items() if k == kid)
    flux = resolve("fvswe.physics", ref)
    return flux if registry.KERNEL_LAYERS[ref] == 2 else _on_six(flux)


def edge_flux(kernel, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """``edge_flux(kernel, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)``: the flux of the scheme
    whose :class:`KernelToken` is ``kernel``, on 6-tuples (F⁻, F⁺, ‖D‖∞, flags); chosen
    by the token's type when the pass compiles (:func:`_edge_flux_impl`)."""


@overload(edge_flux, inline="always")
def _edge_flux_impl(kernel, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    if not isinstance(kernel, Kernel):
        return None
    flux = _on_tuples(kernel.kid)
    return lambda kernel, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h: flux(
        Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h
    )


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
