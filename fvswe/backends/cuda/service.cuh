// Kernels every module carries besides its step: the positivity limiter (two layers), the
// blow-up finder, the inflow counters of a distributed run and a debug kernel that evaluates
// the scheme's flux on plain arrays (the parity tests compare it with the NumPy reference).
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
// the counters keep its bits. An update the ranks skipped (updates == *seen) adds nothing. One
// block of FVSWE_BLOCK threads.
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
level_inflow(Ctrl* ctrl, const double* lf, const int n, long long* seen)
{
    double inflow[FVSWE_LAYERS] = {};
    sum_inflow(lf, n, inflow);
    if (threadIdx.x == 0 && ctrl->updates != *seen) {
        *seen = ctrl->updates;
        add_inflow(ctrl, ctrl->weight * ctrl->dt_used, inflow);
    }
}

// The volumes through counted edges (fvswe.probes; the CPU's CpuBackend.count_edges): after
// each stage's update, per counted edge e (cell[e] its first cell, code, normal out of that
// cell and length its slot's) and layer, the mass flux out of the first cell as the update used
// it, Phi = S_d + |Gamma| q.n (limiter::mass_flux of edge_contribution's slot, OP_AFTER: the
// stage just taken), where the limiter scaled the slot S'_d = theta Phi - |Gamma| q.n with its
// donor's theta (limit_cell_update's rule; lim_theta still holds it: launched before
// limit_update), Phi then taken again in double from the slot as the CPU does; vol[e] adds
// weight dt Phi in double. An update counted already (updates == *seen: an idle step) adds
// nothing. One block of FVSWE_BLOCK threads. Only in a run's module that counts edges
// (FVSWE_COUNTS: GpuBackend.count_edges compiles it then).
#ifndef FVSWE_COUNTS
#error "FVSWE_COUNTS (0 or 1) comes from fvswe.backends.gpu.compile_options"
#endif
#if FVSWE_COUNTS && FVSWE_LINEAR
#error "count_edges: the volumes through edges are not counted with the linear reconstruction yet"
#endif
#if FVSWE_COUNTS
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
count_edges(const real4* __restrict__ Win, const int n, const int* __restrict__ cell,
            const int* __restrict__ code, const real2* __restrict__ normal,
            const real* __restrict__ length, Ctrl* ctrl, double* vol, long long* seen,
            const real g, const real r, const real eps_h)
{
    const long long updates = ctrl->updates;
    if (updates == *seen) return;
    const double share = mul_rn(ctrl->weight, ctrl->dt_used);
    for (int e = threadIdx.x; e < n; e += FVSWE_BLOCK) {
        const int c = cell[e], cd = code[e];
        const real2 nv = normal[e];
        const real len = length[e];
        real w[NVAR], H, v[NVAR + 1];
        load_cell(Win, c, w, H);
        edge_contribution(Win, w, H, -1, cd, nv, len, Params{g, r, eps_h}, ctrl, OP_AFTER, v);
#pragma unroll
        for (int l = 0; l < FVSWE_LAYERS; ++l) {
            real S = v[3 * l];
#if FVSWE_LAYERS == 2
            const auto f = limiter::mass_flux<real>(S, len, w[3 * l + 1], w[3 * l + 2], nv.x, nv.y);
            const int donor = f.f0 > real(0) ? c : cd >> 1;
            const double th = ctrl->lim_theta[2 * donor + l];
            if (th != 1.0 && f.f0 != real(0))
                S = real(limiter::limited_mass<double>(th, double(f.f0), double(f.f1)));
#endif
            const auto phi = limiter::mass_flux<double>(double(S), double(len), double(w[3 * l + 1]),
                                                        double(w[3 * l + 2]), double(nv.x),
                                                        double(nv.y));
            vol[FVSWE_LAYERS * e + l] = add_rn(vol[FVSWE_LAYERS * e + l], mul_rn(share, phi.f0));
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) *seen = updates;
}
#endif

// The integral over [a, b] of the piecewise-linear table of samples lo..hi, end values held
// outside, piece by piece (sources::segment_integral; mirrors the CPU's table_integral).
__device__ double table_integral(const double* times, const double* values, int lo, int hi, double a,
                                 double b)
{
    int m = lo;  // the first sample after a
    if (a >= times[lo]) {
        int top = hi + 1;
        while (top - m > 1) {  // invariant: times[m] <= a < times[top] (top = hi + 1: none)
            const int mid = (m + top) / 2;
            if (times[mid] <= a) m = mid;
            else top = mid;
        }
        m += 1;
    }
    double t0 = a, v0 = table_value(a, times, values, lo, hi), total = 0.0;
    for (; m <= hi && times[m] < b; ++m) {
        total += sources::segment_integral<double>(t0, v0, times[m], values[m]);
        t0 = times[m];
        v0 = values[m];
    }
    return total + sources::segment_integral<double>(t0, v0, b, table_value(b, times, values, lo, hi));
}

// Each source table's mean over the step being taken into source_mean, and its volume into the
// counters, in table order (one thread; mirrors the CPU's source_means).
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK) source_means(Ctrl* ctrl)
{
    if (threadIdx.x != 0 || !step_active(ctrl)) return;
    const double t = ctrl->t, dt = step_dt(ctrl);
    for (int k = 0; k < ctrl->n_sources; ++k) {
        const long long* o = ctrl->source_offsets;
        const double integral = table_integral(ctrl->source_times, ctrl->source_values, (int)o[k],
                                               (int)o[k + 1] - 1, t, t + dt);
        ctrl->source_mean[k] = integral / dt;
        const double volume = ctrl->source_area[k] * integral;
        if (ctrl->source_kind[k] == 1) ctrl->rain_volume += volume;
        else if (ctrl->source_layer[k] == 0) ctrl->source_volume += volume;
        else ctrl->source_volume2 += volume;
    }
}

#ifndef FVSWE_SLIDE
#error "FVSWE_SLIDE (0 or 1) comes from fvswe.backends.gpu.compile_options"
#endif

#if FVSWE_SLIDE
// A moving bed (fvswe.slide; docs/SCHEMES.md §17): the bed depth H of every cell of W, halo
// cells too (the 4th entry of its first vector), at the time of the stage of `op` (after a
// step: the new t), from the cell centres x, y, the static bed H0 and the slide's parameters p
// (slide::bed in double, as the CPU's fvswe.physics.slide.bed_cells). Not skipped when the step does
// not run: it then writes the bed of the time it reads, the same bits again.
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
bed_pass(const int n_cells, real4* W, const double* __restrict__ x, const double* __restrict__ y,
         const double* __restrict__ H0, const double* __restrict__ p, const Ctrl* ctrl, const int op)
{
    const int c = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (c >= n_cells) return;
    const double t = stage_time(ctrl, op);
    W[(size_t)c * NVEC].w = real(slide::bed<double>(H0[c], x[c], y[c], t, p[0], p[1], p[2], p[3], p[4],
                                                     p[5], p[6], p[7], p[8], p[9]));
}
#endif

#ifndef FVSWE_MAXIMA
#error "FVSWE_MAXIMA (0 or 1) comes from fvswe.backends.gpu.compile_options"
#endif

#if FVSWE_MAXIMA
// The maximum and arrival maps (fvswe.maxima; docs/SCHEMES.md §18) of cells 0 .. n_cells-1 take
// the state W at the clock's t (after the step: the new t), a row of 2 nq + 2 doubles per cell
// in M: per quantity its maximum and that maximum's time, then the initial surface and the
// arrival time (maxima::* in double, as the CPU's fvswe.physics.maxima.maxima_cells). `start`:
// the maps' first state, which sets every maximum, its time and the initial surface. Not
// skipped when the step does not run: the same state at the same t changes no row.
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
maxima_pass(const int n_cells, const real4* W, double* M, const double eps_h,
            const double threshold, const Ctrl* ctrl, const int start)
{
    const int c = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (c >= n_cells) return;
    const double t = ctrl->t;
    const real4 a = W[(size_t)c * NVEC];
    const real4 b = W[(size_t)c * NVEC + NVEC - 1];  // two layers: the lower; one: unused
    const int nq = FVSWE_LAYERS == 2 ? 5 : 3;
    const auto v = maxima::quantities<double>(double(a.x), double(a.y), double(a.z), double(b.x),
                                              double(b.y), double(b.z), double(a.w), FVSWE_LAYERS,
                                              eps_h);
    double* row = M + (size_t)c * (2 * nq + 2);
    if (start) {
        row[2 * nq] = v.f0;
        row[2 * nq + 1] = -1.0;  // fvswe.physics.maxima.NOT_ARRIVED
    }
    for (int k = 0; k < nq; ++k) {
        const double best = start ? -__longlong_as_double(0x7ff0000000000000LL) : row[2 * k];
        const auto kept = maxima::keep_max<double>(fv_at(v, k), best, start ? t : row[2 * k + 1], t);
        row[2 * k] = kept.f0;
        row[2 * k + 1] = kept.f1;
    }
    row[2 * nq + 1] = maxima::arrival<double>(v.f0, row[2 * nq], threshold, row[2 * nq + 1], t);
}
#endif

// Close the step (the last block of the kernel that ends it; every thread calls it): advance,
// and with OP_DT the next step's dt from dt_next (a multi-stage step's first stage left it
// there); no positive dt stops the stepping.
__device__ void close_step(Ctrl* ctrl, int op)
{
    if (!last_block(ctrl)) return;
    if (threadIdx.x == 0) {
        advance(ctrl);
        if ((op & OP_DT) && !ctrl->fixed) ctrl->dt = ctrl->dt_next;
        if (!(ctrl->dt > 0.0)) ctrl->stalled = 1;
        ctrl->blocks_done = 0;
        __threadfence();
    }
}

// A multi-stage integrator's combination (fvswe.integrators, op "combine"): D = a U + b S cell
// by cell (update::combine on the state's components; the depth and area stay U's), in a step
// that runs; D may be U or S (each thread reads, then writes, its own cell: plain loads). A
// compensated state (FVSWE_COMPENSATED: float64 weights) combines each depth and its remainder
// in float64 (update::compensated_combine) and splits the result into both again, as the CPU;
// its discharges as without.
// With OP_ADVANCE it closes the step (close_step).
#if FVSWE_COMPENSATED
typedef double weight_t;
#else
typedef real weight_t;
#endif
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
combine_step(const int n_cells, const real4* U, const real4* S, real4* D, const weight_t a,
             const weight_t b, Ctrl* ctrl, const int op)
{
    if (!step_active(ctrl)) return;
    const int c = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (c < n_cells) {
#if FVSWE_COMPENSATED
        real u[NVAR], cu[FVSWE_LAYERS], s[NVAR], cs[FVSWE_LAYERS], H, A;
        load_cell(U, c, u, H);
        load_cell(S, c, s, A);
        load_rest(U, ctrl, c, cu);
        load_rest(S, ctrl, c, cs);
        A = U[(size_t)c * NVEC + NVEC - 1].w;  // two layers: the area; one: H again
#pragma unroll
        for (int m = 0; m < NVAR; ++m) {
            if (m % 3) {  // a discharge: as without, the weights rounded to real
                u[m] = update::combine<real>(real(a), u[m], real(b), s[m]);
                continue;
            }
            const double x = update::compensated_combine<double>(a, double(u[m]), double(cu[m / 3]),
                                                                 b, double(s[m]), double(cs[m / 3]));
            u[m] = real(x);
            cu[m / 3] = real(update::remainder<double>(x, double(u[m])));
        }
        store_cell(D, c, u, H, A);
        store_rest(D, ctrl, c, cu);
#else
#pragma unroll
        for (int v = 0; v < NVEC; ++v) {
            const size_t k = (size_t)c * NVEC + v;
            const real4 x = U[k], y = S[k];
            st4(D + k, real4{update::combine<real>(a, x.x, b, y.x), update::combine<real>(a, x.y, b, y.y),
                             update::combine<real>(a, x.z, b, y.z), x.w});
        }
#endif
    }
    if (op & OP_ADVANCE) close_step(ctrl, op);
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

#if FVSWE_LAYERS == 2
// The positivity limiter's two kernels (docs/SCHEMES.md §13.4; pipeline.cuh), after the
// normal pass of every step of every variant, in the same graph: both return at once when
// the step listed no candidate. Win: the step's old state; Wout: the normal pass's output,
// where limit_update rewrites the candidates and their neighbours. Any grid (grid-stride).

// theta of each candidate (limit_cell_theta).
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
limit_theta(const real4* __restrict__ Win, const real* __restrict__ area, const int* __restrict__ code,
            const real2* __restrict__ normal, const real* __restrict__ length, Ctrl* ctrl,
            const real g, const real r, const real eps_h)
{
    const int n = ctrl->candidates;
    if (n == 0) return;
    for (int i = blockIdx.x * FVSWE_BLOCK + threadIdx.x; i < n; i += gridDim.x * FVSWE_BLOCK)
        limit_cell_theta(Win, area, ctrl->lim_cells[i], code, normal, length, Params{g, r, eps_h},
                         ctrl);
}

// The candidates and their neighbours updated again with the limited slots (limit_cell_update),
// each once (the first thread to claim it); then the last block resets the marks and theta
// for the next step and closes the step's records that finish_step left (when the step had
// candidates): the level inflow and the first clip. On a part of a distributed run only owned
// cells are updated; the halo cells listed after the candidates (fvswe.parallel.GpuHalo: theta
// < 1 at their owner) have their owned neighbours updated.
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
limit_update(const real4* __restrict__ Win, real4* Wout, const real* __restrict__ area,
             const int* __restrict__ code, const real2* __restrict__ normal,
             const real* __restrict__ length, Ctrl* ctrl, const real g, const real r,
             const real eps_h)
{
    const int own = ctrl->candidates, n = own + ctrl->halo_listed;
    if (n == 0) return;
    for (int i = blockIdx.x * FVSWE_BLOCK + threadIdx.x; i < n; i += gridDim.x * FVSWE_BLOCK) {
        const int c = ctrl->lim_cells[i];
        for (int k = -1; k < FVSWE_K; ++k) {  // the candidate, then its neighbours
            const int cd = k < 0 ? 2 * c : __ldg(code + c * FVSWE_K + k);
            if (cd < 0 || (cd >> 1) >= ctrl->owned) continue;  // a halo cell: its owner's
            const int mark = atomicOr(ctrl->lim_claim + (cd >> 1), LIM_CLAIMED);
            if (mark & LIM_CLAIMED) continue;
            limit_cell_update(Win, Wout, area, cd >> 1, mark & LIM_CANDIDATE, code, normal, length,
                              Params{g, r, eps_h}, ctrl);
        }
    }
    if (!last_block(ctrl)) return;
    for (int i = threadIdx.x; i < n; i += FVSWE_BLOCK) {
        const int c = ctrl->lim_cells[i];
        ctrl->lim_theta[2 * c] = ctrl->lim_theta[2 * c + 1] = 1.0;
        ctrl->lim_claim[c] = 0;
        for (int k = 0; k < FVSWE_K; ++k) {
            const int cd = __ldg(code + c * FVSWE_K + k);
            if (cd >= 0) ctrl->lim_claim[cd >> 1] = 0;
        }
    }
    if (ctrl->n_level > 0 && own > 0) add_level_inflow(ctrl, ctrl->weight * ctrl->dt_used);
    if (threadIdx.x == 0) {
        record_clip(ctrl, ctrl->step_no, ctrl->t_step);
        ctrl->listed += n;
        ctrl->candidates = 0;
        ctrl->halo_listed = 0;
        ctrl->blocks_done = 0;
        __threadfence();
    }
}
#endif

#if FVSWE_LINEAR
#include "linear.cuh"
#endif
