"""Meshes: topology and geometry (``Mesh``), file I/O, orderings, metrics and generators."""

from __future__ import annotations

from .core import Mesh
from .io import read_mesh, write_mesh
from .orderings import ORDERINGS, bandwidth, profile

__all__ = ["ORDERINGS", "Mesh", "bandwidth", "profile", "read_mesh", "write_mesh"]
