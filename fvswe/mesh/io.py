"""Reading and writing meshes: every meshio format holding triangles (or quads), plus ``.npz``.

Gmsh physical groups on line elements become boundary tags; a z coordinate
(not all zero) or a point/cell field named like a bathymetry becomes ``depth``.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

from ..errors import MeshError
from ..output import atomic_write
from .core import Mesh

#: Point or cell fields whose name matches this are offered as the bathymetry ``depth``.
DEPTH_FIELD = re.compile(r"depth|bathy|bottom|^h$|^H$|^b$|^z$", re.IGNORECASE)

#: meshio cell types read as triangles (corner vertices first) and as quads.
TRIANGLE_TYPES = ("triangle", "triangle6", "triangle7")
QUAD_TYPES = ("quad", "quad8", "quad9")


def read_mesh(path: str | Path) -> Mesh:
    """Read a mesh file into a validated :class:`Mesh` (errors name the file)."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise MeshError(f"{source}: no such file")
    if path.suffix == ".npz":
        return _read_npz(path)
    import meshio

    chatter = io.StringIO()
    try:
        # meshio prints failed format attempts and calls sys.exit when none works.
        with contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
            m = meshio.read(path, file_format="gmsh" if path.suffix == ".msh" else None)
    except (Exception, SystemExit) as exc:
        reason = " ".join(str(exc).split()) if isinstance(exc, Exception) else ""
        reason = reason or " ".join(chatter.getvalue().split()) or type(exc).__name__
        raise MeshError(f"{source}: cannot read mesh ({reason})") from None
    return _from_meshio(m, source)


def _from_meshio(m, source: str) -> Mesh:
    """Cells, boundary tags and depth from a ``meshio.Mesh``."""
    triangles = [b for b in m.cells if b.type in TRIANGLE_TYPES]
    quads = [b for b in m.cells if b.type in QUAD_TYPES]
    if triangles and quads:
        raise MeshError(f"{source}: mixes triangles and quads; a mesh must use one cell type")
    blocks = triangles or quads
    if not blocks:
        found = ", ".join(sorted({b.type for b in m.cells})) or "no cells"
        raise MeshError(f"{source}: no triangles in the mesh (found {found})")
    k = 3 if blocks[0].type in TRIANGLE_TYPES else 4
    cells = np.concatenate([b.data[:, :k] for b in blocks]).astype(np.int64)
    points = np.asarray(m.points, dtype=np.float64)
    depth = _depth(m, blocks, cells, points)
    return Mesh.from_arrays(
        points[:, :2], cells, boundary_tags=_gmsh_tags(m), depth=depth, source=source
    )


def _gmsh_tags(m) -> dict[str, np.ndarray]:
    """Tag name -> node pairs of the line elements in each gmsh physical group."""
    physical = m.cell_data.get("gmsh:physical")
    if physical is None:
        return {}
    names = {int(v[0]): name for name, v in m.field_data.items() if int(v[1]) == 1}
    pairs: dict[int, list[np.ndarray]] = {}
    for block, ids in zip(m.cells, physical, strict=True):
        if block.type not in ("line", "line3"):
            continue
        ids = np.asarray(ids, dtype=np.int64)
        for tid in np.unique(ids):
            pairs.setdefault(int(tid), []).append(block.data[ids == tid, :2])
    return {names.get(t, str(t)): np.concatenate(pairs[t]) for t in sorted(pairs)}


def _depth(m, blocks, cells: np.ndarray, points: np.ndarray) -> np.ndarray | None:
    """Per-cell depth from a bathymetry-like field, else from a non-zero z coordinate."""
    for name, data in m.point_data.items():
        data = np.asarray(data)
        if DEPTH_FIELD.search(name) and data.ndim == 1:
            return data[cells].mean(axis=1)
    for name, per_block in m.cell_data.items():
        if not DEPTH_FIELD.search(name):
            continue
        chosen = [
            np.asarray(d)
            for b, d in zip(m.cells, per_block, strict=True)
            if any(b is c for c in blocks)
        ]
        if chosen and all(d.ndim == 1 for d in chosen):
            return np.concatenate(chosen).astype(np.float64)
    if points.shape[1] == 3 and np.isfinite(points[:, 2]).all() and np.any(points[:, 2] != 0):
        return points[cells, 2].mean(axis=1)
    return None


def _read_npz(path: Path) -> Mesh:
    """Read the ``.npz`` written by :func:`write_mesh` (nodes, cells, tagged boundary edges)."""
    source = str(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {key: z[key] for key in z.files}
    except Exception as exc:
        raise MeshError(f"{source}: cannot read mesh ({type(exc).__name__}: {exc})") from None
    if "nodes" not in data or "cells" not in data:
        raise MeshError(f"{source}: no triangles in the mesh (the .npz lacks nodes/cells)")
    kinds = {"nodes": "fiu", "cells": "iu", "depth": "fiu", "tag_edges": "iu", "tag_ids": "iu",
             "tag_names": "U"}  # fmt: skip
    for key, allowed in kinds.items():
        if key in data and data[key].dtype.kind not in allowed:
            raise MeshError(f"{source}: {key} has dtype {data[key].dtype}, not a "
                            f"{'string' if allowed == 'U' else 'number'} array")  # fmt: skip
    tag_keys = ("tag_names", "tag_edges", "tag_ids")
    given = [key for key in tag_keys if key in data]
    if given and len(given) < 3:
        missing = sorted(set(tag_keys) - set(given))
        raise MeshError(f"{source}: boundary tags incomplete ({', '.join(missing)} missing)")
    tags = {}
    if given:
        edges, ids = data["tag_edges"], data["tag_ids"]
        if edges.ndim != 2 or edges.shape[1] != 2 or ids.shape != (edges.shape[0],):
            raise MeshError(f"{source}: tag_edges {list(edges.shape)} and tag_ids "
                            f"{list(ids.shape)} must be (m, 2) and (m,)")  # fmt: skip
        for tid, name in enumerate(data["tag_names"].reshape(-1), start=1):
            tags[str(name)] = edges[ids == tid]
    return Mesh.from_arrays(
        data["nodes"], data["cells"], boundary_tags=tags, depth=data.get("depth"), source=source
    )


def write_mesh(mesh: Mesh, path: str | Path) -> None:
    """Write ``mesh`` in its current cell order.

    ``.npz``: nodes, cells, tagged boundary edges, depth (read back exactly).
    ``.msh``: gmsh 2.2 with boundary lines in physical groups named by tag.
    These two appear complete or not at all (e.g. on a full disk).
    Any other suffix: whatever meshio writes for it (cells, plus depth as cell data).
    """
    path = Path(path)
    bnd = mesh.boundary
    names = sorted(mesh.tags, key=mesh.tags.get)
    if path.suffix == ".npz":
        extra = {} if mesh.depth is None else {"depth": mesh.depth}
        arrays = dict(nodes=mesh.nodes, cells=mesh.cells.astype(np.int32),
                      tag_names=np.array(names, dtype=str),
                      tag_edges=mesh.edge_nodes[bnd].astype(np.int32),
                      tag_ids=mesh.edge_tag[bnd], **extra)  # fmt: skip
        atomic_write(path, lambda p: np.savez_compressed(p, **arrays))
        return
    import meshio

    cell_type = "triangle" if mesh.k == 3 else "quad"
    points = np.column_stack([mesh.nodes, np.zeros(mesh.n_nodes)])
    if path.suffix == ".msh":
        cells = [("line", mesh.edge_nodes[bnd]), (cell_type, mesh.cells)]
        phys = [mesh.edge_tag[bnd].astype(np.int32), np.zeros(mesh.n_cells, np.int32)]
        field_data = {name: np.array([mesh.tags[name], 1]) for name in names}
        out = meshio.Mesh(
            points,
            cells,
            cell_data={"gmsh:physical": phys, "gmsh:geometrical": [p.copy() for p in phys]},
            field_data=field_data,
        )
        atomic_write(path, lambda p: meshio.write(p, out, file_format="gmsh22", binary=False))
        return
    cell_data = {} if mesh.depth is None else {"depth": [mesh.depth]}
    out = meshio.Mesh(points, [(cell_type, mesh.cells)], cell_data=cell_data)
    try:
        meshio.write(path, out)
    except Exception as exc:  # meshio's errors for unknown suffixes and unwritable data vary
        raise MeshError(f"{path}: cannot write mesh ({' '.join(str(exc).split())})") from None
