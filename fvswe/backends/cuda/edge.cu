// Edge-based variant (the paper's design): the edge pass evaluates each edge once and
// writes |Gamma| F-, |Gamma| F+ and |Gamma| ||D|| into the per-cell slots it owns
// (no atomics); the volume pass sums each cell's slots in local order, updates the
// cell and reduces dt. Two or three launches per step (and the limiter's two, service.cuh);
// CUDA graphs hide them. Reads Win and writes Wout, so the host alternates two buffers and
// the step's old state stays for the limiter.
#include "pipeline.cuh"

#if FVSWE_LINEAR
// Slot s of a linear module: store_slot's values, |Gamma| F plus the slot's cell-interior term.
__device__ __forceinline__ void store_linear(real4* S, const Ctrl* ctrl, int s, const real* F, real d,
                                             real len)
{
    real v[NVAR];
#pragma unroll
    for (int m = 0; m < NVAR; ++m) v[m] = with_interior(ctrl, s, m, mul_rn(len, F[m]));
#if FVSWE_LAYERS == 2
    st4(S + (size_t)s * NVEC, real4{v[0], v[1], v[2], v[3]});
    st4(S + (size_t)s * NVEC + 1, real4{v[4], v[5], mul_rn(len, d), len});
#else
    st4(S + (size_t)s, real4{v[0], v[1], v[2], mul_rn(len, d)});
#endif
}
#endif

// Edge e: idx = (i, j, slot_i, slot_j) with j = -(boundary code) on the boundary.
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
edge_pass(const int n_edges, const real4* __restrict__ W, const int4* __restrict__ idx,
          const real2* __restrict__ normal, const real* __restrict__ length, real4* __restrict__ S,
          Ctrl* ctrl, const real g, const real r, const real eps_h, const int op)
{
    if (!step_active(ctrl)) return;
    const int e = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (e >= n_edges) return;
    const int4 id = __ldg(idx + e);
    const real len = __ldg(length + e);
    real Wi[NVAR], Hi;
    EdgeFlux f;
#if FVSWE_LINEAR  // the face states of the edge's slots, and the slots' cell-interior terms
    load_face(ctrl, id.z, Wi, Hi);
    evaluate_edge(Wi, Hi, [&](real* w, real& H) { load_face(ctrl, id.w, w, H); }, false,
                  id.y < 0 ? -id.y : 0, __ldg(normal + e), len, Params{g, r, eps_h}, ctrl, op, f);
    store_linear(S, ctrl, id.z, f.Fm, f.d, len);
    if (id.y >= 0) store_linear(S, ctrl, id.w, f.Fp, f.d, len);
#else
    load_cell(W, id.x, Wi, Hi);
    evaluate_edge(Wi, Hi, [&](real* w, real& H) { load_cell(W, id.y, w, H); }, false,
                  id.y < 0 ? -id.y : 0, __ldg(normal + e), len, Params{g, r, eps_h}, ctrl, op, f);
    store_slot(S, id.z, f.Fm, f.d, len);
    if (id.y >= 0) store_slot(S, id.w, f.Fp, f.d, len);
#endif
    if ((op & OP_COUNT) && f.flags) count_flags(ctrl, f.flags);
}

// Cell c: W_c -= dt/|V_c| sum(slots), clip, thin-layer damping, friction (op & OP_UPDATE;
// close_cell), dt_c = 2 cfl |V_c| / sum(|Gamma| ||D||) (op & OP_DT); the last block closes
// the step (finish_step).
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
volume_pass(const int n_cells, const real4* __restrict__ Win, real4* __restrict__ Wout,
            const real* __restrict__ area, const real4* __restrict__ S, Ctrl* ctrl, real* partial,
            const real eps_h, const int op)
{
    const int c = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (!step_active(ctrl)) {
        if ((op & OP_UPDATE) && c < n_cells) pass_cell(Win, Wout, c, ctrl);
        return;
    }
    real dti = REAL_INF;
    if (c < n_cells) {
        real acc[NVAR + 1], w[NVAR], H;
        LimitSums sums;
        load_cell(Win, c, w, H);
#pragma unroll
        for (int l = 0; l < FVSWE_K; ++l) add_slot(S, c * FVSWE_K + l, acc, l == 0, sums);
        dti = close_cell(Win, Wout, c, w, H, cell_area(Win, area, c), acc, sums, ctrl, eps_h, op);
    }
    finish_step(ctrl, partial, dti, op);
}

#include "service.cuh"
