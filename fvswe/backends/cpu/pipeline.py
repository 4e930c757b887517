"""CPU backend (Numba): the step plans of :mod:`fvswe.integrators` run by the compiled passes.

:class:`CpuBackend` interprets a plan op by op (:meth:`CpuBackend._run`): ``residual`` is the
edge pass into the per-cell slots, ``speeds`` and ``update`` the volume pass, ``limit_*`` the
positivity limiter, ``combine`` a multi-stage integrator's combination, ``exchange`` and
``reduce_dt`` a distributed run's halo hook (:attr:`CpuBackend.halo`), ``advance`` the
clock. The passes are :mod:`.kernels`'; the arithmetic is :mod:`fvswe.physics`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from ... import integrators, registry
from ...boundary import INFLOW_KEYS
from ...integrators import Op, U
from ...physics.limiter import mass_flux
from ...physics.maxima import maxima_cells
from ...physics.slide import bed_cells
from ...physics.update import stable_dt
from ...sources import RAIN_KEY, SOURCE_KEYS, counter_keys
from ..base import EPS_U_RATIO, LAST_STEP_RTOL, LIMIT_MARGIN, Pipeline
from ..controls import Setup, cpu_controls
from ..layout import Layout
from . import default_threads
from .dispatch import dispatch_id
from .kernels import (
    CHUNKS,
    Faces,
    Mesh,
    Outputs,
    Stage,
    combined,
    edge_pass,
    faces_pass,
    fresh_cache,
    level_values,
    limited_update,
    limiter_thetas,
    source_means,
    troubled_pass,
    volume_pass,
)

#: Event counters of the CPU (the boundary inflow and the clipped volume come on top).
EVENTS = ("clipped_cells", "nonhyperbolic_edges", "degenerate_edges", "thin_layer_edges",
          "thin_layer_cells", "limited")  # fmt: skip


def scheme_id(name: str, layers: int, entropy_fix: bool = True) -> int:
    """The compiled dispatch id of a scheme (:data:`fvswe.registry.KERNEL_IDS`; without the
    entropy fix, its own kernel's), or a one-line error naming the choices."""
    return registry.kernel_id(name, layers, entropy_fix)


@dataclass
class _Step:
    """What one step's ops share: its end of time, Δt (NaN until known, then clipped to land
    on ``t_end``), the next step's Δt, and the counts its updates made."""

    t_end: float
    dt: float
    dt_next: float = math.nan
    clipped: int = 0
    thin: int = 0
    added: float = 0.0
    candidates: bool = False
    last: bool | None = None
    unclipped: float = math.nan

    def step_dt(self, t: float) -> float:
        """This step's Δt, clipped at its first use so that the last step lands on t_end."""
        if self.last is None:
            self.unclipped = self.dt
            self.last = self.dt * (1 + LAST_STEP_RTOL) >= self.t_end - t
            if self.last:
                self.dt = self.t_end - t
        return self.dt


class CpuBackend(Pipeline):
    """The paper's pipeline on the CPU (a :class:`~fvswe.backends.base.Backend`; its
    arguments: :class:`~fvswe.backends.base.Pipeline`'s). A ``compensated`` float32 state
    keeps each depth's rounding remainder in a second float32 array, one column per layer.
    """

    name = "cpu"
    #: Steps between two blow-up checks of Simulation.run (a check costs little here).
    check_every = 100

    def _start(self, scheme: str, threads: int | None, entropy_fix: bool) -> None:
        numba.set_num_threads(threads if threads is not None else default_threads())
        fresh_cache()
        layout, linear = self.layout, self.linear
        self.scheme = scheme_id(scheme, self.model.layers, entropy_fix)
        self._dispatch = dispatch_id(self.scheme, self.model.layers)  # its type: the layers
        self._plan = integrators.step_plan(self.integrator, self.dt_mode, self.model.layers,
                                           layout.slide is not None,
                                           layout.maxima is not None)  # fmt: skip
        self._initial = integrators.initial_dt_plan()
        self._ctrl = cpu_controls(Setup(layout, self.cfl, self.dt_mode, self.dt_fixed))
        self._mesh, self._out = _arrays(layout)
        self._faces = _faces(layout) if linear else None
        stages = len(self.integrator.stages)
        self._buffers = {name: layout.W0.copy() for name in integrators.BUFFERS[: 2 + (stages > 1)]}
        #: Per buffer, a compensated state's depth remainders ``(L, layers)`` (docs/SCHEMES.md
        #: §2.7): float32 only; None in float64 or when off, which compiles them out.
        rests = (layout.n_cells, self.model.layers)
        self._rest = {name: np.zeros(rests, np.float32) if self.compensated else None
                      for name in self._buffers}  # fmt: skip
        dtype = str(self.dtype)
        #: The positivity limiter's theta per cell and layer (two layers; 1 but where a step
        #: limits) and its margin (docs/SCHEMES.md §13.4).
        self.theta = np.ones((layout.n_cells, 2)) if self.model.layers == 2 else None
        self._margin = LIMIT_MARGIN[dtype]
        self._eps_u = EPS_U_RATIO[dtype] * self.model.eps_h
        #: The first step that clipped a depth ``(cell, step, t)`` (its smallest cell) and
        #: the first whose fixed Δt exceeded the stable one ``(cell, step, t, Courant
        #: number)``: its smallest cell with a Courant number > 1 and its largest one.
        self.first_clip = None
        self.courant_violation = None
        #: The first step whose stable Δt fell below the floor of watch_dt ``(cell, step,
        #: t)``: its smallest such cell.
        self.first_below_floor = None
        self._dt_floor = 0.0
        self.t, self.steps = 0.0, 0
        self.dt = math.nan  # the lagged Δt waiting for the next step
        self._owned = layout.owned_cells  # cells updated here: all but a part's halo
        #: A distributed run's halo exchange (fvswe.parallel.Halo): ``exchange(W)`` of a
        #: plan's exchange ops, ``min(dt)`` of its reduce_dt, ``sum`` of the boundary fluxes
        #: and ``any`` of the limiter's candidates over all ranks. None on one device.
        self.halo = None
        self._slots_of: tuple | None = None  # (buffer, counted, table time): the slots' pass
        self._start_records(layout, linear)

    def _start_records(self, layout: Layout, linear: bool) -> None:
        """The run's counters, boundary tables, counted edges, moving bed and maps at t = 0."""
        self._counts: dict[str, int | float] = dict.fromkeys(EVENTS, 0)
        self._counts["clipped_volume"] = 0.0  # m^3 the clipping of negative depths added
        if linear:  # cells the linear reconstruction left at first order, per residual
            self._counts["first_order_cells"] = 0
        lv = layout.levels
        self._levels = lv if lv is not None and lv.count else None
        # the tables at the stage's time (row 0) and at a midpoint kind's (row 1)
        self._level_now = np.zeros((2, lv.count if self._levels is not None else 1))
        self._q = integrators.table_fractions(self.integrator, self.dt_mode)
        if not registry.kinds_mask(layout.edge_bc) & registry.MIDPOINT_MASK:
            self._q = (0.0,) * len(self._q)  # no midpoint kind: every table at the stage's time
        if self._levels is not None:
            self._level_edges = np.flatnonzero(lv.edge_level >= 0)
            for key in INFLOW_KEYS[: self.model.layers]:  # m^3 in, per layer
                self._counts[key] = 0.0
        for key in counter_keys(layout.sources, self.model.layers):  # m^3 of sources and rain
            self._counts[key] = 0.0
        #: The edges whose volumes are counted (:meth:`count_edges`) and their volumes.
        self._cut = np.zeros(0, dtype=np.int64)
        self._cut_volume = np.zeros((0, self.model.layers))
        self._bed_t = math.nan  # the time of the moving bed in the edge pass's H
        self._set_bed(self.t)
        #: The maximum and arrival maps, a float64 row per cell (fvswe.maxima), or None.
        self._maps = None
        if layout.maxima is not None:
            from ...maxima import start

            self._maps = start(self.W, self._mesh.H, self._owned, self.t, self.model,
                               layout.maxima)  # fmt: skip

    # -- the state ------------------------------------------------------------------------
    @property
    def W(self) -> np.ndarray:
        """The state (layout order)."""
        return self._buffers[U]

    @property
    def threads(self) -> int:
        return numba.get_num_threads()

    @property
    def acc(self) -> np.ndarray:
        """The slots of the last edge pass."""
        return self._out.acc

    def cold_start_note(self) -> str | None:
        """Says so when the passes for this dtype are not compiled yet, nor in Numba's cache."""
        from . import kernels_cached  # looked up at call time: tests replace it

        if kernels_cached(str(self.dtype), self.compensated, layers=self.model.layers) is False:
            return "compiling the CPU kernels (once: later runs load them from Numba's cache) ..."
        return None

    @property
    def snapshot_arrays(self) -> dict[str, tuple[int, ...]]:
        """The arrays a snapshot holds beyond ``W``: a compensated state's depth remainders
        ``C`` (one column per layer; docs/SCHEMES.md §2.7), which a bit-for-bit restart
        needs."""
        return {"C": self._rest[U].shape} if self.compensated else {}

    def remainders(self) -> np.ndarray | None:
        """A compensated state's depth remainders ``(L, layers)`` (a copy; layout order),
        else None."""
        rest = self._rest[U]
        return None if rest is None else rest.copy()

    def set_state(self, W: np.ndarray, C: np.ndarray | None = None) -> None:
        """The state ``W``, and a compensated state's depth remainders ``C`` (default 0)."""
        self.W[...] = W
        if self._rest[U] is not None:
            self._rest[U][...] = 0 if C is None else C
        self._slots_of = None
        self.dt = math.nan

    def _set_bed(self, t: float) -> None:
        """A moving bed's H at time ``t`` in every cell, halo too (none: the static H)."""
        slide = self.layout.slide
        if slide is not None and t != self._bed_t:
            bed_cells(t, slide.params, slide.x, slide.y, slide.H0, self._mesh.H)
            self._bed_t = t

    def get_state(self) -> np.ndarray:
        return self.W.copy()

    def layer_sums(self, area: np.ndarray, rows: int | None = None) -> np.ndarray:
        """Each layer's volume ``Σ area_i h_k,i`` over the first ``rows`` cells (None: all) as
        exact partial sums (:meth:`fvswe.model.Model.layer_sums`; ``area`` in cell order); of
        a compensated state ``h + c``, the depth it carries (docs/SCHEMES.md §2.7)."""
        rest = self._rest[U]
        C = None if rest is None else rest[:rows]
        return self.model.layer_sums(self.W[:rows], area[:rows], C)

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
        """Everything a bit-for-bit restart needs: state, time, steps, pending Δt, counters;
        with counted edges also their volumes (``cut_volume``, a list: no checkpoint
        array, as sections count from the start of each run)."""
        snap = {"W": self.get_state(), "t": self.t, "steps": self.steps, "dt": self.dt,
                "counters": self.counters()}  # fmt: skip
        if self.compensated:
            snap["C"] = self.remainders()
        if self._cut.size:
            snap["cut_volume"] = self._cut_volume.tolist()
        if self._maps is not None:
            snap["maxima"] = self.maxima()
        return snap

    def restore(self, snap: dict) -> None:
        """The inverse of :meth:`snapshot`."""
        self.set_state(snap["W"], snap.get("C"))
        self.t, self.steps, self.dt = float(snap["t"]), int(snap["steps"]), float(snap["dt"])
        self._counts.update(snap["counters"])
        self._set_bed(self.t)
        if "cut_volume" in snap:
            # reshaped: a rank that owns none of the counted edges keeps an empty list
            self._cut_volume[...] = np.reshape(snap["cut_volume"], self._cut_volume.shape)
        if self._maps is not None and "maxima" in snap:
            self._maps[...] = snap["maxima"]

    def maxima(self) -> np.ndarray:
        """The maximum and arrival maps, a row per cell (layout order; a part's halo rows
        NaN), as :func:`fvswe.maxima.fields` reads them."""
        return self._maps.copy()

    # -- cross-sections (fvswe.probes) ----------------------------------------------------
    #: Whether :meth:`count_edges` is available (the implicit method's is not).
    counts_edges = True

    def count_edges(self, edges: np.ndarray, volumes: np.ndarray | None = None) -> int:
        """From now on, count the volume per layer (m^3, float64) that the steps move through
        each of ``edges`` (this layout's numbering; those this part owns) from its first cell
        into its second: every stage adds ``weight dt Phi``, ``Phi = S + |Γ| q_i·n`` the mass
        flux of the first cell's slot as its update used it (limited slots included), as the
        boundary inflow counters add theirs. The counts start from ``volumes`` (one row per
        edge: a restarted run's, from its checkpoint), else from 0. Returns where these
        edges start in :meth:`edge_volumes` (after those counted before)."""
        edges = np.asarray(edges, dtype=np.int64)
        owned = edges < self.layout.owned_edges
        start = self._cut.size
        self._cut = np.concatenate((self._cut, edges[owned]))
        counted = np.zeros((edges.size, self.model.layers)) if volumes is None else volumes
        self._cut_volume = np.vstack((self._cut_volume, np.asarray(counted, np.float64)[owned]))
        return start

    def edge_volumes(self) -> np.ndarray:
        """``(counted edges, layers)``: the volumes :meth:`count_edges` counted so far."""
        return self._cut_volume.copy()

    def _cut_flux(self, W: np.ndarray) -> np.ndarray:
        """``(counted edges, layers)`` mass flux ``Phi`` out of each counted edge's first cell
        (:func:`fvswe.physics.limiter.mass_flux`) in the slots and the stage's state ``W``."""
        lay, e, f64 = self.layout, self._cut, np.float64
        i, slot = lay.edge_cells[e, 0], lay.edge_slot[e, 0]
        n, length = lay.edge_normal[e].astype(f64), lay.edge_length[e].astype(f64)
        out = np.empty((e.size, self.model.layers))
        for layer in range(self.model.layers):
            d = 3 * layer
            out[:, layer] = mass_flux.py_func(
                self._out.acc[slot, d].astype(f64), length, W[i, d + 1].astype(f64),
                W[i, d + 2].astype(f64), n[:, 0], n[:, 1],
            )[0]  # fmt: skip
        return out

    def invalid(self) -> np.ndarray:
        """``(owned cells, nvar)`` mask: NaN/inf, or a negative depth."""
        W = self.W[: self._owned]
        bad = ~np.isfinite(W)
        for c in self.model.depth_components:
            bad[:, c] |= W[:, c] < 0
        return bad

    def first_invalid(self) -> tuple[int, int] | None:
        """The first cell (and component) holding NaN/inf or a negative depth, else None."""
        bad = self.invalid()
        if not bad.any():
            return None
        i, c = np.argwhere(bad)[0]
        return int(i), int(c)

    # -- stepping -------------------------------------------------------------------------
    def advance(self, t_end: float, max_steps: int) -> tuple[float, int]:
        """Whole steps until ``t == t_end`` (last step clipped) or ``max_steps`` steps."""
        done = 0
        while done < max_steps and self.t < t_end:
            step = _Step(t_end, self.dt_fixed if self.dt_mode == "fixed" else self.dt)
            if self.dt_mode == "lagged" and math.isnan(self.dt):
                self._run(self._initial, step)  # the speeds of the current state
            self._run(self._plan, step)
            done += 1
            if self.courant_violation is not None:
                break
        return self.t, done

    def _run(self, plan: tuple[Op, ...], step: _Step) -> None:
        for op in plan:
            getattr(self, f"_{op.kind}")(op, step)

    def _stage(self, op: Op, step: _Step, update: bool = True) -> Stage:
        """The :class:`Stage` of ``op``: its time ``t + c dt`` and the step's (clipped) Δt."""
        if not update:
            return Stage(self.t, 0.0, False, self.scheme, self._eps_u)
        dt = step.step_dt(self.t)
        c = self.integrator.stages[op.stage].c
        return Stage(self.t + c * dt if c else self.t, dt, True, self.scheme, self._eps_u)

    def _residual(self, op: Op, step: _Step) -> None:
        """The edge pass over ``op.src`` at its stage's time, unless the slots hold it."""
        src = self._buffers[op.src]
        t = self._stage(op, step, update=op.stage > 0).t
        t_mid = self._table_time(op, step)
        if self._slots_of is not None and self._slots_of[0] is src and self._slots_of[2] == t_mid:
            if op.count and not self._slots_of[1]:
                self._count_flags()
                if self._faces is not None:  # its fallen-back cells, counted as its flags are
                    self._counts["first_order_cells"] += int(self._faces.chunk_first.sum())
            self._slots_of = (src, self._slots_of[1] or op.count, t_mid)
            return
        if self._levels is not None:  # the tables at the stage's time, and a midpoint kind's
            level_values(t, self._ctrl, self._level_now[0])
            level_values(t_mid, self._ctrl, self._level_now[1])
        if self._faces is not None:
            self._reconstruct(src, op.count)
        edge_pass(self._dispatch, src, self._mesh, self._ctrl, self._level_now, self._out,
                  self._faces)  # fmt: skip
        self._slots_of = (src, op.count, t_mid)
        if op.count:
            self._count_flags()

    def _reconstruct(self, src: np.ndarray, count: bool) -> None:
        """The linear reconstruction of ``src`` into the face slots (docs/SCHEMES.md §19): a
        distributed run reduces the variables' ranges over the ranks and receives its halo
        cells' face states from their owners (:meth:`fvswe.backends.halo.Halo.exchange_faces`)."""
        faces = self._faces
        troubled_pass(src, self._mesh, self._ctrl, faces)
        if self.halo is not None:
            self.halo.extent(faces.extent)
        faces_pass(src, self._mesh, self._ctrl, faces, self._owned)
        if self.halo is not None:
            self.halo.exchange_faces(faces.W, faces.H)
        if count:
            self._counts["first_order_cells"] += int(faces.chunk_first.sum())

    def _bed(self, op: Op, step: _Step) -> None:
        """A moving bed at the time of ``op``'s stage (after ``advance``: the new t)."""
        self._set_bed(self._stage(op, step, update=op.stage > 0).t)

    def _table_time(self, op: Op, step: _Step) -> float:
        """``t + q dt``, the time a midpoint kind (a discharge) reads its tables in the stage of
        ``op`` (:func:`fvswe.integrators.table_fractions`); the step's start while Δt is not
        known yet (the speeds of a lagged run's first Δt). Mirrors the GPU's ``mid_time``."""
        q = self._q[op.stage]
        if q == 0.0 or not step.dt > 0.0:
            return self.t
        return self.t + q * step.step_dt(self.t)

    def _count_flags(self) -> None:
        flags = self._out.flags[: self.layout.owned_edges]  # a part counts the edges it owns
        if flags.any():
            for bit, key in ((1, "nonhyperbolic_edges"), (2, "degenerate_edges"),
                             (4, "thin_layer_edges")):  # fmt: skip
                self._counts[key] += int(np.count_nonzero(flags & bit))

    def _volume(self, op: Op, stage: Stage) -> float:
        """The volume pass of ``op`` over the owned cells; the local minimum of the cells'
        stable steps."""
        n = self._owned
        (W, C), (Wn, Cn) = self._states(op.src, op.dst or op.src, n)
        volume_pass(W, Wn, C, Cn, self._mesh, self._ctrl, self._out, stage)
        return float(self._out.chunk_dt.min())

    def _states(self, src: str, dst: str, n: int) -> tuple[tuple, tuple]:
        """The first ``n`` rows of buffers ``src`` and ``dst`` as (state, remainders) pairs,
        the remainders None unless compensated."""

        def rows(name: str) -> tuple:
            rest = self._rest[name]
            return self._buffers[name][:n], None if rest is None else rest[:n]

        return rows(src), rows(dst)

    def _speeds(self, op: Op, step: _Step) -> None:
        step.dt = self._volume(op, self._stage(op, step, update=False))
        self._watch(step.dt)

    def watch_dt(self, floor: float) -> None:
        """Record the first step whose stable Δt falls below ``floor`` (first_below_floor)."""
        self._dt_floor = floor

    def _watch(self, dt: float) -> None:
        """Record this step if the cells' smallest stable step ``dt`` (this part's) is below
        the floor: the smallest cell whose ``2 cfl |V_i| / Σ |Γ| ‖D‖`` is below it."""
        if not dt < self._dt_floor or self.first_below_floor is not None:
            return
        n = self._owned
        with np.errstate(divide="ignore"):
            dt_i = stable_dt.py_func(2.0 * float(self._ctrl.cfl), self._mesh.area[:n],
                                     self._cell_speeds()[:n])  # fmt: skip
        below = np.flatnonzero(dt_i < self._dt_floor)
        cell = int(below[0]) if below.size else int(np.argmin(dt_i))
        self.first_below_floor = (cell, self.steps, self.t)

    def _cell_speeds(self) -> np.ndarray:
        """``Σ |Γ| ‖D‖`` per cell of the last edge pass (float64)."""
        lay = self.layout
        return self.acc[:, lay.nvar].astype(np.float64).reshape(lay.n_cells, lay.k).sum(axis=1)

    def _sources(self, op: Op, step: _Step) -> None:
        """The sources' and rain's mean rates over the step, and their volume counters."""
        if self.layout.sources is None:
            return
        volumes = np.zeros(3)
        source_means(self.t, step.step_dt(self.t), self._ctrl, volumes)
        for key, volume in zip((*SOURCE_KEYS, RAIN_KEY), volumes, strict=True):
            if key in self._counts:
                self._counts[key] += float(volume)

    def _update(self, op: Op, step: _Step) -> None:
        stage = self._stage(op, step)
        dt_next = self._volume(op, stage)
        self._slots_of = None
        counts = self._out.chunk_counts
        step.clipped += int(counts[:, 0].sum())
        step.thin += int(counts[:, 1].sum())
        step.added += float(self._out.chunk_clip_mass.sum())
        step.candidates = int(counts[:, 2].sum()) > 0
        if op.dt:
            step.dt_next = dt_next
            self._watch(dt_next)

    def _any(self, flag: bool) -> bool:
        """``flag`` on some rank (on every rank alike)."""
        return flag if self.halo is None else self.halo.any(flag)

    def _limit_theta(self, op: Op, step: _Step) -> None:
        """theta of the update's candidates (docs/SCHEMES.md §13.4), if some rank has any."""
        step.candidates = self._any(step.candidates)
        if not step.candidates:
            return
        n = self._owned
        cells = np.flatnonzero(self._out.status[:n] & 1)
        src = self._buffers[op.src]
        self._counts["limited"] += limiter_thetas(
            cells, src, self._mesh, self._out.acc, step.dt, self._margin, self.theta
        )
        step.candidates = cells

    def _limit_update(self, op: Op, step: _Step) -> None:
        """The cells with a layer's ``theta < 1`` (and their neighbours) updated again from
        the stage's state with the limited slots."""
        if step.candidates is False:
            return
        n, lay, theta = self._owned, self.layout, self.theta
        cells = step.candidates
        halo = np.flatnonzero((theta[n:] < 1).any(axis=1)) + n
        limited = np.concatenate((cells[(theta[cells] < 1).any(axis=1)], halo))
        if not limited.size:
            return
        edges = lay.cell_edges[limited]
        around = np.unique(lay.edge_cells[edges[edges >= 0]])
        around = around[(around >= 0) & (around < n)]
        (W, C), (Wn, Cn) = self._states(op.src, op.dst, lay.n_cells)
        more = limited_update(around, W, Wn, C, Cn, self._mesh, self._ctrl, self._out, theta,
                              self._stage(op, step))  # fmt: skip
        step.clipped += more[0]
        step.thin += more[1]
        step.added += more[2]
        theta[limited] = 1.0

    def _tally(self, op: Op, step: _Step) -> None:
        """The stage's clipped and thin layers, and its boundary inflow and counted edges'
        volumes times its weight."""
        self._counts["clipped_cells"] += step.clipped
        self._counts["thin_layer_cells"] += step.thin
        if step.clipped:
            self._counts["clipped_volume"] += step.added
            if self.first_clip is None:
                cell = int(np.flatnonzero(self._out.status[: self._owned] & 2)[0])
                self.first_clip = (cell, self.steps, self.t)
        step.clipped, step.thin, step.added = 0, 0, 0.0
        share = self.integrator.stages[op.stage].weight * step.dt
        if self._cut.size:
            self._cut_volume += share * self._cut_flux(self._buffers[op.src])
        if self._levels is not None:  # fixed order: reproducible
            for layer, key in enumerate(INFLOW_KEYS[: self.model.layers]):
                flux = self._out.level_flux[self._level_edges, layer]
                out = float(np.sum(flux)) if self.halo is None else self.halo.sum(flux)
                self._counts[key] -= share * out

    def _combine(self, op: Op, step: _Step) -> None:
        a = self.integrator.stages[op.stage].a
        real = np.float64 if self.compensated else np.dtype(self.layout.dtype).type
        n = self._owned
        (u, cu), (s, cs) = self._states(U, op.src, n)
        (d, cd), _ = self._states(op.dst, op.dst, n)
        combined(u, s, d, cu, cs, cd, real(a), real(1.0 - a))

    def _exchange(self, op: Op, step: _Step) -> None:
        if self.halo is None:
            return
        if op.dst == "theta":
            if step.candidates is not False:
                self.halo.exchange_theta(self.theta)
            return
        self.halo.exchange(self._buffers[op.dst])

    def _reduce_dt(self, op: Op, step: _Step) -> None:
        if self.halo is None:
            return
        if self.dt_mode == "nonlagged" or math.isnan(step.dt_next):
            step.dt = self.halo.min(step.dt)
        else:
            step.dt_next = self.halo.min(step.dt_next)

    def _maxima(self, op: Op, step: _Step) -> None:
        """The maps take the new state of the owned cells (``U`` once ``advance`` swapped the
        buffers), at the new ``t``."""
        maxima_cells(self.W, self._mesh.H, self._owned, self.t, self.model.layers,
                     float(self.model.eps_h), self.layout.maxima, self._maps, False)  # fmt: skip

    def _advance(self, op: Op, step: _Step) -> None:
        dt = step.step_dt(self.t)
        if self.dt_mode == "fixed":
            self.dt = step.dt_next
            self._check_courant(dt)
        elif self.dt_mode == "lagged":
            self.dt = step.dt_next
        else:  # non-lagged: the step's Δt from its speeds (restarts ignore it)
            self.dt = step.unclipped
        self.t = step.t_end if step.last else self.t + dt
        self.steps += 1
        if op.dst != U:
            for b in (self._buffers, self._rest):
                b[U], b[op.dst] = b[op.dst], b[U]

    def _check_courant(self, dt: float) -> None:
        """Record the step if the fixed ``dt`` exceeds the stable step of the speeds it used:
        Courant number ``dt Σ|Γ| ‖D‖ / (2 |V_i|) > 1`` in some cell (docs/SCHEMES.md §2.4)."""
        lay = self.layout
        if not dt * self.cfl > self.dt or self.courant_violation is not None:
            return
        speed = self._cell_speeds()
        n = self._owned
        courant = dt * speed[:n] / (2.0 * lay.area[:n])
        # Under MPI every rank records the step (Δt is global), a cell only where it has one.
        over = np.flatnonzero(courant > 1.0)
        cell = int(over[0]) if over.size else -1
        self.courant_violation = (cell, self.steps, self.t, float(courant.max(initial=0.0)))


def _read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``: Numba types (and caches) a pass per writability of each
    argument, and a layout's arrays are the mesh's read-only views or writable copies
    (a rank's part, a reordering); one writability gives one compiled pass for all."""
    view = array.view()
    view.flags.writeable = False
    return view


def _faces(lay: Layout) -> Faces:
    """The :class:`~.kernels.Faces` of a layout, for a linear reconstruction."""
    slots = lay.n_cells * lay.k
    lsq, offset = lay.linear_geometry()
    return Faces(
        lsq=_read_only(lsq), offset=_read_only(offset),
        troubled=np.zeros(lay.n_cells, dtype=np.uint8),
        W=np.zeros((slots, lay.nvar), dtype=lay.dtype), H=np.zeros(slots, dtype=lay.dtype),
        interior=np.zeros((slots, lay.nvar)), chunk_first=np.zeros(CHUNKS, dtype=np.int64),
        chunk_range=np.zeros((CHUNKS, 14)), extent=np.zeros(14),
        span=np.zeros(7),
    )  # fmt: skip


def _arrays(lay: Layout) -> tuple[Mesh, Outputs]:
    """The passes' :class:`~.kernels.Mesh` of a layout and their :class:`~.kernels.Outputs`."""
    ce = lay.cell_edges
    edge_level = np.full(1, -1, dtype=np.int32)  # never indexed: no edge has tables
    if lay.levels is not None and lay.levels.count:
        edge_level = lay.levels.edge_level
    fixed = {
        name: _read_only(array)
        for name, array in (
            ("area", lay.area), ("edge_cells", lay.edge_cells), ("edge_normal", lay.edge_normal),
            ("edge_length", lay.edge_length), ("edge_slot", lay.edge_slot),
            ("edge_bc", lay.edge_bc), ("edge_level", edge_level), ("cell_edges", ce),
            ("cell_side", lay.cell_side),
            ("slot_length", np.where(ce >= 0, lay.edge_length[np.maximum(ce, 0)], 0)),
        )
    }  # fmt: skip
    # H writable (a moving bed's is written by _set_bed), every other array read-only
    mesh = Mesh(H=lay.H.copy(), **fixed)
    tables = lay.levels is not None and lay.levels.count
    out = Outputs(
        acc=np.zeros((lay.n_cells * lay.k, lay.nvar + 1), dtype=lay.dtype),
        flags=np.zeros(lay.n_edges, dtype=np.int32),
        level_flux=np.zeros((lay.n_edges if tables else 1, 2), dtype=np.float64),
        chunk_dt=np.empty(CHUNKS, dtype=np.float64),
        chunk_counts=np.empty((CHUNKS, 3), dtype=np.int64),
        chunk_clip_mass=np.empty(CHUNKS, dtype=np.float64),
        status=np.zeros(lay.n_cells, dtype=np.uint8),
    )
    return mesh, out
