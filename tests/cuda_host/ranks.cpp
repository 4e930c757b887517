// GPU ranks on the host (tests/test_gpu_ranks_host.py): the parts of one mesh run the gather or
// slot step kernels through shim.h in lockstep, following the kernel plans of
// fvswe/backends/gpu.py, with the halo hook of fvswe.parallel.GpuHalo.after between kernels:
// the state's halo rows copied from their owners once a step's update is final (after
// limit_update with two layers), theta of the halo cells copied after limit_theta and then
// limit_halo (fvswe.backends.gpu.HALO_SOURCE, which the test puts before this file), the
// control block's dt min-reduced (and stalled or-ed) after a dt pass.
// stdin: int32 P, max_steps, theta exchange (0/1: off leaves the owners' theta unseen),
//        limit blocks (gpu.LIMIT_BLOCKS); float64 t_end, cfl, g, r, eps_h; three plans (as
//        driver.cpp: initial dt, even step, odd step); then per part: int32 L, owned; the
//        packed state (L * NVEC real4), area (L), per slot code, normal, length (L * K);
//        int32 (owner part, index there) of each halo cell [owned, L).
// stdout: per part its packed state (buffer 0), then its control block.
#include "stdin.h"
#include <algorithm>
#include <cmath>

struct Part {
    int L, owned;
    std::vector<real4> W[2];
    std::vector<real> area;
    std::vector<int> code;
    std::vector<real2> sn;
    std::vector<real> sl;
    std::vector<int> owner;  // (part, index there) per halo cell
    std::vector<real> partial;
    std::vector<int> lim_cells, lim_claim;
    std::vector<double> lim_theta;
    Ctrl c{};
};

int main()
{
    const auto hdr = input<int>(4);
    const auto prm = input<double>(5);
    const int P = hdr[0], exchange_theta = hdr[2];
    const unsigned B = FVSWE_BLOCK;
    const real g = real(prm[2]), r = real(prm[3]), eps_h = real(prm[4]);
    const Plan init = input_plan(), even = input_plan(), odd = input_plan();
    std::vector<Part> parts(P);
    for (auto& p : parts) {
        const auto n = input<int>(2);
        p.L = n[0];
        p.owned = n[1];
        p.W[0] = input<real4>(size_t(p.L) * NVEC);
        p.W[1] = p.W[0];
        p.area = input<real>(p.L);
        p.code = input<int>(size_t(p.L) * FVSWE_K);
        p.sn = input<real2>(size_t(p.L) * FVSWE_K);
        p.sl = input<real>(size_t(p.L) * FVSWE_K);
        p.owner = input<int>(2 * size_t(p.L - p.owned));
        p.partial.resize((p.owned + CELLS_PER_BLOCK - 1) / CELLS_PER_BLOCK);
        p.lim_cells.resize(p.L);
        p.lim_claim.resize(p.L);
        p.lim_theta.assign(2 * size_t(p.L), 1.0);
        Ctrl& c = p.c;
        c.max_steps = hdr[1];
        c.t_end = prm[0];
        c.dt = NAN;
        c.cfl = prm[1];
        c.g = prm[2];
        c.r = prm[3];
        c.eps_h = prm[4];
        c.lim_cells = p.lim_cells.data();
        c.lim_theta = p.lim_theta.data();
        c.lim_claim = p.lim_claim.data();
        c.owned = p.owned;
    }
    auto halo_rows = [&](auto field, int row) {  // field(part) -> array of `row` values a cell
        for (auto& p : parts)
            for (int h = p.owned; h < p.L; ++h) {
                const int q = p.owner[2 * (h - p.owned)], i = p.owner[2 * (h - p.owned) + 1];
                std::copy_n(field(parts[q]) + size_t(i) * row, row, field(p) + size_t(h) * row);
            }
    };
    auto run = [&](const Plan& plan) {
        for (const auto& [kernel, op, src, dst] : plan) {
            for (auto& p : parts) {
                const unsigned cgrid = (p.owned + B - 1) / B;
                const unsigned sgrid = (p.owned + CELLS_PER_BLOCK - 1) / CELLS_PER_BLOCK;
                const unsigned lgrid = std::min(cgrid, unsigned(hdr[3]));
                real4 *win = p.W[src].data(), *wout = p.W[dst].data();
                if (kernel == 2 || kernel == 3)
                    launch(kernel == 2 ? cgrid : sgrid, B, kernel == 2 ? gather_step : slot_step,
                           p.owned, win, wout, p.area.data(), p.code.data(), p.sn.data(), p.sl.data(),
                           &p.c, p.partial.data(), g, r, eps_h, op);
#if FVSWE_LAYERS == 2
                else if (kernel == 4)
                    launch(lgrid, B, limit_theta, win, p.area.data(), p.code.data(), p.sn.data(),
                           p.sl.data(), &p.c, g, r, eps_h);
                else if (kernel == 5)
                    launch(lgrid, B, limit_update, win, wout, p.area.data(), p.code.data(),
                           p.sn.data(), p.sl.data(), &p.c, g, r, eps_h);
#endif
                else
                    std::exit(3);  // the edge variant: not emulated here
            }
            if (kernel == 4 && exchange_theta) {
                halo_rows([](Part& p) { return p.lim_theta.data(); }, 2);
                for (auto& p : parts)
                    launch((p.L - p.owned + 127) / 128 + 1, 128, limit_halo, &p.c, p.owned, p.L);
            }
            if (kernel == 5 || (FVSWE_LAYERS == 1 && (op & OP_UPDATE)))
                halo_rows([dst](Part& p) { return reinterpret_cast<real*>(p.W[dst].data()); },
                          4 * NVEC);
            if (op & OP_DT) {
                double dt = parts[0].c.dt;
                int stalled = 0;
                for (auto& p : parts) {
                    dt = std::min(dt, p.c.dt);
                    stalled |= p.c.stalled;
                }
                for (auto& p : parts) {
                    p.c.dt = dt;
                    p.c.stalled = stalled;
                }
            }
        }
    };
    run(init);
    for (;;) {
        const Ctrl& c = parts[0].c;
        const long long before = c.steps;
        run(even);
        run(odd);
        if (c.steps >= c.max_steps || c.t >= c.t_end || c.stalled || c.steps == before) break;
    }
    for (auto& p : parts) {
        fwrite(p.W[0].data(), sizeof(real4), p.W[0].size(), stdout);
        fwrite(&p.c, sizeof(Ctrl), 1, stdout);
    }
    return 0;
}
