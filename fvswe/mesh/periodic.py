"""Periodic boundaries: pairs of boundary tags joined edge by edge into interior edges.

Each edge of tag ``a`` is matched to the edge of tag ``b`` that it equals after one
translation, and each matched pair becomes one interior edge between their two cells
(docs/SCHEMES.md §7.8). Every backend, variant and rank count then runs the pairing with
no edge code of its own: a periodic edge is an interior edge whose cells lie a period apart.
The translation is kept per edge (``Mesh.edge_shift``) for what uses cell-centre offsets:
the linear reconstruction's weights (each side sees the other moved by it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from scipy.spatial import cKDTree

from ..errors import MeshError
from .core import Mesh, _edge_order, take_rows

#: Matched edge ends may differ by this fraction of the edge's length.
MATCH_RTOL = 1e-6


def periodic(mesh: Mesh, pairs: Sequence[tuple[str, str]]) -> Mesh:
    """``mesh`` with each tag pair ``(a, b)`` joined: edge ``(i_A, i_B)``, slots
    ``(slot_A, slot_B)``, A's nodes, normal (out of ``i_A``, across the period into
    ``i_B``) and length, tag 0, and ``edge_shift`` the translation ``t`` that moves A's
    edges onto B's. A one-line :class:`MeshError` naming both tags and the first unmatched
    edge's position where the edges do not match by one translation."""
    used: set[str] = set()
    cells, slots = mesh.edge_cells.copy(), mesh.edge_slot.copy()
    tag, keep = mesh.edge_tag.copy(), np.ones(mesh.n_edges, dtype=bool)
    shift = np.zeros((mesh.n_edges, 2)) if mesh.edge_shift is None else mesh.edge_shift.copy()
    for a, b in pairs:
        for name in (a, b):
            if name in used:
                raise MeshError(f"{mesh.source}: periodic tag {name!r} is in two pairs")
            used.add(name)
        ea, eb = _tag_edges(mesh, a, (a, b)), _tag_edges(mesh, b, (a, b))
        mate, shift[ea] = _matched(mesh, a, b, ea, eb)
        ia, ib = mesh.edge_cells[ea, 0], mesh.edge_cells[eb[mate], 0]
        if np.any(ia == ib):
            raise MeshError(
                f"{mesh.source}: periodic tags {a!r} and {b!r}: cell {int(ia[ia == ib][0])} "
                "meets itself across the period (use at least two cells across)"
            )
        cells[ea, 1] = ib
        slots[ea, 1] = mesh.edge_slot[eb[mate], 0]
        tag[ea] = 0
        keep[eb] = False
    kept = np.flatnonzero(keep)
    order = kept[_edge_order(cells[kept], slots[kept])]
    return replace(
        mesh,
        edge_cells=take_rows(cells, order),
        edge_slot=take_rows(slots, order),
        edge_nodes=take_rows(mesh.edge_nodes, order),
        edge_normal=take_rows(mesh.edge_normal, order),
        edge_length=take_rows(mesh.edge_length, order),
        edge_tag=take_rows(tag, order),
        edge_shift=take_rows(shift, order),
    )


def _tag_edges(mesh: Mesh, name: str, pair: tuple[str, str]) -> np.ndarray:
    """The boundary edges of tag ``name`` (one of ``pair``); none: an error."""
    tid = mesh.tags.get(name)
    edges = np.flatnonzero((mesh.edge_tag == tid) & mesh.boundary) if tid else np.zeros(0, int)
    if not edges.size:
        known = ", ".join(sorted(mesh.tags)) or "none"
        raise MeshError(
            f"{mesh.source}: periodic pair ({pair[0]!r}, {pair[1]!r}): tag {name!r} owns no "
            f"boundary edge (its boundary tags: {known})"
        )
    return edges


def _matched(
    mesh: Mesh, a: str, b: str, ea: np.ndarray, eb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(mate, shift)``: for each edge of ``ea``, its mate's place in ``eb``, the edge whose
    ends are its own reversed and moved by ``shift``, the translation from A's edge
    midpoints' mean to B's."""
    pa, pb = mesh.nodes[mesh.edge_nodes[ea]], mesh.nodes[mesh.edge_nodes[eb]]
    ma, mb = pa.mean(axis=1), pb.mean(axis=1)
    where = f"{mesh.source}: periodic tags {a!r} and {b!r} do not match"
    if ea.size != eb.size:
        x, y = ma[0]
        raise MeshError(f"{where}: {ea.size} edges against {eb.size} (first of {a!r} at "
                        f"({x:.6g}, {y:.6g}))")  # fmt: skip
    shift = mb.mean(axis=0) - ma.mean(axis=0)
    _, mate = cKDTree(mb).query(ma + shift)
    tol = MATCH_RTOL * mesh.edge_length[ea]
    gap = np.maximum(
        np.abs(pa[:, 0] + shift - pb[mate, 1]).max(axis=1),
        np.abs(pa[:, 1] + shift - pb[mate, 0]).max(axis=1),
    )
    bad = np.flatnonzero(gap > tol)
    if not bad.size and np.unique(mate).size != mate.size:
        bad = np.flatnonzero(np.bincount(mate, minlength=eb.size)[mate] > 1)
    if bad.size:
        x, y = ma[bad[0]]
        dx, dy = shift
        raise MeshError(f"{where}: the edge of {a!r} at ({x:.6g}, {y:.6g}) has no mate "
                        f"shifted by ({dx:.6g}, {dy:.6g})")  # fmt: skip
    return mate, shift
