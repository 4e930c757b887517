"""The preconditioners of the θ-scheme's CG: RRB (the CPU's default), Jacobi (the GPU's),
AMG, none.

Each is built from a :class:`~fvswe.implicit.operator.Stencil` once a system (a step)
and returns ``M⁻¹ r`` for a ``(ny, nx)`` residual, on the device of the stencil.

- ``rrb``: MARIN's repeated red-black factorisation (:mod:`fvswe.implicit.rrb`), NumPy
  or CuPy.
- ``jacobi``: the inverse diagonal, a wall mirrored (:meth:`Stencil.jacobi_diagonal`),
  NumPy or CuPy.
- ``amg``: smoothed-aggregation algebraic multigrid from pyamg (a V-cycle, the optional
  extra ``fvswe[amg]``), on the host: a CuPy residual is copied there and back, so on the
  GPU it counts iterations, not time. On the GPU itself AMG exists as NVIDIA's AmgX (a C
  library; its Python bindings are not a maintained package) and not in CuPy.
- ``none``: plain CG.
"""

from __future__ import annotations

from ..errors import ConfigError
from .operator import Stencil
from .rrb import COARSE_CELLS, RRB

PRECONDITIONERS = ("rrb", "jacobi", "amg", "none")
#: What ``auto`` (the default setting) is on each device: the faster there (docs/IMPLICIT.md,
#: "Choices"): RRB's few iterations on the CPU; on the GPU Jacobi's CG in two kernels an
#: iteration, where RRB is array code of hundreds of launches an iteration.
BY_DEVICE = {"cpu": "rrb", "gpu": "jacobi"}
#: The setting's values.
CHOICES = ("auto", *PRECONDITIONERS)


def resolve(name: str, device: str) -> str:
    """The preconditioner a run on ``device`` (``cpu`` or ``gpu``) takes for the setting
    ``name`` (:data:`CHOICES`)."""
    return BY_DEVICE[device] if name == "auto" else name


def build(name: str, stencil: Stencil, xp, coarse: int = COARSE_CELLS):
    """``M⁻¹`` of ``name`` for the system ``stencil`` (see the module's list); ``coarse``:
    RRB's largest completely factored level (cells)."""
    if name == "rrb":
        return RRB(*stencil.five(xp), xp, coarse=coarse)
    if name == "jacobi":
        inverse = 1.0 / stencil.jacobi_diagonal(xp)
        return lambda r: r * inverse
    if name == "amg":
        return _amg(stencil, xp)
    if name == "none":
        return lambda r: r.copy()
    raise ConfigError(
        f"preconditioner: unknown {name!r} (choose from {', '.join(PRECONDITIONERS)})"
    )


def _amg(stencil: Stencil, xp):
    """pyamg's smoothed aggregation as a preconditioner (one V-cycle, symmetric smoothing)."""
    try:
        import pyamg
    except ImportError:
        raise ConfigError("preconditioner 'amg' needs pyamg: pip install 'fvswe[amg]'") from None
    shape = stencil.shape
    cycle = pyamg.smoothed_aggregation_solver(stencil.csr()).aspreconditioner(cycle="V")
    if xp.__name__ == "numpy":
        return lambda r: cycle.matvec(r.ravel()).reshape(shape).astype(r.dtype)
    return lambda r: xp.asarray(cycle.matvec(r.get().ravel()).reshape(shape), dtype=r.dtype)
