"""Wetting and drying (``hll-wd``), bottom friction, imposed levels and the grid cases.

Scaled down to stay fast (each reduction keeps the property it tests):
``cgrid-tide`` runs on 48 x 4 cells for 2.5 h and 24 x 2 for 10 h (not 192 x
192 for 24 h: the flow is uniform in y, and these cover the flooding of the
slope and of the flat and the ebb; ``cgrid-tide-islands`` 48 x 48 for 1.5 h);
``cgrid-island`` on 100 x 100 cells for 50 s (the drop's wave reaches the
island at ~20 s); the dam breaks on 100-400-cell strips. ``mjos-drop`` runs
its published 5000 steps on 64 x 64.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from fvswe import registry
from fvswe.backends.cpu import get_edge_flux
from fvswe.backends.cpu.pipeline import CpuBackend
from fvswe.boundary import Level
from fvswe.cases import get_case
from fvswe.errors import BlowUpError, ConfigError
from fvswe.exact import dam_break
from fvswe.grid import Grid
from fvswe.schemes import get_flux, hll
from fvswe.simulation import Simulation

G = 9.81
EPS_H = 5e-3  # the default desingularisation depth
WALLS = {"west": "wall", "east": "wall", "south": "wall", "north": "wall"}


# -- the edge flux ------------------------------------------------------------------------------
def random_edges(seed, E=3000):
    """Random one-layer edges: 30 % dry cells, 10 % thin ones, beds above and below the water."""
    rng = np.random.default_rng(seed)

    def states():
        h = rng.uniform(0.0, 3.0, E)
        h[rng.random(E) < 0.3] = 0.0
        h[rng.random(E) < 0.1] *= 1e-4
        q = h[:, None] * rng.normal(0.0, 1.5, (E, 2))
        return np.column_stack((h, q))

    Hi = rng.uniform(-1.0, 2.0, E)
    Hj = np.where(rng.random(E) < 0.2, Hi, rng.uniform(-1.0, 2.0, E))
    th = rng.uniform(0.0, 2.0 * np.pi, E)
    return states(), states(), Hi, Hj, np.column_stack((np.cos(th), np.sin(th)))


def test_numba_matches_reference_on_wet_dry_and_thin_states():
    Wi, Wj, Hi, Hj, n = random_edges(1)
    Fm, Fp, d, flags = get_flux("hll-wd", 1)(Wi, Wj, Hi, Hj, n, return_flags=True)
    kernel = get_edge_flux("hll-wd", 1)
    for e in range(len(d)):
        fm, fp, de, fl = kernel(tuple(Wi[e]), tuple(Wj[e]), Hi[e], Hj[e], n[e, 0], n[e, 1],
                                G, 0.5, 5e-3)  # fmt: skip
        scale = max(np.abs(Fm[e]).max(), np.abs(Fp[e]).max(), 1e-300)
        assert np.abs(np.array(fm) - Fm[e]).max() <= 1e-12 * scale
        assert np.abs(np.array(fp) - Fp[e]).max() <= 1e-12 * scale
        assert abs(de - d[e]) <= 1e-12 * max(d[e], 1e-300) and fl == flags[e] == 0
    assert np.abs(Fm).max() > 1.0


def test_flux_conserves_mass_and_reverses():
    """``F-_h + F+_h = q_j.n - q_i.n`` (so mass is conserved) and ``F-(j, i, -n) = F+(i, j, n)``."""
    Wi, Wj, Hi, Hj, n = random_edges(2)
    Fm, Fp, d = get_flux("hll-wd", 1)(Wi, Wj, Hi, Hj, n)
    qn = lambda W: W[:, 1] * n[:, 0] + W[:, 2] * n[:, 1]  # noqa: E731
    np.testing.assert_allclose(Fm[:, 0] + Fp[:, 0], qn(Wj) - qn(Wi), rtol=0, atol=1e-13)
    Gm, Gp, e = get_flux("hll-wd", 1)(Wj, Wi, Hj, Hi, -n)
    np.testing.assert_allclose(Gm, Fp, rtol=0, atol=1e-13)
    np.testing.assert_allclose(Gp, Fm, rtol=0, atol=1e-13)
    np.testing.assert_allclose(e, d, rtol=1e-14)


def test_flux_at_rest_and_dry_is_exactly_zero():
    """Lake at rest beside an emerged bed (h* = 0 on both sides), dry-dry, and wet-wet at rest."""
    E = 4
    n = np.tile([0.6, 0.8], (E, 1))
    Wi = np.array([[1.0, 0, 0], [0.0, 0, 0], [0.0, 0, 0], [0.7, 0, 0]])
    Wj = np.array([[0.0, 0, 0], [0.0, 0, 0], [1.2, 0, 0], [0.2, 0, 0]])
    Hi = np.array([1.0, -0.1, -0.03, 0.7])  # eta_i = 0, 0.1, 0.03, 0
    Hj = np.array([-0.03, -0.5, 1.2, 0.2])
    Fm, Fp, d = get_flux("hll-wd", 1)(Wi, Wj, Hi, Hj, n)
    assert np.all(Fm == 0) and np.all(Fp == 0)
    assert d[1] == 0 and d[0] == 0


def test_wet_flat_bed_is_hll():
    Wi, Wj, Hi, _, n = random_edges(3)
    wet = (Wi[:, 0] > 5e-3) & (Wj[:, 0] > 5e-3)
    a = get_flux("hll-wd", 1)(Wi[wet], Wj[wet], Hi[wet], Hi[wet], n[wet])
    b = hll.flux1(Wi[wet], Wj[wet], Hi[wet], Hi[wet], n[wet])
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-13 * np.abs(y).max())


# -- whole runs ---------------------------------------------------------------------------------
def test_lake_at_rest_with_an_emerged_island():
    """Walls, still water at eta = 0 around an island 3 cm above it: 200 steps change nothing."""
    case = get_case("cgrid-island").with_grid(100)
    sim = case.simulation(initial={"h": lambda x, y: np.maximum(case.H(x, y), 0.0)},
                          dt_mode="nonlagged", backend="cpu")  # fmt: skip
    W0 = sim.state()
    dry = W0[:, 0] == 0
    assert dry.sum() >= 10
    sim.run(1e9, max_steps=200)
    W = sim.state()
    assert np.abs(W[:, 0] - W0[:, 0]).max() <= 1e-12  # observed: 0
    assert np.abs(W[:, 1:]).max() <= 1e-12  # observed: 0
    assert np.all(W[dry] == 0.0)  # dry cells stay exactly dry


def test_mjos_drop_5000_steps_positive_conservative_symmetric():
    """The thesis's Lax-Wendroff lost positivity at step ~703; this must not."""
    case = get_case("mjos-drop")
    sim = case.simulation(backend="cpu")
    s = sim.run(case.t_end)
    assert s.steps == 5000 and sim.t == 50.0
    f = sim.fields()
    g = case.grid()
    h, qx, qy = (g.as_array(f[k]) for k in ("h", "qx", "qy"))
    assert h.min() > 0.5 and s.counters["clipped_cells"] == 0
    assert s.mass_rel_drift[0] <= 1e-13  # observed: 0
    assert np.abs(h - h.T).max() <= 1e-12  # observed: 4e-16
    assert np.abs(qx - qy.T).max() <= 1e-12


def tide(nx=48, ny=4):
    return get_case("cgrid-tide").with_grid(nx, ny)


def front(sim, grid, wet=0.0):
    """x of the first cell with h <= wet along the first row (the front), inf if none."""
    h = grid.as_array(sim.fields()["h"])[0]
    dry = np.flatnonzero(h <= wet)
    return grid.x[dry[0]] if dry.size else np.inf


def test_tide_floods_the_slope_and_the_flat_uniformly_in_y():
    case = tide()
    grid = case.grid()
    sim = case.simulation(backend="cpu")
    V0 = sim.mass()[0]
    fronts = [front(sim, grid)]
    for hours in (0.5, 1.0, 1.5, 2.5):
        s = sim.run(3600.0 * hours)
        fronts.append(front(sim, grid))
        f = sim.fields()
        assert np.all(f["qy"] == 0.0)  # v stays exactly 0
        h = grid.as_array(f["h"])
        assert np.abs(h - h[0]).max() <= 1e-14 * h.max()  # uniform in y; observed 0
        inflow = s.counters["level_inflow"]
        assert abs(sim.mass()[0] - V0 - inflow) <= 1e-12 * abs(inflow)  # observed 6e-15
        assert s.mass_rel_drift[0] <= 1e-13  # the summary's drift counts the inflow
        assert s.counters["clipped_cells"] == 0
    # the front climbs the slope as the tide rises (level 3, 3.5, 4.0, 4.4 m) ...
    assert fronts[0] < fronts[1] < fronts[2] < fronts[3] < 260.0  # first flat cell: 256.25
    assert 160 < fronts[0] < 175  # still level 3 m: bed 3 m at x = 166.7 m
    # ... and over the flat (bed 4.5 m beyond x = 250 m) once the level tops it (4.85 m at 2.5 h)
    assert fronts[4] == np.inf


def test_tide_ebbs_back_and_the_volume_balances_the_boundary_flow():
    """On a coarser grid through 10 h: flood to 4 h, ebb to 1 m at 9 h, 1.27 m at 10 h."""
    case = tide(24, 2)
    grid = case.grid()
    sim = case.simulation(backend="cpu")
    V0 = sim.mass()[0]
    flood = sim.run(4 * 3600.0).counters["level_inflow"]
    high = front(sim, grid, wet=EPS_H)
    s = sim.run(10 * 3600.0)
    ebb = s.counters["level_inflow"]
    assert ebb < 0 < flood  # at 10 h the level is below the initial 3 m
    # the front (films below eps_h count as dry: their discharge is damped) went back down
    assert front(sim, grid, wet=EPS_H) < min(high, 150.0)
    assert abs(sim.mass()[0] - V0 - ebb) <= 1e-12 * V0
    assert s.counters["clipped_cells"] == 0


def test_island_top_stays_dry_mass_and_mirror_symmetry():
    case = get_case("cgrid-island").with_grid(100)
    grid = case.grid()
    sim = case.simulation(backend="cpu")
    H = grid.as_array(sim.fields()["H"])
    top = H < -0.02  # bed more than 2 cm above the still water
    assert top.sum() >= 4
    s = sim.run(50.0)
    f = sim.fields()
    h, qx, qy = (grid.as_array(f[k]) for k in ("h", "qx", "qy"))
    assert np.all(h[top] == 0) and np.all(qx[top] == 0) and np.all(qy[top] == 0)
    assert s.mass_rel_drift[0] <= 1e-13  # observed: 6e-16
    assert s.counters["clipped_cells"] == 0
    # mirror symmetry about y = 100 m: row iy <-> ny - 1 - iy
    assert np.abs(h - h[::-1]).max() <= 1e-13  # observed 4e-16
    assert np.abs(qy + qy[::-1]).max() <= 1e-13
    assert np.abs(h - 1.0 + H).max() > 1e-3  # the wave really moved


def dam_break_exact(x, t, hl, hr, x0):
    """Ritter (hr = 0) or Stoker (hr > 0) depth at x, t."""
    return dam_break(x, t, hl, hr, x0, G)[0]


@pytest.mark.parametrize(("hr", "bounds"), [(0.1, (1.2, 0.35)), (0.0, (1.25, 0.45))])
def test_dam_breaks_converge(hr, bounds):
    """Stoker (wet bed) and Ritter (dry bed), 100 m strip, t = 5 s: L1 errors fall with dx.

    Observed L1 errors (m^2) at 100/200/400 cells: wet 1.07, 0.55, 0.31; dry 1.00, 0.63, 0.39.
    """
    ratio, finest = bounds
    errors = []
    for nx in (100, 200, 400):
        g = Grid(nx, 1, 100.0 / nx, 1.0)
        sim = Simulation(g.mesh(), layers=1, scheme="hll-wd", H=0.0, boundary=WALLS,
                         initial={"h": lambda x, y: np.where(x < 50.0, 1.0, hr)},
                         dt_mode="nonlagged", backend="cpu")  # fmt: skip
        s = sim.run(5.0)
        f = sim.fields()
        assert s.counters["clipped_cells"] == 0 and np.all(f["qy"] == 0)
        errors.append(np.abs(f["h"] - dam_break_exact(g.x, 5.0, 1.0, hr, 50.0)).sum() * g.dx)
    assert errors[0] > ratio * errors[1] > ratio**2 * errors[2]
    assert errors[2] < finest


@pytest.mark.parametrize("dt_mode", ["lagged", "nonlagged"])
def test_collapse_on_a_dry_wavy_slope_stays_positive(dt_mode):
    """Two water columns collapsing onto a dry, sloping, wavy bed at CFL 0.9: no clipping."""
    g = Grid(80, 80, 1.0, 1.0)
    sim = Simulation(
        g.mesh(), layers=1, scheme="hll-wd", dt_mode=dt_mode, backend="cpu",
        H=lambda x, y: -0.02 * x - 0.5 * np.sin(y / 5),
        initial={"h": lambda x, y: np.where(np.hypot(x - 40, y - 40) < 10, 2.0, 0.0)
                 + np.where(np.hypot(x - 20, y - 60) < 3, 5.0, 0.0)},
    )  # fmt: skip
    s = sim.run(20.0)
    assert s.counters["clipped_cells"] == 0
    assert sim.fields()["h"].min() == 0.0  # really wet/dry
    assert s.mass_rel_drift[0] <= 1e-13


# -- friction -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("law", "coef"), [("chezy", 2.0), ("manning", 0.5)])
def test_friction_is_semi_implicit_and_never_reverses(law, coef):
    """A uniform stream with open sides feels friction only: q follows the backward-Euler
    recurrence ``q' (1 + beta(q')) = q`` exactly, decreases monotonically and keeps its sign,
    even where friction is stiff (``beta = dt g |u| / (C^2 h)`` = 2.9, ``dt g n^2 |u| /
    h^(4/3)`` = 5.0 at Courant number 0.72; docs/SCHEMES.md §14)."""
    g = Grid(3, 3, 1.0, 1.0)
    h0, u0, dt = 0.2, (1.5, -0.5), 0.15
    sim = Simulation(g.mesh(), layers=1, scheme="hll-wd", H=1.0, friction=(law, coef),
                     boundary=dict.fromkeys(WALLS, "open"), dt_mode="fixed", dt=dt,
                     initial={"h": h0, "qx": h0 * u0[0], "qy": h0 * u0[1]},
                     backend="cpu")  # fmt: skip
    q = np.array([h0 * u0[0], h0 * u0[1]])
    for _ in range(20):
        sim.run(sim.t + dt)
        den = coef**2 * h0 if law == "chezy" else h0 ** (4.0 / 3.0)
        rate = dt * G * (1.0 if law == "chezy" else coef**2) / (h0 * den)  # beta / |q|
        old = np.hypot(*q)
        size = brentq(lambda m, a, b: m * (1 + a * m) - b, 0.0, old, args=(rate, old), xtol=1e-16)
        q_next = q * (size / old)
        W = sim.state()
        assert np.all(W[:, 0] == h0)
        np.testing.assert_allclose(W[:, 1], q_next[0], rtol=1e-14)
        np.testing.assert_allclose(W[:, 2], q_next[1], rtol=1e-14)
        assert np.all(np.sign(W[:, 1:]) == np.sign(q)) and np.all(np.abs(W[:, 1:]) < np.abs(q))
        q = q_next


def test_friction_options_are_checked():
    g = Grid(2, 2, 1.0, 1.0)
    for bad, match in [(("darcy", 0.1), "friction: expected"), (("chezy", -1.0), "positive"),
                       (("chezy", 0.0), "positive"), (("manning", [0.1, -0.1, 0, 0]), "cell 1"),
                       (("manning", np.ones(3)), "friction \\(manning\\): expected 4 cell"),
                       (("manning", "x"), "expected a number")]:  # fmt: skip
        with pytest.raises(ConfigError, match=match):
            Simulation(g.mesh(), layers=1, scheme="hll-wd", H=1.0, initial={"h": 1.0},
                       friction=bad)  # fmt: skip
    with pytest.raises(ConfigError, match="interfacial_friction: needs a two-layer"):
        Simulation(g.mesh(), layers=1, scheme="hll-wd", H=1.0, initial={"h": 1.0},
                   interfacial_friction=1e-3)  # fmt: skip
    with pytest.raises(ConfigError, match="interfacial_friction: the coefficient"):
        Simulation(g.mesh(), layers=2, interfacial_friction=lambda x, y: x - 1.0)


# -- imposed levels -----------------------------------------------------------------------------
def test_level_tables_from_function_file_and_pairs(tmp_path):
    t, v = Level(lambda t: 2.0 * t, every=5.0, until=20.0).table()
    assert np.array_equal(t, [0, 5, 10, 15, 20]) and np.array_equal(v, 2 * t)
    t, v = Level(lambda s: float(np.cos(s)), every=1.0, until=3.0).table()  # scalar-only function
    np.testing.assert_allclose(v, np.cos(t))
    path = tmp_path / "tide.txt"
    path.write_text("# t eta\n0 1.0\n60, 1.5\n120 1.25\n")
    t, v = Level(str(path)).table()
    assert np.array_equal(t, [0, 60, 120]) and np.array_equal(v, [1.0, 1.5, 1.25])
    path.write_text("0 1\n10 2\n5 3\n")
    with pytest.raises(ConfigError, match="must increase"):
        Level(path).table()
    with pytest.raises(ConfigError, match="no such series file"):
        Level(tmp_path / "missing.txt").table()


def test_level_boundary_holds_a_lake_and_ends_with_its_series(tmp_path):
    """A level at the still water keeps an uneven basin at rest; runs stop at the series end."""
    g = Grid(20, 3, 1.0, 1.0)
    path = tmp_path / "level.txt"
    path.write_text("0 0.25\n100 0.25\n")
    sim = Simulation(g.mesh(), layers=1, scheme="hll-wd", H=lambda x, y: 1.0 - 0.08 * x,
                     initial={"h": lambda x, y: np.maximum(0.25 + 1.0 - 0.08 * x, 0.0)},
                     boundary={**WALLS, "west": Level(path)}, dt_mode="nonlagged",
                     backend="cpu")  # fmt: skip
    W0 = sim.state()
    assert (W0[:, 0] == 0).any()
    s = sim.run(100.0)
    W = sim.state()
    assert np.abs(W - W0).max() <= 1e-12  # observed 8e-16
    assert abs(s.counters["level_inflow"]) <= 1e-12 * sim.mass()[0]  # observed 3e-13 m^3 of 14
    with pytest.raises(
        ConfigError, match="past the end of the level series of boundary tag 'west'"
    ):
        sim.run(101.0)
    with pytest.raises(ConfigError, match="two-layer level needs the interface level"):
        Simulation(g.mesh(), layers=2, boundary={**WALLS, "west": ("level", str(path))})


# -- two layers ---------------------------------------------------------------------------------
def without_limiter(monkeypatch):
    """The CPU backend with its positivity limiter (docs/SCHEMES.md §13.4) off: a stand-in
    for a bug that clips."""
    monkeypatch.setattr(CpuBackend, "_limit_theta", lambda self, op, step: None)
    monkeypatch.setattr(CpuBackend, "_limit_update", lambda self, op, step: None)


@pytest.mark.parametrize("scheme", registry.names(2))
def test_two_layers_survive_a_layer_thinning_to_zero(scheme, monkeypatch):
    """A thin upper layer (5 cm) pulled apart at 4 m/s empties in the middle within a step
    from above eps_h (the schemes' wet formulas are not positive there, docs/SCHEMES.md §13):
    the positivity limiter (§13.4) scales its outflow (observed: 34, 34 and 20 limited
    cell-layers with Roe, IR-Roe and PVM-IFCP), no depth is clipped and each layer's mass
    holds to round-off. Without the limiter the run stops naming the clip, or, allowed to go
    on, stays finite and the layer's mass change is exactly the counted clipped volume. (At
    2 m/s Roe and IR-Roe, with the entropy fix of docs/SCHEMES.md §3.6, open the gap without
    a negative depth.)"""
    g = Grid(100, 2, 0.1, 0.1, origin=(-5.0, 0.0))
    initial = {"h1": 0.05, "h2": 1.95, "q1x": lambda x, y: 0.2 * np.sign(x)}
    options = dict(layers=2, scheme=scheme, r=0.5, H=2.0, dt_mode="nonlagged", backend="cpu",
                   initial=initial)  # fmt: skip
    sim = Simulation(g.mesh(), **options)
    s = sim.run(2.0)
    W = sim.state()
    assert s.counters["clipped_cells"] == 0 and s.counters["limited"] > 0
    assert max(s.mass_rel_drift) <= 1e-13
    assert np.all(np.isfinite(W)) and W[:, 0].min() >= 0 and W[:, 3].min() > 0.5
    without_limiter(monkeypatch)
    with pytest.raises(BlowUpError, match=r"clipped to 0 in cell \d+ .* added [0-9.e-]+ m\^3"):
        Simulation(g.mesh(), **options).run(2.0)
    sim = Simulation(g.mesh(), allow_mass_error=True, **options)
    s = sim.run(2.0)
    W = sim.state()
    assert s.counters["clipped_cells"] > 0 and s.counters["clipped_volume"] > 0
    change = s.mass[0] - s.mass_initial[0]
    assert abs(change - s.counters["clipped_volume"]) <= 1e-13 * s.mass_initial[0]
    assert abs(s.mass[1] - s.mass_initial[1]) <= 1e-13 * s.mass_initial[1]
    assert np.all(np.isfinite(W)) and W[:, 0].min() >= 0 and W[:, 3].min() > 0.5


def test_tide_islands_stay_dry_and_the_volume_balances():
    case = get_case("cgrid-tide-islands").with_grid(48)
    grid = case.grid()
    sim = case.simulation(backend="cpu")
    top = grid.as_array(-sim.fields()["H"]) > 5.0  # island tops, above the highest tide
    assert top.sum() >= 2
    s = sim.run(1.5 * 3600.0)
    f = sim.fields()
    assert np.all(grid.as_array(f["h"])[top] == 0.0)
    assert np.abs(f["qy"]).max() > 1e-4  # the islands make the flow two-dimensional
    assert s.mass_rel_drift[0] <= 1e-13 and s.counters["clipped_cells"] == 0


def test_level_and_friction_runs_restart_bit_for_bit():
    case = tide(24, 2)
    whole = case.simulation(backend="cpu")
    whole.run(3000.0)
    first = case.simulation(backend="cpu")
    first.run(3000.0, max_steps=400)  # a checkpoint between whole steps
    again = case.simulation(backend="cpu")
    again.backend.restore(first.backend.snapshot())
    again.run(3000.0)
    assert np.array_equal(again.state(), whole.state())
    assert again.backend.counters() == whole.backend.counters()


def test_orderings_give_the_same_bits():
    """Renumbering only permutes (edges keep their orientation): wet/dry, levels, friction."""
    case = tide(24, 6)
    states = []
    for order in ("none", "rcm", "random"):
        sim = case.simulation(backend="cpu", order=order)
        sim.run(1800.0)
        states.append(sim.state())
    assert all(np.array_equal(s, states[0]) for s in states[1:])
