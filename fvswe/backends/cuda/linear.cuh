// The linear reconstruction on the GPU (docs/SCHEMES.md §19): the CPU's troubled_pass and
// faces_pass (fvswe/backends/cpu/kernels.py), the same formulas (reconstruction::*, emitted
// into physics.cuh, all in double as the CPU's) in the same order, so that a float64 run is the
// CPU's bit for bit. Before each residual: troubled_pass flags the troubled cells and reduces
// the variables' range over the others (the limiter's scale), faces_pass writes each owned
// cell's face states and beds into its own slots (a gather over its neighbours, one writer per
// slot, no atomics but the first-order count), interior_pass each owned slot's cell-interior
// term (rounded to real: float32 runs store it in float32, the CPU keeps float64); the edge
// evaluation then reads the slots' face states and interior terms (edge_contribution,
// block_edge, edge_pass). Compiled only
// into linear modules (FVSWE_LINEAR): a first-order module has none of it.
#pragma once

// The 7 reconstruction variables of a cell state w on the bed H (reconstruction::variables).
__device__ __forceinline__ auto lin_variables(const real* w, real H)
{
    return reconstruction::variables<double>(widen(w), double(H), FVSWE_LAYERS);
}

// The block's smallest lo[v] and largest hi[v] (v < 7) into out[0..13] of thread 0, by the
// warps' butterflies then the warps in turn (min and max are exact: any order gives them).
__device__ __forceinline__ void lin_block_range(double* lo, double* hi, double* out)
{
    __shared__ double part[FVSWE_BLOCK / 32][14];
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
            double x = part[0][v];
            for (int w = 1; w < FVSWE_BLOCK / 32; ++w) x = v < 7 ? fmin(x, part[w][v]) : fmax(x, part[w][v]);
            out[v] = x;
        }
}

// Cells 0 .. n_cells-1 (a part's halo too), a grid of at most TROUBLED_BLOCKS blocks striding
// over them: troubled flag (reconstruction::troubled) into lin_troubled, and the range of the
// variables of the cells that are not troubled: per block into lin_partial, then the last block
// reduces them into lin_extent (the CPU's extent). Few blocks keep that last block's walk
// over the partials short (a block a 224 cells left it 9 300 partials, one SM working).
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
troubled_pass(const int n_cells, const real4* __restrict__ Win, Ctrl* ctrl)
{
    if (!step_active(ctrl)) return;
    const double inf = __longlong_as_double(0x7ff0000000000000LL);
    double lo[7], hi[7];
    for (int v = 0; v < 7; ++v) {
        lo[v] = inf;
        hi[v] = -inf;
    }
    for (int c = blockIdx.x * FVSWE_BLOCK + threadIdx.x; c < n_cells; c += gridDim.x * FVSWE_BLOCK) {
        real w[NVAR], H;
        load_cell(Win, c, w, H);
        const bool bad = reconstruction::troubled<double>(widen(w), FVSWE_LAYERS, ctrl->g, ctrl->r,
                                                          ctrl->eps_h);
        ctrl->lin_troubled[c] = bad ? 1 : 0;
        if (!bad) {
            const auto V = lin_variables(w, H);
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
        lo[v] = inf;
        hi[v] = -inf;
    }
    for (int b = threadIdx.x; b < gridDim.x; b += FVSWE_BLOCK) {
        const double* part = ctrl->lin_partial + 14 * (size_t)b;
#pragma unroll
        for (int v = 0; v < 7; ++v) {
            lo[v] = fmin(lo[v], __ldcg(part + v));
            hi[v] = fmax(hi[v], __ldcg(part + 7 + v));
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
__device__ __forceinline__ void lin_store_face(Ctrl* ctrl, int s, const State& Wf, double Hf)
{
    real w[NVAR];
#pragma unroll
    for (int m = 0; m < NVAR; ++m) w[m] = real(fv_at(Wf, m));
    store_cell(static_cast<real4*>(ctrl->lin_faces), s, w, real(Hf), real(0));
}

// Cell c's neighbours for faces_pass: slot m's state and bed (a ghost, or no edge: the cell's
// own), and whether neither the cell nor a neighbour is troubled (the CPU's _gradient, which
// stops at the first troubled one); read once, the variables then taken one at a time.
struct LinNeighbours {
    real w[FVSWE_K][NVAR];
    real H[FVSWE_K];
    bool ok;
};

__device__ __forceinline__ LinNeighbours lin_neighbours(const real4* __restrict__ Win, int c,
                                                        const real* w, real H,
                                                        const int* __restrict__ code, const Ctrl* ctrl)
{
    LinNeighbours nb;
    nb.ok = ctrl->lin_troubled[c] == 0;
#pragma unroll
    for (int m = 0; m < FVSWE_K; ++m) {
        const int s = c * FVSWE_K + m;
        const int j = ctrl->lin_slot[s] >= 0 ? __ldg(code + s) >> 1 : -1;
        if (j >= 0) nb.ok = nb.ok && ctrl->lin_troubled[j] == 0;
        if (j >= 0 && nb.ok) {
            load_cell(Win, j, nb.w[m], nb.H[m]);
        } else {
#pragma unroll
            for (int q = 0; q < NVAR; ++q) nb.w[m][q] = w[q];
            nb.H[m] = H;
        }
    }
    return nb;
}

// Per thread of faces_pass, per variable v: its value vi at the cell, its limiter factor phi and
// its gradient (gx, gy), which face_state reads (thread-minor: no bank conflicts).
#ifndef FVSWE_FACES_BLOCK
#error "FVSWE_FACES_BLOCK (faces_pass's threads a block) comes from fvswe.backends.gpu.compile_options"
#endif
struct LinScratch {
    double at[7][4][FVSWE_FACES_BLOCK];
};

// Row q of slot m of cell c in lin_geom (wx, wy, ox, oy; a row of a value per cell, `cells` long).
__device__ __forceinline__ double lin_geom(const Ctrl* ctrl, int cells, int c, int m, int q)
{
    return __ldg(ctrl->lin_geom + (size_t)(4 * m + q) * cells + c);
}

// Variable v of cell c (the CPU's _gradient and limited, one variable at a time: the same
// operations in the same order as the 7-tuples' reconstruction::lsq_sums, bounds and limited):
// its least-squares gradient over the neighbours (a ghost: the cell's own value), their bounds,
// then its Venkatakrishnan factor over the faces, into sc.at[v][*][threadIdx.x].
__device__ __forceinline__ void lin_variable(int c, int cells, int v, double vi, const LinNeighbours& nb,
                                             const Ctrl* ctrl, LinScratch& sc)
{
    double gx = 0.0, gy = 0.0, lo = vi, hi = vi;
#pragma unroll
    for (int m = 0; m < FVSWE_K; ++m) {
        const double vj = reconstruction::variable<double>(widen(nb.w[m]), double(nb.H[m]),
                                                           FVSWE_LAYERS, v);
        gx = reconstruction::lsq_term<double>(gx, lin_geom(ctrl, cells, c, m, 0), vj, vi);
        gy = reconstruction::lsq_term<double>(gy, lin_geom(ctrl, cells, c, m, 1), vj, vi);
        const auto b = reconstruction::bound<double>(lo, hi, vj);
        lo = b.f0;
        hi = b.f1;
    }
    const double* e = ctrl->lin_extent;
    const double e2 = reconstruction::eps2<double>(fmax(e[7 + v] - e[v], 0.0));
    double phi = 1.0;
#pragma unroll
    for (int m = 0; m < FVSWE_K; ++m) {
        const double delta = reconstruction::increment<double>(gx, gy, lin_geom(ctrl, cells, c, m, 2),
                                                               lin_geom(ctrl, cells, c, m, 3));
        phi = reconstruction::venkat_factor<double>(phi, vi, lo, hi, delta, e2);
    }
    const int t = threadIdx.x;
    sc.at[v][0][t] = vi;
    sc.at[v][1][t] = phi;
    sc.at[v][2][t] = gx;
    sc.at[v][3][t] = gy;
}

// One of the 7-tuples of sc for this thread (k: 0 the values, 1 phi, 2 gx, 3 gy).
__device__ __forceinline__ auto lin_tuple(const LinScratch& sc, int k)
{
    const int t = threadIdx.x;
    return fv_make(sc.at[0][k][t], sc.at[1][k][t], sc.at[2][k][t], sc.at[3][k][t], sc.at[4][k][t],
                   sc.at[5][k][t], sc.at[6][k][t]);
}

// Cell c's face states from its variables (sc) into its slots (the second half of the CPU's
// _reconstruct_cell's face loop); returns whether no face depth is negative.
__device__ __forceinline__ bool lin_face_states(int c, int cells, const LinScratch& sc, Ctrl* ctrl)
{
    bool ok = true;
    for (int m = 0; m < FVSWE_K; ++m) {
        const auto f = reconstruction::face_state<double>(
            lin_tuple(sc, 1), lin_tuple(sc, 0), lin_tuple(sc, 2), lin_tuple(sc, 3),
            lin_geom(ctrl, cells, c, m, 2), lin_geom(ctrl, cells, c, m, 3), FVSWE_LAYERS);
        ok = ok && f.f0.f0 >= 0 && f.f0.f3 >= 0;
        lin_store_face(ctrl, c * FVSWE_K + m, f.f0, f.f1);
    }
    return ok;
}

// Cells 0 .. n_cells-1 (owned; `cells` all, lin_geom's row length): face states and beds into
// their own slots (the first half of the CPU's _reconstruct_cell), the neighbours read once,
// then one variable at a time (lin_variable: a thread held all 7 variables' sums and bounds at
// once before, 128 registers and 2 blocks an SM); a cell that falls back to first order
// (troubled, or a face depth negative) gets its own state in every slot, is marked in
// lin_fallback (its slots get no interior term) and is counted (op & OP_COUNT) in first_order.
// code: the slots' codes (the gather variant's table).
extern "C" __global__ void __launch_bounds__(FVSWE_FACES_BLOCK, 4)
faces_pass(const int n_cells, const int cells, const real4* __restrict__ Win,
           const int* __restrict__ code, Ctrl* ctrl, const int op)
{
    __shared__ LinScratch sc;
    if (!step_active(ctrl)) return;
    const int c = blockIdx.x * FVSWE_FACES_BLOCK + threadIdx.x;
    if (c >= n_cells) return;
    real w[NVAR], H;
    load_cell(Win, c, w, H);
    bool ok;
    {
        const LinNeighbours nb = lin_neighbours(Win, c, w, H, code, ctrl);
        ok = nb.ok;
        if (ok)
#pragma unroll 1
            for (int v = 0; v < 7; ++v)
                lin_variable(c, cells, v, reconstruction::variable<double>(widen(w), double(H), FVSWE_LAYERS, v),
                             nb, ctrl, sc);
    }
    if (ok) ok = lin_face_states(c, cells, sc, ctrl);
    ctrl->lin_fallback[c] = ok ? 0 : 1;
    if (ok) return;
    if (op & OP_COUNT) atomicAdd(&ctrl->first_order, 1ULL);
    for (int m = 0; m < FVSWE_K; ++m) store_cell(static_cast<real4*>(ctrl->lin_faces), c * FVSWE_K + m, w, H, real(0));
}

// Slots 0 .. n_slots-1 (the owned cells'), a thread each: their cell-interior terms
// (lin_interior) into lin_interior, zero where the slot has no edge. A pass of its own, a
// thread a slot: within faces_pass (a thread a cell) it held 151 registers, 10 % occupancy on
// the H100. The block variant forms the terms in block_step instead (none stored, no launch).
// code, normal, length: the slots' (the gather variant's per-slot tables).
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
interior_pass(const int n_slots, const real4* __restrict__ Win, const int* __restrict__ code,
              const real2* __restrict__ normal, const real* __restrict__ length, Ctrl* ctrl)
{
    if (!step_active(ctrl)) return;
    const int s = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (s >= n_slots) return;
    real* B = static_cast<real*>(ctrl->lin_interior) + (size_t)s * NVAR;
    if (ctrl->lin_slot[s] == -2) {
#pragma unroll
        for (int v = 0; v < NVAR; ++v) B[v] = real(0);
        return;
    }
    const int cd = __ldg(code + s);
    const real2 n = __ldg(normal + s);
    const bool side_j = cd >= 0 && (cd & 1);
    real b[NVAR];
    lin_interior(Win, ctrl, s / FVSWE_K, s, side_j ? -n.x : n.x, side_j ? -n.y : n.y,
                 __ldg(length + s), b);
#pragma unroll
    for (int v = 0; v < NVAR; ++v) B[v] = b[v];
}
