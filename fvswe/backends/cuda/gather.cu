// Cell-centred gather variant: each cell evaluates its own k edges with the edge's
// own orientation (flux(W_i, W_j, eta) as the edge pass does, keeping F- when the cell
// is side i and F+ when it is side j), so its slot values are bitwise those of the
// edge pass. No slot arrays and one launch per step (lagged/fixed); reads Win and
// writes Wout, so the host alternates two buffers.
#include "pipeline.cuh"

// Slot s = c*K + l: code = 2*neighbour + side (side 1: the cell is j of the edge) or
// -bc (wall -1, open -2) on the boundary; normal/length are the edge's.
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK)
gather_step(const int n_cells, const real4* __restrict__ Win, real4* __restrict__ Wout,
            const real* __restrict__ area, const int* __restrict__ code,
            const real2* __restrict__ normal, const real* __restrict__ length, Ctrl* ctrl,
            real* partial, const real g, const real r, const real eps_h, const int op)
{
    const int c = blockIdx.x * FVSWE_BLOCK + threadIdx.x;
    if (!step_active(ctrl)) {
        // An idle step still hands the state to the other buffer, so that the buffer
        // holding the state depends only on how many steps a graph contains.
        if ((op & OP_UPDATE) && c < n_cells) {
#pragma unroll
            for (int v = 0; v < NVEC; ++v) st4(Wout + (size_t)c * NVEC + v, ld4(Win + (size_t)c * NVEC + v));
        }
        return;
    }
    real dti = REAL_INF;
    if (c < n_cells) {
        real w[NVAR], H;
        load_cell(Win, c, w, H);
        const Params prm{g, r, eps_h};
        real acc[NVAR + 1];
#pragma unroll
        for (int l = 0; l < FVSWE_K; ++l) {
            const int s = c * FVSWE_K + l;
            const int cd = __ldg(code + s);
            const real2 n = __ldg(normal + s);
            const real len = __ldg(length + s);
            real wn[NVAR], Hn;
            const bool side_j = cd >= 0 && (cd & 1);
            if (cd >= 0) {
                load_cell(Win, cd >> 1, wn, Hn);
            } else {
                ghost_state(w, -cd, n.x, n.y, wn);
                Hn = H;
            }
            real Wi[NVAR], Wj[NVAR], Fm[NVAR], Fp[NVAR], dmax;
#pragma unroll
            for (int m = 0; m < NVAR; ++m) {
                Wi[m] = side_j ? wn[m] : w[m];
                Wj[m] = side_j ? w[m] : wn[m];
            }
            const int flags = scheme_flux(Wi, Wj, side_j ? Hn : H, side_j ? H : Hn, n.x, n.y, prm,
                                          Fm, Fp, dmax);
            if (!side_j && flags && (op & OP_COUNT)) count_flags(ctrl, flags);
#pragma unroll
            for (int m = 0; m < NVAR; ++m) {
                const real f = mul_rn(len, side_j ? Fp[m] : Fm[m]);
                acc[m] = l == 0 ? f : add_rn(acc[m], f);
            }
            const real d = mul_rn(len, dmax);
            acc[NVAR] = l == 0 ? d : add_rn(acc[NVAR], d);
        }
        const real A = cell_area(Win, area, c);
        if ((op & OP_DT) && acc[NVAR] > real(0))
            dti = div_rn(mul_rn(real(2 * ctrl->cfl), A), acc[NVAR]);
        if (op & OP_UPDATE) {
            const real rdt = div_rn(real(step_dt(ctrl)), A);
            int clipped = 0;
#pragma unroll
            for (int m = 0; m < NVAR; ++m) w[m] = add_rn(w[m], -mul_rn(rdt, acc[m]));
#pragma unroll
            for (int l = 0; l < FVSWE_LAYERS; ++l)
                if (w[3 * l] < real(0)) { w[3 * l] = real(0); ++clipped; }
            store_cell(Wout, c, w, H, A);
            if (clipped) atomicAdd(&ctrl->clipped, (unsigned long long)clipped);
        }
    }
    finish_step(ctrl, partial, dti, op);
}

#include "service.cuh"
