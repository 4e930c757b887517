// Cell-centred gather variant: one thread per cell evaluates the cell's k edges in local
// order (slot_contribution: the edge's own orientation, so the values are bitwise those
// of the edge pass), sums them and closes the cell. No slot arrays and one launch per
// step (lagged/fixed); reads Win and writes Wout, so the host alternates two buffers.
#include "pipeline.cuh"

extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
gather_step(const int n_cells, const real4* __restrict__ Win, real4* __restrict__ Wout,
            const real* __restrict__ area, const int* __restrict__ code,
            const real2* __restrict__ normal, const real* __restrict__ length, Ctrl* ctrl,
            real* partial, const real g, const real r, const real eps_h, const int op)
{
    const int c = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (!step_active(ctrl)) {
        if ((op & OP_UPDATE) && c < n_cells) pass_cell(Win, Wout, c, ctrl);
        return;
    }
    real dti = REAL_INF;
    if (c < n_cells) {
        real w[NVAR], H, acc[NVAR + 1], v[NVAR + 1];
        LimitSums sums;
        load_cell(Win, c, w, H);
#pragma unroll
        for (int l = 0; l < FVSWE_K; ++l) {
            const real len = slot_contribution(Win, w, H, c * FVSWE_K + l, code, normal, length,
                                               Params{g, r, eps_h}, ctrl, op, v);
#pragma unroll
            for (int m = 0; m <= NVAR; ++m) acc[m] = l == 0 ? v[m] : add_rn(acc[m], v[m]);
            limit_sums(sums, v, len, l == 0);
        }
        dti = close_cell(Win, Wout, c, w, H, cell_area(Win, area, c), acc, sums, ctrl, eps_h, op);
    }
    finish_step(ctrl, partial, dti, op);
}

#include "service.cuh"
