"""Single-layer HLL (PVM-1U with Einfeldt speeds), docs/SCHEMES.md §6 — NumPy reference.

Also provides the HLL viscosity coefficients that PVM-IFCP uses on thin
layers (§5.2). Mirrored by :mod:`fvswe.physics.hll`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .common import (
    as_inputs,
    assemble1,
    by_layers,
    edge1,
    total_fluctuation1,
    upwind_tangential,
)


def hll_coefficients(sl, sr):
    """``(alpha0, alpha1)`` of the degree-1 interpolation of ``|x|`` at ``sl < sr`` (§6).

    Where ``sr <= sl`` (only a dry edge, where both are 0) it returns Rusanov's
    ``(max(|sl|, |sr|), 0)``.
    """
    asl = np.abs(sl)
    asr = np.abs(sr)
    ok = sr > sl
    den = np.where(ok, sr - sl, 1.0)
    a0 = np.where(ok, (sr * asl - sl * asr) / den, np.maximum(asl, asr))
    a1 = np.where(ok, (asr - asl) / den, 0.0)
    return a0, a1


def hll_tangential(L, a0, a1):
    """``(D-_qt, D+_qt)`` of HLL's viscosity ``a0 + a1 A`` on the tangential discharge (§13.3):
    the same viscosity as the normal one, so a flow along ``x`` puts no ``y``-discharge into
    a triangle across a reconstructed edge."""
    vt = L.qnj * L.utj - L.qni * L.uti
    dm = 0.5 * (vt - (a0 * L.dqt + a1 * vt))
    return dm, vt - dm


def einfeldt_speeds(L, g: float):
    """``SL = min(u - c, un_i - c_i)``, ``SR = max(u + c, un_j + c_j)`` (§6)."""
    c = np.sqrt(L.c2)
    sl = np.minimum(L.u - c, L.uni - np.sqrt(g * L.hi))
    sr = np.maximum(L.u + c, L.unj + np.sqrt(g * L.hj))
    return sl, sr


def viscous_split1(v, L, DH, a0, a1):
    """``D-_2 = (v - Vis)/2`` with ``Vis = alpha0 (Dh - DH, Dqn) + alpha1 v`` (§6)."""
    v0, v1 = v
    return 0.5 * (v0 - (a0 * (L.dh - DH) + a1 * v0)), 0.5 * (v1 - (a0 * L.dqn + a1 * v1))


def flux1(
    Wi: ArrayLike,
    Wj: ArrayLike,
    Hi: ArrayLike,
    Hj: ArrayLike,
    normal: ArrayLike,
    g: float = 9.81,
    r: float = 0.5,
    eps_h: float = 5e-3,
    return_flags: bool = False,
) -> tuple[np.ndarray, ...]:
    """Single-layer HLL edge contributions ``(F-, F+, ||D||_inf[, flags])`` (§6, §4).

    ``Wi, Wj`` are (E, 3) states ``(h, qx, qy)``; ``r`` is unused. HLL needs no
    fallback, so its flags are all 0.
    """
    Wi, Wj, Hi, Hj, ex, ey = as_inputs(Wi, Wj, Hi, Hj, normal, 3)
    L, DH = edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation1(L, DH)
    sl, sr = einfeldt_speeds(L, g)
    a0, a1 = hll_coefficients(sl, sr)
    m0, m1 = viscous_split1(v, L, DH, a0, a1)
    tm, tp = upwind_tangential(L.qni + m0, L.qni, L.qnj, L.uti, L.utj)
    Fm = assemble1((m0, m1, tm), ex, ey)
    Fp = assemble1((v[0] - m0, v[1] - m1, tp), ex, ey)
    dmax = np.maximum(np.abs(sl), np.abs(sr))
    if return_flags:
        return Fm, Fp, dmax, np.zeros(len(dmax), dtype=np.int32)
    return Fm, Fp, dmax


#: The public flux: picks the two- or one-layer form by the state width.
flux = by_layers("hll", None, flux1)
