"""The registries: schemes, boundary kinds and reconstructions; every other list derives from them.

A scheme is a name, one per-edge kernel per layer count it supports and a line of
help. A kernel ``"module.function"`` names the same function three times, by
convention: ``fvswe.schemes.<module>.<function>`` (NumPy reference),
``fvswe.physics.<module>.<function>`` (Numba, the one source of the CPU kernel) and
``<module>::<function>`` in the device code emitted from it (``physics.cuh``,
:func:`fvswe.backends.cuda_header.physics`); a kernel of :data:`BOUND` is instead a
physics function with its argument ``fixed`` bound, written nowhere as a function of its
own (its NumPy reference is still named). Each distinct kernel has one id
(:data:`KERNEL_IDS`), the CPU dispatch's and the GPU's ``FVSWE_SCHEME`` alike, so the
CPU dispatch (:mod:`fvswe.backends.cpu.pipeline`), the GPU compile options and
scheme header (:mod:`fvswe.backends.gpu`), the CLI's ``--scheme`` help, the case-file
schema and the tests' parametrisation all follow this table. Adding a scheme: its
physics file plus one :class:`Scheme` entry below; a NumPy reference module is optional
(without one the reference is the physics looped, :mod:`fvswe.schemes.looped`;
docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .errors import ConfigError


@dataclass(frozen=True)
class Scheme:
    """One scheme: ``kernels`` maps a layer count (1, 2) to its ``"module.function"``.

    ``dry``: it starts from and handles dry cells (hydrostatic reconstruction);
    the others refuse a dry one-layer start (:func:`refuse_dry_cells`).
    ``costly``: a flux expensive enough that the GPU's ``edge`` variant (each edge
    evaluated once) is its default on large meshes (:func:`fvswe.backends.gpu.default_variant`).
    ``upwind``: on a supercritical edge (every wave speed positive) the whole fluctuation
    goes downstream, ``F- = 0`` (Roe, IR-Roe, the PVM family; not Rusanov).
    ``thin_fallback``: the layer counts whose kernel falls back on a layer thinner than
    ``eps_h`` (or, two layers, a lower layer pierced by the bed step) and flags it
    ``FLAG_THIN`` (docs/SCHEMES.md §8, §13.1). ``unfixed``: per layer count,
    the kernel without the entropy fix of §3.6 (the run setting ``entropy_fix = false``) of
    a scheme that has one; its own kernel id, so the default kernel is compiled without a
    test of the setting. ``bound``: per layer count, the physics function
    ``"module.function"`` with a last argument ``fixed`` (the entropy fix) that this layer
    count's kernel (``fixed`` true) and its ``unfixed`` kernel (false) are; those two are
    then written nowhere as functions (:data:`BOUND`). The tests read these facts
    (tests/test_schemes.py) instead of naming schemes.
    """

    name: str
    kernels: dict[int, str]
    help: str
    dry: bool = False
    costly: bool = False
    upwind: bool = True
    thin_fallback: tuple[int, ...] = ()
    unfixed: dict[int, str] = field(default_factory=dict)
    bound: dict[int, str] = field(default_factory=dict)


#: Every scheme, in the order the CLI and the docs list them (docs/SCHEMES.md §3-§6).
SCHEMES: tuple[Scheme, ...] = (
    Scheme("roe", {2: "roe.flux2", 1: "roe.flux1"},
           "Roe, eigenvalues by EIG4 and the entropy fix (docs/SCHEMES.md §3)", costly=True,
           thin_fallback=(2, 1), unfixed={2: "roe.flux2_unfixed", 1: "roe.flux1_unfixed"},
           bound={2: "roe.roe2", 1: "roe.roe1"}),
    Scheme("ir-roe", {2: "ir_roe.flux2", 1: "ir_roe.flux1"},
           "rotational-invariance Roe: Roe normal to the edge, upwind tangent (§4)", costly=True,
           thin_fallback=(2, 1),
           unfixed={2: "ir_roe.flux2_unfixed", 1: "ir_roe.flux1_unfixed"},
           bound={2: "ir_roe.ir_roe2", 1: "ir_roe.ir_roe1"}),
    Scheme("pvm-ifcp", {2: "pvm_ifcp.flux2", 1: "hll.flux1"},
           "PVM-IFCP: polynomial viscosity, no eigenvectors (§5); one layer: HLL (§6)",
           thin_fallback=(2,)),
    Scheme("hll", {1: "hll.flux1"}, "one layer: HLL (§6)"),
    Scheme("rusanov", {1: "rusanov.flux1"}, "one layer: Rusanov, local Lax-Friedrichs (§6.1)",
           upwind=False),
    Scheme("hll-wd", {1: "wetdry.flux1"},
           "one layer: HLL, hydrostatic reconstruction, wetting and drying (§6)", dry=True),
)  # fmt: skip

BY_NAME: dict[str, Scheme] = {s.name: s for s in SCHEMES}

#: (scheme name, layers) -> ``"module.function"``.
KERNELS: dict[tuple[str, int], str] = {
    (s.name, layers): s.kernels[layers] for s in SCHEMES for layers in (2, 1) if layers in s.kernels
}

#: (scheme name, layers) -> ``"module.function"`` without the entropy fix (Roe, IR-Roe).
UNFIXED: dict[tuple[str, int], str] = {
    (s.name, layers): ref for s in SCHEMES for layers, ref in s.unfixed.items()
}

#: ``"module.function"`` -> the id of the compiled dispatch, CPU and GPU (0, 1, ...); the
#: kernels without the entropy fix come after all the defaults.
KERNEL_IDS: dict[str, int] = {
    ref: i for i, ref in enumerate(dict.fromkeys([*KERNELS.values(), *UNFIXED.values()]))
}
#: The kernels that are a physics function with its last argument, ``fixed``, bound
#: (:attr:`Scheme.bound`): ``"module.function"`` -> (the function's ``"module.function"``,
#: ``fixed``). The CPU binds it (:func:`fvswe.physics.kernel`), the CUDA emitter writes the
#: kernel's pointer adapter as a call of the function (:func:`fvswe.codegen.emit`).
BOUND: dict[str, tuple[str, bool]] = {
    ref: (function, fixed)
    for s in SCHEMES
    for layers, function in s.bound.items()
    for ref, fixed in ((s.kernels[layers], True), (s.unfixed[layers], False))
}
#: ``"module.function"`` -> the layer count of its states.
KERNEL_LAYERS: dict[str, int] = {
    ref: layers for (_, layers), ref in [*KERNELS.items(), *UNFIXED.items()]
}


def target(ref: str) -> tuple[str, tuple[bool, ...]]:
    """The physics function ``"module.function"`` that kernel ``ref`` is, and the constants
    bound after its arguments (``(fixed,)`` for a kernel of :data:`BOUND`, else none)."""
    if ref in BOUND:
        function, fixed = BOUND[ref]
        return function, (fixed,)
    return ref, ()


def names(layers: int | None = None) -> tuple[str, ...]:
    """The scheme names (for ``layers`` layers only when given), in :data:`SCHEMES` order."""
    return tuple(s.name for s in SCHEMES if layers is None or layers in s.kernels)


def describe() -> str:
    """One line listing the schemes by layer count, for the CLI and the case-file help."""
    one = [n for n in names(1) if n not in names(2)]
    return f"{', '.join(names(2))} (one layer: also {', '.join(one)})"


def help_lines() -> str:
    """``name  help`` per scheme, one a line (the CLI's epilog)."""
    width = max(len(s.name) for s in SCHEMES)
    return "\n".join(f"  {s.name:<{width}}  {s.help}" for s in SCHEMES)


def get(name: str) -> Scheme:
    """The :class:`Scheme` called ``name``, or a one-line error naming the choices."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise ConfigError(f"scheme: unknown {name!r} (choose from {', '.join(names())})") from None


def kernel(name: str, layers: int, entropy_fix: bool = True) -> str:
    """The ``"module.function"`` of scheme ``name`` for ``layers`` (without the entropy fix
    when ``entropy_fix`` is false), or a one-line error."""
    try:
        ref = KERNELS[(name, layers)]
    except KeyError:
        raise ConfigError(
            f"scheme: unknown {name!r} for {layers} layer(s) "
            f"(choose from {', '.join(names(layers))})"
        ) from None
    if entropy_fix:
        return ref
    if (name, layers) not in UNFIXED:
        fixed = sorted({n for n, _ in UNFIXED})
        raise ConfigError(f"entropy_fix: false, but scheme {name!r} has no entropy fix "
                          f"(only {', '.join(fixed)} have one)")  # fmt: skip
    return UNFIXED[(name, layers)]


def kernel_id(name: str, layers: int, entropy_fix: bool = True) -> int:
    """The dispatch id (CPU and GPU ``FVSWE_SCHEME``) of scheme ``name`` for ``layers``,
    with or without the entropy fix."""
    return KERNEL_IDS[kernel(name, layers, entropy_fix)]


def cases(layers: int | None = None) -> list[tuple[str, int]]:
    """Every ``(name, layers)`` a run may choose (with ``layers`` only when given): the
    tests' parametrisation, so that a new entry is tested everywhere."""
    return [key for key in KERNELS if layers is None or key[1] == layers]


def distinct_kernels(layers: int | None = None) -> list[tuple[str, int]]:
    """One ``(name, layers)`` per distinct kernel, named by the scheme with the fewest
    kernels among those sharing it (single-layer pvm-ifcp is ``("hll", 1)``)."""
    best: dict[str, tuple[str, int]] = {}
    for key in cases(layers):
        ref = KERNELS[key]
        if ref not in best or len(BY_NAME[key[0]].kernels) < len(BY_NAME[best[ref][0]].kernels):
            best[ref] = key
    return list(best.values())


@dataclass(frozen=True)
class Boundary:
    """One boundary kind (docs/SCHEMES.md §7): what its ghost state is and which tables it reads.

    ``ghost``: the ``"module.function"`` of :mod:`fvswe.physics` giving the ghost state, with
    the signature ``ghost(Wi, Hi, a, b, ex, ey, g, layers, eps_h)`` (``a``, ``b``: the edge's
    table values, its second table's in ``b``); None: the cell's own state. ``tables``: the
    edge reads a time series (:class:`fvswe.boundary.LevelTables`), and with ``layered`` a
    second one for two layers. ``fluctuation``: ``"module.function"`` replacing the edge's
    ``F-`` after the flux (``fluctuation(Fm, Wi, a, b, ex, ey, layers)``: imposed fluxes).
    ``real_ghost``: the GPU forms the ghost in the state's precision; the others in float64,
    as the CPU. ``midpoint``: its tables are read at the stage's quadrature time ``t + q dt``
    (:func:`fvswe.integrators.table_fractions`: Euler's step midpoint) rather than at the
    stage's time, so that the volume a series lets in converges at second order in Δt
    (a discharge, whose imposed mass flux is the table's value; docs/SCHEMES.md §7.5).
    ``bed``: its (first) table is the ghost's bed below the cell's, ``H_g - H_i`` (m), on
    which the ghost stands (a free outflow, §7.7); the others stand on the cell's bed.
    The CPU's and the GPU's dispatch over the kinds (:mod:`fvswe.backends.cpu.dispatch`,
    ``boundaries.cuh``) are generated from these entries; a kind's code is its place in
    :data:`BOUNDARIES` (0 is an interior edge).
    """

    name: str
    ghost: str | None
    help: str
    tables: bool = False
    layered: bool = False
    fluctuation: str | None = None
    real_ghost: bool = False
    midpoint: bool = False
    bed: bool = False


#: Every boundary kind, in the order of their codes 1, 2, ... (docs/SCHEMES.md §7).
BOUNDARIES: tuple[Boundary, ...] = (
    Boundary("wall", "ghosts.wall", "reflects the normal discharge (§7.1)", real_ghost=True),
    Boundary("open", None, "the cell's own state: waves pass, approximately (§7.2)"),
    Boundary("level", "ghosts.level", "imposed surface (and interface) level (§7.4)",
             tables=True, layered=True),
    Boundary("discharge", "ghosts.discharge", "imposed discharge per layer (§7.5)",
             tables=True, layered=True, fluctuation="ghosts.discharge_fluctuation",
             midpoint=True),
    Boundary("characteristic", "ghosts.characteristic",
             "non-reflecting far field at rest at a level (§7.6)", tables=True),
    Boundary("outflow", None,
             "free outflow: the cell's flow continued over its bed's slope (§7.7)", tables=True,
             bed=True),
)  # fmt: skip

#: Boundary kind name -> its code (``Layout.edge_bc``, the GPU's boundary codes).
BOUNDARY_CODES: dict[str, int] = {b.name: k + 1 for k, b in enumerate(BOUNDARIES)}
#: Every boundary kind (``FVSWE_KINDS`` of a module that may meet any of them).
ALL_KINDS = sum(1 << code for code in BOUNDARY_CODES.values())
#: Bit ``code`` set for the kinds whose edges read tables (with ``layered``: two for two layers).
TABLE_MASK = sum(1 << BOUNDARY_CODES[b.name] for b in BOUNDARIES if b.tables)
LAYERED_MASK = sum(1 << BOUNDARY_CODES[b.name] for b in BOUNDARIES if b.layered)
#: Bit ``code`` set for the kinds that read their tables at the stage's quadrature time.
MIDPOINT_MASK = sum(1 << BOUNDARY_CODES[b.name] for b in BOUNDARIES if b.midpoint)
#: Bit ``code`` set for the kinds whose ghost stands on a bed of its own (its first table).
BED_MASK = sum(1 << BOUNDARY_CODES[b.name] for b in BOUNDARIES if b.bed)


def boundary_cases(field: str) -> list[tuple[int, Boundary]]:
    """``(code, kind)`` of the kinds whose ``field`` (``ghost``, ``fluctuation``) is set."""
    return [(BOUNDARY_CODES[b.name], b) for b in BOUNDARIES if getattr(b, field)]


@dataclass(frozen=True)
class Reconstruction:
    """How an edge's two face states are formed from the cell states (docs/SCHEMES.md):
    ``order`` its order in space; ``faces`` the ``"module.function"`` of :mod:`fvswe.physics`,
    ``faces(Wi, Wj) -> (Wi, Wj)``, that both pipelines call in their one edge evaluation."""

    name: str
    order: int
    faces: str
    help: str


#: Every reconstruction; the first is the default. ``linear`` forms its face states in passes
#: of its own before the edge pass (``troubled_pass``, ``faces_pass``;
#: :mod:`fvswe.physics.reconstruction`), which then reads them as it reads cell states: its
#: ``faces`` leave them as they are.
RECONSTRUCTIONS: tuple[Reconstruction, ...] = (
    Reconstruction("constant", 1, "common.constant_faces",
                   "piecewise constant: the cell states themselves (first order)"),
    Reconstruction("linear", 2, "common.constant_faces",
                   "limited least-squares linear: surface, interface, bed and velocities "
                   "(second order; a multi-stage integrator; docs/SCHEMES.md §19)"),
)  # fmt: skip
RECONSTRUCTION_NAMES = tuple(r.name for r in RECONSTRUCTIONS)


def reconstruction(name: str, integrator) -> Reconstruction:
    """The reconstruction called ``name``, or a one-line error naming the choices; a
    second-order one with a one-stage ``integrator`` (:class:`fvswe.integrators.Integrator`)
    is refused: forward Euler would leave it first order in time and unstable."""
    found = {r.name: r for r in RECONSTRUCTIONS}.get(name)
    if found is None:
        raise ConfigError(f"reconstruction: unknown {name!r} "
                          f"(choose from {', '.join(RECONSTRUCTION_NAMES)})")  # fmt: skip
    if found.order > 1 and len(integrator.stages) < 2:
        raise ConfigError(f"reconstruction: {name!r} needs a multi-stage integrator "
                          f"(ssp-rk2 or ssp-rk3), not {integrator.name!r}")  # fmt: skip
    return found


def resolve(package: str, ref: str) -> Callable:
    """The function ``"module.function"`` of ``package``, importing its module."""
    module, function = ref.split(".")
    return getattr(importlib.import_module(f"{package}.{module}"), function)


def refuse_dry_cells(scheme: str, layers: int, h: np.ndarray, eps_h: float, source: str) -> None:
    """One-line ConfigError where a one-layer run of a scheme without wet/dry treatment
    (not :attr:`Scheme.dry`) starts with a cell thinner than ``eps_h``.

    Roe, IR-Roe and HLL (one-layer PVM-IFCP) have no wet/dry treatment: at a dry front
    their depths go negative and the clip of §8 creates mass. ``hll-wd`` (hydrostatic
    reconstruction) is the one-layer scheme for dry cells.
    """
    known = BY_NAME.get(scheme)
    if layers != 1 or (known is not None and known.dry):
        return
    dry = np.flatnonzero(~(h >= eps_h))
    if dry.size:
        raise ConfigError(
            f"initial h: cell {dry[0]} of {source} is dry or thinner than eps_h = {eps_h:g} "
            f"({dry.size} cells): one-layer {scheme!r} has no wet/dry treatment, "
            f"use scheme {' or '.join(repr(s.name) for s in SCHEMES if s.dry)}"
        )


def kinds_mask(edge_bc) -> int:
    """The boundary kinds among the codes ``edge_bc`` (one bit a kind, as the masks above)."""
    return sum(1 << int(code) for code in np.unique(np.asarray(edge_bc)))
