// Kernels that pin down the emulator's CUDA semantics (tests/test_cuda_sources.py):
// argv[1] names the case, stdout has one integer per line, the expected values are computed
// independently on the Python side.
#include "shim.h"
#include <cstdio>
#include <cstring>

#define BLOCK 128

// Threads >= live return at once; the others square their index into shared memory, wait
// at the barrier and read their right neighbour's square (a later fiber: without the
// barrier it would not be there yet).
__global__ void neighbour(int live, long long* out)
{
    __shared__ long long sq[BLOCK];
    const int t = threadIdx.x;
    if (t >= live) return;
    sq[t] = (long long)t * t + 1000 * blockIdx.x;
    __syncthreads();
    out[blockIdx.x * BLOCK + t] = sq[(t + 1) % live];
}

// Block sum of 2^55 + 2^(t % 32) + blockIdx: butterfly shuffles in each warp, then the
// warps' sums through shared memory; one 64-bit integer per block, exact only if every
// shuffle carries all 8 bytes of the partner's value (not through a double).
__global__ void block_sum(long long* out, unsigned long long* count, int* lowest)
{
    __shared__ long long warp_sum[BLOCK / 32];
    long long s = (1LL << 55) + (1LL << (threadIdx.x % 32)) + blockIdx.x;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) warp_sum[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        long long b = 0;
        for (int w = 0; w < BLOCK / 32; ++w) b += warp_sum[w];
        out[blockIdx.x] = b;
    }
    atomicAdd(count, 1ULL);
    atomicMin(lowest, 1000 - int(blockIdx.x * BLOCK + threadIdx.x));
}

// Half a warp at __syncthreads, the other half at a shuffle: a deadlock on the device.
__global__ void divergent()
{
    if (threadIdx.x < 16)
        __syncthreads();
    else
        (void)__shfl_xor_sync(0xffffffffu, 1.0, 1);
}

// Lane 1 returns; lane 0 shuffles with it.
__global__ void from_returned()
{
    if (threadIdx.x % 2) return;
    (void)__shfl_xor_sync(0xffffffffu, 1.0, 1);
}

int main(int argc, char** argv)
{
    if (argc < 2) return 2;
    const char* c = argv[1];
    if (!std::strcmp(c, "neighbour")) {
        std::vector<long long> out(2 * BLOCK, -1);
        launch(2, BLOCK, neighbour, 70, out.data());
        for (long long v : out) std::printf("%lld\n", v);
    } else if (!std::strcmp(c, "block_sum")) {
        std::vector<long long> out(3);
        unsigned long long count = 0;
        int lowest = 1 << 30;
        launch(3, BLOCK, block_sum, out.data(), &count, &lowest);
        for (long long v : out) std::printf("%lld\n", v);
        std::printf("%llu\n%d\n", count, lowest);
    } else if (!std::strcmp(c, "divergent")) {
        launch(1, BLOCK, divergent);
    } else if (!std::strcmp(c, "from_returned")) {
        launch(1, BLOCK, from_returned);
    } else {
        return 2;
    }
    return 0;
}
