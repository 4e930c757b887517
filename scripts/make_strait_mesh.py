"""Triangle mesh of a synthetic, Gibraltar-like strait: two basins joined by a channel with a
sill and a contraction at its middle (gmsh's Python API: ``pip install 'fvswe[mesh]'``).

    python scripts/make_strait_mesh.py [--size 1500] [-o meshes/strait.npz]

Geometry (metres; docs/validation.md): the channel runs along x over
``|x| <= L/2`` (``L`` = 40 km); its width narrows from ``B`` = 20 km at its ends
to ``b`` = 10 km at ``x = 0``, ``width(x) = b + (B - b) sin²(π x / L)``, and its
bottom rises from the basins' depth ``H0`` = 600 m to a sill of depth ``Hs`` =
300 m at ``x = 0``, ``depth(x) = H0 - (H0 - Hs) cos²(π x / L)``: the narrowest and
shallowest section coincide (one hydraulic control). The basins are 60 km x
60 km squares at both ends. Boundary tags: ``west`` and ``east`` (the basins'
walls) and ``strait`` (the channel's sides). The depth is stored per cell in the
mesh (``mesh.depth``). ``--size`` is the edge length in the channel (m); the
basins' is three times that. The committed ``meshes/strait.npz`` is
``--size 1500`` (2192 triangles, 31 KiB); ``--size 750`` gives 8552 and ``--size 400``
29048 triangles (0.45 MB), made on demand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from gmsh_mesh import available, generate

from fvswe.mesh import write_mesh
from fvswe.mesh.core import Mesh

#: Channel length, end width, narrowest width; basin length and width; depths (m).
L, B, BMIN, LB, WB, H0, HS = 40e3, 20e3, 10e3, 60e3, 60e3, 600.0, 300.0


def width(x: np.ndarray) -> np.ndarray:
    """Channel width at ``x`` (``|x| <= L/2``)."""
    return BMIN + (B - BMIN) * np.sin(np.pi * x / L) ** 2


def depth(x: np.ndarray) -> np.ndarray:
    """Bottom depth below the reference level: the basins' ``H0``, the sill ``HS`` at x = 0."""
    sill = (H0 - HS) * np.cos(np.pi * np.clip(x, -L / 2, L / 2) / L) ** 2
    return H0 - sill


def outline(size: float) -> tuple[np.ndarray, list[tuple[str, int, int]]]:
    """The domain's boundary, counter-clockwise, and its pieces ``(tag, first, last)``."""
    n = 2 * max(4, int(np.ceil(L / (2 * size))))  # even: a node at the narrows
    xs = np.linspace(-L / 2, L / 2, n + 1)
    south = np.c_[xs, -width(xs) / 2]
    x0, x1 = -L / 2 - LB, L / 2 + LB
    east = np.array([[L / 2, -WB / 2], [x1, -WB / 2], [x1, WB / 2], [L / 2, WB / 2]])
    west = np.array([[-L / 2, WB / 2], [x0, WB / 2], [x0, -WB / 2], [-L / 2, -WB / 2]])
    north = south[::-1] * [1, -1]
    points = np.concatenate([south, east, north, west])
    k1 = len(south) - 1
    k2 = k1 + len(east) + 1
    k3 = k2 + len(north) - 1
    pieces = [("strait", 0, k1), ("east", k1, k2), ("strait", k2, k3), ("west", k3, len(points))]
    return points, pieces


def make(size: float, source: str = "<strait>") -> Mesh:
    """The strait mesh with channel edge length ``size`` (m), depth per cell, tagged walls."""
    points, pieces = outline(size)

    def define(gmsh) -> None:
        geo = gmsh.model.geo
        ids = [geo.addPoint(x, y, 0.0) for x, y in points]
        lines = [geo.addLine(ids[k], ids[(k + 1) % len(ids)]) for k in range(len(ids))]
        geo.addPlaneSurface([geo.addCurveLoop(lines)])
        geo.synchronize()
        for tag in ("west", "east", "strait"):
            members = [lines[k] for name, a, b in pieces if name == tag for k in range(a, b)]
            gmsh.model.addPhysicalGroup(1, members, name=tag)
        gmsh.model.addPhysicalGroup(2, [1], name="water")
        field = gmsh.model.mesh.field
        f = field.add("MathEval")
        ramp = f"Min(1, Max(0, (Fabs(x) - {L / 2}) / {LB / 3}))"
        field.setString(f, "F", f"{size} * (1 + 2 * {ramp})")
        field.setAsBackgroundMesh(f)

    return generate("strait", define, source, depth=lambda c: depth(c[:, 0]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=1500.0, help="edge length in the channel")
    parser.add_argument("-o", "--output", default="meshes/strait.npz")
    args = parser.parse_args(argv)
    if not available("make_strait_mesh"):
        return 2
    mesh = make(args.size, source=args.output)
    write_mesh(mesh, args.output)
    kb = Path(args.output).stat().st_size / 1024
    print(f"{args.output}: {mesh.n_cells} triangles, tags {sorted(mesh.tags)}, {kb:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
