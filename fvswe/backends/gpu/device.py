"""The GPU's device layout: a Layout's arrays as the kernels read them.

The packed state (:func:`pack_state`), each edge's cells and slots with the boundary code in
place of a missing neighbour (:func:`edge_arrays`), each slot's neighbour and side
(:func:`slot_codes`), the linear reconstruction's slots (:func:`linear_arrays`), the
``block`` variant's edge tasks (:func:`block_arrays`) and the
``grid`` variant's arrays (:func:`grid_arrays`). NumPy and compiled passes over the slots
and edges (Numba, cached): the backend uploads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ...boundary import KINDS
from ...errors import ConfigError
from ...mesh.core import take_rows
from .. import cuda_header
from ..controls import level_edges
from ..layout import Layout, block_edges
from .tuning import GRID_VARIANT, LIMIT_BLOCKS, grid_blocks

#: grid.cu's unit normals of the local slots south, east, north, west: [0] of an interior
#: slot (a south or west one is its owner's north or east edge), [1] of a boundary slot.
GRID_NORMALS = np.array([
    [[0.0, 1.0], [1.0, -0.0], [0.0, 1.0], [1.0, -0.0]],
    [[0.0, -1.0], [1.0, -0.0], [0.0, 1.0], [-1.0, -0.0]],
])  # fmt: skip


def pack_state(W: np.ndarray, H: np.ndarray, area: np.ndarray, layers: int) -> np.ndarray:
    """(L, nvec, 4) packed vectors: (h1,q1x,q1y,H),(h2,q2x,q2y,area) or (h,qx,qy,H)."""
    L = W.shape[0]
    P = np.empty((L, 2 if layers == 2 else 1, 4), dtype=W.dtype)
    P[:, 0, :3] = W[:, :3]
    P[:, 0, 3] = H
    if layers == 2:
        P[:, 1, :3] = W[:, 3:6]
        P[:, 1, 3] = area
    return P


def unpack_state(P: np.ndarray, layers: int) -> np.ndarray:
    """The inverse of :func:`pack_state`: ``(L, nvar)``."""
    if layers == 2:
        return np.concatenate((P[:, 0, :3], P[:, 1, :3]), axis=1)
    return P[:, 0, :3].copy()


def _boundary_codes(lay: Layout) -> np.ndarray:
    """Per edge, minus the boundary code ``bc | m << BC_BITS`` (bc: the codes of
    :data:`fvswe.boundary.KINDS`; m: the edge's index among the edges with tables),
    checked; 0 on interior edges."""
    boundary = lay.edge_cells[:, 1] < 0
    code = lay.edge_bc.astype(np.int32)
    bad = np.flatnonzero(boundary & ~np.isin(code, list(KINDS.values())))
    if bad.size:
        raise ConfigError(f"layout: boundary edge {bad[0]} has no condition")
    lv = level_edges(lay)
    code[lv] += np.arange(lv.size, dtype=np.int32) << cuda_header.BC_BITS
    return np.where(boundary, -code, 0)


def edge_arrays(lay: Layout) -> np.ndarray:
    """(E, 4) int32 ``(i, j, slot_i, slot_j)``, ``j`` minus the boundary code on the boundary."""
    idx = np.empty((lay.n_edges, 4), dtype=np.int32)
    idx[:, 0] = lay.edge_cells[:, 0]
    boundary = lay.edge_cells[:, 1] < 0
    idx[:, 1] = np.where(boundary, _boundary_codes(lay), lay.edge_cells[:, 1])
    idx[:, 2:] = lay.edge_slot
    return idx


def slot_codes(lay: Layout) -> np.ndarray:
    """(L*k,) int32 per slot: ``2 * neighbour + side`` (interior) or minus the boundary code;
    on a part, a halo cell's slot of an edge outside the part (no cell updates a halo cell,
    but the limiter visits its neighbours: fvswe.parallel.GpuHalo) is a wall. One compiled
    pass over the slots (issue 31: the NumPy expression's temporaries cost seconds)."""
    return _slot_codes(lay.cell_edges.ravel(), lay.cell_side.ravel(), lay.edge_cells,
                       _boundary_codes(lay), KINDS["wall"])  # fmt: skip


@njit(cache=True, parallel=True)
def _slot_codes(slot_edge, slot_side, edge_cells, boundary_code, wall):
    """The pass of :func:`slot_codes` (``boundary_code``: per edge, :func:`_boundary_codes`)."""
    out = np.empty(slot_edge.size, np.int32)
    for s in prange(slot_edge.size):
        e = slot_edge[s]
        if e < 0:
            out[s] = -wall
        elif edge_cells[e, 1] < 0:
            out[s] = boundary_code[e]
        else:
            side = np.int64(slot_side[s])
            out[s] = 2 * np.int64(edge_cells[e, 1 - side]) + side
    return out


def linear_arrays(lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """The linear reconstruction's per-slot arrays (linear.cuh): the slot across each slot's
    edge (int32; -1 on the boundary, -2 where the slot has no edge) and ``(wx, wy, ox, oy)``,
    its least-squares weights and face offset (float64, as the CPU's; the device holds them in
    the state's dtype), as ``4 k`` rows of a value per cell (row ``4 m + q``: faces_pass's
    threads, a cell each, read a row together)."""
    e = lay.cell_edges.ravel()
    side = lay.cell_side.ravel().astype(np.intp)
    across = lay.edge_slot[np.maximum(e, 0), 1 - side]
    across = np.where(lay.edge_cells[np.maximum(e, 0), 1 - side] < 0, -1, across)
    across = np.where(e < 0, -2, across).astype(np.int32)
    geom = np.concatenate(lay.linear_geometry(), axis=2)  # (cells, k, 4)
    return across, np.ascontiguousarray(geom.reshape(lay.n_cells, -1).T, dtype=np.float64)


class GridArrays(NamedTuple):
    """What grid.cu reads besides the state: the grid's shape, ``length`` (the ``nx``
    column widths, then the ``ny`` row heights), ``side_code`` (the boundary codes of the
    south, north, west and east sides, each in increasing ix or iy) and ``area`` (one value
    when every cell's is the same, else one per cell: ``area_stride`` 0 or 1)."""

    nx: int
    ny: int
    length: np.ndarray
    side_code: np.ndarray
    area: np.ndarray
    area_stride: int


def grid_arrays(lay: Layout) -> GridArrays | None:
    """grid.cu's arrays when ``lay`` is a Cartesian grid in row-major order whose slots
    grid.cu reproduces bit for bit (those of :class:`fvswe.grid.Grid`'s mesh in its own
    cell order: every slot's neighbour and side, normal and length checked), else None.

    The run then keeps the grid's order: a Simulation renumbering its cells (``order``)
    gets None here, and the other variants; so does a lon/lat mesh on the sphere."""
    L = lay.n_cells
    if lay.k != 4 or L == 0 or lay.n_owned_cells is not None or lay.sphere is not None:
        return None  # (a lon/lat mesh on the sphere: the other variants, docs/SCHEMES.md §20)
    code = slot_codes(lay).reshape(L, 4)
    nx = int(code[0, 2] >> 1) if code[0, 2] >= 0 else L  # cell 0's north neighbour: nx
    if not 0 < nx <= L or L % nx:
        return None
    ny = L // nx
    code = code.reshape(ny, nx, 4)
    c = np.arange(L, dtype=np.int64).reshape(ny, nx)
    ix, iy = np.arange(nx)[None, :], np.arange(ny)[:, None]
    sides = ((iy == 0, 2 * (c - nx) + 1), (ix == nx - 1, 2 * (c + 1)),
             (iy == ny - 1, 2 * (c + nx)), (ix == 0, 2 * (c - 1) + 1))  # fmt: skip
    for local, (boundary, neighbour) in enumerate(sides):
        boundary = np.broadcast_to(boundary, c.shape)
        got = code[:, :, local]
        if not (np.array_equal(got < 0, boundary) and (got == neighbour)[~boundary].all()):
            return None
    # each edge's normal, bits and signed zeros, as grid.cu forms its owner slot's
    owner = lay.edge_slot[:, 0] & 3
    want = GRID_NORMALS[(lay.edge_cells[:, 1] < 0).astype(np.intp), owner].astype(lay.dtype)
    if want.tobytes() != np.ascontiguousarray(lay.edge_normal).tobytes():
        return None
    length = lay.edge_length[lay.cell_edges.reshape(ny, nx, 4)]
    width, height = length[0, :, 0], length[:, 0, 1]
    if not ((length[:, :, 0::2] == width[None, :, None]).all()
            and (length[:, :, 1::2] == height[:, None, None]).all()):  # fmt: skip
        return None
    side_code = np.concatenate((code[0, :, 0], code[-1, :, 2], code[:, 0, 3], code[:, -1, 1]))
    uniform = bool((lay.area == lay.area[0]).all())
    return GridArrays(
        nx=nx,
        ny=ny,
        length=np.concatenate((width, height)).astype(lay.dtype),
        side_code=(-side_code).astype(np.int32),
        area=np.ascontiguousarray(lay.area[:1] if uniform else lay.area),
        area_stride=0 if uniform else 1,
    )


def block_arrays(lay: Layout, cells: int, interior_first: bool = False) -> tuple[np.ndarray, ...]:
    """The ``block`` variant's edge tasks (:func:`fvswe.backends.layout.block_edges`, in its
    ``interior_first`` order): ``(start, task, normal, length)``; ``task`` (T, 4) int32
    ``(i, j, slot_i, slot_j)`` as :func:`edge_arrays` with the slots local to the task's
    block (``cells * k`` of them) and -1 on a side the block does not own; ``start``
    (n_blocks + 1) int32. On a part the blocks tile its owned cells (the halo's are read)."""
    start, edge, own_i, own_j = block_edges(lay.edge_cells, lay.n_cells, cells, interior_first,
                                            lay.owned_cells)  # fmt: skip
    task = _block_tasks(start, edge, own_i, own_j, edge_arrays(lay), cells * lay.k)
    normal, length = take_rows(lay.edge_normal, edge), take_rows(lay.edge_length, edge)
    return start.astype(np.int32), task, normal, length


@njit(cache=True, parallel=True)
def _block_tasks(start, edge, own_i, own_j, idx, per_block):
    """The tasks of :func:`block_arrays` (block ``b``'s slots less ``b * per_block``) in one
    compiled pass over the blocks (issue 31)."""
    task = np.empty((edge.size, 4), np.int32)
    for b in prange(start.size - 1):
        base = np.int64(b) * per_block
        for t in range(start[b], start[b + 1]):
            e = edge[t]
            task[t, 0] = idx[e, 0]
            task[t, 1] = idx[e, 1]
            task[t, 2] = idx[e, 2] - base if own_i[t] else -1
            task[t, 3] = idx[e, 3] - base if own_j[t] else -1
    return task


@dataclass
class DeviceLayout:
    """A layout's arrays on the device, as the run's variant reads them, and its launch grids.

    ``L``, ``E``: the cells the steps update and the edges whose events count (a part of a
    distributed run: its owned ones, fvswe.partition); ``slot_tables``: per slot (code,
    normal, length), read by the gather and slot steps and the two-layer limiter (none
    otherwise); ``edges``: the edge pass's (idx, normal, length), ``halo_edges`` its second
    launch over a part's edges from a halo cell (computed, not counted); ``slots`` the edge
    variant's per-slot values; ``cell_args``: the block variant's tasks or the grid's shape;
    ``grid_args``: the grid's areas, widths and heights and side codes.
    """

    L: np.int32
    E: np.int32
    area: object
    cell_grid: int
    edge_grid: int
    limit_grid: int
    slot_tables: tuple = ()
    edges: tuple = ()
    halo_edges: tuple = (np.int32(0),)
    slots: object = None
    cell_args: tuple = ()
    grid_args: tuple = ()


def launch_grids(lay: Layout, variant: str, block: int, cells: int, grid) -> tuple[int, int, int]:
    """Blocks of the cell kernels (one a tile on a grid, ``cells`` cells a block in the block
    variant, ``block // k`` cells in the slot variant), of the edge pass and of the limiter."""
    n = lay.owned_cells
    per_block = {"slot": block // lay.k, "block": cells}.get(variant, block)
    cell_grid = (n + per_block - 1) // per_block
    if variant == GRID_VARIANT:
        cell_grid = grid_blocks(grid.nx, grid.ny, block)
    return (
        cell_grid,
        (lay.owned_edges + block - 1) // block,
        min((n + block - 1) // block, LIMIT_BLOCKS),
    )


def upload(
    cp, lay: Layout, variant: str, block: int, shape: tuple[int, bool], grid, linear: bool = False
) -> DeviceLayout:
    """The :class:`DeviceLayout` of ``lay`` for ``variant``: ``block`` threads a block, ``shape``
    the block variant's (cells a block, interior-first order), ``grid`` the grid's arrays;
    ``linear``: the slot tables too (the linear reconstruction's faces_pass reads them)."""
    dev = cp.asarray
    cells, interior_first = shape
    out = DeviceLayout(np.int32(lay.owned_cells), np.int32(lay.owned_edges), dev(lay.area),
                       *launch_grids(lay, variant, block, cells, grid))  # fmt: skip
    if variant in ("gather", "slot") or lay.model.layers == 2 or linear:
        e = lay.cell_edges.ravel()
        out.slot_tables = (dev(slot_codes(lay)), dev(np.ascontiguousarray(lay.edge_normal[e])),
                           dev(np.ascontiguousarray(lay.edge_length[e])))  # fmt: skip
    if variant == "edge":
        out.edges = (dev(edge_arrays(lay)), dev(lay.edge_normal), dev(lay.edge_length))
        nvec = 2 if lay.model.layers == 2 else 1
        out.slots = cp.empty((lay.n_cells * lay.k, nvec, 4), dtype=lay.dtype)
        n, E = lay.owned_edges, lay.n_edges
        out.halo_edges = (
            np.int32(E - n),
            *(a[n:] for a in out.edges),
            (E - n + block - 1) // block,
        )
    elif variant == "block":
        out.cell_args = tuple(dev(a) for a in block_arrays(lay, cells, interior_first))
    elif variant == GRID_VARIANT:
        out.cell_args = (np.int32(grid.nx), np.int32(grid.ny))
        out.grid_args = (dev(grid.area), np.int32(grid.area_stride), dev(grid.length),
                         dev(grid.side_code))  # fmt: skip
    return out


def step_bytes(dev: DeviceLayout, variant: str, state: int) -> int:
    """Compulsory device-memory traffic of one lagged Euler step of ``state`` bytes of state,
    neighbour reads all cached.

    grid: read and write the state and the grid's widths, heights and side codes. gather,
    slot: read and write the state, read the per-slot edge data; block: read and write the
    state, read the per-task edge data (each edge once or twice); edge: the edge pass reads
    the state and edge data and writes the slots, the volume pass reads the slots and the
    state and writes the state. The limiter's kernels add nothing compulsory: they read one
    flag unless the step has candidates (a few cells).
    """
    if variant == "edge":
        return 3 * state + sum(a.nbytes for a in dev.edges) + 2 * dev.slots.nbytes
    if variant == "block":
        return 2 * state + sum(a.nbytes for a in dev.cell_args)
    if variant == GRID_VARIANT:  # the grid's widths, heights and side codes
        return 2 * state + dev.grid_args[2].nbytes + dev.grid_args[3].nbytes
    return 2 * state + sum(a.nbytes for a in dev.slot_tables)
