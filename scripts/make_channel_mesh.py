"""Write examples/channel.msh, the mesh of the two-layer guide (docs/guide/two-layer.md).

With gmsh (``pip install 'fvswe[mesh]'`` or a gmsh binary), ``gmsh -2 examples/channel.geo
-o examples/channel.msh`` meshes the guide's geometry. gmsh is not installed where the file in
the repository was made (nor in CI), so this script writes a mesh of the same rectangle with
the same physical groups (``river``, ``sea``, ``shore``) in gmsh's MSH 2.2 format from fvswe's
own strip generator: 40 x 8 rectangles of 50 m, each cut in two triangles (640 cells).
Run from the repository root: ``python scripts/make_channel_mesh.py``.
"""

from __future__ import annotations

from pathlib import Path

from fvswe.mesh import Mesh, write_mesh
from fvswe.mesh.generate import strip

OUT = Path(__file__).resolve().parents[1] / "examples" / "channel.msh"
#: The strip's tags -> the guide's physical groups.
NAMES = {"west": "river", "east": "sea", "wall": "shore"}


def channel() -> Mesh:
    """The 2000 m x 400 m channel, its boundary edges grouped as the .geo file groups them."""
    m = strip(40, 8, 0.0, 2000.0, width=400.0)
    tags = {NAMES[name]: pairs for name, pairs in m.boundary_tags().items()}
    return Mesh.from_arrays(m.nodes, m.cells, boundary_tags=tags, source=str(OUT.name))


if __name__ == "__main__":
    write_mesh(channel(), OUT)
    print(f"wrote {OUT}")
