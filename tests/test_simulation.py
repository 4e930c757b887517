"""Whole-run properties of the CPU backend (docs/SCHEMES.md §10.1 items 2–8)."""

from __future__ import annotations

import numpy as np
import pytest

from fvswe import registry
from fvswe.boundary import WALL, edge_conditions
from fvswe.cases import get_case
from fvswe.errors import BlowUpError, ConfigError
from fvswe.mesh.generate import strip, structured_square
from fvswe.schemes import get_flux
from fvswe.simulation import Simulation

TWO_LAYER_SCHEMES = registry.names(2)


@pytest.fixture(scope="module")
def sym_mesh():
    """Alternating-diagonal mesh with the square's full symmetry group (16×16×2 cells)."""
    return structured_square(16)


def reference_step(mesh, W, H, scheme, layers, g, r, dt, eps_h=5e-3):
    """One fixed-Δt step written with the NumPy reference flux and ``np.add.at``."""
    flux = get_flux(scheme, layers)
    i, j = mesh.edge_cells.T
    interior = j >= 0
    Wj = W[np.where(interior, j, i)].copy()
    Hj = H[np.where(interior, j, i)]
    bc = edge_conditions(mesh)
    n = mesh.edge_normal
    for q in ((1, 2), (4, 5))[:layers]:
        qn = Wj[:, q[0]] * n[:, 0] + Wj[:, q[1]] * n[:, 1]
        wall = bc == WALL
        Wj[wall, q[0]] -= 2 * qn[wall] * n[wall, 0]
        Wj[wall, q[1]] -= 2 * qn[wall] * n[wall, 1]
    Fm, Fp, _ = flux(W[i], Wj, H[i], Hj, n, g=g, r=r, eps_h=eps_h)
    total = np.zeros_like(W)
    np.add.at(total, i, mesh.edge_length[:, None] * Fm)
    np.add.at(total, j[interior], (mesh.edge_length[:, None] * Fp)[interior])
    return W - dt / mesh.area[:, None] * total


@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_pipeline_step_matches_numpy_reference(scheme, sym_mesh):
    case = get_case("test2")
    sim = case.simulation(sym_mesh, scheme=scheme, dt_mode="fixed", dt=1e-3)
    W0 = sim.state().copy()
    rng = np.random.default_rng(1)
    W0[:, [1, 2, 4, 5]] = rng.normal(0, 0.3, (sym_mesh.n_cells, 4))  # moving layers
    sim.backend.set_state(W0)
    sim.run(1e-3)
    ref = reference_step(sym_mesh, W0, sim.layout.H, scheme, 2, 9.81, 0.98, 1e-3)
    np.testing.assert_allclose(sim.state(), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    assert np.abs(sim.state() - W0).max() > 1e-4  # the step did move something


@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_lake_at_rest_over_test2_bathymetry(scheme):
    mesh = structured_square(12)
    H = get_case("test2").H
    sim = Simulation(
        mesh, scheme=scheme, r=0.98, H=H, initial={"h1": 1.0, "h2": lambda x, y: H(x, y) + 1.0}
    )
    W0 = sim.state()
    summary = sim.run(10.0, max_steps=120)
    W = sim.state()
    assert summary.steps == 120
    assert np.abs(W[:, [1, 2, 4, 5]]).max() <= 1e-12
    assert np.abs(W[:, [0, 3]] - W0[:, [0, 3]]).max() <= 1e-12


@pytest.mark.parametrize("case_name", ["test1", "test2"])
@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_mass_positivity_and_counters(case_name, scheme, sym_mesh):
    sim = get_case(case_name).simulation(sym_mesh, scheme=scheme)
    summary = sim.run(0.1)
    assert summary.t == 0.1
    assert max(summary.mass_rel_drift) <= 1e-13
    W = sim.state()
    assert W[:, 0].min() > 0.3 and W[:, 3].min() > 0.3  # docs/SCHEMES.md §9: min h ≈ 0.4
    assert summary.counters["clipped_cells"] == 0
    assert summary.counters["nonhyperbolic_edges"] == 0


def _mirror_map(mesh, transform):
    """Index of the cell whose centroid is the image of each cell's centroid."""
    image = transform(mesh.centroid)
    key = {tuple(np.round(c, 9)): n for n, c in enumerate(mesh.centroid)}
    return np.array([key[tuple(np.round(c, 9))] for c in image])


@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_test1_symmetry(scheme, sym_mesh):
    sim = get_case("test1").simulation(sym_mesh, scheme=scheme, dt_mode="nonlagged")
    sim.run(0.1)
    f = sim.fields()
    h1, q1x, q1y = f["h1"], f["q1x"], f["q1y"]
    assert np.ptp(h1) > 0.5  # the dam has broken
    flip_x = _mirror_map(sym_mesh, lambda c: c * [-1, 1])
    rot90 = _mirror_map(sym_mesh, lambda c: np.c_[-c[:, 1], c[:, 0]])
    tol = 1e-12 * np.abs(h1).max()
    np.testing.assert_allclose(h1[flip_x], h1, rtol=0, atol=tol)
    np.testing.assert_allclose(q1x[flip_x], -q1x, rtol=0, atol=tol)
    np.testing.assert_allclose(q1y[flip_x], q1y, rtol=0, atol=tol)
    # rotating the mesh by 90° maps (qx, qy) at a cell to (-qy, qx) at its image
    np.testing.assert_allclose(h1[rot90], h1, rtol=0, atol=tol)
    np.testing.assert_allclose(q1x[rot90], -q1y, rtol=0, atol=tol)


@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_orderings_give_identical_results(scheme):
    mesh = get_case("test1").default_mesh()
    results = {}
    for order in ("none", "rcm", "gps", "random", "hilbert", "morton"):
        sim = get_case("test1").simulation(mesh, scheme=scheme, order=order)
        sim.run(0.02)
        results[order] = (sim.steps, sim.state())
    steps0, W0 = results["none"]
    for order, (steps, W) in results.items():
        assert steps == steps0, order
        assert np.array_equal(W, W0), f"{order} differs by {np.abs(W - W0).max():.3g}"


@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_float32_agrees_with_float64(scheme, sym_mesh):
    runs = {}
    for dtype in ("float64", "float32"):
        sim = get_case("test1").simulation(
            sym_mesh, scheme=scheme, dtype=dtype, dt_mode="fixed", dt=2e-3
        )
        sim.run(0.04)
        runs[dtype] = sim.state()
    W64, W32 = runs["float64"], runs["float32"]
    scale = np.abs(W64).max(axis=0)
    assert (np.abs(W32 - W64).max(axis=0) / scale).max() <= 1e-5


# -- 1-D problems on a strip -----------------------------------------------------------------


def l1_ratio(a, b, area):
    return np.sum(area * np.abs(a)) / np.sum(area * np.abs(b))


def stoker(x, t, hl, hr, g=9.81, x0=0.0):
    """Exact wet-bed dam break (Stoker): depth at x, time t."""
    from scipy.optimize import brentq

    cl = np.sqrt(g * hl)

    def jump(hm):
        u_rare = 2 * (cl - np.sqrt(g * hm))
        u_shock = (hm - hr) * np.sqrt(g * (hm + hr) / (2 * hm * hr))
        return u_rare - u_shock

    hm = brentq(jump, hr, hl)
    um = 2 * (cl - np.sqrt(g * hm))
    s = hm * um / (hm - hr)
    xi = (x - x0) / t
    h = np.where(xi < -cl, hl, (2 * cl - xi) ** 2 / (9 * g))
    h = np.where(xi > um - np.sqrt(g * hm), hm, h)
    return np.where(xi > s, hr, h)


@pytest.mark.parametrize("scheme", [name for name, _ in registry.distinct_kernels(1)])
def test_single_layer_dam_break_converges_to_stoker(scheme):
    """L1 error against Stoker falls with refinement; the transverse momentum of the
    triangulated strip (not exactly 1-D) is small and falls at first order too."""
    errors, transverse = [], []
    for nx in (100, 200, 400):
        mesh = strip(nx, 1, -5.0, 5.0)
        sim = Simulation(
            mesh,
            layers=1,
            scheme=scheme,
            H=0.0,
            initial={"h": lambda x, y: np.where(x < 0, 2.0, 1.0)},
        )
        sim.run(0.5)
        f = sim.fields()
        exact = stoker(f["x"], 0.5, 2.0, 1.0)
        errors.append(np.sum(f["area"] * np.abs(f["h"] - exact)) / np.sum(f["area"]))
        transverse.append(l1_ratio(f["qy"], f["qx"], f["area"]))
    assert errors[0] < 0.03
    assert errors[2] < 0.7 * errors[0]
    assert transverse[0] < 0.01 and transverse[2] < 0.5 * transverse[0]


def test_single_layer_roe_equals_hll_with_roe_speeds_on_a_run():
    """docs/SCHEMES.md §6: one layer: both agree when HLL uses Roe speeds (smooth flow)."""
    mesh = strip(50, 1, -5.0, 5.0)
    states = []
    for scheme in ("roe", "hll"):
        sim = Simulation(
            mesh,
            layers=1,
            scheme=scheme,
            H=0.0,
            initial={"h": lambda x, y: 1 + 0.1 * np.exp(-(x**2))},
        )
        sim.run(0.2)
        states.append(sim.state())
    assert np.abs(states[0] - states[1]).max() <= 1e-3  # Einfeldt bounds differ only near shocks


#: the paper's tests made y-independent (docs/SCHEMES.md §10.1 item 5): H, h1, h2 of x, and r.
STRIP_PROBLEMS = {
    "test1": (
        lambda x: np.full_like(x, 6.0),
        lambda x: np.where(np.abs(x) > 1.5, 4.0, 0.5),
        lambda x: 6.0 - np.where(np.abs(x) > 1.5, 4.0, 0.5),
        0.5,
    ),
    "test2": (
        lambda x: 1.0 - 1.5 * np.exp(-(x**2)),
        lambda x: np.where(x >= 0, 4.0, 0.5),
        lambda x: np.where(x >= 0, 0.5, 4.0),
        0.98,
    ),
}


def one_d_reference(scheme, nx, t_end, H, h1, h2, r, cfl=0.9, g=9.81):
    """A 1-D run of the NumPy reference flux on [-5, 5] (walls, non-lagged Δt): cell centres, h1."""
    flux = get_flux(scheme, 2)
    dx = 10.0 / nx
    x = -5 + dx * (np.arange(nx) + 0.5)
    W = np.zeros((nx, 6))
    W[:, 0] = h1(x)
    W[:, 3] = h2(x)
    Hc = H(x)
    normal = np.tile([1.0, 0.0], (nx + 1, 1))
    t = 0.0
    while t < t_end:
        Wl = np.vstack([W[:1], W])  # wall ghosts: mirror the normal momentum
        Wr = np.vstack([W, W[-1:]])
        Wl[0, [1, 4]] *= -1
        Wr[-1, [1, 4]] *= -1
        Hl, Hr = np.r_[Hc[:1], Hc], np.r_[Hc, Hc[-1:]]
        Fm, Fp, d = flux(Wl, Wr, Hl, Hr, normal, g=g, r=r)
        dt = min(cfl * dx / np.maximum(d[:-1], d[1:]).max(), t_end - t)
        W = W - dt / dx * (Fm[1:] + Fp[:-1])
        t = t_end if dt == t_end - t else t + dt
    return x, W[:, 0]


@pytest.mark.parametrize("problem", sorted(STRIP_PROBLEMS))
@pytest.mark.parametrize("scheme", TWO_LAYER_SCHEMES)
def test_strip_runs_converge_to_a_fine_1d_reference(scheme, problem):
    """docs/SCHEMES.md §10.1 item 5: 1-D test1/test2 on strips against a 10^4-cell 1-D run."""
    H, h1, h2, r = STRIP_PROBLEMS[problem]
    xf, hf = one_d_reference(scheme, 10_000, 0.1, H, h1, h2, r=r)
    errors, transverse = [], []
    for nx in (50, 100, 200):
        sim = Simulation(
            strip(nx, 1, -5.0, 5.0),
            scheme=scheme,
            r=r,
            H=lambda x, y: H(x),
            dt_mode="nonlagged",
            initial={"h1": lambda x, y: h1(x), "h2": lambda x, y: h2(x)},
        )
        sim.run(0.1)
        f = sim.fields()
        errors.append(l1_ratio(f["h1"] - np.interp(f["x"], xf, hf), f["h1"], f["area"]))
        transverse.append(l1_ratio(f["q1y"], f["q1x"], f["area"]))
    assert errors[0] < 0.05
    assert errors[1] < 0.85 * errors[0] and errors[2] < 0.85 * errors[1]
    assert transverse[2] < 0.3 * transverse[0]  # the triangles' transverse error is first order


# -- errors for people -----------------------------------------------------------------------


def test_negative_initial_depth_is_a_one_line_error(sym_mesh):
    with pytest.raises(ConfigError, match=r"initial h1: -[\d.]+ m in cell \d+ at \(.* negative"):
        Simulation(sym_mesh, H=6.0, initial={"h1": lambda x, y: x, "h2": 1.0})


def test_values_that_are_not_finite_are_named_before_the_run(sym_mesh):
    """Issue 34, item 6: a NaN bed or an infinite momentum ran, and blew up later."""
    H = lambda x, y: np.where(x > 0, np.nan, 6.0)  # noqa: E731
    with pytest.raises(ConfigError, match=r"^initial H: not finite \(nan\) in cell \d+ \("):
        Simulation(sym_mesh, H=H, initial={"h1": 1.0, "h2": 1.0})
    with pytest.raises(ConfigError, match=r"^initial q1x: not finite \(inf\) in cell 0 \("):
        Simulation(sym_mesh, H=6.0, initial={"h1": 1.0, "h2": 1.0, "q1x": np.inf})


def test_unknown_scheme_is_a_one_line_error(sym_mesh):
    with pytest.raises(ConfigError, match="scheme: unknown 'godunov'"):
        Simulation(sym_mesh, scheme="godunov", H=6.0, initial={"h1": 1.0, "h2": 1.0})


def test_blow_up_names_cell_step_and_time(sym_mesh):
    sim = get_case("test1").simulation(sym_mesh)
    W = sim.backend.get_state()
    W[0, 4] = np.nan  # what an unstable run leaves behind
    sim.backend.set_state(W)
    cell = int(sim.mesh.original_index[0])
    with pytest.raises(BlowUpError, match=rf"h1 = nan in cell {cell} at \(.*\) by step 1, t = "):
        sim.run(10.0, check_every=1)


def test_the_stop_names_the_largest_breach_first(sym_mesh):
    """A clip that added 8e-9 m^3 while a layer lost far more in the same stretch (issue 33:
    the stop blamed the clip): the one line names the layer's loss first, then the clip."""
    sim = get_case("test1").simulation(sym_mesh, backend="cpu")
    W = sim.backend.get_state()
    W[0, 3] -= 1e-3  # h2 loses 1e-3 m over cell 0 (~2e-4 m^3)
    sim.backend.set_state(W)
    sim.backend.first_clip = (0, 0, 0.0)  # and a clip added 8e-9 m^3
    sim.backend._counts.update(clipped_cells=1, clipped_volume=8e-9)
    with pytest.raises(BlowUpError) as err:
        sim.run(10.0, max_steps=1, check_every=1)
    msg = str(err.value)
    lost = sim.mass_initial[1] - sim.mass()[1]
    assert msg.startswith("mass of h2 changed by ") and f", {lost:.3g} m^3, by step 1" in msg
    assert "; also positivity lost: a negative depth was clipped to 0 in cell " in msg
    assert "the clipping added 8e-09 m^3 by step 1" in msg
    assert msg.count("allow_mass_error") == 1 and "\n" not in msg


@pytest.mark.parametrize("order", ["none", "rcm"])
def test_fixed_dt_above_the_stable_step_names_step_cell_and_courant(sym_mesh, order):
    """The first step whose fixed dt exceeds dt_stable = 2|V| / sum(|Gamma| ||D||) stops the
    run: the Courant number dt / dt_stable of the step (largest over the cells) and the
    first cell (lowest internal number) above 1, in the mesh's numbering."""
    case = get_case("test1")
    ref = case.simulation(sym_mesh, dt_mode="nonlagged", cfl=1.0, order=order)
    ref.backend.advance(1.0, 1)
    stable = ref.t  # the first step at Courant number 1
    sim = case.simulation(sym_mesh, dt_mode="fixed", dt=1.5 * stable, order=order)
    with pytest.raises(BlowUpError) as err:
        sim.run(1.0)
    msg = str(err.value)
    assert "\n" not in msg and "step 1 (t = 0 s)" in msg
    assert float(msg.split("up to ")[1].split(" ")[0]) == pytest.approx(1.5, rel=1e-12)
    lay = sim.layout
    speed = sim.backend.acc[:, lay.nvar].reshape(lay.n_cells, lay.k).sum(axis=1)
    first = np.flatnonzero(1.5 * stable * speed / (2 * lay.area) > 1)[0]
    assert f"in cell {int(sim.mesh.original_index[first])} at" in msg
    assert sim.steps == 1  # stopped at once
    ok = case.simulation(sym_mesh, dt_mode="fixed", dt=0.99 * stable, order=order)
    ok.run(2 * 0.99 * stable)  # below the limit: runs


def test_compensated_float32_keeps_the_volume_of_a_slow_tide():
    """A slow tide on 8 x 1 cells, float32, 4 h (about 1300 steps): the still cells' increments
    fall below half an ulp of their depth and plain float32 loses them (a relative volume
    drift, net of the inflow, of ~1e-6); the compensated state (docs/SCHEMES.md §2.7) keeps
    them in its remainders: a drift >= 100 times smaller, within the inflow counter's own
    round-off. SSP-RK3 over 1 h likewise (its float32 weights 1/3 + 2/3 are not 1: plain
    float32 drifts 1.3e-5; the compensated combination is formed in float64). In float64
    the setting changes nothing (compiled out)."""
    case = get_case("cgrid-tide").with_grid(8, 1)
    for integrator, hours in (("euler", 4), ("ssp-rk3", 1)):
        drift = {}
        for on in (False, True):
            sim = case.simulation(backend="cpu", dtype="float32", compensated=on,
                                  integrator=integrator, allow_mass_error=True)  # fmt: skip
            drift[on] = abs(sim.run(hours * 3600.0).mass_rel_drift[0])
            assert sim.backend.compensated is on
            if on:  # the depths' remainders only: one per layer and cell
                assert sim.backend.remainders().shape == (sim.mesh.n_cells, 1)
        assert drift[False] > 3e-7 and drift[True] < 5e-9 and drift[True] * 100 < drift[False], (
            drift
        )
    assert case.simulation(backend="cpu", compensated=True).backend.compensated is False


def test_a_run_counts_its_looks_and_what_their_checks_cost(sym_mesh):
    sim = get_case("test1").simulation(sym_mesh, backend="cpu")
    s = sim.run(10.0, max_steps=10, check_every=2)
    assert (s.steps, s.checks) == (10, 5)
    assert 0.0 < s.check_s < s.wall_s
    assert s.to_dict()["checks"] == 5


def test_looks_are_spaced_so_that_their_checks_take_at_most_their_share():
    """About LOOK_EVERY_S of steps between looks where a check is cheap; where it is not (a
    mass sum over 10^8 cells: 0.3 s against 10 ms a step) as many more as keep the checks
    under CHECK_SHARE of the time. The rule before counted the checks as stepping: 1 step a
    look, the checks 97 % of the run."""
    from types import SimpleNamespace

    from fvswe.runner import CHECK_SHARE, LOOK_EVERY_S, next_look

    def chunk(step_s, check_s, steps=40, checks=4):
        wall = steps * step_s + checks * check_s
        return SimpleNamespace(steps=steps, checks=checks, wall_s=wall, check_s=checks * check_s)

    assert next_look(chunk(1e-3, 1e-5)) == round(LOOK_EVERY_S / 1e-3)
    assert next_look(chunk(1e-6, 1e-7)) == 1000
    assert next_look(chunk(1.0, 1e-3)) == 1
    look = next_look(chunk(0.01, 0.3))
    assert 0.3 / (look * 0.01) <= CHECK_SHARE < 0.3 / ((look - 1) * 0.01)


def test_the_runner_times_one_look_before_taking_eight_and_reports_all_its_checks(sym_mesh):
    """The first chunk is one look (at 10^8 cells a look's check took seconds: eight of them
    before the first adaptation cost more than the run); the summary counts every chunk's."""
    from fvswe import runner

    sim = get_case("test1").simulation(sym_mesh, backend="cpu")
    calls, plain = [], sim.run

    def recorded(t_end, **kw):
        s = plain(t_end, **kw)
        calls.append((kw["max_steps"], kw["check_every"], s.checks))
        return s

    sim.run = recorded
    s = runner.advance(sim, [1.0])
    assert len(calls) > 1 and calls[0][0] == calls[0][1] == 10
    assert all(m == 8 * every for m, every, _ in calls[1:-1])
    assert s.checks == sum(c for *_, c in calls) and s.steps == sim.steps
