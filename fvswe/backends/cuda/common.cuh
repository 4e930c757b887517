// Building blocks shared by every scheme: CUDA mirror of fvswe/schemes/common.py.
//
// Same names, same decomposition and the same order of floating-point operations as
// the NumPy reference (docs/SCHEMES.md conventions: W = (h1, q1x, q1y, h2, q2x, q2y),
// U = (h1, q1n, h2, q2n), tau = (-ey, ex)). Every function is templated on the real
// type; float64 modules are compiled without FMA contraction so they reproduce the
// reference to round-off.
#pragma once

// Device functions under NVRTC/nvcc; plain inline C++ elsewhere, so that a host compiler
// can check them against the NumPy reference (tests/test_cuda_sources.py).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FVSWE_DEV __device__ __forceinline__
#else
#include <cmath>
#define FVSWE_DEV inline
using std::fabs;
using std::sqrt;
#endif

// Flag bits FLAG_*, EIG4's NEWTON_MAXIT, POLISH_STEPS and Prec<T> (newton_tol,
// near_coincident; docs/SCHEMES.md §3.4): generated from their Python definitions
// (fvswe/backends/cuda_header.py).
#include "constants.cuh"

template <typename T> FVSWE_DEV T sgn(T x) { return T((x > T(0)) - (x < T(0))); }

// Splitting weight s-(x) = (1 - sgn x)/2 with sgn 0 = 0 (§0).
template <typename T> FVSWE_DEV T s_minus(T x) { return T(0.5) * (T(1) - sgn(x)); }

template <typename T> FVSWE_DEV T min_(T a, T b) { return b < a ? b : a; }
template <typename T> FVSWE_DEV T max_(T a, T b) { return b > a ? b : a; }

// (qn, qt) = (q.eta, q.tau) (§0).
template <typename T>
FVSWE_DEV void rotate(T qx, T qy, T ex, T ey, T& qn, T& qt)
{
    qn = qx * ex + qy * ey;
    qt = -qx * ey + qy * ex;
}

// Inverse of rotate: (qx, qy).
template <typename T>
FVSWE_DEV void rotate_back(T qn, T qt, T ex, T ey, T& qx, T& qy)
{
    qx = qn * ex - qt * ey;
    qy = qn * ey + qt * ex;
}

// Desingularised 1/h (§8): sqrt(2) h / sqrt(h^4 + max(h, eps_h)^4), i.e. 1/h where
// h >= eps_h and -> 0 as h -> 0. One division serves both velocity components.
template <typename T> FVSWE_DEV T inverse_depth(T h, T eps_h)
{
    if (h >= eps_h) return T(1) / h;
    const T hh = max_(h, eps_h);
    const T h2 = h * h;
    const T m2 = hh * hh;
    return T(1.4142135623730951) * h / sqrt(h2 * h2 + m2 * m2);
}

// Desingularised velocity q/h (§8), as q * inverse_depth(h).
template <typename T> FVSWE_DEV T velocity(T h, T q, T eps_h) { return q * inverse_depth(h, eps_h); }

// Weights sqrt(h_i)/(sqrt h_i + sqrt h_j) and its mate; both 0 on a dry edge (§3.1).
template <typename T> FVSWE_DEV void roe_weights(T hi, T hj, T& ai, T& aj)
{
    const T si = sqrt(hi);
    const T sj = sqrt(hj);
    const T den = si + sj;
    const T inv = den > T(0) ? T(1) / den : T(0);
    ai = si * inv;
    aj = sj * inv;
}

// One layer seen from an edge, rotated to (normal, tangent) (§0, §3.1, §8).
template <typename T> struct Layer {
    T hi, hj, qni, qnj, qti, qtj, uni, unj, uti, utj;
    T hbar, u, w, c2;  // Roe averages hbar, ubar.eta, ubar.tau, g hbar
    T dh, dqn, dqt;    // jumps j - i
};

// The Layer of one layer's rotated states and velocities: Roe averages and jumps.
template <typename T>
FVSWE_DEV Layer<T> averaged_layer(T hi, T hj, T qni, T qnj, T qti, T qtj, T uni, T unj, T uti,
                                  T utj, T g)
{
    Layer<T> L;
    L.hi = hi;
    L.hj = hj;
    L.qni = qni;
    L.qnj = qnj;
    L.qti = qti;
    L.qtj = qtj;
    L.uni = uni;
    L.unj = unj;
    L.uti = uti;
    L.utj = utj;
    T ai, aj;
    roe_weights(hi, hj, ai, aj);
    L.hbar = T(0.5) * (hi + hj);
    L.u = ai * uni + aj * unj;
    L.w = ai * uti + aj * utj;
    L.c2 = g * L.hbar;
    L.dh = hj - hi;
    L.dqn = qnj - qni;
    L.dqt = qtj - qti;
    return L;
}

// Rotate one layer's two states and form its Roe averages and jumps (§0, §3.1).
template <typename T>
FVSWE_DEV Layer<T> layer_edge(T hi, T qxi, T qyi, T hj, T qxj, T qyj, T ex, T ey,
                                               T g, T eps_h)
{
    T qni, qti, qnj, qtj;
    rotate(qxi, qyi, ex, ey, qni, qti);
    rotate(qxj, qyj, ex, ey, qnj, qtj);
    return averaged_layer(hi, hj, qni, qnj, qti, qtj, velocity(hi, qni, eps_h),
                          velocity(hj, qnj, eps_h), velocity(hi, qti, eps_h),
                          velocity(hj, qtj, eps_h), g);
}

// Both layers of a two-layer edge plus DH = H_j - H_i.
template <typename T>
FVSWE_DEV void edge2(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T eps_h,
                                      Layer<T>& L1, Layer<T>& L2, T& DH)
{
    L1 = layer_edge(Wi[0], Wi[1], Wi[2], Wj[0], Wj[1], Wj[2], ex, ey, g, eps_h);
    L2 = layer_edge(Wi[3], Wi[4], Wi[5], Wj[3], Wj[4], Wj[5], ex, ey, g, eps_h);
    DH = Hj - Hi;
}

// The single layer of a one-layer edge plus DH.
template <typename T>
FVSWE_DEV void edge1(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T eps_h,
                                      Layer<T>& L, T& DH)
{
    L = layer_edge(Wi[0], Wi[1], Wi[2], Wj[0], Wj[1], Wj[2], ex, ey, g, eps_h);
    DH = Hj - Hi;
}

// v = A DU - S DH in the grouped form that vanishes at rest (§3.3).
template <typename T>
FVSWE_DEV void total_fluctuation(const Layer<T>& L1, const Layer<T>& L2, T DH, T r,
                                                  T* v)
{
    v[0] = L1.dqn;
    v[1] = L1.c2 * (L1.dh + L2.dh - DH) - L1.u * L1.u * L1.dh + T(2) * L1.u * L1.dqn;
    v[2] = L2.dqn;
    v[3] = L2.c2 * (r * L1.dh + L2.dh - DH) - L2.u * L2.u * L2.dh + T(2) * L2.u * L2.dqn;
}

// Single-layer (v0, v1) (§6).
template <typename T>
FVSWE_DEV void total_fluctuation1(const Layer<T>& L, T DH, T* v)
{
    v[0] = L.dqn;
    v[1] = L.c2 * (L.dh - DH) - L.u * L.u * L.dh + T(2) * L.u * L.dqn;
}

// vt = -u w Dh + w Dqn + u Dqt = D(qn qt/h) by the Roe property (§3.3).
template <typename T> FVSWE_DEV T tangential_fluctuation(const Layer<T>& L)
{
    return -L.u * L.w * L.dh + L.w * L.dqn + L.u * L.dqt;
}

// Edges where a layer is thinner than eps_h on either side (§5.2, §8, §13): PVM-IFCP
// reconstructs both interfaces there and Roe/IR-Roe fall back to it.
template <typename T>
FVSWE_DEV bool thin_edge(const Layer<T>& L1, const Layer<T>& L2, T eps_h)
{
    return (min_(L1.hi, L1.hj) < eps_h) | (min_(L2.hi, L2.hj) < eps_h);
}

// One side's (h1*, h2*) over the bed Hm, keeping its surface and interface (§13): h* = h
// where H == Hm; else ht* = max(0, (h1 + h2 - H) + Hm), h2* = min(ht*, max(0, (h2 - H) + Hm)),
// h1* = ht* - h2*.
template <typename T> FVSWE_DEV void hydrostatic_depths(T h1, T h2, T H, T Hm, T& h1s, T& h2s)
{
    if (Hm == H) {
        h1s = h1;
        h2s = h2;
        return;
    }
    const T ht = max_(T(0), ((h1 + h2) - H) + Hm);
    h2s = min_(ht, max_(T(0), (h2 - H) + Hm));
    h1s = ht - h2s;
}

// One side of a reconstructed layer, rotated: the cell's desingularised velocity (un, ut),
// its qn, and (un*, ut*) = (un, ut) where the reconstructed depth hs > 0, else 0.
template <typename T>
FVSWE_DEV void moving_side(T hs, T h, T qx, T qy, T ex, T ey, T eps_h, T& un, T& ut, T& qn,
                           T& uns, T& uts)
{
    T qt;
    rotate(qx, qy, ex, ey, qn, qt);
    const T k = inverse_depth(h, eps_h);
    un = qn * k;
    ut = qt * k;
    const bool wet = hs > T(0);
    uns = wet ? un : T(0);
    uts = wet ? ut : T(0);
}

// The Layer of the states (h, h u) with the velocities as given (not q/h), so that the
// HLL's states move exactly with the velocities its speeds are built from.
template <typename T>
FVSWE_DEV Layer<T> reconstructed_layer(T hi, T uni, T uti, T hj, T unj, T utj, T g)
{
    return averaged_layer(hi, hj, hi * uni, hj * unj, hi * uti, hj * utj, uni, unj, uti, utj, g);
}

// What brings a reconstructed layer's fluctuations back to the cells' own states (§13):
// c = h* u*.eta - q.eta on each side with the cell's velocity.
template <typename T> struct Correction {
    T ci, uni, uti, cj, unj, utj;
};

// F- = D- + ci (1, uni, uti), F+ = D+ - cj (1, unj, utj) on (h, qn, qt), in place: the mass
// parts add up to q_j.eta - q_i.eta.
template <typename T> FVSWE_DEV void corrected(T* Dm, T* Dp, const Correction<T>& C)
{
    Dm[0] = Dm[0] + C.ci;
    Dm[1] = Dm[1] + C.ci * C.uni;
    Dm[2] = Dm[2] + C.ci * C.uti;
    Dp[0] = Dp[0] - C.cj;
    Dp[1] = Dp[1] - C.cj * C.unj;
    Dp[2] = Dp[2] - C.cj * C.utj;
}

// Layer k (component offset 0 or 3) of a reconstructed edge: L* and its Correction.
template <typename T>
FVSWE_DEV void reconstructed_side(const T* Wi, const T* Wj, int k, T hi, T hj, T ex, T ey, T g,
                                  T eps_h, Layer<T>& L, Correction<T>& C)
{
    T qni, usi, vsi, qnj, usj, vsj;
    moving_side(hi, Wi[k], Wi[k + 1], Wi[k + 2], ex, ey, eps_h, C.uni, C.uti, qni, usi, vsi);
    moving_side(hj, Wj[k], Wj[k + 1], Wj[k + 2], ex, ey, eps_h, C.unj, C.utj, qnj, usj, vsj);
    L = reconstructed_layer(hi, usi, vsi, hj, usj, vsj, g);
    C.ci = L.qni - qni;
    C.cj = L.qnj - qnj;
}

// Both layers of a two-layer edge reconstructed over Hm = min(H_i, H_j) (§13): flat bed,
// so DH* = 0.
template <typename T>
FVSWE_DEV void reconstructed_edge2(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T eps_h,
                                   Layer<T>& L1, Layer<T>& L2, Correction<T>& C1,
                                   Correction<T>& C2)
{
    const T Hm = min_(Hi, Hj);
    T h1i, h2i, h1j, h2j;
    hydrostatic_depths(Wi[0], Wi[3], Hi, Hm, h1i, h2i);
    hydrostatic_depths(Wj[0], Wj[3], Hj, Hm, h1j, h2j);
    reconstructed_side(Wi, Wj, 0, h1i, h1j, ex, ey, g, eps_h, L1, C1);
    reconstructed_side(Wi, Wj, 3, h2i, h2j, ex, ey, g, eps_h, L2, C2);
}

// (SL, SR): l1, l4 widened to bound each side's layer velocities (§13), so that the HLL
// mass flux of each layer keeps its depth non-negative.
template <typename T>
FVSWE_DEV void reconstructed_speeds(T l1, T l4, const Layer<T>& L1, const Layer<T>& L2, T g, T& sl,
                                    T& sr)
{
    sl = min_(l1, min_(L1.uni, L2.uni) - sqrt(g * (L1.hi + L2.hi)));
    sr = max_(l4, max_(L1.unj, L2.unj) + sqrt(g * (L1.hj + L2.hj)));
}

// Characteristic polynomial f of the 4x4 A and f' at x (§3.4).
template <typename T>
FVSWE_DEV void quartic(T x, T u1, T u2, T c1sq, T c2sq, T r, T& f, T& fp)
{
    const T y1 = x - u1;
    const T y2 = x - u2;
    const T p1 = y1 * y1 - c1sq;
    const T p2 = y2 * y2 - c2sq;
    f = p1 * p2 - r * c1sq * c2sq;
    fp = T(2) * (y1 * p2 + y2 * p1);
}

// One Newton step on f, skipped where f' = 0 (internal roots, §3.4).
template <typename T> FVSWE_DEV T polish(T x, T u1, T u2, T c1sq, T c2sq, T r)
{
    T f, fp;
    quartic(x, u1, u2, c1sq, c2sq, r, f, fp);
    return fp != T(0) ? x - f / fp : x;
}

// Newton towards an external root (§3.4 step 1); f is convex and monotone beyond m1 and
// M4, so it converges from either side of the root.
template <typename T>
FVSWE_DEV T external_root(T x, T u1, T u2, T c1sq, T c2sq, T r, T cext)
{
    for (int it = 0; it < NEWTON_MAXIT; ++it) {
        T f, fp;
        quartic(x, u1, u2, c1sq, c2sq, r, f, fp);
        const T dx = f / fp;
        x = x - dx;
        if (fabs(dx) <= T(Prec<T>::newton_tol) * (fabs(x) + cext)) break;
    }
    return x;
}

// Algorithm EIG4 (§3.4): lam[0..3] = lambda1..4 and the return value disc.
// External roots by Newton, internal pair by deflation then polishing. disc < 0 means a
// complex internal pair; then lambda2 = lambda3 is its real part.
template <typename T>
FVSWE_DEV T eig4(T u1, T u2, T c1sq, T c2sq, T r, T* lam)
{
    const T c1 = sqrt(c1sq);
    const T c2 = sqrt(c2sq);
    const T m1 = min_(u1 - c1, u2 - c2);
    const T M4 = max_(u1 + c1, u2 + c2);
    const T dw = sqrt(c1 * c2);
    const T csum = c1sq + c2sq;
    const T U = (u1 * c1sq + u2 * c2sq) / csum;
    const T cext = sqrt(csum);
    const T d = c1sq - c2sq;
    const T sext = sqrt(T(0.5) * (csum + sqrt(d * d + T(4) * r * c1sq * c2sq)));
    // start from U -/+ sext, the exact external roots without shear, when beyond m1 (M4);
    // else from the safe bracket
    T f, fp, x1, x4;
    if (U - sext < m1) {
        x1 = U - sext;
    } else {
        x1 = min_(U - cext, m1);
        quartic(x1, u1, u2, c1sq, c2sq, r, f, fp);
        if (f < T(0)) x1 = m1 - dw;
    }
    if (U + sext > M4) {
        x4 = U + sext;
    } else {
        x4 = max_(U + cext, M4);
        quartic(x4, u1, u2, c1sq, c2sq, r, f, fp);
        if (f < T(0)) x4 = M4 + dw;
    }
    x1 = external_root(x1, u1, u2, c1sq, c2sq, r, cext);
    x4 = external_root(x4, u1, u2, c1sq, c2sq, r, cext);
    const T a = T(-2) * (u1 + u2);
    const T b = (u1 * u1 - c1sq) + T(4) * u1 * u2 + (u2 * u2 - c2sq);
    const T s = x1 + x4;
    const T p = x1 * x4;
    const T Bq = a + s;
    const T Cq = b + s * Bq - p;
    const T disc = Bq * Bq - T(4) * Cq;
    const T sq = sqrt(max_(disc, T(0)));
    const T x2 = T(0.5) * (-Bq - sq);
    const T x3 = T(0.5) * (-Bq + sq);
    T y2 = x2, y3 = x3;
#pragma unroll
    for (int it = 0; it < POLISH_STEPS; ++it) {
        y2 = polish(y2, u1, u2, c1sq, c2sq, r);
        y3 = polish(y3, u1, u2, c1sq, c2sq, r);
    }
    const bool keep = (disc >= T(0)) & (x1 < y2) & (y2 < y3) & (y3 < x4);
    lam[0] = x1;
    lam[1] = keep ? y2 : x2;
    lam[2] = keep ? y3 : x3;
    lam[3] = x4;
    return disc;
}

// (alpha, a): the wave strength l_m . v and the a_m of k_m = (1, lam, a, a lam) (§3.4),
// l_m normalised so that l_m . k_n = delta_mn.
template <typename T>
FVSWE_DEV T eigen_coefficient(T lam, const T* v, T u1, T u2, T c1sq, T c2sq, T r,
                                               T& a)
{
    const T y1 = lam - u1;
    a = (y1 * y1 - c1sq) / c1sq;
    const T rc2 = r * c2sq;
    const T ac1 = a * c1sq;
    const T delta = T(2) * (rc2 * y1 + a * ac1 * (lam - u2));
    const T num = (lam - T(2) * u1) * rc2 * v[0] + rc2 * v[1] + ((lam - T(2) * u2) * v[2] + v[3]) * ac1;
    return num / delta;
}

// Harten-Hyman entropy fix of one wave (§3.6): the weight added to beta_m k_m, and in speed
// the bound max(-lam_l, lam_r); both 0 unless the wave is transonic (lam_l < 0 < lam_r).
template <typename T> FVSWE_DEV T harten_hyman(T lam, T lam_l, T lam_r, T& speed)
{
    if (lam_l < T(0) && lam_r > T(0)) {
        speed = max_(-lam_l, lam_r);
        return lam_l * ((lam_r - lam) / (lam_r - lam_l)) - min_(lam, T(0));
    }
    speed = T(0);
    return T(0);
}

// Tangential momentum upwinded with the layer mass flux Phi (§4): (D-_qt, D+_qt).
template <typename T>
FVSWE_DEV void upwind_tangential(T Phi, T qni, T qnj, T uti, T utj, T& tm, T& tp)
{
    const T ut = Phi > T(0) ? uti : (Phi < T(0) ? utj : T(0));
    const T flow = Phi * ut;
    tm = flow - qni * uti;
    tp = qnj * utj - flow;
}

// T^{-1} (D_h1, D_q1n, D_q1t, D_h2, D_q2n, D_q2t) into F[6] (§3.5).
template <typename T>
FVSWE_DEV void assemble2(T d0, T d1, T t1, T d2, T d3, T t2, T ex, T ey, T* F)
{
    F[0] = d0;
    rotate_back(d1, t1, ex, ey, F[1], F[2]);
    F[3] = d2;
    rotate_back(d3, t2, ex, ey, F[4], F[5]);
}

// T^{-1} (D_h, D_qn, D_qt) into F[3].
template <typename T> FVSWE_DEV void assemble1(T d0, T d1, T t, T ex, T ey, T* F)
{
    F[0] = d0;
    rotate_back(d1, t, ex, ey, F[1], F[2]);
}
