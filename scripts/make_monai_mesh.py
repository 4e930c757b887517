"""Triangle mesh of the Monai valley tank (the long-wave runup workshop's Benchmark 2), graded by
the water depth and refined in the valley (gmsh's Python API: ``pip install 'fvswe[mesh]'``).

    python scripts/make_monai_mesh.py [--size 0.1] [-o meshes/monai-0.1.npz]

The domain is the benchmark's 5.488 m x 3.402 m rectangle (benchmarks/data/monai/README.md);
boundary tags ``offshore`` (x = 0, where the incident wave enters) and ``wall`` (the other
three sides). ``--size`` is the edge length offshore (m). Where the bed lies below
``ZDRY`` the edge length follows the long-wave speed, ``size * sqrt(depth / D0)`` (a
uniform Courant number: shallow water near the coast gets small cells), never below
``RMIN * size``; the land the wave may reach (bed up to ``ZDRY``, 5 cm above the highest
measured runup) gets ``RMIN * size`` too, and the valley box ``VALLEY`` (where the runup is
measured) ``RVALLEY * size``; land above ``ZDRY + RAMP`` stays dry and gets ``size``, with a
linear ramp between. The bathymetry comes from ``Benchmark_2_Bathymetry.asc``
(``--bathymetry``); the mesh stores no depth (the run samples the grid at the barycentres).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from gmsh_mesh import available, generate

from fvswe.mesh import write_mesh
from fvswe.mesh.core import Mesh

ROOT = Path(__file__).resolve().parents[1]
BATHYMETRY = ROOT / "benchmarks" / "data" / "monai" / "Benchmark_2_Bathymetry.asc"
#: The tank's extent (m) and its offshore still-water depth.
LX, LY, D0 = 5.488, 3.402, 0.13535
#: Edge-length ratios to ``--size``: the smallest near the coast, the valley's.
RMIN, RVALLEY = 0.15, 0.08
#: The valley box (x0, x1, y0, y1), m: around the runup point (5.1575, 1.88).
VALLEY = (4.95, 5.30, 1.65, 2.15)
#: Land below ZDRY (m) may get wet; sizes ramp to ``--size`` over RAMP above it.
ZDRY, RAMP = 0.14, 0.05


def read_asc(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x, y, z[y, x])`` of an ESRI ASCII grid, nodes at ``xll + i cellsize`` (rows of the
    file run from north to south, returned south to north)."""
    with open(path, encoding="ascii") as f:
        header = {}
        for _ in range(6):
            key, value = f.readline().split()
            header[key.lower()] = float(value)
        z = np.loadtxt(f, dtype=np.float64)
    nx, ny, step = int(header["ncols"]), int(header["nrows"]), header["cellsize"]
    if z.shape != (ny, nx):
        raise ValueError(f"{path}: {z.shape} values for {ny} rows of {nx}")
    x = header["xllcorner"] + step * np.arange(nx)
    y = header["yllcorner"] + step * np.arange(ny)
    return x, y, z[::-1].copy()


def size_grid(z: np.ndarray, x: np.ndarray, y: np.ndarray, size: float) -> np.ndarray:
    """The edge length on the grid's nodes (see the module docstring)."""
    depth = np.maximum(-z, 0.0)
    wet = size * np.maximum(np.sqrt(depth / D0), RMIN)
    ramp = np.clip((z - ZDRY) / RAMP, 0.0, 1.0)
    h = np.minimum(wet + ramp * (size - wet), size)
    gx, gy = np.meshgrid(x, y)
    x0, x1, y0, y1 = VALLEY
    box = (gx >= x0) & (gx <= x1) & (gy >= y0) & (gy <= y1)
    return np.where(box, np.minimum(h, RVALLEY * size), h)


def make(size: float, bathymetry: Path = BATHYMETRY, source: str = "<monai>") -> Mesh:
    """The Monai tank mesh with offshore edge length ``size`` (m), tags offshore and wall."""
    x, y, z = read_asc(bathymetry)
    h = size_grid(z, x, y, size)
    step = x[1] - x[0]

    def length(dim, tag, px, py, pz, lc):  # the grid's nearest node: cheap and deterministic
        i = min(max(int(round(px / step)), 0), x.size - 1)
        j = min(max(int(round(py / step)), 0), y.size - 1)
        return float(h[j, i])

    def define(gmsh) -> None:
        geo = gmsh.model.geo
        corners = [geo.addPoint(px, py, 0.0) for px, py in ((0, 0), (LX, 0), (LX, LY), (0, LY))]
        lines = [geo.addLine(corners[k], corners[(k + 1) % 4]) for k in range(4)]
        geo.addPlaneSurface([geo.addCurveLoop(lines)])
        geo.synchronize()
        gmsh.model.addPhysicalGroup(1, [lines[3]], name="offshore")  # x = 0
        gmsh.model.addPhysicalGroup(1, lines[:3], name="wall")
        gmsh.model.addPhysicalGroup(2, [1], name="water")
        gmsh.model.mesh.setSizeCallback(length)

    return generate("monai", define, source)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=float, default=0.1, help="edge length offshore (m)")
    parser.add_argument("--bathymetry", type=Path, default=BATHYMETRY)
    parser.add_argument("-o", "--output", help="default meshes/monai-SIZE.npz")
    args = parser.parse_args(argv)
    if not available("make_monai_mesh"):
        return 2
    if not args.bathymetry.is_file():
        print(f"make_monai_mesh: no bathymetry file {args.bathymetry}", file=sys.stderr)
        return 2
    output = args.output or f"meshes/monai-{args.size:g}.npz"
    mesh = make(args.size, args.bathymetry, source=output)
    write_mesh(mesh, output)
    kb = Path(output).stat().st_size / 1024
    print(f"{output}: {mesh.n_cells} triangles, tags {sorted(mesh.tags)}, {kb:.0f} KiB, "
          f"shortest edge {mesh.edge_length.min() * 1e3:.2f} mm")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
