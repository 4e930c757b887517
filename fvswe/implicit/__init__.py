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
  the solver; :mod:`~fvswe.implicit.kernel_cg`: on the GPU, CG with Jacobi (or none) in
  two CUDA kernels an iteration (``cg.cu``);
- :mod:`~fvswe.implicit.backend`: all of it behind the Backend protocol, so that
  ``Simulation(..., method="implicit")`` keeps outputs, gauges, checkpoints and the CLI;
- :mod:`~fvswe.implicit.options`: its run settings (rows of :data:`fvswe.settings.SETTINGS`).

docs/IMPLICIT.md describes the method and the choices made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError
from .options import ImplicitOptions

__all__ = ["ImplicitOptions", "make_backend"]

#: A Layout's source terms (and maps) the θ-scheme does not take: (attribute, Simulation input).
NOT_TAKEN = (("sources", "sources (point sources and rain)"), ("wind", "wind"),
             ("coriolis", "coriolis"), ("slide", "slide (a moving bed)"),
             ("maxima", "maxima (maximum and arrival maps)"),
             ("sphere", "a lon/lat mesh (on the sphere)"))  # fmt: skip


def make_backend(layout, device: str, settings: Mapping[str, Any],
                 backend_options: Mapping[str, Any] | None, distributed: bool):  # fmt: skip
    """The :class:`~fvswe.implicit.backend.ImplicitBackend` of a Simulation's ``layout`` on
    ``device`` (``cpu`` or ``gpu``) with the run's resolved ``settings``
    (:func:`fvswe.settings.resolve`); a one-line ConfigError for what the method does not
    run (several ranks, the explicit backends' own options, the source terms of
    :data:`NOT_TAKEN`) rather than a run without it."""
    from .backend import ImplicitBackend

    if distributed:
        raise ConfigError("method 'implicit': one process only (no MPI ranks)")
    for attr, given in NOT_TAKEN:
        if getattr(layout, attr) is not None:
            raise ConfigError(f"method 'implicit': {given} is for the explicit method only")
    if backend_options:
        name = sorted(backend_options)[0]
        raise ConfigError(f"method 'implicit': {name} is an option of the explicit backends")
    return ImplicitBackend(layout, device, ImplicitOptions.of(settings), cfl=settings["cfl"],
                           dt_mode=settings["dt_mode"], dt_fixed=settings["dt"])  # fmt: skip
