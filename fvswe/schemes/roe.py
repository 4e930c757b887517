"""Classical Roe scheme, docs/SCHEMES.md §3 (two layers) and §6 (one layer) — NumPy reference.

The 6x6 projector ``P-`` is never formed: the block formula of §3.5 splits the
4x4 normal part with the eigenpairs of EIG4 and treats the two shear waves in
closed form. Edges the eigen-decomposition cannot serve fall back to PVM-IFCP
(§3.5 (c), §8); transonic waves get the Harten-Hyman entropy fix (§3.6).
Mirrored by :mod:`fvswe.physics.roe`.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike

from ..physics.constants import (
    FLAG_NEAR_COINCIDENT,
    FLAG_NONHYPERBOLIC,
    FLAG_THIN,
    NEAR_COINCIDENT,
    PAIR_GAP,
)
from . import hll, pvm_ifcp
from .common import (
    as_inputs,
    assemble1,
    assemble2,
    by_layers,
    edge1,
    edge2,
    eig4,
    eigen_coefficient,
    harten_hyman,
    nonpositive,
    s_minus,
    tangential_fluctuation,
    thin_edge,
    total_fluctuation,
    total_fluctuation1,
)


def wave_terms(x, lam, a):
    """``x k_m = x (1, lam, a, a lam)``."""
    return x, x * lam, x * a, x * a * lam


def normal_split2(v, L1, L2, r: float):
    """Upwind part ``D-_4 = sum_m s-(lambda_m) (l_m . v) k_m`` of the 4x4 Roe problem (§3.5).

    Returns ``(D-_4, (lambda1, .., lambda4), near, flags)``. Where ``s-(lambda2) =
    s-(lambda3)`` the internal pair is split with the projector onto its joint
    subspace, ``I - k1 l1 - k4 l4``, which is exact for any gap and needs no internal
    eigenvector (§3.5 (b)). A near-coincident pair (flag 2) of opposite signs gets
    that projector with weight 1/2. A complex pair gets flag 1 and a meaningless
    ``D-_4``: the caller replaces it.
    """
    u1, u2, c1, c2 = L1.u, L2.u, L1.c2, L2.c2
    l1, l2, l3, l4, disc = eig4(u1, u2, c1, c2, r)
    near = (l3 - l2) < NEAR_COINCIDENT * (l4 - l1)
    same = s_minus(l2) == s_minus(l3)
    d = (0.0, 0.0, 0.0, 0.0)
    # Near-coincident pairs divide by ~0 here; those edges are replaced below.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for lam in (l1, l2, l3, l4):
            alpha, a = eigen_coefficient(lam, v, u1, u2, c1, c2, r)
            t = wave_terms(s_minus(lam) * alpha, lam, a)
            d = tuple(dk + tk for dk, tk in zip(d, t, strict=True))
    al1, a1 = eigen_coefficient(l1, v, u1, u2, c1, c2, r)
    al4, a4 = eigen_coefficient(l4, v, u1, u2, c1, c2, r)
    t1 = wave_terms(al1, l1, a1)
    t4 = wave_terms(al4, l4, a4)
    s1 = s_minus(l1)
    s4 = s_minus(l4)
    wgt = np.where(same, s_minus(l2), 0.5)
    proj = tuple(
        s1 * e1 + s4 * e4 + wgt * (vk - e1 - e4) for vk, e1, e4 in zip(v, t1, t4, strict=True)
    )
    Dm = tuple(np.where(same | near, pk, dk) for pk, dk in zip(proj, d, strict=True))
    complex_pair = disc < 0
    flags = np.where(complex_pair, FLAG_NONHYPERBOLIC, np.where(near, FLAG_NEAR_COINCIDENT, 0))
    return Dm, (l1, l2, l3, l4), near, flags


def placeholder2(L, thin):
    """Harmless Roe state (u = 0, c^2 = 1) on thin edges, which the fallback recomputes.

    NumPy only: the Numba kernels branch to the fallback before the Roe solve.
    """
    return L._replace(u=np.where(thin, 0.0, L.u), c2=np.where(thin, 1.0, L.c2))


def sonic_edges(L1, L2, r: float, g: float, eps_h: float):
    """Edges the entropy fix looks at (§3.6): all four cell depths reach ``eps_h`` and some
    wave may be transonic: fewer than four of cell j's eigenvalues ``<= 0`` and cell i's
    ``>= 0`` together (:func:`nonpositive`), else no field has ``lambda_i < 0 < lambda_j``.
    """
    wet = (L1.hi >= eps_h) & (L1.hj >= eps_h) & (L2.hi >= eps_h) & (L2.hj >= eps_h)
    j = nonpositive(L1.unj, L2.unj, g * L1.hj, g * L2.hj, r)
    return wet & (j + nonpositive(-L1.uni, -L2.uni, g * L1.hi, g * L2.hi, r) < 4)


def entropy_fix2(Dm, lam, near, L1, L2, r: float, g: float, fix):
    """Harten-Hyman entropy fix of the 4x4 Roe split (§3.6): ``(D-_4, speed bound)``.

    Each transonic wave adds ``harten_hyman(...) beta_m k_m`` to ``D-_4``, with the
    wave strength ``beta_m = l_m . DU`` and the field's eigenvalues in the two cells
    (EIG4 of each cell's own state). Only the edges ``fix`` (:func:`sonic_edges`) are
    fixed, and the internal waves only where the pair is real in both cells; a pair closer
    than ``PAIR_GAP`` takes one weight (:func:`pair_fix`).
    """

    def cell(u1, u2, h1, h2):
        return eig4(np.where(fix, u1, 0.0), np.where(fix, u2, 0.0),
                    np.where(fix, g * h1, 1.0), np.where(fix, g * h2, 1.0), r)  # fmt: skip

    ci = cell(L1.uni, L2.uni, L1.hi, L2.hi)
    cj = cell(L1.unj, L2.unj, L1.hj, L2.hj)
    real = fix & (ci[4] >= 0) & (cj[4] >= 0)
    joint = (lam[2] - lam[1]) < PAIR_GAP * (lam[3] - lam[0])
    du = (L1.dh, L1.dqn, L2.dh, L2.dqn)
    speed = np.zeros(len(fix))
    for m in range(4):
        w, s = harten_hyman(lam[m], ci[m], cj[m])
        w = np.where(fix & ((real & ~joint) if m in (1, 2) else True), w, 0.0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            beta, a = eigen_coefficient(lam[m], du, L1.u, L2.u, L1.c2, L2.c2, r)
            t = wave_terms(w * beta, lam[m], a)
        fixed = w != 0.0
        Dm = tuple(dk + np.where(fixed, tk, 0.0) for dk, tk in zip(Dm, t, strict=True))
        speed = np.maximum(speed, np.where(fixed, s, 0.0))
    return pair_fix(Dm, speed, lam, near, ci, cj, real & joint, du, L1, L2, r)


def pair_fix(Dm, speed, lam, near, ci, cj, joint, du, L1, L2, r: float):
    """The internal pair's fix where it is closer than ``PAIR_GAP`` (§3.6, "The internal
    pair"): the mean ``wbar`` of its two Harten-Hyman weights on its joint subspace,
    ``wbar (DU - beta_1 k1 - beta_4 k4)``, plus ``phi (w2 - w3)/2 (beta_2 k2 - beta_3 k3)``
    with ``phi = (gap / PAIR_GAP)^2`` (0 below ``NEAR_COINCIDENT``): bounded for any gap and
    equal to the two waves' own fixes at ``PAIR_GAP``. ``joint`` marks the edges it acts on.
    """
    u = (L1.u, L2.u, L1.c2, L2.c2, r)
    w2, s2 = harten_hyman(lam[1], ci[1], cj[1])
    w3, s3 = harten_hyman(lam[2], ci[2], cj[2])
    w2, w3 = np.where(joint, w2, 0.0), np.where(joint, w3, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        b1, a1 = eigen_coefficient(lam[0], du, *u)
        b4, a4 = eigen_coefficient(lam[3], du, *u)
        b2, a2 = eigen_coefficient(lam[1], du, *u)
        b3, a3 = eigen_coefficient(lam[2], du, *u)
        rel = (lam[2] - lam[1]) / (PAIR_GAP * (lam[3] - lam[0]))
        half = np.where(near, 0.0, 0.5 * (w2 - w3) * (rel * rel))
        terms = zip(du, wave_terms(b1, lam[0], a1), wave_terms(b4, lam[3], a4),
                    wave_terms(half * b2, lam[1], a2), wave_terms(half * b3, lam[2], a3),
                    strict=True)  # fmt: skip
        wbar = 0.5 * (w2 + w3)
        add = [wbar * (d - e1 - e4) + np.where(near, 0.0, f2 - f3) for d, e1, e4, f2, f3 in terms]
    fixed = (w2 != 0.0) | (w3 != 0.0)
    Dm = tuple(dk + np.where(fixed, tk, 0.0) for dk, tk in zip(Dm, add, strict=True))
    return Dm, np.maximum(speed, np.where(fixed, np.maximum(s2, s3), 0.0))


def normal_part2(v, L1, L2, DH, r: float, g: float, eps_h: float, fixed: bool = True):
    """Roe normal part shared by Roe and IR-Roe: ``(D-_4, ||D||_inf, flags, fallback)``.

    The split of :func:`normal_split2` with, when ``fixed``, the entropy fix of
    :func:`entropy_fix2` on the edges of :func:`sonic_edges`. ``fallback`` marks thin (flag
    4) and non-hyperbolic (flag 1) edges, whose contributions :func:`apply_fallback`
    replaces with PVM-IFCP's.
    """
    thin = thin_edge(L1, L2, DH, eps_h)
    P1 = placeholder2(L1, thin)
    P2 = placeholder2(L2, thin)
    Dm, lam, near, flags = normal_split2(v, P1, P2, r)
    speed = 0.0
    if fixed:
        fix = sonic_edges(P1, P2, r, g, eps_h)
        Dm, speed = entropy_fix2(Dm, lam, near, P1, P2, r, g, fix)
    l1, l4 = lam[0], lam[3]
    dmax = np.maximum(np.maximum(np.abs(l1), np.abs(l4)), np.maximum(np.abs(L1.u), np.abs(L2.u)))
    dmax = np.maximum(dmax, speed)
    flags = np.where(thin, FLAG_THIN, flags)
    return Dm, dmax, flags, thin | ((flags & FLAG_NONHYPERBOLIC) != 0)


def apply_fallback(Fm, Fp, dmax, flags, fallback, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """Overwrite the ``fallback`` edges in place with the PVM-IFCP result (§3.5 (c), §8)."""
    if fallback.any():
        normal = np.stack((ex[fallback], ey[fallback]), axis=1)
        Fm[fallback], Fp[fallback], dmax[fallback], f = pvm_ifcp.flux2(
            Wi[fallback], Wj[fallback], Hi[fallback], Hj[fallback], normal, g, r, eps_h, True
        )
        flags[fallback] |= f


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
    """Two-layer classical Roe edge contributions ``(F-, F+, ||D||_inf[, flags])`` (§3.5),
    with the entropy fix of §3.6 unless ``entropy_fix`` is false (the paper's scheme).

    Shear waves: ``D-_qkt = w_k D-_4[h_k] + s-(u_k)(vt_k - w_k v_{h_k})``.
    ``||D||_inf = max(|lambda1|, |lambda4|, |u1|, |u2|)``.
    """
    Wi, Wj, Hi, Hj, ex, ey = as_inputs(Wi, Wj, Hi, Hj, normal, 6)
    L1, L2, DH = edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation(L1, L2, DH, r)
    m, dmax, flags, fallback = normal_part2(v, L1, L2, DH, r, g, eps_h, entropy_fix)
    vt1 = tangential_fluctuation(L1)
    vt2 = tangential_fluctuation(L2)
    t1 = L1.w * m[0] + s_minus(L1.u) * (vt1 - L1.w * v[0])
    t2 = L2.w * m[2] + s_minus(L2.u) * (vt2 - L2.w * v[2])
    Fm = assemble2((m[0], m[1], t1, m[2], m[3], t2), ex, ey)
    Fp = assemble2((v[0] - m[0], v[1] - m[1], vt1 - t1, v[2] - m[2], v[3] - m[3], vt2 - t2), ex, ey)
    apply_fallback(Fm, Fp, dmax, flags, fallback, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
    if return_flags:
        return Fm, Fp, dmax, flags.astype(np.int32)
    return Fm, Fp, dmax


def normal_split1(v, L, g: float, fixed: bool = True):
    """Single-layer Roe upwind part ``D-_2`` and ``||D||_inf = |u| + c`` (§6).

    With the Harten-Hyman entropy fix (§3.6) when ``fixed``: a transonic wave adds
    ``harten_hyman(...) beta k`` with ``beta`` its strength in ``(Dh, Dqn)`` and the
    cell speeds ``un -/+ sqrt(g h)``; ``||D||_inf`` then covers those speeds too.
    """
    v0, v1 = v
    c = np.sqrt(L.c2)
    lm = L.u - c
    lp = L.u + c
    tm = s_minus(lm) * ((lp * v0 - v1) / (2.0 * c))
    tp = s_minus(lp) * ((v1 - lm * v0) / (2.0 * c))
    if not fixed:
        return (tm + tp, tm * lm + tp * lp), np.abs(L.u) + c
    ci = np.sqrt(g * L.hi)
    cj = np.sqrt(g * L.hj)
    wm, sm = harten_hyman(lm, L.uni - ci, L.unj - cj)
    wp, sp = harten_hyman(lp, L.uni + ci, L.unj + cj)
    fm = wm * ((lp * L.dh - L.dqn) / (2.0 * c))
    fp = wp * ((L.dqn - lm * L.dh) / (2.0 * c))
    dmax = np.maximum(np.abs(L.u) + c, np.maximum(sm, sp))
    return (tm + tp + (fm + fp), tm * lm + tp * lp + (fm * lm + fp * lp)), dmax


def thin_fallback1(Fm, Fp, dmax, flags, thin, Wi, Wj, Hi, Hj, ex, ey, g, eps_h):
    """Overwrite thin single-layer edges (``hbar < eps_h``) in place with HLL, flag 4 (§8)."""
    if thin.any():
        normal = np.stack((ex[thin], ey[thin]), axis=1)
        Fm[thin], Fp[thin], dmax[thin] = hll.flux1(
            Wi[thin], Wj[thin], Hi[thin], Hj[thin], normal, g, 0.0, eps_h
        )
        flags[thin] = FLAG_THIN


def placeholder1(L, thin):
    """Harmless Roe state on thin single-layer edges, which are recomputed by HLL.

    NumPy only: the Numba kernels branch to the fallback before the Roe solve.
    """
    return L._replace(c2=np.where(thin, 1.0, L.c2))


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
    """Single-layer classical Roe ``(F-, F+, ||D||_inf[, flags])`` (§6); HLL where thin;
    the entropy fix unless ``entropy_fix`` is false."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs(Wi, Wj, Hi, Hj, normal, 3)
    L, DH = edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    thin = L.hbar < eps_h
    v = total_fluctuation1(L, DH)
    m, dmax = normal_split1(v, placeholder1(L, thin), g, entropy_fix)
    vt = tangential_fluctuation(L)
    t = L.w * m[0] + s_minus(L.u) * (vt - L.w * v[0])
    Fm = assemble1((m[0], m[1], t), ex, ey)
    Fp = assemble1((v[0] - m[0], v[1] - m[1], vt - t), ex, ey)
    flags = np.zeros(len(dmax), dtype=np.int32)
    thin_fallback1(Fm, Fp, dmax, flags, thin, Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    if return_flags:
        return Fm, Fp, dmax, flags
    return Fm, Fp, dmax


#: The kernels without the entropy fix (``entropy_fix = false``: the paper's scheme).
flux2_unfixed = functools.partial(flux2, entropy_fix=False)
flux1_unfixed = functools.partial(flux1, entropy_fix=False)

#: The public flux: picks the two- or one-layer form by the state width.
flux = by_layers("roe", flux2, flux1)
