"""The implicit method's own settings (``Simulation(method="implicit", implicit=...)``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

from ..errors import ConfigError
from .cg import TOL
from .precond import PRECONDITIONERS
from .rrb import COARSE_CELLS

METHODS = ("explicit", "implicit")


@dataclass(frozen=True)
class ImplicitOptions:
    """``theta``: ½ (Crank-Nicolson) to 1 (backward Euler) on the level in the momentum
    equations and the velocities in continuity; the default 0.55 damps what ½ lets grow at
    large steps over wetting and drying (docs/IMPLICIT.md); ``preconditioner``: rrb, jacobi,
    amg or none; ``tol``: CG stops at ``||r||_2 < tol`` (m); ``dry_depth``: a face whose
    upwind depth is below it is dry (closed, Delft3D's threshold); ``max_wave_courant``:
    the step is at most this gravity-wave Courant number ``Δt √(g h_max) / min(Δx, Δy)``
    (the advective Courant number ``cfl`` sets it otherwise); ``dt_max``: an absolute cap
    (s), none by default; ``rrb_coarse``: RRB stops at a level of at most this many cells
    and factors it completely (the "k" of MARIN's RRB-k)."""

    theta: float = 0.55
    preconditioner: str = "rrb"
    tol: float = TOL
    dry_depth: float = 1e-3
    max_wave_courant: float = 10.0
    dt_max: float | None = None
    rrb_coarse: int = COARSE_CELLS

    def __post_init__(self) -> None:
        if not (isinstance(self.theta, (int, float)) and 0.5 <= self.theta <= 1):
            raise ConfigError(f"theta: must lie in [0.5, 1], got {self.theta!r}")
        if self.preconditioner not in PRECONDITIONERS:
            raise ConfigError(
                f"preconditioner: unknown {self.preconditioner!r} (choose from "
                f"{', '.join(PRECONDITIONERS)})"
            )
        for key in ("tol", "dry_depth", "max_wave_courant"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ConfigError(f"{key}: must be a positive number, got {value!r}")
        if isinstance(self.rrb_coarse, bool) or not (
            isinstance(self.rrb_coarse, int) and 4 <= self.rrb_coarse <= 65536
        ):
            raise ConfigError(
                f"rrb_coarse: must be an integer in [4, 65536], got {self.rrb_coarse!r}"
            )
        if self.dt_max is not None and not (
            isinstance(self.dt_max, (int, float)) and math.isfinite(self.dt_max) and self.dt_max > 0
        ):
            raise ConfigError(f"dt_max: must be a positive number, got {self.dt_max!r}")

    @classmethod
    def of(cls, value: ImplicitOptions | Mapping | None) -> ImplicitOptions:
        """The options from None (defaults), a mapping of their keywords, or themselves."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ConfigError(
                f"implicit: unknown key {unknown[0]!r} (keys: {', '.join(sorted(known))})"
            )
        return cls(**value)
