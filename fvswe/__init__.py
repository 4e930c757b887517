"""fvswe: finite-volume shallow-water flows on GPUs and CPUs.

Data flows one way: mesh → layout → passes → simulation → output.
"""

from __future__ import annotations

from .cases import CASES, get_case
from .errors import BackendUnavailable, BlowUpError, ConfigError, FvsweError, MeshError
from .grid import Grid
from .mesh import Mesh, read_mesh
from .model import Model
from .simulation import RunSummary, Simulation

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "BlowUpError",
    "CASES",
    "ConfigError",
    "FvsweError",
    "Grid",
    "Mesh",
    "MeshError",
    "Model",
    "RunSummary",
    "Simulation",
    "get_case",
    "read_mesh",
    "__version__",
]
