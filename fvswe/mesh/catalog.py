"""The renumbering paper's mesh family (docs/CASES.md §A): committed bases, 1->4 refinement, cache.

Members ``square-4k`` (4000 triangles) and its 1..4-fold refinements
``square-16k``, ``square-64k``, ``square-256k``, ``square-1m`` (1 024 000),
plus ``square-2m`` (2 080 560), the twofold refinement of the 130 035-triangle
base, and its further refinements ``square-8m`` (8 322 240), ``square-33m``
(33 288 960) and ``square-133m`` (133 155 840) for scaling runs and the largest run from
per-part files (benchmarks/largest.py). Refinement keeps the *centre* child of each parent
at the parent's number and appends the three corner children after all parents, which gives
the paper's "original" bandwidth of exactly 0.75 L. Refined members are cached
as uncompressed ``.npz`` under ``meshes/cache/`` (set ``FVSWE_MESHES`` to move ``meshes/``),
and a member is refined from the finest cached one below it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import ConfigError, MeshError
from .core import Mesh, shoelace
from .generate import square
from .io import read_mesh, write_mesh

#: Base meshes: name -> (file under meshes/, triangle count, generator seed).
BASES = {
    "square-4k": ("square-4k.msh", 4000, 0),
    "square-130k": ("square-130k.npz", 130035, 0),
}

#: Family members: name -> (base, number of refinements).
MEMBERS = {
    "square-4k": ("square-4k", 0),
    "square-16k": ("square-4k", 1),
    "square-64k": ("square-4k", 2),
    "square-256k": ("square-4k", 3),
    "square-1m": ("square-4k", 4),
    "square-130k": ("square-130k", 0),
    "square-2m": ("square-130k", 2),
    "square-8m": ("square-130k", 3),
    "square-33m": ("square-130k", 4),
    "square-133m": ("square-130k", 5),
}


def refine(mesh: Mesh) -> Mesh:
    """Uniform 1->4 refinement of a triangle mesh through edge midpoints.

    Child ``p`` (the centre triangle of the midpoints) keeps parent ``p``'s
    number; the corner children at vertices 0, 1, 2 of parent ``p`` become cells
    ``L + 3p``, ``L + 3p + 1``, ``L + 3p + 2``. Midpoint of edge ``e`` is node
    ``N + e``. Boundary tags pass to both halves of each edge, depth to all
    four children.
    """
    if mesh.k != 3:
        raise MeshError(f"{mesh.source}: only triangle meshes can be refined 1->4")
    n, (L, k) = mesh.n_nodes, mesh.cells.shape
    edge_of_slot = np.empty(L * k, dtype=np.int64)
    for side in (0, 1):
        has = mesh.edge_slot[:, side] >= 0
        edge_of_slot[mesh.edge_slot[has, side]] = np.flatnonzero(has)
    mid = n + edge_of_slot.reshape(L, k)
    v = mesh.cells
    centre = mid
    corners = np.stack(
        [
            np.stack([v[:, 0], mid[:, 0], mid[:, 2]], axis=1),
            np.stack([mid[:, 0], v[:, 1], mid[:, 1]], axis=1),
            np.stack([mid[:, 2], mid[:, 1], v[:, 2]], axis=1),
        ],
        axis=1,
    ).reshape(-1, 3)
    nodes = np.concatenate([mesh.nodes, mesh.nodes[mesh.edge_nodes].mean(axis=1)])
    tags = {}
    for name, tid in mesh.tags.items():
        e = np.flatnonzero(mesh.edge_tag == tid)
        a, b = mesh.edge_nodes[e, 0], mesh.edge_nodes[e, 1]
        tags[name] = np.concatenate([np.stack([a, n + e], 1), np.stack([n + e, b], 1)])
    depth = None if mesh.depth is None else np.concatenate([mesh.depth, np.repeat(mesh.depth, 3)])
    # The children of a valid counter-clockwise triangle are valid and counter-clockwise,
    # and the midpoints of distinct edges distinct nodes: Mesh.from_arrays's checks (a sort
    # of all nodes among them) would find nothing, so only the areas are computed.
    cells = np.concatenate([centre, corners])
    area = shoelace(nodes, cells)[0]
    return Mesh._assembled(nodes, cells, area, tags, depth, f"{mesh.source} refined")


def mesh_dir() -> Path:
    """The ``meshes/`` folder: ``$FVSWE_MESHES``, else the repository's, else a user cache."""
    env = os.environ.get("FVSWE_MESHES")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2] / "meshes"
    if (repo / BASES["square-4k"][0]).is_file():
        return repo
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fvswe" / "meshes"


def base(name: str) -> Mesh:
    """A committed base mesh (regenerated into ``meshes/`` if the file is missing)."""
    file, cells, seed = BASES[name]
    path = mesh_dir() / file
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_mesh(square(cells, seed=seed), path)
    return read_mesh(path)


def family(member: int | str) -> Mesh:
    """A member of the paper's family by triangle count (e.g. 16000) or name (``square-16k``)."""
    counts = {BASES[b][1] * 4**r: name for name, (b, r) in MEMBERS.items()}
    name = counts.get(member) if isinstance(member, int) else member
    if name not in MEMBERS:
        known = ", ".join(f"{n} ({c})" for c, n in sorted(counts.items()))
        raise ConfigError(f"mesh family: no member {member!r} (members: {known})")
    base_name, times = MEMBERS[name]
    if times == 0:
        return base(base_name)
    cached = _cached(name)
    if cached.is_file():
        return read_mesh(cached)
    below = [(r, n) for n, (b, r) in MEMBERS.items() if b == base_name and 0 < r < times]
    done, mesh = 0, None
    for r, n in sorted(below, reverse=True):  # the finest cached member below this one
        if _cached(n).is_file():
            done, mesh = r, read_mesh(_cached(n))
            break
    mesh = base(base_name) if mesh is None else mesh
    for _ in range(times - done):
        mesh = refine(mesh)
    cached.parent.mkdir(parents=True, exist_ok=True)
    write_mesh(mesh, cached, compress=False)
    return read_mesh(cached)


def _cached(name: str) -> Path:
    """Where member ``name``'s refinement is cached."""
    return mesh_dir() / "cache" / f"{name}.npz"


def load(spec: str | Path) -> Mesh:
    """A mesh file path, or a family member name such as ``square-16k``."""
    path = Path(spec)
    if path.exists():
        return read_mesh(path)
    if str(spec) in MEMBERS:
        return family(str(spec))
    raise MeshError(f"{spec}: no such file (nor a family member: {', '.join(MEMBERS)})")
