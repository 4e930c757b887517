// Cartesian grid variant: gather.cu on an nx by ny grid of quads in row-major order (cell
// c = iy * nx + ix), its slots' neighbours, normals, lengths and boundary codes found by
// index arithmetic instead of the per-slot arrays, and each block a 2-D tile whose edges
// are evaluated once each (gather evaluates an interior edge from both cells). The slots
// are those of the mesh that fvswe.grid.Grid builds (local order south, east, north, west;
// each interior edge owned by its lower-numbered cell, so the south and west slots are side
// j), evaluated in the owner's orientation and summed in slot order, so every value and sum
// is bitwise gather.cu's; gpu.grid_arrays checks a layout against this rule before a run.
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

// The tile of a block: TILE_Y rows of FVSWE_TILE_X cells, one thread per cell. Its edges,
// each evaluated once: N_XE on its vertical lines (row j, line i: the west side of column i,
// i = 0..FVSWE_TILE_X) then N_YE on its horizontal lines (line j: the south side of row j,
// j = 0..TILE_Y). gpu.grid_launch counts the tiles.
#define TILE_Y (FVSWE_BLOCK / FVSWE_TILE_X)
#define N_XE (TILE_Y * (FVSWE_TILE_X + 1))
#define N_YE ((TILE_Y + 1) * FVSWE_TILE_X)
#define N_TE (N_XE + N_YE)
// Per tile edge, in shared memory (index k * N_TE + edge): k < NVAR the slot values of the
// cell west of or south of it (side 0), then NVAR of the other cell (side 1), then |Gamma| ||D||.
#define TILE_VALUES ((2 * NVAR + 1) * N_TE)

static_assert(FVSWE_BLOCK % FVSWE_TILE_X == 0, "grid.cu: a block is whole rows of a tile");
static_assert(TILE_VALUES * sizeof(real) <= 48 * 1024, "grid.cu: the tile's edges exceed 48 KiB");

// Evaluate tile edge e (cells of the tile from (ix0, iy0)) once and keep its slot values in
// val: an interior edge through the flux in its owner's orientation (the cell west of or
// south of it: side i, its east or north slot), so that each side's values are bitwise those
// that edge_contribution gives either cell; a boundary edge through edge_contribution of its
// one cell's slot. SPEEDS: only |Gamma| ||D|| is kept (OP_DT alone). The edges on a tile's
// east and north lines are evaluated by both tiles they bound (about 1 in 7 at 16 x 8).
template <bool SPEEDS>
__device__ __forceinline__ void tile_edge(int e, int ix0, int iy0, int nx, int ny,
                                          const real4* __restrict__ Win,
                                          const real* __restrict__ length,
                                          const int* __restrict__ side_code, const Params& prm,
                                          Ctrl* ctrl, int op, real* val)
{
    const bool x = e < N_XE;
    const int i = x ? e % (FVSWE_TILE_X + 1) : (e - N_XE) % FVSWE_TILE_X;
    const int j = x ? e / (FVSWE_TILE_X + 1) : (e - N_XE) / FVSWE_TILE_X;
    const int ix = ix0 + i, iy = iy0 + j;  // the cell east of (x) or north of the edge
    if (x ? ix > nx || iy >= ny : ix >= nx || iy > ny) return;
    const bool first = x ? ix == 0 : iy == 0;  // the west or south side: cell (ix, iy)'s slot
    const int sx = x && !first ? ix - 1 : ix, sy = !x && !first ? iy - 1 : iy;
    const int c = sy * nx + sx, side = first;
    int cd;
    real2 n;
    real len, w[NVAR], H, out[NVAR + 1];
    const int l = first ? (x ? 3 : 0) : (x ? 1 : 2);
    grid_slot(l, c, sx, sy, nx, ny, length, side_code, cd, n, len);
#if FVSWE_LINEAR  // the slots' face states (linear.cuh), and their cell-interior terms
    const int s = c * 4 + l, across = cd < 0 ? -1 : ctrl->lin_slot[s];
    load_face(ctrl, s, w, H);
#else
    const int s = -1;  // edge_contribution reads no slot of a first-order module
    load_cell(Win, c, w, H);
#endif
    if (cd < 0) {
        edge_contribution(Win, w, H, s, cd, n, len, prm, ctrl, op, out);
#pragma unroll
        for (int m = 0; m < NVAR; ++m)
            if (!SPEEDS) val[(side * NVAR + m) * N_TE + e] = out[m];
        val[2 * NVAR * N_TE + e] = out[NVAR];
        return;
    }
    EdgeFlux f;
#if FVSWE_LINEAR
    evaluate_edge(w, H, [&](real* wn, real& Hn) { load_face(ctrl, across, wn, Hn); }, false, 0, n,
                  len, prm, ctrl, op, f);
#else
    evaluate_edge(w, H, [&](real* wn, real& Hn) { load_cell(Win, cd >> 1, wn, Hn); }, false, 0, n,
                  len, prm, ctrl, op, f);
#endif
    // an interior edge on the tile's east or north line is also the next tile's first: it
    // counts there, so that each edge counts once
    const bool next = x ? i == FVSWE_TILE_X : j == TILE_Y;
    if (f.flags && !next && (op & OP_COUNT)) count_flags(ctrl, f.flags);
#pragma unroll
    for (int m = 0; m < NVAR; ++m) {
        if (SPEEDS) continue;
        val[m * N_TE + e] = mul_rn(len, f.Fm[m]);
        val[(NVAR + m) * N_TE + e] = mul_rn(len, f.Fp[m]);
#if FVSWE_LINEAR
        val[m * N_TE + e] = with_interior(ctrl, s, m, val[m * N_TE + e]);
        val[(NVAR + m) * N_TE + e] = with_interior(ctrl, across, m, val[(NVAR + m) * N_TE + e]);
#endif
    }
    val[2 * NVAR * N_TE + e] = mul_rn(len, f.d);
}

// One step on the tile of this block: its edges evaluated once (tile_edge), then each cell
// sums its slots south, east, north, west (gather.cu's order, so the sums are bitwise
// gather.cu's), closes (close_cell) and joins the dt reduction (finish_step).
template <bool SPEEDS>
__device__ __forceinline__ void grid_tile(const int n_cells, const int nx, const int ny,
                                          const real4* __restrict__ Win, real4* __restrict__ Wout,
                                          const real* __restrict__ area, const int area_stride,
                                          const real* __restrict__ length,
                                          const int* __restrict__ side_code, Ctrl* ctrl,
                                          real* partial, const Params& prm, const int op,
                                          real* val)
{
    const int tiles_x = (nx + FVSWE_TILE_X - 1) / FVSWE_TILE_X;
    const int ix0 = blockIdx.x % tiles_x * FVSWE_TILE_X, iy0 = blockIdx.x / tiles_x * TILE_Y;
    const int tx = threadIdx.x % FVSWE_TILE_X, ty = threadIdx.x / FVSWE_TILE_X;
    const int ix = ix0 + tx, iy = iy0 + ty, c = iy * nx + ix;
    const bool mine = ix < nx && iy < ny;
    if (!step_active(ctrl)) {
        if ((op & OP_UPDATE) && mine) pass_cell(Win, Wout, c, ctrl);
        return;
    }
    for (int e = threadIdx.x; e < N_TE; e += FVSWE_BLOCK)
        tile_edge<SPEEDS>(e, ix0, iy0, nx, ny, Win, length, side_code, prm, ctrl, op, val);
    __syncthreads();
    real dti = REAL_INF;
    if (mine) {
        real w[NVAR], H, acc[NVAR + 1];
        LimitSums sums;
        load_cell(Win, c, w, H);
        // the edges of slots south, east, north, west and the side the cell is on each
        const int edge[4] = {N_XE + ty * FVSWE_TILE_X + tx, ty * (FVSWE_TILE_X + 1) + tx + 1,
                             N_XE + (ty + 1) * FVSWE_TILE_X + tx, ty * (FVSWE_TILE_X + 1) + tx};
        const int side[4] = {1, 0, 0, 1};
#pragma unroll
        for (int l = 0; l < 4; ++l) {
            real v[NVAR + 1];
#pragma unroll
            for (int m = 0; m < NVAR; ++m)
                v[m] = SPEEDS ? real(0) : val[(side[l] * NVAR + m) * N_TE + edge[l]];
            v[NVAR] = val[2 * NVAR * N_TE + edge[l]];
#pragma unroll
            for (int m = 0; m <= NVAR; ++m) acc[m] = l == 0 ? v[m] : add_rn(acc[m], v[m]);
            // the limiter's bound (two layers): slots south and north have the column's width
            limit_sums(sums, v, __ldg(length + (l % 2 ? nx + iy : ix)), l == 0);
        }
#if FVSWE_LAYERS == 2
        const real A = cell_area(Win, area, c);
#else
        const real A = __ldg(area + (size_t)c * area_stride);
#endif
        dti = close_cell(Win, Wout, c, w, H, A, acc, sums, ctrl, prm.eps_h, op);
    }
    finish_step(ctrl, partial, dti, op);
}

// One launch of gpu.grid_launch's blocks: the speeds-only pass (op OP_DT alone, the first of
// a non-lagged step and the initial dt) keeps only each edge's ||D||, the others everything.
extern "C" __global__ void __launch_bounds__(FVSWE_BLOCK, FVSWE_MIN_BLOCKS)
grid_step(const int n_cells, const int nx, const int ny, const real4* __restrict__ Win,
          real4* __restrict__ Wout, const real* __restrict__ area, const int area_stride,
          const real* __restrict__ length, const int* __restrict__ side_code, Ctrl* ctrl,
          real* partial, const real g, const real r, const real eps_h, const int op)
{
    __shared__ real val[TILE_VALUES];
    const Params prm{g, r, eps_h};
    if (op == OP_DT)
        grid_tile<true>(n_cells, nx, ny, Win, Wout, area, area_stride, length, side_code, ctrl,
                        partial, prm, OP_DT, val);
    else
        grid_tile<false>(n_cells, nx, ny, Win, Wout, area, area_stride, length, side_code, ctrl,
                         partial, prm, op, val);
}

#include "service.cuh"
