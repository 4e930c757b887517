"""Domain decomposition: split a mesh's cells into P parts, each with one layer of halo cells.

A part owns a set of cells and sees, beyond them, the *halo*: every cell that
shares an edge with an owned cell but is owned elsewhere. Each part is
numbered locally as

    [owned interior cells | owned border cells | halo cells]

where an *interior* cell has no halo neighbour and a *border* cell has at
least one. Within each group the cells keep the order of the mesh they were
cut from, so a mesh already renumbered with the run's ``order`` (hilbert,
rcm, ...) keeps that locality inside every part. The split itself is METIS
k-way on the cell adjacency (``pymetis``, balanced cell counts, few cut edges)
or, without pymetis, the Hilbert curve of the cell centroids cut into P runs
of equal length (:func:`fvswe.mesh.orderings.hilbert_key`).

The local edges are every edge with at least one owned cell, in the mesh's
edge order: first those whose side ``i`` is owned (the part counts their
events), then those whose side ``i`` is a halo cell. An edge between two
parts is therefore computed on both, from the same operands and the same
orientation, normal and slots: both parts get the single-device bits.

One halo layer suffices for the first-order schemes here: a cell's update
reads only its edge neighbours. It suffices for the linear reconstruction
too (docs/SCHEMES.md §19), which **exchanges face states, not a second
ring**: an owned cell's reconstruction reads its edge neighbours' states
(the halo's, up to date after the state's exchange) and their troubled
flags (computed from those states); the halo cells' face states, which the
edges between an owned and a halo cell read, are computed by their owners
and received through the same send/receive lists (each cell's ``k`` slots
one row: ``fvswe.backends.halo.Halo.exchange_faces``), and the limiter's
variable ranges are reduced over the ranks (``Halo.extent``, exact min and
max). So an owned cell sees the single-device operands and gets its bits,
at the cost of one more exchange per stage, of ``k`` face states a cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ConfigError
from .output import atomic_write

METHODS = ("auto", "metis", "hilbert")


def method_name(method: str) -> str:
    """``metis`` or ``hilbert``: what ``auto`` means here (METIS when pymetis imports)."""
    if method not in METHODS:
        raise ConfigError(
            f"partition: unknown method {method!r} (choose from {', '.join(METHODS)})"
        )
    if method != "auto":
        return method
    try:
        import pymetis  # noqa: F401
    except ImportError:
        return "hilbert"
    return "metis"


def assign(mesh, nparts: int, method: str = "auto") -> np.ndarray:
    """The part (0..nparts-1) of every cell; ``auto`` is METIS when pymetis imports."""
    method = method_name(method)
    if not 1 <= nparts <= mesh.n_cells:
        raise ConfigError(
            f"partition: cannot split {mesh.n_cells} cells of {mesh.source} into {nparts} parts"
        )
    if nparts == 1:
        return np.zeros(mesh.n_cells, dtype=np.int32)
    if method == "hilbert":
        from .mesh.orderings import hilbert_key

        order = np.argsort(hilbert_key(mesh.centroid), kind="stable")
        part = np.empty(mesh.n_cells, dtype=np.int32)
        part[order] = np.arange(mesh.n_cells) * nparts // mesh.n_cells
        return part
    try:
        import pymetis
    except ImportError:
        raise ConfigError("partition: method 'metis' needs pymetis (pip install pymetis)") from None
    adj = mesh.adjacency()
    opts = pymetis.Options(seed=0)
    graph = pymetis.CSRAdjacency(adj.indptr, adj.indices)
    _, member = pymetis.part_graph(nparts, graph, options=opts)
    part = np.asarray(member, dtype=np.int32)
    if np.bincount(part, minlength=nparts).min() == 0:
        raise ConfigError(f"partition: METIS left a part of {mesh.source} empty ({nparts} parts)")
    return part


@dataclass(frozen=True)
class Part:
    """One part in the mesh's numbering (see the module docstring for the local order).

    ``cells[n]`` is the mesh cell of local cell ``n``; ``edges`` the mesh edges of the
    part. ``peers[q]`` is a neighbouring part; ``send[q]`` the local owned cells it
    needs, ``recv[q]`` the local halo cells it owns, both in mesh order (so the lists
    of two neighbours match element by element).
    """

    index: int
    cells: np.ndarray
    n_interior: int
    n_owned: int
    edges: np.ndarray
    n_owned_edges: int
    peers: tuple[int, ...]
    send: tuple[np.ndarray, ...]
    recv: tuple[np.ndarray, ...]

    @property
    def n_halo(self) -> int:
        return self.cells.size - self.n_owned


def split(mesh, part: np.ndarray) -> list[Part]:
    """The :class:`Part` of every part number in ``part`` (one entry per cell)."""
    nparts = int(part.max()) + 1
    ec = mesh.edge_cells
    inner = ec[:, 1] >= 0
    pi = part[ec[:, 0]]
    pj = np.where(inner, part[np.maximum(ec[:, 1], 0)], -1)
    cut = np.flatnonzero(inner & (pi != pj))
    # Each cut edge makes its i cell a halo cell of pj and its j cell one of pi.
    halo_cell = np.concatenate([ec[cut, 0], ec[cut, 1]])
    halo_part = np.concatenate([pj[cut], pi[cut]])
    border = np.zeros(mesh.n_cells, dtype=bool)
    border[halo_cell] = True
    out = []
    for p in range(nparts):
        owned = part == p
        interior = np.flatnonzero(owned & ~border)
        edge_border = np.flatnonzero(owned & border)
        halo = np.unique(halo_cell[halo_part == p])
        cells = np.concatenate([interior, edge_border, halo])
        local = np.full(mesh.n_cells, -1, dtype=np.int64)
        local[cells] = np.arange(cells.size)
        mine_i = pi == p
        mine_j = pj == p
        edges = np.concatenate([np.flatnonzero(mine_i), np.flatnonzero(mine_j & ~mine_i)])
        peers = tuple(int(q) for q in np.unique(part[halo]))
        send = tuple(
            local[np.unique(halo_cell[(halo_part == q) & owned[halo_cell]])] for q in peers
        )
        recv = tuple(local[halo[part[halo] == q]] for q in peers)
        out.append(
            Part(
                index=p, cells=cells, n_interior=interior.size,
                n_owned=interior.size + edge_border.size, edges=edges,
                n_owned_edges=int(mine_i.sum()), peers=peers, send=send, recv=recv,
            )
        )  # fmt: skip
    return out


def local_edges(
    part: Part, edge_cells: np.ndarray, edge_slot: np.ndarray, n_cells: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(edge_cells, edge_slot)`` of ``part``'s edges in its local cell numbering (int64):
    each edge keeps its orientation and the local part ``l`` of its slots ``cell*k + l``;
    -1 stays -1. ``edge_cells``, ``edge_slot``: the global ones, of ``n_cells`` cells."""
    local = np.full(n_cells, -1, dtype=np.int64)
    local[part.cells] = np.arange(part.cells.size)
    ec = edge_cells[part.edges]
    slot = edge_slot[part.edges]
    cells = np.where(ec >= 0, local[np.maximum(ec, 0)], -1)
    slots = np.where(slot >= 0, local[np.maximum(slot, 0) // k] * k + slot % k, -1)
    return cells, slots


def stats(mesh, part: np.ndarray, parts: list[Part]) -> dict:
    """Part sizes, halo sizes, edge cut and load imbalance (largest part / mean part)."""
    ec = mesh.edge_cells
    inner = ec[:, 1] >= 0
    cut = int(np.count_nonzero(part[ec[inner, 0]] != part[ec[inner, 1]]))
    sizes = [p.n_owned for p in parts]
    return {
        "source": mesh.source,
        "cells": mesh.n_cells,
        "parts": len(parts),
        "owned": sizes,
        "halo": [p.n_halo for p in parts],
        "neighbours": [len(p.peers) for p in parts],
        "edge_cut": cut,
        "imbalance": max(sizes) / (mesh.n_cells / len(parts)),
    }


def draw_parts(mesh, part: np.ndarray, path, *, title: str | None = None) -> None:
    """A PNG of the parts (one colour each) with the cut edges drawn in black, whole or not at
    all (a full disk is one line naming ``path``)."""
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure  # no pyplot: no global state, no display needed
    from matplotlib.tri import Triangulation

    from .plot import _triangles

    nparts = int(part.max()) + 1
    tris, owner = _triangles(mesh.cells)
    fig = Figure(figsize=(6.4, 6.0))
    ax = fig.subplots()
    ax.tripcolor(
        Triangulation(mesh.nodes[:, 0], mesh.nodes[:, 1], tris),
        facecolors=part[owner].astype(np.float64),
        cmap="tab20" if nparts > 10 else "tab10",
        vmin=-0.5,
        vmax=(20 if nparts > 10 else 10) - 0.5,
        shading="flat",
        antialiased=False,
    )
    ec = mesh.edge_cells
    inner = np.flatnonzero(ec[:, 1] >= 0)
    cut = inner[part[ec[inner, 0]] != part[ec[inner, 1]]]
    ax.add_collection(LineCollection(mesh.nodes[mesh.edge_nodes[cut]], colors="k", linewidths=0.8))
    for p in range(nparts):
        x, y = mesh.centroid[part == p].mean(axis=0)
        ax.text(x, y, str(p), ha="center", va="center", fontsize=12, weight="bold")
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(title or f"{mesh.n_cells} cells in {nparts} parts", fontsize=10)
    fig.tight_layout()
    atomic_write(path, lambda p: fig.savefig(p, dpi=110, format="png"))
