// Classical Roe scheme, docs/SCHEMES.md §3 (two layers) and §6 (one layer): CUDA mirror of
// fvswe/schemes/roe.py.
//
// The 6x6 projector P- is never formed: the block formula of §3.5 splits the 4x4
// normal part with the eigenpairs of EIG4 and treats the two shear waves in closed
// form. Edges the eigen-decomposition cannot serve fall back to PVM-IFCP (§3.5 (c), §8);
// transonic waves get the Harten-Hyman entropy fix (§3.6).
#pragma once
#include "common.cuh"
#include "hll.cuh"
#include "pvm_ifcp.cuh"

namespace roe {

// x k_m = x (1, lam, a, a lam).
template <typename T> FVSWE_DEV void wave_terms(T x, T lam, T a, T* t)
{
    t[0] = x;
    t[1] = x * lam;
    t[2] = x * a;
    t[3] = x * a * lam;
}

// Upwind part D-_4 = sum_m s-(lambda_m) (l_m . v) k_m of the 4x4 Roe problem (§3.5)
// for the Roe state (u1, u2, c1sq, c2sq); lam[0..3] and near out, returns the flags.
// Where s-(lambda2) = s-(lambda3), or the pair is near-coincident (flag 2), the internal
// pair is split with the joint-subspace projector I - k1 l1 - k4 l4, weight s-(lambda2)
// (1/2 if they differ in sign). A complex pair gets flag 1 and a meaningless D-_4: the
// caller replaces it.
template <typename T>
FVSWE_DEV int normal_split2(const T* v, T u1, T u2, T c1, T c2, T r, T* Dm, T* lam,
                            bool& near)
{
    T alpha[4], a[4], t[4];
    const T disc = eig4(u1, u2, c1, c2, r, lam);
    near = (lam[2] - lam[1]) < T(Prec<T>::near_coincident) * (lam[3] - lam[0]);
    const bool same = s_minus(lam[1]) == s_minus(lam[2]);
#pragma unroll
    for (int k = 0; k < 4; ++k) Dm[k] = T(0);
    if (!(same || near)) {
#pragma unroll
        for (int m = 0; m < 4; ++m) {
            alpha[m] = eigen_coefficient(lam[m], v, u1, u2, c1, c2, r, a[m]);
            wave_terms(s_minus(lam[m]) * alpha[m], lam[m], a[m], t);
#pragma unroll
            for (int k = 0; k < 4; ++k) Dm[k] = Dm[k] + t[k];
        }
    } else {
        T t1[4], t4[4];
        alpha[0] = eigen_coefficient(lam[0], v, u1, u2, c1, c2, r, a[0]);
        alpha[3] = eigen_coefficient(lam[3], v, u1, u2, c1, c2, r, a[3]);
        wave_terms(alpha[0], lam[0], a[0], t1);
        wave_terms(alpha[3], lam[3], a[3], t4);
        const T s1 = s_minus(lam[0]);
        const T s4 = s_minus(lam[3]);
        const T wgt = same ? s_minus(lam[1]) : T(0.5);
#pragma unroll
        for (int k = 0; k < 4; ++k) Dm[k] = s1 * t1[k] + s4 * t4[k] + wgt * (v[k] - t1[k] - t4[k]);
    }
    return disc < T(0) ? FLAG_NONHYPERBOLIC : (near ? FLAG_NEAR_COINCIDENT : 0);
}

// Harten-Hyman entropy fix of D-_4 (§3.6): each transonic wave adds
// harten_hyman(...) beta_m k_m, beta_m = l_m . DU, with the field's eigenvalues in the two
// cells (EIG4 of each cell's state). Only where all four cell depths reach eps_h; internal
// waves only for a real, not near-coincident pair. Returns the speed bound of fixed waves.
template <typename T>
FVSWE_DEV T entropy_fix2(const T* lam, bool near, const Layer<T>& L1, const Layer<T>& L2, T r,
                         T g, T eps_h, T* Dm)
{
    T speed = T(0);
    if (!(L1.hi >= eps_h && L1.hj >= eps_h && L2.hi >= eps_h && L2.hj >= eps_h)) return speed;
    T ci[4], cj[4];
    const T di = eig4(L1.uni, L2.uni, g * L1.hi, g * L2.hi, r, ci);
    const T dj = eig4(L1.unj, L2.unj, g * L1.hj, g * L2.hj, r, cj);
    const bool internal = !near && di >= T(0) && dj >= T(0);
    const T du[4] = {L1.dh, L1.dqn, L2.dh, L2.dqn};
    for (int m = 0; m < 4; ++m) {
        if ((m == 1 || m == 2) && !internal) continue;
        T s;
        const T w = harten_hyman(lam[m], ci[m], cj[m], s);
        if (w != T(0)) {
            T a, t[4];
            const T beta = eigen_coefficient(lam[m], du, L1.u, L2.u, L1.c2, L2.c2, r, a);
            wave_terms(w * beta, lam[m], a, t);
#pragma unroll
            for (int k = 0; k < 4; ++k) Dm[k] = Dm[k] + t[k];
            speed = max_(speed, s);
        }
    }
    return speed;
}

// Roe normal part shared by Roe and IR-Roe: D-_4 (with the entropy fix), ||D||_inf and
// flags; returns whether the edge falls back to PVM-IFCP (thin, flag 4, or non-hyperbolic,
// flag 1). Thin edges run the split on a harmless placeholder state (u = 0, c^2 = 1) since
// they are replaced.
template <typename T>
FVSWE_DEV bool normal_part2(const T* v, const Layer<T>& L1, const Layer<T>& L2, T r, T g,
                            T eps_h, T* Dm, T& dmax, int& flags)
{
    const bool thin = thin_edge(L1, L2, eps_h);
    T lam[4];
    bool near;
    flags = normal_split2(v, thin ? T(0) : L1.u, thin ? T(0) : L2.u, thin ? T(1) : L1.c2,
                          thin ? T(1) : L2.c2, r, Dm, lam, near);
    dmax = max_(max_(fabs(lam[0]), fabs(lam[3])), max_(fabs(L1.u), fabs(L2.u)));
    if (thin) flags = FLAG_THIN;
    if (thin || (flags & FLAG_NONHYPERBOLIC)) return true;
    dmax = max_(dmax, entropy_fix2(lam, near, L1, L2, r, g, eps_h, Dm));
    return false;
}

// Two-layer classical Roe edge contributions F-, F+, ||D||_inf and flags (§3.5).
// Shear waves: D-_qkt = w_k D-_4[h_k] + s-(u_k)(vt_k - w_k v_{h_k});
// ||D||_inf = max(|lambda1|, |lambda4|, |u1|, |u2|).
template <typename T>
FVSWE_DEV int flux2(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h,
                                     T* Fm, T* Fp, T& dmax)
{
    Layer<T> L1, L2;
    T DH, v[4], m[4];
    int flags;
    edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h, L1, L2, DH);
    total_fluctuation(L1, L2, DH, r, v);
    if (normal_part2(v, L1, L2, r, g, eps_h, m, dmax, flags))  // apply_fallback
        return flags | pvm_ifcp::flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, Fm, Fp, dmax);
    const T vt1 = tangential_fluctuation(L1);
    const T vt2 = tangential_fluctuation(L2);
    const T t1 = L1.w * m[0] + s_minus(L1.u) * (vt1 - L1.w * v[0]);
    const T t2 = L2.w * m[2] + s_minus(L2.u) * (vt2 - L2.w * v[2]);
    assemble2(m[0], m[1], t1, m[2], m[3], t2, ex, ey, Fm);
    assemble2(v[0] - m[0], v[1] - m[1], vt1 - t1, v[2] - m[2], v[3] - m[3], vt2 - t2, ex, ey, Fp);
    return flags;
}

// Single-layer Roe upwind part D-_2 (m[0], m[1]) and ||D||_inf = |u| + c (§6), with the
// Harten-Hyman fix (§3.6): a transonic wave adds harten_hyman(...) beta k, cell speeds
// un -/+ sqrt(g h), and ||D||_inf covers those speeds.
template <typename T> FVSWE_DEV T normal_split1(const T* v, const Layer<T>& L, T g, T* m)
{
    const T c = sqrt(L.c2);
    const T lm = L.u - c;
    const T lp = L.u + c;
    const T tm = s_minus(lm) * ((lp * v[0] - v[1]) / (T(2) * c));
    const T tp = s_minus(lp) * ((v[1] - lm * v[0]) / (T(2) * c));
    const T ci = sqrt(g * L.hi);
    const T cj = sqrt(g * L.hj);
    T sm, sp;
    const T wm = harten_hyman(lm, L.uni - ci, L.unj - cj, sm);
    const T wp = harten_hyman(lp, L.uni + ci, L.unj + cj, sp);
    const T fm = wm * ((lp * L.dh - L.dqn) / (T(2) * c));
    const T fp = wp * ((L.dqn - lm * L.dh) / (T(2) * c));
    m[0] = tm + tp + (fm + fp);
    m[1] = tm * lm + tp * lp + (fm * lm + fp * lp);
    return max_(fabs(L.u) + c, max_(sm, sp));
}

// Single-layer classical Roe F-, F+, ||D||_inf (§6); HLL where thin (hbar < eps_h, flag 4).
template <typename T>
FVSWE_DEV int flux1(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h,
                                     T* Fm, T* Fp, T& dmax)
{
    Layer<T> L;
    T DH, v[2], m[2];
    edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h, L, DH);
    if (L.hbar < eps_h) {  // thin_fallback1
        hll::flux1(Wi, Wj, Hi, Hj, ex, ey, g, T(0), eps_h, Fm, Fp, dmax);
        return FLAG_THIN;
    }
    total_fluctuation1(L, DH, v);
    dmax = normal_split1(v, L, g, m);
    const T vt = tangential_fluctuation(L);
    const T t = L.w * m[0] + s_minus(L.u) * (vt - L.w * v[0]);
    assemble1(m[0], m[1], t, ex, ey, Fm);
    assemble1(v[0] - m[0], v[1] - m[1], vt - t, ex, ey, Fp);
    return 0;
}

}  // namespace roe
