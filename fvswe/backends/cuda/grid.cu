// Cartesian grid variant: gather.cu on an nx by ny grid of quads in row-major order (cell
// c = iy * nx + ix), its slots' neighbours, normals, lengths and boundary codes found by
// index arithmetic instead of the per-slot arrays. The slots are those of the mesh that
// fvswe.grid.Grid builds (local order south, east, north, west; each interior edge owned by
// its lower-numbered cell, so the south and west slots are side j), so every value and sum
// is bitwise gather.cu's (both are pipeline.cuh's gather_cells); gpu.grid_arrays checks a
// layout against this rule before a run.
// Per cell it reads the state (the neighbours' through the cache) and writes the state;
// besides: one column width and one row height (nx + ny values), the area (one value, or
// one per cell when the grid's areas differ in their last bits), and a boundary cell its
// side's code (2 nx + 2 ny values).
#include "pipeline.cuh"

#if FVSWE_K != 4
#error "grid.cu: a Cartesian grid has quads (FVSWE_K 4)"
#endif

// The code (2*neighbour + side, or minus the boundary code), unit normal and length of
// local slot l of cell c = (ix, iy): the normals of fvswe.grid.Grid's edges, signed zeros
// included, those of an interior south or west slot being its owner's north or east edge's.
// length: nx column widths, then ny row heights; side_code: the boundary codes of the
// south, north (nx each), west and east (ny each) sides.
__device__ __forceinline__ void grid_slot(int l, int c, int ix, int iy, int nx, int ny,
                                          const real* __restrict__ length,
                                          const int* __restrict__ side_code, int& cd, real2& n,
                                          real& len)
{
    const real one = real(1), zero = real(0);
    if (l == 0) {  // south
        cd = iy > 0 ? 2 * (c - nx) + 1 : -__ldg(side_code + ix);
        n = real2{zero, iy > 0 ? one : -one};
        len = __ldg(length + ix);
    } else if (l == 1) {  // east
        cd = ix < nx - 1 ? 2 * (c + 1) : -__ldg(side_code + 2 * nx + ny + iy);
        n = real2{one, -zero};
        len = __ldg(length + nx + iy);
    } else if (l == 2) {  // north
        cd = iy < ny - 1 ? 2 * (c + nx) : -__ldg(side_code + nx + ix);
        n = real2{zero, one};
        len = __ldg(length + ix);
    } else {  // west
        cd = ix > 0 ? 2 * (c - 1) + 1 : -__ldg(side_code + 2 * nx + iy);
        n = real2{ix > 0 ? one : -one, -zero};
        len = __ldg(length + nx + iy);
    }
}

extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
grid_step(const int n_cells, const int nx, const int ny, const real4* __restrict__ Win,
          real4* __restrict__ Wout, const real* __restrict__ area, const int area_stride,
          const real* __restrict__ length, const int* __restrict__ side_code, Ctrl* ctrl,
          real* partial, const real g, const real r, const real eps_h, const int op)
{
    gather_cells(
        n_cells, Win, Wout, ctrl, partial, Params{g, r, eps_h}, op,
        [&](int c) {
#if FVSWE_LAYERS == 2
            return cell_area(Win, area, c);
#else
            return __ldg(area + (size_t)c * area_stride);
#endif
        },
        [&](int c, int l, int& cd, real2& n, real& len) {
            const int iy = c / nx;
            grid_slot(l, c, c - iy * nx, iy, nx, ny, length, side_code, cd, n, len);
        });
}

#include "service.cuh"
