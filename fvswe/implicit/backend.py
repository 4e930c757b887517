"""The implicit method behind the :class:`~fvswe.backends.base.Backend` protocol.

So a :class:`~fvswe.simulation.Simulation` with ``method="implicit"`` keeps everything
around the steps: its time loop, blow-up and volume checks, output series, gauges,
summaries, checkpoints and the CLI. The state the rest of the package sees is the cell
state ``(h, qx, qy)``: ``h = ζ + H`` and the mean of the two face discharges ``h_f u`` of
each direction; the staggered state (levels and face velocities, which ``W`` gives back
only approximately) stays inside, and a snapshot carries it (:data:`STAGGERED`), so a
warm-up or a restart from a snapshot or a checkpoint is bitwise.
"""

from __future__ import annotations

import math

import numpy as np

from .. import exactsum
from ..backends.base import LAST_STEP_RTOL, check_dt_mode
from ..errors import BlowUpError, ConfigError
from ..model import volume_sums
from .cg import GPU_CHECK, NotConverged
from .cgrid import CGrid
from .options import ImplicitOptions
from .step import State, ThetaStep

#: A snapshot's arrays beyond ``W``: the staggered state (levels, face velocities).
STAGGERED = ("zeta", "u", "v")
#: Counters of the run beyond the protocol's (``level_inflow``).
COUNTERS = ("cg_iterations", "solves", "drying_repeats")


def array_module(device: str):
    """NumPy for ``cpu``, CuPy for ``gpu``."""
    if device == "gpu":
        import cupy

        return cupy
    return np


class ImplicitBackend:
    """The θ-scheme's run state and clock over a Cartesian ``layout`` (one layer).

    ``device`` is ``cpu`` (NumPy) or ``gpu`` (CuPy); ``cfl`` the advective Courant number
    of the time step (``dt_mode`` lagged and nonlagged alike: the current speeds),
    ``dt_fixed`` the step of ``fixed``.
    """

    def __init__(
        self, layout, device: str, options: ImplicitOptions, *, cfl: float, dt_mode: str,
        dt_fixed: float | None,
    ) -> None:  # fmt: skip
        check_dt_mode(dt_mode, dt_fixed)
        self.name = device
        self.label = f"implicit-theta{options.theta:g}-{options.preconditioner}"
        self.check_every = 10
        self.xp = xp = array_module(device)
        self.grid = CGrid.of(layout)
        self.options, self.cfl, self.dt_mode, self.dt_fixed = options, cfl, dt_mode, dt_fixed
        self.dtype = layout.dtype
        self.g = layout.model.g
        check = GPU_CHECK.get(options.preconditioner, 1) if device == "gpu" else 1
        self.step = ThetaStep(self.grid, self.g, options, xp, self.dtype, check)
        self._t, self._steps, self._dt = 0.0, 0, math.nan
        self._counts = dict.fromkeys(COUNTERS, 0)
        self._extremes = {"advection_courant_max": 0.0, "gravity_courant_max": 0.0}
        self._inflow = 0.0
        self._courant = None
        self.set_state(layout.W0)

    # -- the protocol's clock ----------------------------------------------------------------
    @property
    def t(self) -> float:
        return self._t

    @property
    def steps(self) -> int:
        return self._steps

    @property
    def dt(self) -> float:
        return self._dt

    @property
    def threads(self) -> int | None:
        return None if self.name == "gpu" else 1

    def advance(self, t_end: float, max_steps: int) -> tuple[float, int]:
        taken = 0
        while self._t < t_end and taken < max_steps:
            dt = self._next_dt()
            if self._t + dt >= t_end * (1 - LAST_STEP_RTOL) or self._t + dt > t_end:
                dt = t_end - self._t
            try:
                self.state, report = self.step(self.state, self._t, dt)
            except NotConverged as exc:
                raise BlowUpError(
                    f"implicit step {self._steps + 1} (t = {self._t:.6g} s, dt = {dt:.4g} s): "
                    f"CG did not converge: {exc}"
                ) from None
            self._count(report)
            self._t = t_end if dt == t_end - self._t else self._t + dt
            self._steps += 1
            taken += 1
        self._dt = math.nan
        return self._t, taken

    def _count(self, report) -> None:
        self._counts["cg_iterations"] += report.iterations
        self._counts["solves"] += report.solves
        self._counts["drying_repeats"] += report.solves - 1
        self._inflow += report.inflow
        self._maxima = report.maxima

    def _next_dt(self) -> float:
        """Δt: fixed, or ``cfl`` on the advection (at the speed it carries ``u`` and ``v``:
        ``|u|`` or ``q̄/h̄``, the larger) capped by ``max_wave_courant`` and ``dt_max``; both
        Courant numbers of the step are recorded."""
        g, o = self.grid, self.options
        u_max, v_max, h_max = self._maxima or self._state_maxima()
        per_s = max(u_max / g.dx, v_max / g.dy)  # the advective Courant number of a 1 s step
        h_max = max(h_max, 0.0)
        wave = math.sqrt(self.g * h_max) / min(g.dx, g.dy)  # the same for gravity waves
        if self.dt_mode == "fixed":
            dt = self.dt_fixed
            if per_s * dt > 1 and self._courant is None:
                self._courant = (self._fastest_cell(), self._steps, self._t, per_s * dt)
        else:
            limits = [o.max_wave_courant / wave if wave > 0 else math.inf, o.dt_max or math.inf]
            dt = min(self.cfl / per_s if per_s > 0 else math.inf, *limits)
            if not math.isfinite(dt):
                raise ConfigError("dt: still water without depth: give dt_max (implicit)")
        self._extremes["advection_courant_max"] = max(
            self._extremes["advection_courant_max"], per_s * dt
        )
        self._extremes["gravity_courant_max"] = max(self._extremes["gravity_courant_max"],
                                                    wave * dt)  # fmt: skip
        self._dt = dt
        return dt

    def _state_maxima(self) -> tuple[float, float, float]:
        """:meth:`ThetaStep.maxima <.step.ThetaStep.maxima>` of the state (the largest
        advecting speeds and depth; one upload, one transfer); a step's
        :class:`~.step.Report` brings them for the state it made."""
        xp = self.xp
        values = self.step.maxima(self.state, self.step.ghosts(self._t, 0.0)[0])
        return tuple(float(v) for v in _host(xp.stack([xp.asarray(v, self.dtype) for v in values])))

    def _fastest_cell(self) -> int:
        """The cell west of (or below) the fastest face."""
        xp, g = self.xp, self.grid
        u, v = xp.abs(self.state.u), xp.abs(self.state.v)
        if float(u.max()) / g.dx >= float(v.max()) / g.dy:
            j, i = np.unravel_index(int(u.argmax()), u.shape)
            return int(j * g.nx + min(i, g.nx - 1))
        j, i = np.unravel_index(int(v.argmax()), v.shape)
        return int(min(j, g.ny - 1) * g.nx + i)

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> np.ndarray:
        """``(h, qx, qy)`` per cell, row-major, in the run's dtype (host)."""
        xp, s = self.xp, self.state
        h = s.zeta + self.step.H
        terms = []
        for f, w in ((self.step.faces[0], s.u), (self.step.faces[1], s.v.T)):
            zeta = s.zeta if f is self.step.faces[0] else s.zeta.T
            hf = _face_depth(xp, f, zeta, w, self.options.dry_depth)
            q = hf * w
            terms.append(0.5 * (q[:, :-1] + q[:, 1:]))
        W = xp.stack([h, terms[0], terms[1].T], axis=-1).reshape(-1, 3)
        return _host(W).astype(self.dtype)

    def set_state(self, W: np.ndarray) -> None:
        """Levels from ``h``; face velocities from the mean cell velocities of the two cells
        (a dry side counts 0; none through walls) — a restart from ``W`` alone is close,
        not bitwise."""
        xp, g = self.xp, self.grid
        W = np.asarray(W, dtype=np.float64).reshape(g.ny, g.nx, 3)
        h = W[..., 0]
        vel = [np.divide(W[..., k], h, out=np.zeros_like(h), where=h > 0) for k in (1, 2)]
        faces = []
        for f, c in ((g.x, vel[0]), (g.y, vel[1].T)):
            u = np.zeros(f.open.shape)
            u[:, 1:-1] = 0.5 * (c[:, :-1] + c[:, 1:])
            u[:, 0], u[:, -1] = c[:, 0], c[:, -1]
            faces.append(np.where(f.open, u, 0.0))
        self.state = State(
            xp.asarray(h - g.H, self.dtype), xp.asarray(faces[0], self.dtype),
            xp.asarray(np.ascontiguousarray(faces[1].T), self.dtype),
        )  # fmt: skip
        self._dt, self._maxima = math.nan, None

    def layer_mass(self, area: np.ndarray) -> list[float]:
        """The volume ``Σ area_i h_i``, the exact sum rounded once (as every backend's)."""
        xp, h = self.xp, (self.state.zeta + self.step.H).ravel()
        return [exactsum.rounded(volume_sums(h, xp.asarray(area, dtype=np.float64), xp=xp))]

    def counters(self) -> dict[str, int | float]:
        return {**self._counts, **self._extremes, "level_inflow": self._inflow}

    def snapshot(self) -> dict:
        """The protocol's snapshot and the staggered state (host copies)."""
        staggered = {key: _host(getattr(self.state, key)).copy() for key in STAGGERED}
        return {"W": self.get_state(), "t": self._t, "steps": self._steps, "dt": self._dt,
                "counters": self.counters(), **staggered}  # fmt: skip

    @property
    def snapshot_arrays(self) -> dict[str, tuple[int, ...]]:
        """The arrays a snapshot holds beyond ``W`` and their shapes (in the run's dtype);
        :meth:`Simulation.restore <fvswe.simulation.Simulation.restore>` checks and passes
        them."""
        return {key: tuple(getattr(self.state, key).shape) for key in STAGGERED}

    def restore(self, snap: dict) -> None:
        """The staggered state, clock and counters of ``snap`` (its ``W`` follows from them)."""
        self.state = State(*(self.xp.array(snap[key], dtype=self.dtype) for key in STAGGERED))
        self._maxima = None
        self._t, self._steps, self._dt = float(snap["t"]), int(snap["steps"]), float(snap["dt"])
        counters = dict(snap["counters"])
        self._counts = {k: int(counters.get(k, 0)) for k in COUNTERS}
        self._extremes = {k: float(counters.get(k, 0.0)) for k in self._extremes}
        self._inflow = float(counters.get("level_inflow", 0.0))

    # -- checks ------------------------------------------------------------------------------
    def first_invalid(self) -> tuple[int, int] | None:
        """The first cell with a non-finite level or a negative depth (component 0), or next
        to a non-finite face velocity (1: u, 2: v)."""
        xp, s, g = self.xp, self.state, self.grid
        bad = ~xp.isfinite(s.zeta) | (s.zeta + self.step.H < 0)
        if bool(bad.any()):
            return int(xp.flatnonzero(bad.ravel())[0]), 0
        for comp, w in ((1, s.u), (2, s.v)):
            wrong = ~xp.isfinite(w)
            if bool(wrong.any()):
                j, i = np.unravel_index(int(xp.flatnonzero(wrong.ravel())[0]), w.shape)
                return int(min(j, g.ny - 1) * g.nx + min(i, g.nx - 1)), comp
        return None

    @property
    def first_clip(self) -> tuple[int, int, float] | None:
        return None  # depths are never clipped: a draining cell is taken out instead

    @property
    def courant_violation(self) -> tuple[int, int, float, float] | None:
        """A fixed step above the advective Courant limit 1 (the explicit advection's)."""
        return self._courant

    def watch_dt(self, floor: float) -> None:
        """Nothing: the θ-scheme's Δt follows the largest speeds, not a cell's stable step."""

    @property
    def first_below_floor(self) -> tuple[int, int, float] | None:
        return None

    def cold_start_note(self) -> str | None:
        return None


def _face_depth(xp, f, zeta, u, dry: float):
    """The upwind face depth (x orientation) the step would use, 0 on closed faces; the
    level outside an open boundary face counts as the cell's own."""
    left = xp.concatenate((zeta[:, :1], zeta), axis=1)
    right = xp.concatenate((zeta, zeta[:, -1:]), axis=1)
    up = xp.where(u > 0, left, xp.where(u < 0, right, xp.maximum(left, right)))
    hf = up + f.bed
    return xp.where(f.open & (hf >= dry), hf, 0.0)


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)
