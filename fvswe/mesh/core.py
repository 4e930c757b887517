"""The finite-volume mesh: validated cells, geometry and edge topology, all vectorised NumPy.

Topology is built from half-edges: local edge ``l`` of cell ``c`` joins
``cells[c, l] -> cells[c, (l+1) % k]`` and owns accumulator slot ``c*k + l``.
Half-edges are matched by sorting their unordered node pairs, so building a
2 M-triangle mesh costs a few sorts, not a Python loop.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..errors import MeshError

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
        inner = self.edge_cells[self.edge_cells[:, 1] >= 0]
        rows = np.concatenate([inner[:, 0], inner[:, 1]])
        cols = np.concatenate([inner[:, 1], inner[:, 0]])
        data = np.ones(rows.size, dtype=np.int8)
        n = self.n_cells
        adj = sp.csr_matrix((data, (rows, cols)), shape=(n, n))
        adj.sort_indices()
        return adj

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
        if depth is not None:
            depth = np.asarray(depth, dtype=np.float64).reshape(-1)
            if depth.shape[0] != cells.shape[0]:
                raise MeshError(
                    f"{source}: depth has {depth.shape[0]} values for {cells.shape[0]} cells"
                )
        topo = _topology(nodes, cells, source)
        tag_ids, tags = _boundary_tag_ids(
            nodes.shape[0], topo["edge_nodes"], topo["edge_cells"], boundary_tags, source
        )
        return cls(
            nodes=nodes,
            cells=cells,
            area=area,
            centroid=_centroids(nodes, cells, area),
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
        if perm.shape != (n,) or not np.array_equal(np.sort(perm), np.arange(n)):
            raise MeshError(f"{self.source}: ordering is not a permutation of {n} cells")
        inv = np.empty(n, dtype=np.int64)
        inv[perm] = np.arange(n, dtype=np.int64)
        ec = self.edge_cells
        new_cells = np.where(ec >= 0, inv[np.maximum(ec, 0)], -1)
        slot = self.edge_slot
        new_slot = np.where(slot >= 0, inv[np.maximum(slot, 0) // k] * k + slot % k, -1)
        order = _edge_order(new_cells, new_slot)
        return replace(
            self,
            cells=self.cells[perm],
            area=self.area[perm],
            centroid=self.centroid[perm],
            depth=None if self.depth is None else self.depth[perm],
            original_index=self.original_index[perm],
            edge_cells=new_cells[order],
            edge_slot=new_slot[order],
            edge_nodes=self.edge_nodes[order],
            edge_normal=self.edge_normal[order],
            edge_length=self.edge_length[order],
            edge_tag=self.edge_tag[order],
        )

    def reordered(self, method: str = "none", seed: int = 0) -> tuple[Mesh, np.ndarray]:
        """Renumber cells by ``method`` (none, rcm, gps, random, hilbert, morton).

        Returns ``(mesh, perm)`` where new cell ``n`` is old cell ``perm[n]``.
        """
        from .orderings import ordering

        perm = ordering(self, method, seed=seed)
        return self.permuted(perm), perm


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
    repeated = np.flatnonzero(
        (np.sort(cells, axis=1)[:, 1:] == np.sort(cells, axis=1)[:, :-1]).any(axis=1)
    )
    if repeated.size:
        raise MeshError(f"{source}: cells {_ids(repeated)} are degenerate (a repeated vertex)")
    used = np.zeros(n, dtype=bool)
    used[cells.ravel()] = True
    if not used.all():
        unused = np.flatnonzero(~used)
        warnings.warn(f"{source}: {unused.size} unused nodes ({_ids(unused)})", stacklevel=3)
    _, first, counts = np.unique(nodes, axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        dup = np.sort(first[counts > 1])
        warnings.warn(
            f"{source}: {int((counts - 1).sum())} duplicate nodes (coordinates of nodes "
            f"{_ids(dup)} repeat); cells on them are not connected",
            stacklevel=3,
        )
    return nodes, cells


def _signed_area(nodes: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Shoelace area of each cell, positive when counter-clockwise."""
    x = nodes[cells, 0]
    y = nodes[cells, 1]
    x = x - x[:, :1]
    y = y - y[:, :1]
    return 0.5 * (x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y).sum(axis=1)


def _oriented(nodes: np.ndarray, cells: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Flip clockwise cells; reject degenerate ones (and non-convex quads)."""
    area = _signed_area(nodes, cells)
    edge_vec = nodes[np.roll(cells, -1, axis=1)] - nodes[cells]
    longest2 = (edge_vec**2).sum(axis=2).max(axis=1)
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


def _centroids(nodes: np.ndarray, cells: np.ndarray, area: np.ndarray) -> np.ndarray:
    """Barycentre for triangles, area centroid for quads."""
    pts = nodes[cells]
    if cells.shape[1] == 3:
        return pts.mean(axis=1)
    origin = pts[:, :1, :]
    p = pts - origin
    q = np.roll(p, -1, axis=1)
    cross = p[..., 0] * q[..., 1] - q[..., 0] * p[..., 1]
    c = ((p + q) * cross[..., None]).sum(axis=1) / (6.0 * area[:, None])
    return c + origin[:, 0, :]


def _edge_order(edge_cells: np.ndarray, edge_slot: np.ndarray) -> np.ndarray:
    """Canonical edge order: by the slot each edge owns in its lower-numbered cell.

    That slot is unique per edge, and sorting by it lists edges cell by cell in
    the current cell order (the locality the reorderings are for).
    """
    i, j = edge_cells[:, 0], edge_cells[:, 1]
    key = np.where((j < 0) | (i < j), edge_slot[:, 0], edge_slot[:, 1])
    return np.argsort(key, kind="stable")


def _topology(nodes: np.ndarray, cells: np.ndarray, source: str) -> dict[str, np.ndarray]:
    """Unique edges, their two cells, slots, normals and lengths from matched half-edges."""
    n_cells, k = cells.shape
    tail = cells.ravel()
    head = np.roll(cells, -1, axis=1).ravel()
    lo = np.minimum(tail, head)
    hi = np.maximum(tail, head)
    key = lo * np.int64(nodes.shape[0]) + hi
    order = np.argsort(key)
    sorted_key = key[order]
    start = np.empty(order.size, dtype=bool)
    start[0] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=start[1:])
    first = np.flatnonzero(start)
    counts = np.diff(np.append(first, order.size))
    if (counts > 2).any():
        g = np.flatnonzero(counts > 2)[0]
        hes = order[first[g] : first[g] + counts[g]]
        raise MeshError(
            f"{source}: edge between nodes {tail[hes[0]]} and {head[hes[0]]} is shared by "
            f"{counts[g]} cells ({_ids(hes // k)}); at most two cells may share an edge"
        )
    h1 = order[first]
    h2 = np.where(counts == 2, order[np.minimum(first + 1, order.size - 1)], -1)
    pair = h2 >= 0
    hi_side = np.where(pair, np.minimum(h1, h2), h1)
    hj_side = np.where(pair, np.maximum(h1, h2), -1)
    same_way = pair & (tail[hi_side] == tail[np.maximum(hj_side, 0)])
    if same_way.any():
        e = np.flatnonzero(same_way)
        raise MeshError(
            f"{source}: cells {_ids(np.stack([hi_side[e], hj_side[e]], 1) // k)} overlap "
            f"(they traverse a shared edge in the same direction)"
        )
    edge_cells = np.stack([hi_side // k, np.where(pair, hj_side // k, -1)], axis=1)
    edge_slot = np.stack([hi_side, hj_side], axis=1)
    ord_e = _edge_order(edge_cells, edge_slot)
    edge_cells, edge_slot = edge_cells[ord_e], edge_slot[ord_e]
    hi_side = hi_side[ord_e]
    edge_nodes = np.stack([tail[hi_side], head[hi_side]], axis=1)
    d = nodes[edge_nodes[:, 1]] - nodes[edge_nodes[:, 0]]
    length = np.hypot(d[:, 0], d[:, 1])
    normal = np.stack([d[:, 1], -d[:, 0]], axis=1) / length[:, None]
    return {
        "edge_cells": edge_cells,
        "edge_nodes": edge_nodes,
        "edge_slot": edge_slot,
        "edge_length": length,
        "edge_normal": normal,
    }


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
