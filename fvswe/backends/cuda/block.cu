// Fused cell-block variant: a thread block owns FVSWE_CELLS consecutive cells (in the run's
// order). Its edge list (fvswe.backends.layout.block_edges, built once on the host) holds
// every edge touching one of its cells: an edge between two of its cells is evaluated once
// and writes both its slots, an edge to another block's cell (or to the boundary) writes
// its own side only, so only edges cut by the block boundaries are evaluated twice. The
// slots live in shared memory (one writer each); each cell then sums its slots in local
// order and closes (close_cell), so the results are bitwise those of the other variants.
// No slot arrays in global memory, one launch per step (lagged/fixed); reads Win and writes
// Wout, so the host alternates two buffers as for gather.cu. A launch runs blocks
// [first_block, first_block + gridDim.x) of the step's `blocks`: one launch of them all, or on
// a part of a distributed run that overlaps its halo exchange (fvswe.backends.gpu.halo) the
// interior blocks (no cell beside the halo) apart from the border blocks after them; the
// step's last block of either launch closes it (finish_step).
// A linear module's step forms its slots' cell-interior terms (block_interior; the limiter's
// kernels through edge_contribution): none stored, no interior_pass.
#define FVSWE_INTERIOR_IN_STEP 1
#include "pipeline.cuh"

#ifndef FVSWE_CELLS
#define FVSWE_CELLS FVSWE_BLOCK
#endif

// A slot in shared memory: |Gamma| F (nvar), |Gamma| ||D||, and with two layers |Gamma| (the
// positivity limiter's candidate bound, limit_sums), padded to an odd number of reals: a cell's
// K slots then span an odd number of banks on triangles (K = 3), so the threads of a warp that
// sum their cells' slots read 32 distinct banks (8 reals a slot, 24 a cell, made 8-way bank
// conflicts: -25 % on PVM-IFCP float32).
#define SLOT_COLS ((NVAR + 1 + (FVSWE_LAYERS == 2)) | 1)
#define SLOT_LEN (NVAR + 1)

// Edge task t: id = (i, j, local slot of side i, local slot of side j), j minus the boundary
// code on the boundary, a slot -1 where that side belongs to another block. The edge is
// evaluated as every variant does (evaluate_edge, in its global orientation i -> j) and its
// sides of this block are written to `slots`; side i's block counts its flags.
__device__ __forceinline__ void block_edge(const real4* __restrict__ Win, const int4 id, const real2 n,
                                           const real len, const Params& prm, Ctrl* ctrl, int op,
                                           real (*slots)[SLOT_COLS], const int b)
{
    real Wi[NVAR], Hi;
    EdgeFlux f;
#if FVSWE_LINEAR
    // the sides' global slots: a local slot is first * K + its global one; the other across
    const int base = b * FVSWE_CELLS * FVSWE_K;
    const int si = id.z >= 0 ? base + id.z : ctrl->lin_slot[base + id.w];
    const int sj = id.w >= 0 ? base + id.w : id.y >= 0 ? ctrl->lin_slot[si] : -1;
    load_face(ctrl, si, Wi, Hi);
    evaluate_edge(Wi, Hi, [&](real* w, real& H) { load_face(ctrl, sj, w, H); }, false,
                  id.y < 0 ? -id.y : 0, n, len, prm, ctrl, op, f);
#else
    load_cell(Win, id.x, Wi, Hi);
    evaluate_edge(Wi, Hi, [&](real* w, real& H) { load_cell(Win, id.y, w, H); }, false,
                  id.y < 0 ? -id.y : 0, n, len, prm, ctrl, op, f);
#endif
    if (id.z >= 0) {  // side i here (else only side j: i's block counts the edge)
        if ((op & OP_COUNT) && f.flags) count_flags(ctrl, f.flags);
#pragma unroll
        for (int m = 0; m < NVAR; ++m) slots[id.z][m] = mul_rn(len, f.Fm[m]);
        slots[id.z][NVAR] = mul_rn(len, f.d);
        if (FVSWE_LAYERS == 2) slots[id.z][SLOT_LEN] = len;
    }
    if (id.w < 0) return;
#pragma unroll
    for (int m = 0; m < NVAR; ++m) slots[id.w][m] = mul_rn(len, f.Fp[m]);
    slots[id.w][NVAR] = mul_rn(len, f.d);
    if (FVSWE_LAYERS == 2) slots[id.w][SLOT_LEN] = len;
}

#if FVSWE_LINEAR
// Edge task t's sides of this block get their cell-interior terms added (lin_interior, formed
// here rather than stored by interior_pass: the step reads no per-slot terms), in the order the
// CPU adds them (with_interior). Each side's writer is block_edge's thread of the same task.
__device__ __forceinline__ void block_interior(const real4* __restrict__ Win, const int4 id,
                                               const real2 n, const real len, const Ctrl* ctrl,
                                               real (*slots)[SLOT_COLS], const int blk)
{
    const int base = blk * FVSWE_CELLS * FVSWE_K;
    real b[NVAR];
    if (id.z >= 0) {
        lin_interior(Win, ctrl, id.x, base + id.z, n.x, n.y, len, b);
#pragma unroll
        for (int m = 0; m < NVAR; ++m) slots[id.z][m] = with_interior(slots[id.z][m], b[m]);
    }
    if (id.w < 0) return;
    lin_interior(Win, ctrl, id.y, base + id.w, -n.x, -n.y, len, b);
#pragma unroll
    for (int m = 0; m < NVAR; ++m) slots[id.w][m] = with_interior(slots[id.w][m], b[m]);
}
#endif

extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
block_step(const int n_cells, const real4* __restrict__ Win, real4* __restrict__ Wout,
           const real* __restrict__ area, const int* __restrict__ start,
           const int4* __restrict__ task, const real2* __restrict__ normal,
           const real* __restrict__ length, Ctrl* ctrl, real* partial, const real g, const real r,
           const real eps_h, const int op, const int first_block, const int blocks)
{
    __shared__ real slots[FVSWE_CELLS * FVSWE_K][SLOT_COLS];
    const int b = first_block + blockIdx.x;
    const int first = b * FVSWE_CELLS;
    const int cells = n_cells - first < FVSWE_CELLS ? n_cells - first : FVSWE_CELLS;
    if (!step_active(ctrl)) {
        if (op & OP_UPDATE)
            for (int l = threadIdx.x; l < cells; l += FVSWE_BLOCK) pass_cell(Win, Wout, first + l, ctrl);
        return;
    }
    const Params prm{g, r, eps_h};
#if FVSWE_STAGE_RESTS  // the closing cells' remainders arrive while the edges run
    __shared__ real rests[FVSWE_CELLS * FVSWE_LAYERS];
    stage_rests(rests, rest_of(Win, ctrl, first, 0), cells * FVSWE_LAYERS);
#define REST_IN(l) (rests + (l) * FVSWE_LAYERS)
#else
#define REST_IN(l) nullptr
#endif
    const int end = __ldg(start + b + 1);
    for (int t = __ldg(start + b) + threadIdx.x; t < end; t += FVSWE_BLOCK)
        block_edge(Win, __ldg(task + t), __ldg(normal + t), __ldg(length + t), prm, ctrl, op, slots,
                   b);
#if FVSWE_LINEAR  // the same tasks on the same threads: no barrier between the two walks
    for (int t = __ldg(start + b) + threadIdx.x; t < end; t += FVSWE_BLOCK)
        block_interior(Win, __ldg(task + t), __ldg(normal + t), __ldg(length + t), ctrl, slots, b);
#endif
#if FVSWE_STAGE_RESTS
    rests_staged();
#endif
    __syncthreads();
    real dti = REAL_INF;
    for (int l = threadIdx.x; l < cells; l += FVSWE_BLOCK) {
        const int c = first + l;
        real w[NVAR], H, acc[NVAR + 1];
        LimitSums sums;
        load_cell(Win, c, w, H);
#pragma unroll
        for (int s = 0; s < FVSWE_K; ++s) {
            const real* v = slots[l * FVSWE_K + s];
#pragma unroll
            for (int m = 0; m <= NVAR; ++m) acc[m] = s == 0 ? v[m] : add_rn(acc[m], v[m]);
            limit_sums(sums, v, v[SLOT_LEN], s == 0);
        }
        dti = min_dt(dti, close_cell(Win, Wout, c, w, H, cell_area(Win, area, c), acc, sums, ctrl,
                                     eps_h, op, REST_IN(l)));
    }
    finish_step(ctrl, partial, dti, op, StepBlock{unsigned(b), unsigned(blocks)});
}

#include "service.cuh"
