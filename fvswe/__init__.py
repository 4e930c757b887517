"""fvswe: finite-volume shallow-water flows on GPUs and CPUs.

Data flows one way: mesh → layout → passes → simulation → output.
"""

from __future__ import annotations

from .errors import BackendUnavailable, BlowUpError, ConfigError, FvsweError, MeshError

#: Public names and the modules they come from, imported on first use (PEP 562), so that
#: ``fvswe`` on the command line starts at once (a Ctrl-C then meets its handler).
_LAZY = {"CASES": "cases", "Coriolis": "forcing", "get_case": "cases", "Grid": "grid",
         "Mesh": "mesh", "Wind": "forcing",
         "read_mesh": "mesh", "Model": "model", "RunSummary": "simulation",
         "Simulation": "simulation"}  # fmt: skip


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'fvswe' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)


__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "BlowUpError",
    "CASES",
    "ConfigError",
    "Coriolis",
    "FvsweError",
    "Grid",
    "Mesh",
    "MeshError",
    "Model",
    "RunSummary",
    "Simulation",
    "Wind",
    "get_case",
    "read_mesh",
    "__version__",
]
