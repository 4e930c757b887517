// Cell-centred gather variant: one thread per cell evaluates the cell's k edges in local
// order (gather_cells, edge_contribution: the edge's own orientation, so the values are
// bitwise those of the edge pass), sums them and closes the cell. No slot arrays and one
// launch per step (lagged/fixed); reads Win and writes Wout, so the host alternates two
// buffers. Each slot's code, normal and length come from the per-slot arrays.
#include "pipeline.cuh"

extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
gather_step(const int n_cells, const real4* __restrict__ Win, real4* __restrict__ Wout,
            const real* __restrict__ area, const int* __restrict__ code,
            const real2* __restrict__ normal, const real* __restrict__ length, Ctrl* ctrl,
            real* partial, const real g, const real r, const real eps_h, const int op)
{
    gather_cells(
        n_cells, Win, Wout, ctrl, partial, Params{g, r, eps_h}, op,
        [&](int c) { return cell_area(Win, area, c); },
        [&](int c, int l, int& cd, real2& n, real& len) {
            const int s = c * FVSWE_K + l;
            cd = __ldg(code + s);
            n = __ldg(normal + s);
            len = __ldg(length + s);
        });
}

#include "service.cuh"
