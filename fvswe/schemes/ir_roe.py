"""IR-Roe (rotational-invariance Roe), docs/SCHEMES.md §4 (two layers) and §6 (one layer).

NumPy reference. The normal part is exactly the classical Roe 4x4 (or 2x2)
problem; tangential momentum is upwinded with the sign of each layer's mass
flux. Mirrored by :mod:`fvswe.physics.ir_roe`.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike

from .common import (
    as_inputs,
    assemble1,
    assemble2,
    by_layers,
    edge1,
    edge2,
    total_fluctuation,
    total_fluctuation1,
    upwind_tangential,
)
from .roe import apply_fallback, normal_part2, normal_split1, placeholder1, thin_fallback1


def flux2(
    Wi: ArrayLike,
    Wj: ArrayLike,
    Hi: ArrayLike,
    Hj: ArrayLike,
    normal: ArrayLike,
    g: float = 9.81,
    r: float = 0.5,
    eps_h: float = 5e-3,
    return_flags: bool = False,
    entropy_fix: bool = True,
) -> tuple[np.ndarray, ...]:
    """Two-layer IR-Roe edge contributions ``(F-, F+, ||D||_inf[, flags])`` (§4), with the
    entropy fix of §3.6 unless ``entropy_fix`` is false (the paper's scheme).

    ``Phi_k = q_kn,i + D-_4[h_k]``; ``||D||_inf = max(|l1|, |l4|, |u1|, |u2|)``;
    thin or non-hyperbolic edges fall back to PVM-IFCP as in classical Roe.
    """
    Wi, Wj, Hi, Hj, ex, ey = as_inputs(Wi, Wj, Hi, Hj, normal, 6)
    L1, L2, DH = edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation(L1, L2, DH, r)
    m, dmax, flags, fallback = normal_part2(v, L1, L2, DH, r, g, eps_h, entropy_fix)
    t1m, t1p = upwind_tangential(L1.qni + m[0], L1.qni, L1.qnj, L1.uti, L1.utj)
    t2m, t2p = upwind_tangential(L2.qni + m[2], L2.qni, L2.qnj, L2.uti, L2.utj)
    Fm = assemble2((m[0], m[1], t1m, m[2], m[3], t2m), ex, ey)
    Fp = assemble2((v[0] - m[0], v[1] - m[1], t1p, v[2] - m[2], v[3] - m[3], t2p), ex, ey)
    apply_fallback(Fm, Fp, dmax, flags, fallback, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
    if return_flags:
        return Fm, Fp, dmax, flags.astype(np.int32)
    return Fm, Fp, dmax


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
    entropy_fix: bool = True,
) -> tuple[np.ndarray, ...]:
    """Single-layer IR-Roe ``(F-, F+, ||D||_inf[, flags])`` (§6); HLL where thin; the
    entropy fix unless ``entropy_fix`` is false."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs(Wi, Wj, Hi, Hj, normal, 3)
    L, DH = edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    thin = L.hbar < eps_h
    v = total_fluctuation1(L, DH)
    m, dmax = normal_split1(v, placeholder1(L, thin), g, entropy_fix)
    tm, tp = upwind_tangential(L.qni + m[0], L.qni, L.qnj, L.uti, L.utj)
    Fm = assemble1((m[0], m[1], tm), ex, ey)
    Fp = assemble1((v[0] - m[0], v[1] - m[1], tp), ex, ey)
    flags = np.zeros(len(dmax), dtype=np.int32)
    thin_fallback1(Fm, Fp, dmax, flags, thin, Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    if return_flags:
        return Fm, Fp, dmax, flags
    return Fm, Fp, dmax


#: The kernels without the entropy fix (``entropy_fix = false``: the paper's scheme).
flux2_unfixed = functools.partial(flux2, entropy_fix=False)
flux1_unfixed = functools.partial(flux1, entropy_fix=False)

#: The public flux: picks the two- or one-layer form by the state width.
flux = by_layers("ir-roe", flux2, flux1)
