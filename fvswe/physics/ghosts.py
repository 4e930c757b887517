"""Ghost states of the boundaries with time series (docs/SCHEMES.md §7.4-§7.6).

Scalar ``@jit`` functions on 6-tuples (one layer fills the first three, ``layers`` says
which): the CPU's edge pass calls them, and :mod:`fvswe.codegen` emits them for the GPU's
(``ghosts::level_ghost<double>`` etc. in ``pipeline.cuh``, float64 in every module), so
float64 CPU and GPU runs agree bit for bit. The NumPy reference for the tests is
:mod:`fvswe.schemes.ghosts`. Table values come in as read:
a level or a far-field level (m), or a unit discharge into the domain (m^2/s).
"""

from __future__ import annotations

import math

from .common import inverse_depth, jit, jit_inline, rotate, rotate_back, wall_ghost
from .constants import DISCHARGE_MAXIT, DISCHARGE_TOL


@jit
def level_ghost(Wi, Hi, eta, eta2, layers, eps_h):
    """Imposed surface level ``eta`` (and interface level ``eta2``, two layers) over the inner
    bed, moving with the inner cell's desingularised velocities (§7.4)."""
    if layers == 1:
        hg = max(eta + Hi, 0.0)
        k = inverse_depth(Wi[0], eps_h)
        z = hg * 0
        return (hg, hg * (Wi[1] * k), hg * (Wi[2] * k), z, z, z)
    ht = max(eta + Hi, 0.0)
    h2 = min(max(eta2 + Hi, 0.0), ht)
    h1 = ht - h2
    k1 = inverse_depth(Wi[0], eps_h)
    k2 = inverse_depth(Wi[3], eps_h)
    return (h1, h1 * (Wi[1] * k1), h1 * (Wi[2] * k1), h2, h2 * (Wi[4] * k2), h2 * (Wi[5] * k2))


@jit
def discharge_celerity(phi, R, g):
    """Ghost celerity ``c = sqrt(g h)`` of an outward unit discharge ``phi`` that keeps the
    outgoing invariant ``R = u_n + 2 c``: the subcritical root of ``2c^3 - R c^2 + g phi``
    by Newton from above (the critical ``R/3`` when an outflow has no root; §7.5)."""
    Rp = max(R, 0.0)
    if not phi < 0.0:
        cc = Rp / 3.0
        if (2.0 * cc - R) * cc * cc + g * phi >= 0.0:
            return cc
    x = -0.5 * g * phi  # an inflow's start (used where phi < 0)
    c = 0.5 * Rp + max(math.sqrt(x), math.sqrt(math.sqrt(x))) if phi < 0.0 else 0.5 * Rp
    for _ in range(DISCHARGE_MAXIT):
        p = (2.0 * c - R) * c * c + g * phi
        dp = (6.0 * c - 2.0 * R) * c
        if not dp > 0.0:
            break
        dc = p / dp
        c = c - dc
        if abs(dc) <= DISCHARGE_TOL * c:
            break
    return c


@jit
def discharge_momentum(hg, phi, ut, ex, ey):
    """Ghost ``(qx, qy)`` with normal discharge ``phi``: no tangential flow coming in, the inner
    tangential velocity ``ut`` going out."""
    qt = hg * ut if phi > 0.0 else 0.0
    return rotate_back(phi, qt, ex, ey)


@jit
def discharge_ghost(Wi, qin1, qin2, ex, ey, g, layers, eps_h):
    """Imposed unit discharges into the domain ``qin1`` (``qin2``: lower layer): one layer takes
    its depth from the outgoing Riemann invariant, two layers keep the inner depths (§7.5)."""
    phi1 = -qin1
    qn1, qt1 = rotate(Wi[1], Wi[2], ex, ey)
    k1 = inverse_depth(Wi[0], eps_h)
    if layers == 1:
        c = discharge_celerity(phi1, qn1 * k1 + 2.0 * math.sqrt(g * Wi[0]), g)
        hg = c * c / g
        qx, qy = discharge_momentum(hg, phi1, qt1 * k1, ex, ey)
        z = hg * 0
        return (hg, qx, qy, z, z, z)
    phi2 = -qin2
    qn2, qt2 = rotate(Wi[4], Wi[5], ex, ey)
    k2 = inverse_depth(Wi[3], eps_h)
    qx1, qy1 = discharge_momentum(Wi[0], phi1, qt1 * k1, ex, ey)
    qx2, qy2 = discharge_momentum(Wi[3], phi2, qt2 * k2, ex, ey)
    return (Wi[0], qx1, qy1, Wi[3], qx2, qy2)


@jit
def discharge_fluctuation(Fm, Wi, qin1, qin2, ex, ey, layers):
    """``F-`` with its mass components replaced so that each layer's outward mass flux
    ``F-_h + q_i.eta`` is exactly ``-qin`` (§7.5)."""
    F0 = -qin1 - (Wi[1] * ex + Wi[2] * ey)
    if layers == 1:
        return (F0, Fm[1], Fm[2], Fm[3], Fm[4], Fm[5])
    F3 = -qin2 - (Wi[4] * ex + Wi[5] * ey)
    return (F0, Fm[1], Fm[2], F3, Fm[4], Fm[5])


@jit
def characteristic_state(h, un, hext, g):
    """``(h_g, u_g)`` from the outgoing invariant ``u_n + 2 sqrt(g h)`` of the inner state and
    the incoming one ``-2 sqrt(g h_ext)`` of a far field at rest of depth ``h_ext`` (§7.6)."""
    rp = un + 2.0 * math.sqrt(g * h)
    rm = -2.0 * math.sqrt(g * max(hext, 0.0))
    c = max(0.25 * (rp - rm), 0.0)
    return c * c / g, 0.5 * (rp + rm)


@jit
def characteristic_ghost(Wi, Hi, eta, ex, ey, g, layers, eps_h):
    """Non-reflecting ghost toward a far field at rest at level ``eta`` (§7.6): one layer, or
    the external mode of two (total depth and discharge; the interface depth and the
    layers' velocity difference are the inner cell's)."""
    qn1, qt1 = rotate(Wi[1], Wi[2], ex, ey)
    k1 = inverse_depth(Wi[0], eps_h)
    if layers == 1:
        hg, ug = characteristic_state(Wi[0], qn1 * k1, eta + Hi, g)
        qx, qy = rotate_back(hg * ug, hg * (qt1 * k1), ex, ey)
        z = hg * 0
        return (hg, qx, qy, z, z, z)
    qn2, qt2 = rotate(Wi[4], Wi[5], ex, ey)
    k2 = inverse_depth(Wi[3], eps_h)
    h = Wi[0] + Wi[3]
    un = (qn1 + qn2) * inverse_depth(h, eps_h)
    hg, ug = characteristic_state(h, un, eta + Hi, g)
    du = ug - un
    h2 = min(Wi[3], hg)
    h1 = hg - h2
    qx1, qy1 = rotate_back(h1 * (qn1 * k1 + du), h1 * (qt1 * k1), ex, ey)
    qx2, qy2 = rotate_back(h2 * (qn2 * k2 + du), h2 * (qt2 * k2), ex, ey)
    return (h1, qx1, qy1, h2, qx2, qy2)


# The ghosts in the one signature of the boundary registry (fvswe.registry.Boundary.ghost):
# ``ghost(Wi, Hi, a, b, ex, ey, g, layers, eps_h)``, ``a`` and ``b`` the edge's table values.


@jit_inline
def wall(Wi, Hi, a, b, ex, ey, g, layers, eps_h):
    """Wall (§7.1): :func:`fvswe.physics.common.wall_ghost`."""
    return wall_ghost(Wi, ex, ey)


@jit_inline
def level(Wi, Hi, a, b, ex, ey, g, layers, eps_h):
    """Imposed level ``a`` (interface ``b``): :func:`level_ghost`."""
    return level_ghost(Wi, Hi, a, b, layers, eps_h)


@jit_inline
def discharge(Wi, Hi, a, b, ex, ey, g, layers, eps_h):
    """Imposed unit discharges ``a`` (lower layer ``b``): :func:`discharge_ghost`."""
    return discharge_ghost(Wi, a, b, ex, ey, g, layers, eps_h)


@jit_inline
def characteristic(Wi, Hi, a, b, ex, ey, g, layers, eps_h):
    """Far field at level ``a``: :func:`characteristic_ghost`."""
    return characteristic_ghost(Wi, Hi, a, ex, ey, g, layers, eps_h)
