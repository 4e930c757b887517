// The linear reconstruction on the GPU (docs/SCHEMES.md §19): the CPU's troubled_pass and
// faces_pass (fvswe/backends/cpu/kernels.py), the same formulas (reconstruction::*, emitted
// into physics.cuh) in the same order, at the module's real type: a float64 module performs the
// CPU's operations, so that its run is the CPU's bit for bit; a float32 module reconstructs in
// float (issue 27 "Cost"; the CPU widens the float32 state to double). Before each residual:
// troubled_pass flags the troubled cells, stores the others' variables (lin_vars) and reduces
// their range (the limiter's scale), faces_pass writes each owned cell's face states and beds
// into its own slots (a gather over its neighbours, one writer per slot, no atomics but the
// first-order count), interior_pass each owned slot's cell-interior term; the edge evaluation then reads
// the slots' face states and interior terms (edge_contribution, block_edge, edge_pass).
// Compiled only into linear modules (FVSWE_LINEAR): a first-order module has none of it.
#pragma once

// The 7 reconstruction variables of a cell state w on the bed H (reconstruction::variables),
// in real.
__device__ __forceinline__ auto lin_variables(const real* w, real H)
{
    return reconstruction::variables<real>(pad6(w), H, FVSWE_LAYERS);
}

// Cell c's variables V and troubled flag into lin_vars (two real4s a cell: V0..V3, then V4..V6
// and 1 where troubled, else 0), by troubled_pass; faces_pass reads them back together
// (lin_load_variables: a neighbour's flag and variables one 32-byte sector in float32), bit for
// bit the values it computed before (issue 27 "Cost": the variables once a cell a stage, not
// four times).
template <class Vars>
__device__ __forceinline__ void lin_store_variables(Ctrl* ctrl, int c, const Vars& V, bool troubled)
{
    real4* p = static_cast<real4*>(ctrl->lin_vars) + 2 * (size_t)c;
    st4(p, real4{fv_at(V, 0), fv_at(V, 1), fv_at(V, 2), fv_at(V, 3)});
    st4(p + 1, real4{fv_at(V, 4), fv_at(V, 5), fv_at(V, 6), real(troubled ? 1 : 0)});
}

// Cell c's variables as troubled_pass stored them (zeros where troubled) and its flag.
__device__ __forceinline__ auto lin_load_variables(const Ctrl* ctrl, int c, bool& troubled)
{
    const real4* p = static_cast<const real4*>(ctrl->lin_vars) + 2 * (size_t)c;
    const real4 a = ld4(p), b = ld4(p + 1);
    troubled = b.w != real(0);
    return fv_make(a.x, a.y, a.z, a.w, b.x, b.y, b.z);
}

// The block's smallest lo[v] and largest hi[v] (v < 7) into out[0..13] of thread 0, by the
// warps' butterflies then the warps in turn (min and max are exact: any order gives them).
__device__ __forceinline__ void lin_block_range(real* lo, real* hi, double* out)
{
    __shared__ real part[FVSWE_BLOCK / 32][14];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int v = 0; v < 7; ++v) {
        for (int o = 16; o > 0; o >>= 1) {
            lo[v] = fmin(lo[v], __shfl_xor_sync(0xffffffffu, lo[v], o));
            hi[v] = fmax(hi[v], __shfl_xor_sync(0xffffffffu, hi[v], o));
        }
    }
    __syncthreads();
    if (lane == 0)
        for (int v = 0; v < 7; ++v) {
            part[warp][v] = lo[v];
            part[warp][7 + v] = hi[v];
        }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int v = 0; v < 14; ++v) {
            real x = part[0][v];
            for (int w = 1; w < FVSWE_BLOCK / 32; ++w) x = v < 7 ? fmin(x, part[w][v]) : fmax(x, part[w][v]);
            out[v] = x;
        }
}

// Cells 0 .. n_cells-1 (a part's halo too), a grid of at most TROUBLED_BLOCKS blocks striding
// over them: troubled flag (reconstruction::troubled) and the variables of the cells that are
// not troubled (zeros for the others: faces_pass uses no troubled cell's, as such a cell or
// neighbour makes the cell first order) into lin_vars, every cell, halo too; the range of
// those variables per block into lin_partial, then the last block reduces them into
// lin_extent (the CPU's extent). Few blocks keep that last block's walk over the partials
// short (a block a 224 cells left it 9 300 partials, one SM working).
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
troubled_pass(const int n_cells, const real4* __restrict__ Win, Ctrl* ctrl)
{
    if (!step_active(ctrl)) return;
    real lo[7], hi[7];
    for (int v = 0; v < 7; ++v) {
        lo[v] = REAL_INF;
        hi[v] = -REAL_INF;
    }
    for (int c = blockIdx.x * FVSWE_BLOCK + threadIdx.x; c < n_cells; c += gridDim.x * FVSWE_BLOCK) {
        real w[NVAR], H;
        load_cell(Win, c, w, H);
        // eps_h in double: the thin test is the CPU's in either precision
        const bool bad = reconstruction::troubled<real>(pad6(w), FVSWE_LAYERS, real(ctrl->g),
                                                        real(ctrl->r), ctrl->eps_h);
        if (bad) {
            const real z = real(0);
            lin_store_variables(ctrl, c, fv_make(z, z, z, z, z, z, z), true);
        } else {
            const auto V = lin_variables(w, H);
            lin_store_variables(ctrl, c, V, false);
            for (int v = 0; v < 7; ++v) {
                lo[v] = fmin(lo[v], fv_at(V, v));
                hi[v] = fmax(hi[v], fv_at(V, v));
            }
        }
    }
    lin_block_range(lo, hi, ctrl->lin_partial + 14 * (size_t)blockIdx.x);
    if (!last_block(ctrl)) return;
    // a block's 14 values in one go (L2 loads, none waiting on the one before: a volatile
    // load per variable in turn waited on each partial's latency)
    for (int v = 0; v < 7; ++v) {
        lo[v] = REAL_INF;
        hi[v] = -REAL_INF;
    }
    for (int b = threadIdx.x; b < gridDim.x; b += FVSWE_BLOCK) {
        const double* part = ctrl->lin_partial + 14 * (size_t)b;
#pragma unroll
        for (int v = 0; v < 7; ++v) {
            lo[v] = fmin(lo[v], real(__ldcg(part + v)));  // reals: exact either way
            hi[v] = fmax(hi[v], real(__ldcg(part + 7 + v)));
        }
    }
    lin_block_range(lo, hi, ctrl->lin_extent);
    if (threadIdx.x == 0) {
        ctrl->blocks_done = 0;
        __threadfence();
    }
}

// The face state of slot s written: its 6-tuple Wf (NVAR of it) and bed Hf rounded to real.
template <class State>
__device__ __forceinline__ void lin_store_face(Ctrl* ctrl, int s, const State& Wf, real Hf)
{
    real w[NVAR];
#pragma unroll
    for (int m = 0; m < NVAR; ++m) w[m] = fv_at(Wf, m);
    store_cell(static_cast<real4*>(ctrl->lin_faces), s, w, Hf, real(0));
}

// Row q of slot m of cell c in lin_geom (wx, wy, ox, oy): rows of a value per cell, `cells`
// long, so that a warp's threads (consecutive cells) read a row together; reals (a float32
// module's are the CPU's float64 values rounded).
__device__ __forceinline__ real lin_geom(const Ctrl* ctrl, int cells, int c, int m, int q)
{
    return __ldg(static_cast<const real*>(ctrl->lin_geom) + (size_t)(4 * m + q) * cells + c);
}

// Cell c's gradients, limiter factors and face states (the CPU's _gradient and the first half
// of _reconstruct_cell); returns whether it stays linear (not troubled, nor a neighbour, and
// no face depth negative). code: the slots' codes (2 * neighbour + side, or minus a boundary).
// The variables and flags are troubled_pass's (lin_vars).
__device__ __forceinline__ bool lin_faces(int c, int cells, const int* __restrict__ code, Ctrl* ctrl)
{
    bool bad;
    const auto Vi = lin_load_variables(ctrl, c, bad);
    if (bad) return false;
    bool ok = true;
    const real z = real(0);
    auto gx = fv_make(z, z, z, z, z, z, z);
    auto gy = gx;
    auto lo = Vi, hi = Vi;
    for (int m = 0; m < FVSWE_K; ++m) {
        const int s = c * FVSWE_K + m;
        const int j = ctrl->lin_slot[s] >= 0 ? __ldg(code + s) >> 1 : -1;
        auto Vj = Vi;
        if (j >= 0 && ok) {
            const auto V = lin_load_variables(ctrl, j, bad);
            ok = !bad;
            if (ok) Vj = V;
        }
        if (ok) {
            const auto g2 = reconstruction::lsq_sums<real>(gx, gy, Vi, Vj, lin_geom(ctrl, cells, c, m, 0),
                                                           lin_geom(ctrl, cells, c, m, 1));
            gx = g2.f0;
            gy = g2.f1;
            const auto b = reconstruction::bounds<real>(lo, hi, Vj);
            lo = b.f0;
            hi = b.f1;
        }
    }
    if (!ok) return false;
    const double* e = ctrl->lin_extent;
    real sp[7];  // e holds reals (troubled_pass): exact either way
    for (int v = 0; v < 7; ++v) sp[v] = fmax(real(e[7 + v]) - real(e[v]), real(0));
    const auto span = fv_make(sp[0], sp[1], sp[2], sp[3], sp[4], sp[5], sp[6]);
    const real one = real(1);
    auto phi = fv_make(one, one, one, one, one, one, one);
    for (int m = 0; m < FVSWE_K; ++m)
        phi = reconstruction::limited<real>(phi, Vi, gx, gy, lo, hi, lin_geom(ctrl, cells, c, m, 2),
                                            lin_geom(ctrl, cells, c, m, 3), span);
    for (int m = 0; m < FVSWE_K; ++m) {
        const auto f = reconstruction::face_state<real>(phi, Vi, gx, gy, lin_geom(ctrl, cells, c, m, 2),
                                                        lin_geom(ctrl, cells, c, m, 3), FVSWE_LAYERS);
        ok = ok && f.f0.f0 >= 0 && f.f0.f3 >= 0;
        lin_store_face(ctrl, c * FVSWE_K + m, f.f0, f.f1);
    }
    return ok;
}

#ifndef FVSWE_FACES_BLOCK
#error "FVSWE_FACES_BLOCK (faces_pass's threads a block) comes from fvswe.backends.gpu.compile_options"
#endif
// Cells 0 .. n_cells-1 (owned; `cells` all, lin_geom's row length): face states and beds into
// their own slots (the first half of the CPU's _reconstruct_cell); a cell that falls back to
// first order gets its own state in every slot, is marked in lin_fallback (its slots get no
// interior term) and is counted (op & OP_COUNT) in first_order. code: the slots' codes (the
// gather variant's table). Blocks of FVSWE_FACES_BLOCK threads (128), four an SM (at most 128
// registers), whatever the module's block. Measured on the H200 (PVM-IFCP float32, 2.08 M
// cells, one stage under Nsight Compute): 525 us with the geometry a slot's 4 values together
// and 224-thread blocks, 514 us so; one variable at a time (the neighbours in registers, the
// variables' values, factors and gradients in shared memory) took 550 us.
extern "C" __global__ void __launch_bounds__(FVSWE_FACES_BLOCK, 4)
faces_pass(const int n_cells, const int cells, const real4* __restrict__ Win,
           const int* __restrict__ code, Ctrl* ctrl, const int op)
{
    if (!step_active(ctrl)) return;
    const int c = blockIdx.x * FVSWE_FACES_BLOCK + threadIdx.x;
    if (c >= n_cells) return;
    const bool ok = lin_faces(c, cells, code, ctrl);
    ctrl->lin_fallback[c] = ok ? 0 : 1;
    if (ok) return;
    if (op & OP_COUNT) atomicAdd(&ctrl->first_order, 1ULL);
    real w[NVAR], H;
    load_cell(Win, c, w, H);
    for (int m = 0; m < FVSWE_K; ++m) store_cell(static_cast<real4*>(ctrl->lin_faces), c * FVSWE_K + m, w, H, real(0));
}

#if !FVSWE_INTERIOR_IN_STEP
// Slots 0 .. n_slots-1 (the owned cells'), a thread each: their cell-interior terms
// (slot_interior) into lin_interior, zero where the slot has no edge. A pass of its own, a
// thread a slot: within faces_pass (a thread a cell) it held 151 registers, 10 % occupancy on
// the H100. A block module forms the terms where it uses them instead (none stored, no pass).
// code, normal, length: the slots' (the gather variant's per-slot tables).
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
interior_pass(const int n_slots, const real4* __restrict__ Win, const int* __restrict__ code,
              const real2* __restrict__ normal, const real* __restrict__ length, Ctrl* ctrl)
{
    if (!step_active(ctrl)) return;
    const int s = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (s >= n_slots) return;
    real b[NVAR];
    slot_interior(Win, ctrl, s, __ldg(code + s), __ldg(normal + s), __ldg(length + s), b);
    real* B = static_cast<real*>(ctrl->lin_interior) + (size_t)s * NVAR;
#pragma unroll
    for (int v = 0; v < NVAR; ++v) B[v] = b[v];
}
#endif
