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

import numba
import numpy as np
from numba import njit, prange

from ...boundary import LEVEL, WALL
from ...errors import ConfigError
from ...schemes import registry
from ..base import LAST_STEP_RTOL
from ..layout import Layout
from . import default_threads
from .common import inverse_depth, wall_ghost

DT_MODES = ("lagged", "nonlagged", "fixed")
#: Cell chunks of the volume pass; fixed so partial results never depend on the thread count.
CHUNKS = 256


def scheme_id(name: str, layers: int) -> int:
    """The compiled dispatch id of a scheme (:data:`fvswe.schemes.registry.KERNEL_IDS`), or a
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
def _ghost(Wi, Hi, bc, ex, ey, level, eps_h):
    """Ghost state of a boundary edge (docs/SCHEMES.md §7): wall reflects q·η, open copies.

    A level edge (one layer) sees ``h_g = max(level + H_i, 0)`` moving with the
    inner cell's (desingularised) velocity, which is 0 when the cell is dry.
    """
    if bc == LEVEL:
        hg = max(level + Hi, 0.0)
        k = inverse_depth(Wi[0], eps_h)
        z = hg * 0
        return (hg, hg * (Wi[1] * k), hg * (Wi[2] * k), z, z, z)
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
    ``scheme`` on 6-tuples, built from :data:`fvswe.schemes.registry.KERNEL_IDS` as a chain
    of branches (one per kernel; the last one takes any other id) that Numba inlines."""
    kernels = []
    for ref, kid in registry.KERNEL_IDS.items():
        module, function = ref.split(".")
        flux = getattr(importlib.import_module(f"{__package__}.{module}"), function)
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
#: The kernel table the dispatch was built from, as one number (see :func:`_fresh_cache`).
_REGISTRY_STAMP = zlib.crc32(repr(sorted(registry.KERNEL_IDS.items())).encode())


@njit(cache=True)
def _compiled_stamp():
    """The registry stamp of this module's cached machine code."""
    return _REGISTRY_STAMP


@functools.cache
def _fresh_cache() -> None:
    """Drop Numba's cached edge pass when it was compiled against another registry.

    The dispatch is inlined into the cached edge pass, and Numba's cache sees changes
    to this file only: after an edit of the registry it would load a pass that maps
    the ids the old way. Checked once per process, before the first edge pass.
    """
    if _compiled_stamp() != _REGISTRY_STAMP:
        for dispatcher in (edge_pass, _compiled_stamp):
            dispatcher._cache.flush()  # the next call compiles afresh and caches that


@njit(parallel=True, cache=True, error_model="numpy")
def edge_pass(
    scheme, W, H, edge_cells, normal, length, edge_slot, edge_bc, g, r, eps_h, acc, flags,
    edge_level, level_now, level_flux,
):  # fmt: skip
    """Every edge once: ``|Γ| F⁻`` and ``|Γ| ‖D‖`` into i's slot, ``|Γ| F⁺`` into j's.

    Level edges take their level from ``level_now[edge_level[e]]`` and record
    the mass flux through them, ``|Γ| (F⁻_h + q_i·η)`` (outward), in ``level_flux[e]``.
    """
    nvar = W.shape[1]
    for e in prange(edge_cells.shape[0]):
        i = edge_cells[e, 0]
        j = edge_cells[e, 1]
        ex = normal[e, 0]
        ey = normal[e, 1]
        Wi = _load(W, i, nvar)
        if j >= 0:
            Wj = _load(W, j, nvar)
            Hj = H[j]
        else:
            level = level_now[edge_level[e]] if edge_bc[e] == LEVEL else 0.0
            Wj = _ghost(Wi, H[i], edge_bc[e], ex, ey, level, eps_h)
            Hj = H[i]
        Fm, Fp, dmax, flag = _edge_flux(scheme, Wi, Wj, H[i], Hj, ex, ey, g, r, eps_h)
        ln = length[e]
        if j < 0 and edge_bc[e] == LEVEL:
            level_flux[e] = ln * (Fm[0] + (Wi[1] * ex + Wi[2] * ey))
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


@njit(cache=True, error_model="numpy")
def level_values(t, offsets, times, values, out):
    """``out[k] = eta_k(t)``: table k linear between samples, end values held outside.

    ``m`` is the last sample with ``times[m] <= t`` (binary search); the value
    is ``v[m] + (v[m+1] - v[m]) / (t[m+1] - t[m]) * (t - t[m])``.
    """
    for k in range(out.shape[0]):
        lo = offsets[k]
        hi = offsets[k + 1] - 1
        if t <= times[lo]:
            out[k] = values[lo]
        elif t >= times[hi]:
            out[k] = values[hi]
        else:
            while hi - lo > 1:  # invariant: times[lo] <= t < times[hi]
                mid = (lo + hi) // 2
                if times[mid] <= t:
                    lo = mid
                else:
                    hi = mid
            slope = (values[hi] - values[lo]) / (times[hi] - times[lo])
            out[k] = values[lo] + slope * (t - times[lo])


@njit(cache=True, inline="always", error_model="numpy")
def _friction(W, i, kind, coef, g, dt):
    """Semi-implicit bottom friction on one-layer cell i, after its update.

    ``q <- q / (1 + dt g |u| / (C^2 h))`` (Chézy, kind 1, ``coef = C``) or
    ``q <- q / (1 + dt g n^2 |u| / h^(4/3))`` (Manning, kind 2, ``coef = n``),
    ``|u| = |q| / h`` from the updated state. The divisor is >= 1, so friction
    only slows the flow and never reverses it. A dry cell (``h == 0``) gets
    ``q = 0``: the limit of the divisor as ``h -> 0``.
    """
    h = W[i, 0]
    if not h > 0:
        W[i, 1] = 0
        W[i, 2] = 0
        return
    speed = math.sqrt(W[i, 1] * W[i, 1] + W[i, 2] * W[i, 2])
    if speed == 0:
        return
    if kind == 1:
        num = dt * g * (speed / h)
        den = coef * coef * h
    else:
        num = dt * g * coef * coef * (speed / h)
        den = h ** (4.0 / 3.0)
    factor = 1.0 + num / den if den > 0 else math.inf  # h^(4/3) may underflow: q -> 0
    W[i, 1] = W[i, 1] / factor
    W[i, 2] = W[i, 2] / factor


@njit(parallel=True, cache=True, error_model="numpy")
def volume_pass(
    W, acc, area, k, dt, cfl, depth_cols, update, eps_h, friction, coef, g, chunk_dt, chunk_counts,
    chunk_clip_mass,
):  # fmt: skip
    """``W_i -= dt/|V_i| Σ_slots`` (slots summed in local order) and ``dt_i`` from the speeds.

    With ``update`` false only the local time steps are computed. Negative
    depths are clipped to 0 and counted, with the volume the clip adds
    (``-h |V_i|``, m^3) and the chunk's first clipped cell (docs/SCHEMES.md §8);
    layers left with ``0 < h < eps_h`` are counted as thin cells. The discharge of a
    layer thinner than ``eps_h`` is damped to ``h u`` with the desingularised
    ``u = q inverse_depth(h)`` (0 on a dry layer; a no-op from ``eps_h`` up), so
    a thinning layer cannot keep a discharge its depth cannot carry; then, for one layer
    with ``friction`` (1 Chézy, 2 Manning, coefficient ``coef``), the momentum
    gets the semi-implicit friction of :func:`_friction`. Per-chunk minima come
    back in ``chunk_dt``; ``chunk_counts[c]`` is (clipped layers, thin layers, first
    clipped cell or -1) and ``chunk_clip_mass[c]`` the clipped volume.
    """
    L = W.shape[0]
    nvar = W.shape[1]
    nchunks = chunk_dt.shape[0]
    for c in prange(nchunks):
        lo = c * L // nchunks
        hi = (c + 1) * L // nchunks
        dt_min = math.inf
        clipped = 0
        thin = 0
        first = -1
        added = 0.0
        for i in range(lo, hi):
            s0 = i * k
            speed = acc[s0, nvar]
            for m in range(1, k):
                speed += acc[s0 + m, nvar]
            if speed > 0:
                dt_min = min(dt_min, cfl * 2 * area[i] / speed)
            if update:
                for v in range(nvar):
                    total = acc[s0, v]
                    for m in range(1, k):
                        total += acc[s0 + m, v]
                    W[i, v] -= dt / area[i] * total
                for v in depth_cols:
                    if W[i, v] < 0:
                        added -= float(W[i, v]) * area[i]
                        W[i, v] = 0
                        clipped += 1
                        if first < 0:
                            first = i
                    elif W[i, v] < eps_h and W[i, v] > 0:
                        thin += 1
                    if W[i, v] < eps_h:
                        damp = W[i, v] * inverse_depth(W[i, v], eps_h)
                        W[i, v + 1] = W[i, v + 1] * damp
                        W[i, v + 2] = W[i, v + 2] * damp
                if friction != 0:
                    _friction(W, i, friction, coef, g, dt)
        chunk_dt[c] = dt_min
        chunk_counts[c, 0] = clipped
        chunk_counts[c, 1] = thin
        chunk_counts[c, 2] = first
        chunk_clip_mass[c] = added


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
        self.acc = np.zeros((lay.n_cells * lay.k, lay.nvar + 1), dtype=lay.dtype)
        self.flags = np.zeros(lay.n_edges, dtype=np.int32)
        self._chunk_dt = np.empty(CHUNKS, dtype=np.float64)
        self._chunk_counts = np.empty((CHUNKS, 3), dtype=np.int64)
        self._chunk_clip_mass = np.empty(CHUNKS, dtype=np.float64)
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
             "thin_layer_cells"), 0,
        )  # fmt: skip
        self._counts["clipped_volume"] = 0.0  # m^3 the clipping of negative depths added
        lv = lay.levels
        self._levels = lv if lv is not None and lv.count else None
        if self._levels is not None:
            self._edge_level = lv.edge_level
            self._level_edges = np.flatnonzero(lv.edge_level >= 0)
            self._level_now = np.zeros(lv.count, dtype=np.float64)
            self._level_flux = np.zeros(lay.n_edges, dtype=np.float64)
            self._counts["level_inflow"] = 0.0  # m^3 in through the level edges (float)
        else:  # never indexed: no edge has the LEVEL code
            self._edge_level = np.full(1, -1, dtype=np.int32)
            self._level_now = np.zeros(1, dtype=np.float64)
            self._level_flux = np.zeros(1, dtype=np.float64)

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
        """Event counts; with level boundaries also ``level_inflow``, the volume (m^3) that
        entered through them, ``Σ_steps dt Σ_level edges -|Γ| (F⁻_h + q_i·η)``; once a depth
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

    def _volume_pass(self, dt: float, update: bool) -> float:
        """Update W with ``dt`` (if ``update``) and return the next CFL time step."""
        lay = self.layout
        volume_pass(
            self.W[: self._owned], self.acc, lay.area, lay.k, dt, self.cfl, self._depth_cols,
            update, self.model.eps_h, lay.friction_kind, lay.friction_coef, self.model.g,
            self._chunk_dt, self._chunk_counts, self._chunk_clip_mass,
        )  # fmt: skip
        if update:
            self._acc_current = False
            counts = self._chunk_counts
            clipped = int(counts[:, 0].sum())
            self._counts["clipped_cells"] += clipped
            self._counts["thin_layer_cells"] += int(counts[:, 1].sum())
            if clipped:
                added = float(self._chunk_clip_mass.sum())
                self._counts["clipped_volume"] += added
                if self.first_clip is None:
                    cell = int(counts[counts[:, 2] >= 0, 2][0])
                    self.first_clip = (cell, self.steps, self.t)
            if self._levels is not None:  # fixed order: reproducible
                flux = self._level_flux[self._level_edges]
                out = float(np.sum(flux)) if self.halo is None else self.halo.sum(flux)
                self._counts["level_inflow"] -= dt * out
            if self.halo is not None:
                self.halo.exchange(self.W)
        dt_next = float(self._chunk_dt.min())
        return dt_next if self.halo is None else self.halo.min(dt_next)

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
