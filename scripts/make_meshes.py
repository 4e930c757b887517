"""Write the committed base meshes of the paper's family (docs/CASES.md §A) under meshes/.

    python scripts/make_meshes.py

``square-4k.msh`` (gmsh 2.2, boundary in physical group "wall") and
``square-130k.npz`` (compressed NumPy; a .msh would be ~9 MB) are Delaunay
meshes of [-5, 5]^2 numbered in Qhull's order. The refined members are made
from them on demand (``fvswe.mesh.family``) and cached under meshes/cache/.
"""

from __future__ import annotations

from fvswe.mesh import write_mesh
from fvswe.mesh.catalog import BASES, mesh_dir
from fvswe.mesh.generate import square


def main() -> None:
    out = mesh_dir()
    out.mkdir(parents=True, exist_ok=True)
    for name, (file, cells, seed) in BASES.items():
        mesh = square(cells, seed=seed)
        write_mesh(mesh, out / file)
        print(f"{name}: {mesh.n_cells} triangles, {mesh.n_nodes} nodes -> {out / file}")


if __name__ == "__main__":
    main()
