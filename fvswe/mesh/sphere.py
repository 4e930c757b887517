"""Longitude/latitude meshes solved on the sphere (docs/SCHEMES.md §20).

A mesh whose nodes are ``(longitude, latitude)`` in degrees is a planar mesh in
``X = R lambda``, ``Y = R phi`` (radians) whose map to the sphere has the metric
``diag(cos^2 phi, 1)``. :func:`on_sphere` gives it the sphere's geometry, so that every
backend, variant and rank reads the same numbers from the :class:`Mesh` arrays: each edge's
normal times length in the local east/north frame, ``(dY, -dX mean(cos phi))`` (the mean over
the edge, exact for an edge straight in lon/lat), each cell's area
``-R^2 sum_e dlambda_e mean_e(sin phi)`` (the exact ``R^2 integral of cos phi`` over the cell),
and per cell ``(G_x, G_y, tan(phi)/R)`` for the sources of :mod:`fvswe.physics.sphere`.
Nodes and centroids stay in degrees (gauges, outputs and rasters are in lon/lat).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import MeshError
from .core import Mesh

#: The Earth's mean radius (m), the default R.
RADIUS = 6_371_000.0


def _mean_factor(half: np.ndarray) -> np.ndarray:
    """``sin(d) / d`` of half the latitude difference ``d`` (1 at 0): the factor that turns the
    midpoint's cos (sin) into the mean of cos (sin) over a straight lon/lat segment."""
    safe = np.where(half == 0, 1.0, half)
    return np.where(half == 0, 1.0, np.sin(safe) / safe)


def _segments(lon: np.ndarray, lat: np.ndarray, a: np.ndarray, b: np.ndarray):
    """Per segment a -> b: ``dlambda``, ``dphi``, the mean of cos(phi) and of sin(phi)."""
    dlon, dlat = lon[b] - lon[a], lat[b] - lat[a]
    mid, k = 0.5 * (lat[a] + lat[b]), _mean_factor(0.5 * dlat)
    return dlon, dlat, np.cos(mid) * k, np.sin(mid) * k


def _check(mesh: Mesh) -> None:
    """One-line MeshErrors: a node at a pole or beyond, a cell across the ±180° meridian."""
    lon, lat = mesh.nodes[:, 0], mesh.nodes[:, 1]
    bad = np.flatnonzero(~(np.abs(lat) < 90.0))
    if bad.size:
        n = int(bad[0])
        raise MeshError(f"{mesh.source}: node {n} at latitude {lat[n]:g}: a lon/lat mesh "
                        "must stay off the poles (|latitude| < 90 degrees)")  # fmt: skip
    span = np.ptp(lon[mesh.cells], axis=1)
    bad = np.flatnonzero(span > 180.0)
    if bad.size:
        c = int(bad[0])
        x, y = mesh.centroid[c]
        raise MeshError(f"{mesh.source}: cell {c} at ({x:g}, {y:g}) spans {span[c]:g} degrees "
                        "of longitude: cut the mesh at the ±180° meridian and join the cut by "
                        "a periodic pair of tags (fvswe.boundary.Periodic)")  # fmt: skip


def on_sphere(
    mesh: Mesh, radius: float = RADIUS, edge_ids: np.ndarray | None = None
) -> tuple[Mesh, np.ndarray]:
    """``mesh`` (degrees) with the sphere's areas, edge normals and lengths, and the per-cell
    ``(G_x, G_y, tan(phi_i)/R)`` (float64, ``phi_i`` the centroid's latitude), where
    ``G_i = sum_e |Gamma_e| n_e / |V_i|`` over the cell's edges, outward, summed in the edges'
    global order (``edge_ids``: a part's edges' global ids, whose order a border cell's part
    order is not; None: the mesh's own order), so that a part's owned cells, which have all
    their edges, get the whole mesh's bits (its halo cells' sums lack their other parts'
    edges, and no rank reads them)."""
    _check(mesh)
    lon, lat = np.radians(mesh.nodes[:, 0]), np.radians(mesh.nodes[:, 1])
    dlon, dlat, cos_m, _ = _segments(lon, lat, mesh.edge_nodes[:, 0], mesh.edge_nodes[:, 1])
    nl = np.stack([radius * dlat, -radius * dlon * cos_m], axis=1)
    length = np.hypot(nl[:, 0], nl[:, 1])
    cells = mesh.cells
    dlon_c, _, _, sin_m = _segments(lon, lat, cells.ravel(), np.roll(cells, -1, axis=1).ravel())
    area = -(radius * radius) * (dlon_c * sin_m).reshape(cells.shape).sum(axis=1)
    bad = np.flatnonzero(~(area > 0))
    if bad.size:
        raise MeshError(f"{mesh.source}: cell {int(bad[0])} has no area on the sphere")
    order = slice(None) if edge_ids is None else np.argsort(edge_ids, kind="stable")
    (i, j), nl_ordered = mesh.edge_cells[order].T, nl[order]
    closure = np.zeros((mesh.n_cells, 2))
    np.add.at(closure, i, nl_ordered)
    np.add.at(closure, j[j >= 0], -nl_ordered[j >= 0])
    metric = np.column_stack([closure / area[:, None],
                              np.tan(np.radians(mesh.centroid[:, 1])) / radius])  # fmt: skip
    sphere = replace(mesh, area=area, edge_normal=nl / length[:, None], edge_length=length)
    return sphere, np.ascontiguousarray(metric)
