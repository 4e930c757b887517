"""Classical Roe per-edge kernels (docs/SCHEMES.md §3, §6), mirroring :mod:`fvswe.schemes.roe`.

``roe2`` is the two-layer kernel (6-tuples), ``roe1`` the single-layer one.
Thin or non-hyperbolic edges return PVM-IFCP's contributions (HLL for one layer);
transonic waves get the Harten-Hyman entropy fix (§3.6) when their last argument ``fixed``
is true. The registry's kernels ``roe.flux2``, ``roe.flux1`` (with the fix) and
``roe.flux2_unfixed``, ``roe.flux1_unfixed`` (without it: the paper's scheme,
``entropy_fix = false``) are these with ``fixed`` bound as a constant
(:data:`fvswe.registry.BOUND`), so each compiles without the other's work.
"""

from __future__ import annotations

import math

from . import hll, pvm_ifcp
from .common import (
    FLAG_NEAR_COINCIDENT,
    FLAG_NONHYPERBOLIC,
    FLAG_THIN,
    NEAR_COINCIDENT,
    PAIR_GAP,
    as_inputs1,
    as_inputs2,
    assemble1,
    assemble2,
    edge1,
    edge2,
    eig4,
    eigen_coefficient,
    harten_hyman,
    jit,
    jit_inline,
    nonpositive,
    s_minus,
    tangential_fluctuation,
    thin_edge,
    total_fluctuation,
    total_fluctuation1,
)


@jit
def wave_terms(x, lam, a):
    """``x k_m = x (1, lam, a, a lam)``."""
    return x, x * lam, x * a, x * a * lam


@jit
def normal_split2(v, L1, L2, r):
    """``(D-_4, (lambda1, .., lambda4), near, flag)`` of the 4x4 Roe problem (§3.5).

    Only waves with ``s-(lambda) != 0`` are evaluated; a same-sign internal pair, or
    a near-coincident one (flag 2), uses the joint-subspace projector; a complex pair
    returns flag 1.
    """
    u1 = L1.u
    u2 = L2.u
    c1 = L1.c2
    c2 = L2.c2
    l1, l2, l3, l4, disc = eig4(u1, u2, c1, c2, r)
    lam = (l1, l2, l3, l4)
    if disc < 0.0:
        return (0.0, 0.0, 0.0, 0.0), lam, False, FLAG_NONHYPERBOLIC
    near = (l3 - l2) < NEAR_COINCIDENT * (l4 - l1)
    flag = FLAG_NEAR_COINCIDENT if near else 0
    same = s_minus(l2) == s_minus(l3)
    if not (same or near):
        d0 = 0.0
        d1 = 0.0
        d2 = 0.0
        d3 = 0.0
        for lm in lam:
            s = s_minus(lm)
            if s != 0.0:
                alpha, a = eigen_coefficient(lm, v, u1, u2, c1, c2, r)
                t0, t1, t2, t3 = wave_terms(s * alpha, lm, a)
                d0 += t0
                d1 += t1
                d2 += t2
                d3 += t3
        return (d0, d1, d2, d3), lam, near, flag
    al1, a1 = eigen_coefficient(l1, v, u1, u2, c1, c2, r)
    al4, a4 = eigen_coefficient(l4, v, u1, u2, c1, c2, r)
    e10, e11, e12, e13 = wave_terms(al1, l1, a1)
    e40, e41, e42, e43 = wave_terms(al4, l4, a4)
    s1 = s_minus(l1)
    s4 = s_minus(l4)
    wgt = s_minus(l2) if same else 0.5
    v0, v1, v2, v3 = v
    proj = (
        s1 * e10 + s4 * e40 + wgt * (v0 - e10 - e40),
        s1 * e11 + s4 * e41 + wgt * (v1 - e11 - e41),
        s1 * e12 + s4 * e42 + wgt * (v2 - e12 - e42),
        s1 * e13 + s4 * e43 + wgt * (v3 - e13 - e43),
    )
    return proj, lam, near, flag


@jit_inline
def sonic_edge(L1, L2, r, g, eps_h):
    """The entropy fix looks at this edge (the reference's ``sonic_edges``, §3.6): all four
    cell depths reach ``eps_h`` and the cells' sign counts leave room for a transonic wave."""
    if not (L1.hi >= eps_h and L1.hj >= eps_h and L2.hi >= eps_h and L2.hj >= eps_h):
        return False  # also where a depth is NaN: no 0/0 in a blown-up state
    j = nonpositive(L1.unj, L2.unj, g * L1.hj, g * L2.hj, r)
    return j + nonpositive(-L1.uni, -L2.uni, g * L1.hi, g * L2.hi, r) < 4


@jit
def entropy_fix2(Dm, lam, near, L1, L2, r, g, fix):
    """Harten-Hyman entropy fix of ``D-_4`` (§3.6): ``(D-_4, speed bound)``.

    The cells' own eigenvalues (EIG4) are computed only on the edges to ``fix``
    (:func:`sonic_edge`); internal waves are fixed only for a pair real in both cells, one
    closer than ``PAIR_GAP`` with one weight (:func:`pair_fix`).
    """
    if not fix:
        return Dm, 0.0
    ci = eig4(L1.uni, L2.uni, g * L1.hi, g * L2.hi, r)
    cj = eig4(L1.unj, L2.unj, g * L1.hj, g * L2.hj, r)
    paired = ci[4] >= 0.0 and cj[4] >= 0.0
    joint = (lam[2] - lam[1]) < PAIR_GAP * (lam[3] - lam[0])
    du = (L1.dh, L1.dqn, L2.dh, L2.dqn)
    d0, d1, d2, d3 = Dm
    speed = 0.0
    for m in range(4):
        if (m == 1 or m == 2) and (joint or not paired):
            continue
        w, s = harten_hyman(lam[m], ci[m], cj[m])
        if w != 0.0:
            beta, a = eigen_coefficient(lam[m], du, L1.u, L2.u, L1.c2, L2.c2, r)
            t0, t1, t2, t3 = wave_terms(w * beta, lam[m], a)
            d0 += t0
            d1 += t1
            d2 += t2
            d3 += t3
            speed = max(speed, s)
    if joint and paired:
        return pair_fix((d0, d1, d2, d3), speed, lam, near, ci, cj, du, L1, L2, r)
    return (d0, d1, d2, d3), speed


@jit
def pair_fix(Dm, speed, lam, near, ci, cj, du, L1, L2, r):
    """The internal pair's fix where it is closer than ``PAIR_GAP`` (§3.6, "The internal
    pair"): the mean ``wbar`` of its two weights on its joint subspace plus
    ``phi (w2 - w3)/2 (beta_2 k2 - beta_3 k3)``, ``phi = (gap / PAIR_GAP)^2`` (0 when ``near``)."""
    w2, s2 = harten_hyman(lam[1], ci[1], cj[1])
    w3, s3 = harten_hyman(lam[2], ci[2], cj[2])
    if w2 == 0.0 and w3 == 0.0:
        return Dm, speed
    u1, u2, c1, c2 = L1.u, L2.u, L1.c2, L2.c2
    b1, a1 = eigen_coefficient(lam[0], du, u1, u2, c1, c2, r)
    b4, a4 = eigen_coefficient(lam[3], du, u1, u2, c1, c2, r)
    e1 = wave_terms(b1, lam[0], a1)
    e4 = wave_terms(b4, lam[3], a4)
    f2 = (0.0, 0.0, 0.0, 0.0)
    f3 = (0.0, 0.0, 0.0, 0.0)
    if not near:
        rel = (lam[2] - lam[1]) / (PAIR_GAP * (lam[3] - lam[0]))
        half = 0.5 * (w2 - w3) * (rel * rel)
        b2, a2 = eigen_coefficient(lam[1], du, u1, u2, c1, c2, r)
        b3, a3 = eigen_coefficient(lam[2], du, u1, u2, c1, c2, r)
        f2 = wave_terms(half * b2, lam[1], a2)
        f3 = wave_terms(half * b3, lam[2], a3)
    wbar = 0.5 * (w2 + w3)
    d = (
        Dm[0] + (wbar * (du[0] - e1[0] - e4[0]) + (f2[0] - f3[0])),
        Dm[1] + (wbar * (du[1] - e1[1] - e4[1]) + (f2[1] - f3[1])),
        Dm[2] + (wbar * (du[2] - e1[2] - e4[2]) + (f2[2] - f3[2])),
        Dm[3] + (wbar * (du[3] - e1[3] - e4[3]) + (f2[3] - f3[3])),
    )
    return d, max(speed, max(s2, s3))


@jit
def normal_part2(v, L1, L2, DH, r, g, eps_h, fixed):
    """``(D-_4, ||D||_inf, flag, fallback)``: the Roe normal part shared with IR-Roe.

    The split of :func:`normal_split2` with, when ``fixed``, the entropy fix of
    :func:`entropy_fix2` on the edges of :func:`sonic_edge` (decided first: fewer values
    live, fewer GPU spills).
    """
    if thin_edge(L1, L2, DH, eps_h):
        return (0.0, 0.0, 0.0, 0.0), 0.0, FLAG_THIN, True
    fix = fixed and sonic_edge(L1, L2, r, g, eps_h)
    m, lam, near, flag = normal_split2(v, L1, L2, r)
    if flag & FLAG_NONHYPERBOLIC:
        return m, 0.0, flag, True
    m, speed = entropy_fix2(m, lam, near, L1, L2, r, g, fix)
    dmax = max(max(abs(lam[0]), abs(lam[3])), max(abs(L1.u), abs(L2.u)))
    return m, max(dmax, speed), flag, False


@jit
def apply_fallback(flag, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """PVM-IFCP's result for a thin or non-hyperbolic edge, flags merged (§3.5 (c), §8)."""
    Fm, Fp, dmax, f = pvm_ifcp.flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
    return Fm, Fp, dmax, f | flag


@jit
def roe2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, fixed):
    """Two-layer classical Roe: ``(F- 6-tuple, F+ 6-tuple, ||D||_inf, flag)`` (§3.5), with
    the entropy fix when ``fixed``."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs2(Wi, Wj, Hi, Hj, ex, ey)
    L1, L2, DH = edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation(L1, L2, DH, r)
    m, dmax, flag, fallback = normal_part2(v, L1, L2, DH, r, g, eps_h, fixed)
    if fallback:
        return apply_fallback(flag, Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
    vt1 = tangential_fluctuation(L1)
    vt2 = tangential_fluctuation(L2)
    t1 = L1.w * m[0] + s_minus(L1.u) * (vt1 - L1.w * v[0])
    t2 = L2.w * m[2] + s_minus(L2.u) * (vt2 - L2.w * v[2])
    Fm = assemble2((m[0], m[1], t1, m[2], m[3], t2), ex, ey)
    Fp = assemble2((v[0] - m[0], v[1] - m[1], vt1 - t1, v[2] - m[2], v[3] - m[3], vt2 - t2), ex, ey)
    return Fm, Fp, dmax, flag


@jit
def normal_split1(v, L, g, fixed):
    """Single-layer ``(D-_2, ||D||_inf)`` (§6) with the Harten-Hyman fix (§3.6) when ``fixed``."""
    v0, v1 = v
    c = math.sqrt(L.c2)
    lm = L.u - c
    lp = L.u + c
    tm = s_minus(lm) * ((lp * v0 - v1) / (2.0 * c))
    tp = s_minus(lp) * ((v1 - lm * v0) / (2.0 * c))
    if not fixed:
        return (tm + tp, tm * lm + tp * lp), abs(L.u) + c
    ci = math.sqrt(g * L.hi)
    cj = math.sqrt(g * L.hj)
    wm, sm = harten_hyman(lm, L.uni - ci, L.unj - cj)
    wp, sp = harten_hyman(lp, L.uni + ci, L.unj + cj)
    fm = wm * ((lp * L.dh - L.dqn) / (2.0 * c))
    fp = wp * ((L.dqn - lm * L.dh) / (2.0 * c))
    dmax = max(abs(L.u) + c, max(sm, sp))
    return (tm + tp + (fm + fp), tm * lm + tp * lp + (fm * lm + fp * lp)), dmax


@jit
def thin_fallback1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h):
    """HLL's result for a thin single-layer edge, flag 4 (§8)."""
    Fm, Fp, dmax, _ = hll.flux1(Wi, Wj, Hi, Hj, ex, ey, g, 0.0, eps_h)
    return Fm, Fp, dmax, FLAG_THIN


@jit
def roe1(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, fixed):
    """Single-layer classical Roe: ``(F- 3-tuple, F+ 3-tuple, ||D||_inf, flag)`` (§6), with
    the entropy fix when ``fixed``."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs1(Wi, Wj, Hi, Hj, ex, ey)
    L, DH = edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    if L.hbar < eps_h:
        return thin_fallback1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation1(L, DH)
    m, dmax = normal_split1(v, L, g, fixed)
    vt = tangential_fluctuation(L)
    t = L.w * m[0] + s_minus(L.u) * (vt - L.w * v[0])
    Fm = assemble1((m[0], m[1], t), ex, ey)
    Fp = assemble1((v[0] - m[0], v[1] - m[1], vt - t), ex, ey)
    return Fm, Fp, dmax, 0
