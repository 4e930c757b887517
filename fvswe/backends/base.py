"""What :class:`~fvswe.simulation.Simulation` needs of a backend: the :class:`Backend` protocol.

The time loop (:meth:`Simulation.run`, :mod:`fvswe.runner`), restarts and outputs
(:mod:`fvswe.output`) use only these members, so they own nothing backend-specific.
:class:`~fvswe.backends.cpu.pipeline.CpuBackend`, :class:`~fvswe.backends.gpu.GpuBackend`
and :class:`~fvswe.parallel.DistributedBackend` implement all of them
(tests/test_registry.py checks it). A single-device backend is a :class:`Pipeline`, constructed as
``cls(layout, scheme, cfl, dt_mode, dt_fixed, threads=..., **options)``, ``options``
being its own keywords (the GPU's ``variant``, ``block``, ...: ``Simulation(...,
backend_options=...)``).

Optional, outside the protocol: a backend with ``counts_edges`` true has ``count_edges``
and ``edge_volumes`` (the CPU's and the GPU's, also on MPI ranks), with which
:mod:`fvswe.probes` takes a section's discharge from the mass fluxes of its cut edges; the
others' (the implicit method's) sections use the volume of a side closed by walls.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from .. import exactsum, integrators, registry
from ..errors import ConfigError
from ..physics.reconstruction import LINEAR_CFL

if TYPE_CHECKING:
    from .layout import Layout

#: The time-step rules of every backend: Δt from the previous step's speeds (the paper's),
#: from the current speeds, or fixed.
DT_MODES = ("lagged", "nonlagged", "fixed")

#: Both pipelines: a step within this fraction of itself of ``t_end`` is the last one: it
#: lands on ``t_end`` instead of leaving a round-off sliver (5000 fixed steps of 0.01 s reach
#: t = 50 s).
LAST_STEP_RTOL = 1e-9
#: The positivity limiter of both pipelines (docs/SCHEMES.md §13.4; its formulas:
#: fvswe.physics.limiter): theta = h |V| / (dt out) (1 - margin), the margin (per dtype)
#: keeping a limited depth >= 0 under round-off.
LIMIT_MARGIN = {"float64": 2.0**-40, "float32": 2.0**-18}
#: The depth below which the cells the limiter updates again damp a layer's discharge,
#: ``eps_u = EPS_U_RATIO[dtype] * eps_h`` (1e-3 of the depth scale with the default
#: ``eps_h``): a tip the limiter empties keeps no velocity its depth cannot carry
#: (docs/SCHEMES.md §13.4).
EPS_U_RATIO = {"float64": 1e3, "float32": 10.0}


def check_dt_mode(dt_mode: str, dt_fixed: float | None) -> None:
    """A one-line ConfigError for an unknown Δt rule or a fixed one without a positive dt."""
    if dt_mode not in DT_MODES:
        raise ConfigError(f"dt_mode: unknown {dt_mode!r} (choose from {', '.join(DT_MODES)})")
    if dt_mode == "fixed" and not (dt_fixed and dt_fixed > 0):
        raise ConfigError("dt: a fixed time step needs a positive dt")


class Pipeline:
    """What the CPU and GPU pipelines take and set up alike; each backend's own part is its
    ``_start(scheme, threads, entropy_fix, **options)``.

    ``scheme``: a name of :data:`fvswe.registry.SCHEMES`; ``cfl``, ``dt_mode`` (one of
    :data:`DT_MODES`) and ``dt_fixed``: the Δt rule; ``threads``: the CPU threads (the GPU
    accepts and ignores them, so the constructors are one); ``integrator``: one of
    :data:`fvswe.integrators.INTEGRATORS`; ``entropy_fix`` false: the Roe schemes without
    their entropy fix; ``reconstruction``: one of :data:`fvswe.registry.RECONSTRUCTIONS`
    (``linear``: the Δt times :data:`~fvswe.physics.reconstruction.LINEAR_CFL`, docs/SCHEMES.md
    §19); ``compensated``: a float32 state keeps its depths' rounding remainders
    (docs/SCHEMES.md §2.7; ignored in float64, which needs none).
    """

    def __init__(
        self,
        layout: Layout,
        scheme: str,
        cfl: float = 0.9,
        dt_mode: str = "lagged",
        dt_fixed: float | None = None,
        *,
        threads: int | None = None,
        integrator: str = "euler",
        entropy_fix: bool = True,
        reconstruction: str = "constant",
        compensated: bool = False,
        **options,
    ) -> None:
        check_dt_mode(dt_mode, dt_fixed)
        self.layout, self.model = layout, layout.model
        self.dtype = np.dtype(layout.dtype)
        self.integrator = integrators.get(integrator)
        self.reconstruction = registry.reconstruction(reconstruction, self.integrator)
        self.linear = self.reconstruction.order == 2
        self.cfl, self.dt_mode, self.dt_fixed = float(cfl), dt_mode, dt_fixed
        if self.linear:
            self.cfl *= LINEAR_CFL
        self.compensated = bool(compensated) and self.dtype == np.float32
        self._start(scheme, threads, entropy_fix, **options)

    def _start(self, scheme: str, threads: int | None, entropy_fix: bool, **options) -> None:
        """The backend's own set-up, after the shared one."""
        raise NotImplementedError

    def layer_mass(self, area: np.ndarray) -> list[float]:
        """Volume of each layer, ``Σ area_i h_k,i``: the exact sum rounded once to float64
        (:func:`fvswe.exactsum.rounded`) of the backend's ``layer_sums(area, rows=None)``
        (each layer's exact partial sums over the first ``rows`` cells, one row a layer,
        :func:`fvswe.model.volume_sums`; MPI ranks add their owned cells'), the same bits in
        any cell order."""
        return [exactsum.rounded(s) for s in self.layer_sums(area)]


@runtime_checkable
class Backend(Protocol):
    """A backend advancing one state over a :class:`~fvswe.backends.layout.Layout`.

    Cells are in layout order; ``t``, ``steps`` and ``dt`` are the backend's clock
    (``dt``: the lagged Δt of the next step, NaN while it waits to be computed);
    ``threads`` the CPU threads it runs (None: none, the steps run on a device);
    ``check_every`` the steps between two blow-up checks of :meth:`Simulation.run`
    (a GPU's check costs a device sync, so it checks less often).
    """

    name: str
    check_every: int

    @property
    def t(self) -> float: ...

    @property
    def steps(self) -> int: ...

    @property
    def dt(self) -> float: ...

    @property
    def threads(self) -> int | None: ...

    def advance(self, t_end: float, max_steps: int) -> tuple[float, int]:
        """Whole steps until ``t == t_end`` (the last one clipped) or ``max_steps`` steps;
        returns ``(t, steps taken)``."""
        ...

    def get_state(self) -> np.ndarray:
        """A host copy ``(L, nvar)`` of the state."""
        ...

    def set_state(self, W: np.ndarray) -> None:
        """Replace the state (a lagged Δt is then recomputed)."""
        ...

    def layer_mass(self, area: np.ndarray) -> list[float]:
        """Volume of each layer, ``Σ area_i h_k,i``, the exact sum rounded once to float64
        (:mod:`fvswe.exactsum`: the same bits in any cell order, on any rank count)."""
        ...

    def counters(self) -> dict[str, int | float]:
        """Event counts (clipped cells, flagged edges, ...; level inflow with levels)."""
        ...

    def snapshot(self) -> dict:
        """Everything a bit-for-bit restart needs: ``W``, ``t``, ``steps``, ``dt``, counters;
        where the layout asks for maximum and arrival maps (``Layout.maxima``, an explicit
        backend only) also ``maxima``, the rows its method ``maxima()`` returns."""
        ...

    def restore(self, snap: dict) -> None:
        """The inverse of :meth:`snapshot`."""
        ...

    def first_invalid(self) -> tuple[int, int] | None:
        """The first ``(cell, component)`` holding NaN/inf or a negative depth, else None."""
        ...

    @property
    def first_clip(self) -> tuple[int, int, float] | None:
        """``(cell, step, t)`` of the first step that clipped a depth, else None."""
        ...

    @property
    def courant_violation(self) -> tuple[int, int, float, float] | None:
        """``(cell, step, t, Courant number)`` of the first fixed step above the stable one."""
        ...

    def watch_dt(self, floor: float) -> None:
        """From now on record (:attr:`first_below_floor`) the first step whose stable Δt
        falls below ``floor`` (s): the time loop's guard against a collapsing Δt."""
        ...

    @property
    def first_below_floor(self) -> tuple[int, int, float] | None:
        """``(cell, step, t)`` of the first step whose stable Δt fell below the floor of
        :meth:`watch_dt` (its smallest cell below it), else None."""
        ...

    def cold_start_note(self) -> str | None:
        """A sentence for the user when the first step must compile kernels, else None."""
        ...


class SetupClock:
    """Seconds between marks: ``stages[name]`` the time since the previous mark (or since
    ``start``, a ``time.perf_counter()`` reading, by default now), for the set-up's stages."""

    def __init__(self, start: float | None = None) -> None:
        self.stages: dict[str, float] = {}
        self._last = time.perf_counter() if start is None else start

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = now - self._last
        self._last = now
