"""Preconditioned conjugate gradients with an absolute stopping criterion, for NumPy or CuPy."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

#: The thesis's criterion: stop once ``||r||_2 < TOL`` (absolute, in metres of level).
TOL = 1e-5
#: A solve that has not met the criterion after this many iterations has failed.
MAX_ITERATIONS = 20_000


class NotConverged(Exception):
    """CG stopped at :data:`MAX_ITERATIONS` (or met a breakdown) before the criterion."""


@dataclass(frozen=True)
class Solve:
    """What one solve did: its iterations and the final ``||r||_2``."""

    iterations: int
    residual: float


def pcg(
    apply: Callable, precondition: Callable, b, x, xp, tol: float = TOL,
    maxiter: int = MAX_ITERATIONS,
) -> tuple[object, Solve]:  # fmt: skip
    """Solve ``A x = b`` from the guess ``x`` (updated in place and returned).

    ``apply(v)`` is ``A v``, ``precondition(r)`` is ``M⁻¹ r``; both symmetric positive
    definite. The loop stops as soon as ``||r||_2 < tol`` (the recursively updated
    residual), so a guess that already meets it costs no iteration.
    """
    r = b - apply(x)
    rr = float(xp.vdot(r, r))
    if math.sqrt(rr) < tol:
        return x, Solve(0, math.sqrt(rr))
    z = precondition(r)
    p = z.copy()
    rz = float(xp.vdot(r, z))
    for k in range(1, maxiter + 1):
        q = apply(p)
        pq = float(xp.vdot(p, q))
        if not (pq > 0 and rz > 0):
            raise NotConverged(f"breakdown at iteration {k} (p.Ap = {pq:.3g}, r.z = {rz:.3g})")
        alpha = rz / pq
        x += alpha * p
        r -= alpha * q
        rr = float(xp.vdot(r, r))
        if math.sqrt(rr) < tol:
            return x, Solve(k, math.sqrt(rr))
        z = precondition(r)
        rz_new = float(xp.vdot(r, z))
        p *= rz_new / rz
        p += z
        rz = rz_new
    raise NotConverged(f"||r|| = {math.sqrt(rr):.3g} after {maxiter} iterations (tol {tol:g})")
