// Just enough of CUDA to run fvswe's kernels on the host, for tests without a GPU.
//
// A launch runs the blocks one after another. The threads of a block are fibers that ONE
// OS thread runs in turn (cooperatively), so the run costs the same however busy the cores
// are. A fiber runs until it waits at __syncthreads (for every live thread of its block)
// or at a shuffle (for every live thread of its warp), or returns; once all the live
// threads of a warp wait at a shuffle, or all those of the block at __syncthreads, they go
// on. Threads that returned no longer hold the others, as on the device. Shuffles go
// through a per-warp buffer: any block of whole warps (32 .. 1024 threads) runs. Fibers
// run in thread order, so a read of another thread's shared memory without a barrier sees
// the value from before that thread ran: a missing __syncthreads shows.
//
// Fibers start through makecontext/setcontext once and switch with _setjmp/_longjmp,
// which save no signal mask (no system call per switch). Arithmetic is plain IEEE
// (compile with -ffp-contract=off), which is what the float64 modules do on the device.
#pragma once
#undef _FORTIFY_SOURCE  // its checked longjmp refuses a jump to another (fiber) stack
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

using std::fabs;
using std::sqrt;

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
inline dim3 threadIdx, blockIdx, blockDim, gridDim;  // threadIdx: the running fiber's

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) alignas(n)

namespace emu {

enum State { RUNNABLE, AT_BLOCK, AT_WARP, DONE };

struct Fiber {
    unsigned tid = 0;
    State state = DONE;
    unsigned long long shuffles = 0;  // shuffles entered in this block (buffer = parity)
    bool started = false;
    jmp_buf ctx;        // where it waits
    ucontext_t entry;   // its first start
};

constexpr size_t STACK = size_t(1) << 18;  // bytes per fiber, a guard page below
inline std::vector<std::unique_ptr<Fiber>> fibers;  // reused by every block and launch
inline Fiber* current = nullptr;
inline jmp_buf scheduler;
inline void (*job)(void*) = nullptr;  // the launched kernel with its arguments
inline void* job_args = nullptr;
inline unsigned long long shfl_buf[32][2][32];  // [warp][shuffle parity][lane]

[[noreturn]] inline void fail(const char* what)
{
    if (current)
        std::fprintf(stderr, "emulated CUDA, block %u thread %u: %s\n", blockIdx.x, current->tid, what);
    else
        std::fprintf(stderr, "emulated CUDA, block %u: %s\n", blockIdx.x, what);
    std::exit(3);
}

// On a fiber: back to the scheduler until it resumes this fiber.
__attribute__((noinline)) inline void suspend()
{
    if (_setjmp(current->ctx) == 0) _longjmp(scheduler, 1);
}

inline void fiber_main()
{
    for (;;) {
        job(job_args);
        current->state = DONE;
        suspend();  // resumed for the next block or launch
    }
}

// On the scheduler: run fiber f until it waits or returns.
__attribute__((noinline)) inline void resume(Fiber& f)
{
    current = &f;
    threadIdx = dim3{f.tid};
    if (_setjmp(scheduler) == 0) {
        if (f.started) _longjmp(f.ctx, 1);
        f.started = true;
        setcontext(&f.entry);
    }
}

inline Fiber& fiber(unsigned t)
{
    while (fibers.size() <= t) {
        auto f = std::make_unique<Fiber>();
        const size_t page = size_t(sysconf(_SC_PAGESIZE));
        void* mem = mmap(nullptr, STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
        if (mem == MAP_FAILED || mprotect(mem, page, PROT_NONE) != 0) fail("no fiber stack");
        if (getcontext(&f->entry) != 0) fail("getcontext failed");
        f->entry.uc_stack.ss_sp = static_cast<char*>(mem) + page;
        f->entry.uc_stack.ss_size = STACK;
        f->entry.uc_link = nullptr;
        makecontext(&f->entry, fiber_main, 0);
        f->tid = unsigned(fibers.size());
        fibers.push_back(std::move(f));
    }
    return *fibers[t];
}

// Nobody can run: lets go the warps whose live threads all wait at a shuffle, else the
// block if all its live threads wait at __syncthreads. False when neither (a deadlock).
inline bool release(unsigned block)
{
    bool any = false;
    for (unsigned w = 0; w < block; w += 32) {
        bool all = true, one = false;
        for (unsigned t = w; t < w + 32 && t < block; ++t) {
            all = all && (fibers[t]->state == AT_WARP || fibers[t]->state == DONE);
            one = one || fibers[t]->state == AT_WARP;
        }
        if (all && one) {
            for (unsigned t = w; t < w + 32 && t < block; ++t)
                if (fibers[t]->state == AT_WARP) fibers[t]->state = RUNNABLE;
            any = true;
        }
    }
    if (any) return true;
    for (unsigned t = 0; t < block; ++t)
        if (fibers[t]->state != AT_BLOCK && fibers[t]->state != DONE) return false;
    for (unsigned t = 0; t < block; ++t)
        if (fibers[t]->state == AT_BLOCK) fibers[t]->state = RUNNABLE;
    return true;
}

inline void run_block(unsigned block)
{
    for (unsigned t = 0; t < block; ++t) {
        Fiber& f = fiber(t);
        f.state = RUNNABLE;
        f.shuffles = 0;
    }
    for (unsigned live = block; live > 0;) {
        for (unsigned t = 0; t < block; ++t) {
            if (fibers[t]->state != RUNNABLE) continue;
            resume(*fibers[t]);
            live -= fibers[t]->state == DONE;
        }
        current = nullptr;
        if (live > 0 && !release(block))
            fail("deadlock: threads wait at different barriers (a divergent __syncthreads or shuffle)");
    }
}

inline void wait(State at)
{
    current->state = at;
    suspend();
}

}  // namespace emu

struct float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) int4 { int x, y, z, w; };
inline double2 make_double2(double x, double y) { return double2{x, y}; }

template <typename T> inline T __ldg(const T* p) { return *p; }
template <typename T> inline T __ldcg(const T* p) { return *p; }
inline void __syncthreads() { emu::wait(emu::AT_BLOCK); }
inline void __threadfence() {}  // one OS thread: every write is seen in program order
template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int o)
{
    static_assert(sizeof(T) <= sizeof(unsigned long long), "a shuffled value fits 8 bytes");
    if (mask != 0xffffffffu) emu::fail("only full-warp shuffles are emulated");
    emu::Fiber& f = *emu::current;
    const unsigned lane = f.tid & 31, warp = f.tid >> 5, src = (f.tid & ~31u) | (lane ^ unsigned(o));
    const unsigned parity = f.shuffles++ & 1;
    std::memcpy(&emu::shfl_buf[warp][parity][lane], &v, sizeof(T));
    emu::wait(emu::AT_WARP);
    // the source lane wrote this shuffle's value unless it returned before it
    if (src >= blockDim.x || emu::fibers[src]->shuffles < f.shuffles)
        emu::fail("shuffle from a lane that returned");
    T r;
    std::memcpy(&r, &emu::shfl_buf[warp][parity][src & 31], sizeof(T));
    return r;
}
// One OS thread runs every CUDA thread: a read-modify-write cannot be interleaved.
template <typename T> inline T atomicAdd(T* p, T v)
{
    const T old = *p;
    *p = old + v;
    return old;
}
inline int atomicOr(int* p, int v)
{
    const int old = *p;
    *p = old | v;
    return old;
}
inline int atomicMin(int* p, int v)
{
    const int old = *p;
    if (v < old) *p = v;
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

// kernel<<<grid, block>>>(args...): blocks in sequence, the threads of a block as fibers.
template <typename... P, typename... A> void launch(unsigned grid, unsigned block, void (*k)(P...), A... args)
{
    if (block == 0 || block > 1024 || block % 32) emu::fail("block: a multiple of 32 up to 1024");
    auto call = [&] { k(args...); };
    emu::job = [](void* c) { (*static_cast<decltype(call)*>(c))(); };
    emu::job_args = &call;
    gridDim = dim3{grid};
    blockDim = dim3{block};
    for (unsigned b = 0; b < grid; ++b) {
        blockIdx = dim3{b};
        emu::run_block(block);
    }
}
