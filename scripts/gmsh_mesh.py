"""Triangle meshes from gmsh's Python API (``pip install 'fvswe[mesh]'``) for the mesh scripts:
each defines its geometry, physical groups and sizes, :func:`generate` does the rest."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from fvswe.mesh import read_mesh
from fvswe.mesh.core import Mesh


def available(script: str) -> bool:
    """Whether gmsh imports; if not, says so on stderr for ``script``."""
    if importlib.util.find_spec("gmsh") is not None:
        return True
    print(f"{script}: needs gmsh (pip install 'fvswe[mesh]')", file=sys.stderr)
    return False


def generate(
    name: str,
    define: Callable[[object], None],
    source: str,
    depth: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Mesh:
    """``define(gmsh)`` on a fresh model ``name`` (geometry, physical groups, the size field
    or callback), meshed by Frontal-Delaunay with those sizes alone (none from points,
    boundaries or curvature) and read back: the physical groups of lines are the boundary
    tags; ``depth(centroids)``, if given, the depth per cell."""
    import gmsh

    gmsh.initialize()
    gmsh.option.setNumber("General.Terminal", 0)
    try:
        gmsh.model.add(name)
        define(gmsh)
        for option in ("MeshSizeExtendFromBoundary", "MeshSizeFromPoints",
                       "MeshSizeFromCurvature"):  # fmt: skip
            gmsh.option.setNumber(f"Mesh.{option}", 0)
        gmsh.option.setNumber("Mesh.Algorithm", 6)  # Frontal-Delaunay: well-shaped triangles
        gmsh.model.mesh.generate(2)
        gmsh.option.setNumber("Mesh.MshFileVersion", 2.2)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{name}.msh"
            gmsh.write(str(path))
            mesh = read_mesh(path)
    finally:
        gmsh.finalize()
    return Mesh.from_arrays(
        mesh.nodes,
        mesh.cells,
        boundary_tags=mesh.boundary_tags(),
        depth=None if depth is None else depth(mesh.centroid),
        source=source,
    )
