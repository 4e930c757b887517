"""Vanishing layers (docs/SCHEMES.md §13), the thin-layer threshold and runs that stop.

Two layers where one or both vanish over part of the domain: the hydrostatic
reconstruction of both interfaces on thin edges keeps lakes at rest exact,
each layer's mass to round-off and the depths non-negative without clipping;
the default ``eps_h`` follows the depth scale; clipped mass, mass drift and a
fixed dt above the stable step end a run with one line.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from test_cuda_sources import CXX, emulated_run, host_flux
from test_wetdry import WALLS, dam_break_exact, without_limiter

from fvswe import registry
from fvswe.backends import gpu
from fvswe.backends.cpu import get_edge_flux
from fvswe.cli import main
from fvswe.errors import BlowUpError
from fvswe.grid import Grid
from fvswe.mesh.generate import strip
from fvswe.model import thin_layer_threshold
from fvswe.physics.constants import OUTRUN_REACH
from fvswe.schemes import get_flux
from fvswe.schemes.common import as_inputs, edge2, outrun, wall_ghost
from fvswe.simulation import Simulation

SCHEMES = registry.names(2)
ROOT = Path(__file__).resolve().parent.parent
G = 9.81
WALLS3 = dict.fromkeys(("west", "east", "wall"), "wall")
BUMP = ROOT / "scripts" / "thin_layer_bump.py"
_spec = importlib.util.spec_from_file_location("thin_layer_bump", BUMP)
bump_runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bump_runs)


def random_vanishing_edges(seed, E=3000):
    """Two-layer edges where layers vanish: 30 % zero, 10 % below 1e-4 m, beds above the
    interface and above the surface, 20 % flat."""
    rng = np.random.default_rng(seed)

    def states():
        W = np.zeros((E, 6))
        for k in (0, 3):
            h = rng.uniform(0.0, 3.0, E)
            h[rng.random(E) < 0.3] = 0.0
            h[rng.random(E) < 0.1] *= 1e-4
            W[:, k] = h
            W[:, k + 1 : k + 3] = h[:, None] * rng.normal(0.0, 1.5, (E, 2))
        return W

    Hi = rng.uniform(-1.0, 3.0, E)
    Hj = np.where(rng.random(E) < 0.2, Hi, rng.uniform(-1.0, 3.0, E))
    a = rng.uniform(0.0, 2.0 * np.pi, E)
    return states(), states(), Hi, Hj, np.column_stack((np.cos(a), np.sin(a)))


# -- the edge flux ------------------------------------------------------------------------------
@pytest.mark.parametrize("scheme", SCHEMES)
def test_vanishing_edges_conserve_each_layer_and_reverse(scheme):
    """``F-_hk + F+_hk = q_k,j.n - q_k,i.n`` per layer, ``F-(j, i, -n) = F+(i, j, n)``, and a
    layer that is dry on both sides gets no mass flux at all."""
    Wi, Wj, Hi, Hj, n = random_vanishing_edges(1)
    Fm, Fp, d, flags = get_flux(scheme, 2)(Wi, Wj, Hi, Hj, n, return_flags=True)
    assert np.all(np.isfinite(Fm)) and np.all(np.isfinite(Fp)) and np.all(d >= 0)
    assert (flags & 4).sum() > 0.5 * len(d)  # most edges take the reconstruction
    for k in (0, 3):
        dq = (Wj[:, k + 1] - Wi[:, k + 1]) * n[:, 0] + (Wj[:, k + 2] - Wi[:, k + 2]) * n[:, 1]
        np.testing.assert_allclose(Fm[:, k] + Fp[:, k], dq, rtol=0, atol=1e-13)
        dry = (Wi[:, k] == 0) & (Wj[:, k] == 0)
        assert dry.sum() > 100 and np.all(Fm[dry, k] == 0) and np.all(Fp[dry, k] == 0)
    Gm, Gp, e = get_flux(scheme, 2)(Wj, Wi, Hj, Hi, -n)
    scale = np.abs(np.concatenate((Fm, Fp), 1)).max(1, keepdims=True) + 1e-300
    assert (np.abs(Gm - Fp) / scale).max() <= 1e-12 and (np.abs(Gp - Fm) / scale).max() <= 1e-12
    np.testing.assert_allclose(e, d, rtol=1e-14)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_numba_and_cuda_mirror_the_reference_bitwise(scheme):
    """The Numba kernels and the CUDA device functions (compiled for the host) give the
    NumPy reference's values bit for bit on vanishing-layer edges."""
    edges = random_vanishing_edges(2, E=1500)
    Wi, Wj, Hi, Hj, n = edges
    ref = get_flux(scheme, 2)(*edges, G, 0.5, 1e-6, True)
    kernel = get_edge_flux(scheme, 2)
    for e in range(len(Hi)):
        fm, fp, de, fl = kernel(tuple(Wi[e]), tuple(Wj[e]), Hi[e], Hj[e], n[e, 0], n[e, 1],
                                G, 0.5, 1e-6)  # fmt: skip
        assert np.array_equal(fm, ref[0][e]) and np.array_equal(fp, ref[1][e])
        assert de == ref[2][e] and fl == ref[3][e]
    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH for the CUDA sources")
    got = host_flux("double", scheme, 2, edges, G, 0.5, 1e-6)
    for a, b in zip(got, ref, strict=True):
        assert np.array_equal(a, b)


# -- lakes at rest ------------------------------------------------------------------------------
def bump_and_shore(x, y):
    """H: a bump that pierces the interface (-0.5) at x = 0, and a shore rising above the
    free surface (0) from x = 2.5 to the east wall."""
    return 1.0 - 0.8 * np.exp(-(x**2) / 0.5) - 0.8 * np.maximum(0.0, x - 2.5)


def lake(x, y):
    """Free surface 0, interface -0.5 wherever the bed allows."""
    H = bump_and_shore(x, y)
    h2 = np.maximum(0.0, H - 0.5)
    return {"h1": np.maximum(0.0, H) - h2, "h2": h2}


@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_lake_at_rest_with_emerged_interface_and_bed(scheme, r):
    """10^4 steps: the lower layer is zero over the bump, both are zero on the shore; nothing
    moves (observed: exactly 0)."""
    mesh = strip(60, 1, -5.0, 5.0)
    xy = mesh.centroid
    W = lake(xy[:, 0], xy[:, 1])
    sim = Simulation(mesh, layers=2, scheme=scheme, r=r, H=bump_and_shore, initial=W)
    W0 = sim.state()
    assert (W0[:, 3] == 0).sum() >= 4 and (W0[:, 0] + W0[:, 3] == 0).sum() >= 4  # both emerge
    s = sim.run(1e6, max_steps=10_000)
    assert s.steps == 10_000 and s.counters["thin_layer_edges"] > 0
    assert np.abs(sim.state() - W0).max() <= 1e-12
    assert s.mass_rel_drift == [0.0, 0.0] and s.counters["clipped_cells"] == 0


# -- dam breaks onto a dry layer ----------------------------------------------------------------
def layer_dam_break(layer, nx, scheme="pvm-ifcp", t=1.0, dt_mode="lagged"):
    """Layer ``layer`` (1 upper, 2 lower) 0.5 m deep for x < 0 and absent beyond, the other
    layer filling the 1 m deep channel, r = 0.5, walls; returns the run and its summary."""
    gone = "h2" if layer == 2 else "h1"
    other = "h1" if layer == 2 else "h2"
    initial = {gone: lambda x, y: np.where(x < 0, 0.5, 0.0),
               other: lambda x, y: np.where(x < 0, 0.5, 1.0)}  # fmt: skip
    sim = Simulation(strip(nx, 1, -5.0, 5.0), layers=2, scheme=scheme, r=0.5, H=1.0,
                     initial=initial, dt_mode=dt_mode)  # fmt: skip
    return sim, sim.run(t)


def front(sim, layer):
    """Largest x where the layer is more than 1 mm deep."""
    f = sim.fields()
    return f["x"][f[f"h{layer}"] > 1e-3].max()


@pytest.mark.parametrize("dt_mode", ["lagged", "nonlagged"])
@pytest.mark.parametrize("layer", [1, 2])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_layer_dam_break_onto_a_dry_layer_conserves_and_stays_positive(scheme, layer, dt_mode):
    sim, s = layer_dam_break(layer, 200, scheme, dt_mode=dt_mode)
    W = sim.state()
    assert max(s.mass_rel_drift) <= 1e-13  # observed <= 1e-15
    assert s.counters["clipped_cells"] == 0 and W[:, [0, 3]].min() >= 0
    assert front(sim, layer) > 1.0  # it ran onto the dry part
    assert s.counters["thin_layer_cells"] > 0 and s.counters["thin_layer_edges"] > 0


@pytest.mark.parametrize("layer", [1, 2])
def test_dam_break_front_converges(layer):
    """The front position at t = 1 s approaches a 1200-cell run at every refinement
    (observed errors: lower layer 0.13, 0.11, 0.08 m; upper 0.05, 0.03, 0.01 m). The lower
    layer's 1 mm front is the tip of a thin nose that still lengthens by 0.03-0.04 m per
    halving of dx up to 3200 cells (2.17 m at 100 cells, 2.32 m at 3200; a 1-D line of the
    NumPy reference flux does the same, 2.05 to 2.29 m); the volume past the dam converges
    (next test)."""
    ref = front(layer_dam_break(layer, 1200)[0], layer)
    errors = [abs(front(layer_dam_break(layer, nx)[0], layer) - ref) for nx in (100, 200, 400)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.6 * errors[0]


# -- thin tips in motion (issue 33) -------------------------------------------------------------
@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_lower_layer_pierced_by_the_bed_step_is_a_thin_edge(scheme):
    """The issue's tip, 5 and 4 microns of lower layer under 0.5 m (above eps_h = 1e-6 m) on a
    1 cm bed step: flag 4, the reconstruction; the same tip on a flat bed, and a 5 cm lower
    layer on the step, keep the wet formulas (reference, Numba alike)."""
    Wi = np.array([[0.5, 0.1, 0.0, 5e-6, 1e-6, 0.0]] * 2 + [[0.5, 0.1, 0.0, 0.05, 0.01, 0.0]])
    Wj = Wi * [1.0, 1.0, 1.0, 0.8, 0.8, 1.0]
    Hj = np.array([1.01, 1.0, 1.01])
    edges = (Wi, Wj, np.full(3, 1.0), Hj, np.tile([1.0, 0.0], (3, 1)))
    ref = get_flux(scheme, 2)(*edges, G, 0.5, 1e-6, True)
    assert list(ref[3] & 4) == [4, 0, 0]
    kernel = get_edge_flux(scheme, 2)
    for e in range(3):
        flag = kernel(tuple(Wi[e]), tuple(Wj[e]), 1.0, Hj[e], 1.0, 0.0, G, 0.5, 1e-6)[3]
        assert flag == ref[3][e]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_thin_edge_puts_no_cross_flow_into_a_flow_along_x(scheme):
    """A lower layer of 5 mm (thin: below eps_h = 1 cm) running along x at 4 and 2 m/s under
    a still upper layer, across a diagonal edge of a triangle strip: the y-discharge of both
    sides' fluctuations is 0 (the tangential discharge takes the normal one's viscosity,
    §13.3). With the mass-flux upwinding of the tangential discharge it was 0.10 and 0.79
    of the x-part: the cross-strip discharge that ran a 1.2 mm tip away on 1600 x 2 triangles
    (scripts/thin_layer_bump.py, PVM-IFCP, r = 0.5, t = 1.446 s). Reference, Numba alike."""
    Wi = np.array([[0.3, 0.0, 0.0, 5e-3, 2e-2, 0.0]])
    Wj = np.array([[0.3, 0.0, 0.0, 5e-3, 1e-2, 0.0]])
    normal = np.array([[1.0, 1.0]]) / np.sqrt(2.0)
    Fm, Fp, _, flags = get_flux(scheme, 2)(Wi, Wj, [1.0], [1.0], normal, G, 0.5, 1e-2, True)
    kernel = get_edge_flux(scheme, 2)
    Km, Kp, _, flag = kernel(tuple(Wi[0]), tuple(Wj[0]), 1.0, 1.0, *normal[0], G, 0.5, 1e-2)
    assert flags[0] & 4 and flag & 4
    for F in (Fm[0], Fp[0], np.array(Km), np.array(Kp)):
        assert abs(F[4]) > 1e-3 and abs(F[5]) <= 1e-15 and abs(F[2]) <= 1e-15


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_wall_pushes_no_thin_lower_layer_away_faster_than_it_leaves(scheme):
    """A 3.5 mm lower layer leaving a wall at 4 m/s under 0.77 m, faster than the column's
    external waves (2.75 m/s): the wall's momentum flux on it is at most its hydrostatic
    pressure (a leaving layer thins at the wall). The wet formulas' Roe averages see no
    velocity there (the ghost's is the mirror), so IFCP's viscosity on the layer was its
    internal wave speed (0.06 m/s) and the wall pushed it away with about ``h u^2``: 0.056
    (Roe, IR-Roe 0.011) against 6e-5 m^3/s^2, a step's velocity gain of ``dt L/|V| u^2``.
    That ran the nx 1600 PVM-IFCP r = 0.98 lower-layer run of scripts/thin_layer_bump.py away
    (-7 to -434 m/s in 8 steps, stop at t = 3.43 s). Now a thin edge (flag 4; §13.1): HLL
    with speeds bounding the layer's, -0.039. Reference, Numba and CUDA (host) alike."""
    up = np.array([[0.0, 1.0]])
    Wi = np.array([[0.77, 0.0, 0.0, 3.5e-3, 0.0, -1.4e-2]])
    Wj = wall_ghost(Wi, up)
    pressure = 0.5 * G * Wi[0, 3] ** 2
    Fm, _, _, flags = get_flux(scheme, 2)(Wi, Wj, [0.8], [0.8], up, G, 0.98, 1e-6, True)
    kernel = get_edge_flux(scheme, 2)
    Km, _, _, flag = kernel(tuple(Wi[0]), tuple(Wj[0]), 0.8, 0.8, 0.0, 1.0, G, 0.98, 1e-6)
    assert flags[0] & 4 and flag & 4
    for F in (Fm[0], np.array(Km)):
        wall = Wi[0, 5] ** 2 / Wi[0, 3] + pressure + F[5]  # F(W_i).n + F-, lower q_n
        assert abs(Wi[0, 5] + F[3]) <= 1e-15  # no mass through the wall
        assert wall <= pressure, wall
    if CXX is not None:  # the CUDA device flux compiled for the host: the reference's bits
        edges = (Wi, Wj, np.array([0.8]), np.array([0.8]), up)
        got = host_flux("double", scheme, 2, edges, G, 0.98, 1e-6)
        assert np.array_equal(got[0], Fm) and got[3][0] == flags[0]


def test_the_outrun_reach_bound_changes_no_answer():
    """The outrun test's reach bound (§13.1) skips only edges that do not outrun: on 20000
    edges of two layers (1 mm to 3 m a side), the lower layer moving at up to about twice
    ``cext`` from the upper one, the test equals ``U -+ cext`` computed on every edge (9502
    outrun), every outrunning edge passes the bound, and the bound skips 5531 of the others
    (a side within 0.71 ``cext`` of both layers' velocities); the Numba kernel's thin flag
    alike on every tenth edge."""
    rng = np.random.default_rng(7)
    E = 20000

    def side():
        h1, h2 = rng.uniform(1e-3, 3.0, E), rng.uniform(1e-3, 3.0, E)
        u1, u2 = rng.normal(0.0, 1.0, E), rng.normal(0.0, 8.0, E)
        return np.column_stack((h1, h1 * u1, h1 * u1, h2, h2 * u2, -h2 * u2))

    a = rng.uniform(0.0, 2.0 * np.pi, E)
    Wi, Wj, n = side(), side(), np.column_stack((np.cos(a), np.sin(a)))
    L1, L2, _ = edge2(*as_inputs(Wi, Wj, np.zeros(E), np.zeros(E), n, 6), G, 1e-6)
    U = (L1.hbar * L1.u + L2.hbar * L2.u) / (L1.hbar + L2.hbar)
    c = np.sqrt(L1.c2 + L2.c2)
    lo, hi = np.minimum(L2.uni, L2.unj), np.maximum(L2.uni, L2.unj)
    plain = (lo < U - c) | (hi > U + c)
    test = outrun(L1, L2)
    assert np.array_equal(test, plain) and 0.1 * E < plain.sum() < 0.9 * E
    u_lo, u_hi = np.minimum(L1.u, L2.u), np.maximum(L1.u, L2.u)
    far = np.maximum(hi - u_lo, u_hi - lo) >= np.sqrt(OUTRUN_REACH) * c
    assert np.all(far[plain]) and (~far).sum() > 0.25 * E
    kernel = get_edge_flux("pvm-ifcp", 2)  # flat bed, layers >= 1 mm: thin = outrun
    for e in range(0, E, 10):
        flag = kernel(tuple(Wi[e]), tuple(Wj[e]), 0.0, 0.0, *n[e], G, 0.5, 1e-6)[3]
        assert bool(flag & 4) == plain[e]


@pytest.mark.parametrize(("layer", "r", "t_end"), [(2, 0.98, 5.5), (1, 0.5, 4.0)])
def test_thin_tips_over_a_bump_run_on(layer, r, t_end):
    """scripts/thin_layer_bump.py's dam break onto a dry layer over a bump (nx = 100,
    PVM-IFCP, default eps_h = 1e-6 m), the lower layer at r = 0.98 and its mirror at r = 0.5:
    the old criterion (eps_h alone) clipped at t = 4.92 s and 3.57 s; now no clip, each
    layer's mass to round-off, depths non-negative (the script: all twelve runs to 20 s)."""
    sim = bump_runs.simulation(layer, "pvm-ifcp", r, 100, None)
    s = sim.run(t_end)
    assert s.counters["clipped_cells"] == 0 and max(s.mass_rel_drift) <= 1e-13
    assert sim.state()[:, [0, 3]].min() >= 0 and s.counters["thin_layer_edges"] > 0


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_device_runs_the_thin_tip_over_a_bump_as_the_cpu():
    """300 steps of the lower layer's dam break over the bump (nx = 50, PVM-IFCP, r = 0.5),
    its tip on thin edges: every GPU variant's state, steps and counters bit for bit the
    CPU backend's."""
    sim = bump_runs.simulation(2, "pvm-ifcp", 0.5, 50, None)
    layout = sim.layout
    assert sim.backend.advance(100.0, 300)[1] == 300
    counts = {k: v for k, v in sim.backend.counters().items() if k in gpu.COUNTERS}
    assert counts["thin_layer_edges"] > 0 and counts["clipped_cells"] == 0
    for variant in gpu.VARIANTS:
        W, ctrl = emulated_run(layout, "pvm-ifcp", variant, "lagged", 100.0, 300)
        assert ctrl["steps"] == 300 and np.array_equal(W, sim.backend.get_state()), variant
        assert emulated_counters(ctrl) == counts, variant


def slope_surge_simulation(scheme, nx, line=False, **kw):
    """A lower layer 0.6 m deep (x < -3) surging up a bed that rises 0.15 m per m to the shore
    at x = 1.67, under an upper layer that fills the rest to the surface; r = 0.5, walls; on a
    strip of 2 nx triangles, or with ``line`` on a line of nx squares (1-D: as the prototype
    scripts/limiter_prototype.py)."""

    def H(x, y):
        return 1.0 - 0.15 * (x + 5.0)

    def h2(x, y):
        return np.where(x < -3.0, 0.6, 0.0)

    initial = {"h2": h2, "h1": lambda x, y: np.maximum(H(x, y), 0.0) - h2(x, y)}
    if line:
        mesh, walls = Grid(nx, 1, 10.0 / nx, 10.0 / nx, origin=(-5.0, 0.0)).mesh(), WALLS
    else:
        mesh, walls = strip(nx, 1, -5.0, 5.0), WALLS3
    options = {"dt_mode": "nonlagged", **kw}
    return Simulation(mesh, layers=2, scheme=scheme, r=0.5, H=H, initial=initial,
                      boundary=walls, **options)  # fmt: skip


def slope_surge(scheme, nx, t_end=2.0, **kw):
    """:func:`slope_surge_simulation` run to ``t_end``: the run and its summary."""
    sim = slope_surge_simulation(scheme, nx, **kw)
    return sim, sim.run(t_end)


def pulled_apart_simulation(nx, **kw):
    """A 5 cm upper layer over 1.95 m (r = 0.5, flat bed, walls) moving at -1.6 and 2.4 m/s
    in turn, pulled apart where x = 0, +-5/3, +-10/3 (and gathered between), on a strip of
    2 nx triangles of [-5, 5]: IFCP's wet formula empties it there within a step, so the
    limiter acts from the first steps (73 cell-layers by t = 0.5 s at nx = 100)."""

    def q1x(x, y):
        return 0.1 * np.sign(np.sin(1.2 * np.pi * x)) + 0.02

    return Simulation(strip(nx, 1, -5.0, 5.0), layers=2, scheme="pvm-ifcp", r=0.5, H=2.0,
                      initial={"h1": 0.05, "h2": 1.95, "q1x": q1x}, boundary=WALLS3,
                      **{"dt_mode": "nonlagged", **kw})  # fmt: skip


def volume_past_the_dam(sim, layer):
    """The layer's volume in x > 0 per unit width of the strip (m^2)."""
    f = sim.fields()
    width = f["area"].sum() / 10.0  # the strip spans x in [-5, 5]
    return (f["area"] * f[f"h{layer}"])[f["x"] > 0].sum() / width


@pytest.mark.parametrize("layer", [1, 2])
def test_dam_break_volume_past_the_dam_converges(layer):
    """The volume that crossed the dam by t = 1 s converges: its change per halving of dx
    shrinks by a factor >= 1.5 each time (observed lower layer 3.8e-3, 2.1e-3, 1.2e-3 m^2,
    then 6.5e-4, 3.6e-4 to 3200 cells: order ~0.85, a centred fan's dx log dx; upper layer
    1.5e-3, 6.4e-4, 2.6e-4 m^2)."""
    v = [volume_past_the_dam(layer_dam_break(layer, nx)[0], layer) for nx in (100, 200, 400, 800)]
    d = np.abs(np.diff(v))
    assert d[0] > 1.5 * d[1] > 1.5**2 * d[2], d


@pytest.mark.parametrize("scheme", ["roe", "ir-roe"])
def test_interface_surging_up_a_dry_slope_stays_positive(scheme):
    """Roe and IR-Roe carry the lower layer up the slope (its front from -3 to beyond -0.5 m)
    with each layer's mass to round-off and no clipping (observed drift <= 3.5e-16)."""
    sim, s = slope_surge(scheme, 200)
    f = sim.fields()
    assert s.counters["clipped_cells"] == 0 and max(s.mass_rel_drift) <= 1e-13
    assert min(f["h1"].min(), f["h2"].min()) >= 0 and f["x"][f["h2"] > 1e-3].max() > -0.5


@pytest.mark.parametrize("nx", [200, 400])
def test_ifcp_surge_up_a_dry_slope_is_reconstructed_not_clipped(nx):
    """PVM-IFCP's wet formula emptied the lower layer's thin tip (2.1e-4 m, above eps_h =
    1e-6 m) within a step, and the positivity limiter (docs/SCHEMES.md §13.4) scaled its
    outflow (2 and 132 cell-layers); the tip is thinner than the bed step (7.5e-3 m), so its
    edges now take the hydrostatic reconstruction (§13.1): to t = 4 s no depth is clipped,
    each layer's mass holds to round-off and the limiter has nothing to do."""
    sim, s = slope_surge("pvm-ifcp", nx, t_end=4.0, line=True)
    f = sim.fields()
    assert s.counters["clipped_cells"] == 0 and max(s.mass_rel_drift) <= 1e-13
    assert s.counters["limited"] == 0 and min(f["h1"].min(), f["h2"].min()) >= 0
    assert f["x"][f["h2"] > 1e-3].max() > -0.5  # the lower layer ran up the slope


def layer_speeds(W, deeper_than):
    """The largest speed ``|q|/h`` of the layers deeper than ``deeper_than``."""
    fastest = 0.0
    for d in (0, 3):
        h = W[:, d]
        deep = h > deeper_than
        fastest = max(fastest, (np.hypot(W[deep, d + 1], W[deep, d + 2]) / h[deep]).max())
    return fastest


@pytest.mark.parametrize("dt_mode", ["lagged", "nonlagged"])
@pytest.mark.parametrize("nx", [200, 400])
def test_ifcp_surge_on_triangles_is_reconstructed_not_clipped(nx, dt_mode):
    """On the triangle strip the tip, limited, ran away with the eps_h criterion alone unless
    the limiter kept the momentum in the donor and damped below eps_u (docs/SCHEMES.md §13.4);
    with the bed-step criterion (§13.1) the tip's edges are reconstructed: to t = 4 s no
    clip, each layer's mass to round-off, the limiter idle, the layers deeper than 1 cm below
    10 m/s, no dt collapse and the lower layer up the slope."""
    sim = slope_surge_simulation("pvm-ifcp", nx, dt_mode=dt_mode)
    fastest = [layer_speeds(sim.state(), 1e-2)]
    s = sim.run(4.0, check_every=10, callback=lambda run: fastest.append(
        layer_speeds(run.state(), 1e-2)))  # fmt: skip
    f = sim.fields()
    assert s.counters["clipped_cells"] == 0 and max(s.mass_rel_drift) <= 1e-13
    assert s.counters["limited"] == 0 and min(f["h1"].min(), f["h2"].min()) >= 0
    assert max(fastest) < 10.0 and s.steps < 3500
    assert f["x"][f["h2"] > 1e-3].max() > 0.0


def test_pipeline_agrees_with_the_numpy_prototype_on_a_line():
    """The pipeline on the slope surge against scripts/limiter_prototype.py (a 1-D line of the
    NumPy reference flux, its own limiter, fluctuation-form update) with the same fixed dt to
    t = 4 s: the states agree to 1e-7 (the prototype has no margin and the update rounds
    differently). Both limited before the bed-step criterion (docs/SCHEMES.md §13.1); now
    neither does (the limiter's own tests: the pulled-apart layer)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import limiter_prototype

    steps, _, _, smallest, W = limiter_prototype.run(200, t_end=4.0, dt=1e-3)
    sim = slope_surge_simulation("pvm-ifcp", 200, line=True, dt_mode="fixed", dt=1e-3)
    s = sim.run(4.0)
    assert smallest == 1.0 and s.counters["limited"] == 0 and s.counters["clipped_cells"] == 0
    assert abs(s.steps - steps) <= 1  # the last step may round to one more
    order = np.argsort(sim.fields()["x"])
    assert np.abs(sim.state()[order] - W).max() <= 1e-7


@pytest.mark.parametrize("scheme", SCHEMES)
def test_two_layer_dam_break_wets_and_dries_the_shore(scheme):
    """An interface dam break (r = 0.98) beside a sloping shore where both layers end: the
    lower layer runs up the slope it was absent from, the shoreline (the upper layer's edge,
    the free surface meeting the bed) goes up and comes back; each layer's mass is conserved,
    no depth is clipped and the land above the run-up stays dry bit for bit."""
    mesh = strip(100, 1, -5.0, 5.0)

    def H(x, y):
        return 1.0 - 0.3 * (x + 5.0)  # the bed meets the surface at x = -5 + 1/0.3

    def h2(x, y):
        return np.maximum(0.0, np.where(x < -3.5, -0.2, -0.7) + H(x, y))

    def h1(x, y):
        return np.maximum(0.0, H(x, y)) - h2(x, y)

    sim = Simulation(mesh, layers=2, scheme=scheme, r=0.98, H=H, dt_mode="nonlagged",
                     initial={"h1": h1, "h2": h2})  # fmt: skip
    x, W0 = sim.fields()["x"], sim.state()
    fronts = []

    def record(s):
        f = s.fields()
        fronts.append((x[f["h2"] > 1e-3].max(), x[f["h1"] > 1e-3].max()))

    record(sim)
    s = sim.run(4.0, check_every=10, callback=record)
    assert max(s.mass_rel_drift) <= 1e-13 and s.counters["clipped_cells"] == 0
    lower, shore = np.array(fronts).T
    assert lower.max() > lower[0] + 0.5  # the lower layer wets the slope
    top = np.argmax(shore)
    assert shore[top] > shore[0] and shore[top:].min() < shore[top]  # up and back
    land = x > -1.0
    assert np.all(sim.state()[land] == 0.0) and np.all(W0[land] == 0.0)


# -- the thin-layer threshold -------------------------------------------------------------------
def test_default_threshold_follows_the_depth_scale_and_an_explicit_one_wins():
    mesh = strip(8, 1)
    for depth, dtype, want in [(2.0, "float64", 2e-6), (2.0, "float32", 2e-4), (0.0, "float64",
                                1e-8), (4000.0, "float64", 4e-3)]:  # fmt: skip
        scheme = "hll" if depth > 0 else "hll-wd"  # hll refuses dry cells
        sim = Simulation(mesh, layers=1, scheme=scheme, H=depth, dtype=dtype,
                         initial={"h": depth})  # fmt: skip
        assert sim.model.eps_h == pytest.approx(want, rel=1e-15)
        assert sim.model.eps_h == thin_layer_threshold(depth, dtype)
    sim = Simulation(mesh, H=1.0, initial={"h1": 0.3, "h2": 0.7}, eps_h=5e-3)
    assert sim.model.eps_h == 5e-3


@pytest.mark.parametrize(
    ("scheme", "hr"),
    # one-layer Roe refuses a dry bed (docs/SCHEMES.md §6), so Ritter is hll-wd's alone
    [("hll-wd", 0.1), ("hll-wd", 1e-3), ("hll-wd", 0.0), ("roe", 0.1), ("roe", 1e-3)],
)
def test_dam_breaks_converge_at_the_default_threshold(scheme, hr):
    """Stoker (hr = 0.1, and 1e-3 below the old 5 mm threshold) and Ritter (hr = 0): the L1
    error falls at every refinement from 100 to 800 cells at order >= 0.5 (observed 0.54-0.95:
    from rest the centred fan converges like dx log(1/dx), docs/validation.md; first order
    once it is open: tests/test_convergence.py) and, with a thin or dry downstream bed, ends
    below the one with eps_h = 5 mm."""

    def error(nx, **kw):
        g = Grid(nx, 1, 100.0 / nx, 1.0)
        sim = Simulation(g.mesh(), layers=1, scheme=scheme, H=0.0, boundary=WALLS,
                         initial={"h": lambda x, y: np.where(x < 50.0, 1.0, hr)},
                         dt_mode="nonlagged", **kw)  # fmt: skip
        s = sim.run(5.0)
        assert s.counters["clipped_cells"] == 0 and sim.model.eps_h == (kw.get("eps_h") or 1e-6)
        return np.abs(sim.fields()["h"] - dam_break_exact(g.x, 5.0, 1.0, hr, 50.0)).sum() * g.dx

    errors = [error(nx) for nx in (100, 200, 400, 800)]
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(orders >= 0.5), orders
    if hr < 5e-3 and scheme == "hll-wd":  # Roe refuses a bed below its eps_h
        assert errors[-1] < 0.95 * error(800, eps_h=5e-3)


# -- runs that stop -----------------------------------------------------------------------------
def thinning_case(path):
    """A case file: a 5 cm upper layer pulled apart at 2 m/s, which IFCP's wet formula empties
    within a step: the limiter keeps it positive (docs/SCHEMES.md §13.4)."""
    path.write_text(
        'layers = 2\nscheme = "pvm-ifcp"\nr = 0.5\nt_end = 2.0\ndt_mode = "nonlagged"\n'
        'backend = "cpu"\n[mesh]\ngenerator = "strip"\nnx = 100\nny = 1\nx0 = -5.0\nx1 = 5.0\n'
        '[boundary]\nwest = "wall"\neast = "wall"\nwall = "wall"\n'
        '[initial]\nH = 2.0\nh1 = 0.05\nh2 = 1.95\nu1 = "2.0 * sign(x)"\n'
    )
    return path


def test_cli_stops_a_fixed_dt_above_the_stable_step(capsys):
    code = main(["run", "test1", "--backend", "cpu", "--dt-mode", "fixed", "--dt", "0.5", "-q"])
    out, err = capsys.readouterr()
    assert code != 0 and out == "" and len(err.strip().splitlines()) == 1
    assert "step 1" in err and "Courant number up to" in err and "in cell" in err


def test_cli_stops_a_run_that_clipped_and_continues_when_allowed(capsys, tmp_path, monkeypatch):
    """The thinning case runs clean with the limiter (observed: 26 limited cell-layers, both
    masses exact); without it, it clips and stops with one line."""
    case = str(thinning_case(tmp_path / "thin.toml"))
    assert main(["run", case, "-q", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["clipped_cells"] == 0 and summary["limited"] > 0
    assert max(summary["mass_rel_drift"]) <= 1e-13
    without_limiter(monkeypatch)
    code = main(["run", case, "-q"])
    out, err = capsys.readouterr()
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "clipped to 0 in cell" in err and " m^3 by step" in err and "--allow-mass-error" in err
    code = main(["run", case, "-q", "--allow-mass-error", "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and '"clipped_volume"' in out


def test_mass_drift_beyond_round_off_stops_the_run():
    """Water that appears from nowhere (here: put in by hand, as a bug would) is caught."""
    sim = Simulation(strip(20, 1), layers=1, scheme="hll", H=1.0, initial={"h": 1.0},
                     boundary=WALLS3)  # fmt: skip
    sim.run(0.05)
    W = sim.backend.get_state()
    W[3, 0] += 1e-9
    sim.backend.set_state(W)
    with pytest.raises(BlowUpError, match=r"mass of h changed by [0-9.e-]+ \(relative"):
        sim.run(0.1)
    sim.allow_mass_error = True
    assert sim.run(0.1).mass_rel_drift[0] > 1e-12


# -- the GPU pipeline on the host -----------------------------------------------------------------
@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_device_records_clips_thin_cells_and_the_courant_stop_as_the_cpu(monkeypatch):
    """The emulated CUDA pipeline reports the CPU backend's first clipped cell and step and its
    thin-layer cells (one-layer Roe beside dry cells: two layers have the positivity limiter),
    and stops a fixed dt above the stable step at the same step and cell with the same
    Courant number."""
    from fvswe.mesh.generate import structured_square

    def h(x, y):  # deep for x < 0; thin (0 .. 5 mm) and dry patches for x > 0
        return np.where(x < 0, 1.0, 5e-3 * np.maximum(0.0, np.sin(3 * x + 2 * y)))

    monkeypatch.setattr("fvswe.simulation.refuse_dry_cells", lambda *args: None)
    initial = {"h": h, "qx": lambda x, y: 0.3 * h(x, y)}
    sim = Simulation(structured_square(10), layers=1, scheme="roe", H=1.0, eps_h=5e-3,
                     initial=initial, dt_mode="nonlagged")  # fmt: skip
    sim.backend.advance(0.5, 200)
    assert sim.backend.first_clip is not None
    counters = sim.backend.counters()
    W, ctrl = emulated_run(sim.layout, "roe", "edge", "nonlagged", 0.5, 200)
    cell, step, t = sim.backend.first_clip
    assert ctrl["clip_cell"] + gpu.NO_CELL == cell and ctrl["clip_step"] - 1 == step
    assert ctrl["clip_t"] == t and ctrl["thin_cells"] == counters["thin_layer_cells"] > 0
    g = Grid(40, 2, 0.25, 0.25, origin=(-5.0, 0.0))
    initial = {"h1": 0.05, "h2": 1.95, "q1x": lambda x, y: 0.1 * np.sign(x)}
    options = dict(layers=2, scheme="pvm-ifcp", r=0.5, H=2.0, initial=initial)
    stable = Simulation(g.mesh(), dt_mode="nonlagged", **options)
    stable.backend.advance(1.0, 1)
    dt = 3.0 * stable.backend.dt
    fixed = Simulation(g.mesh(), dt_mode="fixed", dt=dt, **options)
    fixed.backend.advance(1.0, 50)
    cell, step, t, courant = fixed.backend.courant_violation
    for variant in gpu.VARIANTS:
        _, ctrl = emulated_run(fixed.layout, "pvm-ifcp", variant, "fixed", 1.0, 50, dt)
        assert ctrl["stalled"] == 1 and ctrl["steps"] == step + 1 == fixed.steps
        assert ctrl["cfl_cell"] + gpu.NO_CELL == cell and ctrl["cfl_step"] - 1 == step
        assert ctrl["courant"] == pytest.approx(courant, rel=1e-12)


def limiter_window(dt_mode, dtype="float64", steps=40, start=0.05):
    """The pulled-apart layer (:func:`pulled_apart_simulation`, nx = 100; the CPU backend to
    ``start``) and the CPU backend's next ``steps`` steps, where its limiter acts: the layout
    starting from the window's first state, the CPU's state after the window and its counters
    over it (:data:`fvswe.backends.gpu.COUNTERS`' keys)."""
    from dataclasses import replace

    sim = pulled_apart_simulation(100, dt_mode=dt_mode, dtype=dtype)
    sim.backend.advance(start, 10**6)
    layout = replace(sim.layout, W0=sim.backend.get_state())
    sim.backend.set_state(layout.W0)  # a lagged dt from this state, as a new run's
    before = sim.backend.counters()
    assert sim.backend.advance(10.0, steps)[1] == steps
    after = sim.backend.counters()
    return layout, sim.backend.get_state(), {k: after[k] - before[k] for k in gpu.COUNTERS}


def emulated_counters(ctrl):
    """A host-shim control block's counters under the backends' keys."""
    return {key: int(ctrl[field]) for key, field in gpu.COUNTERS.items()}


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("dt_mode", ["nonlagged", "lagged"])
def test_device_limits_the_limiter_window_as_the_cpu(dt_mode):
    """The limiter's momentum terms and eps_u damping (docs/SCHEMES.md §13.4) in the CUDA
    pipeline: 40 steps of the pulled-apart layer where the limiter acts
    (:func:`limiter_window`; observed 32 and 51 limited cell-layers): every variant's state
    and counters bit for bit the CPU backend's."""
    layout, want, counts = limiter_window(dt_mode)
    assert counts["limited"] >= 10 and counts["clipped_cells"] == 0
    for variant in gpu.VARIANTS:
        W, ctrl = emulated_run(layout, "pvm-ifcp", variant, dt_mode, 10.0, 40)
        assert ctrl["steps"] == 40 and np.array_equal(W, want), variant
        assert emulated_counters(ctrl) == counts, variant


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_device_limits_the_limiter_window_alike_in_float32():
    """40 steps of the pulled-apart layer in float32 from t = 0.05 s, where the limiter acts
    (observed 4 cell-layers on the CPU): the variants agree bit for bit (state and counters),
    nothing is clipped and the state is the CPU backend's to 1e-3 of its largest value (the
    CPU forms theta, dt and the damping in float64)."""
    layout, want, counts = limiter_window("nonlagged", "float32")
    runs = [emulated_run(layout, "pvm-ifcp", v, "nonlagged", 10.0, 40) for v in gpu.VARIANTS]
    W, ctrl = runs[0]
    assert ctrl["steps"] == 40 and ctrl["limited"] > 0 and ctrl["clipped"] == 0
    assert counts["limited"] > 0
    assert np.abs(W - want).max() <= 1e-3 * np.abs(want).max()
    for W2, ctrl2 in runs[1:]:
        assert np.array_equal(W2, W) and emulated_counters(ctrl2) == emulated_counters(ctrl)


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_device_limits_the_pulled_apart_layer_as_the_cpu():
    """:func:`pulled_apart_simulation` (nx = 100) to t = 0.5 s, the limiter acting from the
    first steps (73 cell-layers): every variant's state, steps and counters bit for bit the
    CPU backend's."""
    sim = pulled_apart_simulation(100)
    layout = sim.layout
    sim.backend.advance(0.5, 10**6)
    counts = {k: v for k, v in sim.backend.counters().items() if k in gpu.COUNTERS}
    assert counts["limited"] == 73 and counts["clipped_cells"] == 0
    for variant in gpu.VARIANTS:
        W, ctrl = emulated_run(layout, "pvm-ifcp", variant, "nonlagged", 0.5, 10**6)
        assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps), variant
        assert np.array_equal(W, sim.backend.get_state()) and emulated_counters(ctrl) == counts
