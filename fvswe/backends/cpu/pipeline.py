"""CPU backend (Numba): edge pass into per-cell slots, volume pass, min-Δt reduction.

One compiled edge pass and one volume pass serve every scheme and both layer
counts: the scheme is a run-time id (a branch the CPU predicts perfectly) and
states travel as 6-tuples (a single layer fills the first three), so the
compiled code is cached once per dtype instead of once per combination.
Parallel loops write disjoint slots or cells, so results do not depend on the
thread count.
"""

from __future__ import annotations

import functools
import importlib
import math
import zlib
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange
from numba.core.dispatcher import Dispatcher

from ... import physics, registry
from ...boundary import CHARACTERISTIC, DISCHARGE, INFLOW_KEYS, LEVEL, WALL
from ...errors import ConfigError
from ...forcing import WindTable
from ...physics import friction
from ...physics.common import inverse_depth, jit_inline, wall_ghost
from ...physics.forcing import force_layer, rotation, wind_stress
from ...physics.ghosts import (
    characteristic_ghost,
    discharge_fluctuation,
    discharge_ghost,
    level_ghost,
)
from ...registry import resolve
from ..base import EPS_U_RATIO, LAST_STEP_RTOL, LIMIT_MARGIN, LIMIT_SLACK
from ..layout import Layout
from . import default_threads

DT_MODES = ("lagged", "nonlagged", "fixed")
#: Cell chunks of the volume pass; fixed so partial results never depend on the thread count.
CHUNKS = 256


def scheme_id(name: str, layers: int) -> int:
    """The compiled dispatch id of a scheme (:data:`fvswe.registry.KERNEL_IDS`), or a
    one-line error naming the choices."""
    return registry.kernel_id(name, layers)


@njit(cache=True, inline="always", error_model="numpy")
def _load(W, i, nvar):
    """Cell i's state as a 6-tuple (one layer: the last three are zero)."""
    if nvar == 6:
        return (W[i, 0], W[i, 1], W[i, 2], W[i, 3], W[i, 4], W[i, 5])
    z = W[i, 0] * 0
    return (W[i, 0], W[i, 1], W[i, 2], z, z, z)


@njit(cache=True, inline="always", error_model="numpy")
def _ghost(Wi, Hi, bc, ex, ey, a, b, layers, g, eps_h):
    """Ghost state of a boundary edge (docs/SCHEMES.md §7): wall reflects q·η, open copies;
    level, discharge and characteristic edges read their table values ``a`` (and ``b``,
    the second table of a two-layer level or discharge) in :mod:`.ghosts`."""
    if bc == LEVEL:
        return level_ghost(Wi, Hi, a, b, layers, eps_h)
    if bc == DISCHARGE:
        return discharge_ghost(Wi, a, b, ex, ey, g, layers, eps_h)
    if bc == CHARACTERISTIC:
        return characteristic_ghost(Wi, Hi, a, ex, ey, g, layers, eps_h)
    if bc != WALL:
        return Wi
    return wall_ghost(Wi, ex, ey)


@njit(cache=True, inline="always", error_model="numpy")
def _pad(F):
    z = F[0] * 0
    return (F[0], F[1], F[2], z, z, z)


def _on_six(flux1):
    """A one-layer kernel on the 6-tuples of the passes (docs/SCHEMES.md §6)."""

    @njit(inline="always", error_model="numpy")
    def flux(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
        wi = (Wi[0], Wi[1], Wi[2])
        wj = (Wj[0], Wj[1], Wj[2])
        Fm, Fp, d, f = flux1(wi, wj, Hi, Hj, ex, ey, g, r, eps_h)
        return _pad(Fm), _pad(Fp), d, f

    return flux


def _dispatch():
    """``edge_flux(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)``: the kernel of dispatch id
    ``scheme`` on 6-tuples, built from :data:`fvswe.registry.KERNEL_IDS` as a chain
    of branches (one per kernel; the last one takes any other id) that Numba inlines."""
    kernels = []
    for ref, kid in registry.KERNEL_IDS.items():
        flux = resolve("fvswe.physics", ref)
        kernels.append((kid, flux if registry.KERNEL_LAYERS[ref] == 2 else _on_six(flux)))
    (_, last), *rest = reversed(kernels)
    chain = _branch(None, last, None)
    for kid, flux in rest:
        chain = _branch(kid, flux, chain)
    return njit(error_model="numpy")(chain.py_func)


def _branch(kid, flux, otherwise):
    """``flux`` for dispatch id ``kid``, else ``otherwise`` (``flux`` alone when None)."""

    @njit(inline="always", error_model="numpy")
    def edge_flux(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
        if otherwise is None or scheme == kid:
            return flux(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
        return otherwise(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)

    return edge_flux


#: Dispatch to the scheme's per-edge flux; returns 6-tuples F⁻, F⁺, ‖D‖∞, flags.
_edge_flux = _dispatch()
#: The physics modules' sources (fvswe/physics/*.py), which the cached passes inline.
PHYSICS_FILES = sorted(Path(physics.__file__).parent.glob("*.py"))


def _source_stamp() -> int:
    """A checksum of what the cached passes inline: the registry's ids and the physics."""
    stamp = zlib.crc32(repr(sorted(registry.KERNEL_IDS.items())).encode())
    for path in PHYSICS_FILES:
        stamp = zlib.crc32(path.read_bytes(), stamp)
    return stamp


_SOURCE_STAMP = _source_stamp()


@njit(cache=True)
def _compiled_stamp():
    """The source stamp of this module's cached machine code."""
    return _SOURCE_STAMP


@functools.cache
def _fresh_cache() -> None:
    """Drop Numba's cached passes and physics when they were compiled from other sources.

    The dispatch and the physics are inlined into the cached passes, and Numba's cache
    sees changes to a function's own file only: after an edit of the registry or of a
    physics module (a package upgrade, a kernel edit) it would load machine code of the old
    formulas. Checked once per process, before the first pass.
    """
    if _compiled_stamp() == _SOURCE_STAMP:
        return
    stale = [edge_pass, volume_pass, limiter_thetas, limited_update, _compiled_stamp]
    for path in PHYSICS_FILES:
        name = physics.__name__ if path.stem == "__init__" else f"{physics.__name__}.{path.stem}"
        module = importlib.import_module(name)
        stale += [f for f in vars(module).values() if isinstance(f, Dispatcher)]
    for dispatcher in stale:
        dispatcher._cache.flush()  # the next call compiles afresh and caches that


@njit(parallel=True, cache=True, error_model="numpy")
def edge_pass(
    scheme, W, H, edge_cells, normal, length, edge_slot, edge_bc, g, r, eps_h, acc, flags,
    edge_level, level_now, level_flux,
):  # fmt: skip
    """Every edge once: ``|Γ| F⁻`` and ``|Γ| ‖D‖`` into i's slot, ``|Γ| F⁺`` into j's.

    Edges with tables (level, discharge, characteristic) read ``level_now[edge_level[e]]``
    (and the next table for a two-layer level or discharge), a discharge edge imposes its
    mass fluxes (:func:`.ghosts.discharge_fluctuation`), and each records its outward mass
    flux per layer, ``|Γ| (F⁻_h + q_i·η)``, in ``level_flux[e]``.
    """
    nvar = W.shape[1]
    layers = nvar // 3
    for e in prange(edge_cells.shape[0]):
        i = edge_cells[e, 0]
        j = edge_cells[e, 1]
        ex = normal[e, 0]
        ey = normal[e, 1]
        Wi = _load(W, i, nvar)
        bc = edge_bc[e]
        a = 0.0
        b = 0.0
        if j >= 0:
            Wj = _load(W, j, nvar)
            Hj = H[j]
        else:
            if bc >= LEVEL:
                m = edge_level[e]
                a = level_now[m]
                if layers == 2 and bc != CHARACTERISTIC:
                    b = level_now[m + 1]
            Wj = _ghost(Wi, H[i], bc, ex, ey, a, b, layers, g, eps_h)
            Hj = H[i]
        Fm, Fp, dmax, flag = _edge_flux(scheme, Wi, Wj, H[i], Hj, ex, ey, g, r, eps_h)
        ln = length[e]
        if j < 0 and bc >= LEVEL:
            if bc == DISCHARGE:
                Fm = discharge_fluctuation(Fm, Wi, a, b, ex, ey, layers)
            level_flux[e, 0] = ln * (Fm[0] + (Wi[1] * ex + Wi[2] * ey))
            if layers == 2:
                level_flux[e, 1] = ln * (Fm[3] + (Wi[4] * ex + Wi[5] * ey))
        s = edge_slot[e, 0]
        for v in range(nvar):
            acc[s, v] = ln * Fm[v]
        acc[s, nvar] = ln * dmax
        if j >= 0:
            s = edge_slot[e, 1]
            for v in range(nvar):
                acc[s, v] = ln * Fp[v]
            acc[s, nvar] = ln * dmax
        flags[e] = flag


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
def wind_at(t, times, u, v, law, cd, ratio):
    """``tau / rho_w`` at time ``t`` of the wind table ``(times, u, v)``."""
    hi = times.shape[0] - 1
    return wind_stress(
        table_value(t, times, u, 0, hi), table_value(t, times, v, 0, hi), law, cd, ratio
    )


@njit(cache=True, error_model="numpy")
def level_values(t, offsets, times, values, out):
    """``out[k] = eta_k(t)``: table k linear between samples, end values held outside
    (:func:`table_value`)."""
    for k in range(out.shape[0]):
        out[k] = table_value(t, times, values, offsets[k], offsets[k + 1] - 1)


@njit(cache=True, inline="always", error_model="numpy")
def _friction(W, i, nvar, kind, friction_coef, interfacial, interfacial_coef, g, r, eps_h, dt):
    """Friction on updated cell i (docs/SCHEMES.md §14), in float64: two layers get the
    interfacial exchange (if ``interfacial``), then bottom friction on the lower layer
    (``kind`` 1 Chézy, 2 Manning, 0 none); one layer gets bottom friction. Coefficients
    are per cell; the per-cell functions are :mod:`fvswe.physics.friction`'s."""
    b = nvar - 3  # the layer on the bed
    if interfacial:
        q1x, q1y, q2x, q2y = friction.interfacial(
            float(W[i, 0]), float(W[i, 1]), float(W[i, 2]), float(W[i, 3]), float(W[i, 4]),
            float(W[i, 5]), interfacial_coef[i], r, eps_h, dt,
        )  # fmt: skip
        W[i, 1] = q1x
        W[i, 2] = q1y
        W[i, 4] = q2x
        W[i, 5] = q2y
    if kind != 0:
        qx, qy = friction.bottom(
            float(W[i, b]), float(W[i, b + 1]), float(W[i, b + 2]), kind, friction_coef[i], g, dt
        )
        W[i, b + 1] = qx
        W[i, b + 2] = qy


@jit_inline
def _wind(t, wind_times, wind_u, wind_v, wind_law, wind_cd, wind_ratio):
    """The wind's ``tau / rho_w = (ax, ay)`` at time ``t`` (docs/SCHEMES.md §15; 0 without)."""
    if wind_law == 0:
        return 0.0, 0.0
    return wind_at(t, wind_times, wind_u, wind_v, wind_law, wind_cd, wind_ratio)


@jit_inline
def _update_cell(
    W, Wn, i, acc, k, area, dt, depth_cols, eps_h, eps_u, forced, coriolis_f, ax, ay, wind_law,
    kind, friction_coef, interfacial, interfacial_coef, g, r,
):  # fmt: skip
    """Cell i's new state ``Wn[i]`` from its old one ``W[i]``: ``W_i - dt/|V_i| Σ_slots``
    (slots summed in local order), then the negative depths clipped to 0, the discharges of
    layers thinner than ``eps_u`` damped (``eps_h`` but in the limiter's cells), the forcing
    (if ``forced``: the wind ``(ax, ay)``, :func:`_wind`) and the friction
    (:func:`_friction`) as :func:`volume_pass` says. Returns (clipped layers, thin layers,
    m^3 the clip added)."""
    nvar = W.shape[1]
    s0 = i * k
    for v in range(nvar):
        total = acc[s0, v]
        for m in range(1, k):
            total += acc[s0 + m, v]
        Wn[i, v] = W[i, v] - dt / area[i] * total
    clipped = 0
    thin = 0
    added = 0.0
    for v in depth_cols:
        if Wn[i, v] < 0:
            added -= float(Wn[i, v]) * area[i]
            Wn[i, v] = 0
            clipped += 1
        elif Wn[i, v] < eps_h and Wn[i, v] > 0:
            thin += 1
        if Wn[i, v] < eps_u:
            damp = Wn[i, v] * inverse_depth(Wn[i, v], eps_u)
            Wn[i, v + 1] = Wn[i, v + 1] * damp
            Wn[i, v + 2] = Wn[i, v + 2] * damp
    if forced:
        cs, sn = 1.0, 0.0
        if coriolis_f.shape[0] > 0:
            cs, sn = rotation(coriolis_f[i], dt)
        for v in depth_cols:
            upper = wind_law != 0 and v == 0  # the wind drives layer 1
            qx, qy = Wn[i, v + 1], Wn[i, v + 2]
            qx, qy = force_layer(Wn[i, v], qx, qy, cs, sn, ax, ay, dt, eps_h, upper)
            Wn[i, v + 1] = qx
            Wn[i, v + 2] = qy
    if kind != 0 or interfacial:
        _friction(Wn, i, nvar, kind, friction_coef, interfacial, interfacial_coef, g, r, eps_h, dt)
    return clipped, thin, added


@jit_inline
def _candidate(W, i, acc, k, perimeter, area, dt):
    """Whether cell i may lose more of a layer than it holds in this step (docs/SCHEMES.md
    §13.4): ``dt (Σ_s |S_s[d]| + |q_i|_1 P_i) (1 + LIMIT_SLACK) > h_i |V_i|`` for a layer,
    a bound of ``dt out_i`` (``|q.n| <= |q|_1``), so every cell with ``theta < 1`` is one."""
    s0 = i * k
    b1 = abs(acc[s0, 0])
    b2 = abs(acc[s0, 3])
    for m in range(1, k):
        b1 += abs(acc[s0 + m, 0])
        b2 += abs(acc[s0 + m, 3])
    p = perimeter[i]
    b1 += (abs(W[i, 1]) + abs(W[i, 2])) * p
    b2 += (abs(W[i, 4]) + abs(W[i, 5])) * p
    widen = dt * (1.0 + LIMIT_SLACK)
    return widen * b1 > W[i, 0] * area[i] or widen * b2 > W[i, 3] * area[i]


@njit(parallel=True, cache=True, error_model="numpy")
def volume_pass(
    W, Wn, acc, area, perimeter, k, dt, cfl, depth_cols, update, eps_h, kind, friction_coef,
    interfacial, interfacial_coef, g, r, chunk_dt, chunk_counts, chunk_clip_mass, status, t,
    coriolis_f, wind_times, wind_u, wind_v, wind_law, wind_cd, wind_ratio,
):  # fmt: skip
    """``Wn_i = W_i - dt/|V_i| Σ_slots`` (slots summed in local order) and ``dt_i`` from the
    speeds.

    With ``update`` false only the local time steps are computed. Negative
    depths are clipped to 0 and counted, with the volume the clip adds
    (``-h |V_i|``, m^3) (docs/SCHEMES.md §8);
    layers left with ``0 < h < eps_h`` are counted as thin cells. The discharge of a
    layer thinner than ``eps_h`` is damped to ``h u`` with the desingularised
    ``u = q inverse_depth(h)`` (0 on a dry layer; a no-op from ``eps_h`` up), so
    a thinning layer cannot keep a discharge its depth cannot carry; then the forcing of
    docs/SCHEMES.md §15: the wind's ``tau / rho_w`` at time ``t`` (``wind_law`` > 0: the table
    ``wind_times, wind_u, wind_v``) on the upper layer where wet, and the rotation by the
    Coriolis parameter ``coriolis_f[i]`` (an empty array: none) of every layer; then the
    friction of :func:`_friction` (bottom law ``kind``, per-cell coefficients
    ``friction_coef``; two layers with ``interfacial``: ``interfacial_coef``). Per-chunk minima come
    back in ``chunk_dt``; ``chunk_counts[c]`` is (clipped layers, thin layers, candidates of
    the limiter) and ``chunk_clip_mass[c]`` the clipped volume; ``status[i]`` is 1 where cell
    i is a candidate of the limiter (two layers, :func:`_candidate`), plus 2 where it
    clipped a depth.
    """
    L = W.shape[0]
    nvar = W.shape[1]
    nchunks = chunk_dt.shape[0]
    ax, ay = _wind(t, wind_times, wind_u, wind_v, wind_law, wind_cd, wind_ratio)
    forced = wind_law != 0 or coriolis_f.shape[0] > 0
    for c in prange(nchunks):
        lo = c * L // nchunks
        hi = (c + 1) * L // nchunks
        dt_min = math.inf
        clipped = 0
        thin = 0
        candidates = 0
        added = 0.0
        for i in range(lo, hi):
            s0 = i * k
            speed = acc[s0, nvar]
            for m in range(1, k):
                speed += acc[s0 + m, nvar]
            if speed > 0:
                dt_min = min(dt_min, cfl * 2 * area[i] / speed)
            if update:
                flag = 0
                if nvar == 6 and _candidate(W, i, acc, k, perimeter, area, dt):
                    flag = 1
                    candidates += 1
                n_clip, n_thin, a = _update_cell(
                    W, Wn, i, acc, k, area, dt, depth_cols, eps_h, eps_h, forced, coriolis_f,
                    ax, ay, wind_law, kind, friction_coef, interfacial, interfacial_coef, g, r,
                )  # fmt: skip
                if n_clip:
                    flag |= 2
                    clipped += n_clip
                    added += a
                thin += n_thin
                status[i] = flag
        chunk_dt[c] = dt_min
        chunk_counts[c, 0] = clipped
        chunk_counts[c, 1] = thin
        chunk_counts[c, 2] = candidates
        chunk_clip_mass[c] = added


@jit_inline
def _mass_flux(W, i, m, d, acc, k, cell_edges, cell_side, edge_normal, edge_length):
    """Layer ``d``'s mass flux out of cell i through its slot m, ``Phi = S_s[d] + L_s q_i.n_s``
    (``n_s`` pointing out of i), and ``L_s q_i.n_s`` (docs/SCHEMES.md §13.4)."""
    e = cell_edges[i, m]
    ex = edge_normal[e, 0]
    ey = edge_normal[e, 1]
    if cell_side[i, m] == 1:
        ex = -ex
        ey = -ey
    qn = W[i, d + 1] * ex + W[i, d + 2] * ey
    lqn = edge_length[e] * qn
    return acc[i * k + m, d] + lqn, lqn


@jit_inline
def _theta(W, i, d, acc, k, area, cell_edges, cell_side, edge_normal, edge_length, dt, margin):
    """Layer ``d``'s outflow factor of cell i (docs/SCHEMES.md §13.4): 1 unless
    ``dt out_i > h_i |V_i|`` with ``out_i = Σ_s max(Phi_s, 0)`` (slot order), else
    ``h_i |V_i| / (dt out_i) (1 - margin)``."""
    out = 0.0
    for m in range(k):
        if cell_edges[i, m] >= 0:
            phi, _ = _mass_flux(W, i, m, d, acc, k, cell_edges, cell_side, edge_normal,
                                edge_length)  # fmt: skip
            if phi > 0:
                out += phi
    content = W[i, d] * area[i]
    need = dt * out
    if not need > content:
        return 1.0
    return content / need * (1.0 - margin)


@njit(parallel=True, cache=True, error_model="numpy")
def limiter_thetas(
    cells, W, acc, area, k, cell_edges, cell_side, edge_normal, edge_length, dt, margin, theta
):
    """``theta[i] = (theta_1, theta_2)`` (:func:`_theta`) of the ``cells`` (the candidates of
    :func:`volume_pass`); returns the number of cell-layers with ``theta < 1``."""
    limited = 0
    for c in prange(cells.shape[0]):
        i = cells[c]
        for layer in range(2):
            th = _theta(W, i, 3 * layer, acc, k, area, cell_edges, cell_side, edge_normal,
                        edge_length, dt, margin)  # fmt: skip
            theta[i, layer] = th
            if th < 1.0:
                limited += 1
    return limited


@jit_inline
def _limit_slots(
    W, i, acc, k, theta, cell_edges, cell_side, edge_cells, edge_normal, edge_length, edge_bc,
    level_flux, eps_h,
):  # fmt: skip
    """Cell i's slots with each layer's mass flux scaled by its donor's theta
    (docs/SCHEMES.md §13.4): ``S'_s[d] = theta Phi_s - L_s q_i.n_s``, the donor being i where
    ``Phi_s > 0``, else the neighbour (a ghost: theta = 1), and the advected momentum that
    no longer leaves kept by the donor, ``S'_s[d+c] = S_s[d+c] + ((theta - 1) Phi_s) u_c``
    with the donor's ``u = q inverse_depth(h)``; unchanged where ``theta == 1`` or
    ``Phi_s == 0``. A level, discharge or characteristic edge's recorded flux is scaled alike."""
    for layer in range(2):
        d = 3 * layer
        for m in range(k):
            e = cell_edges[i, m]
            if e < 0:
                continue
            phi, lqn = _mass_flux(W, i, m, d, acc, k, cell_edges, cell_side, edge_normal,
                                  edge_length)  # fmt: skip
            j = edge_cells[e, 1 - cell_side[i, m]]
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
            acc[s, d] = th * phi - lqn
            kept = (th - 1.0) * phi
            inv = inverse_depth(W[donor, d], eps_h)
            acc[s, d + 1] = acc[s, d + 1] + kept * (W[donor, d + 1] * inv)
            acc[s, d + 2] = acc[s, d + 2] + kept * (W[donor, d + 2] * inv)
            if j < 0 and edge_bc[e] >= LEVEL:
                level_flux[e, layer] = th * level_flux[e, layer]


@njit(cache=True, error_model="numpy")
def limited_update(
    cells, W, Wn, acc, theta, k, area, cell_edges, cell_side, edge_cells, edge_normal,
    edge_length, edge_bc, level_flux, dt, depth_cols, eps_h, eps_u, kind, friction_coef,
    interfacial, interfacial_coef, g, r, status, t, coriolis_f, wind_times, wind_u, wind_v,
    wind_law, wind_cd, wind_ratio,
):  # fmt: skip
    """The update of ``cells`` (those with a layer's ``theta < 1`` and their neighbours) again
    from the old state ``W``, with the limited slots of :func:`_limit_slots`
    (docs/SCHEMES.md §13.4) and the discharges of layers thinner than ``eps_u`` damped;
    returns the change of (clipped layers, thin layers, clipped m^3) from
    :func:`volume_pass`'s counts of these cells, and updates their clip flag (2) in
    ``status``."""
    ax, ay = _wind(t, wind_times, wind_u, wind_v, wind_law, wind_cd, wind_ratio)
    forced = wind_law != 0 or coriolis_f.shape[0] > 0
    clipped = 0
    thin = 0
    added = 0.0
    for i in cells:
        # volume_pass's result again (the same bits), for the counts it contributed
        c0, t0, a0 = _update_cell(
            W, Wn, i, acc, k, area, dt, depth_cols, eps_h, eps_h, forced, coriolis_f, ax, ay,
            wind_law, kind, friction_coef, interfacial, interfacial_coef, g, r,
        )  # fmt: skip
        _limit_slots(W, i, acc, k, theta, cell_edges, cell_side, edge_cells, edge_normal,
                     edge_length, edge_bc, level_flux, eps_h)  # fmt: skip
        c1, t1, a1 = _update_cell(
            W, Wn, i, acc, k, area, dt, depth_cols, eps_h, eps_u, forced, coriolis_f, ax, ay,
            wind_law, kind, friction_coef, interfacial, interfacial_coef, g, r,
        )  # fmt: skip
        clipped += c1 - c0
        thin += t1 - t0
        added += a1 - a0
        status[i] = (status[i] & 1) | (2 if c1 else 0)
    return clipped, thin, added


class CpuBackend:
    """The paper's pipeline on the CPU (a :class:`~fvswe.backends.base.Backend`)."""

    name = "cpu"
    #: Steps between two blow-up checks of Simulation.run (a check costs little here).
    check_every = 100

    def __init__(
        self,
        layout: Layout,
        scheme: str,
        cfl: float = 0.9,
        dt_mode: str = "lagged",
        dt_fixed: float | None = None,
        threads: int | None = None,
    ) -> None:
        if dt_mode not in DT_MODES:
            raise ConfigError(f"dt_mode: unknown {dt_mode!r} (choose from {', '.join(DT_MODES)})")
        if dt_mode == "fixed" and not (dt_fixed and dt_fixed > 0):
            raise ConfigError("dt: a fixed time step needs a positive dt")
        numba.set_num_threads(threads if threads is not None else default_threads())
        _fresh_cache()
        self.layout = layout
        self.model = layout.model
        self.scheme = scheme_id(scheme, self.model.layers)
        self.cfl = float(cfl)
        self.dt_mode = dt_mode
        self.dt_fixed = dt_fixed
        lay = layout
        self.W = lay.W0.copy()
        self._W_next = lay.W0.copy()  # the update writes here, then the two swap
        self.acc = np.zeros((lay.n_cells * lay.k, lay.nvar + 1), dtype=lay.dtype)
        self.flags = np.zeros(lay.n_edges, dtype=np.int32)
        self._chunk_dt = np.empty(CHUNKS, dtype=np.float64)
        self._chunk_counts = np.empty((CHUNKS, 3), dtype=np.int64)
        self._chunk_clip_mass = np.empty(CHUNKS, dtype=np.float64)
        #: Per cell, from the last update: 1 a candidate of the limiter, plus 2 clipped.
        self._status = np.zeros(lay.n_cells, dtype=np.uint8)
        #: The positivity limiter's theta per cell and layer (two layers; 1 but where a step
        #: limits), each cell's perimeter and the margin (docs/SCHEMES.md §13.4).
        self.theta = np.ones((lay.n_cells, 2)) if self.model.layers == 2 else None
        ce = lay.cell_edges
        self._perimeter = np.where(ce >= 0, lay.edge_length[np.maximum(ce, 0)], 0).sum(axis=1)
        self._margin = LIMIT_MARGIN[str(np.dtype(lay.dtype))]
        self._eps_u = EPS_U_RATIO[str(np.dtype(lay.dtype))] * self.model.eps_h
        #: The first step that clipped a depth ``(cell, step, t)`` (its smallest cell) and
        #: the first whose fixed Δt exceeded the stable one ``(cell, step, t, Courant
        #: number)``: its smallest cell with a Courant number > 1 and its largest one.
        self.first_clip = None
        self.courant_violation = None
        self._depth_cols = self.model.depth_components
        self.t = 0.0
        self.steps = 0
        self.dt = math.nan  # the lagged Δt waiting for the next step
        self._owned = lay.owned_cells  # cells updated here: all but a part's halo
        #: A distributed run's halo exchange (fvswe.parallel.Halo): ``exchange(W)`` after each
        #: update, ``min(dt)`` and the level edges' ``sum(flux)`` over all ranks. None on one
        #: device.
        self.halo = None
        self._acc_current = False  # whether acc holds the contributions of the current W
        self._counts = dict.fromkeys(
            ("clipped_cells", "nonhyperbolic_edges", "degenerate_edges", "thin_layer_edges",
             "thin_layer_cells", "limited"), 0,
        )  # fmt: skip
        self._counts["clipped_volume"] = 0.0  # m^3 the clipping of negative depths added
        off = np.zeros(1, dtype=np.float64)  # never indexed: friction off
        self._friction_coef = off if lay.friction_coef is None else lay.friction_coef
        self._interfacial_coef = off if lay.interfacial_coef is None else lay.interfacial_coef
        #: volume_pass's forcing arguments: f per cell (empty: none), the wind table (times,
        #: u, v), its drag law code (0: no wind), constant C_d, rho_air / rho_water.
        f = lay.coriolis if lay.coriolis is not None else np.zeros(0)
        wind = lay.wind or WindTable(*[np.zeros(1)] * 3, law=0, cd=0.0, ratio=0.0)
        self._forcing = (f, wind.times, wind.u, wind.v, wind.law, wind.cd, wind.ratio)
        lv = lay.levels
        self._levels = lv if lv is not None and lv.count else None
        if self._levels is not None:
            self._edge_level = lv.edge_level
            self._level_edges = np.flatnonzero(lv.edge_level >= 0)
            self._level_now = np.zeros(lv.count, dtype=np.float64)
            self._level_flux = np.zeros((lay.n_edges, 2), dtype=np.float64)
            # m^3 in through the edges with tables, per layer (float)
            for key in INFLOW_KEYS[: self.model.layers]:
                self._counts[key] = 0.0
        else:  # never indexed: no edge has a code with tables
            self._edge_level = np.full(1, -1, dtype=np.int32)
            self._level_now = np.zeros(1, dtype=np.float64)
            self._level_flux = np.zeros((1, 2), dtype=np.float64)

    @property
    def threads(self) -> int:
        return numba.get_num_threads()

    def cold_start_note(self) -> str | None:
        """Says so when the passes for this dtype are not compiled yet, nor in Numba's cache."""
        from . import kernels_cached  # looked up at call time: tests replace it

        if kernels_cached(str(np.dtype(self.layout.dtype))) is False:
            return "compiling the CPU kernels (once: later runs load them from Numba's cache) ..."
        return None

    def set_state(self, W: np.ndarray) -> None:
        self.W[...] = W
        self._acc_current = False
        self.dt = math.nan

    def get_state(self) -> np.ndarray:
        return self.W.copy()

    def layer_mass(self, area: np.ndarray) -> list[float]:
        """Volume of each layer, ``Σ area_i h_k,i`` in float64 (``area`` in cell order)."""
        return self.model.layer_volumes(self.W, area)

    def counters(self) -> dict[str, int | float]:
        """Event counts; with level, discharge or characteristic boundaries also
        ``level_inflow`` (and ``level_inflow2``, the lower of two layers), the volume (m^3)
        that entered through them, ``Σ_steps dt Σ_edges -|Γ| (F⁻_h + q_i·η)``; once a depth
        was clipped also ``clipped_volume``, the m^3 the clipping added (the GPU counts
        clips but does not measure them)."""
        out = dict(self._counts)
        if not out["clipped_cells"]:
            del out["clipped_volume"]
        return out

    def snapshot(self) -> dict:
        """Everything a bit-for-bit restart needs: state, time, steps, pending Δt, counters."""
        return {"W": self.get_state(), "t": self.t, "steps": self.steps, "dt": self.dt,
                "counters": self.counters()}  # fmt: skip

    def restore(self, snap: dict) -> None:
        """The inverse of :meth:`snapshot`."""
        self.set_state(snap["W"])
        self.t, self.steps, self.dt = float(snap["t"]), int(snap["steps"]), float(snap["dt"])
        self._counts.update(snap["counters"])

    def invalid(self) -> np.ndarray:
        """``(owned cells, nvar)`` mask: NaN/inf, or a negative depth."""
        W = self.W[: self._owned]
        bad = ~np.isfinite(W)
        for c in self._depth_cols:
            bad[:, c] |= W[:, c] < 0
        return bad

    def first_invalid(self) -> tuple[int, int] | None:
        """The first cell (and component) holding NaN/inf or a negative depth, else None."""
        bad = self.invalid()
        if not bad.any():
            return None
        i, c = np.argwhere(bad)[0]
        return int(i), int(c)

    def _edge_pass(self) -> None:
        lay, m = self.layout, self.model
        if self._levels is not None:  # the levels at the step's start time
            lv = self._levels
            level_values(self.t, lv.offsets, lv.times, lv.values, self._level_now)
        edge_pass(
            self.scheme, self.W, lay.H, lay.edge_cells, lay.edge_normal, lay.edge_length,
            lay.edge_slot, lay.edge_bc, m.g, m.r, m.eps_h, self.acc, self.flags,
            self._edge_level, self._level_now, self._level_flux,
        )  # fmt: skip
        self._acc_current = True
        flags = self.flags[: lay.owned_edges]  # a part counts the edges it owns
        if flags.any():
            for bit, key in ((1, "nonhyperbolic_edges"), (2, "degenerate_edges"),
                             (4, "thin_layer_edges")):  # fmt: skip
                self._counts[key] += int(np.count_nonzero(flags & bit))

    def _cell_update_args(self) -> tuple:
        """The arguments of a cell update after ``dt`` (:func:`_update_cell`): depth columns,
        ``eps_h``, friction."""
        lay, m = self.layout, self.model
        return (self._depth_cols, m.eps_h, lay.friction_kind, self._friction_coef,
                lay.interfacial_coef is not None, self._interfacial_coef, m.g, m.r)  # fmt: skip

    def _volume_pass(self, dt: float, update: bool) -> float:
        """Update W with ``dt`` (if ``update``; the positivity limiter included) and return
        the next CFL time step."""
        lay, n = self.layout, self._owned
        depth_cols, eps_h, *friction_args = self._cell_update_args()
        volume_pass(
            self.W[:n], self._W_next[:n], self.acc, lay.area, self._perimeter, lay.k, dt,
            self.cfl, depth_cols, update, eps_h, *friction_args, self._chunk_dt,
            self._chunk_counts, self._chunk_clip_mass, self._status, self.t, *self._forcing,
        )  # fmt: skip
        if update:
            self._acc_current = False
            counts = self._chunk_counts
            clipped = int(counts[:, 0].sum())
            thin = int(counts[:, 1].sum())
            added = float(self._chunk_clip_mass.sum())
            if self.theta is not None and self._any(int(counts[:, 2].sum()) > 0):
                more = self._limit(dt)
                clipped, thin, added = clipped + more[0], thin + more[1], added + more[2]
            self.W, self._W_next = self._W_next, self.W
            self._counts["clipped_cells"] += clipped
            self._counts["thin_layer_cells"] += thin
            if clipped:
                self._counts["clipped_volume"] += added
                if self.first_clip is None:
                    cell = int(np.flatnonzero(self._status[:n] & 2)[0])
                    self.first_clip = (cell, self.steps, self.t)
            if self._levels is not None:  # fixed order: reproducible
                for layer, key in enumerate(INFLOW_KEYS[: self.model.layers]):
                    flux = self._level_flux[self._level_edges, layer]
                    out = float(np.sum(flux)) if self.halo is None else self.halo.sum(flux)
                    self._counts[key] -= dt * out
            if self.halo is not None:
                self.halo.exchange(self.W)
        dt_next = float(self._chunk_dt.min())
        return dt_next if self.halo is None else self.halo.min(dt_next)

    def _any(self, flag: bool) -> bool:
        """``flag`` on some rank (on every rank alike)."""
        return flag if self.halo is None else self.halo.any(flag)

    def _limit(self, dt: float) -> tuple[int, int, float]:
        """The positivity limiter of docs/SCHEMES.md §13.4 after the update into ``_W_next``:
        theta of the candidates, the halo's theta from their owners, then the update of the
        cells with a layer's ``theta < 1`` and of their neighbours again, from the old state.
        Returns the change of (clipped layers, thin layers, clipped m^3) this brought."""
        lay, n, theta = self.layout, self._owned, self.theta
        cells = np.flatnonzero(self._status[:n] & 1)
        self._counts["limited"] += limiter_thetas(
            cells, self.W, self.acc, lay.area, lay.k, lay.cell_edges, lay.cell_side,
            lay.edge_normal, lay.edge_length, dt, self._margin, theta,
        )  # fmt: skip
        if self.halo is not None:
            self.halo.exchange_theta(theta)
        halo = np.flatnonzero((theta[n:] < 1).any(axis=1)) + n
        limited = np.concatenate((cells[(theta[cells] < 1).any(axis=1)], halo))
        if not limited.size:
            return 0, 0, 0.0
        edges = lay.cell_edges[limited]
        around = np.unique(lay.edge_cells[edges[edges >= 0]])
        around = around[(around >= 0) & (around < n)]
        depth_cols, eps_h, *friction_args = self._cell_update_args()
        more = limited_update(
            around, self.W, self._W_next, self.acc, theta, lay.k, lay.area, lay.cell_edges,
            lay.cell_side, lay.edge_cells, lay.edge_normal, lay.edge_length, lay.edge_bc,
            self._level_flux, dt, depth_cols, eps_h, self._eps_u, *friction_args, self._status,
            self.t, *self._forcing,
        )  # fmt: skip
        theta[limited] = 1.0
        return more

    def advance(self, t_end: float, max_steps: int) -> tuple[float, int]:
        """Whole steps until ``t == t_end`` (last step clipped) or ``max_steps`` steps."""
        done = 0
        while done < max_steps and self.t < t_end:
            if not self._acc_current:
                self._edge_pass()
            if self.dt_mode == "fixed":
                dt = self.dt_fixed
            elif self.dt_mode == "nonlagged" or math.isnan(self.dt):
                dt = self._volume_pass(0.0, update=False)  # the speeds of the current W
            else:
                dt = self.dt
            last = dt * (1 + LAST_STEP_RTOL) >= t_end - self.t
            if last:
                dt = t_end - self.t
            self.dt = self._volume_pass(dt, update=True)
            if self.dt_mode == "fixed":
                self._check_courant(dt)
            self.t = t_end if last else self.t + dt
            self.steps += 1
            done += 1
            if self.courant_violation is not None:
                break
        return self.t, done

    def _check_courant(self, dt: float) -> None:
        """Record the step if the fixed ``dt`` exceeds the stable step of the speeds it used:
        Courant number ``dt Σ|Γ| ‖D‖ / (2 |V_i|) > 1`` in some cell (docs/SCHEMES.md §2.4)."""
        lay = self.layout
        if not dt * self.cfl > self.dt or self.courant_violation is not None:
            return
        speed = self.acc[:, lay.nvar].astype(np.float64).reshape(lay.n_cells, lay.k).sum(axis=1)
        n = self._owned
        courant = dt * speed[:n] / (2.0 * lay.area[:n])
        # Under MPI every rank records the step (Δt is global), a cell only where it has one.
        over = np.flatnonzero(courant > 1.0)
        cell = int(over[0]) if over.size else -1
        self.courant_violation = (cell, self.steps, self.t, float(courant.max(initial=0.0)))
