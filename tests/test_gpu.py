"""The GPU backend against the NumPy reference and the CPU backend (needs CuPy and a GPU).

Every test is marked ``gpu`` and skipped, with the reason, where CuPy or a device
is missing. Run them with ``python3 -m pytest -q -m gpu tests/``.
"""

from __future__ import annotations

import numpy as np
import pytest
import schemes_helpers as h
from test_cuda_sources import (
    drain_simulation,
    flux_error,
    forcing_run,
    pulled_apart_layout,
    random_edges,
    surge_layout,
)
from test_vanishing import (
    bump_runs,
    limiter_window,
    pulled_apart_simulation,
    slope_surge_simulation,
)

from fvswe import registry
from fvswe.backends import gpu
from fvswe.backends.layout import Layout
from fvswe.boundary import edge_conditions
from fvswe.cases import get_case
from fvswe.grid import Grid
from fvswe.mesh.generate import structured_square
from fvswe.model import Model
from fvswe.schemes import get_flux
from fvswe.simulation import Simulation

OK, WHY = gpu.available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not OK, reason=f"no GPU backend here: {WHY}")]

TWO_LAYER_SCHEMES = registry.names(2)
SCHEMES = registry.cases()


@pytest.fixture(scope="module")
def sym_mesh():
    """Alternating-diagonal mesh with the square's symmetry group (16x16x2 cells)."""
    return structured_square(16)


def tiny_layout(layers: int, dtype, r: float) -> Layout:
    mesh = structured_square(2)
    model = Model(layers=layers, r=r if layers == 2 else 0.5)
    W0 = np.ones((mesh.n_cells, model.nvar))
    return Layout.build(mesh, model, W0, np.ones(mesh.n_cells), edge_conditions(mesh), dtype)


def cpu_and_gpu(case_name, mesh, scheme, dtype="float64", dt_mode="lagged", variant=None, dt=None):
    """A CPU Simulation of the case and a GpuBackend on its layout."""
    sim = get_case(case_name).simulation(
        mesh, scheme=scheme, dtype=dtype, dt_mode=dt_mode, dt=dt, backend="cpu"
    )
    B = gpu.GpuBackend(sim.layout, scheme, cfl=0.9, dt_mode=dt_mode, dt_fixed=dt, variant=variant)
    return sim, B


# -- kernel parity with the NumPy reference --------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("scheme", "layers"), SCHEMES)
def test_device_flux_matches_numpy_reference(scheme, layers, dtype):
    """debug_flux runs the module's scheme_flux on random wet states (docs/SCHEMES.md §10.1)."""
    double = dtype == "float64"
    rng = np.random.default_rng(3)
    # float32: moderate wet states, away from loss of hyperbolicity and thin layers, where
    # round-off is amplified
    moderate = {} if double else {"speed": 0.5, "fast": 0, "thin": 0}
    Wi, Wj, Hi, Hj, n = random_edges(rng, 20000, layers, **moderate)
    g, r, eps_h = 9.81, 0.5, 5e-3
    B = gpu.GpuBackend(tiny_layout(layers, dtype, r), scheme)
    # the reference sees exactly the inputs the device sees
    edges = tuple(np.asarray(a, dtype=dtype).astype(np.float64) for a in (Wi, Wj, Hi, Hj, n))
    got = B.debug_flux(*edges)
    ref = get_flux(scheme, layers)(*edges, g, r, eps_h, True)
    assert np.array_equal(got[3], ref[3])
    tol = 1e-12 if double else 1e-5
    assert flux_error(got, ref, edges, g) <= tol
    assert np.allclose(got[2], ref[2], rtol=tol, atol=0)


@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize("scheme", ["roe", "ir-roe"])
def test_device_gives_the_close_pairs_numpy_numbers(scheme, r):
    """The float64 device flux on the entropy fix's bound edges (test_roe_edges.close_pairs:
    close transonic internal pairs, gaps 1e-8 to 0.1, flat bed and bed steps) is NumPy's bit
    for bit, as on the host (docs/SCHEMES.md §3.6, "The internal pair"): the bound holds on
    the GPU."""
    from test_roe_edges import close_pairs

    flat, step, _, _ = close_pairs(r)
    edges = tuple(np.concatenate(p) for p in zip(flat, step, strict=True))
    B = gpu.GpuBackend(tiny_layout(2, "float64", r), scheme)
    got = B.debug_flux(*edges)
    ref = get_flux(scheme, 2)(*edges, 9.81, r, 5e-3, True)
    for a, b in zip(got, ref, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize("scheme", ["roe", "ir-roe"])
def test_float32_device_keeps_the_close_pairs_bound(scheme, r):
    """The float32 device flux (FMA contraction on) on the bound's edges rounded to float32
    keeps |D-|_s <= PAIR_BOUND V on the flat bed, and what the fix adds over bed steps
    (docs/SCHEMES.md §3.6, "float32 GPU modules")."""
    from test_roe_edges import PAIR_BOUND, close_pairs

    flat, step, _, _ = close_pairs(r)
    flat, step = (
        tuple(np.asarray(a, np.float32).astype(np.float64) for a in e) for e in (flat, step)
    )
    fixed, unfixed = (gpu.GpuBackend(tiny_layout(2, "float32", r), scheme, entropy_fix=fix)
                      for fix in (True, False))  # fmt: skip
    assert h.fluctuation_ratio(fixed.debug_flux(*flat)[0], flat, r=r)[0].max() <= PAIR_BOUND
    added = fixed.debug_flux(*step)[0] - unfixed.debug_flux(*step)[0]
    assert h.fluctuation_ratio(added, step, r=r)[0].max() <= PAIR_BOUND


# -- whole runs ------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", gpu.VARIANTS)
@pytest.mark.parametrize("case_name", ["test1", "test2"])
@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_runs_match_cpu_backend(scheme, case_name, variant, sym_mesh):
    sim, B = cpu_and_gpu(case_name, sym_mesh, scheme, variant=variant)
    sim.run(0.1)
    t, steps = B.advance(0.1, 10**6)
    assert (t, steps) == (sim.t, sim.steps) and t == 0.1
    W, ref = B.get_state(), sim.backend.get_state()
    scale = np.abs(ref).max(axis=0)
    assert (np.abs(W - ref).max(axis=0) / scale).max() <= 1e-10
    assert B.counters() == sim.backend.counters()


@pytest.mark.parametrize("dt_mode", ["nonlagged", "fixed"])
@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_dt_modes_match_cpu_backend(dt_mode, variant, sym_mesh):
    dt = 2e-3 if dt_mode == "fixed" else None
    sim, B = cpu_and_gpu("test1", sym_mesh, "ir-roe", dt_mode=dt_mode, variant=variant, dt=dt)
    sim.run(0.05)
    assert B.advance(0.05, 10**6) == (sim.t, sim.steps)
    W, ref = B.get_state(), sim.backend.get_state()
    assert (np.abs(W - ref).max(axis=0) / np.abs(ref).max(axis=0)).max() <= 1e-10


@pytest.mark.parametrize("scheme", [name for name, _ in registry.distinct_kernels(1)])
def test_single_layer_run_matches_cpu_backend(scheme):
    mesh = structured_square(12)
    kw = dict(layers=1, scheme=scheme, H=2.0,
              initial={"h": lambda x, y: np.where(x < 0, 2.0, 1.0)})  # fmt: skip
    cpu = Simulation(mesh, backend="cpu", **kw)
    cpu.run(0.2)
    sim = Simulation(mesh, backend="gpu", **kw)
    sim.run(0.2)
    assert (sim.t, sim.steps) == (cpu.t, cpu.steps)
    np.testing.assert_allclose(sim.state(), cpu.state(), rtol=0, atol=1e-10 * 2.0)


def test_advance_stops_at_max_steps_and_hits_t_end_exactly(sym_mesh):
    _, B = cpu_and_gpu("test1", sym_mesh, "pvm-ifcp")
    assert B.advance(0.1, 3) == (B.t, 3)
    assert B.t < 0.1
    t, steps = B.advance(0.1, 10**6)
    assert t == 0.1 and steps > 0 and B.steps == 3 + steps
    assert B.advance(0.1, 10) == (0.1, 0)
    t2, more = B.advance(0.1 + 1e-9, 10)  # a tiny last step, clipped
    assert t2 == 0.1 + 1e-9 and more == 1


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_lake_at_rest(scheme, dtype):
    mesh = structured_square(12)
    H = get_case("test2").H
    sim = Simulation(mesh, scheme=scheme, r=0.98, H=H, dtype=dtype, backend="gpu",
                     initial={"h1": 1.0, "h2": lambda x, y: H(x, y) + 1.0})  # fmt: skip
    W0 = sim.state().astype(np.float64)
    assert sim.run(10.0, max_steps=120).steps == 120
    W = sim.state().astype(np.float64)
    tol = 1e-12 if dtype == "float64" else 1e-5
    assert np.abs(W[:, [1, 2, 4, 5]]).max() <= tol
    assert np.abs(W[:, [0, 3]] - W0[:, [0, 3]]).max() <= tol


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case_name", ["test1", "test2"])
@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_mass_positivity_and_counters(scheme, case_name, dtype, sym_mesh):
    sim = get_case(case_name).simulation(sym_mesh, scheme=scheme, dtype=dtype, backend="gpu")
    summary = sim.run(0.1)
    assert summary.t == 0.1
    assert max(summary.mass_rel_drift) <= (1e-13 if dtype == "float64" else 1e-6)
    W = sim.state()
    assert W[:, 0].min() > 0.3 and W[:, 3].min() > 0.3
    assert summary.counters["clipped_cells"] == 0
    assert summary.counters["nonhyperbolic_edges"] == 0


def _mirror_map(mesh, transform):
    """Index of the cell whose centroid is the image of each cell's centroid."""
    key = {tuple(np.round(c, 9)): n for n, c in enumerate(mesh.centroid)}
    return np.array([key[tuple(np.round(c, 9))] for c in transform(mesh.centroid)])


@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_test1_symmetry(scheme, sym_mesh):
    sim = get_case("test1").simulation(sym_mesh, scheme=scheme, backend="gpu")
    sim.run(0.1)
    f = sim.fields()
    h1, q1x, q1y = f["h1"], f["q1x"], f["q1y"]
    assert np.ptp(h1) > 0.5
    flip_x = _mirror_map(sym_mesh, lambda c: c * [-1, 1])
    rot90 = _mirror_map(sym_mesh, lambda c: np.c_[-c[:, 1], c[:, 0]])
    tol = 1e-12 * np.abs(h1).max()
    np.testing.assert_allclose(h1[flip_x], h1, rtol=0, atol=tol)
    np.testing.assert_allclose(q1x[flip_x], -q1x, rtol=0, atol=tol)
    np.testing.assert_allclose(q1y[flip_x], q1y, rtol=0, atol=tol)
    np.testing.assert_allclose(h1[rot90], h1, rtol=0, atol=tol)
    np.testing.assert_allclose(q1x[rot90], -q1y, rtol=0, atol=tol)


@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_orderings_give_identical_results(variant, monkeypatch):
    monkeypatch.setenv("FVSWE_GPU_VARIANT", variant)
    mesh = structured_square(20)
    runs = {}
    for order in ("none", "rcm", "random", "morton"):
        sim = get_case("test1").simulation(mesh, scheme="ir-roe", order=order, backend="gpu")
        sim.run(0.05)
        runs[order] = (sim.steps, sim.state())
    steps0, W0 = runs["none"]
    for order, (steps, W) in runs.items():
        assert steps == steps0, order
        assert np.array_equal(W, W0), f"{order} differs by {np.abs(W - W0).max():.3g}"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("dt_mode", ["lagged", "nonlagged"])
@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_variants_agree(scheme, dt_mode, dtype, sym_mesh):
    """Bitwise in float64 (no FMA: each slot value is the same rounded expression in every
    variant); float32 modules may contract the flux into FMAs differently per kernel."""
    runs = []
    for variant in gpu.VARIANTS:
        _, B = cpu_and_gpu("test2", sym_mesh, scheme, dtype, dt_mode, variant)
        B.advance(0.1, 10**6)
        runs.append((B.t, B.steps, B.get_state()))
    t0, s0, W0 = runs[0]
    for t, steps, W in runs[1:]:
        assert (t, steps) == (t0, s0)
        if dtype == "float64":
            assert np.array_equal(W, W0), f"differ by {np.abs(W - W0).max():.3g}"
        else:
            assert (np.abs(W - W0).max(axis=0) / np.abs(W0).max(axis=0)).max() <= 1e-6


@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_graphs_off_gives_the_same_run(variant, sym_mesh):
    sim = get_case("test1").simulation(sym_mesh, scheme="pvm-ifcp", backend="cpu")
    runs = []
    for graphs in (True, False):
        B = gpu.GpuBackend(sim.layout, "pvm-ifcp", variant=variant, graphs=graphs, batch=4)
        B.advance(0.1, 10**6)
        runs.append((B.steps, B.get_state()))
    assert runs[0][0] == runs[1][0]
    assert np.array_equal(runs[0][1], runs[1][1])


def test_first_invalid_finds_nan_and_negative_depth(sym_mesh):
    sim, B = cpu_and_gpu("test1", sym_mesh, "pvm-ifcp")
    assert B.first_invalid() is None
    W = sim.layout.W0.copy()
    W[40, 4] = np.nan
    W[70, 3] = -1.0
    B.set_state(W)
    assert B.first_invalid() == (40, 4)
    W[40, 4] = 0.0
    B.set_state(W)
    assert B.first_invalid() == (70, 3)


def test_run_checks_every_backend_chunk(sym_mesh):
    """Simulation.run looks for blow-ups (a device sync) every backend.check_every steps
    by default, not every 100; an explicit check_every still wins."""
    sim = get_case("test1").simulation(sym_mesh, scheme="pvm-ifcp", backend="gpu")
    every = sim.backend.check_every
    assert every >= 1000 and every % sim.backend.batch == 0
    looks = []
    summary = sim.run(1e9, max_steps=2 * every + 5, callback=lambda s: looks.append(s.steps))
    assert summary.steps == 2 * every + 5
    assert looks == [every, 2 * every, 2 * every + 5]
    looks.clear()
    sim.run(1e9, max_steps=250, check_every=100, callback=lambda s: looks.append(s.steps))
    assert np.diff([2 * every + 5, *looks]).tolist() == [100, 100, 50]


@pytest.mark.parametrize("friction", [("chezy", 30.0), ("manning", 0.03)])
@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_tide_with_level_and_friction_matches_cpu_backend(variant, friction, monkeypatch):
    """hll-wd over a beach that dries, an imposed level on one side, bottom friction."""
    from fvswe.boundary import Level
    from fvswe.mesh.generate import strip

    monkeypatch.setenv("FVSWE_GPU_VARIANT", variant)
    mesh = strip(60, 2, x0=0.0, x1=300.0)

    def H(x, y):
        return 2.0 - x / 100.0

    def eta(t):
        return 0.5 * np.sin(2 * np.pi * np.asarray(t) / 60.0)

    kw = dict(layers=1, scheme="hll-wd", H=H, friction=friction,
              initial={"h": lambda x, y: np.maximum(H(x, y), 0.0)},
              boundary={"west": Level(eta, every=1.0, until=200.0), "east": "wall",
                        "wall": "wall"})  # fmt: skip
    cpu, dev = Simulation(mesh, backend="cpu", **kw), Simulation(mesh, backend="gpu", **kw)
    cpu.run(120.0)
    dev.run(120.0)
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps)
    W, ref = dev.state(), cpu.state()
    assert np.abs(W - ref).max() <= 1e-10 * np.abs(ref).max()
    inflow = dev.backend.counters()["level_inflow"]
    assert inflow == pytest.approx(cpu.backend.counters()["level_inflow"], rel=1e-10)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_coriolis_and_wind_match_cpu_backend(variant, layers, dtype, monkeypatch):
    """Coriolis and wind (tests/test_cuda_sources.py's forcing_run): the CPU's state."""
    monkeypatch.setenv("FVSWE_GPU_VARIANT", variant)
    cpu, _, t_end = forcing_run(layers, dtype=dtype)
    dev, _, _ = forcing_run(layers, dtype=dtype, backend="gpu")
    cpu.run(t_end)
    dev.run(t_end)
    W, ref = dev.state(), cpu.state()
    tol = 1e-10 if dtype == "float64" else 1e-5
    if dtype == "float64":
        assert (dev.t, dev.steps) == (cpu.t, cpu.steps)
    assert np.abs(W - ref).max() <= tol * np.abs(ref).max()


@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_snapshot_and_restore_continue_bitwise(variant, sym_mesh):
    """A restart from a checkpoint between whole steps (the first run stopped by max_steps;
    stopping it at a t_end would clip a step) continues exactly as the uninterrupted run."""
    _, whole = cpu_and_gpu("test1", sym_mesh, "ir-roe", variant=variant)
    whole.advance(0.1, 10**6)
    _, first = cpu_and_gpu("test1", sym_mesh, "ir-roe", variant=variant)
    assert first.advance(0.1, 2) == (first.t, 2) and first.t < 0.1 and whole.steps > 2
    snap = first.snapshot()
    _, second = cpu_and_gpu("test1", sym_mesh, "ir-roe", variant=variant)
    second.restore(snap)
    assert (second.t, second.steps) == (snap["t"], snap["steps"])
    second.advance(0.1, 10**6)
    assert (second.t, second.steps) == (whole.t, whole.steps)
    assert np.array_equal(second.get_state(), whole.get_state())
    assert second.counters() == whole.counters()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case_name", ["cgrid-drop", "cgrid-island", "cgrid-tide", "mjos-drop"])
def test_grid_cases_match_cpu_backend(case_name, dtype):
    """The single-layer grid cases on quads (wetting and drying, levels, friction)."""
    case = get_case(case_name).with_grid(32, 32)
    cpu = case.simulation(dtype=dtype, backend="cpu")
    dev = case.simulation(dtype=dtype, backend="gpu")
    t_end = 50 * (cpu.backend.dt_fixed or 1.0)
    cpu.run(t_end, max_steps=50)
    dev.run(t_end, max_steps=50)
    assert dev.t == cpu.t
    if dtype == "float64":  # float32 dt differs in its last bits (the CPU forms it in float64)
        assert dev.steps == cpu.steps
    W, ref = dev.state().astype(np.float64), cpu.state().astype(np.float64)
    tol = 1e-10 if dtype == "float64" else 1e-4
    assert np.abs(W - ref).max() <= tol * np.abs(ref).max()
    assert W[:, 0].min() >= 0


# -- the positivity limiter (docs/SCHEMES.md §13.4; the host-shim tests' mirrors) ----------------


def surge_backend(variant: str, t0: float = 0.9, dtype: str = "float64") -> gpu.GpuBackend:
    """A GpuBackend on the slope surge as the CPU backend leaves it at ``t0`` (t restarts at 0)."""
    layout = surge_layout(t0, dtype)
    return gpu.GpuBackend(layout, "pvm-ifcp", dt_mode="nonlagged", variant=variant)


@pytest.mark.parametrize("dt_mode", ["nonlagged", "lagged"])
@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_limiter_limits_the_window_as_the_cpu(variant, dt_mode):
    """tests/test_vanishing.limiter_window on the device (40 steps of the pulled-apart layer
    where the limiter acts, its momentum terms and eps_u damping included): state and counters
    bit for bit the CPU backend's."""
    layout, want, counts = limiter_window(dt_mode)
    B = gpu.GpuBackend(layout, "pvm-ifcp", dt_mode=dt_mode, variant=variant)
    assert B.advance(10.0, 40)[1] == 40
    assert counts["limited"] > 0 and B.counters() == counts
    assert np.array_equal(B.get_state(), want)


@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_limiter_limits_the_window_in_float32_as_the_cpu(variant):
    """The float32 limiter window of tests/test_vanishing on the device: the limiter acts,
    nothing is clipped, the state is the CPU backend's to 1e-3 of its largest value."""
    layout, want, _ = limiter_window("nonlagged", "float32")
    B = gpu.GpuBackend(layout, "pvm-ifcp", dt_mode="nonlagged", variant=variant)
    assert B.advance(10.0, 40)[1] == 40
    counters = B.counters()
    assert counters["limited"] > 0 and counters["clipped_cells"] == 0
    W = B.get_state().astype(np.float64)
    assert np.abs(W - want).max() <= 1e-3 * np.abs(want).max()


@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_limiter_limits_the_pulled_apart_layer_as_the_cpu(variant):
    """tests/test_vanishing.pulled_apart_simulation (nx = 100) to t = 0.5 s on the device:
    state, steps and counters (73 limited cell-layers) bit for bit the CPU backend's."""
    cpu = pulled_apart_simulation(100)
    B = gpu.GpuBackend(cpu.layout, "pvm-ifcp", dt_mode="nonlagged", variant=variant)
    cpu.backend.advance(0.5, 10**6)
    assert B.advance(0.5, 10**6) == (cpu.t, cpu.steps)
    assert B.counters() == cpu.backend.counters() and B.counters()["limited"] == 73
    assert np.array_equal(B.get_state(), cpu.backend.get_state())


def test_triangle_surge_runs_to_4_s_as_the_cpu():
    """The slope surge on 200 triangles to t = 4 s on the device (default variant): no clip,
    each layer's mass to round-off, the tip's edges reconstructed (the bed-step criterion,
    docs/SCHEMES.md §13.1: the limiter idle), and the state, steps and counters bit for bit
    the CPU backend's."""
    cpu = slope_surge_simulation("pvm-ifcp", 100)
    dev = slope_surge_simulation("pvm-ifcp", 100, backend="gpu")
    s, sd = cpu.run(4.0), dev.run(4.0)
    assert sd.counters["clipped_cells"] == 0 and max(sd.mass_rel_drift) <= 1e-13
    assert sd.counters["limited"] == 0 and sd.counters == s.counters
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps)
    assert np.array_equal(dev.state(), cpu.state())


@pytest.mark.parametrize("layer", [2, 1])
@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize("scheme", ["roe", "ir-roe", "pvm-ifcp"])
def test_thin_tips_over_a_bump_run_20_s_as_the_cpu(scheme, r, layer):
    """scripts/thin_layer_bump.py's runs (issue 33, item 1; nx = 100, default settings) on the
    device: 20 s with no clip, each layer's mass to round-off, no negative depth, and the
    state, steps and counters bit for bit the CPU backend's (docs/SCHEMES.md §13.1)."""
    cpu = bump_runs.simulation(layer, scheme, r, 100, None)
    s = cpu.run(20.0)
    dev = bump_runs.simulation(layer, scheme, r, 100, None, backend="gpu")
    sd = dev.run(20.0)
    assert sd.counters["clipped_cells"] == 0 and max(sd.mass_rel_drift) <= 1e-13
    assert dev.state()[:, [0, 3]].min() >= 0 and sd.counters["thin_layer_edges"] > 0
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps) and sd.counters == s.counters
    assert np.array_equal(dev.state(), cpu.state())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_limiter_carries_the_pulled_apart_layer(dtype):
    """The pulled-apart layer from t = 0.05 to 0.35 s: the limiter acts, nothing is clipped, each
    layer's mass holds to 1e-13 (float32: 1e-6), no depth is negative, every variant gives
    the same state bit for bit (float32: the variants' FMA contractions differ, docs/GPU.md
    "Reproducibility across variants", and the limiter's decisions at the front amplify
    that: each component's mean difference within 1e-3 of its scale)."""
    runs = []
    for variant in gpu.VARIANTS:
        B = gpu.GpuBackend(pulled_apart_layout(0.05, dtype), "pvm-ifcp", dt_mode="nonlagged",
                           variant=variant)  # fmt: skip
        mass0 = np.array(B.layer_mass(B.layout.area))
        assert B.advance(0.3, 10**6)[0] == 0.3
        counters = B.counters()
        assert counters["limited"] > 0 and counters["clipped_cells"] == 0
        assert B.first_clip is None
        drift = np.abs(np.array(B.layer_mass(B.layout.area)) - mass0) / mass0
        assert drift.max() <= (1e-13 if dtype == "float64" else 1e-6)
        assert B.first_invalid() is None  # no NaN, no negative depth
        runs.append((B.get_state(), counters))
    W0, counters0 = runs[0]
    for W, counters in runs[1:]:
        if dtype == "float64":
            assert np.array_equal(W, W0) and counters == counters0
        else:
            scale = np.abs(W0).max(axis=0)
            assert (np.abs(W - W0).mean(axis=0) <= 1e-3 * scale).all()


@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_limiter_leaves_runs_it_does_not_limit_unchanged(variant):
    """The slope surge to t = 0.9 s: candidates are listed but none is limited, and the
    state is bitwise the CPU backend's (no limiter)."""
    B = surge_backend(variant, 0.0)
    B.advance(0.9, 10**6)
    assert B.counters()["limited"] == 0 and B._read_ctrl()["listed"] > 0
    assert np.array_equal(B.get_state(), surge_layout(0.9).W0)


@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_limiter_records_scaled_level_fluxes(variant):
    """test_cuda_sources.drain_simulation on the device: the limiter acts and each layer's
    volume changes by exactly the level inflow counter; bitwise the host shim's variants."""
    sim = drain_simulation()
    B = gpu.GpuBackend(sim.layout, "pvm-ifcp", dt_mode="fixed", dt_fixed=0.016, variant=variant)
    mass0 = np.array(B.layer_mass(B.layout.area))
    assert B.advance(1.0, 10)[1] == 10 and B.courant_violation is None
    counters = B.counters()
    assert counters["limited"] > 0 and counters["clipped_cells"] == 0
    inflow = np.array([counters["level_inflow"], counters["level_inflow2"]])
    mass = np.array(B.layer_mass(B.layout.area))
    assert (np.abs(mass - mass0 - inflow) / mass0).max() <= 1e-13
    assert B.first_invalid() is None


def block_and_gather(layout, scheme, dtype, cells, **options) -> tuple[np.ndarray, ...]:
    """States after 40 steps of the gather and the block variant (``cells`` a thread block)."""
    runs = []
    for variant, extra in (("gather", {}), ("block", {"cells": cells})):
        B = gpu.GpuBackend(layout, scheme, variant=variant, **options, **extra)
        B.advance(1e6, 40)
        assert B.steps == 40
        runs.append((B.get_state(), B.counters()))
    (W0, c0), (W, c) = runs
    if np.dtype(dtype) == np.float64:  # no FMA: the same rounded expressions, bitwise
        assert np.array_equal(W, W0), f"differ by {np.abs(W - W0).max():.3g}"
        assert c == c0
    else:  # float32 modules may contract the flux into FMAs differently per kernel
        # per component against its own scale; a discharge against its layer's largest
        # discharge (cgrid-tide's qy is 0 everywhere: 0/0 must not pass for a match)
        scale = np.abs(W0).max(axis=0).reshape(-1, 3)
        scale[:, 1:] = scale[:, 1:].max(axis=1, keepdims=True)
        assert (np.abs(W - W0).max(axis=0) <= 1e-5 * scale.ravel()).all()
    return W0, W


@pytest.mark.parametrize(
    ("scheme", "dt_mode", "dtype", "cells"),
    [(s, m, "float64", 32) for s in TWO_LAYER_SCHEMES for m in ("lagged", "nonlagged", "fixed")]
    + [(s, "lagged", "float32", 256) for s in TWO_LAYER_SCHEMES],
)
def test_block_variant_matches_gather_two_layers(scheme, dt_mode, dtype, cells):
    """test1 in random order (most edges cross blocks of 32; 256 cells a block of 128
    threads: two cells a thread), every dt mode."""
    dt = 2e-3 if dt_mode == "fixed" else None
    sim = get_case("test1").simulation(structured_square(16), scheme=scheme, dtype=dtype,
                                       dt_mode=dt_mode, dt=dt, order="random",
                                       backend="cpu")  # fmt: skip
    block_and_gather(sim.layout, scheme, dtype, cells, dt_mode=dt_mode, dt_fixed=dt)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case_name", ["cgrid-tide", "cgrid-island"])
def test_block_variant_matches_gather_on_quads(case_name, dtype):
    """hll-wd on quads: a level boundary and walls (cgrid-tide), wetting and drying; on
    64 x 64 cells the island's top stays dry for the 40 steps (on 32 x 32 it floods), and
    the block variant leaves the same cells dry."""
    case = get_case(case_name).with_grid(64, 64)
    sim = case.simulation(dtype=dtype, backend="cpu")
    B = sim.backend
    W0, W = block_and_gather(sim.layout, case.scheme, dtype, 32, dt_mode=B.dt_mode,
                             dt_fixed=B.dt_fixed)  # fmt: skip
    assert sim.layout.k == 4 and (W0[:, 0] == 0).any()
    assert np.array_equal(W[:, 0] == 0, W0[:, 0] == 0)


@pytest.mark.parametrize("variant", ["block", "gather"])
@pytest.mark.parametrize("scheme", ["pvm-ifcp", "roe"])
def test_fast_math_stays_within_float32_tolerance(scheme, variant, sym_mesh, monkeypatch):
    """A float32 run with fast_math (approximate division and square root, denormals flushed)
    differs from the IEEE float32 run, by no more than float32 round-off grown over 40
    steps: 1e-4 of each component's scale (a discharge: its layer's largest)."""
    monkeypatch.setenv("FVSWE_GPU_VARIANT", variant)
    runs = []
    for fast_math in (False, True):
        sim = get_case("test1").simulation(sym_mesh, scheme=scheme, dtype="float32",
                                           backend="gpu", fast_math=fast_math)  # fmt: skip
        assert sim.backend.variant == variant and sim.backend.fast_math == fast_math
        sim.backend.advance(1e6, 40)
        assert sim.backend.steps == 40
        runs.append(sim.backend.get_state().astype(np.float64))
    ieee, fast = runs
    scale = np.abs(ieee).max(axis=0).reshape(-1, 3)
    scale[:, 1:] = scale[:, 1:].max(axis=1, keepdims=True)
    assert not np.array_equal(fast, ieee)  # the options reached the compiler
    assert (np.abs(fast - ieee).max(axis=0) <= 1e-4 * scale.ravel()).all()


# -- the Cartesian grid variant (grid.cu) ----------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    ("case_name", "dt_mode"),
    [("cgrid-tide", "nonlagged"), ("cgrid-tide", "lagged"), ("cgrid-tide", "fixed"),
     ("cgrid-island", "fixed")],
)  # fmt: skip
def test_grid_variant_matches_gather(case_name, dt_mode, dtype):
    """grid.cu against gather.cu on the same grid (levels, walls, Chezy friction, wetting
    and drying; 150 x 41 cells, partial tiles): bitwise in float64 (the counters and the
    volume too); in float32 the same steps, t within 1e-6 (grid's speeds-only pass is
    compiled apart, so FMA contraction may move dt by an ulp) and the state within 1e-6."""
    case = get_case(case_name).with_grid(150, 41)
    dt = case.dt or (0.2 if dt_mode == "fixed" else None)
    runs = []
    for variant in ("grid", "gather"):
        sim = case.simulation(dtype=dtype, dt_mode=dt_mode, dt=dt, backend="gpu",
                              backend_options={"variant": variant})  # fmt: skip
        assert sim.backend.variant == variant
        sim.run(1800.0 if case_name == "cgrid-tide" else 1e9, max_steps=400)
        runs.append((sim.t, sim.steps, sim.state(), sim.backend.counters(), sim.mass()))
    (t, steps, W, counters, mass), (t0, s0, W0, counters0, mass0) = runs
    assert steps == s0 and steps > 100
    assert (W[:, 0] == 0).any() and (W[:, 0] > 0).any()  # wet and dry cells
    if dtype == "float64":
        assert np.array_equal(W, W0), f"differ by {np.abs(W - W0).max():.3g}"
        assert t == t0 and counters == counters0 and mass == mass0
    else:  # per component, relative to its largest value: a component 0 in gather (qy of
        # the pseudo-1-D tide) must be exactly 0 in grid
        assert (np.abs(W - W0).max(axis=0) <= 1e-6 * np.abs(W0).max(axis=0)).all()
        assert abs(t - t0) <= 1e-6 * t0


def test_grid_variant_is_chosen_on_grids_only():
    """A Grid run on the GPU gets ``grid`` (and reads fewer bytes a step than gather); a
    renumbered grid gets another variant; ``grid`` asked for on triangles is a ConfigError."""
    from fvswe.errors import ConfigError

    case = get_case("cgrid-tide").with_grid(64, 40)
    sim = case.simulation(backend="gpu")
    assert sim.backend.variant == "grid"
    gather = case.simulation(backend="gpu", backend_options={"variant": "gather"})
    assert sim.backend.bytes_per_step() < gather.backend.bytes_per_step() / 2
    assert case.simulation(backend="gpu", order="rcm").backend.variant != "grid"
    with pytest.raises(ConfigError, match="grid"):
        get_case("test1").simulation(structured_square(4), backend="gpu",
                                     backend_options={"variant": "grid"})  # fmt: skip


@pytest.mark.parametrize("variant", ["block", "edge", "gather", "slot", "grid"])
@pytest.mark.parametrize("case", ["wet-dry-bump-rk3", "dry-lower-layer-rk2"])
def test_linear_reconstruction_is_the_cpus_bitwise(variant, case):
    """Issue 27 stage 3 on the device: the linear reconstruction (linear.cuh) in each variant
    gives the CPU's float64 state, time and counters bit for bit: one layer around a dry
    island (SSP-RK3), two layers onto a dry lower layer (SSP-RK2), both with cells fallen
    back to first order (grid: on a Cartesian grid centred on the island;
    tests/test_reconstruction.py runs the same on the host)."""
    from test_reconstruction import _dry_lower_layer, _wet_dry_bump, irregular

    make, integrator = {"wet-dry-bump-rk3": (_wet_dry_bump, "ssp-rk3"),
                        "dry-lower-layer-rk2": (_dry_lower_layer, "ssp-rk2")}[case]  # fmt: skip
    mesh = irregular(12, half=5.0)
    if variant == "grid":
        mesh = Grid(20, 20, 0.5, 0.5, origin=(-5.0, -5.0)).mesh()
    cpu = make(mesh, backend="cpu", integrator=integrator, reconstruction="linear")
    dev = make(mesh, backend="gpu", integrator=integrator, reconstruction="linear",
               backend_options={"variant": variant})  # fmt: skip
    assert dev.backend.variant == variant
    for sim in (cpu, dev):
        sim.run(1e6, max_steps=40)
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps) and cpu.steps == 40
    assert np.array_equal(dev.state(), cpu.state())
    counts = cpu.backend.counters()
    assert dev.backend.counters() == counts and counts["first_order_cells"] > 0


@pytest.mark.parametrize("case", ["wet-dry-bump", "dry-lower-layer"])
def test_float32_linear_reconstruction_stays_near_the_cpus(case):
    """Issue 27 "Cost" on the device: a float32 block module reconstructs in float (FMAs
    contracted) and stays within 1e-6 of the CPU's float32 run (tests/test_reconstruction.py
    float32_linear_near_the_cpus, the host's the same)."""
    from test_reconstruction import _dry_lower_layer, _wet_dry_bump, float32_linear_near_the_cpus

    make = {"wet-dry-bump": _wet_dry_bump, "dry-lower-layer": _dry_lower_layer}[case]
    float32_linear_near_the_cpus(make, backend="gpu", backend_options={"variant": "block"})


def test_float32_linear_reconstruction_keeps_rest_depths_and_masses():
    """Lakes at rest, non-negative depths and each layer's mass in float32 on the device
    (tests/test_reconstruction.py float32_linear_properties, block)."""
    from test_reconstruction import float32_linear_properties

    float32_linear_properties(backend="gpu", backend_options={"variant": "block"})
