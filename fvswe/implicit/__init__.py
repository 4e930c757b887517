"""The implicit method of the C-grid thesis: a semi-implicit θ-scheme on the staggered C-grid.

One layer on a Cartesian :class:`~fvswe.grid.Grid`: levels at the cells, velocities at the
faces, the level in the momentum equations, friction and the velocities in continuity
implicit, advection explicit; the pentadiagonal SPD system of each step solved by
preconditioned conjugate gradients (RRB, Jacobi or AMG preconditioning). The modules:

- :mod:`~fvswe.implicit.cgrid`: the staggered grid and its boundaries, from a Layout;
- :mod:`~fvswe.implicit.step`: one θ-step (face depths, advection, friction, wetting and
  drying, the system, the update);
- :mod:`~fvswe.implicit.operator`: the 5-point operator (matrix-free, compact diagonals,
  SciPy CSR);
- :mod:`~fvswe.implicit.cg`, :mod:`~fvswe.implicit.precond`, :mod:`~fvswe.implicit.rrb`:
  the solver;
- :mod:`~fvswe.implicit.backend`: all of it behind the Backend protocol, so that
  ``Simulation(..., method="implicit")`` keeps outputs, gauges and the CLI.

docs/IMPLICIT.md describes the method and the choices made.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ConfigError
from .settings import METHODS, ImplicitOptions

__all__ = ["METHODS", "ImplicitOptions", "check_method", "make_backend"]


def make_backend(layout, device: str, implicit: ImplicitOptions | Mapping | None, options: dict,
            distributed: bool):  # fmt: skip
    """The :class:`~fvswe.implicit.backend.ImplicitBackend` of a Simulation's ``layout`` on
    ``device`` (``cpu`` or ``gpu``); ``options`` are the Simulation's backend keywords
    (cfl, dt_mode, dt_fixed, threads, and those the implicit method refuses)."""
    from .backend import ImplicitBackend

    if distributed:
        raise ConfigError("method 'implicit': one process only (no MPI ranks)")
    refused = sorted(set(options) - {"cfl", "dt_mode", "dt_fixed", "threads"})
    if refused:
        raise ConfigError(f"method 'implicit': {refused[0]} is an option of the explicit backends")
    return ImplicitBackend(layout, device, ImplicitOptions.of(implicit), **options)


def check_method(method: str) -> None:
    """A one-line ConfigError for an unknown ``method``."""
    if method not in METHODS:
        raise ConfigError(f"method: unknown {method!r} (choose from {', '.join(METHODS)})")
