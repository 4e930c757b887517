// Runs the GPU step kernels on the host through shim.h, following the kernel plans of
// fvswe/backends/gpu.py (step_plan, initial_dt_plan) in batches of idle-safe steps.
// Build: g++ -std=c++17 -O1 -ffp-contract=off -DFVSWE_* -I<cuda dir> driver.cpp
// (any FVSWE_BLOCK of whole warps; the tests use gpu.DEFAULT_BLOCK)
// stdin: int32 L, E, max_steps, batch, friction kind, n_level, n_tables, n_samples,
//        interfacial (0/1); float64 t_end, dt (NaN unless fixed), fixed (0/1), cfl, g, r, eps_h;
//        three plans (initial dt, even step, odd step), each an int32 count and
//        (kernel, op, src, dst) int32 rows with kernel 0 edge_pass, 1 volume_pass,
//        2 gather_step, 3 slot_step, 4 limit_theta, 5 limit_update (gpu.LIMIT_BLOCKS blocks
//        at most, given as int32 after the plans), 6 block_step, 7 grid_step (quads only); the level tables (int32 table per level edge, int64
//        offsets, float64 times, float64 values); the per-cell float64 friction and
//        interfacial coefficients (L each, when on); then the device arrays in the order read
//        below; then the forcing: int32 n_wind, wind law, coriolis (0/1); float64 C_d,
//        rho_air/rho_water; float64 wind times, u, v (n_wind each); float64 f per cell (if
//        coriolis); then block_step's edge tasks: int32 n_blocks, n_tasks; int32 start
//        (n_blocks + 1), int4 tasks, real2 normals, real lengths (n_tasks each); then grid.cu's
//        arrays (gpu.grid_arrays): int32 nx, ny (0, 0: none), area stride; real lengths
//        (nx + ny), int32 side codes (2 nx + 2 ny), real areas (L if the stride is 1, else 1
//        unless none). stdout: the packed state (buffer 0), then the control block.
#include "shim.h"
#include "edge.cu"
#include "gather.cu"
#include "slot.cu"
#include "block.cu"
#if FVSWE_K == 4
#include "grid.cu"
#endif
#include "stdin.h"
#include <algorithm>

int main()
{
    const auto hdr = input<int>(9);
    const auto prm = input<double>(7);
    const int L = hdr[0], E = hdr[1], batch = hdr[3];
    const unsigned B = FVSWE_BLOCK, cgrid = (L + B - 1) / B, egrid = (E + B - 1) / B;
    const unsigned sgrid = (L + CELLS_PER_BLOCK - 1) / CELLS_PER_BLOCK;
    const real g = real(prm[4]), r = real(prm[5]), eps_h = real(prm[6]);
    const Plan init = input_plan(), even = input_plan(), odd = input_plan();
    const unsigned lgrid = std::min(cgrid, unsigned(input<int>(1)[0]));
    const auto level_table = input<int>(hdr[5]);
    const auto level_offsets = input<long long>(hdr[6] + 1);
    const auto level_times = input<double>(hdr[7]);
    const auto level_values = input<double>(hdr[7]);
    std::vector<double> level_flux(2 * hdr[5]);
    const auto friction_coef = input<double>(hdr[4] ? L : 0);
    const auto interfacial_coef = input<double>(hdr[8] ? L : 0);
    auto W = input<real4>(size_t(L) * NVEC);
    const auto area = input<real>(L);
    const auto idx = input<int4>(E);
    const auto en = input<real2>(E);
    const auto el = input<real>(E);
    const auto code = input<int>(size_t(L) * FVSWE_K);
    const auto sn = input<real2>(size_t(L) * FVSWE_K);
    const auto sl = input<real>(size_t(L) * FVSWE_K);
    const auto fhdr = input<int>(3);
    const auto fprm = input<double>(2);
    const auto wind_times = input<double>(fhdr[0]);
    const auto wind_u = input<double>(fhdr[0]);
    const auto wind_v = input<double>(fhdr[0]);
    const auto coriolis_f = input<double>(fhdr[2] ? L : 0);
    const auto bhdr = input<int>(2);
    const auto bstart = input<int>(size_t(bhdr[0]) + 1);
    const auto btask = input<int4>(bhdr[1]);
    const auto bn = input<real2>(bhdr[1]);
    const auto bl = input<real>(bhdr[1]);
    const auto ghdr = input<int>(3);
    const int nx = ghdr[0], ny = ghdr[1];
    const auto glength = input<real>(size_t(nx) + ny);
    const auto gcode = input<int>(2 * (size_t(nx) + ny));
    const auto garea = input<real>(nx == 0 ? 0 : ghdr[2] ? L : 1);
    std::vector<real4> W2(W.size()), S(size_t(L) * FVSWE_K * NVEC);
#if FVSWE_K == 4
    // grid.cu's tiles (gpu.grid_blocks)
    const unsigned tgrid = (nx + FVSWE_TILE_X - 1) / FVSWE_TILE_X *
                           ((ny + TILE_Y - 1) / TILE_Y);
#else
    const unsigned tgrid = 0;
#endif
    std::vector<real> partial(std::max({size_t(sgrid), size_t(bhdr[0]), size_t(tgrid)}));
    std::vector<int> lim_cells(L), lim_claim(L);  // the limiter's arrays as a step finds them
    std::vector<double> lim_theta(2 * size_t(L), 1.0);
    real4* bufs[2] = {W.data(), W2.data()};
    Ctrl c{};
    c.max_steps = hdr[2];
    c.t_end = prm[0];
    c.dt = prm[1];
    c.dt_fixed = prm[1];
    c.fixed = int(prm[2]);
    c.cfl = prm[3];
    c.g = prm[4];
    c.friction = hdr[4];
    c.friction_coef = friction_coef.data();
    // one value for all cells where they are equal, as gpu.pointed_arrays uploads them
    c.friction_stride = std::adjacent_find(friction_coef.begin(), friction_coef.end(),
                                           std::not_equal_to<>()) != friction_coef.end();
    c.r = prm[5];
    c.eps_h = prm[6];
    c.interfacial_coef = hdr[8] ? interfacial_coef.data() : nullptr;
    c.level_table = level_table.data();
    c.level_offsets = level_offsets.data();
    c.level_times = level_times.data();
    c.level_values = level_values.data();
    c.level_flux = level_flux.data();
    c.n_level = hdr[5];
    c.coriolis_f = fhdr[2] ? coriolis_f.data() : nullptr;
    c.wind_times = wind_times.data();
    c.wind_u = wind_u.data();
    c.wind_v = wind_v.data();
    c.n_wind = fhdr[0];
    c.wind_law = fhdr[1];
    c.wind_cd = fprm[0];
    c.wind_ratio = fprm[1];
    c.lim_cells = lim_cells.data();
    c.lim_theta = lim_theta.data();
    c.lim_claim = lim_claim.data();
    c.owned = L;

    auto run = [&](const Plan& plan) {
        for (const auto& [kernel, op, src, dst] : plan) {
            if (kernel == 0)
                launch(egrid, B, edge_pass, E, bufs[src], idx.data(), en.data(), el.data(), S.data(), &c,
                       g, r, eps_h, op);
            else if (kernel == 1)
                launch(cgrid, B, volume_pass, L, bufs[src], bufs[dst], area.data(), S.data(), &c,
                       partial.data(), eps_h, op);
#if FVSWE_LAYERS == 2
            else if (kernel == 4)
                launch(lgrid, B, limit_theta, bufs[src], area.data(), code.data(), sn.data(), sl.data(),
                       &c, g, r, eps_h);
            else if (kernel == 5)
                launch(lgrid, B, limit_update, bufs[src], bufs[dst], area.data(), code.data(), sn.data(),
                       sl.data(), &c, g, r, eps_h);
#endif
            else if (kernel == 6)
                launch(unsigned(bhdr[0]), B, block_step, L, bufs[src], bufs[dst], area.data(),
                       bstart.data(), btask.data(), bn.data(), bl.data(), &c, partial.data(), g, r,
                       eps_h, op);
#if FVSWE_K == 4
            else if (kernel == 7)
                launch(tgrid, B, grid_step, L, nx, ny, bufs[src], bufs[dst], garea.data(), ghdr[2],
                       glength.data(), gcode.data(), &c, partial.data(), g, r, eps_h, op);
#endif
            else
                launch(kernel == 2 ? cgrid : sgrid, B, kernel == 2 ? gather_step : slot_step, L,
                       bufs[src], bufs[dst], area.data(), code.data(), sn.data(), sl.data(), &c,
                       partial.data(), g, r, eps_h, op);
        }
    };
    run(init);
    for (;;) {
        const long long before = c.steps;
        for (int s = 0; s < batch; ++s) run(s % 2 ? odd : even);
        if (c.steps >= c.max_steps || c.t >= c.t_end || c.stalled || c.steps == before) break;
    }
    fwrite(W.data(), sizeof(real4), W.size(), stdout);
    fwrite(&c, sizeof(Ctrl), 1, stdout);
    return 0;
}
