"""The staggered C-grid of a run: a row-major Cartesian Layout seen as cells and faces.

Levels ``ζ`` live at the ``(ny, nx)`` cells, ``u`` at the ``(ny, nx + 1)`` x faces and
``v`` at the ``(ny + 1, nx)`` y faces (Stelling and Duinmeijer's C-grid). The y faces are
handled as the x faces of the transposed grid, so every face formula is written once
(:class:`Faces` holds one direction's static data in that orientation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..boundary import KINDS, LEVEL, WALL, LevelTables
from ..errors import ConfigError

#: Local sides of a grid cell's slots (fvswe.grid): south, east, north, west.
SOUTH, EAST, NORTH, WEST = 0, 1, 2, 3


@dataclass(frozen=True)
class Faces:
    """One direction's faces in x orientation: ``rows`` lines of ``cells + 1`` faces.

    ``open``: the faces that may carry flow (interior, or an imposed level); ``bed``: the
    bed below the reference at the face (the shallower of its cells', Delft3D's "min");
    ``table``: ``(rows, 2)`` level table of the first and last face of a row (-1: wall);
    ``friction``: the coefficient at each face (mean of its cells'), or None.
    """

    open: np.ndarray
    bed: np.ndarray
    table: np.ndarray
    friction: np.ndarray | None
    spacing: float  # along the faces' normal (dx for x faces)
    across: float  # along the faces (dy for x faces)


@dataclass(frozen=True)
class CGrid:
    """The cells, the x faces and the y faces (transposed) of a Cartesian layout."""

    nx: int
    ny: int
    dx: float
    dy: float
    H: np.ndarray  # (ny, nx) bed below the reference, float64
    x: Faces
    y: Faces  # in the transposed grid: (nx, ny + 1)
    friction_kind: int
    levels: LevelTables | None

    @classmethod
    def of(cls, layout) -> CGrid:
        """The C-grid of ``layout``, or a one-line ConfigError naming what does not fit."""
        from ..backends.gpu import grid_arrays

        if layout.model.layers != 1:
            raise ConfigError("method 'implicit': one layer only (layers = 1)")
        found = grid_arrays(layout)
        if found is None:
            raise ConfigError(
                "method 'implicit': needs a Cartesian grid in its row-major order (a grid "
                "case, fvswe.grid.Grid's mesh, order 'none')"
            )
        nx, ny = found.nx, found.ny
        width, height = found.length[:nx], found.length[nx:]
        if not (
            np.allclose(width, width[0], rtol=1e-9) and np.allclose(height, height[0], rtol=1e-9)
        ):
            raise ConfigError("method 'implicit': needs a uniform grid (equal cell widths)")
        dx, dy = float(np.mean(width)), float(np.mean(height))  # equal but for round-off
        H = np.asarray(layout.H, dtype=np.float64).reshape(ny, nx)
        codes, tables = _sides(layout, nx, ny)
        coef = layout.friction_coef
        coef = None if coef is None else coef.reshape(ny, nx)
        return cls(
            nx=nx, ny=ny, dx=dx, dy=dy, H=H,
            x=_faces(H, codes[WEST], codes[EAST], tables[WEST], tables[EAST], coef, dx, dy),
            y=_faces(H.T, codes[SOUTH], codes[NORTH], tables[SOUTH], tables[NORTH],
                     None if coef is None else coef.T, dy, dx),
            friction_kind=layout.friction_kind, levels=layout.levels,
        )  # fmt: skip


def _sides(layout, nx: int, ny: int) -> tuple[dict, dict]:
    """Per side, the boundary code and level table of each of its faces (in increasing
    x or y); a condition other than wall or level is a ConfigError."""
    size = {SOUTH: nx, NORTH: nx, WEST: ny, EAST: ny}
    codes = {s: np.full(n, WALL, dtype=np.int8) for s, n in size.items()}
    tables = {s: np.full(n, -1, dtype=np.int64) for s, n in size.items()}
    edges = np.flatnonzero(layout.edge_cells[:, 1] < 0)
    slot = layout.edge_slot[edges, 0].astype(np.int64)
    cell, local = slot // 4, slot % 4
    along = np.where((local == SOUTH) | (local == NORTH), cell % nx, cell // nx)
    code = layout.edge_bc[edges]
    bad = ~np.isin(code, (WALL, LEVEL))
    if bad.any():
        name = {v: k for k, v in KINDS.items()}.get(int(code[bad][0]), "?")
        raise ConfigError(
            f"method 'implicit': boundary condition {name!r} (cell {int(cell[bad][0])}); the "
            "implicit method takes walls and imposed levels"
        )
    table = layout.levels.edge_level[edges] if layout.levels is not None else -np.ones_like(cell)
    for side in size:
        mine = local == side
        codes[side][along[mine]] = code[mine]
        tables[side][along[mine]] = np.where(code[mine] == LEVEL, table[mine], -1)
    return codes, tables


def _faces(H, first, last, t_first, t_last, coef, spacing: float, across: float) -> Faces:
    """The faces of ``H``'s rows: interior ones between two cells, one at each end."""
    rows, cells = H.shape
    open_ = np.ones((rows, cells + 1), dtype=bool)
    open_[:, 0], open_[:, -1] = first == LEVEL, last == LEVEL
    bed = np.empty((rows, cells + 1))
    bed[:, 1:-1] = np.minimum(H[:, :-1], H[:, 1:])
    bed[:, 0], bed[:, -1] = H[:, 0], H[:, -1]
    friction = None
    if coef is not None:
        friction = np.empty((rows, cells + 1))
        friction[:, 1:-1] = 0.5 * (coef[:, :-1] + coef[:, 1:])
        friction[:, 0], friction[:, -1] = coef[:, 0], coef[:, -1]
    table = np.stack([t_first, t_last], axis=1)
    return Faces(open_, bed, table, friction, spacing, across)
