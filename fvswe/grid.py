"""Cartesian adapter: a structured grid becomes a Mesh of quads, and cell fields become 2-D arrays.

Cell ``(ix, iy)`` (column ``ix`` along x, row ``iy`` along y) is cell number
``iy * nx + ix`` of the mesh: row-major, so a per-cell field in mesh order is a
``(ny, nx)`` array by a reshape (:meth:`Grid.as_array`) and back by a ravel
(:meth:`Grid.from_array`). The four sides are boundary tags ``west`` (x = x0),
``east``, ``south`` (y = y0) and ``north``. Everything then runs through the
same finite-volume pipeline as a triangular mesh (ARCHITECTURE.md)::

    grid = Grid(200, 100, dx=1.0, dy=1.0)
    sim = Simulation(grid.mesh(), layers=1, scheme="hll-wd",
                     H=grid.cell_values(depth_2d),          # (ny, nx) array or f(x, y)
                     initial={"h": grid.cell_values(h_2d)})
    sim.run(60.0)
    h = grid.as_array(sim.fields()["h"])                    # (ny, nx) again
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .errors import ConfigError
from .mesh import Mesh

Field = np.ndarray | float | Callable[[np.ndarray, np.ndarray], np.ndarray]
SIDES = ("west", "east", "south", "north")


@dataclass(frozen=True)
class Grid:
    """``nx`` by ``ny`` cells of ``dx`` by ``dy``, the lower-left corner at ``origin``."""

    nx: int
    ny: int
    dx: float
    dy: float
    origin: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        for name in ("nx", "ny"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ConfigError(f"grid: {name} must be a positive integer, got {value!r}")
        for name in ("dx", "dy"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
                raise ConfigError(f"grid: {name} must be a positive number, got {value!r}")
        object.__setattr__(self, "origin", (float(self.origin[0]), float(self.origin[1])))

    # -- geometry ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """``(ny, nx)``: the shape of a cell field as a 2-D array."""
        return (self.ny, self.nx)

    @property
    def n_cells(self) -> int:
        return self.nx * self.ny

    @property
    def x_nodes(self) -> np.ndarray:
        """x of the ``nx + 1`` grid lines (``x0 + ix dx``; the same formula as y, for symmetry)."""
        return self.origin[0] + np.arange(self.nx + 1) * float(self.dx)

    @property
    def y_nodes(self) -> np.ndarray:
        return self.origin[1] + np.arange(self.ny + 1) * float(self.dy)

    @property
    def x(self) -> np.ndarray:
        """Cell-centre x axis, ``(nx,)``."""
        return self.origin[0] + (np.arange(self.nx) + 0.5) * float(self.dx)

    @property
    def y(self) -> np.ndarray:
        """Cell-centre y axis, ``(ny,)``."""
        return self.origin[1] + (np.arange(self.ny) + 0.5) * float(self.dy)

    def centres(self) -> tuple[np.ndarray, np.ndarray]:
        """Cell-centre coordinates ``(x, y)``, each ``(ny, nx)``."""
        return np.meshgrid(self.x, self.y)

    # -- fields ------------------------------------------------------------------------------
    def as_array(self, field) -> np.ndarray:
        """A per-cell field in mesh order as a ``(ny, nx)`` array (a view where possible)."""
        a = np.asarray(field)
        if a.shape[:1] != (self.n_cells,):
            raise ConfigError(
                f"grid: expected {self.n_cells} cell values (mesh order), got shape {a.shape}"
            )
        return a.reshape(self.shape + a.shape[1:])

    def from_array(self, array) -> np.ndarray:
        """The inverse of :meth:`as_array`: a ``(ny, nx)`` array as ``(nx*ny,)`` in mesh order."""
        a = np.asarray(array)
        if a.shape[:2] != self.shape:
            raise ConfigError(f"grid: expected a {self.shape} array (ny, nx), got shape {a.shape}")
        return a.reshape((self.n_cells,) + a.shape[2:])

    def cell_values(self, field: Field) -> np.ndarray:
        """Per-cell float64 values in mesh order from a ``(ny, nx)`` array, a scalar or ``f(x, y)``.

        Functions are evaluated at the exact cell centres.
        """
        if callable(field):
            x, y = self.centres()
            field = field(x, y)
        a = np.asarray(field, dtype=np.float64)
        if a.ndim == 0:
            return np.full(self.n_cells, float(a))
        return self.from_array(np.broadcast_to(a, self.shape)).copy()

    # -- the mesh ----------------------------------------------------------------------------
    def mesh(self, depth: Field | None = None) -> Mesh:
        """The grid as a :class:`~fvswe.mesh.Mesh` of quads, tagged ``west/east/south/north``.

        ``depth`` (H, the bottom below the reference level, positive down) from a
        ``(ny, nx)`` array, a scalar or ``f(x, y)`` becomes the mesh's ``depth``.
        """
        base = self._mesh
        if depth is None:
            return base
        return replace(base, depth=self.cell_values(depth))

    @functools.cached_property
    def _mesh(self) -> Mesh:
        nx, ny = self.nx, self.ny
        X, Y = np.meshgrid(self.x_nodes, self.y_nodes)
        nodes = np.stack((X.ravel(), Y.ravel()), axis=1)
        node = np.arange((nx + 1) * (ny + 1), dtype=np.int64).reshape(ny + 1, nx + 1)
        cells = np.stack(
            (node[:-1, :-1], node[:-1, 1:], node[1:, 1:], node[1:, :-1]), axis=-1
        ).reshape(-1, 4)
        tags = {
            "west": np.stack((node[:-1, 0], node[1:, 0]), axis=1),
            "east": np.stack((node[:-1, nx], node[1:, nx]), axis=1),
            "south": np.stack((node[0, :-1], node[0, 1:]), axis=1),
            "north": np.stack((node[ny, :-1], node[ny, 1:]), axis=1),
        }
        source = f"<grid {nx}x{ny}, dx={self.dx:g}, dy={self.dy:g}>"
        return Mesh.from_arrays(nodes, cells, boundary_tags=tags, source=source)

    # -- output ------------------------------------------------------------------------------
    def save_npz(self, path: str | Path, fields: Mapping[str, np.ndarray], t: float) -> None:
        """``path``: 1-D axes ``x, y``, the time ``t`` and every per-cell field as ``(ny, nx)``.

        ``fields`` are in mesh order (e.g. ``Simulation.fields()``); their own
        per-cell ``x`` and ``y`` are replaced by the axes.
        """
        from .output import atomic_write

        arrays = {k: self.as_array(v) for k, v in fields.items() if k not in ("x", "y")}
        data = {"x": self.x, "y": self.y, "t": np.float64(t), **arrays}
        atomic_write(path, lambda p: np.savez(p, **data))
