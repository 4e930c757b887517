"""The CPU's compiled passes (Numba): the edge pass into per-cell slots, the volume pass, the
positivity limiter and the stages' combination, over structured arguments.

Each kernel takes a few named tuples: :class:`Mesh` (the layout's arrays), the run's
:data:`fvswe.backends.controls.Controls` (the rows of the one table the GPU's ``struct Ctrl``
is generated from), :class:`Outputs` (what a pass writes besides the state) and
:class:`Stage` (the stage being taken). One compiled edge pass serves every scheme of a
layer count and every boundary kind (:mod:`.dispatch`: the type of the scheme's id picks
the layer count's kernels), one volume pass every layer count (states travel as 6-tuples),
so the machine code is cached once per dtype (the edge pass: and layer count). Parallel
loops write disjoint slots or cells, so results do not depend on the thread count. The
formulas are :mod:`fvswe.physics`'s; what is here is the memory traffic.
"""

from __future__ import annotations

import functools
import importlib
import math
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numba import njit, prange
from numba.core import types
from numba.core.dispatcher import Dispatcher
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from ... import physics, registry
from ...physics import friction, limiter, reconstruction
from ...physics.common import jit_inline
from ...physics.forcing import force_layer, rotation, wind_stress
from ...physics.sources import fed, segment_integral
from ...physics.sphere import metric_add, metric_f, metric_rates
from ...physics.update import (
    combine,
    compensated,
    compensated_combine,
    damped,
    increment,
    rate,
    remainder,
    stable_dt,
)
from . import dispatch
from .dispatch import (
    edge_flux,
    faces,
    ghost_bed,
    ghost_of,
    has_tables,
    impose,
    midpoint,
    second_table,
)

#: Cell chunks of the volume pass; fixed so partial results never depend on the thread count.
CHUNKS = 256
_kernel = njit(cache=True, error_model="numpy")
#: The loops a ``prange`` task calls (a chunk of edges or cells): compiled without reference
#: counting. The inlined helpers take the named tuples of arrays (``mesh``, ``ctrl``, ``out``),
#: and with counting each call increfs and decrefs every array in them, atomically on counters
#: all threads share: the passes then slowed down with every thread added. The arrays outlive
#: the pass (its caller holds them), and nothing here allocates.
_chunk = njit(cache=True, error_model="numpy", _nrt=False)
#: The ``prange`` passes without a reduction: without counting too, or each task's call of a
#: chunk would count every array of the tuples it passes, on the same shared counters.
_tasks = njit(parallel=True, cache=True, error_model="numpy", _nrt=False)
_parallel = njit(parallel=True, cache=True, error_model="numpy")


class Mesh(NamedTuple):
    """The layout's arrays the passes read (:class:`fvswe.backends.layout.Layout`), plus each
    slot's edge length and the first table of each edge (-1: none)."""

    H: np.ndarray
    area: np.ndarray
    edge_cells: np.ndarray
    edge_normal: np.ndarray
    edge_length: np.ndarray
    edge_slot: np.ndarray
    edge_bc: np.ndarray
    edge_level: np.ndarray
    cell_edges: np.ndarray
    cell_side: np.ndarray
    slot_length: np.ndarray


class Outputs(NamedTuple):
    """What the passes write besides the state: the slots (``acc``: ``|Γ| F`` and ``|Γ| ‖D‖``
    per slot), each edge's flags and outward mass flux per layer (edges with tables), the
    volume pass's per-chunk minimum Δt, counts (clipped layers, thin layers, limiter
    candidates) and clipped volume, and each cell's status (1 a candidate of the limiter,
    plus 2 clipped)."""

    acc: np.ndarray
    flags: np.ndarray
    level_flux: np.ndarray
    chunk_dt: np.ndarray
    chunk_counts: np.ndarray
    chunk_clip_mass: np.ndarray
    status: np.ndarray


class Stage(NamedTuple):
    """The stage being taken: its time (boundary tables, wind), the step's Δt, whether the
    volume pass updates (else it computes the speeds only), the scheme's dispatch id and the
    thin-layer depth below which the limiter's cells damp a layer's discharge."""

    t: float
    dt: float
    update: bool
    scheme: int
    eps_u: float


@jit_inline
def _load(W, i, nvar):
    """Cell i's state as a 6-tuple (one layer: the last three are zero)."""
    if nvar == 6:
        return (W[i, 0], W[i, 1], W[i, 2], W[i, 3], W[i, 4], W[i, 5])
    z = W[i, 0] * 0
    return (W[i, 0], W[i, 1], W[i, 2], z, z, z)


class Faces(NamedTuple):
    """The linear reconstruction's arrays (docs/SCHEMES.md §19; None in a piecewise-constant
    run, which compiles the edge pass without them: :func:`_edge_inputs`, :func:`_store`):
    the layout's per-slot weights ``lsq`` and face offsets ``offset`` ``(L, k, 2)``, and
    what :func:`troubled_pass` and :func:`faces_pass` write: each cell's ``troubled`` flag,
    each slot's face state ``W`` ``(L k, nvar)`` and bed ``H``, its cell-interior term
    ``interior`` (``|Γ|`` times it, float64), per chunk of cells how many fell back to first
    order and the range of the variables of its cells that are not troubled
    (``chunk_range``: 7 minima, 7 maxima), over all cells (``extent``, 14) and ``span``,
    each variable's range (the limiter's scale)."""

    lsq: np.ndarray
    offset: np.ndarray
    troubled: np.ndarray
    W: np.ndarray
    H: np.ndarray
    interior: np.ndarray
    chunk_first: np.ndarray
    chunk_range: np.ndarray
    extent: np.ndarray
    span: np.ndarray


@jit_inline
def _scaled(ln, F):
    """``|Γ| F`` of a 6-tuple."""
    return (ln * F[0], ln * F[1], ln * F[2], ln * F[3], ln * F[4], ln * F[5])


class Edge(NamedTuple):
    """What :func:`evaluate_edge` needs of an edge besides its cells' states: unit normal,
    length, boundary kind (0 interior), its tables' values ``a``, ``b`` (0 where none), and
    the model's ``g``, ``r``, ``eps_h`` and layer count. Scalars only: arrays handed to an
    inlined function cost reference counting on every edge (the layout's arrays passed in
    made the edge pass two to three times slower)."""

    ex: float
    ey: float
    ln: float
    bc: int
    a: float
    b: float
    g: float
    r: float
    eps_h: float
    layers: int


@jit_inline
def evaluate_edge(scheme, Wi, Wj, Hi, Hj, edge):
    """The one edge evaluation of the CPU: ``|Γ| F⁻``, ``|Γ| F⁺``, ``|Γ| ‖D‖``, the flags and
    the outward mass flux per layer ``|Γ| (F⁻_h + q_i·η)`` (0 but on boundary edges with
    tables) of an edge between cell state ``Wi`` (depth ``Hi``) and its neighbour's ``Wj``
    (``Hj``) or, on a boundary (``edge.bc`` > 0), the ghost of its kind, through the
    reconstruction and the scheme's flux; a boundary kind with tables imposes its fluxes
    (docs/SCHEMES.md §7)."""
    bc, ex, ey, layers = edge.bc, edge.ex, edge.ey, edge.layers
    if bc > 0:
        Wj = ghost_of(bc, Wi, Hi, edge.a, edge.b, ex, ey, edge.g, layers, edge.eps_h)
    Fi, Fj = faces(Wi, Wj)
    Fm, Fp, dmax, flag = edge_flux(scheme, Fi, Fj, Hi, Hj, ex, ey, edge.g, edge.r, edge.eps_h)
    ln = edge.ln
    out0 = 0.0
    out1 = 0.0
    if bc > 0 and has_tables(bc):
        Fm = impose(bc, Fm, Wi, edge.a, edge.b, ex, ey, layers)
        out0 = ln * (Fm[0] + (Wi[1] * ex + Wi[2] * ey))
        if layers == 2:
            out1 = ln * (Fm[3] + (Wi[4] * ex + Wi[5] * ey))
    return _scaled(ln, Fm), _scaled(ln, Fp), ln * dmax, flag, out0, out1


@_chunk
def _edge_range(scheme, W, mesh, ctrl, level_now, out, faces, lo, hi):
    """Edges ``lo .. hi-1``: each edge's cells (with ``faces``, their face states and beds
    of :func:`faces_pass`; on the boundary, its kind's tables from ``level_now``: row 0 at
    the stage's time, row 1 at a midpoint kind's) loaded, :func:`evaluate_edge`, ``|Γ| F⁻``
    and ``|Γ| ‖D‖`` stored into i's slot, ``|Γ| F⁺`` into j's (each plus its cell-interior
    term with ``faces``), the flags into ``out.flags``, a boundary edge's outward mass flux
    into ``out.level_flux``."""
    nvar = W.shape[1]
    layers = nvar // 3
    acc = out.acc
    src, bed, index = _edge_inputs(W, mesh, faces)
    for e in range(lo, hi):
        j = mesh.edge_cells[e, 1]
        si = index[e, 0]
        Wi = _load(src, si, nvar)
        Hi = bed[si]
        bc = 0
        a = 0.0
        b = 0.0
        if j >= 0:
            Wj = _load(src, index[e, 1], nvar)
            Hj = bed[index[e, 1]]
        else:
            bc = int(mesh.edge_bc[e])
            if has_tables(bc):
                row = midpoint(bc)
                a = level_now[row, mesh.edge_level[e]]
                if second_table(bc, layers):
                    b = level_now[row, mesh.edge_level[e] + 1]
            Wj = Wi
            Hj = Hi
            if ghost_bed(bc):  # rounded once to the state's precision, as the GPU
                Hj = _rounded_as(np.float64(bed[si]) + a, bed)
        edge = Edge(mesh.edge_normal[e, 0], mesh.edge_normal[e, 1], mesh.edge_length[e], bc, a,
                    b, ctrl.g, ctrl.r, ctrl.eps_h, layers)  # fmt: skip
        Fm, Fp, d, flag, out0, out1 = evaluate_edge(scheme, Wi, Wj, Hi, Hj, edge)
        _store(acc, mesh.edge_slot[e, 0], Fm, d, faces, nvar)
        if j >= 0:
            _store(acc, mesh.edge_slot[e, 1], Fp, d, faces, nvar)
        elif has_tables(bc):
            out.level_flux[e, 0] = out0
            if layers == 2:
                out.level_flux[e, 1] = out1
        out.flags[e] = flag


def _rounded_as(x, like):
    """``x`` rounded to the element type of the array ``like`` (:func:`_rounded_as_impl`)."""


@overload(_rounded_as, inline="always")
def _rounded_as_impl(x, like):
    real = as_dtype(like.dtype).type
    return lambda x, like: real(x)


def _edge_inputs(W, mesh, faces):
    """What the edge pass loads: the states, the beds and, per edge, the rows of its two
    sides (the cells' states; with ``faces``, their slots' face states). The choice is made
    by the type of ``faces`` when the pass compiles, so the piecewise-constant pass carries
    no branch of the linear one (:func:`_edge_inputs_impl`)."""


@overload(_edge_inputs, inline="always")
def _edge_inputs_impl(W, mesh, faces):
    if isinstance(faces, types.NoneType):
        return lambda W, mesh, faces: (W, mesh.H, mesh.edge_cells)
    return lambda W, mesh, faces: (faces.W, faces.H, mesh.edge_slot)


def _store(acc, s, F, d, faces, nvar):
    """Slot ``s`` of the edge pass: ``|Γ| F`` (plus the slot's cell-interior term with
    ``faces``) and ``|Γ| ‖D‖``; chosen by the type of ``faces`` (:func:`_store_impl`)."""


@overload(_store, inline="always")
def _store_impl(acc, s, F, d, faces, nvar):
    if isinstance(faces, types.NoneType):

        def plain(acc, s, F, d, faces, nvar):
            for v in range(nvar):
                acc[s, v] = F[v]
            acc[s, nvar] = d

        return plain

    def linear(acc, s, F, d, faces, nvar):
        for v in range(nvar):
            acc[s, v] = F[v] + faces.interior[s, v]
        acc[s, nvar] = d

    return linear


#: Edges a task of the edge pass takes: the parallel loop runs over chunks, each a call of
#: :func:`_edge_range` (inlined into the ``prange`` loop itself, :func:`evaluate_edge`
#: trips Numba's parfor array analysis).
EDGE_CHUNK = 1024


@_tasks
def edge_pass(scheme, W, mesh, ctrl, level_now, out, faces):
    """Every edge once, in chunks of :data:`EDGE_CHUNK` (:func:`_edge_range`); each edge
    writes only its own slots, so the result does not depend on the chunks or threads.
    ``scheme``: a :func:`~.dispatch.dispatch_id` (compiled per layer count)."""
    n = mesh.edge_cells.shape[0]
    for c in prange((n + EDGE_CHUNK - 1) // EDGE_CHUNK):
        _edge_range(scheme, W, mesh, ctrl, level_now, out, faces, c * EDGE_CHUNK,
                    min(n, (c + 1) * EDGE_CHUNK))  # fmt: skip


@jit_inline
def _neighbour(mesh, i, m):
    """The cell across slot m of cell i (-1: a boundary, or no edge in this layout)."""
    e = mesh.cell_edges[i, m]
    if e < 0:
        return -1
    return mesh.edge_cells[e, 1 - mesh.cell_side[i, m]]


@jit_inline
def _gradient(W, i, mesh, faces, layers):
    """Cell i's variables (:func:`fvswe.physics.reconstruction.variables`), their
    least-squares gradients and their neighbours' bounds (a ghost: the cell's own values);
    None for the gradients where the cell or a neighbour is troubled."""
    nvar, k = W.shape[1], mesh.cell_edges.shape[1]
    Vi = reconstruction.variables(_load(W, i, nvar), mesh.H[i], layers)
    gx = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    gy = gx
    lo, hi = Vi, Vi
    ok = faces.troubled[i] == 0
    for m in range(k):
        j = _neighbour(mesh, i, m)
        Vj = Vi
        if j >= 0:
            ok = ok and faces.troubled[j] == 0
            if ok:
                Vj = reconstruction.variables(_load(W, j, nvar), mesh.H[j], layers)
        if ok:
            gx, gy = reconstruction.lsq_sums(gx, gy, Vi, Vj, faces.lsq[i, m, 0],
                                             faces.lsq[i, m, 1])  # fmt: skip
            lo, hi = reconstruction.bounds(lo, hi, Vj)
    return ok, Vi, gx, gy, lo, hi


@jit_inline
def _reconstruct_cell(W, i, mesh, ctrl, faces, layers):
    """Cell i's face states, beds and cell-interior terms into its slots (its own state, no
    interior term, where it falls back to first order); returns 1 if it fell back."""
    nvar, k = W.shape[1], mesh.cell_edges.shape[1]
    ok, Vi, gx, gy, lo, hi = _gradient(W, i, mesh, faces, layers)
    phi = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    if ok:
        for m in range(k):
            phi = reconstruction.limited(phi, Vi, gx, gy, lo, hi, faces.offset[i, m, 0],
                                         faces.offset[i, m, 1], faces.span)  # fmt: skip
        for m in range(k):
            Wf, Hf = reconstruction.face_state(phi, Vi, gx, gy, faces.offset[i, m, 0],
                                               faces.offset[i, m, 1], layers)  # fmt: skip
            ok = ok and Wf[0] >= 0 and Wf[3] >= 0
            for v in range(nvar):
                faces.W[i * k + m, v] = Wf[v]
            faces.H[i * k + m] = Hf
    Wc = _load(W, i, nvar)
    for m in range(k):
        s = i * k + m
        if not ok:
            for v in range(nvar):
                faces.W[s, v] = W[i, v]
            faces.H[s] = mesh.H[i]
        e = mesh.cell_edges[i, m]
        if not ok or e < 0:
            for v in range(nvar):
                faces.interior[s, v] = 0.0
            continue
        ex, ey = mesh.edge_normal[e, 0], mesh.edge_normal[e, 1]
        if mesh.cell_side[i, m] == 1:
            ex, ey = -ex, -ey
        B = reconstruction.interior(Wc, _load(faces.W, s, nvar), mesh.H[i], faces.H[s], ex, ey,
                                    ctrl.g, ctrl.r, ctrl.eps_h)  # fmt: skip
        for v in range(nvar):
            faces.interior[s, v] = mesh.edge_length[e] * B[v]
    return 0 if ok else 1


@_chunk
def _troubled_range(W, mesh, ctrl, faces, c, lo, hi):
    """The troubled flags of cells ``lo .. hi-1``
    (:func:`fvswe.physics.reconstruction.troubled`) and the range of the others' variables
    into chunk ``c`` of ``faces.chunk_range``."""
    nvar = W.shape[1]
    layers = nvar // 3
    lo7 = (math.inf, math.inf, math.inf, math.inf, math.inf, math.inf, math.inf)
    hi7 = (-math.inf, -math.inf, -math.inf, -math.inf, -math.inf, -math.inf, -math.inf)
    for i in range(lo, hi):
        Wi = _load(W, i, nvar)
        bad = reconstruction.troubled(Wi, layers, ctrl.g, ctrl.r, ctrl.eps_h)
        faces.troubled[i] = 1 if bad else 0
        if not bad:
            lo7, hi7 = reconstruction.bounds(
                lo7, hi7, reconstruction.variables(Wi, mesh.H[i], layers)
            )
    for v in range(7):
        faces.chunk_range[c, v] = lo7[v]
        faces.chunk_range[c, 7 + v] = hi7[v]


@_chunk
def _reconstruct_range(W, mesh, ctrl, faces, lo, hi):
    """Cells ``lo .. hi-1`` reconstructed (:func:`_reconstruct_cell`); how many fell back."""
    n = 0
    for i in range(lo, hi):
        n += _reconstruct_cell(W, i, mesh, ctrl, faces, W.shape[1] // 3)
    return n


@_tasks
def troubled_pass(W, mesh, ctrl, faces):
    """The first half of the linear reconstruction (docs/SCHEMES.md §19): every cell's
    troubled flag (halo too) and ``faces.extent``, the smallest and largest value of each
    variable over the cells that are not troubled (a distributed run then reduces it over
    the ranks)."""
    L = W.shape[0]
    nchunks = faces.chunk_first.shape[0]
    for c in prange(nchunks):
        _troubled_range(W, mesh, ctrl, faces, c, c * L // nchunks, (c + 1) * L // nchunks)
    extent = faces.extent
    for v in range(7):
        lo, hi = math.inf, -math.inf
        for c in range(nchunks):
            lo = min(lo, faces.chunk_range[c, v])
            hi = max(hi, faces.chunk_range[c, 7 + v])
        extent[v] = lo
        extent[7 + v] = hi


@_tasks
def faces_pass(W, mesh, ctrl, faces, owned):
    """The second half: the ``owned`` cells' face states, beds and cell-interior terms into
    their own slots (a gather over their neighbours, one writer per slot), in chunks of
    cells (each a call, as in :func:`edge_pass`) that count the cells fallen back to first
    order (a distributed run receives its halo cells' face states from their owners)."""
    chunk_first = faces.chunk_first
    nchunks = chunk_first.shape[0]
    for v in range(7):
        faces.span[v] = max(faces.extent[7 + v] - faces.extent[v], 0.0)
    for c in prange(nchunks):
        chunk_first[c] = _reconstruct_range(W, mesh, ctrl, faces, c * owned // nchunks,
                                             (c + 1) * owned // nchunks)  # fmt: skip


@jit_inline
def table_value(t, times, values, lo, hi):
    """A piecewise-linear table's value at ``t``, samples ``lo..hi`` (inclusive), end
    values held outside: ``v[m] + (v[m+1] - v[m]) / (t[m+1] - t[m]) (t - t[m])`` with
    ``m`` the last sample at or before ``t`` (binary search). It walks arrays, so it is
    the pipeline's, written again in ``pipeline.cuh`` (docs/CODEGEN.md)."""
    if t <= times[lo]:
        return values[lo]
    if t >= times[hi]:
        return values[hi]
    while hi - lo > 1:  # invariant: times[lo] <= t < times[hi]
        mid = (lo + hi) // 2
        if times[mid] <= t:
            lo = mid
        else:
            hi = mid
    slope = (values[hi] - values[lo]) / (times[hi] - times[lo])
    return values[lo] + slope * (t - times[lo])


@jit_inline
def table_integral(times, values, lo, hi, a, b):
    """The integral over ``[a, b]`` of the piecewise-linear table of samples ``lo..hi`` (end
    values held outside, :func:`table_value`): exact, piece by piece
    (:func:`fvswe.physics.sources.segment_integral`). Walks arrays: written again in
    ``pipeline.cuh``."""
    m = lo  # the first sample after a
    if a >= times[lo]:
        top = hi + 1
        while top - m > 1:  # invariant: times[m] <= a < times[top] (top = hi + 1: none)
            mid = (m + top) // 2
            if times[mid] <= a:
                m = mid
            else:
                top = mid
        m += 1
    t0 = a
    v0 = table_value(a, times, values, lo, hi)
    total = 0.0
    while m <= hi and times[m] < b:
        total += segment_integral(t0, v0, times[m], values[m])
        t0 = times[m]
        v0 = values[m]
        m += 1
    return total + segment_integral(t0, v0, b, table_value(b, times, values, lo, hi))


@_kernel
def source_means(t, dt, ctrl, volumes):
    """Each source table's mean over ``[t, t + dt]`` into ``ctrl.source_mean``, and the step's
    volumes into ``volumes`` (sources in the upper, the lower layer; rain), in table order."""
    o = ctrl.source_offsets
    for k in range(ctrl.n_sources):
        integral = table_integral(ctrl.source_times, ctrl.source_values, o[k], o[k + 1] - 1,
                                  t, t + dt)  # fmt: skip
        ctrl.source_mean[k] = integral / dt
        slot = 2 if ctrl.source_kind[k] == 1 else ctrl.source_layer[k]
        volumes[slot] += ctrl.source_area[k] * integral


@jit_inline
def _feed(Wn, i, ctrl, dt):
    """Cell i's layers after the step's point sources and rain (docs/SCHEMES.md §16): each
    layer's depth rate the sum of its entries' weight times their table's mean."""
    r1 = 0.0
    r2 = 0.0
    for e in range(ctrl.source_start[i], ctrl.source_start[i + 1]):
        k = ctrl.source_table[e]
        if ctrl.source_layer[k] == 0:
            r1 += ctrl.source_weight[e] * ctrl.source_mean[k]
        else:
            r2 += ctrl.source_weight[e] * ctrl.source_mean[k]
    for v in range(0, Wn.shape[1], 3):
        h, qx, qy = fed(Wn[i, v], Wn[i, v + 1], Wn[i, v + 2], r1 if v == 0 else r2, dt)
        Wn[i, v] = h
        Wn[i, v + 1] = qx
        Wn[i, v + 2] = qy


@_kernel
def level_values(t, ctrl, out):
    """``out[k] = eta_k(t)``: table k linear between samples, end values held outside
    (:func:`table_value`)."""
    offsets = ctrl.level_offsets
    for k in range(out.shape[0]):
        out[k] = table_value(t, ctrl.level_times, ctrl.level_values, offsets[k],
                             offsets[k + 1] - 1)  # fmt: skip


@jit_inline
def _wind(t, ctrl):
    """The wind's ``tau / rho_w = (ax, ay)`` at time ``t`` (docs/SCHEMES.md §15; 0 without)."""
    if ctrl.n_wind == 0:
        return 0.0, 0.0
    times, hi = ctrl.wind_times, ctrl.wind_times.shape[0] - 1
    u = table_value(t, times, ctrl.wind_u, 0, hi)
    v = table_value(t, times, ctrl.wind_v, 0, hi)
    return wind_stress(u, v, ctrl.wind_law, ctrl.wind_cd, ctrl.wind_ratio)


@jit_inline
def _friction(W, i, ctrl, dt):
    """Friction on updated cell i (docs/SCHEMES.md §14), in float64: two layers get the
    interfacial exchange (where coefficients are given), then bottom friction on the lower
    layer (``ctrl.friction`` 1 Chézy, 2 Manning, 0 none); one layer gets bottom friction.
    The per-cell functions are :mod:`fvswe.physics.friction`'s."""
    b = W.shape[1] - 3  # the layer on the bed
    if ctrl.interfacial_coef.shape[0] > 0:
        q1x, q1y, q2x, q2y = friction.interfacial(
            float(W[i, 0]), float(W[i, 1]), float(W[i, 2]), float(W[i, 3]), float(W[i, 4]),
            float(W[i, 5]), ctrl.interfacial_coef[i], ctrl.r, ctrl.eps_h, dt,
        )  # fmt: skip
        W[i, 1] = q1x
        W[i, 2] = q1y
        W[i, 4] = q2x
        W[i, 5] = q2y
    if ctrl.friction != 0:
        coef = ctrl.friction_coef[i * ctrl.friction_stride]
        qx, qy = friction.bottom(
            float(W[i, b]), float(W[i, b + 1]), float(W[i, b + 2]), ctrl.friction, coef, ctrl.g, dt
        )
        W[i, b + 1] = qx
        W[i, b + 2] = qy


@jit_inline
def _force(Wn, i, ctrl, dt, ax, ay):
    """Wind ``(ax, ay)`` on the upper (or only) layer where wet, then every layer rotated by
    cell i's Coriolis parameter (docs/SCHEMES.md §15), on the sphere plus the layer's metric
    ``u tan(phi) / R`` (§20)."""
    cs, sn, f = 1.0, 0.0, 0.0
    if ctrl.coriolis_f.shape[0] > 0:
        f = ctrl.coriolis_f[i]
        cs, sn = rotation(f, dt)
    for v in range(0, Wn.shape[1], 3):
        if ctrl.sphere.shape[0] > 0:
            rate = metric_f(f, float(Wn[i, v]), float(Wn[i, v + 1]), ctrl.sphere[3 * i + 2],
                            float(ctrl.eps_h))  # fmt: skip
            cs, sn = rotation(rate, dt)
        upper = ctrl.n_wind != 0 and v == 0  # the wind drives layer 1
        qx, qy = force_layer(Wn[i, v], Wn[i, v + 1], Wn[i, v + 2], cs, sn, ax, ay, dt,
                             ctrl.eps_h, upper)  # fmt: skip
        Wn[i, v + 1] = qx
        Wn[i, v + 2] = qy


@jit_inline
def _metric(W, Wn, i, ctrl, dt):
    """Cell i on the sphere (docs/SCHEMES.md §20): ``Wn[i] += dt (-F_adv(W[i]) . G_i)`` per
    layer, the rates of the old state ``W[i]`` (:func:`fvswe.physics.sphere.metric_rates`)."""
    gx, gy = ctrl.sphere[3 * i], ctrl.sphere[3 * i + 1]
    for v in range(0, W.shape[1], 3):
        r = metric_rates(float(W[i, v]), float(W[i, v + 1]), float(W[i, v + 2]), gx, gy,
                         float(ctrl.eps_h))  # fmt: skip
        Wn[i, v] = metric_add(float(Wn[i, v]), dt, r[0])
        Wn[i, v + 1] = metric_add(float(Wn[i, v + 1]), dt, r[1])
        Wn[i, v + 2] = metric_add(float(Wn[i, v + 2]), dt, r[2])


def _increment(W, Wn, C, Cn, i, v, rdt, total):
    """``Wn[i, v] = W[i, v] - rdt total``; a depth (``v`` a multiple of 3) of a compensated
    state (``C``, ``Cn`` the old and new remainders per layer, docs/SCHEMES.md §2.7) in
    float64, the new remainder what the float32 depth could not hold; the discharges as
    without. ``C`` None (float64, or compensation off) compiles that out: the
    implementation is chosen by the arguments' types (:func:`_increment_impl`)."""


@overload(_increment, inline="always")
def _increment_impl(W, Wn, C, Cn, i, v, rdt, total):
    if isinstance(C, types.NoneType):

        def plain(W, Wn, C, Cn, i, v, rdt, total):
            Wn[i, v] = increment(W[i, v], rdt, total)

        return plain

    def kept(W, Wn, C, Cn, i, v, rdt, total):
        if v % 3 != 0:  # a discharge: no remainder
            Wn[i, v] = increment(W[i, v], rdt, total)
            return
        f64 = np.float64  # Numba's float() keeps a float32 a float32
        x = compensated(f64(W[i, v]), f64(C[i, v // 3]), f64(rdt), f64(total))
        Wn[i, v] = x
        Cn[i, v // 3] = remainder(x, f64(Wn[i, v]))

    return kept


def _drop(Cn, i, v):
    """A compensated state's depth remainder ``Cn[i, v // 3] = 0`` (a clipped depth ``v``,
    set outright); nothing without one (``Cn`` None)."""


@overload(_drop, inline="always")
def _drop_impl(Cn, i, v):
    if isinstance(Cn, types.NoneType):
        return lambda Cn, i, v: None

    def drop(Cn, i, v):
        Cn[i, v // 3] = 0

    return drop


def _combine(U, S, D, CU, CS, CD, i, v, a, b):
    """``D[i, v] = a U[i, v] + b S[i, v]`` (:func:`fvswe.physics.update.combine`); a depth of
    a compensated state (remainders per layer ``CU``, ``CS``, ``CD``, else None) in float64
    (:func:`~fvswe.physics.update.compensated_combine`), split into value and remainder; its
    discharges as without (the weights rounded to the state's type)."""


@overload(_combine, inline="always")
def _combine_impl(U, S, D, CU, CS, CD, i, v, a, b):
    if isinstance(CU, types.NoneType):

        def plain(U, S, D, CU, CS, CD, i, v, a, b):
            D[i, v] = combine(a, U[i, v], b, S[i, v])

        return plain

    real = as_dtype(U.dtype).type

    def kept(U, S, D, CU, CS, CD, i, v, a, b):
        if v % 3 != 0:  # a discharge: as a plain state's
            D[i, v] = combine(real(a), U[i, v], real(b), S[i, v])
            return
        f64, k = np.float64, v // 3  # Numba's float() keeps a float32 a float32
        x = compensated_combine(a, f64(U[i, v]), f64(CU[i, k]), b, f64(S[i, v]), f64(CS[i, k]))
        D[i, v] = x
        CD[i, k] = remainder(x, f64(D[i, v]))

    return kept


@jit_inline
def _update_cell(W, Wn, rests, i, mesh, ctrl, acc, stage, eps_u, wind):
    """Cell i's new state ``Wn[i]`` from its old one ``W[i]``: ``W_i - dt/|V_i| Σ_slots``
    (slots summed in local order; compensated where ``C`` is given: :func:`_increment`),
    the negative depths clipped to 0, the discharges of layers thinner than ``eps_u``
    damped (``eps_h`` but in the limiter's cells), a clipped depth's remainder dropped, the forcing
    (the wind ``(ax, ay)``) and the friction. Returns (clipped layers, thin layers, m^3 the
    clip added). ``rests = (C, Cn)``, ``wind = (ax, ay)``."""
    C, Cn = rests
    nvar, k = W.shape[1], mesh.cell_edges.shape[1]
    dt, s0 = stage.dt, i * k
    rdt = rate(dt, mesh.area[i])
    for v in range(nvar):
        total = acc[s0, v]
        for m in range(1, k):
            total += acc[s0 + m, v]
        _increment(W, Wn, C, Cn, i, v, rdt, total)
    if ctrl.sphere.shape[0] > 0:
        _metric(W, Wn, i, ctrl, dt)
    if ctrl.n_sources > 0:
        _feed(Wn, i, ctrl, dt)
    clipped = 0
    thin = 0
    added = 0.0
    for v in range(0, nvar, 3):
        if Wn[i, v] < 0:
            added -= float(Wn[i, v]) * mesh.area[i]
            Wn[i, v] = 0
            clipped += 1
            _drop(Cn, i, v)
        elif Wn[i, v] < ctrl.eps_h and Wn[i, v] > 0:
            thin += 1
        if Wn[i, v] < eps_u:
            qx, qy = damped(Wn[i, v], Wn[i, v + 1], Wn[i, v + 2], eps_u)
            Wn[i, v + 1] = qx
            Wn[i, v + 2] = qy
    if ctrl.n_wind != 0 or ctrl.coriolis_f.shape[0] > 0 or ctrl.sphere.shape[0] > 0:
        _force(Wn, i, ctrl, dt, wind[0], wind[1])
    if ctrl.friction != 0 or ctrl.interfacial_coef.shape[0] > 0:
        _friction(Wn, i, ctrl, dt)
    return clipped, thin, added


@jit_inline
def _candidate(W, i, mesh, acc, dt):
    """Whether cell i may lose more of a layer than it holds in this step (docs/SCHEMES.md
    §13.4): :func:`fvswe.physics.limiter.is_candidate` of the
    :func:`~fvswe.physics.limiter.outflow_bound` of its slots, summed in slot order as the
    GPU sums them, so every cell with ``theta < 1`` is one."""
    k = mesh.cell_edges.shape[1]
    s0, length = i * k, mesh.slot_length
    out1 = limiter.outflow_part(acc[s0, 0])
    out2 = limiter.outflow_part(acc[s0, 3])
    perimeter = length[i, 0]
    for m in range(1, k):
        out1 += limiter.outflow_part(acc[s0 + m, 0])
        out2 += limiter.outflow_part(acc[s0 + m, 3])
        perimeter += length[i, m]
    bound1 = limiter.outflow_bound(out1, perimeter, W[i, 1], W[i, 2])
    bound2 = limiter.outflow_bound(out2, perimeter, W[i, 4], W[i, 5])
    area = mesh.area[i]
    return limiter.is_candidate(bound1, W[i, 0], area, dt) or limiter.is_candidate(
        bound2, W[i, 3], area, dt
    )


@jit_inline
def _close_cell(W, Wn, rests, i, mesh, ctrl, acc, status, stage, wind):
    """Cell i's stable step (inf without speeds) and, when the stage updates, its update:
    ``(dt_i, candidate, clipped layers, thin layers, clipped m^3)``; its status is written."""
    nvar, k = W.shape[1], mesh.cell_edges.shape[1]
    speed = acc[i * k, nvar]
    for m in range(1, k):
        speed += acc[i * k + m, nvar]
    dt_i = math.inf
    if speed > 0:
        dt_i = stable_dt(ctrl.cfl * 2, mesh.area[i], speed)
    if not stage.update:
        return dt_i, 0, 0, 0, 0.0
    flag = 0
    if nvar == 6 and _candidate(W, i, mesh, acc, stage.dt):
        flag = 1
    n_clip, n_thin, added = _update_cell(W, Wn, rests, i, mesh, ctrl, acc, stage, ctrl.eps_h, wind)
    status[i] = flag | (2 if n_clip else 0)
    return dt_i, flag, n_clip, n_thin, added


@_chunk
def _volume_chunk(W, Wn, C, Cn, mesh, ctrl, out, stage, wind, c):
    """Chunk ``c`` of :func:`volume_pass`: its cells closed (:func:`_close_cell`), its
    minimum step and counts stored. A call of its own, not the ``prange`` loop's body: Numba's
    parfor passes then see a small loop, which halves the pass's cold compile."""
    L = W.shape[0]
    nchunks = out.chunk_dt.shape[0]
    dt_min = math.inf
    clipped = 0
    thin = 0
    candidates = 0
    added = 0.0
    for i in range(c * L // nchunks, (c + 1) * L // nchunks):
        dt_i, flag, n_clip, n_thin, a = _close_cell(
            W, Wn, (C, Cn), i, mesh, ctrl, out.acc, out.status, stage, wind
        )
        dt_min = min(dt_min, dt_i)
        candidates += flag
        clipped += n_clip
        thin += n_thin
        if n_clip:
            added += a
    out.chunk_dt[c] = dt_min
    out.chunk_counts[c, 0] = clipped
    out.chunk_counts[c, 1] = thin
    out.chunk_counts[c, 2] = candidates
    out.chunk_clip_mass[c] = added


@_tasks
def volume_pass(W, Wn, C, Cn, mesh, ctrl, out, stage):
    """Per owned cell (``W``, ``Wn``: the owned rows) its stable step ``2 cfl |V_i| / Σ |Γ| ‖D‖``
    into the chunk minima and, if ``stage.update``, ``Wn_i = W_i - dt/|V_i| Σ_slots`` with the
    clip of negative depths (counted, with the volume it adds; docs/SCHEMES.md §8), the
    damping of thin layers' discharges, the forcing at the stage's time (§15) and the
    friction (§14). The counts per chunk are (clipped layers, thin layers, candidates of the
    limiter: two layers, :func:`_candidate`). ``C``, ``Cn``: a compensated state's old and
    new remainders (docs/SCHEMES.md §2.7), else None."""
    wind = _wind(stage.t, ctrl)
    for c in prange(out.chunk_dt.shape[0]):  # int64: a bare prange index is uint64 in the
        _volume_chunk(W, Wn, C, Cn, mesh, ctrl, out, stage, wind, np.int64(c))  # loop's body


@jit_inline
def _mass_flux(W, i, m, d, mesh, acc):
    """Layer ``d``'s mass flux out of cell i through its slot m, ``Phi = S_s[d] + L_s q_i.n_s``
    (``n_s`` pointing out of i), and ``L_s q_i.n_s`` (docs/SCHEMES.md §13.4)."""
    e = mesh.cell_edges[i, m]
    ex = mesh.edge_normal[e, 0]
    ey = mesh.edge_normal[e, 1]
    if mesh.cell_side[i, m] == 1:
        ex = -ex
        ey = -ey
    k = mesh.cell_edges.shape[1]
    return limiter.mass_flux(acc[i * k + m, d], mesh.edge_length[e], W[i, d + 1], W[i, d + 2],
                             ex, ey)  # fmt: skip


@jit_inline
def _theta(W, i, d, mesh, acc, dt, margin):
    """Layer ``d``'s outflow factor of cell i (:func:`fvswe.physics.limiter.theta` of
    ``out_i = Σ_s max(Phi_s, 0)`` in slot order)."""
    out = 0.0
    for m in range(mesh.cell_edges.shape[1]):
        if mesh.cell_edges[i, m] >= 0:
            phi, _ = _mass_flux(W, i, m, d, mesh, acc)
            if phi > 0:
                out += phi
    return limiter.theta(W[i, d], mesh.area[i], dt, out, margin)


@_parallel
def limiter_thetas(cells, W, mesh, acc, dt, margin, theta):
    """``theta[i] = (theta_1, theta_2)`` (:func:`_theta`) of the ``cells`` (the candidates of
    :func:`volume_pass`); returns the number of cell-layers with ``theta < 1``."""
    limited = 0
    for c in prange(cells.shape[0]):
        i = cells[c]
        for layer in range(2):
            th = _theta(W, i, 3 * layer, mesh, acc, dt, margin)
            theta[i, layer] = th
            if th < 1.0:
                limited += 1
    return limited


@jit_inline
def _limit_slots(W, i, mesh, acc, theta, level_flux, eps_h):
    """Cell i's slots with each layer's mass flux scaled by its donor's theta
    (docs/SCHEMES.md §13.4; :func:`fvswe.physics.limiter.limited_mass` and
    :func:`~fvswe.physics.limiter.donor_momentum`), the donor being i where ``Phi_s > 0``,
    else the neighbour (a ghost: theta = 1); unchanged where ``theta == 1`` or ``Phi_s == 0``.
    A boundary edge's recorded flux is scaled alike."""
    k = mesh.cell_edges.shape[1]
    for layer in range(2):
        d = 3 * layer
        for m in range(k):
            e = mesh.cell_edges[i, m]
            if e < 0:
                continue
            phi, lqn = _mass_flux(W, i, m, d, mesh, acc)
            j = mesh.edge_cells[e, 1 - mesh.cell_side[i, m]]
            th = 1.0
            donor = i
            if phi > 0:
                th = theta[i, layer]
            elif j >= 0:
                th = theta[j, layer]
                donor = j
            if th == 1.0 or phi == 0:
                continue
            s = i * k + m
            acc[s, d] = limiter.limited_mass(th, phi, lqn)
            q1, q2 = limiter.donor_momentum(
                acc[s, d + 1], acc[s, d + 2], th, phi, W[donor, d], W[donor, d + 1],
                W[donor, d + 2], eps_h,
            )  # fmt: skip
            acc[s, d + 1] = q1
            acc[s, d + 2] = q2
            if j < 0 and has_tables(mesh.edge_bc[e]):
                level_flux[e, layer] = th * level_flux[e, layer]


@_chunk
def limited_update(cells, W, Wn, C, Cn, mesh, ctrl, out, theta, stage):
    """The update of ``cells`` (those with a layer's ``theta < 1`` and their neighbours) again
    from the old state ``W``, with the limited slots of :func:`_limit_slots`
    (docs/SCHEMES.md §13.4) and the discharges of layers thinner than ``stage.eps_u``
    damped; returns the change of (clipped layers, thin layers, clipped m^3) from
    :func:`volume_pass`'s counts of these cells, and updates their clip flag (2) in
    ``out.status``."""
    wind = _wind(stage.t, ctrl)
    clipped = 0
    thin = 0
    added = 0.0
    for i in cells:
        # volume_pass's result again (the same bits), for the counts it contributed
        c0, t0, a0 = _update_cell(W, Wn, (C, Cn), i, mesh, ctrl, out.acc, stage, ctrl.eps_h, wind)
        _limit_slots(W, i, mesh, out.acc, theta, out.level_flux, ctrl.eps_h)
        c1, t1, a1 = _update_cell(W, Wn, (C, Cn), i, mesh, ctrl, out.acc, stage, stage.eps_u, wind)
        clipped += c1 - c0
        thin += t1 - t0
        added += a1 - a0
        out.status[i] = (out.status[i] & 1) | (2 if c1 else 0)
    return clipped, thin, added


@_tasks
def combined(U, S, D, CU, CS, CD, a, b):
    """``D = a U + b S`` cell by cell (:func:`fvswe.physics.update.combine`; ``D`` may be ``U``
    or ``S``): a stage of a multi-stage integrator, ``a`` and ``b`` in the state's type. A
    compensated state (``CU``, ``CS``, ``CD`` the remainders, else None; docs/SCHEMES.md
    §2.7) is combined in float64 (:func:`~fvswe.physics.update.compensated_combine`, float64
    ``a`` and ``b``) and split into its float32 value and remainder."""
    for i in prange(U.shape[0]):
        for v in range(U.shape[1]):
            _combine(U, S, D, CU, CS, CD, i, v, a, b)


#: The physics modules' sources (fvswe/physics/*.py), which the cached passes inline.
PHYSICS_FILES = sorted(Path(physics.__file__).parent.glob("*.py"))


def _source_stamp() -> int:
    """A checksum of what the cached passes inline: the registries, the physics and the
    dispatch chains."""
    inlined = (sorted(registry.KERNEL_IDS.items()), sorted(registry.BOUND.items()),
               registry.BOUNDARIES, registry.RECONSTRUCTIONS)  # fmt: skip
    stamp = zlib.crc32(repr(inlined).encode())
    for path in (*PHYSICS_FILES, Path(dispatch.__file__)):
        stamp = zlib.crc32(path.read_bytes(), stamp)
    return stamp


_SOURCE_STAMP = _source_stamp()


@njit(cache=True)
def _compiled_stamp():
    """The source stamp of this module's cached machine code."""
    return _SOURCE_STAMP


#: The passes, cached with the physics and the dispatch inlined: every cached kernel here
#: (``_edge_range`` too, which ``edge_pass`` calls: unflushed, it kept an old dispatch).
PASSES = (edge_pass, _edge_range, troubled_pass, faces_pass, _troubled_range, _reconstruct_range,
          volume_pass, _volume_chunk, limiter_thetas, limited_update, combined,
          level_values, source_means)  # fmt: skip


@functools.cache
def fresh_cache() -> None:
    """Drop Numba's cached passes and physics when they were compiled from other sources.

    The dispatch and the physics are inlined into the cached passes, and Numba's cache
    sees changes to a function's own file only: after an edit of a registry or of a
    physics module (a package upgrade, a kernel edit) it would load machine code of the old
    formulas. Checked once per process, before the first pass.
    """
    if _compiled_stamp() == _SOURCE_STAMP:
        return
    stale = [*PASSES, _compiled_stamp]
    for path in PHYSICS_FILES:
        name = physics.__name__ if path.stem == "__init__" else f"{physics.__name__}.{path.stem}"
        module = importlib.import_module(name)
        stale += [f for f in vars(module).values() if isinstance(f, Dispatcher)]
    for dispatcher in stale:
        dispatcher._cache.flush()  # the next call compiles afresh and caches that
    # The stamp's machine code in this process is the old stamp's: compiled anew, the cache
    # holds the new one. Left flushed, the next process compiled it from the sources it then
    # saw and took passes compiled from the ones before for fresh (a second edit unseen).
    _compiled_stamp.recompile()
