// Runs the GPU step kernels on the host through shim.h, with the launch sequence of
// fvswe/backends/gpu.py (initial dt, per-step kernels, batches of idle-safe steps).
// Build: g++ -std=c++20 -O1 -ffp-contract=off -pthread -Wno-psabi -DFVSWE_* -DFVSWE_BLOCK=32
//        [-DGATHER] -I<cuda dir> driver.cpp
// stdin: int32 L, E, mode (0 lagged, 1 nonlagged, 2 fixed), max_steps, batch;
//        float64 t_end, dt_fixed, cfl, g, r, eps_h; then the device arrays in the order
//        read below. stdout: the packed state, then the control block.
#include "shim.h"
#ifdef GATHER
#include "gather.cu"
#else
#include "edge.cu"
#endif
#include <cstdio>

template <typename T> static std::vector<T> input(size_t n)
{
    std::vector<T> v(n);
    if (fread(v.data(), sizeof(T), n, stdin) != n) std::exit(2);
    return v;
}

int main()
{
    const auto hdr = input<int>(5);
    const auto prm = input<double>(6);
    const int L = hdr[0], E = hdr[1], mode = hdr[2], batch = hdr[4];
    const unsigned B = FVSWE_BLOCK, cgrid = (L + B - 1) / B, egrid = (E + B - 1) / B;
    const real g = real(prm[3]), r = real(prm[4]), eps_h = real(prm[5]);
    auto W = input<real4>(size_t(L) * NVEC);
    auto area = input<real>(L);
    const auto idx = input<int4>(E);
    const auto en = input<real2>(E);
    const auto el = input<real>(E);
    const auto code = input<int>(size_t(L) * FVSWE_K);
    const auto sn = input<real2>(size_t(L) * FVSWE_K);
    const auto sl = input<real>(size_t(L) * FVSWE_K);
    std::vector<real4> W2(W.size()), S(size_t(L) * FVSWE_K * NVEC);
    std::vector<real> partial(cgrid);
    Ctrl c{};
    c.t_end = prm[0];
    c.dt_fixed = prm[1];
    c.cfl = prm[2];
    c.max_steps = hdr[3];
    c.fixed = mode == 2;
    c.dt = mode == 2 ? prm[1] : NAN;

    auto step = [&](int parity) {
#ifdef GATHER
        real4* in = parity ? W2.data() : W.data();
        real4* out = parity ? W.data() : W2.data();
        auto gather = [&](int op, real4* a, real4* b) {
            launch(cgrid, B, gather_step, L, a, b, area.data(), code.data(), sn.data(), sl.data(), &c,
                   partial.data(), g, r, eps_h, op);
        };
        if (mode == 0) {
            gather(OP_UPDATE | OP_DT | OP_COUNT, in, out);
        } else {
            if (mode == 1) gather(OP_DT, in, in);
            gather(OP_UPDATE | OP_COUNT, in, out);
        }
#else
        (void)parity;
        launch(egrid, B, edge_pass, E, W.data(), idx.data(), en.data(), el.data(), S.data(), &c, g, r,
               eps_h, int(OP_COUNT));
        auto volume = [&](int op) {
            launch(cgrid, B, volume_pass, L, W.data(), area.data(), S.data(), &c, partial.data(), op);
        };
        if (mode == 0) {
            volume(OP_UPDATE | OP_DT);
        } else {
            if (mode == 1) volume(OP_DT);
            volume(OP_UPDATE);
        }
#endif
    };
    if (mode == 0) {  // initial dt from the speeds of W^0
#ifdef GATHER
        launch(cgrid, B, gather_step, L, W.data(), W.data(), area.data(), code.data(), sn.data(),
               sl.data(), &c, partial.data(), g, r, eps_h, int(OP_DT));
#else
        launch(egrid, B, edge_pass, E, W.data(), idx.data(), en.data(), el.data(), S.data(), &c, g, r,
               eps_h, 0);
        launch(cgrid, B, volume_pass, L, W.data(), area.data(), S.data(), &c, partial.data(), int(OP_DT));
#endif
    }
    for (;;) {
        const long long before = c.steps;
        for (int s = 0; s < batch; ++s) step(s % 2);
        if (c.steps >= c.max_steps || c.t >= c.t_end || c.stalled || c.steps == before) break;
    }
    fwrite(W.data(), sizeof(real4), W.size(), stdout);
    fwrite(&c, sizeof(Ctrl), 1, stdout);
    return 0;
}
