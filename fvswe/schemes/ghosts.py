"""NumPy reference of the boundary ghost states with time series (docs/SCHEMES.md §7.4-§7.6).

Vectorised over edges: ``W`` is ``(n, 6)`` (one layer: the last three columns zero), ``H``,
the table values and the normals ``(n,)``. The scalar version, fvswe/physics/ghosts.py
(Numba on the CPU, emitted for CUDA), is held to these in the tests.
"""

from __future__ import annotations

import numpy as np

from ..physics.constants import DISCHARGE_MAXIT, DISCHARGE_TOL
from .common import inverse_depth, rotate, rotate_back


def level_ghost(W, H, eta, eta2, layers: int, eps_h: float) -> np.ndarray:
    """Levels over the inner bed, inner velocities (§7.4)."""
    G = np.zeros_like(W)
    ht = np.maximum(eta + H, 0.0)
    if layers == 1:
        G[:, 0] = ht
    else:
        G[:, 3] = np.minimum(np.maximum(eta2 + H, 0.0), ht)
        G[:, 0] = ht - G[:, 3]
    for c in range(0, 3 * layers, 3):
        k = inverse_depth(W[:, c], eps_h)
        G[:, c + 1] = G[:, c] * (W[:, c + 1] * k)
        G[:, c + 2] = G[:, c] * (W[:, c + 2] * k)
    return G


def discharge_celerity(phi, R, g: float) -> np.ndarray:
    """The subcritical root ``c`` of ``2c^3 - R c^2 + g phi`` (critical ``R/3`` when an outflow
    has none), by Newton from above (§7.5)."""
    phi, R = np.broadcast_arrays(np.asarray(phi, float), np.asarray(R, float))
    Rp = np.maximum(R, 0.0)
    x = np.maximum(-0.5 * g * phi, 0.0)
    inflow = phi < 0.0
    c = np.where(inflow, 0.5 * Rp + np.maximum(np.sqrt(x), np.sqrt(np.sqrt(x))), 0.5 * Rp)
    cc = Rp / 3.0
    critical = ~inflow & ((2.0 * cc - R) * cc * cc + g * phi >= 0.0)
    active = ~critical
    for _ in range(DISCHARGE_MAXIT):
        p = (2.0 * c - R) * c * c + g * phi
        dp = (6.0 * c - 2.0 * R) * c
        active &= dp > 0.0
        dc = np.where(active, p / np.where(active, dp, 1.0), 0.0)
        c = c - dc
        active &= ~(np.abs(dc) <= DISCHARGE_TOL * c)
        if not active.any():
            break
    return np.where(critical, cc, c)


def discharge_ghost(W, qin1, qin2, ex, ey, g: float, layers: int, eps_h: float) -> np.ndarray:
    """Imposed unit discharges into the domain (§7.5)."""
    G = np.zeros_like(W)
    for c, qin in ((0, qin1), (3, qin2))[:layers]:
        phi = -np.asarray(qin, float)
        qn, qt = rotate(W[:, c + 1], W[:, c + 2], ex, ey)
        k = inverse_depth(W[:, c], eps_h)
        if layers == 1:
            cel = discharge_celerity(phi, qn * k + 2.0 * np.sqrt(g * W[:, c]), g)
            hg = cel * cel / g
        else:
            hg = W[:, c]
        G[:, c] = hg
        qt_g = np.where(phi > 0.0, hg * (qt * k), 0.0)
        G[:, c + 1], G[:, c + 2] = rotate_back(phi, qt_g, ex, ey)
    return G


def discharge_fluctuation(Fm, W, qin1, qin2, ex, ey, layers: int) -> np.ndarray:
    """``F-`` whose mass components make each layer's outward mass flux ``-qin`` (§7.5)."""
    F = np.array(Fm, dtype=np.float64, copy=True)
    for c, qin in ((0, qin1), (3, qin2))[:layers]:
        F[:, c] = -qin - (W[:, c + 1] * ex + W[:, c + 2] * ey)
    return F


def characteristic_state(h, un, hext, g: float):
    """``(h_g, u_g)`` from the outgoing invariant and a far field at rest of depth ``hext``."""
    rp = un + 2.0 * np.sqrt(g * h)
    rm = -2.0 * np.sqrt(g * np.maximum(hext, 0.0))
    c = np.maximum(0.25 * (rp - rm), 0.0)
    return c * c / g, 0.5 * (rp + rm)


def characteristic_ghost(W, H, eta, ex, ey, g: float, layers: int, eps_h: float) -> np.ndarray:
    """Non-reflecting ghost toward a far field at rest at level ``eta`` (§7.6)."""
    G = np.zeros_like(W)
    cols = (0, 3)[:layers]
    rot = [rotate(W[:, c + 1], W[:, c + 2], ex, ey) for c in cols]
    ks = [inverse_depth(W[:, c], eps_h) for c in cols]
    if layers == 1:
        h, qn = W[:, 0], rot[0][0]
        un = qn * ks[0]
    else:
        h = W[:, 0] + W[:, 3]
        un = (rot[0][0] + rot[1][0]) * inverse_depth(h, eps_h)
    hg, ug = characteristic_state(h, un, eta + H, g)
    if layers == 1:
        G[:, 0] = hg
        shift = None
    else:
        G[:, 3] = np.minimum(W[:, 3], hg)
        G[:, 0] = hg - G[:, 3]
        shift = ug - un
    for c, (qn, qt), k in zip(cols, rot, ks, strict=True):
        un_g = ug if shift is None else qn * k + shift
        G[:, c + 1], G[:, c + 2] = rotate_back(G[:, c] * un_g, G[:, c] * (qt * k), ex, ey)
    return G
