"""fvswe: finite-volume shallow-water flows on GPUs and CPUs.

Data flows one way: mesh → layout → passes → simulation → output.
"""

from __future__ import annotations

from .errors import BackendUnavailable, BlowUpError, ConfigError, FvsweError, MeshError
from .mesh import Mesh, read_mesh
from .model import Model

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "BlowUpError",
    "ConfigError",
    "FvsweError",
    "Mesh",
    "MeshError",
    "Model",
    "read_mesh",
    "__version__",
]
