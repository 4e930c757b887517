"""Reading and writing meshes: every meshio format holding triangles (or quads), plus ``.npz``.

Gmsh physical groups on line elements become boundary tags. The bathymetry is
never guessed: ``bathymetry="SOURCE:SIGN"`` names where it is (``z``, the third
coordinate, or a point/cell field) and what it means (``elevation``: bed height,
positive up, the gmsh/GIS convention; ``depth``: below the reference, positive
down, fvswe's ``H``). Without it a mesh is read with no bathymetry, or with its
field named exactly ``depth`` (what :func:`write_mesh` writes), and a file whose
z coordinate or field names could hold one is refused with a one-line error.
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

#: Point or cell fields whose name suggests a bathymetry: present, they need ``bathymetry=``.
BATHY_LIKE = re.compile(r"depth|bathy|bottom|bed|elev|topo|height|^[hbz]$", re.IGNORECASE)
#: The field fvswe writes and reads without being told: depth below the reference, positive down.
OWN_FIELD = "depth"
#: Signs of ``bathymetry="SOURCE:SIGN"``: the factor turning the values into fvswe's depth H.
SIGNS = {"depth": 1.0, "elevation": -1.0}
#: How the flag and the case-file key spell a bathymetry choice (for error messages).
HOW = (
    "--bathymetry (case file: [mesh] bathymetry) z:elevation, z:depth, FIELD:elevation, "
    "FIELD:depth or none"
)

#: meshio cell types read as triangles (corner vertices first) and as quads.
TRIANGLE_TYPES = ("triangle", "triangle6", "triangle7")
QUAD_TYPES = ("quad", "quad8", "quad9")


def parse_bathymetry(text: str | None) -> tuple[str, float] | None:
    """``"SOURCE:SIGN"`` -> ``(source, factor to depth)``; ``"none"`` -> ``("", 0.0)``; None."""
    if text is None:
        return None
    if text == "none":
        return "", 0.0
    where, _, sign = text.rpartition(":")
    if not where or sign not in SIGNS:
        raise MeshError(f"bathymetry: expected SOURCE:elevation or SOURCE:depth, got {text!r}")
    return where, SIGNS[sign]


def read_mesh(path: str | Path, bathymetry: str | None = None) -> Mesh:
    """Read a mesh file into a validated :class:`Mesh` (errors name the file).

    ``bathymetry`` (``"z:elevation"``, ``"z:depth"``, ``"FIELD:elevation"``,
    ``"FIELD:depth"`` or ``"none"``) says where the bed is and which way is up;
    see the module docstring for what happens without it.
    """
    return read_mesh_with_note(path, bathymetry)[0]


def read_mesh_with_note(path: str | Path, bathymetry: str | None = None) -> tuple[Mesh, str]:
    """:func:`read_mesh` and a sentence saying what was taken as the bathymetry."""
    path = Path(path)
    source = str(path)
    choice = parse_bathymetry(bathymetry)
    if not path.is_file():
        raise MeshError(f"{source}: no such file")
    if path.suffix == ".npz":
        return _read_npz(path, choice)
    return _from_meshio(_meshio_read(path), source, choice)


def read_cell_fields(path: str | Path) -> dict[str, np.ndarray]:
    """Every scalar cell field of a mesh file, and every point field averaged over each
    cell's corners, one value per cell in the order :func:`read_mesh` numbers the cells:
    e.g. a Manning coefficient per cell for ``Simulation(friction=("manning", array))``."""
    path = Path(path)
    if not path.is_file():
        raise MeshError(f"{path}: no such file")
    if path.suffix == ".npz":
        return {}  # write_mesh's .npz holds the depth only (read_mesh takes it)
    m = _meshio_read(path)
    blocks, cells = _cell_blocks(m, str(path))
    return _cell_fields(m, blocks, cells)


def _meshio_read(path: Path):
    """``meshio.read`` with its chatter silenced and its failures as one-line MeshErrors."""
    import meshio

    chatter = io.StringIO()
    try:
        # meshio prints failed format attempts and calls sys.exit when none works.
        with contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
            return meshio.read(path, file_format="gmsh" if path.suffix == ".msh" else None)
    except (Exception, SystemExit) as exc:
        reason = " ".join(str(exc).split()) if isinstance(exc, Exception) else ""
        reason = reason or " ".join(chatter.getvalue().split()) or type(exc).__name__
        raise MeshError(f"{path}: cannot read mesh ({reason})") from None


def _cell_blocks(m, source: str) -> tuple[list, np.ndarray]:
    """The cell blocks fvswe takes (all triangles or all quads) and their cells, in order."""
    triangles = [b for b in m.cells if b.type in TRIANGLE_TYPES]
    quads = [b for b in m.cells if b.type in QUAD_TYPES]
    if triangles and quads:
        raise MeshError(f"{source}: mixes triangles and quads; a mesh must use one cell type")
    blocks = triangles or quads
    if not blocks:
        found = ", ".join(sorted({b.type for b in m.cells})) or "no cells"
        raise MeshError(f"{source}: no triangles in the mesh (found {found})")
    k = 3 if blocks[0].type in TRIANGLE_TYPES else 4
    return blocks, np.concatenate([b.data[:, :k] for b in blocks]).astype(np.int64)


def _from_meshio(m, source: str, choice: tuple[str, float] | None) -> tuple[Mesh, str]:
    """Cells, boundary tags and depth from a ``meshio.Mesh``."""
    blocks, cells = _cell_blocks(m, source)
    points = np.asarray(m.points, dtype=np.float64)
    fields = _cell_fields(m, blocks, cells)
    if points.shape[1] == 3 and np.any(points[:, 2] != 0):
        fields["z"] = points[cells, 2].mean(axis=1)
    depth, note = _bathymetry(fields, choice, source)
    mesh = Mesh.from_arrays(
        points[:, :2], cells, boundary_tags=_gmsh_tags(m), depth=depth, source=source
    )
    return mesh, note


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


def _cell_fields(m, blocks, cells: np.ndarray) -> dict[str, np.ndarray]:
    """Every scalar point field (averaged over each cell's corners) and cell field, per cell."""
    out = {}
    for name, data in m.point_data.items():
        data = np.asarray(data)
        if data.ndim == 1:
            out[name] = data[cells].mean(axis=1)
    for name, per_block in m.cell_data.items():
        chosen = [
            np.asarray(d)
            for b, d in zip(m.cells, per_block, strict=True)
            if any(b is c for c in blocks)
        ]
        if name not in out and chosen and all(d.ndim == 1 for d in chosen):
            out[name] = np.concatenate(chosen).astype(np.float64)
    return out


def _bathymetry(
    fields: dict[str, np.ndarray], choice: tuple[str, float] | None, source: str
) -> tuple[np.ndarray | None, str]:
    """fvswe's depth H (positive down) per cell from the chosen field, and what was taken.

    ``fields`` holds the per-cell candidates (``z``: the third coordinate, when not
    all zero). Without a choice only :data:`OWN_FIELD` is taken; ``z`` or a field
    whose name suggests a bathymetry is refused rather than guessed.
    """
    if choice is None:
        if OWN_FIELD in fields and "z" not in fields:
            note = f"field {OWN_FIELD!r} as depth (positive down), fvswe's own name"
            return fields[OWN_FIELD], note
        if "z" in fields:
            raise MeshError(f"{source}: the z coordinate is not zero; say what it is with {HOW}")
        named = sorted(name for name in fields if BATHY_LIKE.search(name))
        if named:
            raise MeshError(
                f"{source}: field {named[0]!r} may be the bathymetry; say what it is with {HOW}"
            )
        return None, "none"
    where, factor = choice
    if not where:
        return None, "none (bathymetry none)"
    if where not in fields:
        what = "the z coordinate is zero" if where == "z" else f"no field {where!r}"
        found = ", ".join(sorted(fields)) or "none"
        raise MeshError(f"{source}: bathymetry {where}: {what} (fields per cell: {found})")
    what = "z coordinate" if where == "z" else f"field {where!r}"
    sense = "depth (positive down)" if factor > 0 else f"bed elevation (positive up; H = -{where})"
    return factor * fields[where], f"{what} as {sense}"


def _read_npz(path: Path, choice: tuple[str, float] | None) -> tuple[Mesh, str]:
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
    fields = {OWN_FIELD: data[OWN_FIELD]} if OWN_FIELD in data else {}
    depth, note = _bathymetry(fields, choice, source)
    mesh = Mesh.from_arrays(
        data["nodes"], data["cells"], boundary_tags=tags, depth=depth, source=source
    )
    return mesh, note


def write_mesh(mesh: Mesh, path: str | Path, compress: bool = True) -> None:
    """Write ``mesh`` in its current cell order.

    ``.npz``: nodes, cells, tagged boundary edges, depth (read back exactly); ``compress``
    false stores them uncompressed (a cache: 1.6 times the bytes, written 20 times faster).
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
        save = np.savez_compressed if compress else np.savez
        atomic_write(path, lambda p: save(p, **arrays))
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
