"""Bottom and interfacial friction (docs/SCHEMES.md §14): exact answers, conservation, and the
NumPy reference, the Numba kernels and the CUDA mirror agreeing bit for bit."""

from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from test_cuda_sources import CXX, emulated_run, host_binary

from fvswe import casefile
from fvswe.backends import gpu
from fvswe.boundary import Level
from fvswe.grid import Grid
from fvswe.mesh.generate import structured_square
from fvswe.physics import friction as nb
from fvswe.schemes import friction as ref
from fvswe.simulation import Simulation

G = 9.81
OPEN = dict.fromkeys(("west", "east", "south", "north"), "open")


# -- (a) one layer: normal depth -----------------------------------------------------------------
def normal_discharge(law: str, coef: float, h: float, slope: float) -> float:
    """Chézy ``q = C h^(3/2) S^(1/2)``, Manning ``q = h^(5/3) S^(1/2) / n``."""
    return (
        coef * h**1.5 * math.sqrt(slope)
        if law == "chezy"
        else h ** (5 / 3) * math.sqrt(slope) / coef
    )


def sloping_channel(law: str, coef, n: int = 200, dx: float = 100.0, slope: float = 1e-2,
                    h: float = 1.0, scheme: str = "roe", **kw) -> Simulation:  # fmt: skip
    """Still water of depth ``h`` on a bed falling ``slope`` in x, levels at both ends that
    keep the depth ``h`` there (docs/validation.md, normal depth)."""
    grid = Grid(n, 1, dx=dx, dy=dx)

    def H(x, y):
        return 5.0 + slope * x

    def level(x):
        return Level(([0.0, 1e9], [h - H(x, 0.0)] * 2))

    ends = {"west": level(dx / 2), "east": level(n * dx - dx / 2)}
    return Simulation(grid.mesh(), layers=1, scheme=scheme, H=H, friction=(law, coef),
                      initial={"h": h}, boundary={**ends, "south": "wall", "north": "wall"},
                      **kw)  # fmt: skip


@pytest.mark.parametrize(("law", "coef"), [("chezy", 30.0), ("manning", 0.03)])
def test_uniform_flow_down_a_slope_reaches_the_normal_depth(law, coef):
    """From rest, the middle of a 20 km channel (beyond the reach of its ends in 500 s)
    accelerates to the uniform flow whose normal depth is the depth: the discharge of the
    Chézy / Manning formula to 1e-9 (the backward-Euler friction step balances the slope
    exactly; docs/SCHEMES.md §14), the depth unchanged to round-off."""
    sim = sloping_channel(law, coef)
    sim.run(500.0)
    f = sim.fields()
    middle = np.abs(f["x"] - 10_000.0) < 1_000.0
    qn = normal_discharge(law, coef, 1.0, 1e-2)
    assert np.abs(f["qx"][middle] / qn - 1).max() <= 1e-9
    assert np.abs(f["h"][middle] - 1.0).max() <= 1e-13
    assert np.all(f["qy"] == 0)


# -- (b) two layers: the shear relaxes as the ODE says -------------------------------------------
def shear_ode(t_end: float, h1, h2, u1, u2, ci, r):
    """``d(h1 u1)/dt = -tau``, ``d(h2 u2)/dt = r tau``, ``tau = c_i |u1 - u2| (u1 - u2)``
    (vectors), integrated by scipy to 1e-13."""

    def rhs(_, y):
        s = y[:2] - y[2:]
        tau = ci * np.hypot(*s) * s
        return np.concatenate((-tau / h1, r * tau / h2))

    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate((u1, u2)), method="DOP853", rtol=1e-13,
                    atol=1e-15)  # fmt: skip
    return sol.y[:2, -1], sol.y[2:, -1]


def test_interfacial_friction_relaxes_the_shear_at_the_ode_rate():
    """A uniform two-layer state (open sides: no flux) with shear: each step's exact decay
    follows the ODE at any Δt, to 1e-10 after 40 steps that cut the shear by 4; total
    momentum ``r q1 + q2`` and the depths stay to round-off."""
    h1, h2, r, ci = 0.4, 1.6, 0.9, 5e-3
    u1, u2 = np.array([0.5, -0.3]), np.array([-0.1, 0.05])
    sim = Simulation(Grid(3, 3, 1000.0, 1000.0).mesh(), layers=2, scheme="pvm-ifcp", H=2.0, r=r,
                     interfacial_friction=ci, boundary=OPEN, dt_mode="fixed", dt=20.0,
                     initial={"h1": h1, "q1x": h1 * u1[0], "q1y": h1 * u1[1], "h2": h2,
                              "q2x": h2 * u2[0], "q2y": h2 * u2[1]})  # fmt: skip
    W0 = sim.state()
    sim.run(800.0)
    W = sim.state()
    e1, e2 = shear_ode(800.0, h1, h2, u1, u2, ci, r)
    assert np.hypot(*(e1 - e2)) < np.hypot(*(u1 - u2)) / 4  # the friction is live
    np.testing.assert_allclose(W[:, 1:3] / h1, np.broadcast_to(e1, (9, 2)), rtol=0, atol=1e-10)
    np.testing.assert_allclose(W[:, 4:6] / h2, np.broadcast_to(e2, (9, 2)), rtol=0, atol=1e-10)
    momentum = r * W[:, 1:3] + W[:, 4:6]
    np.testing.assert_allclose(momentum, r * W0[:, 1:3] + W0[:, 4:6], rtol=0, atol=1e-15)
    assert np.array_equal(W[:, [0, 3]], W0[:, [0, 3]])


# -- (c) lake at rest ------------------------------------------------------------------------------
@pytest.mark.parametrize("layers", [1, 2])
def test_lake_at_rest_stays_at_rest_with_friction(layers):
    """Bottom (per-cell Manning) and interfacial friction over a bumpy bed, walls: the state
    stays at rest to 1e-12 and each layer's mass to 1e-13."""
    mesh = structured_square(12)

    def H(x, y):
        return 2.0 - 0.5 * np.exp(-(x**2 + y**2))

    if layers == 1:
        kw = dict(scheme="hll-wd", initial={"h": H})
    else:
        kw = dict(scheme="pvm-ifcp", interfacial_friction=1e-3,
                  initial={"h1": 0.8, "h2": lambda x, y: H(x, y) - 0.8})  # fmt: skip
    sim = Simulation(mesh, layers=layers, H=H, friction=("manning", lambda x, y: 0.02 + 0.002 * x),
                     **kw)  # fmt: skip
    W0 = sim.state()
    s = sim.run(5.0)
    assert sim.steps > 20
    assert np.abs(sim.state() - W0).max() <= 1e-12
    assert max(s.mass_rel_drift) <= 1e-13


# -- (d) NumPy reference, Numba, CUDA mirror -------------------------------------------------------
def random_cells(rng, n: int = 4000):
    """Two-layer cell states with dry, thin (< eps_h) and still cells, and coefficients some 0."""
    h = rng.uniform(0.0, 3.0, (n, 2))
    h[rng.random((n, 2)) < 0.1] = 0.0
    thin = rng.random((n, 2)) < 0.1
    h[thin] = rng.uniform(0.0, 4e-3, thin.sum())
    q = rng.normal(0.0, 1.0, (n, 4)) * np.repeat(h, 2, axis=1)
    q[rng.random(n) < 0.05] = 0.0
    W = np.column_stack((h[:, 0], q[:, :2], h[:, 1], q[:, 2:]))
    coef = rng.uniform(0.0, 0.05, n)
    coef[rng.random(n) < 0.1] = 0.0
    return W, coef


DT, R, EPS_H = 0.7, 0.8, 5e-3


def numba_cells(W, kind, coef, ci):
    """:mod:`fvswe.physics.friction` cell by cell, in the volume pass's order."""
    out = W.copy()
    for i, w in enumerate(W):
        q = nb.interfacial(*w, ci[i], R, EPS_H, DT)
        out[i, [1, 2, 4, 5]] = q
        out[i, 4:6] = nb.bottom(w[3], q[2], q[3], kind, coef[i], G, DT)
    return out


@pytest.mark.parametrize("law", ["chezy", "manning"])
def test_numba_friction_is_the_reference_bit_for_bit(law):
    rng = np.random.default_rng(13)
    W, coef = random_cells(rng)
    ci = rng.uniform(0, 1e-2, len(W))
    kind = ref.FRICTION_KINDS[law]
    coef = coef * 1000 + 1 if law == "chezy" else coef  # Chézy C > 0
    want = ref.apply(W, kind, coef, ci, G, R, EPS_H, DT)
    assert np.array_equal(numba_cells(W, kind, coef, ci), want)
    assert np.abs(want - W).max() > 0.1  # live


def test_stiff_friction_never_reverses_and_exchanges_momentum_only():
    """Random wet cells with stiff drag (``dt`` up to 1e4 s): the interfacial step shrinks the
    shear ``s`` to ``s / (1 + w/m)`` (same direction) keeping ``r q1 + q2``; the bottom step
    shrinks ``q2`` without turning it (docs/SCHEMES.md §14)."""
    rng = np.random.default_rng(5)
    W, coef = random_cells(rng)
    wet = (W[:, 0] >= EPS_H) & (W[:, 3] >= EPS_H)
    W, coef = W[wet], coef[wet] + 0.01
    dt = 10.0 ** rng.uniform(-2, 4, len(W))
    ci = rng.uniform(1e-4, 1e-2, len(W))
    h1, h2 = W[:, 0], W[:, 3]
    s = W[:, 1:3] / h1[:, None] - W[:, 4:6] / h2[:, None]
    q1x, q1y, q2x, q2y = ref.interfacial(*W.T, ci, R, EPS_H, dt)
    s_new = np.column_stack((q1x, q1y)) / h1[:, None] - np.column_stack((q2x, q2y)) / h2[:, None]
    m = h1 * h2 / (R * h1 + h2)
    w = dt * ci * np.hypot(*s.T)
    np.testing.assert_allclose(s_new, s / (1 + w / m)[:, None], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(R * q1x + q2x, R * W[:, 1] + W[:, 4], rtol=0, atol=1e-12)
    np.testing.assert_allclose(R * q1y + q2y, R * W[:, 2] + W[:, 5], rtol=0, atol=1e-12)
    assert (w / m > 10).sum() > 100  # many stiff cells
    bx, by = ref.bottom(h2, q2x, q2y, ref.FRICTION_KINDS["manning"], coef, G, dt)
    moving = np.hypot(q2x, q2y) > 0
    ratio = np.hypot(bx, by)[moving] / np.hypot(q2x, q2y)[moving]
    assert np.all((ratio >= 0) & (ratio <= 1)) and ratio.min() < 1e-2
    assert np.all(bx * q2y - by * q2x == pytest.approx(0.0, abs=1e-12))  # parallel
    assert np.all(bx * q2x + by * q2y >= 0)  # not reversed


HARNESS = r"""
#include <cstdio>
#include <vector>
#include "physics.cuh"

int main()
{
    int n, kind;
    if (fread(&n, 4, 1, stdin) != 1 || fread(&kind, 4, 1, stdin) != 1) return 2;
    std::vector<double> in(9 * size_t(n)), out(6 * size_t(n));
    if (fread(in.data(), 8, in.size(), stdin) != in.size()) return 2;
    for (int i = 0; i < n; ++i) {
        const double* w = &in[9 * size_t(i)];  // h1 q1x q1y h2 q2x q2y coef c_i dt
        const auto q = friction::interfacial<double>(w[0], w[1], w[2], w[3], w[4], w[5], w[7],
                                                     TEST_R, TEST_EPS_H, w[8]);
        const auto b = friction::bottom<double>(w[3], q.f2, q.f3, kind, w[6], TEST_G, w[8]);
        double* o = &out[6 * size_t(i)];
        o[0] = w[0]; o[1] = q.f0; o[2] = q.f1; o[3] = w[3]; o[4] = b.f0; o[5] = b.f1;
    }
    fwrite(out.data(), 8, out.size(), stdout);
    return 0;
}
"""


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_cuda_friction_on_host_is_the_reference_bit_for_bit():
    """The emitted friction (physics.cuh, from fvswe/physics/friction.py) compiled for the
    host without FMA contraction, as the float64 modules: the NumPy reference's bits."""
    flags = ["-std=c++17", "-O1", "-ffp-contract=off", f"-DTEST_R={R!r}",
             f"-DTEST_EPS_H={EPS_H!r}", f"-DTEST_G={G!r}"]  # fmt: skip
    exe = host_binary("friction", HARNESS, flags)
    rng = np.random.default_rng(7)
    for law in ("chezy", "manning"):
        W, coef = random_cells(rng)
        ci = rng.uniform(0, 1e-2, len(W))
        kind = ref.FRICTION_KINDS[law]
        coef = coef * 1000 + 1 if law == "chezy" else coef
        blob = np.column_stack((W, coef, ci, np.full(len(W), DT)))
        stdin = np.array([len(W), kind], np.int32).tobytes() + blob.tobytes()
        out = subprocess.run([str(exe)], input=stdin, capture_output=True, check=True).stdout
        got = np.frombuffer(out, dtype=np.float64).reshape(W.shape)
        assert np.array_equal(got, ref.apply(W, kind, coef, ci, G, R, EPS_H, DT)), law


def two_layer_flow(**kw) -> Simulation:
    """A two-layer exchange over a bump, with Manning on the lower layer and interfacial
    friction varying in space, walls."""

    def H(x, y):
        return 2.0 - 0.6 * np.exp(-(x**2 + y**2))

    return Simulation(structured_square(10), layers=2, scheme="pvm-ifcp", H=H, r=0.9,
                      friction=("manning", lambda x, y: 0.02 + 0.01 * np.sin(x)),
                      interfacial_friction=lambda x, y: 2e-3 * (1 + 0.5 * np.cos(y)),
                      initial={"h1": lambda x, y: np.where(x < 0, 1.0, 0.5),
                               "h2": lambda x, y: H(x, y) - np.where(x < 0, 1.0, 0.5),
                               "q1x": 0.1, "q2y": -0.05}, **kw)  # fmt: skip


def test_volume_pass_applies_the_reference_after_the_update():
    """One fixed step with friction is the step without friction followed by the NumPy
    reference's friction, bit for bit (the volume pass's last stage; per-cell coefficients)."""
    with_f = two_layer_flow(dt_mode="fixed", dt=0.01)
    lay = with_f.layout
    without = Simulation(structured_square(10), layers=2, scheme="pvm-ifcp", H=lay.H, r=0.9,
                         initial=dict(zip(with_f.model.fields, lay.W0.T, strict=True)),
                         dt_mode="fixed", dt=0.01)  # fmt: skip
    for sim in (with_f, without):
        sim.run(0.01)
    m = with_f.model
    want = ref.apply(without.state(), lay.friction_kind, lay.friction_coef, lay.interfacial_coef,
                     m.g, m.r, m.eps_h, 0.01)  # fmt: skip
    assert np.array_equal(with_f.state(), want)
    assert not np.array_equal(want, without.state())


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_step_kernels_on_host_with_two_layer_friction(variant):
    """The GPU step kernels (host shim) with per-cell bottom and interfacial friction: bitwise
    the CPU backend's state after 0.5 s."""
    sim = two_layer_flow()
    sim.backend.advance(0.5, 10**6)
    W, ctrl = emulated_run(sim.layout, "pvm-ifcp", variant, "lagged", 0.5, 10**6)
    assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps)
    assert np.array_equal(W, sim.backend.get_state())


# -- (e) per-cell coefficients ---------------------------------------------------------------------
def test_per_cell_coefficients_equal_to_a_constant_give_the_constant_result():
    """A number, an array of that number and a function returning it: bitwise one run; a
    renumbered run (order="rcm") with a varying field gives the same fields bitwise."""
    n = structured_square(10).n_cells
    runs = []
    for coef in (0.03, np.full(n, 0.03), lambda x, y: 0.03 + 0 * x):
        lay = two_layer_flow().layout
        sim = Simulation(structured_square(10), layers=2, scheme="pvm-ifcp", H=lay.H, r=0.9,
                         friction=("manning", coef), interfacial_friction=coef,
                         initial=dict(zip(lay.model.fields, lay.W0.T, strict=True)))  # fmt: skip
        sim.run(0.3)
        runs.append(sim.state())
    assert all(np.array_equal(runs[0], w) for w in runs[1:])
    a, b = two_layer_flow(), two_layer_flow(order="rcm")
    for sim in (a, b):
        sim.run(0.3)
    assert np.array_equal(a.state(), b.state())


# -- case files and the GPU ------------------------------------------------------------------------
def test_case_file_friction_keys(tmp_path):
    """``friction.interfacial`` and a raster ``friction.coefficient`` reach the Simulation."""
    x = np.linspace(-6, 6, 5)
    np.savez(tmp_path / "n.npz", x=x, y=x, n=np.full((5, 5), 0.025))
    text = ('t_end = 0.1\nlayers = 2\nscheme = "pvm-ifcp"\n[mesh]\n'
            'generator = "structured_square"\nn = 6\n[initial]\nH = 2.0\nh1 = 1.0\nh2 = 1.0\n'
            'q1x = 0.1\n[friction]\nlaw = "manning"\ninterfacial = 2e-3\n'
            '[friction.coefficient]\nraster = "n.npz"\n')  # fmt: skip
    (tmp_path / "c.toml").write_text(text)
    spec = casefile.load(tmp_path / "c.toml")
    sim = spec.simulation(spec.load_mesh())
    np.testing.assert_allclose(sim.layout.friction_coef, 0.025, rtol=1e-15)  # bilinear
    assert sim.layout.friction_kind == 2
    assert np.all(sim.layout.interfacial_coef == 2e-3)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu.available()[0], reason="no GPU backend here")
def test_gpu_two_layer_friction_matches_cpu():
    cpu, dev = two_layer_flow(backend="cpu"), two_layer_flow(backend="gpu")
    for sim in (cpu, dev):
        sim.run(0.5)
    assert dev.steps == cpu.steps
    assert np.abs(dev.state() - cpu.state()).max() <= 1e-12 * np.abs(cpu.state()).max()


def test_coefficients_from_a_mesh_field_are_the_function_they_sample(tmp_path):
    """A Manning coefficient stored per cell in a mesh file (a meshio cell field) and read by
    :func:`fvswe.mesh.read_cell_fields` lines up with :func:`fvswe.mesh.read_mesh`'s cells:
    the run equals the one given the same values as a function of (x, y), bit for bit, also
    reordered."""
    import meshio

    from fvswe.mesh import read_cell_fields, read_mesh

    square = structured_square(8)
    n_of = lambda x, y: 0.02 + 0.01 * np.sin(x) * np.cos(y)  # noqa: E731
    cx, cy = square.centroid.T
    path = tmp_path / "bay.vtu"
    meshio.write(path, meshio.Mesh(np.column_stack((square.nodes, np.zeros(len(square.nodes)))),
                                   [("triangle", square.cells)],
                                   cell_data={"manning_n": [n_of(cx, cy)]}))  # fmt: skip
    mesh = read_mesh(path, bathymetry="none")
    field = read_cell_fields(path)["manning_n"]
    assert field.shape == (mesh.n_cells,)

    def run(coef, order):
        sim = Simulation(mesh, layers=1, scheme="hll-wd", H=lambda x, y: 1.0 + 0.2 * x,
                         friction=("manning", coef), order=order,
                         initial={"h": lambda x, y: 1.0 + 0.2 * x, "qx": 0.3})  # fmt: skip
        sim.run(0.5)
        return sim.fields()

    for order in ("none", "rcm"):
        a, b = run(field, order), run(n_of, order)
        assert all(np.array_equal(a[k], b[k]) for k in ("h", "qx", "qy"))
