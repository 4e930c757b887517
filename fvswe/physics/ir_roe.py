"""IR-Roe per-edge kernels (docs/SCHEMES.md §4, §6), mirroring :mod:`fvswe.schemes.ir_roe`.

``ir_roe2`` is the two-layer kernel (6-tuples), ``ir_roe1`` the single-layer one; the
registry's kernels ``ir_roe.flux2``, ``ir_roe.flux1`` and their ``_unfixed`` forms are these
with ``fixed`` (the entropy fix) bound, as :mod:`fvswe.physics.roe`'s
(:data:`fvswe.registry.BOUND`).
"""

from __future__ import annotations

from .common import (
    as_inputs1,
    as_inputs2,
    assemble1,
    assemble2,
    edge1,
    edge2,
    jit,
    total_fluctuation,
    total_fluctuation1,
    upwind_tangential,
)
from .roe import apply_fallback, normal_part2, normal_split1, thin_fallback1


@jit
def ir_roe2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, fixed):
    """Two-layer IR-Roe: ``(F- 6-tuple, F+ 6-tuple, ||D||_inf, flag)`` (§4), with the
    entropy fix when ``fixed``."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs2(Wi, Wj, Hi, Hj, ex, ey)
    L1, L2, DH = edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation(L1, L2, DH, r)
    m, dmax, flag, fallback = normal_part2(v, L1, L2, DH, r, g, eps_h, fixed)
    if fallback:
        return apply_fallback(flag, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
    t1m, t1p = upwind_tangential(L1.qni + m[0], L1.qni, L1.qnj, L1.uti, L1.utj)
    t2m, t2p = upwind_tangential(L2.qni + m[2], L2.qni, L2.qnj, L2.uti, L2.utj)
    Fm = assemble2((m[0], m[1], t1m, m[2], m[3], t2m), ex, ey)
    Fp = assemble2((v[0] - m[0], v[1] - m[1], t1p, v[2] - m[2], v[3] - m[3], t2p), ex, ey)
    return Fm, Fp, dmax, flag


@jit
def ir_roe1(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, fixed):
    """Single-layer IR-Roe: ``(F- 3-tuple, F+ 3-tuple, ||D||_inf, flag)`` (§6), with the
    entropy fix when ``fixed``."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs1(Wi, Wj, Hi, Hj, ex, ey)
    L, DH = edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    if L.hbar < eps_h:
        return thin_fallback1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation1(L, DH)
    m, dmax = normal_split1(v, L, g, fixed)
    tm, tp = upwind_tangential(L.qni + m[0], L.qni, L.qnj, L.uti, L.utj)
    Fm = assemble1((m[0], m[1], tm), ex, ey)
    Fp = assemble1((v[0] - m[0], v[1] - m[1], tp), ex, ey)
    return Fm, Fp, dmax, 0
