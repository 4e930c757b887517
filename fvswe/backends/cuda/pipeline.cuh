// Shared pieces of the GPU pipeline: real type, packed cell/slot access, the scheme
// dispatch, boundary ghosts, the step control block and the fused min-dt reduction.
//
// Compile-time parameters (NVRTC -D options, one module per combination):
//   FVSWE_SCHEME  the kernel id (fvswe/schemes/registry.py KERNEL_IDS; schemes.cuh)
//   FVSWE_LAYERS  1 or 2
//   FVSWE_DOUBLE  0 float32, 1 float64
//   FVSWE_K       3 triangles, 4 quads (slots per cell)
//   FVSWE_BLOCK   threads per block
//   FVSWE_MIN_BLOCKS  blocks per SM the step kernels must fit (caps their registers;
//                 gpu.RESIDENT_THREADS)
//   FVSWE_COMPENSATED  1: a float32 state with its rounding remainders (docs/SCHEMES.md §2.7),
//                 which follow each state buffer after ctrl->rest 4-vectors; 0 (always in
//                 float64): none, compiled out
//   FVSWE_LINEAR  1: the linear reconstruction (docs/SCHEMES.md §19): the edges read the face
//                 states of faces_pass (linear.cuh) and add the cell-interior terms; 0: first
//                 order, none of it compiled
//   FVSWE_SPHERE  1: a lon/lat mesh on the sphere (docs/SCHEMES.md §20): the cell update adds
//                 the metric rates of ctrl->sphere and the rotation its metric rate; 0: planar,
//                 none of it compiled
//
// Packed state (docs/ARCHITECTURE.md): two layers use two 4-vectors per cell,
// (h1, q1x, q1y, H) and (h2, q2x, q2y, area); one layer uses (h, qx, qy, H) with
// the area in a separate array. A slot holds |Gamma| F (nvar values) and |Gamma| ||D||:
// two layers (F0..F3), (F4, F5, D, |Gamma|); one layer (F0, F1, F2, D).
#pragma once

#ifndef FVSWE_LAYERS
#define FVSWE_LAYERS 2
#endif
#ifndef FVSWE_DOUBLE
#define FVSWE_DOUBLE 1
#endif
#ifndef FVSWE_K
#define FVSWE_K 3
#endif
#ifndef FVSWE_BLOCK
#define FVSWE_BLOCK 128
#endif
#ifndef FVSWE_MIN_BLOCKS
#define FVSWE_MIN_BLOCKS 1
#endif
#ifndef FVSWE_COMPENSATED
#define FVSWE_COMPENSATED 0
#endif
#if FVSWE_COMPENSATED && FVSWE_DOUBLE
#error "FVSWE_COMPENSATED: float32 modules only"
#endif
#ifndef FVSWE_STAGE_RESTS  // block.cu: the remainders staged in shared memory (tuning.STAGE_RESTS)
#define FVSWE_STAGE_RESTS 0
#endif
#if FVSWE_STAGE_RESTS && !FVSWE_COMPENSATED
#error "FVSWE_STAGE_RESTS: a compensated module's option"
#endif
#ifndef FVSWE_LINEAR
#define FVSWE_LINEAR 0
#endif
#ifndef FVSWE_SPHERE
#define FVSWE_SPHERE 0
#endif
// 1 (block.cu, before including this): the linear slots' cell-interior terms are formed where
// they are used (slot_interior), none stored by interior_pass.
#ifndef FVSWE_INTERIOR_IN_STEP
#define FVSWE_INTERIOR_IN_STEP 0
#endif

// Generated from Python (fvswe/backends/cuda_header.py): the constants and struct Ctrl
// (constants.cuh), the physics emitted from the Numba modules by fvswe.codegen
// (physics.cuh, docs/CODEGEN.md: fluxes, boundary ghosts, forcing, friction) and the
// compiled scheme's SCHEME_FLUX (schemes.cuh). The ghosts, forcing and friction are
// called as m::f<double>: float64 in every module, as on the CPU.
#include "constants.cuh"
#include "physics.cuh"
#include "schemes.cuh"

#if FVSWE_LAYERS == 2
#define NVAR 6
#define NVEC 2
#elif FVSWE_LAYERS == 1
#define NVAR 3
#define NVEC 1
#else
#error "FVSWE_LAYERS must be 1 or 2"
#endif

// ---------------------------------------------------------------- real type, 4-vectors
#if FVSWE_DOUBLE
typedef double real;
typedef double2 real2;
// double4 is not a native 32-byte load: a 32-aligned struct read as two double2.
struct __align__(32) real4 {
    double x, y, z, w;
};
__device__ __forceinline__ real4 ld4(const real4* __restrict__ p)
{
    const double2* q = reinterpret_cast<const double2*>(p);
    const double2 a = __ldg(q), b = __ldg(q + 1);
    return real4{a.x, a.y, b.x, b.y};
}
__device__ __forceinline__ void st4(real4* p, const real4 v)
{
    double2* q = reinterpret_cast<double2*>(p);
    q[0] = make_double2(v.x, v.y);
    q[1] = make_double2(v.z, v.w);
}
#define REAL_INF __longlong_as_double(0x7ff0000000000000LL)
#else
typedef float real;
typedef float2 real2;
typedef float4 real4;
__device__ __forceinline__ real4 ld4(const real4* __restrict__ p) { return __ldg(p); }
__device__ __forceinline__ void st4(real4* p, const real4 v) { *p = v; }
#define REAL_INF __int_as_float(0x7f800000)
#endif

// The limiter's theta margin in this precision (docs/SCHEMES.md §13.4).
inline constexpr real LIMIT_MARGIN = FVSWE_DOUBLE ? real(LIMIT_MARGIN64) : real(LIMIT_MARGIN32);
// eps_u / eps_h, the damping threshold of the cells the limiter updates again (§13.4).
inline constexpr double EPS_U_RATIO = FVSWE_DOUBLE ? EPS_U_RATIO64 : EPS_U_RATIO32;

// Products and sums of slots are rounded one by one (never contracted into an FMA), so
// the edge and gather variants, which form them in different kernels, agree bitwise.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }

// ---------------------------------------------------------------- step control block
// struct Ctrl (one per backend, in device memory; the host reads it every few steps), the
// op bits OP_* and NO_CELL are in constants.cuh. A zeroed control block means "no cell":
// cells are kept as cell - NO_CELL, which atomicMin lowers to the smallest cell index.

// A step runs only while the control block allows it; every block of a grid sees
// the same answer because only the last block of the previous kernel changed it.
__device__ __forceinline__ bool step_active(const Ctrl* c)
{
    return c->steps < c->max_steps && c->t < c->t_end && !c->stalled;
}

// Whether the current step is the last one (clipped to end exactly at t_end): within
// LAST_STEP_RTOL of itself of t_end (fvswe.backends.base.LAST_STEP_RTOL), so that
// it lands on t_end instead of leaving a round-off sliver.
__device__ __forceinline__ bool last_step(const Ctrl* c)
{
    return c->dt * (1 + LAST_STEP_RTOL) >= c->t_end - c->t;
}

// dt of the current step, clipped so that the step ends exactly at t_end.
__device__ __forceinline__ double step_dt(const Ctrl* c)
{
    return last_step(c) ? c->t_end - c->t : c->dt;
}

// The stage of a kernel's op (fvswe.integrators; its c, a and weight in c->stages).
__device__ __forceinline__ int stage_of(int op) { return op >> OP_STAGE_SHIFT; }

// The time of the stage of `op`, t + c dt: its boundary tables and forcing.
__device__ __forceinline__ double stage_time(const Ctrl* c, int op)
{
    const double cs = c->stages[3 * stage_of(op)];
    return cs == 0.0 ? c->t : c->t + cs * step_dt(c);
}

// The time a pass with `op` reads boundary tables and forcing at: its stage's, or in a pass
// after the stage's update (OP_AFTER: the limiter's) the stage just taken's. Computed only
// where an edge has tables or a cell has forcing: held across a pass, it costs registers.
__device__ __forceinline__ double pass_time(const Ctrl* c, int op)
{
    return (op & OP_AFTER) ? c->t_stage : stage_time(c, op);
}

// The time t + q dt at which a midpoint kind (a discharge) reads its tables in the stage of
// `op` (q: fvswe.integrators.table_fractions; Euler's step midpoint); the step's start while
// dt is not known yet (the speeds of a lagged run's first dt). Mirrors CpuBackend._table_time.
__device__ __forceinline__ double mid_time(const Ctrl* c, int op)
{
    const double q = c->stage_q[stage_of(op)];
    const double dt = step_dt(c);
    return (q == 0.0 || !(dt > 0.0)) ? c->t : c->t + q * dt;
}

// The share of the step that the stage of `op` adds to the counters: its weight times dt.
__device__ __forceinline__ double stage_share(const Ctrl* c, int op)
{
    return c->stages[3 * stage_of(op) + 2] * step_dt(c);
}

// Close the step (thread 0 of the kernel that ends it): t += dt (landing on t_end at the
// last step), steps += 1.
__device__ __forceinline__ void advance(Ctrl* ctrl)
{
    const bool clip = last_step(ctrl);
    ctrl->t = clip ? ctrl->t_end : ctrl->t + ctrl->dt;
    ctrl->steps += 1;
}

__device__ __forceinline__ void count_flags(Ctrl* c, int flags)
{
    if (flags & FLAG_NONHYPERBOLIC) atomicAdd(&c->nonhyp, 1ULL);
    if (flags & FLAG_NEAR_COINCIDENT) atomicAdd(&c->degenerate, 1ULL);
    if (flags & FLAG_THIN) atomicAdd(&c->thin, 1ULL);
}

// min that ignores nothing it should not: both operands come from positive speeds.
__device__ __forceinline__ real min_dt(real a, real b) { return b < a ? b : a; }

// Whether this block is the last of `blocks` (its grid's, or those of the launches that share
// one ticket: block.cu's border and interior blocks) to get here (all threads call it; every
// earlier block's writes are then visible to it): the ticket of the last-block reductions.
__device__ __forceinline__ bool last_block(Ctrl* ctrl, unsigned blocks)
{
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(&ctrl->blocks_done, 1u) == blocks - 1;
    }
    __syncthreads();
    if (last) __threadfence();
    return last;
}

__device__ __forceinline__ bool last_block(Ctrl* ctrl) { return last_block(ctrl, gridDim.x); }

// Minus the sum of the outward fluxes lf[2 i + layer], i < n, of the edges with tables, per
// layer, in a fixed order: thread t adds i = t, t + FVSWE_BLOCK, ..., then the warp's
// butterfly, then the warps in turn. All threads of one block of FVSWE_BLOCK call it; each
// gets the sums. The last block of a step sums one device's fluxes with it, level_inflow
// (service.cuh) the fluxes of a distributed run's ranks gathered in that order: same bits.
__device__ __forceinline__ void sum_inflow(const volatile double* lf, int n, double* inflow)
{
    __shared__ double warp_sum[FVSWE_BLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int l = 0; l < FVSWE_LAYERS; ++l) {
        double s = 0.0;
        for (int i = threadIdx.x; i < n; i += FVSWE_BLOCK) s += lf[2 * i + l];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        __syncthreads();  // the previous layer's warp_sum is read
        if (lane == 0) warp_sum[warp] = s;
        __syncthreads();
        for (int w = 0; w < FVSWE_BLOCK / 32; ++w) inflow[l] -= warp_sum[w];
    }
}

// The inflow counters gain the volume in through the edges with tables in a step of dt.
__device__ __forceinline__ void add_inflow(Ctrl* ctrl, double dt, const double* inflow)
{
    ctrl->level_inflow += dt * inflow[0];
#if FVSWE_LAYERS == 2
    ctrl->level_inflow2 += dt * inflow[1];
#endif
}

// The step's volume in through the edges with tables, per layer (sum_inflow, add_inflow):
// all threads of the block call it; thread 0 adds.
__device__ void add_level_inflow(Ctrl* ctrl, double dt)
{
    double inflow[FVSWE_LAYERS] = {};
    sum_inflow(ctrl->level_flux, ctrl->n_level, inflow);
    if (threadIdx.x == 0) add_inflow(ctrl, dt, inflow);
}

// A field that other blocks of the running kernel changed (atomics), read past the
// (incoherent) L1 cache by a last block.
template <typename T> __device__ __forceinline__ T fresh(const T& field)
{
    return *static_cast<const volatile T*>(&field);
}

// The first step that clipped a depth: step (1 + its index) and start time t (thread 0).
__device__ __forceinline__ void record_clip(Ctrl* ctrl, long long step, double t)
{
    if (fresh(ctrl->clip_cell) != 0 && ctrl->clip_step == 0) {
        ctrl->clip_step = step;
        ctrl->clip_t = t;
    }
}

// Block-wide min of dt_i, then the last block to finish reduces the per-block minima and,
// for an update, records its stage (dt_used, t_step, t_stage, weight, step_no) and the
// step's records; OP_ADVANCE closes the step (advance); OP_DT sets dt (the next step's once
// the update is in, or dt_next while a multi-stage step goes on). All threads of the block
// call it. A step with limiter candidates (docs/SCHEMES.md §13.4) leaves the level inflow and
// the clip record to limit_update, which runs after it and may change both. `StepBlock`: this
// block's index among the step's `blocks` (block.cu launches a part's blocks in two ranges).
struct StepBlock {
    unsigned index, blocks;
};

__device__ void finish_step(Ctrl* ctrl, real* partial, real dti, int op, const StepBlock grid)
{
    __shared__ real warp_min[FVSWE_BLOCK / 32];
    for (int o = 16; o > 0; o >>= 1) dti = min_dt(dti, __shfl_xor_sync(0xffffffffu, dti, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_min[warp] = dti;
    __syncthreads();
    if (threadIdx.x == 0) {
        real m = warp_min[0];
        for (int w = 1; w < FVSWE_BLOCK / 32; ++w) m = min_dt(m, warp_min[w]);
        partial[grid.index] = m;
    }
    if (!last_block(ctrl, grid.blocks)) return;
    real m = REAL_INF;
    const volatile real* vp = partial;
    for (int b = threadIdx.x; b < grid.blocks; b += FVSWE_BLOCK) m = min_dt(m, vp[b]);
    for (int o = 16; o > 0; o >>= 1) m = min_dt(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) warp_min[warp] = m;
    __syncthreads();
    const bool limited = FVSWE_LAYERS == 2 && fresh(ctrl->candidates) > 0;
    if ((op & OP_UPDATE) && ctrl->n_level > 0 && !limited) add_level_inflow(ctrl, stage_share(ctrl, op));
    if (threadIdx.x == 0) {
        for (int w = 1; w < FVSWE_BLOCK / 32; ++w) m = min_dt(m, warp_min[w]);
        m = min_dt(warp_min[0], m);
        if ((op & OP_UPDATE) && !limited) record_clip(ctrl, ctrl->steps + 1, ctrl->t);
        if ((op & OP_UPDATE) && (op & OP_DT) && fresh(ctrl->cfl_cell) != 0 && ctrl->cfl_step == 0) {
            ctrl->cfl_step = ctrl->steps + 1;  // a fixed dt above the stable step: stop
            ctrl->cfl_t = ctrl->t;
            ctrl->courant = step_dt(ctrl) * ctrl->cfl / (double)m;
            ctrl->stalled = 1;
        }
        if ((op & OP_DT) && ctrl->slow_step == 0 && double(m) < ctrl->dt_floor) {
            ctrl->slow_step = ctrl->steps + 1;  // a stable step below dt_floor: recorded here,
            ctrl->slow_t = ctrl->t;             // not per cell (that cost 3 % of a step)
        }
        if (op & OP_UPDATE) {
            ctrl->dt_used = step_dt(ctrl);
            ctrl->t_step = ctrl->t;
            ctrl->t_stage = stage_time(ctrl, op);
            ctrl->t_mid = mid_time(ctrl, op);
            ctrl->weight = ctrl->stages[3 * stage_of(op) + 2];
            ctrl->step_no = ctrl->steps + 1;
            ctrl->updates += 1;
        }
        if (op & OP_ADVANCE) advance(ctrl);
        if ((op & OP_DT) && !ctrl->fixed) {
            if ((op & OP_UPDATE) && !(op & OP_ADVANCE)) ctrl->dt_next = (double)m;
            else ctrl->dt = (double)m;
        }
        if (!(ctrl->dt > 0.0)) ctrl->stalled = 1;
        ctrl->blocks_done = 0;
        __threadfence();
    }
}

__device__ __forceinline__ void finish_step(Ctrl* ctrl, real* partial, real dti, int op)
{
    finish_step(ctrl, partial, dti, op, StepBlock{blockIdx.x, gridDim.x});
}

// ---------------------------------------------------------------- cells and slots
__device__ __forceinline__ void load_cell(const real4* __restrict__ W, int c, real* w, real& H)
{
    const real4 a = ld4(W + (size_t)c * NVEC);
    w[0] = a.x; w[1] = a.y; w[2] = a.z; H = a.w;
#if FVSWE_LAYERS == 2
    const real4 b = ld4(W + (size_t)c * NVEC + 1);
    w[3] = b.x; w[4] = b.y; w[5] = b.z;
#endif
}

// The cell area: the 4th entry of the second vector (two layers) or its own array.
__device__ __forceinline__ real cell_area(const real4* __restrict__ W, const real* __restrict__ area, int c)
{
#if FVSWE_LAYERS == 2
    return ld4(W + (size_t)c * NVEC + 1).w;
#else
    return __ldg(area + c);
#endif
}

__device__ __forceinline__ void store_cell(real4* W, int c, const real* w, real H, real A)
{
#if FVSWE_LAYERS == 2
    st4(W + (size_t)c * NVEC, real4{w[0], w[1], w[2], H});
    st4(W + (size_t)c * NVEC + 1, real4{w[3], w[4], w[5], A});
#else
    st4(W + (size_t)c, real4{w[0], w[1], w[2], H});
#endif
}

// A compensated state's depth remainders (docs/SCHEMES.md §2.7): FVSWE_LAYERS reals per cell
// (a real2 for two layers, one real for one), ctrl->rest 4-vectors after the start of the
// state buffer W. Per owned cell: read and written by its own update only, never exchanged.
__device__ __forceinline__ void load_rest(const real4* W, const Ctrl* ctrl, int c, real* r)
{
#if FVSWE_COMPENSATED && FVSWE_LAYERS == 2
    const real2 a = reinterpret_cast<const real2*>(W + ctrl->rest)[c];
    r[0] = a.x;
    r[1] = a.y;
#elif FVSWE_COMPENSATED
    r[0] = reinterpret_cast<const real*>(W + ctrl->rest)[c];
#endif
}

// Layer l's remainder of cell c, in the layout of load_rest. update_cell reads and writes each
// where it forms the depth, so no remainder is held across the rest of the update (kept live
// to the end they spilled: block_step PVM-IFCP float32 160 -> 284 B, now 144 B, and cost
// 12.9 % -> 11.3 % of the plain step on the H200, docs/GPU.md).
__device__ __forceinline__ real* rest_of(const real4* W, const Ctrl* ctrl, int c, int l)
{
    return const_cast<real*>(reinterpret_cast<const real*>(W + ctrl->rest)) + (size_t)c * FVSWE_LAYERS + l;
}

// Stage the n remainders from src into shared dst while the block computes (block_step): on
// the device an asynchronous copy (cp.async, no register waits for it), which rests_staged
// completes before the block's barrier; the host shim copies at once.
__device__ __forceinline__ void stage_rests(real* dst, const real* src, int n)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
#if defined(__CUDA_ARCH__)
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(unsigned(__cvta_generic_to_shared(dst + i))),
                     "l"(src + i), "n"(sizeof(real)));
#else
        dst[i] = src[i];
#endif
    }
}

__device__ __forceinline__ void rests_staged()
{
#if defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

__device__ __forceinline__ void store_rest(real4* W, const Ctrl* ctrl, int c, const real* r)
{
#if FVSWE_COMPENSATED && FVSWE_LAYERS == 2
    reinterpret_cast<real2*>(W + ctrl->rest)[c] = real2{r[0], r[1]};
#elif FVSWE_COMPENSATED
    reinterpret_cast<real*>(W + ctrl->rest)[c] = r[0];
#endif
}

// Slot s: the edge's |Gamma| F and |Gamma| ||D|| (F and d per unit length, multiplied by len
// here) and, two layers, its length.
__device__ __forceinline__ void store_slot(real4* S, int s, const real* F, real d, real len)
{
#if FVSWE_LAYERS == 2
    st4(S + (size_t)s * NVEC, real4{mul_rn(len, F[0]), mul_rn(len, F[1]), mul_rn(len, F[2]),
                                    mul_rn(len, F[3])});
    st4(S + (size_t)s * NVEC + 1, real4{mul_rn(len, F[4]), mul_rn(len, F[5]), mul_rn(len, d), len});
#else
    st4(S + (size_t)s, real4{mul_rn(len, F[0]), mul_rn(len, F[1]), mul_rn(len, F[2]), mul_rn(len, d)});
#endif
}

// ---------------------------------------------------------------- the positivity limiter's bound
// What the normal pass of a step gathers for the limiter's candidate test (docs/SCHEMES.md
// §13.4, limit_candidate): per layer the sum over the slots of max(S_d, 0)
// (limiter::outflow_part), and the sum of the slots' lengths, the cell's perimeter; the bound
// of the layer's outflow is then limiter::outflow_bound (|q.n| <= |q|_1, q the layer's
// discharge in the cell's old state). Two layers only (one layer: empty).
struct LimitSums {
#if FVSWE_LAYERS == 2
    real out[2];
    real perimeter;
#endif
};

// sums += slot v (nvar+1 values) of length len (first slot: sums = its part).
__device__ __forceinline__ void limit_sums(LimitSums& sums, const real* v, real len, bool first)
{
#if FVSWE_LAYERS == 2
#pragma unroll
    for (int l = 0; l < 2; ++l) {
        const real o = limiter::outflow_part<real>(v[3 * l]);
        sums.out[l] = first ? o : add_rn(sums.out[l], o);
    }
    sums.perimeter = first ? len : add_rn(sums.perimeter, len);
#endif
}

// acc += slot s (first slot: acc = slot), component by component, nvar+1 values; the
// limiter's sums take its mass components and length (two layers: the 8th value).
__device__ __forceinline__ void add_slot(const real4* __restrict__ S, int s, real* acc, bool first,
                                         LimitSums& sums)
{
    real v[NVAR + 1];
    const real4 a = ld4(S + (size_t)s * NVEC);
#if FVSWE_LAYERS == 2
    const real4 b = ld4(S + (size_t)s * NVEC + 1);
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z;
#else
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
#endif
#pragma unroll
    for (int m = 0; m <= NVAR; ++m) acc[m] = first ? v[m] : add_rn(acc[m], v[m]);
#if FVSWE_LAYERS == 2
    limit_sums(sums, v, b.w, first);
#else
    limit_sums(sums, v, real(0), first);
#endif
}

// ---------------------------------------------------------------- boundary ghost (docs/SCHEMES.md §7)
// Boundary codes (edge j / slot code, negated): bc | m << BC_BITS with bc BC_WALL, BC_OPEN,
// BC_LEVEL, BC_DISCHARGE or BC_CHARACTERISTIC (fvswe.boundary, via constants.cuh) and m the
// edge's index among the edges with tables (levels, discharges, characteristics).

// The condition of boundary code `code` (its low BC_BITS bits; the rest is the table edge m).
__device__ __forceinline__ int bc_kind(int code) { return code & ((1 << BC_BITS) - 1); }

// A piecewise-linear table's value at t, samples lo..hi (inclusive), end values held outside
// (mirrors fvswe.backends.cpu.pipeline.table_value: array walking, so the pipeline's).
__device__ __forceinline__ double table_value(double t, const double* times, const double* values,
                                              int lo, int hi)
{
    if (t <= times[lo]) return values[lo];
    if (t >= times[hi]) return values[hi];
    while (hi - lo > 1) {  // invariant: times[lo] <= t < times[hi]
        const int mid = (lo + hi) / 2;
        if (times[mid] <= t) lo = mid;
        else hi = mid;
    }
    const double slope = (values[hi] - values[lo]) / (times[hi] - times[lo]);
    return values[lo] + slope * (t - times[lo]);
}

// Value at t of table k: linear between samples, end values held outside (mirrors
// fvswe.backends.cpu.pipeline.level_values).
__device__ __forceinline__ double level_value(const Ctrl* c, int k, double t)
{
    return table_value(t, c->level_times, c->level_values, (int)c->level_offsets[k],
                       (int)c->level_offsets[k + 1] - 1);
}

// A cell state as the CPU's 6-tuple (one layer: the last three zero), in double.
__device__ __forceinline__ fv_tuple6<double, double, double, double, double, double> widen(const real* w)
{
    double w6[6];
#pragma unroll
    for (int m = 0; m < 6; ++m) w6[m] = m < NVAR ? double(w[m]) : 0.0;
    return fv_load6(w6);
}

// A cell state as a 6-tuple of reals (one layer: the last three zero).
__device__ __forceinline__ fv_tuple6<real, real, real, real, real, real> pad6(const real* w)
{
    real w6[6];
#pragma unroll
    for (int m = 0; m < 6; ++m) w6[m] = m < NVAR ? w[m] : real(0);
    return fv_load6(w6);
}

// The dispatch over the registries (fvswe.registry), generated: has_tables, second_table and
// midpoint (a boundary kind's tables), ghost_bed and ghost_of (its ghost's bed and state),
// impose (its fluxes), faces (the reconstruction).
#include "dispatch.cuh"

// The time a pass with `op` reads the tables of boundary kind bc at: pass_time, or for a
// midpoint kind mid_time (in a pass after the update, the stage just taken's).
__device__ __forceinline__ double table_time(const Ctrl* c, int op, int bc)
{
    if (!midpoint(bc)) return pass_time(c, op);
    return (op & OP_AFTER) ? c->t_mid : mid_time(c, op);
}

// The table values at time t of a boundary edge with tables (mirrors the CPU's level_values):
// a, and b from the next table where the kind reads a second one (second_table; else 0).
__device__ __forceinline__ void table_values(const Ctrl* ctrl, double t, int code, double& a, double& b)
{
    const int k = ctrl->level_table[code >> BC_BITS];
    a = level_value(ctrl, k, t);
    b = second_table(bc_kind(code)) ? level_value(ctrl, k + 1, t) : 0.0;
}

// ---------------------------------------------------------------- scheme dispatch
struct Params {
    real g, r, eps_h;
};

// F-, F+, ||D|| of one edge for the compiled scheme; returns the flags of docs/SCHEMES.md §3.5.
__device__ __forceinline__ int scheme_flux(const real* Wi, const real* Wj, real Hi, real Hj, real ex,
                                           real ey, const Params& p, real* Fm, real* Fp, real& dmax)
{
    return SCHEME_FLUX<real>(Wi, Wj, Hi, Hj, ex, ey, p.g, p.r, p.eps_h, Fm, Fp, dmax);
}

// ---------------------------------------------------------------- the one edge evaluation
// The ghost of boundary code `code` beside a cell of state wi (depth Hi), its kind's tables
// read at the pass's time (table_time), and the bed Hg it stands on: the cell's, or Hi + a
// rounded once to real for a kind with a bed of its own (ghost_bed: a free outflow).
__device__ __forceinline__ void boundary_ghost(int code, const real* wi, real Hi, real2 n,
                                               const Params& prm, const Ctrl* ctrl, int op, real* g,
                                               real& Hg)
{
    const int bc = bc_kind(code);
    double a = 0.0, b = 0.0;
    if (has_tables(bc)) table_values(ctrl, table_time(ctrl, op, bc), code, a, b);
    ghost_of(bc, wi, Hi, a, b, n.x, n.y, prm.g, prm.eps_h, g);
    Hg = ghost_bed(bc) ? real(double(Hi) + a) : Hi;
}

// A kind with tables imposes its fluxes on Fm (cell state wi) and records the edge's level
// flux (index m: the code's high bits). The tables are read again rather than kept from the
// ghost: values live across the scheme's flux cost registers that every edge pays for.
__device__ __forceinline__ void boundary_impose(int code, real* Fm, const real* wi, real2 n, real len,
                                                Ctrl* ctrl, int op)
{
    const int bc = bc_kind(code);
    if (!has_tables(bc)) return;
    double a, b;
    table_values(ctrl, table_time(ctrl, op, bc), code, a, b);
    impose(bc, Fm, wi, a, b, n.x, n.y);
    const int m = code >> BC_BITS;
    ctrl->level_flux[2 * m] = len * (Fm[0] + (wi[1] * n.x + wi[2] * n.y));
#if FVSWE_LAYERS == 2
    ctrl->level_flux[2 * m + 1] = len * (Fm[3] + (wi[4] * n.x + wi[5] * n.y));
#endif
}

// What an edge gives its two cells, per unit of its length: F- (side i), F+ (side j), ||D|| and
// the flags of docs/SCHEMES.md §3.5. The callers multiply by |Gamma| (mul_rn) what they keep:
// the side they store, not both.
struct EdgeFlux {
    real Fm[NVAR], Fp[NVAR], d;
    int flags;
};

// The edge between a cell (state wa, depth Ha) and its neighbour, which neighbour(w, H)
// loads, or on the boundary (code > 0: its boundary code) the ghost of code's kind; side i is
// the cell, or the neighbour where `swap` (a cell's slot on the edge's side j). Mirrors
// fvswe.backends.cpu.kernels.evaluate_edge. The neighbour is loaded in the else branch of the
// ghost's test, not before it: two separate tests cost every edge registers (spills).
template <class Neighbour>
__device__ __forceinline__ void evaluate_edge(const real* wa, real Ha, Neighbour neighbour, bool swap,
                                              int code, real2 n, real len, const Params& prm,
                                              Ctrl* ctrl, int op, EdgeFlux& out)
{
    real wb[NVAR], Hb;
    if (code) {
        boundary_ghost(code, wa, Ha, n, prm, ctrl, op, wb, Hb);
    } else {
        neighbour(wb, Hb);
    }
    real wi[NVAR], wj[NVAR], fi[NVAR], fj[NVAR];
#pragma unroll
    for (int m = 0; m < NVAR; ++m) {
        wi[m] = swap ? wb[m] : wa[m];
        wj[m] = swap ? wa[m] : wb[m];
    }
    faces(wi, wj, fi, fj);
    out.flags = scheme_flux(fi, fj, swap ? Hb : Ha, swap ? Ha : Hb, n.x, n.y, prm, out.Fm, out.Fp,
                            out.d);
    if (code) boundary_impose(code, out.Fm, wa, n, len, ctrl, op);
}

#if FVSWE_LINEAR
// ---------------------------------------------------------------- the linear reconstruction's slots
// (docs/SCHEMES.md §19; faces_pass of linear.cuh writes them before each residual.) Slot s's face
// state and bed, packed as a cell's (load_cell on ctrl->lin_faces).
__device__ __forceinline__ void load_face(const Ctrl* ctrl, int s, real* w, real& H)
{
    load_cell(static_cast<const real4*>(ctrl->lin_faces), s, w, H);
}

// |Gamma| F of slot s plus its cell-interior term |Gamma| B, in real: the CPU's
// acc[s, v] = F[v] + interior[s, v] (kernels._store) in a float64 module.
__device__ __forceinline__ real with_interior(real lf, real b) { return lf + b; }

// The same with the term interior_pass stored (the variants but block, which forms it).
__device__ __forceinline__ real with_interior(const Ctrl* ctrl, int s, int m, real lf)
{
    return with_interior(lf, static_cast<const real*>(ctrl->lin_interior)[(size_t)s * NVAR + m]);
}

// |Gamma| times slot s's cell-interior term into B (reconstruction::interior in real: a float64
// module's are the CPU's), from cell c's state to the slot's face state, (nx, ny) the normal out
// of c, len the edge's length (the CPU's rest of _reconstruct_cell); zero where c fell back to
// first order (lin_fallback).
__device__ __forceinline__ void lin_interior(const real4* __restrict__ Win, const Ctrl* ctrl, int c,
                                             int s, real nx, real ny, real len, real* B)
{
    if (ctrl->lin_fallback[c]) {
#pragma unroll
        for (int v = 0; v < NVAR; ++v) B[v] = real(0);
        return;
    }
    real w[NVAR], H, wf[NVAR], Hf;
    load_cell(Win, c, w, H);
    load_face(ctrl, s, wf, Hf);
    const auto b = reconstruction::interior<real>(pad6(w), pad6(wf), H, Hf, nx, ny, real(ctrl->g),
                                                  real(ctrl->r), real(ctrl->eps_h));
#pragma unroll
    for (int v = 0; v < NVAR; ++v) B[v] = len * fv_at(b, v);
}

// Slot s's term formed from its per-slot code cd, normal n (the edge's) and length: zero where
// the slot has no edge (lin_slot -2), else lin_interior with the normal out of its cell.
__device__ __forceinline__ void slot_interior(const real4* __restrict__ Win, const Ctrl* ctrl, int s,
                                              int cd, real2 n, real len, real* B)
{
    if (ctrl->lin_slot[s] == -2) {
#pragma unroll
        for (int v = 0; v < NVAR; ++v) B[v] = real(0);
        return;
    }
    const bool side_j = cd >= 0 && (cd & 1);
    lin_interior(Win, ctrl, s / FVSWE_K, s, side_j ? -n.x : n.x, side_j ? -n.y : n.y, len, B);
}
#endif

// ---------------------------------------------------------------- per-cell pieces of the steps
// |Gamma| F and |Gamma| ||D|| (out[0..NVAR]) that slot s contributes to its cell (state w,
// depth H): the edge (unit normal n, length len) evaluated with its own orientation,
// flux(W_i, W_j, eta), keeping F- when the cell is side i and F+ when it is side j, so the
// values are bitwise those the edge pass writes. cd = 2*neighbour + side, or minus the
// boundary code. A linear module (FVSWE_LINEAR) evaluates the slot's face state against the
// face state across the edge and adds the slot's cell-interior term.
__device__ __forceinline__ void edge_contribution(const real4* __restrict__ Win, const real* w, real H,
                                                  int s, int cd, real2 n, real len,
                                                  const Params& prm, Ctrl* ctrl, int op, real* out)
{
    const bool side_j = cd >= 0 && (cd & 1);
    EdgeFlux f;
#if FVSWE_LINEAR
    real wf[NVAR], Hf;
    load_face(ctrl, s, wf, Hf);
    const int across = ctrl->lin_slot[s];
    evaluate_edge(wf, Hf, [&](real* wn, real& Hn) { load_face(ctrl, across, wn, Hn); }, side_j,
                  cd < 0 ? -cd : 0, n, len, prm, ctrl, op, f);
#else
    evaluate_edge(w, H, [&](real* wn, real& Hn) { load_cell(Win, cd >> 1, wn, Hn); }, side_j,
                  cd < 0 ? -cd : 0, n, len, prm, ctrl, op, f);
#endif
    if (!side_j && f.flags && (op & OP_COUNT)) count_flags(ctrl, f.flags);  // each edge once
#pragma unroll
    for (int m = 0; m < NVAR; ++m) out[m] = mul_rn(len, side_j ? f.Fp[m] : f.Fm[m]);
#if FVSWE_LINEAR && FVSWE_INTERIOR_IN_STEP  // the limiter's kernels of a block module
    real b[NVAR];
    slot_interior(Win, ctrl, s, cd, n, len, b);
#pragma unroll
    for (int m = 0; m < NVAR; ++m) out[m] = with_interior(out[m], b[m]);
#elif FVSWE_LINEAR
#pragma unroll
    for (int m = 0; m < NVAR; ++m) out[m] = with_interior(ctrl, s, m, out[m]);
#endif
    out[NVAR] = mul_rn(len, f.d);
}

// edge_contribution of slot s in the current step, its code, normal and length read from the
// per-slot arrays; returns the slot's length (for the limiter's bound).
__device__ __forceinline__ real slot_contribution(const real4* __restrict__ Win, const real* w, real H,
                                                  int s, const int* __restrict__ code,
                                                  const real2* __restrict__ normal,
                                                  const real* __restrict__ length, const Params& prm,
                                                  Ctrl* ctrl, int op, real* out)
{
    const real len = __ldg(length + s);
    edge_contribution(Win, w, H, s, __ldg(code + s), __ldg(normal + s), len, prm, ctrl, op, out);
    return len;
}

// Friction on updated cell c (mirrors the CPU backend's _friction, docs/SCHEMES.md §14), in
// float64: two layers get the interfacial exchange (if any), then the bottom friction on
// the lower layer; one layer gets the bottom friction. Coefficients are per cell (the bottom
// one: or one value for all, friction_stride 0).
__device__ __forceinline__ void apply_friction(real* w, const Ctrl* ctrl, int c, double dt)
{
    const int b = NVAR - 3;  // the layer on the bed
#if FVSWE_LAYERS == 2
    if (ctrl->interfacial_coef) {
        const auto q = friction::interfacial<double>(
            double(w[0]), double(w[1]), double(w[2]), double(w[3]), double(w[4]), double(w[5]),
            ctrl->interfacial_coef[c], ctrl->r, ctrl->eps_h, dt);
        w[1] = real(q.f0);
        w[2] = real(q.f1);
        w[4] = real(q.f2);
        w[5] = real(q.f3);
    }
#endif
    if (ctrl->friction) {
        const double coef = ctrl->friction_coef[(size_t)c * ctrl->friction_stride];
        const auto q = friction::bottom<double>(double(w[b]), double(w[b + 1]), double(w[b + 2]),
                                                ctrl->friction, coef, ctrl->g, dt);
        w[b + 1] = real(q.f0);
        w[b + 2] = real(q.f1);
    }
}

// tau / rho_w at the step's start t of the wind table (mirrors fvswe.backends.cpu.pipeline.wind_at).
__device__ __forceinline__ fv_tuple2<double, double> wind_at(const Ctrl* c, double t)
{
    const int hi = c->n_wind - 1;
    return forcing::wind_stress<double>(table_value(t, c->wind_times, c->wind_u, 0, hi),
                                        table_value(t, c->wind_times, c->wind_v, 0, hi),
                                        c->wind_law, c->wind_cd, c->wind_ratio);
}

// The forcing of an updated cell c (mirrors the CPU volume pass): the wind's tau / rho_w at
// the step's start t on the upper layer where wet, then every layer rotated by its Coriolis
// parameter (docs/SCHEMES.md §15), on the sphere plus its metric u tan(phi) / R (§20,
// FVSWE_SPHERE). In float64.
__device__ __forceinline__ void apply_forcing(real* w, int c, const Ctrl* ctrl, double t, double dt,
                                              real eps_h)
{
    fv_tuple2<double, double> a = {0.0, 0.0}, rot = {1.0, 0.0};  // tau / rho_w; (cos, sin)
    double f = 0.0;
    if (ctrl->n_wind > 0) a = wind_at(ctrl, t);
    if (ctrl->coriolis_f) {
        f = ctrl->coriolis_f[c];
        rot = forcing::rotation<double>(f, dt);
    }
#pragma unroll
    for (int l = 0; l < FVSWE_LAYERS; ++l) {
        real* layer = w + 3 * l;
#if FVSWE_SPHERE
        if (ctrl->sphere)
            rot = forcing::rotation<double>(sphere::metric_f<double>(f, double(layer[0]),
                                                                     double(layer[1]),
                                                                     ctrl->sphere[3 * c + 2],
                                                                     double(eps_h)), dt);
#endif
        const auto q = forcing::force_layer<double>(double(layer[0]), double(layer[1]),
                                                    double(layer[2]), rot.f0, rot.f1, a.f0, a.f1,
                                                    dt, double(eps_h), ctrl->n_wind > 0 && l == 0);
        layer[1] = real(q.f0);
        layer[2] = real(q.f1);
    }
}

// ---------------------------------------------------------------- the positivity limiter
// docs/SCHEMES.md §13.4, two layers (one layer: compiled out). After a step's normal pass,
// theta_l = h_l |V| / (dt out_l) (1 - LIMIT_MARGIN) in each layer whose outflow
// out_l = sum_s max(Phi_s, 0) would take more than the layer holds (1 elsewhere), where
// Phi_s = S_s[d] + |Gamma_s| q.n_s is the layer's mass flux out through slot s; then every
// slot's mass component is scaled by its donor's theta, S' = theta Phi - |Gamma| q.n (the same
// flux on both sides of an edge: mass kept to round-off), the donor keeping the momentum that
// mass no longer carries out, and the cells updated again damp below eps_u (limit_momentum,
// limit_cell_update: the CPU's triangle fix). Lazily: the normal pass lists the
// cells that may need it (limit_mark), and limit_theta and limit_update (service.cuh) return
// at once when it listed none.

// Whether cell c (old state w, area A) may have theta < 1 in a layer this step: a superset
// of those cells, since max(Phi, 0) <= max(S_d, 0) + |Gamma| |q|_1 (limiter::LIMIT_WIDEN covers the
// rounding of the sums).
__device__ __forceinline__ bool limit_candidate(const real* w, real A, const LimitSums& sums, double dt)
{
#if FVSWE_LAYERS == 2
#pragma unroll
    for (int l = 0; l < 2; ++l)
        if (limiter::is_candidate<real>(
                limiter::outflow_bound<real>(sums.out[l], sums.perimeter, w[3 * l + 1], w[3 * l + 2]),
                w[3 * l], A, real(dt)))
            return true;
#endif
    return false;
}

// limit_candidate, and if so cell c goes on the step's list of candidates.
__device__ __forceinline__ bool limit_mark(Ctrl* ctrl, int c, const real* w, real A,
                                          const LimitSums& sums, double dt)
{
    if (!limit_candidate(w, A, sums, dt)) return false;
    ctrl->lim_cells[atomicAdd(&ctrl->candidates, 1)] = c;
    return true;
}

#if FVSWE_SPHERE
// The metric rates -F_adv(W_c) . G_c of cell c's old state w, per component (docs/SCHEMES.md §20;
// mirrors the CPU's _metric), in double.
__device__ __forceinline__ void sphere_rates(const real* w, int c, const Ctrl* ctrl, real eps_h,
                                             double* rates)
{
    const double gx = ctrl->sphere[3 * c], gy = ctrl->sphere[3 * c + 1];
#pragma unroll
    for (int l = 0; l < FVSWE_LAYERS; ++l) {
        const auto r = sphere::metric_rates<double>(double(w[3 * l]), double(w[3 * l + 1]),
                                                    double(w[3 * l + 2]), gx, gy, double(eps_h));
        rates[3 * l] = r.f0;
        rates[3 * l + 1] = r.f1;
        rates[3 * l + 2] = r.f2;
    }
}
#endif

#ifndef FVSWE_SOURCES
#error "FVSWE_SOURCES (0 or 1) comes from fvswe.backends.gpu.compile_options"
#endif

#if FVSWE_SOURCES
// Cell c's layers after the step's point sources and rain (docs/SCHEMES.md §16; mirrors the CPU's
// _feed): each layer's depth rate the sum of its entries' weight times their table's mean over
// the step (source_means), added by sources::fed in double. Compiled only into the modules of
// runs with sources (FVSWE_SOURCES): inlined into every cell update, its double arithmetic
// cost the PVM-IFCP float32 block step ~3 % even with none.
__device__ __forceinline__ void feed(real* w, int c, const Ctrl* ctrl, double dt)
{
    double rate[2] = {0.0, 0.0};
    for (int e = ctrl->source_start[c]; e < ctrl->source_start[c + 1]; ++e) {
        const int k = ctrl->source_table[e];
        const int l = ctrl->source_layer[k];
        rate[l] = rate[l] + ctrl->source_weight[e] * ctrl->source_mean[k];
    }
#pragma unroll
    for (int l = 0; l < FVSWE_LAYERS; ++l) {
        real* layer = w + 3 * l;
        const auto f = sources::fed<double>(double(layer[0]), double(layer[1]), double(layer[2]),
                                            rate[l], dt);
        layer[0] = real(f.f0);
        layer[1] = real(f.f1);
        layer[2] = real(f.f2);
    }
}
#endif

// The update of cell c (old state w, depth H, area A) given the sum of its slots, over the
// step dt of the pass `op` (its forcing at pass_time): W_c -= dt/|V_c| sum(slots), feed,
// then per layer a negative depth clipped to 0 and the discharge of a layer thinner than
// eps_u (eps_h but in the cells the limiter updates again, limit_cell_update) damped to h u
// with the desingularised u = q inverse_depth(h, eps_u) (docs/SCHEMES.md §8, §13.4; 0 on a
// dry layer); then wind and Coriolis (apply_forcing), then friction (apply_friction);
// stored into Wout. The same operations in the same order as the CPU backend's volume_pass.
// A compensated state (FVSWE_COMPENSATED) adds the depths in float64, with dt/|V_c| in float64
// as the CPU, the remainders its update in Win left (update::compensated) and stores the new
// ones beside Wout as it forms them (the discharges as without); a clipped depth drops its
// remainder. Returns the layers clipped and those left thin (0 < h < eps_h), for count_cell.
__device__ __forceinline__ void update_cell(const real4* Win, real4* Wout, int c, real* w, real H,
                                            real A, const real* acc, const Ctrl* ctrl, real eps_h,
                                            real eps_u, int op, double dt, int& clipped, int& thin,
                                            const real* rest_in = nullptr)
{
    const real rdt = update::rate<real>(real(dt), A);
    clipped = 0;
    thin = 0;
#if FVSWE_COMPENSATED
    const double rdt64 = update::rate<double>(dt, double(A));  // as the CPU: dt/|V| in float64
#endif
#if FVSWE_SPHERE
    double metric[NVAR];  // the old state's metric rates (docs/SCHEMES.md §20; the CPU's _metric)
    if (ctrl->sphere) sphere_rates(w, c, ctrl, eps_h, metric);
#endif
#pragma unroll
    for (int m = 0; m < NVAR; ++m) {
#if FVSWE_COMPENSATED
        if (m % 3 == 0) {  // a depth: in float64 with its remainder; the discharges as without
            const double r = rest_in ? rest_in[m / 3] : *rest_of(Win, ctrl, c, m / 3);
            const double x = update::compensated<double>(double(w[m]), r, rdt64, double(acc[m]));
            w[m] = real(x);
            *rest_of(Wout, ctrl, c, m / 3) = real(update::remainder<double>(x, double(w[m])));
            continue;
        }
#endif
        w[m] = update::increment<real>(w[m], rdt, acc[m]);
    }
#if FVSWE_SPHERE
    if (ctrl->sphere) {
#pragma unroll
        for (int m = 0; m < NVAR; ++m)
            w[m] = real(sphere::metric_add<double>(double(w[m]), dt, metric[m]));
    }
#endif
#if FVSWE_SOURCES
    if (ctrl->n_sources) feed(w, c, ctrl, dt);
#endif
#pragma unroll
    for (int l = 0; l < FVSWE_LAYERS; ++l) {
        real* layer = w + 3 * l;
        if (layer[0] < real(0)) {
            layer[0] = real(0);
            ++clipped;
#if FVSWE_COMPENSATED
            *rest_of(Wout, ctrl, c, l) = real(0);
#endif
        } else if (layer[0] < eps_h && layer[0] > real(0)) {
            ++thin;
        }
        if (layer[0] < eps_u) {
            const auto q = update::damped<real>(layer[0], layer[1], layer[2], eps_u);
            layer[1] = q.f0;
            layer[2] = q.f1;
        }
    }
#if FVSWE_SPHERE
    const bool sphere = ctrl->sphere != nullptr;
#else
    const bool sphere = false;
#endif
    if (ctrl->n_wind > 0 || ctrl->coriolis_f || sphere)
        apply_forcing(w, c, ctrl, pass_time(ctrl, op), dt, eps_h);
    if (ctrl->friction || ctrl->interfacial_coef) apply_friction(w, ctrl, c, dt);
    store_cell(Wout, c, w, H, A);
}

// Count cell c's clipped and thin layers (signed: a recomputed cell takes back the count of
// the value it replaces) and record it as clipped in this step.
__device__ __forceinline__ void count_cell(Ctrl* ctrl, int c, int clipped, int thin)
{
    if (clipped) {
        atomicAdd(&ctrl->clipped, (unsigned long long)clipped);
        if (ctrl->clip_step == 0) atomicMin(&ctrl->clip_cell, c - NO_CELL);
    }
    if (thin) atomicAdd(&ctrl->thin_cells, (unsigned long long)(long long)thin);
}

// Close cell c given the sum of its slots: dt_c = 2 cfl |V_c| / sum(|Gamma| ||D||) (returned
// when op & OP_DT, else inf) and, when op & OP_UPDATE, update_cell over the current step.
// A cell that the limiter may have to change (limit_mark: a candidate) is left uncounted:
// limit_update recomputes and counts it.
__device__ __forceinline__ real close_cell(const real4* Win, real4* Wout, int c, real* w, real H, real A,
                                          const real* acc, const LimitSums& sums, Ctrl* ctrl,
                                          real eps_h, int op, const real* rest_in = nullptr)
{
    real dti = REAL_INF;
    if ((op & OP_DT) && acc[NVAR] > real(0)) dti = update::stable_dt<real>(real(2 * ctrl->cfl), A, acc[NVAR]);
    if (op & OP_UPDATE) {
        const double dt = step_dt(ctrl);
        // a fixed dt (the only update that also reduces dt with ctrl->fixed) above this
        // cell's stable step: Courant number dt cfl / dt_c > 1
        if ((op & OP_DT) && ctrl->fixed && ctrl->cfl_step == 0 && double(dti) < dt * ctrl->cfl)
            atomicMin(&ctrl->cfl_cell, c - NO_CELL);
        const bool candidate = limit_mark(ctrl, c, w, A, sums, dt);
        int clipped, thin;
        update_cell(Win, Wout, c, w, H, A, acc, ctrl, eps_h, eps_h, op, dt, clipped, thin, rest_in);
        if (!candidate) count_cell(ctrl, c, clipped, thin);
    }
    return dti;
}

#if FVSWE_LAYERS == 2
// The marks of lim_claim: a candidate (set by limit_theta), recomputed (by limit_update).
#define LIM_CANDIDATE 1
#define LIM_CLAIMED 2

// Slot s of a cell (old state w, depth H) in the step just taken (from t_step): its values
// v (edge_contribution, flags not counted again) and per layer the mass flux out of the cell
// Phi = S_d + |Gamma| (q.n_out) and |Gamma| (q.n_out), n_out the normal out of the cell,
// q.n_out = qx nx + qy ny (two products, one sum). Returns the slot's code.
__device__ __forceinline__ int limit_slot(const real4* __restrict__ Win, const real* w, real H, int s,
                                          const int* __restrict__ code,
                                          const real2* __restrict__ normal,
                                          const real* __restrict__ length, const Params& prm,
                                          Ctrl* ctrl, real* v, real* phi, real* lqn)
{
    const int cd = __ldg(code + s);
    const real2 n = __ldg(normal + s);
    const real len = __ldg(length + s);
    edge_contribution(Win, w, H, s, cd, n, len, prm, ctrl, OP_AFTER, v);
    const bool side_j = cd >= 0 && (cd & 1);
    const real nx = side_j ? -n.x : n.x, ny = side_j ? -n.y : n.y;
#pragma unroll
    for (int l = 0; l < 2; ++l) {
        const auto f = limiter::mass_flux<real>(v[3 * l], len, w[3 * l + 1], w[3 * l + 2], nx, ny);
        phi[l] = f.f0;
        lqn[l] = f.f1;
    }
    return cd;
}

// theta of candidate c from the old state (Win), into lim_theta where < 1 (and counted in
// `limited`); marks c as a candidate for limit_update.
__device__ __forceinline__ void limit_cell_theta(const real4* __restrict__ Win,
                                                 const real* __restrict__ area, int c,
                                                 const int* __restrict__ code,
                                                 const real2* __restrict__ normal,
                                                 const real* __restrict__ length, const Params& prm,
                                                 Ctrl* ctrl)
{
    real w[NVAR], H, v[NVAR + 1], phi[2], lqn[2], out[2] = {real(0), real(0)};
    load_cell(Win, c, w, H);
#pragma unroll
    for (int k = 0; k < FVSWE_K; ++k) {
        limit_slot(Win, w, H, c * FVSWE_K + k, code, normal, length, prm, ctrl, v, phi, lqn);
#pragma unroll
        for (int l = 0; l < 2; ++l) out[l] = add_rn(out[l], phi[l] > real(0) ? phi[l] : real(0));
    }
    const real A = cell_area(Win, area, c);
#pragma unroll
    for (int l = 0; l < 2; ++l) {
        const real theta = limiter::theta<real>(w[3 * l], A, real(ctrl->dt_used), out[l], LIMIT_MARGIN);
        if (theta < real(1)) {
            ctrl->lim_theta[2 * c + l] = theta;
            atomicAdd(&ctrl->limited, 1ULL);
        }
    }
    ctrl->lim_claim[c] = LIM_CANDIDATE;
}

// The momentum that a limited slot's mass no longer carries out, kept by the donor (old state
// wd, its depth column d): limiter::donor_momentum in double, as the CPU backend, each result
// rounded to the slot's type.
__device__ __forceinline__ void limit_momentum(real* v, int d, const real* wd, double th, real phi,
                                               real eps_h)
{
    const auto q = limiter::donor_momentum<double>(double(v[d + 1]), double(v[d + 2]), th, double(phi),
                                                   double(wd[d]), double(wd[d + 1]),
                                                   double(wd[d + 2]), double(eps_h));
    v[d + 1] = real(q.f0);
    v[d + 2] = real(q.f1);
}

// Whether a layer of cell c has theta < 1 this step.
__device__ __forceinline__ bool limited_cell(const double* theta, int c)
{
    return theta[2 * c] < 1.0 || theta[2 * c + 1] < 1.0;
}

// Cell c's update again from the old state (Win) with each slot's mass components scaled by
// the donor's theta (a boundary ghost's is 1): S'_d = theta Phi - |Gamma| q.n where theta < 1
// and Phi != 0, else S_d bit for bit, and the donor keeping the momentum this mass no longer
// carries out (limit_momentum); a scaled level-boundary slot records theta Phi as its outward
// flux. A cell limited or beside a limited one (a halo cell's theta from its owner) damps
// layers thinner than eps_u = EPS_U_RATIO eps_h (docs/SCHEMES.md §13.4), as the CPU backend's
// limited_update. A candidate is counted (it was not); any other cell only where it is
// updated again, taking back the thin layers of the value it replaces.
__device__ __forceinline__ void limit_cell_update(const real4* __restrict__ Win, real4* Wout,
                                                  const real* __restrict__ area, int c,
                                                  bool candidate, const int* __restrict__ code,
                                                  const real2* __restrict__ normal,
                                                  const real* __restrict__ length, const Params& prm,
                                                  Ctrl* ctrl)
{
    const double* theta = ctrl->lim_theta;
    real w[NVAR], H, acc[NVAR + 1], v[NVAR + 1], phi[2], lqn[2], wd[NVAR], Hd;
    bool around = limited_cell(theta, c);
    load_cell(Win, c, w, H);
#pragma unroll
    for (int k = 0; k < FVSWE_K; ++k) {
        const int cd = limit_slot(Win, w, H, c * FVSWE_K + k, code, normal, length, prm, ctrl, v, phi,
                                  lqn);
        if (cd >= 0 && limited_cell(theta, cd >> 1)) around = true;
#pragma unroll
        for (int l = 0; l < 2; ++l) {
            const int donor = phi[l] > real(0) ? c : cd >= 0 ? cd >> 1 : -1;
            const double th = donor < 0 ? 1.0 : theta[2 * donor + l];
            if (th != 1.0 && phi[l] != real(0)) {
                v[3 * l] = real(limiter::limited_mass<double>(th, double(phi[l]), double(lqn[l])));
                if (donor == c) {
                    limit_momentum(v, 3 * l, w, th, phi[l], prm.eps_h);
                } else {
                    load_cell(Win, donor, wd, Hd);
                    limit_momentum(v, 3 * l, wd, th, phi[l], prm.eps_h);
                }
                if (cd < 0 && has_tables(bc_kind(-cd)))
                    ctrl->level_flux[2 * (-cd >> BC_BITS) + l] = mul_rn(th, double(phi[l]));
            }
        }
#pragma unroll
        for (int m = 0; m <= NVAR; ++m) acc[m] = k == 0 ? v[m] : add_rn(acc[m], v[m]);
    }
    if (!candidate && !around) return;  // the normal pass's value stands, counted
    int thin_before = 0;
    if (!candidate) {  // the normal pass's depths (plain loads: Wout changes in this kernel)
        for (int l = 0; l < 2; ++l) {
            const real h = Wout[(size_t)c * NVEC + l].x;
            thin_before += h > real(0) && h < prm.eps_h;
        }
    }
    const real eps_u = around ? real(EPS_U_RATIO * double(prm.eps_h)) : prm.eps_h;
    int clipped, thin;
    update_cell(Win, Wout, c, w, H, cell_area(Win, area, c), acc, ctrl, prm.eps_h, eps_u, OP_AFTER,
                ctrl->dt_used, clipped, thin);
    count_cell(ctrl, c, clipped, thin - thin_before);
}
#endif

// An idle step (past t_end or max_steps) of a double-buffered variant still hands cell c
// to the other buffer, so that the buffer holding the state depends only on how many
// steps a graph contains.
__device__ __forceinline__ void pass_cell(const real4* __restrict__ Win, real4* Wout, int c,
                                          const Ctrl* ctrl)
{
#pragma unroll
    for (int v = 0; v < NVEC; ++v) st4(Wout + (size_t)c * NVEC + v, ld4(Win + (size_t)c * NVEC + v));
#if FVSWE_COMPENSATED
    real rest[FVSWE_LAYERS];
    load_rest(Win, ctrl, c, rest);
    store_rest(Wout, ctrl, c, rest);
#endif
}

