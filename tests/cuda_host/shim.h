// Just enough of CUDA to run fvswe's kernels on the host, for tests without a GPU.
//
// A launch runs the blocks one after another, each with one std::thread per CUDA thread
// and a std::barrier for __syncthreads; shuffles go through a per-block buffer, so the
// block must be a single warp (FVSWE_BLOCK=32). Arithmetic is plain IEEE (compile with
// -ffp-contract=off), which is what the float64 modules do on the device.
#pragma once
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

using std::fabs;
using std::sqrt;

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline std::barrier<>* block_barrier = nullptr;
inline double shfl_buf[32];

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) alignas(n)

struct float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) int4 { int x, y, z, w; };
inline double2 make_double2(double x, double y) { return double2{x, y}; }

template <typename T> inline T __ldg(const T* p) { return *p; }
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int o)
{
    const unsigned lane = threadIdx.x & 31;
    shfl_buf[lane] = double(v);
    __syncthreads();
    const T r = T(shfl_buf[lane ^ unsigned(o)]);
    __syncthreads();
    return r;
}
template <typename T> inline T atomicAdd(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline int atomicMin(int* p, int v)
{
    int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
    return old;
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }

// kernel<<<grid, block>>>(args...): blocks in sequence, threads of a block concurrently.
template <typename... P, typename... A> void launch(unsigned grid, unsigned block, void (*k)(P...), A... args)
{
    gridDim = dim3{grid};
    blockDim = dim3{block};
    for (unsigned b = 0; b < grid; ++b) {
        std::barrier<> bar(block);
        block_barrier = &bar;
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; ++t)
            threads.emplace_back([&, t] {
                blockIdx = dim3{b};
                threadIdx = dim3{t};
                k(args...);
                bar.arrive_and_drop();  // threads that returned early no longer hold the others
            });
        for (auto& th : threads) th.join();
    }
}
