"""Layout: the backend-independent arrays one run needs, in the mesh's current cell order.

Built once from a Mesh, a Model, per-edge boundary codes and the initial
state; each backend copies (and packs) these to its own memory.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from ..boundary import LevelTables
from ..errors import ConfigError
from ..forcing import WindTable
from ..model import Model
from ..partition import local_edges
from ..physics.constants import FRICTION_KINDS
from ..slide import SlideTable
from ..sources import SourceTables

__all__ = ["FRICTION_KINDS", "Layout"]


@dataclass(frozen=True)
class Layout:
    """Arrays of one run. Slots: ``cell*k + local``; ``edge_slot[e, s]`` is the slot of side s."""

    model: Model
    dtype: np.dtype
    k: int
    W0: np.ndarray  # (L, nvar) initial state
    H: np.ndarray  # (L,) bottom depth
    area: np.ndarray  # (L,)
    edge_cells: np.ndarray  # (E, 2) int32, j = -1 on the boundary
    edge_normal: np.ndarray  # (E, 2) unit, from i to j
    edge_length: np.ndarray  # (E,)
    edge_slot: np.ndarray  # (E, 2) int32, -1 on the j side of boundary edges
    edge_bc: np.ndarray  # (E,) int8, fvswe.boundary codes
    cell_edges: np.ndarray  # (L, k) int32: edge owning each slot
    cell_side: np.ndarray  # (L, k) int8: 0 if the cell is side i of that edge, 1 if side j
    friction_kind: int = 0  # FRICTION_KINDS code, 0 none; on the lower layer of two
    friction_coef: np.ndarray | None = None  # (L,) float64: Chezy C (m^0.5/s) or Manning n
    interfacial_coef: np.ndarray | None = None  # (L,) float64: c_i of two layers, None: off
    levels: LevelTables | None = None  # imposed-level tables of the LEVEL edges
    coriolis: np.ndarray | None = None  # (L,) float64 Coriolis parameter f (1/s); None: none
    wind: WindTable | None = None  # the wind on the upper layer; None: none
    sources: SourceTables | None = None  # point sources, sinks and rain; None: none
    slide: SlideTable | None = None  # a moving bed over the static H; None: none
    maxima: float | None = None  # maximum and arrival maps' arrival threshold (m); None: none
    # A lon/lat mesh on the sphere (fvswe.mesh.sphere): per cell (G_x, G_y, tan(phi)/R),
    # (L, 3) float64; None: planar.
    sphere: np.ndarray | None = None
    # The linear reconstruction's geometry per slot (docs/SCHEMES.md §19): least-squares
    # gradient weights and the face midpoint's offset from the centroid, (L, k, 2) float64.
    lsq_weight: np.ndarray | None = None
    face_offset: np.ndarray | None = None
    # A part of a distributed run (fvswe.partition): cells [0, n_owned_cells) are updated here,
    # the rest are halo; the events of edges [0, n_owned_edges) are counted here. None: all.
    n_owned_cells: int | None = None
    n_owned_edges: int | None = None

    @property
    def n_cells(self) -> int:
        return self.W0.shape[0]

    @property
    def owned_cells(self) -> int:
        """Cells this layout updates (all but the halo of a part)."""
        return self.n_cells if self.n_owned_cells is None else self.n_owned_cells

    @property
    def owned_edges(self) -> int:
        """Edges whose events (flags) this layout counts."""
        return self.n_edges if self.n_owned_edges is None else self.n_owned_edges

    @property
    def n_edges(self) -> int:
        return self.edge_cells.shape[0]

    @property
    def nvar(self) -> int:
        return self.W0.shape[1]

    @classmethod
    def build(
        cls,
        mesh,
        model: Model,
        W0: np.ndarray,
        H: np.ndarray,
        edge_bc: np.ndarray,
        dtype,
        *,
        friction: tuple[int, np.ndarray | None] = (0, None),
        interfacial: np.ndarray | None = None,
        levels: LevelTables | None = None,
        coriolis: np.ndarray | None = None,
        wind: WindTable | None = None,
        sources: SourceTables | None = None,
        slide: SlideTable | None = None,
        maxima: float | None = None,
        sphere: np.ndarray | None = None,
        linear: bool = False,
        owned: tuple[int, int] | None = None,
    ):
        """Cast the mesh's arrays to the run's dtype and index the slots from both sides.

        ``friction`` is ``(FRICTION_KINDS code, per-cell coefficients)``, ``interfacial``
        the per-cell ``c_i`` (both in the mesh's cell order, kept in float64; None: off);
        ``levels`` the tables of :func:`fvswe.boundary.level_tables` (None: no level edges);
        ``coriolis`` the per-cell f (float64, mesh order) and ``wind`` the wind table
        (docs/SCHEMES.md §15; None: none); ``sources`` the point sources and rain
        (:func:`fvswe.sources.source_tables`, mesh order; None: none); ``slide`` a moving
        bed (:func:`fvswe.slide.slide_table`, mesh order; None: the bed ``H`` is static);
        ``maxima`` the arrival threshold of the run's maximum and arrival maps
        (:class:`fvswe.maxima.Maxima`; None: no maps); ``sphere`` the metric of a lon/lat
        mesh (:func:`fvswe.mesh.sphere.on_sphere`, mesh order; None: planar). ``owned``:
        ``mesh`` is one part's cells and edges (:func:`fvswe.partfile.read_part`), of which
        the layout updates cells ``[0, owned[0])`` and counts the events of edges
        ``[0, owned[1])``: the layout :meth:`part` cuts from the whole mesh's, bit for bit
        (None: the whole mesh).
        """
        dtype = np.dtype(dtype)
        L, k = mesh.cells.shape
        slot = mesh.edge_slot.astype(np.int32)
        cell_edges, cell_side = _slot_owners(slot, L, k)
        return cls(
            model=model,
            dtype=dtype,
            k=k,
            W0=np.ascontiguousarray(W0, dtype=dtype),
            H=np.ascontiguousarray(H, dtype=dtype),
            area=np.ascontiguousarray(mesh.area, dtype=dtype),
            edge_cells=np.ascontiguousarray(mesh.edge_cells, dtype=np.int32),
            edge_normal=np.ascontiguousarray(mesh.edge_normal, dtype=dtype),
            edge_length=np.ascontiguousarray(mesh.edge_length, dtype=dtype),
            edge_slot=np.ascontiguousarray(slot),
            edge_bc=np.ascontiguousarray(edge_bc, dtype=np.int8),
            cell_edges=cell_edges,
            cell_side=cell_side,
            friction_kind=int(friction[0]),
            friction_coef=_coefficients(friction[1]),
            interfacial_coef=_coefficients(interfacial),
            levels=levels,
            coriolis=None if coriolis is None else np.ascontiguousarray(coriolis, np.float64),
            wind=wind,
            sources=sources,
            slide=slide,
            maxima=None if maxima is None else float(maxima),
            sphere=_coefficients(sphere),
            **(lsq_weights(mesh, cell_edges, cell_side, owned and owned[0]) if linear else {}),
            n_owned_cells=None if owned is None else int(owned[0]),
            n_owned_edges=None if owned is None else int(owned[1]),
        )

    def linear_geometry(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lsq_weight, face_offset)``, which a linear reconstruction reads; a ConfigError
        where the layout was built without them (``Layout.build(..., linear=True)``)."""
        if self.lsq_weight is None or self.face_offset is None:
            raise ConfigError(
                "reconstruction 'linear': the layout has no least-squares geometry "
                "(build it with Layout.build(..., linear=True))"
            )
        return self.lsq_weight, self.face_offset

    def part(self, part) -> Layout:
        """The layout of one :class:`fvswe.partition.Part` of this layout's cells.

        Only renames: every local edge keeps its orientation, normal, length,
        condition and the local part of its slots, so each owned cell sums the
        same contributions in the same slot order as on one device.
        """
        cells, edges, k = part.cells, part.edges, self.k
        edge_cells, edge_slot = local_edges(part, self.edge_cells, self.edge_slot, self.n_cells, k)
        edge_cells, edge_slot = edge_cells.astype(np.int32), edge_slot.astype(np.int32)
        cell_edges, cell_side = _slot_owners(edge_slot, cells.size, k)
        lv = self.levels
        return replace(
            self,
            W0=np.ascontiguousarray(self.W0[cells]),
            H=np.ascontiguousarray(self.H[cells]),
            area=np.ascontiguousarray(self.area[cells]),
            edge_cells=edge_cells,
            edge_normal=np.ascontiguousarray(self.edge_normal[edges]),
            edge_length=np.ascontiguousarray(self.edge_length[edges]),
            edge_slot=edge_slot,
            edge_bc=np.ascontiguousarray(self.edge_bc[edges]),
            cell_edges=cell_edges,
            cell_side=cell_side,
            friction_coef=_cells(self.friction_coef, cells),
            interfacial_coef=_cells(self.interfacial_coef, cells),
            levels=None if lv is None else replace(lv, edge_level=lv.edge_level[edges]),
            coriolis=None if self.coriolis is None else self.coriolis[cells],
            sources=None if self.sources is None else self.sources.cells(cells),
            slide=None if self.slide is None else self.slide.cells(cells),
            sphere=_cells(self.sphere, cells),
            lsq_weight=_cells(self.lsq_weight, cells),
            face_offset=_cells(self.face_offset, cells),
            n_owned_cells=part.n_owned,
            n_owned_edges=part.n_owned_edges,
        )


def _coefficients(values: np.ndarray | None) -> np.ndarray | None:
    """Per-cell coefficients as a contiguous float64 array (None stays None)."""
    return None if values is None else np.ascontiguousarray(values, dtype=np.float64)


def _cells(values: np.ndarray | None, cells: np.ndarray) -> np.ndarray | None:
    """The entries of ``cells`` of a per-cell array (None stays None)."""
    return None if values is None else np.ascontiguousarray(values[cells])


def lsq_weights(
    mesh, cell_edges: np.ndarray, cell_side: np.ndarray, owned: int | None = None
) -> dict[str, np.ndarray]:
    """The linear reconstruction's geometry (docs/SCHEMES.md §19.2): per slot, the weight
    ``w_m = M^-1 d_m`` of the least-squares gradient ``grad v = sum_m w_m (v_m - v_i)``,
    ``d_m`` the offset of the neighbour's centroid (on the boundary, of the ghost's: the
    centroid mirrored in the edge) and ``M = sum_m d_m d_m^T``; and ``o_m``, the face
    midpoint's offset from the centroid. Float64, in the mesh's cell order. Across a periodic
    edge (``mesh.edge_shift``, docs/SCHEMES.md §7.8) the neighbour and, seen from cell ``j``,
    the face are moved by the translation: the joined cells see each other side by side.
    ``owned``: ``mesh`` is a part whose first ``owned`` cells are its own (the rest its halo,
    whose edges to other parts it lacks, and whose face states their owners send): those
    cells' rows, each from its own cell's edges as in the whole mesh, the halo's zero."""
    if owned is not None:
        rows = lsq_weights(mesh, cell_edges[:owned], cell_side[:owned])
        return {key: np.concatenate([a, np.zeros((cell_edges.shape[0] - owned, *a.shape[1:]))])
                for key, a in rows.items()}  # fmt: skip
    e = np.maximum(cell_edges, 0)
    xi = mesh.centroid[: cell_edges.shape[0], None, :]
    mid = mesh.nodes[mesh.edge_nodes[e]].mean(axis=2)
    other = mesh.edge_cells[e, 1 - cell_side]
    there = mesh.centroid[np.maximum(other, 0)]
    if mesh.edge_shift is not None:  # i sees j at x_j - t; j sees i at x_i + t, the face + t
        shift, from_j = mesh.edge_shift[e], (cell_side == 1)[..., None]
        mid = np.where(from_j, mid + shift, mid)
        there = np.where(from_j, there + shift, there - shift)
    offset = mid - xi
    n = mesh.edge_normal[e]
    ghost = 2.0 * np.sum(offset * n, axis=2, keepdims=True) * n
    d = np.where((other >= 0)[..., None], there - xi, ghost)
    d = np.where((cell_edges >= 0)[..., None], d, 0.0)
    M = np.einsum("lma,lmb->lab", d, d)
    return {"lsq_weight": np.ascontiguousarray(np.linalg.solve(M, d.transpose(0, 2, 1))
                                               .transpose(0, 2, 1)),
            "face_offset": np.ascontiguousarray(offset)}  # fmt: skip


def _slot_owners(edge_slot: np.ndarray, L: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(cell_edges, cell_side)`` of :class:`Layout`: the edge and side owning each slot
    (-1 and 0 where no edge of the layout owns it: a halo cell's edges to other parts)."""
    cell_edges, cell_side = _owners_pass(edge_slot, L * k)
    return cell_edges.reshape(L, k), cell_side.reshape(L, k)


@njit(cache=True)
def _owners_pass(edge_slot, n_slots):
    """The scatter of :func:`_slot_owners` as one compiled loop (issue 31), side i's edges
    then side j's, each in edge order: where two edges named one slot, the later wins, as in
    NumPy's scatters."""
    cell_edges = np.full(n_slots, -1, np.int32)
    cell_side = np.zeros(n_slots, np.int8)
    for side in range(2):
        for e in range(edge_slot.shape[0]):
            q = edge_slot[e, side]
            if q >= 0:
                cell_edges[q] = e
                cell_side[q] = side
    return cell_edges, cell_side


#: Cells a thread block of the GPU's ``block`` variant owns where no shape is given: the unit
#: of the mesh information and the reordering study (the GPU's tuned shapes:
#: :data:`fvswe.backends.gpu.BLOCK_SHAPES`).
BLOCK_CELLS = 128


def block_edges(
    edge_cells: np.ndarray,
    n_cells: int,
    cells: int = BLOCK_CELLS,
    interior_first: bool = False,
    owned: int | None = None,
) -> tuple[np.ndarray, ...]:
    """The edge lists of the GPU's fused ``block`` variant (fvswe/backends/cuda/block.cu).

    Cell block b holds cells ``[b*cells, (b+1)*cells)``. Every edge is listed once in the
    block of its cell i, owning side i, and also side j when j lies in the same block; an
    interior edge whose j lies in another block is listed a second time, in j's block,
    owning side j only. Returns ``(start, edge, own_i, own_j)``: block b's entries are
    ``start[b]:start[b+1]`` (int64, n_blocks + 1), in increasing edge order within a block;
    ``interior_first`` lists a block's edges between two of its cells first, its cut and
    boundary edges after them (each group in edge order), so that the warps reading other
    blocks' cells or the boundary tables are grouped. Either order writes each slot once.

    ``owned``: on a part of a distributed run (fvswe.partition), the blocks tile the cells
    ``[0, owned)`` only (default ``n_cells``): the halo cells beyond are read, never updated,
    so an edge lists only its owned sides (an edge from a halo cell i is listed in j's block
    owning side j, one to a halo cell j in i's block owning side i).
    """
    owned = n_cells if owned is None else owned
    n_blocks = -(-owned // cells)
    ij = np.ascontiguousarray(edge_cells, dtype=np.int64)
    return _block_lists(ij, n_blocks, cells, interior_first, owned)


@njit(cache=True)
def _block_lists(ij, n_blocks, cells, interior_first, owned):
    """:func:`block_edges` as a compiled pass, linear in the edges: the entries counted per
    block (and, for ``interior_first``, per group), then placed sweeping the edges in
    increasing order, so each block's (group's) entries come in edge order, as a sort by
    (block, edge) would give them (an ``argsort`` of 3.4 M keys took 1.3 s at 2.08 M cells)."""
    E = ij.shape[0]
    count = np.zeros(2 * n_blocks, np.int64)  # per block: its interior edges, the others
    for e in range(E):
        g_i, g_j = _block_groups(ij[e, 0], ij[e, 1], cells, interior_first, owned)
        if g_i >= 0:
            count[g_i] += 1
        if g_j >= 0:
            count[g_j] += 1
    at = np.zeros(2 * n_blocks + 1, np.int64)
    for g in range(2 * n_blocks):
        at[g + 1] = at[g] + count[g]
    start = at[::2].copy()
    n = at[-1]
    edge = np.empty(n, np.int64)
    own_i = np.empty(n, np.bool_)
    own_j = np.empty(n, np.bool_)
    for e in range(E):
        g_i, g_j = _block_groups(ij[e, 0], ij[e, 1], cells, interior_first, owned)
        if g_i >= 0:
            k = at[g_i]
            at[g_i] += 1
            edge[k], own_i[k], own_j[k] = e, True, g_j == -2
        if g_j >= 0:
            k = at[g_j]
            at[g_j] += 1
            edge[k], own_i[k], own_j[k] = e, False, True
    return start, edge, own_i, own_j


@njit(cache=True)
def _block_groups(i, j, cells, interior_first, owned):
    """Where :func:`_block_lists` lists edge ``(i, j)``: the group (2 * block, + 1 for the cut
    and boundary edges) of its entry owning side i, and of its entry owning side j alone;
    -1 where there is none (a halo side, the boundary), -2 for j where i's entry owns it."""
    mine_i, mine_j = i < owned, 0 <= j < owned
    if mine_i and mine_j and i // cells == j // cells:
        return 2 * (i // cells) + (0 if interior_first else 1), -2
    return (2 * (i // cells) + 1 if mine_i else -1), (2 * (j // cells) + 1 if mine_j else -1)


def twice_evaluated(edge_cells: np.ndarray, cells: int = BLOCK_CELLS) -> float:
    """Fraction of the edges the ``block`` variant evaluates twice (interior edges whose two
    cells lie in different blocks of ``cells`` consecutive cells): its extra flux work, a
    measure of an ordering's locality for that kernel."""
    return twice_count(edge_cells, cells) / max(1, edge_cells.shape[0])


def twice_count(edge_cells: np.ndarray, cells: int = BLOCK_CELLS) -> int:
    """How many of the edges ``edge_cells`` (global cells, side ``j`` negative on the
    boundary) the ``block`` variant evaluates twice: :func:`twice_evaluated`'s numerator, which
    GPU ranks sum over their owned edges (an exact integer sum)."""
    i, j = edge_cells[:, 0], edge_cells[:, 1]
    return int(np.count_nonzero((j >= 0) & (j // cells != i // cells)))
