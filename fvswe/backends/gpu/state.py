"""The GPU backend's state seen from the host: upload and download, the layers' volumes,
snapshots and restarts, the maximum maps, the counted edges of sections and the records of
the control block (the first clip, Courant breach, slow step, invalid cell).

:class:`DeviceState` is a part of :class:`~fvswe.backends.gpu.backend.GpuBackend`, split off
so that each module reads at once; it uses the backend's device buffers and launches.
"""

from __future__ import annotations

import math

import numpy as np

from ...boundary import INFLOW_KEYS
from ...errors import ConfigError
from ...integrators import U
from ...model import volume_sums
from ..cuda_header import NO_CELL
from .device import pack_state, slot_codes, unpack_state
from .plan import Launch

INT32_MAX = 2**31 - 1
#: counters() keys -> control block fields.
COUNTERS = {
    "clipped_cells": "clipped",
    "nonhyperbolic_edges": "nonhyp",
    "degenerate_edges": "degenerate",
    "thin_layer_edges": "thin",
    "thin_layer_cells": "thin_cells",
    "limited": "limited",
}


class DeviceState:
    """State, snapshots, maps, counted edges and records of :class:`GpuBackend`."""

    # -- state ---------------------------------------------------------------------------------
    @property
    def snapshot_arrays(self) -> dict[str, tuple[int, ...]]:
        """The arrays a snapshot holds beyond ``W``: a compensated state's depth remainders
        ``C`` (one column per layer)."""
        return {"C": (self.layout.n_cells, self.model.layers)} if self.compensated else {}

    def remainders(self) -> np.ndarray | None:
        """A host copy ``(L, layers)`` of a compensated state's depth remainders, else None."""
        return self._rests[0].get(stream=self.stream) if self.compensated else None

    def set_state(self, W: np.ndarray, C: np.ndarray | None = None) -> None:
        """Upload ``W (L, nvar)`` (and a compensated state's depth remainders ``C (L, layers)``,
        default 0); a lagged dt is then recomputed from the new state."""
        lay = self.layout
        P = pack_state(np.asarray(W, dtype=self.dtype), lay.H, lay.area, self.model.layers)
        self._W.set(P, stream=self.stream)
        if self.compensated:
            R = np.zeros(self._rests[0].shape, dtype=self.dtype)
            R[...] = 0 if C is None else C
            self._rests[0].set(R, stream=self.stream)
        self.set_control(dt=self.dt_fixed if self.dt_mode == "fixed" else math.nan, stalled=0)
        self._need_dt = self.dt_mode == "lagged"
        self._bed_now()

    def _bed_now(self) -> None:
        """A moving bed's H in the state at the clock's t (none: the static H stays)."""
        if self._slide:
            self._launch_kernel(Launch("bed_pass", dst=U), {U: self._W})

    def get_state(self) -> np.ndarray:
        """A host copy ``(L, nvar)`` of the current state, current cell order."""
        return unpack_state(self._W.get(stream=self.stream), self.model.layers)

    def layer_sums(self, area: np.ndarray, rows: int | None = None) -> np.ndarray:
        """Each layer's volume ``Σ area_i h_k,i`` over the first ``rows`` cells (None: all) as
        exact partial sums (:func:`fvswe.model.volume_sums`, on the device: a few launches and
        the sums' bins copied back, not the state); of a compensated state ``h + c``."""
        cp = self._cp
        if self._area64 is None or self._area64.size != area.size:
            self._area64 = cp.asarray(area, dtype=np.float64)
        rests = self._rests[0][:rows] if self.compensated else None
        with self.stream:
            return np.stack([
                volume_sums(self._W[:rows, vec, 0], self._area64[:rows],
                            None if rests is None else rests[:, vec], cp)
                for vec in range(self._W.shape[1])
            ])  # fmt: skip

    def counters(self) -> dict[str, int | float]:
        """Event counts; with level, discharge or characteristic boundaries also the inflow
        counters :data:`fvswe.boundary.INFLOW_KEYS` (m^3 in through them, per layer)."""
        c = self._read_ctrl()
        out = {key: int(c[field]) for key, field in COUNTERS.items()}
        if self._has_levels:
            for key in INFLOW_KEYS[: self.model.layers]:
                out[key] = float(c[key])
        out.update({key: float(c[key]) for key in self._source_keys})
        if self.linear:  # cells the linear reconstruction left at first order, per residual
            out["first_order_cells"] = int(c["first_order"])
        return out

    @property
    def first_clip(self) -> tuple[int, int, float] | None:
        """``(cell, step, t)`` of the first step that clipped a depth (its smallest cell)."""
        c = self._host
        if not c["clip_step"]:
            return None
        return int(c["clip_cell"]) + NO_CELL, int(c["clip_step"]) - 1, float(c["clip_t"])

    @property
    def courant_violation(self) -> tuple[int, int, float, float] | None:
        """``(cell, step, t, Courant number)`` of the first fixed step above the stable one:
        its smallest cell with a Courant number > 1 and the step's largest one."""
        c = self._host
        if not c["cfl_step"]:
            return None
        cell = int(c["cfl_cell"]) + NO_CELL
        return cell, int(c["cfl_step"]) - 1, float(c["cfl_t"]), float(c["courant"])

    def watch_dt(self, floor: float) -> None:
        """Record the first step whose stable Δt falls below ``floor`` (first_below_floor)."""
        self.set_control(dt_floor=floor)

    @property
    def first_below_floor(self) -> tuple[int, int, float] | None:
        """``(-1, step, t)`` of the first step whose stable Δt fell below the floor: found
        from the step's Δt reduction, so no cell (a test per cell cost 3 % of the step)."""
        c = self._host
        if not c["slow_step"]:
            return None
        return -1, int(c["slow_step"]) - 1, float(c["slow_t"])

    def snapshot(self) -> dict:
        """Everything a bit-for-bit restart needs: state, time, steps, pending dt, counters."""
        c = self._read_ctrl()
        dt = math.nan if self._need_dt else float(c["dt"])
        snap = {"W": self.get_state(), "t": float(c["t"]), "steps": int(c["steps"]), "dt": dt,
                "counters": self.counters()}  # fmt: skip
        if self._cut.size:
            snap["cut_volume"] = self.edge_volumes().tolist()
        if self._maps is not None:
            snap["maxima"] = self.maxima()
        if self.compensated:
            snap["C"] = self.remainders()
        return snap

    def maxima(self) -> np.ndarray:
        """A host copy of the maximum and arrival maps, a row per cell (current cell order),
        as :func:`fvswe.maxima.fields` reads them."""
        return self._maps.get(stream=self.stream)

    def _maxima_pass(self, W, start: bool = False) -> None:
        """The maps of the owned cells take the state ``W`` at the clock's t (``start``: they
        start from it)."""
        n = int(self.layout.owned_cells)
        threshold = np.float64(self.layout.maxima)
        with self.stream:
            self._k["maxima_pass"](((n + self.block - 1) // self.block,), (self.block,),
                                   (np.int32(n), W, self._maps, np.float64(self.model.eps_h),
                                    threshold, self._ctrl, np.int32(start)))  # fmt: skip

    def restore(self, snap: dict) -> None:
        """The inverse of :meth:`snapshot`."""
        self.set_state(snap["W"], snap.get("C"))
        fields = {"t": snap["t"], "steps": snap["steps"]}
        if self.dt_mode == "lagged" and math.isfinite(snap["dt"]):
            fields["dt"] = snap["dt"]
            self._need_dt = False
        counts = snap["counters"]
        fields.update({field: counts.get(key, 0) for key, field in COUNTERS.items()})
        fields.update({key: counts.get(key, 0.0) for key in (*INFLOW_KEYS, *self._source_keys)})
        if self.linear:
            fields["first_order"] = counts.get("first_order_cells", 0)
        self.set_control(**fields)
        self._read_ctrl()
        self._bed_now()
        if self._cut_dev is not None:  # none of the updates since is counted yet
            self._cut_dev[-1].fill(self.read_control("updates"))
            if "cut_volume" in snap:
                volumes = np.reshape(snap["cut_volume"], (self._cut.size, self.model.layers))
                self._cut_dev[-2].set(np.ascontiguousarray(volumes, np.float64), stream=self.stream)
        if self._maps is not None and "maxima" in snap:
            self._maps.set(np.ascontiguousarray(snap["maxima"], np.float64), stream=self.stream)

    # -- cross-sections (fvswe.probes) ------------------------------------------------------
    #: :meth:`count_edges` is available, as the CPU's.
    counts_edges = True

    def count_edges(self, edges: np.ndarray, volumes: np.ndarray | None = None) -> int:
        """As the CPU's :meth:`~fvswe.backends.cpu.CpuBackend.count_edges`: from now on each
        stage adds ``weight dt Phi`` per layer to the volume of each of ``edges`` this part owns
        (the ``count_edges`` kernel: the flux the update used, bitwise the CPU's in float64),
        starting from ``volumes`` or 0. Returns where these edges start in
        :meth:`edge_volumes`."""
        lay, cp = self.layout, self._cp
        if self.linear:
            raise ConfigError("sections: the volumes through edges are not counted on the GPU "
                              "with reconstruction 'linear' yet; use the CPU")  # fmt: skip
        if self._cut_dev is None:
            self._load_module(counts=True)
        edges = np.asarray(edges, dtype=np.int64)
        owned = edges < lay.owned_edges
        start = self._cut.size
        counted = np.zeros((edges.size, self.model.layers)) if volumes is None else volumes
        volume = np.vstack((self.edge_volumes(), np.asarray(counted, np.float64)[owned]))
        self._cut = np.concatenate((self._cut, edges[owned]))
        e = self._cut  # each edge's first cell and its slot's code, normal and length
        cells = lay.edge_cells[e, 0].astype(np.int32)
        code = slot_codes(lay)[lay.edge_slot[e, 0]]
        arrays = (cells, code, lay.edge_normal[e], lay.edge_length[e])
        seen = np.full(1, self.read_control("updates"), np.int64)
        with self.stream:
            dev = [cp.asarray(np.ascontiguousarray(a)) for a in (*arrays, volume, seen)]
        self._cut_dev = (np.int32(e.size), *dev[:4], self._ctrl, *dev[4:])
        self._compile_plans()
        self.drop_graphs()
        return start

    def edge_volumes(self) -> np.ndarray:
        """``(counted edges, layers)``: the volumes :meth:`count_edges` counted so far."""
        shape = (self._cut.size, self.model.layers)
        if self._cut_dev is None:
            return np.zeros(shape)
        return self._cut_dev[-2].get(stream=self.stream).reshape(shape)

    def first_invalid(self) -> tuple[int, int] | None:
        """The first cell (and component) holding NaN/inf or a negative depth, else None."""
        with self.stream:
            self._first.fill(INT32_MAX)
            grid = (int(self.layout.n_cells) + self.block - 1) // self.block  # a thread a cell
            n = np.int32(self.layout.owned_cells)
            self._k["find_invalid"]((grid,), (self.block,), (n, self._W, self._first))
            v = int(self._first.get(stream=self.stream)[0])
        return None if v == INT32_MAX else divmod(v, 8)
