"""Coriolis and wind (docs/SCHEMES.md §15) against exact or theoretical solutions.

The per-cell Numba functions and the volume pass against the NumPy reference (bitwise);
an inertial oscillation against the exact Cayley rotation and the period 2π/f; a lake at
rest on a beta-plane; a geostrophic eddy in gradient-wind balance; the Rossby adjustment
of a step against Gill's steady state; the set-up of a closed basin under wind against
the steady balance g h dη/dx = τ/ρ. Fine-resolution versions: scripts/rossby_adjustment.py,
scripts/wind_setup.py.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from fvswe.backends.cpu.kernels import CHUNKS, Mesh, Outputs, Stage, volume_pass
from fvswe.errors import ConfigError
from fvswe.forcing import OMEGA, Coriolis, Wind
from fvswe.mesh.generate import structured_square
from fvswe.physics import forcing as nb
from fvswe.schemes import forcing as ref
from fvswe.simulation import Simulation

G = 9.81
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _script(name: str):
    """A validation script of scripts/ as a module (its run functions, not its figure)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rossby = _script("rossby_adjustment")
setup = _script("wind_setup")


def test_per_cell_functions_match_the_reference_bitwise():
    rng = np.random.default_rng(1)
    speed = np.concatenate(([0.0, 11.0, 25.0, 30.0], rng.uniform(0, 40, 400)))
    u, v = speed * np.cos(rng.uniform(0, 7, speed.size)), speed * np.sin(rng.uniform(0, 7, 404))
    for law, cd in ((1, 1.3e-3), (2, 0.0), (3, 0.0)):
        want = ref.drag_coefficient(speed, law, cd)
        assert np.array_equal([nb.drag_coefficient(s, law, cd) for s in speed], want)
        ax, ay = ref.wind_stress(u, v, law, cd, 1.2e-3)
        got = [nb.wind_stress(a, b, law, cd, 1.2e-3) for a, b in zip(u, v, strict=True)]
        assert np.array_equal(got, np.stack((ax, ay), 1))
    f = rng.uniform(-1.5e-4, 1.5e-4, 404)
    c, s = ref.rotation(f, 37.5)
    assert np.array_equal([nb.rotation(x, 37.5) for x in f], np.stack((c, s), 1))
    assert np.abs(c * c + s * s - 1).max() <= 4e-16
    h = rng.uniform(0, 2e-3, 404)  # both sides of eps_h = 1e-3
    qx, qy = rng.normal(size=(2, 404))
    for wind in (True, False):
        want = ref.force_layer(h, qx, qy, c, s, 0.3, -0.2, 37.5, 1e-3, wind)
        got = [
            nb.force_layer(*a, 0.3, -0.2, 37.5, 1e-3, wind)
            for a in zip(h, qx, qy, c, s, strict=True)
        ]
        assert np.array_equal(got, np.stack(want, 1))


def test_large_pond_and_wu_values():
    """The laws' published values: Large & Pond 1.2e-3 up to 11 m/s, 2.115e-3 from 25 m/s;
    Wu 1.45e-3 at 10 m/s."""
    cd = ref.drag_coefficient(np.array([5.0, 10.9, 20.0, 25.0, 40.0]), 2, 0.0)
    assert np.allclose(cd, [1.2e-3, 1.2e-3, 1.79e-3, 2.115e-3, 2.115e-3], rtol=1e-14)
    assert ref.drag_coefficient(np.array([10.0]), 3, 0.0)[0] == pytest.approx(1.45e-3)


@pytest.mark.parametrize("layers", [1, 2])
def test_volume_pass_forcing_is_the_reference(layers):
    """The CPU volume pass with no fluxes: its forcing is the reference's, bit for bit, for
    a wind interpolated from a table and per-cell f (beta-plane), on wet and thin layers."""
    rng = np.random.default_rng(2)
    L, nvar, eps_h, dt, t = 500, 3 * layers, 1e-3, 40.0, 250.0
    W = rng.normal(size=(L, nvar))
    for c in range(0, nvar, 3):
        W[:, c] = rng.uniform(eps_h, 3.0, L)
        W[:50, c] = rng.uniform(0.0, 2 * eps_h, 50)  # thin layers: damped, wet or not
    f = rng.uniform(-1e-4, 1.4e-4, L)
    times, u, v = np.array([0.0, 100.0, 400.0]), np.array([0.0, 12.0, 30.0]), np.array([3.0, -5, 2])
    ints = np.full((L, 3), -1, dtype=np.int32)
    mesh = Mesh(np.zeros(L), np.ones(L), *[np.zeros((0, 2))] * 5, np.zeros(1, np.int32), ints,
                np.zeros((L, 3), np.int8), np.zeros((L, 3)))  # fmt: skip
    out = Outputs(np.zeros((3 * L, nvar + 1)), np.zeros(0, np.int32), np.zeros((1, 2)),
                  np.empty(CHUNKS), np.empty((CHUNKS, 3), np.int64), np.empty(CHUNKS),
                  np.zeros(L, np.uint8))  # fmt: skip
    base = uniform_flow(layers, 0.0, 1.0).backend._ctrl._replace(eps_h=np.float64(eps_h))

    def step(W, f, law):
        W = W.copy()
        ctrl = base._replace(coriolis_f=f, wind_times=times, wind_u=u, wind_v=v,
                             n_wind=np.int32(3 if law else 0), wind_law=np.int32(law),
                             wind_cd=np.float64(1.5e-3), wind_ratio=np.float64(1.2e-3))  # fmt: skip
        volume_pass(W, W, None, None, mesh, ctrl, out, Stage(t, dt, True, 0, eps_h))
        return W

    damped = step(W, np.zeros(0), 0)  # the clip and thin-layer damping alone
    assert not np.array_equal(damped, W)  # (some layers are thin)
    for law in (1, 2, 3):
        ax, ay = ref.wind_stress(np.interp(t, times, u), np.interp(t, times, v), law, 1.5e-3,
                                 1.2e-3)  # fmt: skip
        assert np.array_equal(step(W, f, law), ref.apply(damped, f, dt, ax, ay, eps_h))
    assert np.array_equal(step(W, f, 0), ref.apply(damped, f, dt, 0.0, 0.0, eps_h))


def uniform_flow(layers: int, f: float, dt: float, coriolis=None):
    """A uniform state on open boundaries: each layer's flow only rotates (the same in
    every cell: no flux difference)."""
    if layers == 1:
        initial = {"h": 10.0, "qx": 1.0, "qy": 0.5}
    else:
        initial = {"h1": 4.0, "q1x": 1.0, "q1y": 0.5, "h2": 6.0, "q2x": -0.3, "q2y": 0.2}
    return Simulation(structured_square(4, half=5e3), layers=layers, scheme="ir-roe", H=10.0,
                      initial=initial, boundary={"wall": "open"}, coriolis=coriolis or f,
                      dt_mode="fixed", dt=dt)  # fmt: skip


@pytest.mark.parametrize("layers", [1, 2])
def test_inertial_oscillation_keeps_period_and_energy(layers):
    """Over one inertial period 2π/f in N fixed steps the flow turns by N θ, θ = 2 atan(f dt/2)
    (the Cayley step) to 1e-13; that is back to the start within N (f dt)³/12 (the
    period is 2π/f to 3e-7 here); each layer's kinetic energy stays to 1e-13."""
    f, N = 1.2e-4, 1000
    period = 2 * math.pi / f
    sim = uniform_flow(layers, f, period / N)
    W0 = sim.state()
    E0 = [W0[:, k + 1] ** 2 + W0[:, k + 2] ** 2 for k in range(0, 3 * layers, 3)]
    sim.run(period / 4)
    quarter = sim.state()
    sim.run(period)
    assert sim.steps == N
    W = sim.state()
    theta = N * 2 * math.atan(f * period / N / 2)
    for n, k in enumerate(range(0, 3 * layers, 3)):
        qx, qy = W0[:, k + 1], W0[:, k + 2]
        exact = np.cos(theta) * qx + np.sin(theta) * qy, np.cos(theta) * qy - np.sin(theta) * qx
        assert np.abs(W[:, k + 1] - exact[0]).max() <= 1e-13
        assert np.abs(W[:, k + 2] - exact[1]).max() <= 1e-13
        bound = N * (f * period / N) ** 3 / 12 * np.hypot(qx, qy).max()
        assert np.abs(W[:, k + 1 : k + 3] - W0[:, k + 1 : k + 3]).max() <= 1.01 * bound
        assert np.abs(W[:, k + 1] ** 2 + W[:, k + 2] ** 2 - E0[n]).max() <= 1e-13 * E0[n].max()
        # a quarter period later the flow points a quarter turn clockwise: (qy, -qx)
        assert np.allclose(quarter[:, k + 1 : k + 3], np.stack((qy, -qx), 1), atol=1e-5)
    assert np.array_equal(W[:, 0], W0[:, 0])


@pytest.mark.parametrize("layers", [1, 2])
def test_lake_at_rest_on_a_beta_plane_stays_at_rest(layers):
    """A bumpy bed, flat surface and interface, f = 2Ω sin 40° + beta y: rest to 1e-12,
    each layer's mass to 1e-13."""
    mesh = structured_square(8, half=50e3)

    def H(x, y):
        return 20.0 - 8.0 * np.exp(-((x - 1e4) ** 2 + y**2) / 2e8)

    initial = {"h": H} if layers == 1 else {"h1": 5.0, "h2": lambda x, y: H(x, y) - 5.0}
    beta = 2 * OMEGA * math.cos(math.radians(40)) / 6.371e6
    sim = Simulation(mesh, layers=layers, scheme="ir-roe", H=H, initial=initial,
                     coriolis=Coriolis(latitude=40.0, beta=beta))  # fmt: skip
    W0 = sim.state()
    summary = sim.run(6 * 3600.0)
    W = sim.state()
    assert summary.steps > 80
    for k in range(0, 3 * layers, 3):
        assert np.abs(W[:, k + 1 : k + 3]).max() <= 1e-12
        assert np.abs(W[:, k] - W0[:, k]).max() <= 1e-12
    assert max(summary.mass_rel_drift) <= 1e-13


def eddy_drift(n: int) -> tuple[float, list[float]]:
    """Relative L2 change of the momentum of a Gaussian eddy in gradient-wind balance
    (``v²/r + f v = g dη/dr``, exact steady state) after one inertial period."""
    f, H, a, R = 1e-4, 100.0, 0.1, 100e3

    def state(x, y):
        eta = a * np.exp(-(x**2 + y**2) / R**2)
        w = (-f + np.sqrt(f * f - 8 * G * eta / R**2)) / 2  # v/r: r w² + f r w = g dη/dr
        h = H + eta
        return h, -w * y * h, w * x * h

    initial = {name: (lambda x, y, m=m: state(x, y)[m]) for m, name in enumerate(("h", "qx", "qy"))}
    sim = Simulation(structured_square(n, half=3 * R), layers=1, scheme="roe", H=H, coriolis=f,
                     initial=initial)  # fmt: skip
    F0 = sim.fields()
    summary = sim.run(2 * math.pi / f)
    F = sim.fields()
    q0, q = np.stack((F0["qx"], F0["qy"])), np.stack((F["qx"], F["qy"]))
    drift = np.sqrt(np.sum(F0["area"] * (q - q0) ** 2) / np.sum(F0["area"] * q0**2))
    return float(drift), summary.mass_rel_drift


def test_geostrophic_eddy_stays_and_its_drift_falls_with_refinement():
    """A gradient-wind eddy stays put to first order in the mesh size: its momentum
    drifts by 27 % and 15 % over an inertial period on 16 and 32 squares across six radii
    (order 0.88; 0.93 and 0.96 on to 64 and 128)."""
    coarse, _ = eddy_drift(16)
    fine, mass = eddy_drift(32)
    assert fine <= 0.16 and coarse / fine >= 1.7
    assert max(mass) <= 1e-13


def test_rossby_adjustment_converges_to_gills_steady_state():
    """RMS errors of v and η 16 % and 9.5 % at 5 and 10 cells per Rossby radius (order
    0.75; 0.9 % and 0.4 % at 160 cells per radius, scripts/rossby_adjustment.py)."""
    coarse, fine = rossby.errors(100), rossby.errors(200)
    assert fine[0] <= 0.11 and fine[1] <= 0.11
    assert coarse[0] / fine[0] >= 1.5 and coarse[1] / fine[1] >= 1.5


def test_wind_setup_reaches_the_steady_balance():
    """After 16 h, between neighbouring cells ``g h dη/dx = τ/ρ`` to 0.2 % (40 cells; second
    order in the cell size once still, scripts/wind_setup.py), ``τ = ρ_a C_d |U| U`` of
    Large & Pond; the surface is the exact steady one to 0.1 % of the set-up."""
    assert setup.stress() == pytest.approx(1.225 / 1025.0 * 1.79e-3 * 400.0, rel=1e-14)
    x, eta, h, drift = setup.wind_setup(40)
    assert np.abs(setup.balance(x, eta, h) - 1).max() <= 2e-3
    exact = setup.exact(x)
    assert np.abs(eta - exact).max() <= 1e-3 * (exact.max() - exact.min())
    assert drift <= 1e-13


def test_two_layer_wind_drives_the_upper_layer_only_and_keeps_masses():
    """Wind and Coriolis on a two-layer basin at rest: the upper layer takes the wind's
    momentum, each layer's mass stays to 1e-13; a dry-cell-free run, walls."""
    sim = Simulation(structured_square(8, half=5e3), layers=2, scheme="pvm-ifcp", H=20.0,
                     initial={"h1": 5.0, "h2": 15.0}, coriolis=1e-4, r=0.98,
                     wind=Wind(u=15.0, v=5.0, drag=1.3e-3))  # fmt: skip
    sim.backend.advance(math.inf, 1)
    W = sim.state()
    dt = sim.t
    tau = 1.225 / 1025.0 * 1.3e-3 * math.hypot(15.0, 5.0) * np.array([15.0, 5.0])
    c, s = ref.rotation(1e-4, dt)
    exact = dt * np.array([c * tau[0] + s * tau[1], c * tau[1] - s * tau[0]])
    assert np.allclose(W[:, 1:3], exact, rtol=1e-14, atol=0)  # step 1: no flux yet at rest
    assert np.array_equal(W[:, 4:6], np.zeros_like(W[:, 4:6]))
    summary = sim.run(1800.0)
    assert max(summary.mass_rel_drift) <= 1e-13


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"coriolis": Coriolis}, "expected None, f"),
        ({"coriolis": {"lat": 3}}, "unknown key"),
        ({"wind": Wind(speed=5.0)}, "give both speed and direction"),
        ({"wind": Wind(u=1.0, v=1.0, drag="charnock")}, "unknown law 'charnock'"),
        ({"wind": Wind(u=1.0, v=1.0, drag=-1e-3)}, "must be positive"),
        ({"wind": Wind(times=[0, 5, 5], u=[1, 2, 3], v=0.0)}, "times must increase (sample 2"),
        ({"wind": Wind(times=[0, 5], speed=[1, -2], direction=0.0)}, "wind speed: must be >= 0"),
        ({"wind": Wind(u=[1.0, 2.0], v=0.0)}, "equal, non-empty"),
        ({"wind": Wind(file="no/such.txt")}, "no such wind file"),
        ({"wind": "west"}, "expected None or Wind"),
    ],
)
def test_bad_forcing_is_a_one_line_error(kwargs, message):
    with pytest.raises(ConfigError) as err:
        Simulation(structured_square(2), layers=1, scheme="hll", H=1.0, initial={"h": 1.0},
                   **kwargs)  # fmt: skip
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_coriolis_values():
    for kwargs, message in (
        ({}, "either f"),
        ({"f": 1e-4, "latitude": 3.0}, "either f"),
        ({"latitude": 91.0}, "[-90, 90]"),
        ({"f": "x"}, "coriolis f"),
    ):
        with pytest.raises(ConfigError, match="coriolis") as err:
            Coriolis(**kwargs)
        assert message in str(err.value)
    assert Coriolis(latitude=30.0).f0 == pytest.approx(OMEGA)


def test_a_wind_series_ends_the_run_it_can_drive(tmp_path):
    path = tmp_path / "wind.txt"
    path.write_text("# t speed direction\n0 0 270\n600 10 270\n")
    table = Wind(file=path).table()
    assert np.allclose(table.u, [0.0, 10.0]) and np.allclose(table.v, [0.0, 0.0], atol=1e-14)
    sim = Simulation(structured_square(2), layers=1, scheme="hll", H=1.0, initial={"h": 1.0},
                     wind=Wind(file=path))  # fmt: skip
    with pytest.raises(ConfigError, match="past the end of the wind series"):
        sim.run(601.0)


def test_orderings_give_bitwise_identical_results():
    """Per-cell f travels with its cell: a beta-plane run with wind is the same, bit for
    bit, in any cell order."""
    runs = []
    for order in ("none", "rcm", "random"):
        sim = Simulation(structured_square(8, half=5e3), layers=2, scheme="ir-roe", H=20.0,
                         initial={"h1": lambda x, y: 5.0 + 0.5 * np.exp(-(x**2 + y**2) / 4e6),
                                  "h2": 15.0},
                         coriolis=Coriolis(f=1e-3, beta=1e-7), wind=Wind(u=10.0, v=3.0),
                         order=order)  # fmt: skip
        sim.run(600.0)
        runs.append(sim.state())
    assert np.abs(runs[0][:, 2]).max() > 1e-3  # the flow turned
    for W in runs[1:]:
        assert np.array_equal(W, runs[0])


def test_case_file_coriolis_and_wind(tmp_path):
    """``[coriolis]`` and ``[wind]`` reach the Simulation; bad values are one line naming
    the file."""
    from fvswe import casefile

    (tmp_path / "wind.txt").write_text("0 5 270\n100 10 270\n")
    head = 't_end = 50.0\nlayers = 1\nscheme = "hll"\n[mesh]\ngenerator = "structured_square"\n'
    head += "n = 4\n[initial]\nh = 1.0\nH = 1.0\n"
    path = tmp_path / "case.toml"
    path.write_text(head + '[coriolis]\nlatitude = 30.0\nbeta = 1e-11\n[wind]\nfile = "wind.txt"\n'
                    'drag = "wu"\n')  # fmt: skip
    spec = casefile.load(path)
    sim = spec.simulation(spec.load_mesh())
    assert sim.coriolis.f0 == pytest.approx(OMEGA) and sim.coriolis.beta == 1e-11
    assert sim.layout.wind.law == 3 and np.allclose(sim.layout.wind.u, [5.0, 10.0])
    for extra, message in (
        ("[coriolis]\nlatitude = 95.0\n", "coriolis latitude: must lie in [-90, 90]"),
        ("[coriolis]\nlat = 5.0\n", "unknown key 'coriolis.lat'"),
        ("[wind]\nspeed = [1.0, 2.0]\ndirection = 0.0\n", "times and values"),
        ('[wind]\nspeed = 5.0\ndirection = "west"\n', "'wind.direction' must be"),
        ('[wind]\nfile = "none.txt"\n', "no such wind file"),
    ):
        path.write_text(head + extra)
        with pytest.raises(ConfigError) as err:
            casefile.load(path)
        assert str(path) in str(err.value) and message in str(err.value), err.value
        assert "\n" not in str(err.value)
