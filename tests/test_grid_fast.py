"""The grid's direct quad mesh equals the generic sort-based Mesh.from_arrays bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from fvswe.grid import Grid
from fvswe.mesh import Mesh

ARRAYS = (
    "nodes", "cells", "area", "centroid", "edge_cells", "edge_nodes", "edge_normal",
    "edge_length", "edge_tag", "edge_slot", "original_index",
)  # fmt: skip


def generic_mesh(grid: Grid) -> Mesh:
    """The grid's nodes, cells and side tags through the generic topology search."""
    nx, ny = grid.nx, grid.ny
    X, Y = np.meshgrid(grid.x_nodes, grid.y_nodes)
    node = np.arange((nx + 1) * (ny + 1)).reshape(ny + 1, nx + 1)
    cells = np.stack((node[:-1, :-1], node[:-1, 1:], node[1:, 1:], node[1:, :-1]), axis=-1)
    tags = {
        "west": np.stack((node[:-1, 0], node[1:, 0]), axis=1),
        "east": np.stack((node[:-1, nx], node[1:, nx]), axis=1),
        "south": np.stack((node[0, :-1], node[0, 1:]), axis=1),
        "north": np.stack((node[ny, :-1], node[ny, 1:]), axis=1),
    }
    return Mesh.from_arrays(
        np.stack((X.ravel(), Y.ravel()), axis=1), cells.reshape(-1, 4), boundary_tags=tags
    )


@pytest.mark.parametrize(
    "nx, ny, dx, dy, origin",
    [
        (1, 1, 1.0, 1.0, (0.0, 0.0)),
        (1, 5, 0.3, 0.7, (0.0, 0.0)),
        (6, 1, 0.1, 2.5, (-3.0, 1.0)),
        (7, 5, 0.3, 0.7, (-1.0, 2.0)),
        (96, 96, 600 / 96, 600 / 96, (0.0, 0.0)),
        (61, 48, 200 / 61, 1 / 3, (123.456, -7.89)),
    ],
)
def test_direct_quad_mesh_equals_the_generic_one(nx, ny, dx, dy, origin):
    grid = Grid(nx, ny, dx, dy, origin=origin)
    fast, ref = grid.mesh(), generic_mesh(grid)
    for name in ARRAYS:
        a, b = getattr(fast, name), getattr(ref, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name  # bitwise, signed zeros included
    assert fast.tags == ref.tags and fast.depth is None and fast.k == 4
    assert (fast.adjacency() != ref.adjacency()).nnz == 0
    assert not fast.edge_slot.flags.writeable
