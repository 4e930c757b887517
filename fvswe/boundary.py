"""Boundary conditions by tag: which ghost state each boundary edge sees (SCHEMES.md §7)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .errors import ConfigError

#: Edge condition codes stored in ``Layout.edge_bc`` (0 marks an interior edge).
INTERIOR, WALL, OPEN = 0, 1, 2
KINDS = {"wall": WALL, "open": OPEN}


def edge_conditions(mesh, conditions: Mapping[str, str] | None = None) -> np.ndarray:
    """Per-edge condition codes from ``{tag name: kind}``.

    ``None`` puts walls on every boundary. Otherwise every boundary tag of the
    mesh needs a condition, and every condition needs a tag of the mesh, so a
    misspelt tag is an error rather than a silent wall.
    """
    codes = np.zeros(mesh.n_edges, dtype=np.int8)
    boundary = mesh.edge_cells[:, 1] < 0
    if conditions is None:
        codes[boundary] = WALL
        return codes
    present = {name for name, tid in mesh.tags.items() if np.any(mesh.edge_tag == tid)}
    for name, kind in conditions.items():
        if name not in mesh.tags:
            known = ", ".join(sorted(present)) or "none"
            raise ConfigError(
                f"boundary condition for tag {name!r}, which {mesh.source} lacks "
                f"(its boundary tags: {known})"
            )
        if kind not in KINDS:
            raise ConfigError(
                f"boundary tag {name!r}: unknown condition {kind!r} "
                f"(choose from {', '.join(KINDS)})"
            )
        codes[mesh.edge_tag == mesh.tags[name]] = KINDS[kind]
    missing = sorted(present - set(conditions))
    if missing:
        raise ConfigError(
            f"boundary tag {missing[0]!r} of {mesh.source} has no condition "
            f"(give one of {', '.join(KINDS)})"
        )
    return codes
