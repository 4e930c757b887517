"""The implicit method's own run settings, gathered for its step and its time-step rule."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class ImplicitOptions:
    """The rows of :data:`fvswe.settings.SETTINGS` that belong to ``method = "implicit"``
    (their meanings, defaults and checks are that table's).

    ``theta``: ½ (Crank-Nicolson) to 1 (backward Euler) on the level in the momentum
    equations and the velocities in continuity; the default 0.6 damps what ½ and 0.55 let grow
    at large steps over wetting and drying (docs/IMPLICIT.md); ``preconditioner``: rrb, jacobi,
    amg or none; ``cg_tol``: CG stops at ``||r||_2 < cg_tol`` (m); ``dry_depth``: a face whose
    upwind depth is below it is dry (closed, Delft3D's threshold); ``max_wave_courant``:
    the step is at most this gravity-wave Courant number ``Δt √(g h_max) / min(Δx, Δy)``
    (the advective Courant number ``cfl`` sets it otherwise); ``dt_max``: an absolute cap
    (s), none by default; ``rrb_coarse``: RRB stops at a level of at most this many cells
    and factors it completely (the "k" of MARIN's RRB-k)."""

    theta: float
    preconditioner: str
    cg_tol: float
    dry_depth: float
    max_wave_courant: float
    dt_max: float | None
    rrb_coarse: int

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> ImplicitOptions:
        """The options among a run's resolved settings (:func:`fvswe.settings.resolve`)."""
        return cls(**{f.name: settings[f.name] for f in fields(cls)})
