"""The positivity limiter's formulas (docs/SCHEMES.md §13.4), written once for both backends.

The limiter keeps a layer from losing more than it holds in a step: a cell is a candidate
when a bound of its outflow (:func:`outflow_bound` of its slots' :func:`outflow_part`) exceeds
its content
(:func:`is_candidate`), its factor is :func:`theta` of its true outflow (the positive
:func:`mass_flux` of its slots), and every slot's mass flux is then scaled by its donor's
theta (:func:`limited_mass`), the donor keeping the momentum that mass no longer carries out
(:func:`donor_momentum`). The loops over a cell's slots walk arrays and stay in the
pipelines (``fvswe/backends/cpu``, ``pipeline.cuh``); these are ``@exact``: the GPU rounds
each operation as the CPU does, with no FMA contraction, in every variant.
"""

from __future__ import annotations

from .common import exact, inverse_depth

#: The positivity limiter's slack: a cell is a candidate when its outflow bound times this
#: exceeds its content, so that rounding never drops a cell whose theta is < 1.
LIMIT_WIDEN = 1.0 + 1e-3


@exact
def outflow_part(S):
    """A slot's share of a layer's outflow bound, its outflowing mass component ``max(S, 0)``
    (``S`` the slot's mass component)."""
    return S if S > 0.0 else 0.0


@exact
def outflow_bound(out, perimeter, qx, qy):
    """A layer's outflow bound from the sum ``out`` of its slots' :func:`outflow_part` and
    the sum ``perimeter`` of their lengths: ``out + |Gamma| |q|_1`` (``|q.n| <= |q|_1``)."""
    return out + perimeter * (abs(qx) + abs(qy))


@exact
def is_candidate(bound, h, area, dt):
    """Whether a layer holding ``h`` over ``area`` whose outflow bound is ``bound`` may lose
    more than it holds in ``dt``: ``dt bound LIMIT_WIDEN > h |V|``."""
    return dt * (bound * LIMIT_WIDEN) > h * area


@exact
def mass_flux(S, length, qx, qy, nx, ny):
    """A layer's mass flux out of a cell through a slot, ``Phi = S + |Gamma| q.n`` (``n``
    pointing out of the cell), and ``|Gamma| q.n``."""
    lqn = length * (qx * nx + qy * ny)
    return S + lqn, lqn


@exact
def theta(h, area, dt, out, margin):
    """A layer's outflow factor: 1 unless ``dt out > h |V|``, else ``h |V| / (dt out)
    (1 - margin)``, the margin keeping the limited depth >= 0 under round-off."""
    have = h * area
    need = dt * out
    if not need > have:
        return 1.0
    return have / need * (1.0 - margin)


@exact
def limited_mass(th, phi, lqn):
    """A slot's mass component once its flux ``Phi`` is scaled by its donor's ``th``:
    ``th Phi - |Gamma| q.n`` (the same flux on both sides of the edge)."""
    return th * phi - lqn


@exact
def donor_momentum(v1, v2, th, phi, h, qx, qy, eps_h):
    """A limited slot's discharge components ``(v1, v2)`` plus the momentum that the mass no
    longer leaving keeps, ``((th - 1) Phi) u`` with the donor's ``u = q inverse_depth(h)``."""
    kept = (th - 1.0) * phi
    inv = inverse_depth(h, eps_h)
    return v1 + kept * (qx * inv), v2 + kept * (qy * inv)
