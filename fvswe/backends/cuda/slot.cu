// Slot-parallel gather variant: like gather.cu, but the k slots of a cell are evaluated by
// k neighbouring threads (a block serves FVSWE_BLOCK / k cells), which put their values
// in shared memory; the cell's first thread sums them in local order and closes the cell.
// The same values and the same sums as the other variants (bitwise), with k times the
// threads of gather.cu in flight: shorter steps where latency, not bandwidth, limits.
#include "pipeline.cuh"

#define CELLS_PER_BLOCK (FVSWE_BLOCK / FVSWE_K)

extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
slot_step(const int n_cells, const real4* __restrict__ Win, real4* __restrict__ Wout,
          const real* __restrict__ area, const int* __restrict__ code,
          const real2* __restrict__ normal, const real* __restrict__ length, Ctrl* ctrl,
          real* partial, const real g, const real r, const real eps_h, const int op)
{
    __shared__ real slot_values[FVSWE_BLOCK][NVAR + 2];  // the slot's values and length
    const int l = threadIdx.x % FVSWE_K;
    const int local = threadIdx.x / FVSWE_K;
    const int c = blockIdx.x * CELLS_PER_BLOCK + local;
    const bool mine = local < CELLS_PER_BLOCK && c < n_cells;
    if (!step_active(ctrl)) {
        if ((op & OP_UPDATE) && mine && l == 0) pass_cell(Win, Wout, c, ctrl);
        return;
    }
    real w[NVAR], H;
    if (mine) {
        load_cell(Win, c, w, H);
        slot_values[threadIdx.x][NVAR + 1] = slot_contribution(
            Win, w, H, c * FVSWE_K + l, code, normal, length, Params{g, r, eps_h}, ctrl, op,
            slot_values[threadIdx.x]);
    }
    __syncthreads();
    real dti = REAL_INF;
    if (mine && l == 0) {
        real acc[NVAR + 1];
        LimitSums sums;
#pragma unroll
        for (int k = 0; k < FVSWE_K; ++k) {
            const real* v = slot_values[threadIdx.x + k];
#pragma unroll
            for (int m = 0; m <= NVAR; ++m) acc[m] = k == 0 ? v[m] : add_rn(acc[m], v[m]);
            limit_sums(sums, v, v[NVAR + 1], k == 0);
        }
        dti = close_cell(Win, Wout, c, w, H, cell_area(Win, area, c), acc, sums, ctrl, eps_h, op);
    }
    finish_step(ctrl, partial, dti, op);
}

#include "service.cuh"
