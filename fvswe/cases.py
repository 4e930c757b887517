"""Named problems from the source papers (docs/CASES.md), runnable from Python and the CLI.

The paper's two-layer tests run on its mesh family; the single-layer C-grid
and drop cases (docs/CASES.md §B, §C) run on a Cartesian :class:`~fvswe.grid.Grid`
whose size ``Case.grid(nx, ny)`` (CLI ``--nx/--ny``) may change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from .boundary import Level
from .errors import ConfigError
from .grid import Grid
from .settings import default
from .simulation import Simulation

Fn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Case:
    """A named problem: physics, bathymetry, initial state, default mesh and end time.

    Grid cases set ``extent`` (Lx, Ly in m, lower-left corner at the origin)
    and ``grid_size`` (nx, ny); their mesh is that grid's. ``friction``,
    ``dt_mode`` and ``dt`` are passed to :class:`Simulation` when set.
    """

    name: str
    summary: str
    layers: int
    H: Fn
    initial: Mapping[str, Fn]
    t_end: float
    r: float = default("r")
    g: float = default("g")
    cfl: float = default("cfl")
    scheme: str = default("scheme")
    mesh_cells: int = 4000
    boundary: Mapping[str, object] | None = field(default=None)
    extent: tuple[float, float] | None = None
    grid_size: tuple[int, int] | None = None
    friction: tuple[str, float] | None = None
    dt_mode: str | None = None
    dt: float | None = None

    @property
    def is_grid(self) -> bool:
        return self.extent is not None

    def grid(self) -> Grid:
        """The Cartesian grid of a grid case (``grid_size`` cells over ``extent``)."""
        if not self.is_grid:
            raise ConfigError(f"case {self.name!r} runs on a mesh, not a Cartesian grid")
        (lx, ly), (nx, ny) = self.extent, self.grid_size
        return Grid(nx, ny, lx / nx, ly / ny)

    def with_grid(self, nx: int | None = None, ny: int | None = None) -> Case:
        """This grid case on ``nx`` by ``ny`` cells; a missing one keeps the cells square.

        The simulated time ``t_end`` never changes; a case with a fixed time
        step keeps its Courant number: ``dt`` scales with the smaller cell side
        (so the number of steps changes).
        """
        if not self.is_grid:
            raise ConfigError(f"--nx/--ny: case {self.name!r} runs on a mesh, not a grid")
        lx, ly = self.extent
        for name, n in (("nx", nx), ("ny", ny)):
            if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
                raise ConfigError(f"{name}: must be a positive integer, got {n!r}")
        if nx is None and ny is None:
            return self
        nx = nx if nx is not None else max(1, round(ny * lx / ly))
        ny = ny if ny is not None else max(1, round(nx * ly / lx))
        if self.dt is None:
            return replace(self, grid_size=(nx, ny))
        (nx0, ny0) = self.grid_size
        scale = min(lx / nx, ly / ny) / min(lx / nx0, ly / ny0)
        return replace(self, grid_size=(nx, ny), dt=self.dt * scale)

    def options(self) -> dict:
        """The :class:`Simulation` keywords this case sets beyond the common ones."""
        extra = {"friction": self.friction, "dt_mode": self.dt_mode, "dt": self.dt}
        return {k: v for k, v in extra.items() if v is not None}

    def default_mesh(self):
        """The grid's mesh, or the bundled member of the paper's family the case runs on."""
        if self.is_grid:
            return self.grid().mesh()
        from .mesh import family

        return family(self.mesh_cells)

    def simulation(self, mesh=None, **options) -> Simulation:
        """A :class:`Simulation` of this case; ``options`` override the case's defaults."""
        kwargs = dict(
            layers=self.layers,
            scheme=self.scheme,
            g=self.g,
            r=self.r,
            H=self.H,
            initial=self.initial,
            boundary=self.boundary,
            cfl=self.cfl,
            **self.options(),
        )
        kwargs.update(options)
        return Simulation(self.default_mesh() if mesh is None else mesh, **kwargs)


def _test1_h1(x, y):
    return np.where(np.hypot(x, y) > 1.5, 4.0, 0.5)


def _test2_H(x, y):
    return 1.0 - 1.5 * np.exp(-(x**2) - y**2)


# -- single layer on a Cartesian grid (docs/CASES.md §B, §C); H is positive down, eta = h - H ---
WALLS = {"west": "wall", "east": "wall", "south": "wall", "north": "wall"}


def _gauss(x, y, x0, y0, sigma):
    return np.exp(-((x - x0) ** 2 + (y - y0) ** 2) / (2.0 * sigma**2))


def _drop_h(x, y):
    """cgrid-drop: still depth 1 m plus a 0.1 m Gaussian of sigma 10 m at the centre."""
    return 1.0 + 0.1 * _gauss(x, y, 100.0, 100.0, 10.0)


def _island_H(x, y):
    """cgrid-island: depth 1 m, a Gaussian island (sigma 15 m) topping out 3 cm above water."""
    return 1.0 - 1.03 * _gauss(x, y, 130.0, 100.0, 15.0)


def _island_h(x, y):
    """Still water (eta = 0) plus a 0.1 m drop of sigma 8 m at (70, 100); dry on the island."""
    return np.maximum(0.1 * _gauss(x, y, 70.0, 100.0, 8.0) + _island_H(x, y), 0.0)


def _marsh_bed(x, y):
    """cgrid-tide: bed elevation rising linearly 0 -> 4.5 m over x in [0, 250] m, flat beyond."""
    return 4.5 * np.minimum(np.asarray(x) / 250.0, 1.0)


def _tide(t):
    """Imposed level at the west side: 3 + 2 sin(2 pi t / 12 h) m."""
    return 3.0 + 2.0 * np.sin(2.0 * math.pi * np.asarray(t) / 43200.0)


#: tidal-basin (ours): 100 km x 50 km, the bed falling from 50 m deep at the east wall to
#: 100 m at the open west side, an M2 tide of 1 m amplitude there, switched on smoothly over
#: ``ramp`` seconds (Delft3D's smoothing time: a sudden start rings the basin's seiches).
BASIN = {"length": 100e3, "width": 50e3, "deep": 100.0, "shallow": 50.0, "amplitude": 1.0,
         "period": 44712.0, "ramp": 10800.0}  # fmt: skip


def _basin_H(x, y):
    """tidal-basin: depth 100 m at x = 0 falling linearly to 50 m at the east wall."""
    b = BASIN
    return b["deep"] + (b["shallow"] - b["deep"]) * np.asarray(x) / b["length"] + 0.0 * y


def _basin_tide(t):
    """The M2 tide at the west side, ramped: ``A sin(2 pi t / T) (1 - exp(-(t / ramp)^2))``."""
    t = np.asarray(t)
    b = BASIN
    return (
        b["amplitude"]
        * np.sin(2.0 * math.pi * t / b["period"])
        * (1.0 - np.exp(-((t / b["ramp"]) ** 2)))
    )


#: cgrid-tide-islands (positions ours): two Gaussian islands, sigma 25 m, tops 6 m (always dry).
ISLANDS = ((150.0, 200.0), (200.0, 420.0))


def _islands_bed(x, y):
    bed = _marsh_bed(x, y)
    for x0, y0 in ISLANDS:
        bed = np.maximum(bed, 6.0 * _gauss(x, y, x0, y0, 25.0))
    return bed


def _mjos_h(x, y):
    """mjos-drop: 1 + 3.5 exp(-10 (xi^2 + eta^2)), xi and eta spanning [-1, 1] over 19.2 m."""
    xi = 2.0 * x / 19.2 - 1.0
    eta = 2.0 * y / 19.2 - 1.0
    return 1.0 + 3.5 * np.exp(-10.0 * (xi**2 + eta**2))


def _tide_case(name: str, summary: str, bed) -> Case:
    return Case(
        name=name,
        summary=summary,
        layers=1,
        scheme="hll-wd",
        H=lambda x, y: -bed(x, y),
        initial={"h": lambda x, y: np.maximum(3.0 - bed(x, y), 0.0)},
        t_end=86400.0,
        boundary={**WALLS, "west": Level(_tide)},
        friction=("chezy", 65.0),
        dt_mode="nonlagged",
        extent=(600.0, 600.0),
        grid_size=(192, 192),
    )


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case(
            name="test1",
            summary="two layers, internal circular dam break (H = 6, r = 0.5), walls, t = 0.1 s",
            layers=2,
            r=0.5,
            H=lambda x, y: np.full_like(x, 6.0),
            initial={"h1": _test1_h1, "h2": lambda x, y: 6.0 - _test1_h1(x, y)},
            t_end=0.1,
        ),
        Case(
            name="test2",
            summary="two unstable layers over a Gaussian bump (r = 0.98), walls, t = 0.1 s",
            layers=2,
            r=0.98,
            H=_test2_H,
            initial={
                "h1": lambda x, y: np.where(x >= 0, 4.0, 0.5),
                "h2": lambda x, y: np.where(x >= 0, 0.5, 4.0),
            },
            t_end=0.1,
        ),
        Case(
            name="cgrid-drop",
            summary="one layer, 200 m basin 1 m deep, 0.1 m Gaussian drop, walls, 1000 x 0.1 s",
            layers=1,
            scheme="hll-wd",
            H=lambda x, y: np.full_like(x, 1.0),
            initial={"h": _drop_h},
            t_end=100.0,
            boundary=WALLS,
            dt_mode="fixed",
            dt=0.1,
            extent=(200.0, 200.0),
            grid_size=(200, 200),
        ),
        Case(
            name="cgrid-island",
            summary="one layer, drop beside an island emerging 3 cm (wet/dry), walls, 1000 x 0.1 s",
            layers=1,
            scheme="hll-wd",
            H=_island_H,
            initial={"h": _island_h},
            t_end=100.0,
            boundary=WALLS,
            dt_mode="fixed",
            dt=0.1,
            extent=(200.0, 200.0),
            grid_size=(200, 200),
        ),
        _tide_case(
            "cgrid-tide",
            "one layer, 600 m salt marsh flooding and drying with a 12 h tide (level 1-5 m) "
            "at the west side, Chezy 65, 24 h",
            _marsh_bed,
        ),
        _tide_case(
            "cgrid-tide-islands",
            "cgrid-tide with two islands that stay dry (positions ours), 24 h",
            _islands_bed,
        ),
        Case(
            name="tidal-basin",
            summary="one layer, 100 km basin 100-50 m deep, M2 tide of 1 m at the west side "
            "(ramped over 3 h), Chezy 65, 24 h: gravity waves, not the flow, limit the "
            "explicit step",
            layers=1,
            scheme="hll-wd",
            H=_basin_H,
            initial={"h": _basin_H},
            t_end=86400.0,
            boundary={**WALLS, "west": Level(_basin_tide, every=60.0, until=10 * 86400.0)},
            friction=("chezy", 65.0),
            dt_mode="nonlagged",
            extent=(BASIN["length"], BASIN["width"]),
            grid_size=(200, 100),
        ),
        Case(
            name="mjos-drop",
            summary="one layer, 64x64 basin of 19.2 m, a 3.5 m Gaussian drop on 1 m, walls, "
            "5000 x 0.01 s",
            layers=1,
            scheme="hll-wd",
            H=lambda x, y: np.zeros_like(x),
            initial={"h": _mjos_h},
            t_end=50.0,
            boundary=WALLS,
            dt_mode="fixed",
            dt=0.01,
            extent=(19.2, 19.2),
            grid_size=(64, 64),
        ),
    )
}


def get_case(name: str) -> Case:
    """The named case, or a one-line error listing the names."""
    try:
        return CASES[name]
    except KeyError:
        raise ConfigError(f"unknown case {name!r} (choose from {', '.join(CASES)})") from None
