// Kernels every module carries besides its step: the blow-up finder, the inflow counters
// of a distributed run and a debug kernel that evaluates the scheme's flux on
// plain arrays (the parity tests compare it with the NumPy reference).
#pragma once

// First (lowest cell, then component) NaN/inf or negative depth, as atomicMin of
// cell * 8 + component (component in the model's order) into *first.
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
find_invalid(const int n_cells, const real4* __restrict__ W, int* first)
{
    const int c = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (c >= n_cells) return;
    real w[NVAR], H;
    load_cell(W, c, w, H);
#pragma unroll
    for (int m = 0; m < NVAR; ++m) {
        if (!(fabs(w[m]) < REAL_INF) || (m % 3 == 0 && w[m] < real(0))) {
            atomicMin(first, c * 8 + m);
            return;
        }
    }
}

// A distributed run's inflow counters (fvswe.parallel.GpuHalo; docs/PARALLEL.md): after a
// step's update, the outward fluxes of every rank's edges with tables, gathered in the single
// device's edge order (lf, n edges), summed and added as finish_step does on one device, so
// the counters keep its bits. A step the ranks skipped (steps == *seen) adds nothing. One
// block of FVSWE_BLOCK threads.
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
level_inflow(Ctrl* ctrl, const double* lf, const int n, long long* seen)
{
    double inflow[FVSWE_LAYERS] = {};
    sum_inflow(lf, n, inflow);
    if (threadIdx.x == 0 && ctrl->steps != *seen) {
        *seen = ctrl->steps;
        add_inflow(ctrl, ctrl->dt_used, inflow);
    }
}

// Row e of the arrays: Fm, Fp (n x NVAR), dmax, flags of flux(Wi[e], Wj[e], Hi[e], Hj[e], nrm[e]).
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
debug_flux(const int n, const real* __restrict__ Wi, const real* __restrict__ Wj,
           const real* __restrict__ Hi, const real* __restrict__ Hj, const real* __restrict__ nrm,
           const real g, const real r, const real eps_h, real* Fm, real* Fp, real* dmax, int* flags)
{
    const int e = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (e >= n) return;
    real a[NVAR], b[NVAR], fm[NVAR], fp[NVAR], d;
#pragma unroll
    for (int m = 0; m < NVAR; ++m) {
        a[m] = Wi[(size_t)e * NVAR + m];
        b[m] = Wj[(size_t)e * NVAR + m];
    }
    flags[e] = scheme_flux(a, b, Hi[e], Hj[e], nrm[2 * e], nrm[2 * e + 1], Params{g, r, eps_h}, fm, fp, d);
#pragma unroll
    for (int m = 0; m < NVAR; ++m) {
        Fm[(size_t)e * NVAR + m] = fm[m];
        Fp[(size_t)e * NVAR + m] = fp[m];
    }
    dmax[e] = d;
}
