"""Per-part mesh files: a partition written once, each rank reading only its own part (issue 28).

``fvswe mesh partition FILE -n P -o DIR`` cuts a mesh (in the run's cell order) into the
:class:`~fvswe.partition.Part` s a distributed run would make and writes

- ``DIR/part-0000.npz`` ... one uncompressed NumPy archive per part: the part's cells (owned
  then halo, :mod:`fvswe.partition`'s local order) with their nodes and connectivity in local
  numbering, its edges in the :class:`Part`'s order and orientation, the geometry the global
  mesh computed for them (areas, centroids, normals, lengths: stored, not recomputed, so a
  rank's layout has the global mesh's bits), boundary tags, the bathymetry, global cell, edge
  and node ids, and the exchange lists;
- ``DIR/manifest.json``: the format and its version, the part count, the global cell, edge
  and node counts, the split method and cell order, the mesh's source and the SHA-256 of its
  arrays, the tags with each tag's boundary edges and length in the whole mesh, and the
  SHA-256 of every part file.

:func:`read_part` gives a rank its part as a local :class:`~fvswe.mesh.Mesh` (the part's
cells, local numbering) and the :class:`Part` (global numbering, as :func:`fvswe.partition.split`
gives it) after checking the manifest's format and version, the part count against the ranks
and the file's checksum. docs/PARALLEL.md, "Per-part meshes", has the design.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .boundary import tag_length
from .errors import ConfigError
from .mesh import Mesh
from .output import os_error
from .partition import Part, local_edges

FORMAT = "fvswe-parts"
VERSION = 1
MANIFEST = "manifest.json"
#: The keys of a manifest that a reader needs.
MANIFEST_KEYS = ("parts", "cells", "edges", "order", "tags", "boundary_edges", "tag_length",
                 "part_sha256")  # fmt: skip
#: The arrays every part file has (``depth``, ``edge_shift`` too where the mesh has them).
PART_KEYS = (
    "index", "n_interior", "n_owned", "n_owned_edges", "cell_ids", "edge_ids", "node_ids",
    "peers", "send", "send_at", "recv", "recv_at", "nodes", "cells", "area", "centroid",
    "original_index", "edge_cells", "edge_slot", "edge_nodes", "edge_normal", "edge_length",
    "edge_tag",
)  # fmt: skip


def part_name(index: int) -> str:
    """The file name of part ``index``: ``part-0007.npz``."""
    return f"part-{index:04d}.npz"


def mesh_checksum(mesh: Mesh) -> str:
    """SHA-256 of what defines a mesh: its nodes, cells, bathymetry and tagged edges, in its
    current order (a family member and the file it was cached in give the same)."""
    h = hashlib.sha256()
    for a in (mesh.nodes, mesh.cells.astype(np.int64), mesh.edge_nodes.astype(np.int64),
              mesh.edge_tag.astype(np.int64), mesh.depth):  # fmt: skip
        h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes())
    h.update(json.dumps(mesh.tags).encode())
    return h.hexdigest()


def part_arrays(mesh: Mesh, part: Part) -> dict[str, np.ndarray]:
    """The arrays of ``part``'s file: the part's cells and edges of ``mesh`` in local numbering
    (cells and slots as :meth:`fvswe.backends.layout.Layout.part` renames them), their global
    ids and geometry, and the exchange lists (concatenated, ``send_at``/``recv_at`` the
    offsets of each peer's list)."""
    k = mesh.k
    node_ids, cell_nodes = np.unique(mesh.cells[part.cells], return_inverse=True)
    edge_cells, edge_slot = local_edges(part, mesh.edge_cells, mesh.edge_slot, mesh.n_cells, k)
    edges = part.edges
    out = {
        "index": part.index, "n_interior": part.n_interior, "n_owned": part.n_owned,
        "n_owned_edges": part.n_owned_edges, "cell_ids": part.cells, "edge_ids": edges,
        "node_ids": node_ids, "peers": np.asarray(part.peers, dtype=np.int64),
        "nodes": mesh.nodes[node_ids], "cells": cell_nodes.reshape(-1, k).astype(np.int32),
        "area": mesh.area[part.cells], "centroid": mesh.centroid[part.cells],
        "original_index": mesh.original_index[part.cells], "edge_cells": edge_cells,
        "edge_slot": edge_slot, "edge_nodes": np.searchsorted(node_ids, mesh.edge_nodes[edges]),
        "edge_normal": mesh.edge_normal[edges], "edge_length": mesh.edge_length[edges],
        "edge_tag": mesh.edge_tag[edges],
    }  # fmt: skip
    for name, lists in (("send", part.send), ("recv", part.recv)):
        out[name] = np.concatenate([np.zeros(0, np.int64), *lists]).astype(np.int64)
        out[f"{name}_at"] = np.cumsum([0, *(a.size for a in lists)], dtype=np.int64)
    if mesh.depth is not None:
        out["depth"] = mesh.depth[part.cells]
    if mesh.edge_shift is not None:
        out["edge_shift"] = mesh.edge_shift[edges]
    return {key: np.asarray(value) for key, value in out.items()}


def write_parts(mesh: Mesh, parts: list[Part], directory, *, method: str, order: str,
                periodic: list[tuple[str, str]] = ()) -> dict:  # fmt: skip
    """Write ``parts`` of ``mesh`` (in the order they were cut in) to ``directory``, whole or
    not at all: into a temporary folder beside it, renamed when complete. An existing
    ``directory`` is replaced only if it holds a partition (a ``manifest.json``). Returns the
    manifest. ``periodic``: the tag pairs ``mesh`` has joined (:func:`fvswe.mesh.periodic`),
    which a run's pairs must equal."""
    from .restart import mesh_fingerprint  # (fvswe.restart needs fvswe.output, as this module)

    out = Path(directory)
    if out.exists() and not (out / MANIFEST).is_file():
        raise ConfigError(f"{out}: exists and is not a partition folder (no {MANIFEST})")
    if not out.parent.is_dir():
        raise ConfigError(f"{out}: folder {out.parent} does not exist")
    manifest = {
        "format": FORMAT, "version": VERSION, "parts": len(parts), "cells": mesh.n_cells,
        "edges": mesh.n_edges, "nodes": mesh.n_nodes, "k": mesh.k, "method": method,
        "order": order, "source": mesh.source, "mesh_sha256": mesh_checksum(mesh),
        "mesh_fingerprint": mesh_fingerprint(mesh),
        "tags": mesh.tags, "boundary_edges": {name: int(np.count_nonzero(
            mesh.edge_tag[mesh.boundary] == tid)) for name, tid in mesh.tags.items()},
        "tag_length": {name: tag_length(mesh, name) for name in mesh.tags},
        "periodic": [list(pair) for pair in periodic],
        "owned": [p.n_owned for p in parts],
        "halo": [p.n_halo for p in parts], "part_sha256": [],
    }  # fmt: skip
    tmp = None
    try:
        tmp = out.parent / f".{out.name}.part-{os.getpid()}-{secrets.token_hex(4)}"
        tmp.mkdir()  # the umask's permissions, unlike mkdtemp's 0700
        for p in parts:
            path = tmp / part_name(p.index)
            with open(path, "wb") as f:
                np.savez(f, **part_arrays(mesh, p))
                f.flush()
                os.fsync(f.fileno())
            manifest["part_sha256"].append(file_checksum(path))
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        _replace(tmp, out)
        tmp = None
    except OSError as exc:
        raise os_error(out, exc) from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def _replace(tmp: Path, out: Path) -> None:
    """Rename the folder ``tmp`` to ``out``; an old ``out`` is moved aside first, then removed."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old-"))
        os.replace(out, old / out.name)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def file_checksum(path) -> str:
    """SHA-256 of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest(directory) -> dict:
    """``directory``'s manifest, checked for its format and version (one-line ConfigErrors)."""
    path = Path(directory) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file (make one: fvswe mesh partition FILE -n P -o DIR)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read ({' '.join(str(exc).split())})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ConfigError(f"{path}: not an fvswe partition manifest (format {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise ConfigError(
            f"{path}: format version {manifest.get('version')!r}, this fvswe reads {VERSION}"
        )
    missing = [key for key in MANIFEST_KEYS if key not in manifest]
    if missing:
        raise ConfigError(f"{path}: no {', '.join(missing)} (a partition manifest has them)")
    return manifest


def tags_present(manifest: dict) -> set[str]:
    """The tags that own boundary edges in the whole mesh of a partition's ``manifest`` (what
    :func:`fvswe.boundary.edge_conditions` checks a part's conditions against)."""
    return {name for name, count in manifest["boundary_edges"].items() if count}


def read_part(directory, rank: int, size: int | None = None) -> tuple[Mesh, Part]:
    """Part ``rank`` of the partition in ``directory``: ``(local mesh, Part)``.

    The local mesh holds the part's cells in its local order (owned interior, owned border,
    halo) and its edges in the :class:`Part`'s order; the :class:`Part` is in global numbering,
    equal to what :func:`fvswe.partition.split` gave the writer. ``size``: the run's ranks,
    which must equal the partition's parts. Reads the manifest and this part's file only.
    """
    manifest = read_manifest(directory)
    if size is not None and size != manifest["parts"]:
        raise ConfigError(
            f"{Path(directory) / MANIFEST}: {manifest['parts']} parts for a run on {size} ranks"
        )
    if not 0 <= rank < manifest["parts"]:
        raise ConfigError(f"{directory}: no part {rank} ({manifest['parts']} parts)")
    path = Path(directory) / part_name(rank)
    try:
        same = file_checksum(path) == manifest["part_sha256"][rank]
        with np.load(path) as f:
            a = {key: f[key] for key in f.files}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read ({' '.join(str(exc).split())})") from None
    if not same:
        raise ConfigError(
            f"{path}: its SHA-256 is not the one {MANIFEST} lists (another partition's part?)"
        )
    missing = [key for key in PART_KEYS if key not in a]
    if missing or int(a["index"]) != rank:
        raise ConfigError(
            f"{path}: not part {rank} of a partition (missing {', '.join(missing) or 'index'})"
        )
    return _local_mesh(a, manifest["tags"], str(path)), _part(a)


def _local_mesh(a: dict, tags: dict, source: str) -> Mesh:
    """The part's cells and edges as a :class:`Mesh` (its arrays as stored: no recomputation)."""
    return Mesh(
        nodes=a["nodes"], cells=a["cells"].astype(np.int64), area=a["area"],
        centroid=a["centroid"], edge_cells=a["edge_cells"], edge_nodes=a["edge_nodes"],
        edge_normal=a["edge_normal"], edge_length=a["edge_length"], edge_tag=a["edge_tag"],
        edge_slot=a["edge_slot"], tags={str(k): int(v) for k, v in tags.items()},
        depth=a.get("depth"), original_index=a["original_index"], source=source,
        edge_shift=a.get("edge_shift"),
    )  # fmt: skip


def _part(a: dict) -> Part:
    """The :class:`Part` (global numbering) stored in a part file's arrays."""
    peers = tuple(int(q) for q in a["peers"])
    lists = {
        name: tuple(a[name][a[f"{name}_at"][n] : a[f"{name}_at"][n + 1]] for n in range(len(peers)))
        for name in ("send", "recv")
    }
    return Part(
        index=int(a["index"]), cells=a["cell_ids"], n_interior=int(a["n_interior"]),
        n_owned=int(a["n_owned"]), edges=a["edge_ids"], n_owned_edges=int(a["n_owned_edges"]),
        peers=peers, send=lists["send"], recv=lists["recv"],
    )  # fmt: skip
