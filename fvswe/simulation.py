"""Simulation: the time loop and everything a run needs around it.

It knows nothing about Numba or CUDA: it builds a Layout, hands it to a
backend, advances in chunks, checks the state, and reports in the mesh's
original cell order.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import restart
from . import settings as run_settings
from .backends import backend_class
from .backends.base import SetupClock
from .backends.layout import FRICTION_KINDS, Layout
from .boundary import (
    OPEN,
    edge_conditions,
    inflows,
    level_tables,
    outflow_tags,
    periodic_pairs,
    refuse_joined_conditions,
)
from .errors import BlowUpError, ConfigError, check_finite
from .forcing import Coriolis, Wind, WindTable
from .implicit.precond import resolve as resolve_preconditioner
from .maxima import Maxima
from .maxima import fields as maxima_fields
from .mesh.core import inverse_permutation, take_rows
from .mesh.orderings import resolve as resolve_order
from .mesh.periodic import periodic
from .mesh.sphere import RADIUS, on_sphere
from .model import Model, thin_layer_threshold
from .parallel import agreed, outflow_drops
from .registry import refuse_dry_cells
from .slide import Slide, bed_at, slide_table
from .sources import Cells, Rain, Source, added, source_tables

Field = np.ndarray | float | Callable[[np.ndarray, np.ndarray], np.ndarray]
DTYPES = {name: np.dtype(name).type for name in run_settings.BY_NAME["dtype"].choices}
#: Largest ``|m - m0 - inflow| / m0`` of a layer that is still round-off, by precision.
MASS_TOLERANCE = {"float64": 1e-12, "float32": 1e-5}
#: A check interval that stops short of ``t_end`` having advanced less than this fraction of
#: the run's first Δt a step (or not at all) stops the run: Δt collapsed (docs/SCHEMES.md §2.4).
DT_COLLAPSE = 1e-6


@dataclass
class RunSummary:
    """What a run reports: time, steps, speed, per-layer mass and its drift, counters."""

    t: float
    steps: int
    wall_s: float
    cells: int
    scheme: str
    backend: str
    dtype: str
    order: str
    mass: list[float]
    mass_initial: list[float]
    counters: dict[str, int] = field(default_factory=dict)
    threads: int | None = None
    #: Seconds spent compiling (or loading) the kernels before the run; not in ``wall_s``.
    compile_s: float = 0.0
    #: Seconds from the start of the command to the first step (reading, ordering and laying
    #: out the mesh, the backend's set-up, ``compile_s``); None where nobody timed it.
    setup_s: float | None = None
    #: The set-up's stages (seconds by name: reading the mesh, the Simulation's stages of
    #: :attr:`Simulation.setup_stages`, ``compile``); empty where nobody timed them.
    setup_stages: dict[str, float] = field(default_factory=dict)
    #: Seconds of ``wall_s`` spent in the checks between chunks of steps (blow-up, Courant
    #: number, masses), and how many checks there were: what a look at the run costs.
    check_s: float = 0.0
    checks: int = 0

    @property
    def cell_steps_per_s(self) -> float:
        """Cells times steps per wall second (0 without steps, e.g. a restart at t_end)."""
        if not self.steps:
            return 0.0
        return self.cells * self.steps / self.wall_s if self.wall_s > 0 else math.inf

    @property
    def mass_error(self) -> list[float]:
        """``|m - m0 - inflow|`` per layer (m^3); ``inflow`` is the volume that level, discharge
        and characteristic boundaries let in (:func:`fvswe.boundary.inflows`), 0 with walls,
        and that point sources and rain put in (:func:`fvswe.sources.added`)."""
        layers = len(self.mass)
        inflow = [a + b for a, b in zip(inflows(self.counters, layers),
                                        added(self.counters, layers), strict=True)]  # fmt: skip
        return [
            abs(m - m0 - q) for m, m0, q in zip(self.mass, self.mass_initial, inflow, strict=True)
        ]

    @property
    def mass_rel_drift(self) -> list[float]:
        """:attr:`mass_error` relative to ``|m0|`` (absolute where ``m0 = 0``)."""
        pairs = zip(self.mass_error, self.mass_initial, strict=True)
        return [e / abs(m0) if m0 else e for e, m0 in pairs]

    def to_dict(self) -> dict:
        return {
            "t": self.t,
            "steps": self.steps,
            "wall_s": self.wall_s,
            "compile_s": self.compile_s,
            "setup_s": self.setup_s,
            "setup_stages": self.setup_stages,
            "check_s": self.check_s,
            "checks": self.checks,
            "cells": self.cells,
            "cell_steps_per_s": self.cell_steps_per_s,
            "scheme": self.scheme,
            "backend": self.backend,
            "dtype": self.dtype,
            "order": self.order,
            "threads": self.threads,
            "mass": self.mass,
            "mass_initial": self.mass_initial,
            "mass_rel_drift": self.mass_rel_drift,
            **self.counters,
        }


#: The largest Manning n (s/m^(1/3)) and the smallest Chézy C (m^(1/2)/s) taken. At 1 m depth
#: they are the same friction (C = h^(1/6) / n); natural channels have n of 0.01-0.2 and C of
#: 20-100 (Chow, Open-Channel Hydraulics, 1959, tables 5-6), so n > 1 is a Chézy value given
#: as Manning's, and C < 1 a Manning value given as Chézy's.
MANNING_MAX, CHEZY_MIN = 1.0, 1.0


def _friction(friction, xy: np.ndarray) -> tuple[int, np.ndarray | None]:
    """``(FRICTION_KINDS code, per-cell coefficients)`` of ``None``, ``("chezy", C)`` or
    ``("manning", n)``; C or n a number, an array of one value per cell or a function of
    (x, y). Chézy needs ``C >= 1``, Manning ``0 <= n <= 1`` (0: no friction there;
    :data:`MANNING_MAX`)."""
    if friction is None:
        return 0, None
    try:
        law, coef = friction
        code = FRICTION_KINDS[law]
    except (TypeError, ValueError, KeyError):
        raise ConfigError(
            f"friction: expected None, ('chezy', C) or ('manning', n), got {friction!r}"
        ) from None
    key = f"friction ({law})"
    values = _coefficients(coef, xy, key, strict=law == "chezy")
    high = law == "manning"  # else Chézy: a coefficient too low
    wrong = values > MANNING_MAX if high else values < CHEZY_MIN
    if wrong.any():
        cell = int(np.flatnonzero(wrong)[0])
        name, side, bound, unit, usual, other = (
            ("Manning n", "above", MANNING_MAX, "s/m^(1/3)", "0.01-0.2", "chezy") if high
            else ("Chézy C", "below", CHEZY_MIN, "m^(1/2)/s", "20-100", "manning")
        )  # fmt: skip
        raise ConfigError(
            f"{key}: {values[cell]:g} in cell {cell} is {side} {bound:g} {unit}, not a {name} "
            f"(natural channels: {usual}); a coefficient of the law {other!r}?"
        )
    return code, values


def _interfacial(coef, layers: int, xy: np.ndarray) -> np.ndarray | None:
    """Per-cell ``c_i >= 0`` of ``interfacial_friction`` (two layers), or None."""
    if coef is None:
        return None
    if layers != 2:
        raise ConfigError("interfacial_friction: needs a two-layer model")
    return _coefficients(coef, xy, "interfacial_friction", strict=False)


def _coefficients(value, xy: np.ndarray, key: str, strict: bool) -> np.ndarray:
    """A friction coefficient per cell, finite and positive (``strict``) or >= 0; a bad
    value gives a one-line error naming ``key`` and the first bad cell."""
    try:
        values = _cell_values(value, xy, xy.shape[0], key)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: expected a number, an array or f(x, y), got {value!r}") from None
    ok = np.isfinite(values) & ((values > 0) if strict else (values >= 0))
    if not ok.all():
        cell = int(np.flatnonzero(~ok)[0])
        bound = "positive" if strict else ">= 0"
        raise ConfigError(
            f"{key}: the coefficient must be finite and {bound}, got {values[cell]!r} in cell "
            f"{cell}"
        )
    return values


def _wind(wind) -> WindTable | None:
    """The table of None, a :class:`~fvswe.forcing.Wind` or a dict of its keywords."""
    if wind is None:
        return None
    if isinstance(wind, dict):
        try:
            wind = Wind(**wind)
        except TypeError:
            raise ConfigError(f"wind: unknown key in {wind!r}") from None
    if not isinstance(wind, Wind):
        raise ConfigError(f"wind: expected None or Wind(...), got {wind!r}")
    return wind.table()


def _cell_values(value: Field, xy: np.ndarray, n: int, key: str) -> np.ndarray:
    """A per-cell array from an array, a scalar or a function of (x, y); ``key`` names
    the input in the error of a wrong length."""
    if callable(value):
        out = np.asarray(value(xy[:, 0], xy[:, 1]), dtype=np.float64)
    else:
        out = np.asarray(value, dtype=np.float64)
    try:
        return np.broadcast_to(out, (n,)).copy()
    except ValueError:
        raise ConfigError(f"{key}: expected {n} cell values, got shape {out.shape}") from None


def _periodic_mesh(mesh, pairs: list, boundary, s: Mapping[str, Any], join: bool = True):
    """``mesh`` with its periodic ``pairs`` joined (``join`` false: joined already). Refused:
    the implicit method (its C-grid reads the grid's sides) and a condition given on a
    joined tag."""
    a, b = pairs[0]
    if s["method"] != "explicit":
        raise ConfigError(f"method: {s['method']!r} is not available with periodic boundaries "
                          f"(tags {a!r} and {b!r}); use 'explicit'")  # fmt: skip
    joined = periodic(mesh, pairs) if join else mesh
    refuse_joined_conditions(pairs, boundary)
    return joined


def _with_threshold(model: Model, W0: np.ndarray, dtype: str, comm=None) -> Model:
    """``model`` with the default thin-layer threshold, scaled by the deepest column of ``W0``
    (over the ranks of ``comm``, each holding a part: the largest of the ranks', exact)."""
    depth = W0[:, list(model.depth_components)].sum(axis=1)
    scale = float(depth.max()) if depth.size else 0.0
    if comm is not None:
        scale = max(comm.allgather(scale))
    return replace(model, eps_h=thin_layer_threshold(scale, dtype))


def _on_any(comm, flag) -> bool:
    """``flag`` on this rank, or on any rank of ``comm`` (not None; collective)."""
    return bool(flag) if comm is None else any(comm.allgather(bool(flag)))


def _conditions(mesh, boundary, layers: int, H: np.ndarray, part, comm) -> tuple:
    """``(edge_bc, level tables)`` of ``boundary`` on ``mesh``; on a part (``part`` not None),
    checked against the whole mesh's tags, each discharge divided by its tag's length in
    the whole mesh (the partition's manifest) and the outflow edges' tables the whole mesh's
    (gathered over the ranks of ``comm``)."""
    if part is None:
        return edge_conditions(mesh, boundary), level_tables(mesh, boundary, layers, H)
    from .partfile import tags_present

    edge_bc = edge_conditions(mesh, boundary, present=tags_present(part.manifest))
    tags = [name for name in outflow_tags(boundary) if name in mesh.tags]
    drops = agreed(comm, lambda: outflow_drops(comm, part.part, mesh, H, tags))
    return edge_bc, level_tables(mesh, boundary, layers, H, lengths=part.manifest["tag_length"],
                                 outflow=drops, edge_ids=part.part.edges)  # fmt: skip


def _refuse_on_part(part, s, order, distributed, pairs) -> None:
    """One line naming the key of what a part cannot build alone yet (docs/PARALLEL.md, "Case
    inputs"): it needs the whole mesh, or data the part files do not carry. None: no part."""
    if part is None:
        return
    from .partfile import MANIFEST

    where = f"--parts {part.directory}"
    if not distributed:
        raise ConfigError(f"{where}: a run of one process has no parts (mpiexec -n P)")
    if part.manifest["order"] != order:
        raise ConfigError(f"{Path(part.directory) / MANIFEST}: cut in {part.manifest['order']!r} "
                          f"order, this run's is {order!r} (fvswe mesh partition --order "
                          f"{order})")  # fmt: skip
    joined = [tuple(pair) for pair in part.manifest.get("periodic", [])]
    if joined != list(pairs):
        cut = " ".join(f"--periodic {a}:{b}" for a, b in pairs) or "no --periodic"
        raise ConfigError(f"{Path(part.directory) / MANIFEST}: cut with the periodic pairs "
                          f"{joined}, this run's are {list(pairs)} (fvswe mesh partition "
                          f"{cut})")  # fmt: skip
    if s["method"] != "explicit":
        raise ConfigError(f"method: {s['method']!r}: explicit runs only ({where}: a rank "
                          "holding its part alone)")  # fmt: skip


def _source_cells(part, comm) -> Cells:
    """Where the sources are laid out: the whole mesh, or this rank's ``part`` (its owned
    cells, their global ids; sums over the ranks of ``comm``)."""
    return Cells() if part is None else Cells(comm, part.owned[0], part.part.cells)


def _reordered(mesh, order: str, *cell_arrays):
    """``(mesh in `order`, the per-cell arrays permuted alike)``; None arrays stay None."""
    mesh, perm = mesh.reordered(order)
    return mesh, tuple(None if a is None else take_rows(a, perm) for a in cell_arrays)


def _on_sphere(mesh, crs: str | None, radius: float, s: Mapping[str, Any], slide, coriolis,
               part=None):  # fmt: skip
    """``(mesh, metric)``: ``mesh`` (a rank's ``part`` of it: its edges summed in their global
    order) on the sphere (:func:`fvswe.mesh.sphere.on_sphere`) where ``crs`` is geographic
    (docs/SCHEMES.md §20), else ``(mesh, None)``. Refused on the sphere, in one line: the
    linear reconstruction, the implicit method, a slide and a planar Coriolis; a spherical
    Coriolis on a planar mesh."""
    from .ugrid import check_crs, is_geographic

    geographic = crs is not None and is_geographic(check_crs(crs, "crs"))
    if coriolis is not None and coriolis.sphere != geographic:
        raise ConfigError(f"coriolis: sphere = true needs a lon/lat mesh (crs EPSG:4326), "
                          f"this one is planar (crs {crs!r})" if coriolis.sphere else
                          f"coriolis: on a lon/lat mesh (crs {crs!r}) f is 2 Ω sin φ per cell: "
                          "give sphere = true, not f or latitude")  # fmt: skip
    if not geographic:
        return mesh, None
    for key, plain in (("reconstruction", "constant"), ("method", "explicit")):
        if s[key] != plain:
            raise ConfigError(f"{key}: {s[key]!r} is not available on a lon/lat mesh "
                              f"(crs {crs!r}); use {plain!r}")  # fmt: skip
    if slide is not None:
        raise ConfigError(f"slide: not available on a lon/lat mesh (crs {crs!r})")
    if not (isinstance(radius, (int, float)) and math.isfinite(radius) and radius > 0):
        raise ConfigError(f"radius: expected a positive number of metres, got {radius!r}")
    return on_sphere(mesh, float(radius), None if part is None else part.part.edges)


def _agreed(callback: Callable, comm) -> Callable:
    """``callback`` on every rank, then the first rank's exception (Ctrl-C, a failed write)
    raised on all of them, so the ranks stop at the same chunk and can checkpoint together."""

    def call(sim) -> None:
        error = None
        try:
            callback(sim)
        except Exception as exc:  # raised below on every rank
            error = exc
        first = next((e for e in comm.allgather(error) if e is not None), None)
        if first is not None:
            raise first

    return call


class Simulation:
    """A shallow-water run on any mesh: ``Simulation(mesh, ...).run(t_end)``.

    The run settings (``layers``, ``scheme``, ``cfl``, ``dtype``, ``backend``, ...: every
    row of :data:`fvswe.settings.SETTINGS`) are keywords whose defaults, meanings and checks
    are that table's, as for the case file's top-level keys (docs/guide/case-files.md); an
    unknown keyword is a TypeError. :attr:`settings` holds them as the run resolved them.

    Per-cell arrays in ``initial`` and ``H`` are in the order of ``mesh`` as
    given; functions are evaluated at the cell barycentres. ``order`` renumbers
    the cells internally (``none``, ``rcm``, ``gps``, ``random``, ``hilbert``,
    ``morton``, or ``auto``: the ordering ``benchmarks/reorder_impact.py`` found
    fastest on the backend, :data:`fvswe.mesh.orderings.AUTO`); :meth:`fields`
    always reports in the mesh's original order.

    ``dt_mode``: ``lagged`` (the paper's: each step uses the Δt from the
    previous step's speeds), ``nonlagged`` (Δt from the current speeds) or
    ``fixed`` (``dt``). The last step is clipped to hit ``t_end``.

    ``boundary`` maps each tag to ``"wall"``, ``"open"``, ``"outflow"`` (a free outflow
    down the bed's slope, :class:`fvswe.boundary.Outflow`), an imposed level
    (:class:`fvswe.boundary.Level`), discharge (:class:`~fvswe.boundary.Discharge`,
    :class:`~fvswe.boundary.UnitDischarge`), a non-reflecting far field
    (:class:`~fvswe.boundary.Characteristic`) or a periodic partner
    (:class:`~fvswe.boundary.Periodic`: the pair's edges joined into interior edges, the
    partner given no condition; not with the implicit method). ``friction`` is None,
    ``("chezy", C)`` or ``("manning", n)``: bottom friction on the one layer or the lower
    layer of two; ``interfacial_friction`` is ``c_i`` of the stress
    ``c_i |u1 - u2| (u1 - u2)`` between two layers (docs/SCHEMES.md §14). Each
    coefficient is a number, an array of one value per cell or a function of (x, y)
    (e.g. :func:`fvswe.raster.raster_field`); SI units, semi-implicit.
    ``coriolis`` is None, an f-plane's ``f`` (1/s) or a :class:`fvswe.forcing.Coriolis`
    (f from a latitude, beta-plane); ``wind`` a :class:`fvswe.forcing.Wind` acting on the
    upper (or only) layer (docs/SCHEMES.md §15). ``sources`` lists point sources and sinks
    (:class:`fvswe.sources.Source`) and rain or evaporation (:class:`fvswe.sources.Rain`),
    their volumes counted (docs/SCHEMES.md §16). ``slide`` (a :class:`fvswe.slide.Slide`)
    moves a rigid slide over the bed ``H``: the bed at each time is ``H`` minus the slide's
    thickness there (docs/SCHEMES.md §17); :meth:`fields` report the current bed. ``maxima`` (a
    :class:`fvswe.maxima.Maxima`, True for its defaults, or an arrival threshold in m) keeps
    maximum-value and arrival-time maps per cell, updated every step (docs/SCHEMES.md §18):
    :meth:`maxima`.

    ``crs`` names the coordinate reference system of the mesh's coordinates (EPSG:n or
    WKT): a geographic one (EPSG:4326, ...) means longitude/latitude in degrees, solved on a
    sphere of ``radius`` metres (docs/SCHEMES.md §20): velocities east and north,
    ``coriolis`` then ``Coriolis(sphere=True)`` (f = 2 Ω sin φ per cell); not with the
    linear reconstruction, the implicit method or a slide. A projected one changes nothing.

    ``eps_h`` is the thin-layer threshold (docs/SCHEMES.md §8); by default
    :func:`fvswe.model.thin_layer_threshold` of the largest initial total depth.

    ``backend`` is ``auto`` (the default: the GPU when CuPy sees one), ``cpu`` or ``gpu``;
    ``threads`` the CPU threads
    (the GPU runs none); ``backend_options`` the backend's own keywords (the GPU's ``variant``,
    ``block``, ``cells``, ``batch``, ``graphs``: :class:`fvswe.backends.gpu.GpuBackend`).
    ``fast_math`` compiles a float32 GPU run with approximate division and square root and
    denormals flushed (faster, no longer IEEE: docs/GPU.md, "Fast math"); a ConfigError on
    the CPU or in float64. ``entropy_fix=False`` runs Roe and IR-Roe without the
    Harten-Hyman entropy fix (docs/SCHEMES.md §3.6): the paper's schemes exactly; a
    ConfigError for the other schemes, which have none.

    ``method="implicit"`` runs the C-grid thesis's semi-implicit θ-scheme instead of the
    finite volumes (one layer, a Cartesian grid in row-major order, walls and levels;
    docs/IMPLICIT.md) with its own settings (``theta``, ``preconditioner``, ``cg_tol``, ...:
    the table's rows of that method); ``cfl`` is then the advective Courant number of its
    step and ``scheme`` is not used. A setting of the other method than the run's (the
    explicit ``integrator``, ``eps_h``, ``threads``, ``fast_math``, ``entropy_fix``; the
    implicit ``theta``, ...) must keep its default, and the implicit method refuses
    ``sources``, ``wind`` and ``coriolis``.

    A run stops with a :class:`~fvswe.errors.BlowUpError` (one line) when a depth
    had to be clipped, when a layer's mass drifts beyond round-off
    (:data:`MASS_TOLERANCE`; not checked with open boundaries, which have no
    flux counter), when a fixed ``dt`` exceeds the stable step (Courant number
    > 1) or when Δt collapses (:data:`DT_COLLAPSE`: a check interval advancing less than
    1e-6 of the first Δt a step, naming the cell whose stable step fell below that);
    ``allow_mass_error=True`` lets the first two pass (they stay counted
    in the summary).

    ``comm`` (an mpi4py communicator of more than one rank) spreads the run over
    its ranks (:mod:`fvswe.parallel`): every rank constructs the Simulation with
    the same arguments and calls the same methods; results are bitwise those of
    one process, and :meth:`state`, :meth:`fields` and :meth:`mass` are global
    on every rank (they are collective calls). ``part`` (CPU or GPU ranks, an
    :class:`~fvswe.parallel.OwnPart` of :func:`fvswe.parallel.read_own`, ``mesh`` then the
    rank's local mesh from its part file): the rank holds its part alone, its inputs evaluated
    at its own cells, nothing global built at set-up (docs/PARALLEL.md, "A rank holding its
    part alone"); what a part cannot build yet is a one-line ConfigError naming the key.
    """

    def __init__(
        self,
        mesh,
        *,
        H: Field = 0.0,
        initial: Mapping[str, Field] | None = None,
        boundary: Mapping[str, object] | None = None,
        friction: tuple[str, Field] | None = None,
        interfacial_friction: Field | None = None,
        coriolis: Coriolis | float | None = None,
        wind: Wind | None = None,
        sources: Sequence[Source | Rain] | None = None,
        slide: Slide | None = None,
        maxima: Maxima | None = None,
        crs: str | None = None,
        radius: float = RADIUS,
        allow_mass_error: bool = False,
        comm=None,
        backend_options: Mapping[str, Any] | None = None,
        part=None,
        **settings: Any,
    ) -> None:
        clock = SetupClock()
        s = run_settings.resolve(settings)
        layers, scheme, dtype, fast_math = s["layers"], s["scheme"], s["dtype"], s["fast_math"]
        if fast_math and dtype != "float32":
            raise ConfigError(f"fast_math: float32 only, got dtype {dtype!r}")
        eps_h = s["eps_h"]
        self.model = Model(layers=layers, g=s["g"], r=s["r"], eps_h=1.0 if eps_h is None else eps_h)
        self.allow_mass_error = allow_mass_error
        distributed = comm is not None and comm.size > 1
        cls = backend_class("cpu" if distributed and s["backend"] == "auto" else s["backend"])
        if fast_math and cls.name != "gpu":
            raise ConfigError(f"fast_math: the GPU backend only, this run is on the {cls.name}")
        order = resolve_order(s["order"], cls.name)  # "auto": the study's best for this backend
        self.scheme, self.dtype, self.order = scheme, dtype, order
        #: The periodic tag pairs, joined into interior edges (:class:`fvswe.boundary.Periodic`).
        self.periodic, boundary = periodic_pairs(boundary)
        self.part = part  # this rank's part alone (fvswe.parallel.read_own), or None
        _refuse_on_part(part, s, order, distributed, self.periodic)
        if self.periodic:  # a part file's mesh is joined already (fvswe mesh partition)
            mesh = _periodic_mesh(mesh, self.periodic, boundary, s, join=part is None)
        W0, Hc, kind, bottom, interfacial = self._cell_inputs(mesh, H, initial, friction,
                                                              interfacial_friction, s,
                                                              comm if part else None)  # fmt: skip
        clock.mark("initial_state")
        #: The run settings (:mod:`fvswe.settings`) as this run resolved them.
        self.settings = {**s, "order": order, "eps_h": self.model.eps_h,
                         "fast_math": bool(fast_math)}  # fmt: skip
        if order != "none" and part is None:  # a part file is in the run's order already
            mesh, (W0, Hc, bottom, interfacial) = _reordered(mesh, order, W0, Hc, bottom,
                                                             interfacial)  # fmt: skip
        clock.mark("reorder")
        self.coriolis = Coriolis.of(coriolis)
        #: The CRS of the mesh's coordinates; a geographic one puts the mesh on the sphere.
        self.crs = crs
        mesh, sphere = _on_sphere(mesh, crs, radius, s, slide, self.coriolis, part)
        edge_bc, levels = _conditions(mesh, boundary, layers, Hc, part, comm)
        self.friction, self.interfacial_friction = friction, interfacial_friction
        f = None if self.coriolis is None else self.coriolis.values(mesh.centroid[:, 1])
        self.mesh = mesh
        self._original: np.ndarray | None = None  # the original order, gathered when needed
        self.layout = Layout.build(
            mesh, self.model, W0, Hc, edge_bc, DTYPES[dtype],
            friction=(kind, bottom), interfacial=interfacial,
            levels=levels if levels.count else None, coriolis=f, wind=_wind(wind),
            sources=source_tables(mesh, sources, layers, _source_cells(part, comm)),
            slide=slide_table(slide, mesh.centroid, Hc),
            maxima=None if maxima is None else Maxima.of(maxima).arrival_threshold,
            sphere=sphere, linear=s["reconstruction"] != "constant", owned=part and part.owned,
        )  # fmt: skip
        clock.mark("layout")
        self.comm = comm if distributed else None
        self.backend = self._start_backend(cls, s, fast_math, backend_options)
        clock.mark("backend")
        self.mass_initial = self.mass()
        self.setup_stages = _setup_stages(clock, self.backend)
        self._closed = not _on_any(part and comm, np.any(edge_bc == OPEN))  # all counted
        self._identity: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._dt_first: float | None = None  # the mean Δt of the first check interval

    def _start_backend(self, cls, s: dict, fast_math: bool, backend_options: dict | None):
        """The backend that steps this run: ``cls`` (a distributed one over ``self.comm``), or
        the implicit method's (``method = "implicit"``)."""
        if s["method"] == "implicit":  # the C-grid θ-scheme (fvswe/implicit, docs/IMPLICIT.md)
            from . import implicit

            # "auto": the faster preconditioner on this device, recorded as the run's setting
            s = {**s, "preconditioner": resolve_preconditioner(s["preconditioner"], cls.name)}
            self.settings["preconditioner"] = s["preconditioner"]
            backend = implicit.make_backend(self.layout, cls.name, s, backend_options,
                                            self.comm is not None)  # fmt: skip
            self.scheme = backend.label
            return backend
        options = dict(cfl=s["cfl"], dt_mode=s["dt_mode"], dt_fixed=s["dt"], threads=s["threads"],
                       integrator=s["integrator"])  # fmt: skip
        if fast_math:
            options["fast_math"] = True
        if s["compensated"] and self.dtype == "float32":  # float64 needs no remainders
            options["compensated"] = True
        if not s["entropy_fix"]:  # the kernel without it (Roe, IR-Roe): a ConfigError for others
            options["entropy_fix"] = False
        if s["reconstruction"] != "constant":  # the CPU and GPU backends (one GPU: not ranks)
            options["reconstruction"] = s["reconstruction"]
        options.update(backend_options or {})
        if self.comm is None:
            return cls(self.layout, self.scheme, **options)
        from .parallel import DistributedBackend

        if self.part is not None:
            return DistributedBackend(None, self.layout, self.comm, cls, self.scheme,
                                      own=self.part, **options)  # fmt: skip
        return DistributedBackend(self.mesh, self.layout, self.comm, cls, self.scheme, **options)

    def _cell_inputs(self, mesh, H: Field, initial, friction, interfacial, s, ranks) -> tuple:
        """``(W0, H, friction code, friction and interfacial coefficients)`` per cell of
        ``mesh``, checked (:meth:`_initial_state`, :func:`_friction`, :func:`_interfacial`,
        dry cells); the model given its default thin-layer threshold (no ``eps_h``). On a
        part (``ranks``, the communicator) an error on any rank is raised on all of them and
        the threshold's scale is the whole mesh's."""

        def inputs() -> tuple:
            W0, Hc = self._initial_state(mesh, H, initial)
            kind, bottom = _friction(friction, mesh.centroid)
            return W0, Hc, kind, bottom, _interfacial(interfacial, s["layers"], mesh.centroid)

        out = agreed(ranks, inputs)
        if s["eps_h"] is None:
            self.model = _with_threshold(self.model, out[0], s["dtype"], ranks)
        if s["method"] == "explicit":  # the implicit method dries faces, not schemes' cells
            agreed(ranks, lambda: refuse_dry_cells(s["scheme"], s["layers"], out[0][:, 0],
                                                       self.model.eps_h, mesh.source))  # fmt: skip
        return out

    def _initial_state(self, mesh, H: Field, initial) -> tuple[np.ndarray, np.ndarray]:
        """``(W0, H)`` per cell in the mesh's order: the packed initial state, checked for
        unknown fields, values that are not finite and negative depths, and the bed."""
        n = mesh.n_cells
        Hc = _cell_values(H, mesh.centroid, n, "initial H")
        values = {
            name: _cell_values(v, mesh.centroid, n, f"initial {name}")
            for name, v in (initial or {}).items()
        }
        unknown = sorted(set(values) - set(self.model.fields))
        if unknown:
            raise ConfigError(
                f"initial: unknown field {unknown[0]!r} (fields: {', '.join(self.model.fields)})"
            )
        for name, v in {"H": Hc, **values}.items():
            check_finite(v, f"initial {name}")
        W0 = self.model.pack(values, n)
        for c in self.model.depth_components:
            bad = np.flatnonzero(~(W0[:, c] >= 0))
            if bad.size:
                i = bad[0]
                (x, y), depth = mesh.centroid[i], float(Hc[i])
                hint = (f"; H there is {depth:g} m, a bed above the reference level: H is a "
                        "depth, positive down (elevations: mesh.bathymetry or --bathymetry "
                        "z:elevation)" if depth < 0 else "")  # fmt: skip
                raise ConfigError(
                    f"initial {self.model.fields[c]}: {float(W0[i, c]):g} m in cell {i} at "
                    f"({x:.4g}, {y:.4g}) of {mesh.source}, {bad.size} cell(s) with a negative "
                    f"depth{hint}"
                )
        return W0, Hc

    # -- state -------------------------------------------------------------------------------
    @property
    def ranks(self) -> int:
        """MPI ranks the run is spread over (1: a single process)."""
        return 1 if self.comm is None else self.comm.size

    @property
    def is_root(self) -> bool:
        """Whether this process writes files and prints (rank 0, or a single process)."""
        return self.comm is None or self.comm.rank == 0

    @property
    def t(self) -> float:
        return self.backend.t

    @property
    def steps(self) -> int:
        return self.backend.steps

    @property
    def n_cells(self) -> int:
        """The whole mesh's cells (a part's run: the manifest's count)."""
        return self.mesh.n_cells if self.part is None else self.part.cells

    @property
    def n_edges(self) -> int:
        """The whole mesh's edges (a part's run: the manifest's count)."""
        return self.mesh.n_edges if self.part is None else self.part.edges

    @property
    def open_boundaries(self) -> bool:
        """Whether any edge of the whole mesh is open (volume leaves it uncounted)."""
        return not self._closed

    def _cells(self, a: np.ndarray) -> np.ndarray:
        """A per-cell array of this rank's mesh over the whole mesh, in layout order: itself,
        or on a part the ranks' owned rows gathered (collective; the outputs' gather)."""
        return a if self.part is None else self.backend.whole(a)

    @property
    def _to_original(self) -> np.ndarray:
        """The layout's cells in the mesh's original order (gathered once on a part)."""
        if self._original is None:
            self._original = inverse_permutation(self._cells(self.mesh.original_index))
        return self._original

    def state(self) -> np.ndarray:
        """The state ``(L, nvar)`` in the mesh's original cell order."""
        return self.backend.get_state()[self._to_original]

    def fields(self) -> dict[str, np.ndarray]:
        """Cell fields in the original cell order: x, y, area, H, the state, surfaces."""
        o = self._to_original
        xy = self._cells(self.mesh.centroid)
        return self._with_surfaces({
            "x": xy[o, 0],
            "y": xy[o, 1],
            "area": self._cells(self.mesh.area)[o],
            "H": self._cells(self.bed())[o].astype(np.float64),
            **self.model.unpack(self.state().astype(np.float64)),
        })  # fmt: skip

    def part_fields(self) -> dict[str, np.ndarray]:
        """On a rank holding its part alone: :meth:`fields` of its owned cells (its order),
        and ``cell``, each one's number in the mesh's original order. Nothing is gathered."""
        n = self.part.part.n_owned
        xy = self.mesh.centroid[:n]
        return self._with_surfaces({
            "cell": self.mesh.original_index[:n],
            "x": xy[:, 0],
            "y": xy[:, 1],
            "area": self.mesh.area[:n],
            "H": self.bed()[:n].astype(np.float64),
            **self.model.unpack(self.backend.local.get_state()[:n].astype(np.float64)),
        })  # fmt: skip

    def _with_surfaces(self, out: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``out`` with the free surface (and interface) of its depths and bed."""
        if self.model.layers == 2:
            out["eta1"] = out["h1"] + out["h2"] - out["H"]
            out["eta2"] = out["h2"] - out["H"]
        else:
            out["eta"] = out["h"] - out["H"]
        return out

    def bed(self) -> np.ndarray:
        """The bed depth ``H`` of each cell now, in the layout's order and dtype: the static bed,
        or with a moving bed its depth at :attr:`t` (a function of the cell centre and the time
        alone: the bits every backend and rank holds)."""
        lay = self.layout
        return lay.H if lay.slide is None else bed_at(lay.slide, self.t, lay.dtype)

    def maxima(self) -> dict[str, np.ndarray]:
        """The maximum and arrival maps so far (:data:`fvswe.maxima.NAMES`), cell fields in the
        original cell order; a ConfigError for a run without ``maxima``. Collective on several
        ranks."""
        if self.layout.maxima is None:
            raise ConfigError("maxima: this run keeps no maps (give maxima=Maxima(...))")
        return maxima_fields(self.backend.maxima()[self._to_original], self.model.layers)

    def mass(self) -> list[float]:
        """Volume of each layer, ``Σ |V_i| h_k,i``, summed in float64."""
        return self.backend.layer_mass(self.mesh.area)

    # -- restarts ----------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """What a run continuing from this one's snapshots must share with it: the mesh, the
        identity settings, fingerprints of the boundaries and source terms
        (:func:`fvswe.restart.identity`; JSON values)."""
        if self._identity is None:  # fixed for the run's life: computed once
            self._identity = restart.identified(self)
        return dict(self._identity[0])

    def snapshot(self) -> dict[str, Any]:
        """Everything a bit-for-bit restart needs: the backend's state and clock (``W``, ``t``,
        ``steps``, ``dt``, ``counters``; the implicit method's staggered state ``zeta``, ``u``,
        ``v`` too: :func:`fvswe.restart.state_arrays`), ``mass_initial``, the run's
        :meth:`identity` and ``identity_details`` (readable values behind its fingerprints,
        for the message of a mismatch). Collective on several ranks;
        :func:`fvswe.output.save_checkpoint` writes it. A rank holding its part alone gives
        its part's rows with their global ids (``cells``, ``owned``), which
        :func:`fvswe.partout.save_checkpoint` writes and :meth:`restore` takes back."""
        identity = self.identity()  # and its details, cached with it
        maps = (
            {} if self.layout.maxima is None else {"maxima_threshold": np.array(self.layout.maxima)}
        )
        return {
            **self.backend.snapshot(),
            **maps,
            "mass_initial": list(self.mass_initial),
            "identity": identity,
            "identity_details": {key: dict(d) for key, d in self._identity[1].items()},
        }

    def restore(self, snap: Mapping[str, Any]) -> None:
        """Continue from ``snap`` (:meth:`snapshot`, or :func:`fvswe.output.load_checkpoint`):
        the state, clock, counters and initial masses of that moment, so the run goes on bit
        for bit. A one-line ConfigError, before anything changes, when the snapshot belongs
        to another run (naming the first setting that differs and both values) or holds an
        invalid state. Collective on several ranks (every rank passes the same ``snap``)."""
        restart.check(self, snap)
        self.backend.restore(
            {"W": snap["W"], "t": float(snap["t"]), "steps": int(snap["steps"]),
             "dt": float(snap["dt"]), "counters": dict(snap["counters"]),
             **{key: np.asarray(snap[key]) for key in restart.state_arrays(self)},
             **({} if self.layout.maxima is None else {"maxima": np.asarray(snap["maxima"])})}
        )  # fmt: skip
        self.mass_initial = [float(m) for m in snap["mass_initial"]]

    # -- running -----------------------------------------------------------------------------
    def run(
        self,
        t_end: float,
        *,
        max_steps: int | None = None,
        check_every: int | None = None,
        callback: Callable[[Simulation], None] | None = None,
    ) -> RunSummary:
        """Advance to ``t_end``; every ``check_every`` steps look for a blow-up and call back.

        ``check_every`` defaults to the backend's (the GPU's is larger: a look costs a
        device sync).
        """
        check_every = check_every or self.backend.check_every
        if not t_end >= self.t:
            raise ConfigError(f"t_end: {t_end!r} lies before the current time {self.t!r}")
        levels = self.layout.levels
        end = levels.end(self.layout.edge_bc) if levels is not None else None
        if end is not None and t_end > end[0]:
            raise ConfigError(
                f"t_end: {t_end:g} s lies past the end of {end[1]} (t = {end[0]:g} s)"
            )
        wind = self.layout.wind
        end = wind.end() if wind is not None else None
        if end is not None and t_end > end:
            raise ConfigError(
                f"t_end: {t_end:g} s lies past the end of the wind series (t = {end:g} s)"
            )
        limit = math.inf if max_steps is None else max_steps
        if self.comm is not None:  # every rank takes the same chunks (rank 0's timing decides)
            check_every, limit = self.comm.bcast((check_every, limit))
            if callback is not None:
                callback = _agreed(callback, self.comm)
        start = time.perf_counter()
        taken, checks, check_s = 0, 0, 0.0
        while self.t < t_end and taken < limit:
            chunk = int(min(check_every, limit - taken))
            before, t0 = self.steps, self.t
            self.backend.advance(t_end, chunk)
            taken += self.steps - before
            looked = time.perf_counter()
            self._check()
            checks, check_s = checks + 1, check_s + time.perf_counter() - looked
            self._check_progress(self.t - t0, self.steps - before, t_end)
            if callback is not None:
                callback(self)
        summary = self.summary(time.perf_counter() - start, taken)
        return replace(summary, check_s=check_s, checks=checks)

    def summary(self, wall: float, steps: int) -> RunSummary:
        """The :class:`RunSummary` of the current state after ``steps`` steps in ``wall``
        seconds (what :meth:`run` returns; a caller that stopped a run itself asks here)."""
        return RunSummary(
            t=self.t,
            steps=steps,
            wall_s=wall,
            cells=self.n_cells,
            scheme=self.scheme,
            backend=self.backend.name,
            dtype=self.dtype,
            order=self.order,
            mass=self.mass(),
            mass_initial=self.mass_initial,
            counters=self.backend.counters(),
            threads=self.backend.threads,
        )

    def _where(self, cell: int) -> str:
        """``cell N at (x, y)``: the original number and the barycentre of internal cell
        (on a part: its number in the run's order, the rank that found it alone holding it)."""
        if self.part is not None:
            return f"cell {cell} of the run's order"
        x, y = self.mesh.centroid[cell]
        return f"cell {int(self.mesh.original_index[cell])} at ({x:.4g}, {y:.4g})"

    def _check_progress(self, advanced: float, steps: int, t_end: float) -> None:
        """Raise a one-line BlowUpError when Δt has collapsed: a check interval that stopped
        short of ``t_end`` (so no step of it was clipped) and advanced less than
        :data:`DT_COLLAPSE` times the run's first Δt a step, or took no time or no step at all.
        The same on every rank: ``t`` and ``steps`` are global."""
        reached = self.t >= t_end  # only then may the interval's last step be clipped
        if self._dt_first is None and advanced > 0 and (steps >= 2 or not reached):
            self._dt_first = advanced / steps  # a clipped last step costs it at most half
            self.backend.watch_dt(DT_COLLAPSE * self._dt_first)
        floor = 0.0 if self._dt_first is None else DT_COLLAPSE * self._dt_first
        if reached or (steps and advanced > floor * steps):
            return
        slow = self.backend.first_below_floor
        where = ""
        if slow is not None:
            cell, step, t = slow
            place = f" in {self._where(cell)}" if cell >= 0 else ""  # the GPU names none
            where = (f"; a stable step first fell below {floor:.3g} s{place} "
                     f"at step {step + 1} (t = {t:.6g} s)")  # fmt: skip
        pace = f"{advanced / steps:.3g} s a step over {steps} steps" if steps else "no step"
        first = "" if self._dt_first is None else f" of the first steps' {self._dt_first:.3g} s"
        raise BlowUpError(
            f"dt collapsed: {pace} (below {DT_COLLAPSE:g}{first}) by step {self.steps}, "
            f"t = {self.t:.6g} s{where}"
        )

    def _check(self) -> None:
        """Raise a one-line BlowUpError on an invalid state, a Courant number above 1 with a
        fixed dt, or (unless ``allow_mass_error``) a clipped depth or a mass drift."""
        bad = self.backend.first_invalid()
        if bad is not None:
            cell, comp = bad
            value = self.backend.get_state()[cell, comp]
            raise BlowUpError(
                f"state blew up: {self.model.fields[comp]} = {value:g} in {self._where(cell)} "
                f"by step {self.steps}, t = {self.t:.6g} s"
            )
        courant = self.backend.courant_violation
        if courant is not None:
            cell, step, t, number = courant
            raise BlowUpError(
                f"dt: the fixed step exceeds the stable one at step {step + 1} (t = {t:.6g} s): "
                f"Courant number up to {number:.4g} > 1, first in {self._where(cell)}"
            )
        if self.allow_mass_error:
            return
        breaches = sorted(self._breaches(), key=lambda b: -b[0])
        if breaches:
            text = "; also ".join(sentence for _, sentence in breaches)
            raise BlowUpError(f"{text}; allow_mass_error / --allow-mass-error to continue")

    def _breaches(self) -> list[tuple[float, str]]:
        """The volume's breaches so far, each ``(m^3, its sentence)``: a negative depth clipped
        (the m^3 the clipping added; the GPU does not measure it: ranked first) and each
        layer's mass drift beyond round-off (closed runs). The stop names the largest first:
        a layer that lost far more than a clip added is the news, not the clip."""
        out = []
        clip = self.backend.first_clip
        if clip is not None:
            cell, step, t = clip
            counters = self.backend.counters()
            volume = counters.get("clipped_volume", math.inf)
            if math.isfinite(volume):
                amount = f"the clipping added {volume:.3g} m^3"
            else:  # the GPU counts clips, not their volume: the mass change shows it
                change = (m - m0 for m, m0 in zip(self.mass(), self.mass_initial, strict=True))
                amount = "layer volumes changed by " + ", ".join(f"{d:.3g}" for d in change)
                amount += " m^3"
            out.append((volume, f"positivity lost: a negative depth was clipped to 0 in "
                                f"{self._where(cell)} at step {step + 1} (t = {t:.6g} s); "
                                f"{amount} by step {self.steps}"))  # fmt: skip
        if self._closed:
            summary = self.summary(0.0, 0)
            tol = MASS_TOLERANCE[self.dtype]
            masses = zip(summary.mass_error, summary.mass, summary.mass_initial, strict=True)
            for k, (err, m, m0) in enumerate(masses):
                scale = max(abs(m), abs(m0))
                d = err / scale if scale else 0.0
                if d > tol:
                    name = self.model.fields[self.model.depth_components[k]]
                    out.append((err, f"mass of {name} changed by {d:.3g} (relative; round-off "
                                     f"is <= {tol:g}), {err:.3g} m^3, by step {self.steps}, "
                                     f"t = {self.t:.6g} s"))  # fmt: skip
        return out


def _setup_stages(clock: SetupClock, backend) -> dict[str, float]:
    """Seconds of a set-up's stages (the backend's own within ``backend``, as ``backend_*``),
    for ``fvswe run --json``'s ``setup_stages``."""
    own = getattr(backend, "setup_stages", None) or {}
    return {**clock.stages, **{f"backend_{k}": v for k, v in own.items()}}
