"""Preconditioned conjugate gradients with an absolute stopping criterion, for NumPy or CuPy.

The loop keeps its scalars (``r·z``, ``p·Ap``, ``||r||²``) where the vectors are: 0-d
arrays of the vectors' dtype, never copied to the host inside an iteration. The stopping
test reads ``||r||²`` (with the last ``p·Ap`` and ``r·z``, for a breakdown) on the host
every ``check`` iterations (and at 1, 2, 4, ... before), one transfer each: on the GPU a
host synchronisation is the cost of many kernels, so the GPU backend tests only every
:data:`GPU_CHECK` iterations where an iteration is cheap, and may iterate up to
``check - 1`` times past the criterion;
``check = 1`` (the CPU backend) is the classic loop, its iterates bit for bit those of host
scalars (each scalar is one division of two values of the dtype: rounded once either way;
the guard against 0/0 of :func:`_advance` changes no value a solve meets).
The vector updates are written once, as array expressions; on CuPy :func:`fused` compiles
each into one kernel (``cupy.fuse``), so an iteration is the operator, the
preconditioner, three dot products and two fused updates.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .operator import _host

#: The thesis's criterion: stop once ``||r||_2 < TOL`` (absolute, in metres of level).
TOL = 1e-5
#: A solve that has not met the criterion after this many iterations has failed.
MAX_ITERATIONS = 20_000
#: The GPU backend's ``check`` (iterations between two stopping tests, host transfers) by
#: preconditioner: 8 where an iteration is some twenty kernels (Jacobi, none); 1 where it
#: is hundreds (RRB: its sweeps; AMG: a host V-cycle), which a sync costs no more than a few of.
GPU_CHECK = {"jacobi": 8, "none": 8}


class NotConverged(Exception):
    """CG stopped at :data:`MAX_ITERATIONS` (or met a breakdown) before the criterion."""


@dataclass(frozen=True)
class Solve:
    """What one solve did: its iterations and the final ``||r||_2``."""

    iterations: int
    residual: float


def _advance(x, r, p, q, rz, pq, tiny):
    """``x + α p`` and ``r - α q`` with ``α = r·z / p·Ap``. ``tiny`` (the dtype's smallest
    normal number) changes no denominator above ``2^p tiny`` (``p`` the mantissa bits) and
    makes ``α = 0`` once ``r·z`` is: a residual that reached exactly 0 between two tests
    stays there, with no 0/0. Operators only, so that ``cupy.fuse`` traces it."""
    alpha = rz / (pq + tiny)
    return x + alpha * p, r - alpha * q


def _direction(z, p, rz_new, rz, tiny):
    """The next search direction ``z + β p``, ``β = r·z (new) / r·z (old)`` (``tiny``: as
    in :func:`_advance`)."""
    return z + (rz_new / (rz + tiny)) * p


def _tests(k: int, check: int) -> bool:
    """Whether iteration ``k`` tests the criterion: at 1, 2, 4, ... below ``check`` (a
    solve of a few iterations does not run on to ``check``), then every ``check``."""
    return k % check == 0 or (k < check and k & (k - 1) == 0)


#: The functions :func:`fused` could not fuse (their names): they run unfused, as on NumPy.
UNFUSED: set[str] = set()


@functools.cache
def fused(xp, fn: Callable) -> Callable:
    """``fn`` (array expressions) as one kernel where the array module fuses (CuPy's
    ``fuse``), ``fn`` itself on NumPy; one per module and function, so that CuPy traces and
    compiles it once. Should the tracing fail, ``fn`` runs unfused from then on (the same
    expressions, launched one by one) and its name joins :data:`UNFUSED`."""
    fuse = getattr(xp, "fuse", None)
    if fuse is None:
        return fn
    kernel = fuse()(fn)

    def call(*args):
        if fn.__name__ not in UNFUSED:
            try:
                return kernel(*args)
            except Exception:  # tracing or compiling; a fault of fn itself recurs below
                UNFUSED.add(fn.__name__)
        return fn(*args)

    return call


def pcg(
    apply: Callable, precondition: Callable, b, x, xp, tol: float = TOL,
    maxiter: int = MAX_ITERATIONS, check: int = 1,
) -> tuple[object, Solve]:  # fmt: skip
    """Solve ``A x = b`` from the guess ``x`` (returned updated).

    ``apply(v)`` is ``A v``, ``precondition(r)`` is ``M⁻¹ r``; both symmetric positive
    definite. The loop stops at the first test with ``||r||_2 < tol`` (the recursively
    updated residual); it tests the guess, iterations 1, 2, 4, ... below ``check``, then
    every ``check`` iterations and ``maxiter``, so a guess that already meets it costs no
    iteration and a solve takes at most ``check - 1`` iterations more than with
    ``check = 1``.
    """
    advance, direction = fused(xp, _advance), fused(xp, _direction)
    tiny = np.finfo(b.dtype).tiny
    r = b - apply(x)
    rr = xp.vdot(r, r)
    residual = math.sqrt(float(rr))  # the one transfer before the loop
    if residual < tol:
        return x, Solve(0, residual)
    z = precondition(r)
    p = z
    rz = xp.vdot(r, z)
    for k in range(1, maxiter + 1):
        q = apply(p)
        pq = xp.vdot(p, q)
        x, r = advance(x, r, p, q, rz, pq, tiny)
        rr = xp.vdot(r, r)
        if _tests(k, check) or k == maxiter:
            rr_h, pq_h, rz_h = _host(xp.stack((rr, pq, rz)))  # one transfer
            done = _verdict(k, tol, rr_h, pq_h, rz_h)
            if done is not None:
                return x, done
        z = precondition(r)
        rz_new = xp.vdot(r, z)
        p = direction(z, p, rz_new, rz, tiny)
        rz = rz_new
    raise not_converged(math.sqrt(float(rr_h)), maxiter, tol)


def _verdict(k: int, tol: float, rr, pq, rz) -> Solve | None:
    """At a test after iteration ``k``, from the host's ``||r||²``, ``p·Ap`` and ``r·z``:
    the solve once ``||r||_2 < tol``, else None (go on); NotConverged at a breakdown."""
    residual = math.sqrt(float(rr))
    if residual < tol:
        return Solve(k, residual)
    if not (float(pq) > 0 and float(rz) > 0):
        raise NotConverged(f"breakdown at iteration {k} (p.Ap = {float(pq):.3g}, "
                           f"r.z = {float(rz):.3g})")  # fmt: skip
    return None


def not_converged(residual: float, maxiter: int, tol: float) -> NotConverged:
    """The failure of a solve that met no criterion in ``maxiter`` iterations."""
    return NotConverged(f"||r|| = {residual:.3g} after {maxiter} iterations (tol {tol:g})")
