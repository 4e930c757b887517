"""CPU backend (Numba): edge pass into per-cell slots, volume pass, min-Δt reduction.

One compiled edge pass and one volume pass serve every scheme and both layer
counts: the scheme is a run-time id (a branch the CPU predicts perfectly) and
states travel as 6-tuples (a single layer fills the first three), so the
compiled code is cached once per dtype instead of once per combination.
Parallel loops write disjoint slots or cells, so results do not depend on the
thread count.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from ...boundary import WALL
from ...errors import ConfigError
from ..layout import Layout
from . import hll, ir_roe, pvm_ifcp, roe

#: (scheme name, layers) -> id used by the compiled dispatch below.
SCHEME_IDS = {
    ("roe", 2): 0,
    ("ir-roe", 2): 1,
    ("pvm-ifcp", 2): 2,
    ("roe", 1): 3,
    ("ir-roe", 1): 4,
    ("hll", 1): 5,
    ("pvm-ifcp", 1): 5,  # SCHEMES.md §6: single-layer PVM-IFCP is HLL
}
DT_MODES = ("lagged", "nonlagged", "fixed")
#: Cell chunks of the volume pass; fixed so partial results never depend on the thread count.
CHUNKS = 256


def scheme_id(name: str, layers: int) -> int:
    """The compiled dispatch id of a scheme, or a one-line error naming the choices."""
    try:
        return SCHEME_IDS[(name, layers)]
    except KeyError:
        names = sorted({n for n, lay in SCHEME_IDS if lay == layers})
        raise ConfigError(
            f"scheme: unknown {name!r} for {layers} layer(s) (choose from {', '.join(names)})"
        ) from None


@njit(cache=True, inline="always")
def _load(W, i, nvar):
    """Cell i's state as a 6-tuple (one layer: the last three are zero)."""
    if nvar == 6:
        return (W[i, 0], W[i, 1], W[i, 2], W[i, 3], W[i, 4], W[i, 5])
    z = W[i, 0] * 0
    return (W[i, 0], W[i, 1], W[i, 2], z, z, z)


@njit(cache=True, inline="always")
def _ghost(Wi, bc, ex, ey):
    """Ghost state of a boundary edge (SCHEMES.md §7): wall reflects q·η, open copies."""
    if bc != WALL:
        return Wi
    p1 = Wi[1] * ex + Wi[2] * ey
    p2 = Wi[4] * ex + Wi[5] * ey
    return (
        Wi[0],
        Wi[1] - 2 * p1 * ex,
        Wi[2] - 2 * p1 * ey,
        Wi[3],
        Wi[4] - 2 * p2 * ex,
        Wi[5] - 2 * p2 * ey,
    )


@njit(cache=True, inline="always")
def _pad(F):
    z = F[0] * 0
    return (F[0], F[1], F[2], z, z, z)


@njit(cache=True)
def _edge_flux(scheme, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """Dispatch to the scheme's per-edge flux; returns 6-tuples F⁻, F⁺, ‖D‖∞, flags."""
    if scheme == 0:
        return roe.flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
    if scheme == 1:
        return ir_roe.flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
    if scheme == 2:
        return pvm_ifcp.flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
    wi = (Wi[0], Wi[1], Wi[2])
    wj = (Wj[0], Wj[1], Wj[2])
    if scheme == 3:
        Fm, Fp, d, f = roe.flux1(wi, wj, Hi, Hj, ex, ey, g, r, eps_h)
    elif scheme == 4:
        Fm, Fp, d, f = ir_roe.flux1(wi, wj, Hi, Hj, ex, ey, g, r, eps_h)
    else:
        Fm, Fp, d, f = hll.flux1(wi, wj, Hi, Hj, ex, ey, g, r, eps_h)
    return _pad(Fm), _pad(Fp), d, f


@njit(parallel=True, cache=True)
def edge_pass(
    scheme, W, H, edge_cells, normal, length, edge_slot, edge_bc, g, r, eps_h, acc, flags
):
    """Every edge once: ``|Γ| F⁻`` and ``|Γ| ‖D‖`` into i's slot, ``|Γ| F⁺`` into j's."""
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
            Wj = _ghost(Wi, edge_bc[e], ex, ey)
            Hj = H[i]
        Fm, Fp, dmax, flag = _edge_flux(scheme, Wi, Wj, H[i], Hj, ex, ey, g, r, eps_h)
        ln = length[e]
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


@njit(parallel=True, cache=True)
def volume_pass(W, acc, area, k, dt, cfl, depth_cols, update, chunk_dt, chunk_clipped):
    """``W_i -= dt/|V_i| Σ_slots`` (slots summed in local order) and ``dt_i`` from the speeds.

    With ``update`` false only the local time steps are computed. Negative
    depths are clipped to 0 and counted (SCHEMES.md §8). Per-chunk minima and
    counts come back in ``chunk_dt`` and ``chunk_clipped``.
    """
    L = W.shape[0]
    nvar = W.shape[1]
    nchunks = chunk_dt.shape[0]
    for c in prange(nchunks):
        lo = c * L // nchunks
        hi = (c + 1) * L // nchunks
        dt_min = math.inf
        clipped = 0
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
                        W[i, v] = 0
                        clipped += 1
        chunk_dt[c] = dt_min
        chunk_clipped[c] = clipped


class CpuBackend:
    """The paper's pipeline on the CPU; see :mod:`fvswe.backends` for the shared API."""

    name = "cpu"

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
        if threads is not None:
            numba.set_num_threads(threads)
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
        self._chunk_clipped = np.empty(CHUNKS, dtype=np.int64)
        self._depth_cols = self.model.depth_components
        self.t = 0.0
        self.steps = 0
        self.dt = math.nan  # the lagged Δt waiting for the next step
        self._acc_current = False  # whether acc holds the contributions of the current W
        self._counts = dict.fromkeys(
            ("clipped_cells", "nonhyperbolic_edges", "degenerate_edges", "thin_layer_edges"), 0
        )

    @property
    def threads(self) -> int:
        return numba.get_num_threads()

    def set_state(self, W: np.ndarray) -> None:
        self.W[...] = W
        self._acc_current = False
        self.dt = math.nan

    def get_state(self) -> np.ndarray:
        return self.W.copy()

    def counters(self) -> dict[str, int]:
        return dict(self._counts)

    def snapshot(self) -> dict:
        """Everything a bit-for-bit restart needs: state, time, steps, pending Δt, counters."""
        return {"W": self.get_state(), "t": self.t, "steps": self.steps, "dt": self.dt,
                "counters": self.counters()}  # fmt: skip

    def restore(self, snap: dict) -> None:
        """The inverse of :meth:`snapshot`."""
        self.set_state(snap["W"])
        self.t, self.steps, self.dt = float(snap["t"]), int(snap["steps"]), float(snap["dt"])
        self._counts.update(snap["counters"])

    def first_invalid(self) -> tuple[int, int] | None:
        """The first cell (and component) holding NaN/inf or a negative depth, else None."""
        bad = ~np.isfinite(self.W)
        for c in self._depth_cols:
            bad[:, c] |= self.W[:, c] < 0
        if not bad.any():
            return None
        i, c = np.argwhere(bad)[0]
        return int(i), int(c)

    def _edge_pass(self) -> None:
        lay, m = self.layout, self.model
        edge_pass(
            self.scheme, self.W, lay.H, lay.edge_cells, lay.edge_normal, lay.edge_length,
            lay.edge_slot, lay.edge_bc, m.g, m.r, m.eps_h, self.acc, self.flags,
        )  # fmt: skip
        self._acc_current = True
        if self.flags.any():
            for bit, key in ((1, "nonhyperbolic_edges"), (2, "degenerate_edges"),
                             (4, "thin_layer_edges")):  # fmt: skip
                self._counts[key] += int(np.count_nonzero(self.flags & bit))

    def _volume_pass(self, dt: float, update: bool) -> float:
        """Update W with ``dt`` (if ``update``) and return the next CFL time step."""
        lay = self.layout
        volume_pass(
            self.W, self.acc, lay.area, lay.k, dt, self.cfl, self._depth_cols, update,
            self._chunk_dt, self._chunk_clipped,
        )  # fmt: skip
        if update:
            self._acc_current = False
            self._counts["clipped_cells"] += int(self._chunk_clipped.sum())
        return float(self._chunk_dt.min())

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
            last = dt >= t_end - self.t
            if last:
                dt = t_end - self.t
            self.dt = self._volume_pass(dt, update=True)
            self.t = t_end if last else self.t + dt
            self.steps += 1
            done += 1
        return self.t, done
