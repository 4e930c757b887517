// The θ-scheme's CG with Jacobi (or no) preconditioning in two kernels an iteration, the dot
// products reduced on the device (fvswe/implicit/kernel_cg.py drives them; docs/IMPLICIT.md).
//
// The system is A = I + Σ_faces c_f (difference across f) of fvswe/implicit/operator.py:
// cx (ny, nx + 1) on the x faces, cy (ny + 1, nx) on the y faces, both row-major (so a warp's
// loads are coalesced). A boundary face's outside increment counts 0.
// Each kernel walks the cells grid-stride; each block adds up its cells' products (warp
// shuffles, then the warps'), writes them to `partial`, and the last block to finish adds
// the blocks' sums in block order into the scalar array s: the sums are deterministic.
// s[PQ] = p·Ap, s[RR] = r·r, s[RZ + (j & 1)] = r·z after j updates (two slots, so that no
// kernel writes a scalar it reads). REAL is double or float (-DREAL=...).
#ifndef REAL
#define REAL double
#endif
typedef REAL real;

#define THREADS 256  // every kernel's block (kernel_cg.THREADS)
#define PQ 0
#define RR 1
#define RZ 2

// (A x) at cell (j, i), x(k) the value at cell k: x_i + Σ_f c_f (x_i - x_neighbour), each
// face in turn (a field uniform along y meets exactly 0 across the y faces).
template <typename X>
__device__ __forceinline__ real apply_at(X x, const real* cx, const real* cy, int nx, int ny,
                                         int j, int i)
{
    const int k = j * nx + i;
    const real c = x(k);
    const real* w = cx + j * (nx + 1) + i;  // west face w[0], east w[1]
    const real* s = cy + k;                 // south face s[0], north s[nx]
    real y = c;
    y += w[0] * (i > 0 ? c - x(k - 1) : c);
    y += w[1] * (i < nx - 1 ? c - x(k + 1) : c);
    y += s[0] * (j > 0 ? c - x(k - nx) : c);
    y += s[nx] * (j < ny - 1 ? c - x(k + nx) : c);
    return y;
}

// Jacobi's diagonal at cell (j, i): 1 + west + east + south + north, a zero face on the
// domain's boundary (a wall) counted as the cell's opposite face (Stencil.jacobi_diagonal:
// a residual uniform along y stays uniform).
__device__ __forceinline__ real jacobi_at(const real* cx, const real* cy, int nx, int ny, int j,
                                          int i)
{
    const real* w = cx + j * (nx + 1) + i;
    const real* s = cy + j * nx + i;
    const real west = i == 0 && w[0] == real(0) ? w[1] : w[0];
    const real east = i == nx - 1 && w[1] == real(0) ? w[0] : w[1];
    const real south = j == 0 && s[0] == real(0) ? s[nx] : s[0];
    const real north = j == ny - 1 && s[nx] == real(0) ? s[0] : s[nx];
    return real(1) + west + east + south + north;
}

// The block's sum of v (in thread 0), through `warps` (THREADS / 32 values).
__device__ real block_sum(real v, real* warps)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warps[warp] = v;
    __syncthreads();
    v = threadIdx.x < THREADS / 32 ? warps[threadIdx.x] : real(0);
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();  // warps may be written again
    return v;
}

// The grid's sums of a (and of b where two) into *to_a (*to_b): each block's partial
// sums, then the last block adds them in block order and resets the counter.
__device__ void grid_sum(real a, real b, bool two, real* partial, unsigned* counter, real* to_a,
                         real* to_b)
{
    __shared__ real warps[THREADS / 32];
    __shared__ bool last;
    a = block_sum(a, warps);
    if (two) b = block_sum(b, warps);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = a;
        if (two) partial[gridDim.x + blockIdx.x] = b;
        __threadfence();
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    a = real(0);
    b = real(0);
    for (unsigned k = threadIdx.x; k < gridDim.x; k += THREADS) {
        a += __ldcg(partial + k);
        if (two) b += __ldcg(partial + gridDim.x + k);
    }
    a = block_sum(a, warps);
    if (two) b = block_sum(b, warps);
    if (threadIdx.x == 0) {
        *to_a = a;
        if (two) *to_b = b;
        *counter = 0u;
    }
}

// Before the loop: r = b - A x, the inverse diagonal `inv` (Jacobi), z = M⁻¹ r;
// s[RR] = r·r, s[RZ] = r·z.
extern "C" __global__ void __launch_bounds__(THREADS)
cg_start(const real* b, const real* x, const real* cx, const real* cy, int nx, int ny,
         int jacobi, real* r, real* z, real* inv, real* partial, unsigned* counter, real* s)
{
    const auto at = [x](int k) { return x[k]; };
    real rr = real(0), rz = real(0);
    for (int k = blockIdx.x * THREADS + threadIdx.x; k < nx * ny; k += gridDim.x * THREADS) {
        const int j = k / nx, i = k - j * nx;
        const real rk = b[k] - apply_at(at, cx, cy, nx, ny, j, i);
        real zk = rk;
        if (jacobi) {
            const real m = real(1) / jacobi_at(cx, cy, nx, ny, j, i);
            inv[k] = m;
            zk = rk * m;
        }
        r[k] = rk;
        z[k] = zk;
        rr += rk * rk;
        rz += rk * zk;
    }
    grid_sum(rr, rz, true, partial, counter, s + RR, s + RZ);
}

// Iteration k's direction and product: p = z + β p_old (β = r·z (new) / r·z (old), z itself
// at the first iteration), q = A p; s[PQ] = p·q. parity = k & 1; each thread forms p at
// its cell's neighbours too, so p goes to another buffer than p_old.
extern "C" __global__ void __launch_bounds__(THREADS)
cg_product(const real* z, const real* p_old, const real* cx, const real* cy, int nx, int ny,
           int first, int parity, real tiny, real* p, real* q, real* partial, unsigned* counter,
           real* s)
{
    const real beta = first ? real(0) : s[RZ + (parity ^ 1)] / (s[RZ + parity] + tiny);
    const auto at = [z, p_old, beta, first](int k) { return first ? z[k] : z[k] + beta * p_old[k]; };
    real pq = real(0);
    for (int k = blockIdx.x * THREADS + threadIdx.x; k < nx * ny; k += gridDim.x * THREADS) {
        const int j = k / nx, i = k - j * nx;
        const real pk = at(k), qk = apply_at(at, cx, cy, nx, ny, j, i);
        p[k] = pk;
        q[k] = qk;
        pq += pk * qk;
    }
    grid_sum(pq, real(0), false, partial, counter, s + PQ, s + PQ);
}

// Iteration k's update: α = r·z / (p·Ap + tiny), x += α p, r -= α q, z = M⁻¹ r;
// s[RR] = r·r, s[RZ + parity] = r·z.
extern "C" __global__ void __launch_bounds__(THREADS)
cg_update(const real* p, const real* q, const real* inv, int n, int jacobi, int parity,
          real tiny, real* x, real* r, real* z, real* partial, unsigned* counter, real* s)
{
    const real alpha = s[RZ + (parity ^ 1)] / (s[PQ] + tiny);
    real rr = real(0), rz = real(0);
    for (int k = blockIdx.x * THREADS + threadIdx.x; k < n; k += gridDim.x * THREADS) {
        x[k] = x[k] + alpha * p[k];
        const real rk = r[k] - alpha * q[k];
        const real zk = jacobi ? rk * inv[k] : rk;
        r[k] = rk;
        z[k] = zk;
        rr += rk * rk;
        rz += rk * zk;
    }
    grid_sum(rr, rz, true, partial, counter, s + RR, s + RZ + parity);
}
