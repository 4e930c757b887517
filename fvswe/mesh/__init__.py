"""Meshes: topology and geometry (``Mesh``), file I/O, orderings, metrics and generators."""

from __future__ import annotations

from .catalog import family, load, refine
from .core import Mesh
from .io import read_cell_fields, read_mesh, write_mesh
from .orderings import ORDERINGS, bandwidth, profile

__all__ = [
    "ORDERINGS",
    "Mesh",
    "bandwidth",
    "family",
    "load",
    "profile",
    "read_cell_fields",
    "read_mesh",
    "refine",
    "write_mesh",
]
