"""Mesh generators: the paper's unstructured square, a symmetric structured square, a 1-D strip,
a longitude/latitude band of the globe.

``square`` numbers its triangles as Delaunay (Qhull) emits them: that is the
"generator's order" whose large bandwidth the renumbering paper starts from.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import Delaunay

from ..errors import ConfigError
from .core import Mesh

#: Half-width of the paper's domain [-5, 5]^2.
HALF = 5.0

#: Smoothing passes (each: move interior points to the area-weighted centroid of their star).
SMOOTHING_PASSES = 20


def _check_count(name: str, value, least: int) -> None:
    """A count (cells, squares) must be a whole number: 300.5 triangles is a typo."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
        raise ConfigError(f"{name} must be a whole number of at least {least}, got {value!r}")


def _boundary_points(n_b: int, half: float) -> np.ndarray:
    """``n_b`` points on the square's boundary, counter-clockwise, corners included.

    The four sides get ``n_b // 4`` segments each, the remainder goes one per side
    from the first, so any ``n_b >= 4`` works (the parity of ``n_b`` fixes that of
    the triangle count).
    """
    seg = np.full(4, n_b // 4)
    seg[: n_b % 4] += 1
    corners = np.array([[-half, -half], [half, -half], [half, half], [-half, half]])
    pts = []
    for s in range(4):
        t = np.arange(seg[s])[:, None] / seg[s]
        pts.append(corners[s] + t * (corners[(s + 1) % 4] - corners[s]))
    return np.concatenate(pts)


def _smooth(points: np.ndarray, n_fixed: int, passes: int) -> np.ndarray:
    """Centroidal smoothing of the points after the first ``n_fixed`` (re-triangulated per pass)."""
    pts = points.copy()
    for _ in range(passes):
        tri = Delaunay(pts).simplices
        p = pts[tri]
        a = 0.5 * np.abs(
            (p[:, 1, 0] - p[:, 0, 0]) * (p[:, 2, 1] - p[:, 0, 1])
            - (p[:, 2, 0] - p[:, 0, 0]) * (p[:, 1, 1] - p[:, 0, 1])
        )
        c = p.mean(axis=1)
        wsum = np.bincount(tri.ravel(), np.repeat(a, 3), minlength=len(pts))
        cx = np.bincount(tri.ravel(), np.repeat(a * c[:, 0], 3), minlength=len(pts))
        cy = np.bincount(tri.ravel(), np.repeat(a * c[:, 1], 3), minlength=len(pts))
        new = np.stack([cx, cy], axis=1) / wsum[:, None]
        pts[n_fixed:] = new[n_fixed:]
    return pts


def square(cells: int = 4000, seed: int = 0, half: float = HALF) -> Mesh:
    """Unstructured Delaunay mesh of ``[-half, half]^2`` with exactly ``cells`` triangles.

    A Delaunay triangulation of ``n_b`` boundary and ``n_i`` interior points of a
    convex domain has ``2 n_i + n_b - 2`` triangles, which fixes ``n_i`` once
    ``n_b`` (about the perimeter over the mean spacing, with the parity of
    ``cells``) is chosen. Interior points start uniform at random (``seed``) and
    are smoothed towards a quasi-uniform distribution.
    """
    _check_count("square: cells", cells, 2)
    h = np.sqrt(4.0 * (2 * half) ** 2 / (np.sqrt(3.0) * cells))
    n_b = max(4, int(round(8 * half / h)))
    if (n_b - cells) % 2:
        n_b += 1
    n_i = (cells - n_b + 2) // 2
    if n_i < 0:
        n_b, n_i = cells + 2, 0
    rng = np.random.default_rng(seed)
    inner = rng.uniform(-half + 0.5 * h, half - 0.5 * h, size=(n_i, 2))
    pts = _smooth(np.concatenate([_boundary_points(n_b, half), inner]), n_b, SMOOTHING_PASSES)
    tri = Delaunay(pts).simplices
    if tri.shape[0] != cells:
        raise ConfigError(f"square: Delaunay gave {tri.shape[0]} triangles, not {cells}")
    return Mesh.from_arrays(pts, tri, source=f"<square {cells} seed {seed}>")


def structured_square(n: int, half: float = HALF) -> Mesh:
    """``n x n`` squares of ``[-half, half]^2``, each cut into 2 triangles: ``2 n^2`` cells.

    Every square's diagonal points away from the domain centre (the union-jack
    pattern), so the mesh is mapped to itself by ``x -> -x``, ``y -> -y`` and the
    90-degree rotation (solver symmetry tests rely on it). ``n`` must be even:
    for odd ``n`` the middle row of squares cannot be mirror-symmetric.
    """
    _check_count("structured_square: n", n, 2)
    if n % 2:
        raise ConfigError(f"structured_square: n must be even, got {n!r}")
    x = np.linspace(-half, half, n + 1)
    gx, gy = np.meshgrid(x, x, indexing="ij")
    nodes = np.stack([gx.ravel(), gy.ravel()], axis=1)
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    a, b = a.ravel(), b.ravel()
    n00 = a * (n + 1) + b
    n10, n01, n11 = n00 + (n + 1), n00 + 1, n00 + (n + 2)
    rising = (2 * a + 1 < n) == (2 * b + 1 < n)
    t1 = np.where(rising[:, None], np.stack([n00, n10, n11], 1), np.stack([n00, n10, n01], 1))
    t2 = np.where(rising[:, None], np.stack([n00, n11, n01], 1), np.stack([n10, n11, n01], 1))
    return Mesh.from_arrays(nodes, np.concatenate([t1, t2]), source=f"<structured_square {n}>")


def strip(
    nx: int, ny: int = 1, x0: float = 0.0, x1: float = 1.0, width: float | None = None
) -> Mesh:
    """Strip ``[x0, x1] x [0, width]`` of ``nx x ny`` rectangles cut into triangles, for 1-D tests.

    Boundary tags: ``west`` (x = x0), ``east`` (x = x1) and ``wall`` (the long
    sides). Diagonals alternate in a checkerboard. ``width`` defaults to
    ``ny`` times the cell length in x.
    """
    _check_count("strip: nx", nx, 1)
    _check_count("strip: ny", ny, 1)
    width = (x1 - x0) / nx * ny if width is None else width
    nodes, cells, sides = _rectangles(np.linspace(x0, x1, nx + 1), np.linspace(0.0, width, ny + 1))
    return Mesh.from_arrays(
        nodes,
        cells,
        boundary_tags={"west": sides["west"], "east": sides["east"]},
        source=f"<strip {nx}x{ny}>",
    )


def _rectangles(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    """The nodes and triangles of the rectangles between the abscissae ``x`` and ordinates
    ``y`` (diagonals in a checkerboard) and the node pairs of their four sides by name."""
    nx, ny = x.size - 1, y.size - 1
    gx, gy = np.meshgrid(x, y, indexing="ij")
    nodes = np.stack([gx.ravel(), gy.ravel()], axis=1)
    a, b = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    a, b = a.ravel(), b.ravel()
    n00 = a * (ny + 1) + b
    n10, n01, n11 = n00 + (ny + 1), n00 + 1, n00 + (ny + 2)
    rising = (a + b) % 2 == 0
    t1 = np.where(rising[:, None], np.stack([n00, n10, n11], 1), np.stack([n00, n10, n01], 1))
    t2 = np.where(rising[:, None], np.stack([n00, n11, n01], 1), np.stack([n10, n11, n01], 1))
    west = np.stack([np.arange(ny), np.arange(1, ny + 1)], 1)
    south = np.stack([np.arange(nx), np.arange(1, nx + 1)], 1) * (ny + 1)
    sides = {"west": west, "east": west + nx * (ny + 1), "south": south, "north": south + ny}
    return nodes, np.concatenate([t1, t2]), sides


def lonlat_band(nlon: int, nlat: int, lat: float = 60.0) -> Mesh:
    """A band of the globe, ``|latitude| <= lat`` degrees, in longitude/latitude (degrees):
    ``nlon x nlat`` rectangles from -180° to 180° cut into triangles (checkerboard diagonals),
    for the sphere (crs EPSG:4326, docs/SCHEMES.md §20). Tags ``west`` (-180°) and ``east``
    (180°), to be joined as a periodic pair round the globe, ``south`` and ``north``."""
    _check_count("lonlat_band: nlon", nlon, 2)
    _check_count("lonlat_band: nlat", nlat, 1)
    if not (isinstance(lat, (int, float)) and 0 < lat < 90):
        raise ConfigError(f"lonlat_band: lat must lie in (0, 90) degrees, got {lat!r}")
    x, y = np.linspace(-180.0, 180.0, nlon + 1), np.linspace(-lat, lat, nlat + 1)
    nodes, cells, sides = _rectangles(x, y)
    return Mesh.from_arrays(nodes, cells, boundary_tags=sides,
                            source=f"<lonlat_band {nlon}x{nlat} ±{lat:g}°>")  # fmt: skip
