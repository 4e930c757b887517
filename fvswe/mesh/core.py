"""The finite-volume mesh: validated cells, geometry and edge topology, all vectorised NumPy.

Topology is built from half-edges: local edge ``l`` of cell ``c`` joins
``cells[c, l] -> cells[c, (l+1) % k]`` and owns accumulator slot ``c*k + l``.
Half-edges are matched through buckets keyed by their lower node (a counting sort,
compiled with Numba), and edges are put in their canonical order by scattering
their unique slot keys, so building or renumbering a 2 M-triangle mesh costs a
few linear passes, not sorts.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from numba import get_num_threads, njit, prange

from ..errors import MeshError, check_finite

#: Cells whose doubled area is below this fraction of their longest edge squared are degenerate.
DEGENERATE_RTOL = 1e-10

#: Name of the tag given to boundary edges that the input left untagged.
DEFAULT_TAG = "wall"


def _ids(ids: np.ndarray, limit: int = 5) -> str:
    """``'3, 17, 42 and 9 more'``: a short list of offending indices for a one-line error."""
    ids = np.asarray(ids).ravel()
    head = ", ".join(str(int(i)) for i in ids[:limit])
    return head + (f" and {ids.size - limit} more" if ids.size > limit else "")


@dataclass(frozen=True, eq=False)
class Mesh:
    """An immutable 2-D finite-volume mesh of triangles (k = 3) or quads (k = 4).

    Field meanings are the shared mesh contract (docs/ARCHITECTURE.md). ``edge_nodes``
    (an addition) holds each edge's two nodes in the direction cell ``i``
    traverses them counter-clockwise, so ``edge_normal`` is that direction turned
    clockwise by 90 degrees.
    """

    nodes: np.ndarray
    cells: np.ndarray
    area: np.ndarray
    centroid: np.ndarray
    edge_cells: np.ndarray
    edge_nodes: np.ndarray
    edge_normal: np.ndarray
    edge_length: np.ndarray
    edge_tag: np.ndarray
    edge_slot: np.ndarray
    tags: dict[str, int]
    depth: np.ndarray | None
    original_index: np.ndarray
    source: str = "<arrays>"
    #: Per edge, the translation from cell ``i``'s side to ``j``'s across a periodic edge
    #: (cell ``j`` lies there moved by it; 0 elsewhere; fvswe/mesh/periodic.py); None: none.
    edge_shift: np.ndarray | None = None

    def __post_init__(self) -> None:
        # Read-only views: the mesh (and its cached adjacency) cannot change under anyone.
        for name, value in vars(self).items():
            if isinstance(value, np.ndarray):
                view = value.view()
                view.flags.writeable = False
                object.__setattr__(self, name, view)

    def __repr__(self) -> str:
        kind = "triangles" if self.k == 3 else "quads"
        return f"Mesh({self.n_cells} {kind}, {self.n_edges} edges, source={self.source!r})"

    @property
    def n_cells(self) -> int:
        return int(self.cells.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.edge_cells.shape[0])

    @property
    def n_nodes(self) -> int:
        return int(self.nodes.shape[0])

    @property
    def k(self) -> int:
        """Vertices (and edges, and accumulator slots) per cell."""
        return int(self.cells.shape[1])

    @property
    def boundary(self) -> np.ndarray:
        """Boolean mask of boundary edges (``j == -1``)."""
        return self.edge_cells[:, 1] < 0

    @functools.cached_property
    def _adjacency(self) -> sp.csr_matrix:
        indptr, indices = _neighbour_lists(self.edge_cells, self.n_cells)
        data = np.ones(indices.size, dtype=np.int8)
        n = self.n_cells
        return sp.csr_matrix((data, indices, indptr), shape=(n, n))

    def adjacency(self) -> sp.csr_matrix:
        """Symmetric L x L cell adjacency (one entry per pair of cells sharing an edge)."""
        return self._adjacency

    @classmethod
    def from_arrays(
        cls,
        nodes: np.ndarray,
        cells: np.ndarray,
        *,
        boundary_tags: Mapping[str, np.ndarray] | None = None,
        depth: np.ndarray | None = None,
        source: str = "<arrays>",
    ) -> Mesh:
        """Validate ``nodes (N,2|3)`` and ``cells (L,3|4)`` and build the topology.

        ``boundary_tags`` maps a tag name to an ``(m,2)`` array of node pairs
        (boundary edges, either direction); tag ids follow the mapping's order
        from 1, and boundary edges that no pair names are tagged ``"wall"``.
        ``depth`` is one value per cell. Clockwise cells are re-oriented; bad
        input raises :class:`MeshError` naming ``source``.
        """
        nodes, cells = _validated(nodes, cells, source)
        cells, area = _oriented(nodes, cells, source)
        return cls._assembled(nodes, cells, area, boundary_tags, depth, source)

    @classmethod
    def _assembled(
        cls,
        nodes: np.ndarray,
        cells: np.ndarray,
        area: np.ndarray,
        boundary_tags: Mapping[str, np.ndarray] | None,
        depth: np.ndarray | None,
        source: str,
    ) -> Mesh:
        """:meth:`from_arrays` once its checks have passed: ``nodes`` (N,2) float64 and
        ``cells`` int64, C-ordered, counter-clockwise and not degenerate, ``area`` theirs.
        Refinement comes in here, its children being valid where their parents are."""
        if depth is not None:
            depth = np.asarray(depth, dtype=np.float64).reshape(-1)
            if depth.shape[0] != cells.shape[0]:
                raise MeshError(
                    f"{source}: depth has {depth.shape[0]} values for {cells.shape[0]} cells"
                )
            check_finite(depth, f"{source}: depth", MeshError)
        topo = _topology(nodes, cells, source)
        tag_ids, tags = _boundary_tag_ids(
            nodes.shape[0], topo["edge_nodes"], topo["edge_cells"], boundary_tags, source
        )
        return cls(
            nodes=nodes,
            cells=cells,
            area=area,
            centroid=_centroids(nodes, cells),
            edge_tag=tag_ids,
            tags=tags,
            depth=depth,
            original_index=np.arange(cells.shape[0], dtype=np.int64),
            source=source,
            **topo,
        )

    def boundary_tags(self) -> dict[str, np.ndarray]:
        """Tag name -> ``(m,2)`` node pairs of its boundary edges (the input of ``from_arrays``)."""
        return {name: self.edge_nodes[self.edge_tag == tid] for name, tid in self.tags.items()}

    def permuted(self, perm: np.ndarray) -> Mesh:
        """The same mesh with new cell ``n`` = old cell ``perm[n]``; edges re-sorted.

        Only renames: each edge keeps its ``(i, j)`` orientation, normal and
        nodes, each cell its vertex order (so the local part of every slot stays).
        """
        perm = np.asarray(perm, dtype=np.int64)
        n, k = self.n_cells, self.k
        if perm.shape != (n,) or not _is_permutation(perm, n):
            raise MeshError(f"{self.source}: ordering is not a permutation of {n} cells")
        inv = inverse_permutation(perm)
        new_cells, new_slot = _renamed_edges(self.edge_cells, self.edge_slot, inv, k)
        order = _edge_order(new_cells, new_slot)
        return replace(
            self,
            cells=take_rows(self.cells, perm),
            area=take_rows(self.area, perm),
            centroid=take_rows(self.centroid, perm),
            depth=None if self.depth is None else take_rows(self.depth, perm),
            original_index=take_rows(self.original_index, perm),
            edge_cells=take_rows(new_cells, order),
            edge_slot=take_rows(new_slot, order),
            edge_nodes=take_rows(self.edge_nodes, order),
            edge_normal=take_rows(self.edge_normal, order),
            edge_length=take_rows(self.edge_length, order),
            edge_tag=take_rows(self.edge_tag, order),
            edge_shift=None if self.edge_shift is None else take_rows(self.edge_shift, order),
        )

    def reordered(self, method: str = "none", seed: int = 0) -> tuple[Mesh, np.ndarray]:
        """Renumber cells by ``method`` (none, rcm, gps, random, hilbert, morton).

        Returns ``(mesh, perm)`` where new cell ``n`` is old cell ``perm[n]``.
        """
        from .orderings import ordering

        perm = ordering(self, method, seed=seed)
        return self.permuted(perm), perm


@njit(cache=True, parallel=True)
def _repeats_a_vertex(cells):
    """Whether each cell names one node twice."""
    n_cells, k = cells.shape
    out = np.zeros(n_cells, np.bool_)
    for c in prange(n_cells):
        for a in range(k - 1):
            for b in range(a + 1, k):
                if cells[c, a] == cells[c, b]:
                    out[c] = True
    return out


def _validated(nodes: np.ndarray, cells: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Shapes, finiteness and index range; warnings for unused and duplicate nodes."""
    nodes = np.asarray(nodes, dtype=np.float64)
    if nodes.ndim != 2 or nodes.shape[1] not in (2, 3):
        raise MeshError(f"{source}: nodes must be an (N, 2) array, got shape {nodes.shape}")
    nodes = np.array(nodes[:, :2], order="C")  # a copy: the caller keeps their arrays
    cells = np.asarray(cells)
    if cells.size == 0:
        raise MeshError(f"{source}: no triangles (or quads) in the mesh")
    if cells.ndim != 2 or cells.shape[1] not in (3, 4):
        raise MeshError(f"{source}: cells must be an (L, 3) or (L, 4) array, got {cells.shape}")
    if not np.issubdtype(cells.dtype, np.integer):
        raise MeshError(f"{source}: cell vertex indices must be integers, got {cells.dtype}")
    cells = np.array(cells, dtype=np.int64, order="C")
    n = nodes.shape[0]
    bad = np.flatnonzero(((cells < 0) | (cells >= n)).any(axis=1))
    if bad.size:
        raise MeshError(f"{source}: cells {_ids(bad)} use node indices outside 0..{n - 1}")
    bad = np.flatnonzero(~np.isfinite(nodes).all(axis=1))
    if bad.size:
        raise MeshError(f"{source}: nodes {_ids(bad)} have NaN or infinite coordinates")
    repeated = np.flatnonzero(_repeats_a_vertex(cells))
    if repeated.size:
        raise MeshError(f"{source}: cells {_ids(repeated)} are degenerate (a repeated vertex)")
    used = np.zeros(n, dtype=bool)
    used[cells.ravel()] = True
    if not used.all():
        unused = np.flatnonzero(~used)
        warnings.warn(f"{source}: {unused.size} unused nodes ({_ids(unused)})", stacklevel=3)
    xy = np.sort(nodes.view(np.complex128).ravel())  # by x, then y: one fast sort
    if (xy[1:] == xy[:-1]).any():
        by_xy = np.lexsort((nodes[:, 1], nodes[:, 0]))
        same = (nodes[by_xy[1:]] == nodes[by_xy[:-1]]).all(axis=1)
        # The first (lowest) node of each run of equal coordinates: lexsort is stable.
        first = np.flatnonzero(same & ~np.concatenate([[False], same[:-1]]))
        warnings.warn(
            f"{source}: {int(same.sum())} duplicate nodes (coordinates of nodes "
            f"{_ids(np.sort(by_xy[first]))} repeat); cells on them are not connected",
            stacklevel=3,
        )
    return nodes, cells


@njit(cache=True, parallel=True)
def shoelace(nodes, cells):
    """Signed (shoelace) area of each cell, positive when counter-clockwise, and the square
    of its longest edge; relative to the cell's first vertex, terms summed in vertex order."""
    n_cells, k = cells.shape
    area = np.empty(n_cells)
    longest2 = np.empty(n_cells)
    for c in prange(n_cells):
        x0 = nodes[cells[c, 0], 0]
        y0 = nodes[cells[c, 0], 1]
        acc = 0.0
        top = 0.0
        for loc in range(k):
            a = cells[c, loc]
            b = cells[c, (loc + 1) % k]
            term = (nodes[a, 0] - x0) * (nodes[b, 1] - y0) - (nodes[b, 0] - x0) * (nodes[a, 1] - y0)
            acc = term if loc == 0 else acc + term
            ex = nodes[b, 0] - nodes[a, 0]
            ey = nodes[b, 1] - nodes[a, 1]
            top = max(top, ex * ex + ey * ey)
        area[c] = 0.5 * acc
        longest2[c] = top
    return area, longest2


def _oriented(nodes: np.ndarray, cells: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Flip clockwise cells; reject degenerate ones (and non-convex quads)."""
    area, longest2 = shoelace(nodes, cells)
    bad = np.flatnonzero(np.abs(2.0 * area) <= DEGENERATE_RTOL * longest2)
    if bad.size:
        raise MeshError(f"{source}: cells {_ids(bad)} have zero area (degenerate)")
    flip = area < 0
    if flip.any():
        cells = cells.copy()
        cells[flip] = cells[flip, ::-1]
        area = np.abs(area)
    if cells.shape[1] == 4:
        vec = nodes[np.roll(cells, -1, axis=1)] - nodes[cells]
        turn = vec[..., 0] * np.roll(vec[..., 1], -1, axis=1) - vec[..., 1] * np.roll(
            vec[..., 0], -1, axis=1
        )
        bad = np.flatnonzero((turn <= 0).any(axis=1))
        if bad.size:
            raise MeshError(f"{source}: quads {_ids(bad)} are not strictly convex")
    return cells, area


@njit(cache=True, parallel=True)
def _barycentres(nodes, cells):
    """Mean of each triangle's three vertices (NumPy's ``mean`` order: sum, then divide)."""
    out = np.empty((cells.shape[0], 2))
    for c in prange(cells.shape[0]):
        a, b, d = cells[c, 0], cells[c, 1], cells[c, 2]
        for x in range(2):
            out[c, x] = (nodes[a, x] + nodes[b, x] + nodes[d, x]) / 3.0
    return out


def _centroids(nodes: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Barycentre for triangles; for quads the area centroid, as the centroids of the
    triangles (0, 1, 2) and (0, 2, 3) weighted by their signed areas. On an axis-parallel
    rectangle both weights are ½ exactly and each coordinate comes from its own axis's
    node coordinates alone, so a grid column's centroids share their x bit for bit (a bed
    given as a function of x is uniform along y to the last bit; the shoelace sum mixed in
    the cell's height)."""
    if cells.shape[1] == 3:
        return _barycentres(nodes, cells)
    pts = nodes[cells]
    origin = pts[:, 0, :]
    p1, p2, p3 = (pts[:, k, :] - origin for k in (1, 2, 3))
    a1 = p1[:, 0] * p2[:, 1] - p2[:, 0] * p1[:, 1]
    a2 = p2[:, 0] * p3[:, 1] - p3[:, 0] * p2[:, 1]
    w1, w2 = (a1 / (a1 + a2))[:, None], (a2 / (a1 + a2))[:, None]
    return w1 * ((p1 + p2) / 3.0) + w2 * ((p2 + p3) / 3.0) + origin


def _edge_order(edge_cells: np.ndarray, edge_slot: np.ndarray) -> np.ndarray:
    """Canonical edge order: by the slot each edge owns in its lower-numbered cell.

    That slot is unique per edge, and sorting by it lists edges cell by cell in
    the current cell order (the locality the reorderings are for). Unique keys in
    ``0..L*k-1`` sort by a scatter: linear, where an argsort is ``E log E``.
    """
    i, j = edge_cells[:, 0], edge_cells[:, 1]
    key = np.where((j < 0) | (i < j), edge_slot[:, 0], edge_slot[:, 1])
    at = np.full(int(key.max()) + 1 if key.size else 0, -1, dtype=np.int64)
    at[key] = np.arange(key.size, dtype=np.int64)
    return at[at >= 0]


@njit(cache=True, parallel=True)
def _gather(a, rows):
    """``a[rows]`` for a 2-D array, as a plain (parallel) loop."""
    out = np.empty((rows.size, a.shape[1]), a.dtype)
    for r in prange(rows.size):
        for c in range(a.shape[1]):
            out[r, c] = a[rows[r], c]
    return out


def take_rows(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``a[rows]`` (rows along the first axis): NumPy's fancy indexing is several times
    slower than a compiled loop on the narrow rows of edge and cell arrays."""
    flat = np.ascontiguousarray(a).reshape(a.shape[0], -1)
    return _gather(flat, rows).reshape((rows.size, *a.shape[1:]))


def inverse_permutation(perm: np.ndarray) -> np.ndarray:
    """``inv`` with ``inv[perm[n]] = n`` (int64): ``np.argsort(perm)`` of a permutation, by
    one scatter where the sort is ``n log n``."""
    inv = np.empty(perm.size, dtype=np.int64)
    inv[perm] = np.arange(perm.size, dtype=np.int64)
    return inv


@njit(cache=True, parallel=True)
def _renamed_edges(edge_cells, edge_slot, inv, k):
    """Edge cells and slots under the cell renaming ``inv`` (old -> new); -1 stays -1."""
    cells = np.empty_like(edge_cells)
    slots = np.empty_like(edge_slot)
    for e in prange(edge_cells.shape[0]):
        for s in range(2):
            c = edge_cells[e, s]
            cells[e, s] = inv[c] if c >= 0 else -1
            q = edge_slot[e, s]
            slots[e, s] = inv[q // k] * k + q % k if q >= 0 else -1
    return cells, slots


@njit(cache=True)
def _neighbour_lists(edge_cells, n_cells):
    """CSR ``(indptr, indices)`` of the cell adjacency, each row's neighbours ascending."""
    indptr = np.zeros(n_cells + 1, np.int64)
    for e in range(edge_cells.shape[0]):
        if edge_cells[e, 1] >= 0:
            indptr[edge_cells[e, 0] + 1] += 1
            indptr[edge_cells[e, 1] + 1] += 1
    for c in range(n_cells):
        indptr[c + 1] += indptr[c]
    fill = indptr[:-1].copy()
    indices = np.empty(indptr[-1], np.int32)
    for e in range(edge_cells.shape[0]):
        i, j = edge_cells[e, 0], edge_cells[e, 1]
        if j >= 0:
            indices[fill[i]] = j
            fill[i] += 1
            indices[fill[j]] = i
            fill[j] += 1
    for c in range(n_cells):  # rows are short (k entries at most): insertion sort
        for a in range(indptr[c] + 1, indptr[c + 1]):
            x = indices[a]
            b = a - 1
            while b >= indptr[c] and indices[b] > x:
                indices[b + 1] = indices[b]
                b -= 1
            indices[b + 1] = x
    return indptr, indices


def _is_permutation(perm: np.ndarray, n: int) -> bool:
    """Whether ``perm`` holds each of ``0..n-1`` exactly once."""
    if perm.size and (perm.min() < 0 or perm.max() >= n):
        return False
    return bool((np.bincount(perm, minlength=n) == 1).all())


def _match_half_edges(tail: np.ndarray, head: np.ndarray, n_nodes: int) -> tuple[np.ndarray, int]:
    """The mate of each half-edge (``-1`` on the boundary), by buckets of the lower node.

    Returns ``(mate, bad)``: ``bad`` is a half-edge whose edge more than two cells
    share, or ``-1``.
    """
    mate = np.empty(tail.size, np.int64)
    bucket = np.empty(tail.size, np.int64)
    bad = _pair_in_buckets(tail, head, n_nodes, bucket, mate, get_num_threads())
    return mate, int(bad)


@njit(cache=True, parallel=True)
def _pair_in_buckets(tail, head, n_nodes, bucket, mate, parts):
    """:func:`_match_half_edges`: a counting sort of the half-edges into buckets by lower
    node, then the buckets paired, both in parallel.

    Each of ``parts`` tasks (one per thread) owns one range of nodes: it reads every
    half-edge and counts, then places, those of its buckets, so a bucket lists its
    half-edges in ascending order whatever the number of parts. ``mate`` is all written.
    """
    m = tail.size
    for h in prange(m):
        mate[h] = -1
    start = np.zeros(n_nodes + 1, np.int64)
    for r in prange(parts):
        first, stop = r * n_nodes // parts, (r + 1) * n_nodes // parts
        for h in range(m):
            lo = min(tail[h], head[h])
            if first <= lo < stop:
                start[lo + 1] += 1
    for v in range(n_nodes):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    for r in prange(parts):
        first, stop = r * n_nodes // parts, (r + 1) * n_nodes // parts
        for h in range(m):
            lo = min(tail[h], head[h])
            if first <= lo < stop:
                bucket[fill[lo]] = h
                fill[lo] += 1
    crowded = np.full(n_nodes, -1, np.int64)
    for v in prange(n_nodes):
        for a in range(start[v], start[v + 1]):
            ha = bucket[a]
            far = max(tail[ha], head[ha])
            for b in range(a + 1, start[v + 1]):
                hb = bucket[b]
                if max(tail[hb], head[hb]) == far:
                    if mate[ha] >= 0 or mate[hb] >= 0:
                        crowded[v] = ha
                    mate[ha] = hb
                    mate[hb] = ha
    for v in range(n_nodes):
        if crowded[v] >= 0:
            return crowded[v]
    return -1


def _n_chunks(n: int) -> int:
    """Pieces of a length-``n`` pass that parallel kernels take one per task: fixed by
    ``n`` (at most 256, at least 16 Ki items each), so results never depend on threads."""
    return max(1, min(256, n // 16384))


@njit(cache=True, parallel=True)
def _fill_edges(nodes, tail, head, mate, k, start, cells, slot, ends, normal, length):
    """Fill the edge arrays from matched half-edges; return how many pairs traverse their
    edge the same way (overlapping cells).

    Edge order is half-edge order: one edge per boundary half-edge and per lower
    half-edge of a pair, so cell ``i`` is the pair's lower cell and ``slot[:, 0]`` is
    the canonical key of :func:`_edge_order`, ascending. Chunk ``c`` of the half-edges
    writes its edges from ``start[c]``.
    """
    m = mate.size
    n_chunks = start.size - 1
    same_way = np.zeros(n_chunks, np.int64)
    for c in prange(n_chunks):
        e = start[c]
        for h in range(c * m // n_chunks, (c + 1) * m // n_chunks):
            g = mate[h]
            if 0 <= g < h:
                continue
            a, b = tail[h], head[h]
            cells[e, 0] = h // k
            cells[e, 1] = g // k if g >= 0 else -1
            slot[e, 0] = h
            slot[e, 1] = g
            ends[e, 0] = a
            ends[e, 1] = b
            dx = nodes[b, 0] - nodes[a, 0]
            dy = nodes[b, 1] - nodes[a, 1]
            le = np.hypot(dx, dy)
            length[e] = le
            normal[e, 0] = dy / le
            normal[e, 1] = -dx / le
            if g >= 0 and tail[g] == a:
                same_way[c] += 1
            e += 1
    return same_way.sum()


@njit(cache=True, parallel=True)
def _edge_starts(mate, n_chunks):
    """First edge of each chunk of half-edges (see :func:`_fill_edges`), and the total."""
    m = mate.size
    start = np.zeros(n_chunks + 1, np.int64)
    for c in prange(n_chunks):
        count = 0
        for h in range(c * m // n_chunks, (c + 1) * m // n_chunks):
            if mate[h] < 0 or h < mate[h]:
                count += 1
        start[c + 1] = count
    for c in range(n_chunks):
        start[c + 1] += start[c]
    return start


@njit(cache=True, parallel=True)
def _half_edge_heads(cells, head):
    """``head`` = ``np.roll(cells, -1, axis=1).ravel()``, the node each half-edge runs to,
    as a parallel loop (the roll is a serial copy)."""
    n_cells, k = cells.shape
    for c in prange(n_cells):
        for loc in range(k):
            head[c * k + loc] = cells[c, (loc + 1) % k]


def _topology(nodes: np.ndarray, cells: np.ndarray, source: str) -> dict[str, np.ndarray]:
    """Unique edges, their two cells, slots, normals and lengths from matched half-edges."""
    n_cells, k = cells.shape
    tail = cells.ravel()
    head = np.empty_like(tail)
    _half_edge_heads(cells, head)
    mate, bad = _match_half_edges(tail, head, nodes.shape[0])
    if bad >= 0:
        lo, hi = np.minimum(tail, head), np.maximum(tail, head)
        hes = np.flatnonzero((lo == lo[bad]) & (hi == hi[bad]))
        raise MeshError(
            f"{source}: edge between nodes {tail[hes[0]]} and {head[hes[0]]} is shared by "
            f"{hes.size} cells ({_ids(hes // k)}); at most two cells may share an edge"
        )
    start = _edge_starts(mate, _n_chunks(mate.size))
    n_e = int(start[-1])
    out = {
        "edge_cells": np.empty((n_e, 2), np.int64),
        "edge_slot": np.empty((n_e, 2), np.int64),
        "edge_nodes": np.empty((n_e, 2), np.int64),
        "edge_normal": np.empty((n_e, 2)),
        "edge_length": np.empty(n_e),
    }
    if _fill_edges(nodes, tail, head, mate, k, start, *out.values()):
        slot = out["edge_slot"]
        e = np.flatnonzero(
            (slot[:, 1] >= 0) & (tail[slot[:, 0]] == tail[np.maximum(slot[:, 1], 0)])
        )
        raise MeshError(
            f"{source}: cells {_ids(slot[e] // k)} overlap "
            f"(they traverse a shared edge in the same direction)"
        )
    return out


def _boundary_tag_ids(
    n_nodes: int,
    edge_nodes: np.ndarray,
    edge_cells: np.ndarray,
    boundary_tags: Mapping[str, np.ndarray] | None,
    source: str,
) -> tuple[np.ndarray, dict[str, int]]:
    """Tag id per edge (0 interior) from named node pairs; the rest of the boundary is "wall"."""
    tags: dict[str, int] = {}
    keys, ids = [np.empty(0, np.int64)], [np.empty(0, np.int32)]
    for name, pairs in (boundary_tags or {}).items():
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        if ((pairs < 0) | (pairs >= n_nodes)).any():
            raise MeshError(f"{source}: boundary tag {name!r} names nodes outside 0..{n_nodes - 1}")
        tags[str(name)] = len(tags) + 1
        keys.append(pairs.min(axis=1) * np.int64(n_nodes) + pairs.max(axis=1))
        ids.append(np.full(pairs.shape[0], tags[str(name)], dtype=np.int32))
    tkeys, tids = np.concatenate(keys), np.concatenate(ids)
    srt = np.argsort(tkeys, kind="stable")
    tkeys, tids = tkeys[srt], tids[srt]
    edge_tag = np.zeros(edge_nodes.shape[0], dtype=np.int32)
    bnd = np.flatnonzero(edge_cells[:, 1] < 0)
    en = edge_nodes[bnd]
    bkey = en.min(axis=1) * np.int64(n_nodes) + en.max(axis=1)
    pos = np.minimum(np.searchsorted(tkeys, bkey), max(tkeys.size - 1, 0))
    found = tkeys[pos] == bkey if tkeys.size else np.zeros(bnd.size, dtype=bool)
    if not found.all():
        tags.setdefault(DEFAULT_TAG, len(tags) + 1)
    edge_tag[bnd] = np.where(found, tids[pos] if tkeys.size else 0, tags.get(DEFAULT_TAG, 0))
    return edge_tag, tags
