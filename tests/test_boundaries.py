"""Boundaries with time series (docs/SCHEMES.md §7.4-§7.6): discharge, two-layer levels and the
non-reflecting characteristic boundary, on the CPU, on the host-emulated GPU kernels and from
case files."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fvswe.boundary import Characteristic, Discharge, Level, UnitDischarge, level_tables
from fvswe.errors import ConfigError
from fvswe.mesh.generate import strip
from fvswe.runner import mass_balance, summary_text
from fvswe.simulation import Simulation

G = 9.81


def _sim(mesh, layers, boundary, **kw):
    kw.setdefault("scheme", "hll" if layers == 1 else "pvm-ifcp")
    return Simulation(mesh, layers=layers, boundary=boundary, **kw)


@pytest.mark.parametrize("layers", [1, 2])
def test_discharge_inflow_balances_the_volume(layers):
    """A constant discharge through ``west`` (each layer its own) adds ``Q t`` to each layer's
    volume to round-off, and the inflow counters and the run summary say so."""
    mesh = strip(40, 2, x0=0.0, x1=100.0)  # width 5 m
    Q, Q2, t_end = 3.0, 1.25, 20.0
    if layers == 1:
        initial = {"h": lambda x, y: 2.0 + 0.3 * np.sin(x / 9.0)}
        west = Discharge(Q, every=1.0, until=30.0)
    else:
        initial = {"h1": lambda x, y: 1.0 + 0 * x, "h2": lambda x, y: 1.0 + 0.2 * np.sin(x / 9.0)}
        west = Discharge(Q, lower=Q2, every=1.0, until=30.0)
    sim = _sim(
        mesh, layers, {"west": west, "east": "wall", "wall": "wall"}, H=2.0, initial=initial, r=0.9
    )
    m0 = sim.mass()
    summary = sim.run(t_end)
    expected = [Q * t_end, Q2 * t_end][:layers]
    for k in range(layers):
        gained = summary.mass[k] - m0[k]
        assert abs(gained - expected[k]) <= 1e-13 * summary.mass[k], (k, gained)
        key = ("level_inflow", "level_inflow2")[k]
        assert abs(summary.counters[key] - expected[k]) <= 1e-13 * expected[k]
        assert summary.mass_error[k] <= 1e-13 * summary.mass[k]
    balance = mass_balance(sim, summary)
    text = summary_text("run", sim, summary)
    for k, b in enumerate(balance):
        assert b["net_in"] == summary.counters[("level_inflow", "level_inflow2")[k]]
        assert abs(b["rest"]) <= 1e-13 * b["now"]
        assert f"{b['net_in']:+.6g} in through boundaries" in text


def test_unit_discharge_series_and_outflow():
    """``UnitDischarge`` as a table that turns from inflow to outflow: the volume follows the
    inflow counter to round-off, and the counter the integral of the series to O(dt)."""
    mesh = strip(40, 2, x0=0.0, x1=100.0)
    width = 5.0
    times, q = [0.0, 10.0, 20.0], [0.2, 0.2, -0.2]
    sim = _sim(
        mesh,
        1,
        {"west": UnitDischarge((times, q)), "east": "wall", "wall": "wall"},
        H=2.0,
        initial={"h": lambda x, y: 2.0 + 0 * x},
    )
    m0 = sim.mass()[0]
    summary = sim.run(20.0)
    inflow = summary.counters["level_inflow"]
    assert abs(summary.mass[0] - m0 - inflow) <= 1e-13 * summary.mass[0]
    exact = width * (0.2 * 10.0 + 0.0)  # the ramp from +0.2 to -0.2 integrates to 0
    assert abs(inflow - exact) <= 0.02 * exact


def _ramp_volume(steps: int, integrator: str, **kw) -> tuple[float, Simulation]:
    """Volume let in over 6 s by a discharge ramping linearly from 0 to 3 m^3/s in 3 s, then
    held (a kink at t = 3 s, mid-step for 3, 9 and 27 fixed steps), and its Simulation."""
    mesh = strip(4, 1, x0=0.0, x1=400.0)
    west = Discharge(([0.0, 3.0, 10.0], [0.0, 3.0, 3.0]))
    sim = _sim(mesh, 1, {"west": west, "east": "wall", "wall": "wall"}, H=2.0,
               initial={"h": 2.0}, dt_mode="fixed", dt=6.0 / steps, integrator=integrator,
               **kw)  # fmt: skip
    summary = sim.run(6.0)
    assert abs(summary.mass[0] - summary.mass_initial[0] - summary.counters["level_inflow"]) < 1e-9
    return summary.counters["level_inflow"], sim


@pytest.mark.parametrize("integrator", ["euler", "ssp-rk2"])
def test_discharge_volume_converges_at_second_order_in_dt(integrator):
    """The volume a discharge series lets in is second order in Δt: Euler reads the table at
    the step's midpoint, Heun at its stages (trapezoid; docs/SCHEMES.md §7.5). Exact here is
    4.5 Q_max = 13.5 m^3; a mid-step kink leaves an error of 1/6, 1/54, 1/486 Q_max with Euler
    (ratio 9 for a Δt three times smaller); read at the step's start it was first order
    (ratio 3)."""
    errors = [abs(_ramp_volume(n, integrator)[0] - 13.5) for n in (3, 9, 27)]
    orders = [np.log(errors[k] / errors[k + 1]) / np.log(3.0) for k in range(2)]
    assert all(1.9 < order < 2.1 for order in orders), (errors, orders)


def test_discharge_midpoint_on_host_gpu_matches_cpu():
    """The host-run GPU kernels read a discharge at the same midpoint: the inflow of the
    fixed-step ramp is the CPU's (to the order of summation), 13.5 m^3 + Q_max / 54 (the
    mid-step kink's error), and the state is the CPU's bit for bit."""
    from test_cuda_sources import CXX, emulated_run

    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH")
    volume, sim = _ramp_volume(9, "euler")
    W, ctrl = emulated_run(sim.layout, sim.scheme, "gather", "fixed", 6.0, 10**6, 6.0 / 9)
    assert ctrl["steps"] == 9 and np.array_equal(W, sim.backend.get_state())
    assert ctrl["level_inflow"] == pytest.approx(volume, rel=1e-13)
    assert ctrl["level_inflow"] - 13.5 == pytest.approx(3.0 / 54, rel=1e-9)


def test_discharge_table_is_spread_over_the_tag_length():
    mesh = strip(10, 3, x0=0.0, x1=10.0)  # west side: 3 m
    lv = level_tables(
        mesh, {"west": Discharge(6.0, lower=1.5), "east": "wall", "wall": "wall"}, layers=2
    )
    assert lv.names == ("west", "west lower")
    assert np.allclose(lv.at(5.0), [2.0, 0.5], rtol=1e-15)
    assert np.all(lv.edge_level[mesh.edge_tag == mesh.tags["west"]] == 0)
    assert np.all(lv.edge_level[mesh.edge_tag != mesh.tags["west"]] == -1)


@pytest.mark.parametrize("scheme", ["pvm-ifcp", "roe"])
def test_two_layer_levels_at_the_rest_state_keep_it(scheme):
    """Imposed surface and interface levels equal to those of a lake at rest over a bumpy bed
    (and a characteristic boundary toward the same far field) leave it at rest."""
    mesh = strip(30, 3, x0=-5.0, x1=5.0)

    def H(x, y):
        return 2.0 - 0.5 * np.exp(-(x**2) - (y - 0.5) ** 2)

    sim = _sim(
        mesh,
        2,
        {
            "west": Level(0.0, interface=-1.0),
            "east": Characteristic(0.0),
            "wall": Level(0.0, interface=-1.0),
        },
        scheme=scheme,
        H=H,
        r=0.8,
        initial={"h1": lambda x, y: 1.0 + 0 * x, "h2": lambda x, y: H(x, y) - 1.0},
    )
    W0 = sim.state()
    sim.run(10.0, max_steps=200)
    W = sim.state()
    assert sim.steps == 200
    assert np.abs(W[:, [0, 3]] - W0[:, [0, 3]]).max() <= 1e-12
    assert np.abs(W[:, [1, 2, 4, 5]]).max() <= 1e-12


def test_two_layer_level_drives_the_interface():
    """A raised interface level at ``west`` pushes lower-layer water in (and upper out)."""
    mesh = strip(30, 1, x0=0.0, x1=30.0)
    sim = _sim(
        mesh,
        2,
        {"west": Level(0.0, interface=-0.8), "east": "wall", "wall": "wall"},
        H=2.0,
        r=0.9,
        initial={"h1": lambda x, y: 1.0 + 0 * x, "h2": lambda x, y: 1.0 + 0 * x},
    )
    summary = sim.run(5.0)
    assert summary.counters["level_inflow2"] > 0 > summary.counters["level_inflow"]
    for k in range(2):
        assert summary.mass_error[k] <= 1e-13 * summary.mass[k]


def _reflected_energy(east, layers: int = 1) -> float:
    """Energy of (run in [0, 100] - run in [0, 300]) in [0, 100] once a right-going pulse has
    left through ``east``, over the pulse's initial energy (linear energy norm)."""
    H0, a, c = 1.0, 0.05, np.sqrt(G * 1.0)

    def eta(x, y):
        return a * np.exp(-(((x - 50.0) / 5.0) ** 2))

    states = []
    for x1, bc in ((100.0, east), (300.0, "wall")):
        mesh = strip(int(2 * x1), 1, x0=0.0, x1=x1)
        if layers == 1:
            initial = {"h": lambda x, y: H0 + eta(x, y), "qx": lambda x, y: c * eta(x, y)}
        else:  # the external mode: both layers move with u = c eta / H
            initial = {
                "h1": lambda x, y: 0.5 + eta(x, y),
                "q1x": lambda x, y: c * eta(x, y) / 2,
                "h2": lambda x, y: 0.5 + 0 * x,
                "q2x": lambda x, y: c * eta(x, y) / 2,
            }
        sim = _sim(
            mesh,
            layers,
            {"west": "wall", "east": bc, "wall": "wall"},
            H=H0,
            initial=initial,
            r=0.99,
        )
        if x1 == 100.0:
            W0 = sim.state()
            area = mesh.area
        sim.run(30.0)
        keep = mesh.centroid[:, 0] < 100.0
        order = np.lexsort((mesh.centroid[keep, 1], mesh.centroid[keep, 0]))
        states.append(sim.state()[keep][order])
    area = area[np.lexsort((mesh.centroid[keep, 1], mesh.centroid[keep, 0]))]

    def energy(W, h):
        depth = W[:, 0] if layers == 1 else W[:, 0] + W[:, 3]
        qx = W[:, 1] if layers == 1 else W[:, 1] + W[:, 4]
        return np.sum(area * (0.5 * G * (depth - h) ** 2 + 0.5 * qx**2 / H0))

    return energy(states[0] - states[1], 0.0) / energy(W0, H0)


@pytest.mark.parametrize("layers", [1, 2])
def test_characteristic_boundary_lets_a_wave_leave(layers):
    """A right-going pulse (two layers, r = 0.99: the external mode) leaves through the
    characteristic boundary with a reflected energy below 0.1 % (measured 9e-6 for both),
    where the open (copy) boundary reflects over 5 % (measured 0.107)."""
    char = _reflected_energy(Characteristic(0.0, every=1.0, until=60.0), layers)
    opened = _reflected_energy("open", layers)
    assert char < 1e-3
    assert opened > 0.05


@pytest.mark.parametrize(("nx", "tol"), [(50, 0.025), (100, 0.0125)])
def test_discharge_reaches_the_manning_normal_depth(nx, tol):
    """``q = 1 m²/s`` in at the top of a 2 km channel of slope 1e-3 with Manning ``n = 0.03``
    (the normal level held at the outlet) reaches the normal depth
    ``h_n = (n q / sqrt(S))^(3/5)`` in the middle, first order in the cell size (measured
    with the backward-Euler friction step: -2.3 % at 50 cells, -1.1 % at 100, -0.58 % at 200)."""
    S, n, q, L = 1e-3, 0.03, 1.0, 2000.0
    hn = (n * q / np.sqrt(S)) ** 0.6

    def H(x, y):
        return 5.0 + S * x

    outlet = hn - H(L - 0.5 * L / nx, 0.0)
    sim = Simulation(
        strip(nx, 1, x0=0.0, x1=L),
        layers=1,
        scheme="hll",
        H=H,
        friction=("manning", n),
        initial={"h": lambda x, y: 0.8 * hn + 0 * x},
        boundary={
            "west": UnitDischarge(q, every=10.0, until=1e4),
            "east": Level(outlet, every=10.0, until=1e4),
            "wall": "wall",
        },
    )
    sim.run(4000.0)
    f = sim.fields()
    middle = (f["x"] > 500.0) & (f["x"] < 1500.0)
    error = np.abs(f["h"][middle] / hn - 1.0).max()
    assert error < tol
    # the cells' discharge, first order too: measured 3.8 %, 1.9 %, 0.98 % off
    assert np.abs(f["qx"][middle] / q - 1.0).max() < 2.5 * tol


def _channel(east, nx: int = 100) -> Simulation:
    """Manning normal flow down a 2 km channel of slope 1e-3 (n = 0.03): ``q = 1 m²/s`` in at
    the top, from the normal state, ``east`` the outlet."""
    S, n, q = 1e-3, 0.03, 1.0
    hn = (n * q / np.sqrt(S)) ** 0.6
    return Simulation(
        strip(nx, 1, x0=0.0, x1=2000.0), layers=1, scheme="hll", backend="cpu",
        H=lambda x, y: 5.0 + S * x, friction=("manning", n), initial={"h": hn, "qx": q},
        boundary={"west": UnitDischarge(q), "east": east, "wall": "wall"},
    )  # fmt: skip


@pytest.mark.parametrize("east", ["outflow", "open"])
def test_free_outflow_passes_uniform_flow_down_a_slope(east):
    """Normal flow leaves through "outflow" within 2 % of the normal depth h_n = 0.969 m in
    every cell (measured 1.2 %: the friction step's first-order offset, the same upstream),
    its outflow counted (the volume balances to round-off); "open" copies the cell's bed, the
    last half cell loses the slope's push and the outlet backs up (measured +154 %)."""
    sim = _channel(east)
    hn = (0.03 / np.sqrt(1e-3)) ** 0.6
    summary = sim.run(4000.0)
    error = np.abs(sim.fields()["h"] / hn - 1.0).max()
    if east == "open":
        assert error > 1.0
        return
    assert error < 0.02
    assert summary.mass_rel_drift[0] <= 1e-13 and summary.counters["level_inflow"] < 1.0


def test_the_outflows_bed_drops_do_not_follow_scipys_index_order(monkeypatch):
    """The bed drops' least squares take a cell's neighbours in the order of their numbers:
    the same bits whatever order the sparse product leaves each row's indices in (reversed
    here), and exact on a plane (the channel's slope S: a drop of S dx across the edge)."""
    from fvswe.boundary import bed_drops
    from fvswe.mesh import Mesh

    mesh = strip(12, 3, x0=0.0, x1=12.0)
    rng = np.random.default_rng(3)
    inner = (mesh.nodes[:, 0] > 0) & (mesh.nodes[:, 0] < 12) & (mesh.nodes[:, 1] > 0) & (
        mesh.nodes[:, 1] < 3)  # fmt: skip
    nodes = mesh.nodes.copy()
    nodes[inner] += rng.uniform(-0.2, 0.2, (int(inner.sum()), 2))
    mesh = Mesh.from_arrays(nodes, mesh.cells, boundary_tags=mesh.boundary_tags())
    east = np.flatnonzero(mesh.edge_tag == mesh.tags["east"])
    H = 5.0 + 1e-3 * mesh.centroid[:, 0] + 0.2 * np.sin(mesh.centroid[:, 1])
    sorted_rows = bed_drops(mesh, east, H)
    adjacency = mesh.adjacency().tocsr()
    flipped = adjacency.copy()
    for i in range(mesh.n_cells):  # each row's entries in reverse
        row = slice(adjacency.indptr[i], adjacency.indptr[i + 1])
        flipped.indices[row] = adjacency.indices[row][::-1]
        flipped.data[row] = adjacency.data[row][::-1]
    monkeypatch.setattr(type(mesh), "adjacency", lambda self: flipped)
    assert np.array_equal(bed_drops(mesh, east, H), sorted_rows)
    plane = bed_drops(mesh, east, 5.0 + 1e-3 * mesh.centroid[:, 0])
    mid = mesh.nodes[mesh.edge_nodes[east]].mean(axis=1)
    inner_cell = mesh.edge_cells[east, 0]
    np.testing.assert_allclose(plane, 2e-3 * (mid[:, 0] - mesh.centroid[inner_cell, 0]),
                               rtol=1e-9)  # fmt: skip


def test_free_outflow_on_host_gpu_is_the_cpu_bitwise():
    """The host-run GPU kernels stand the outflow's ghost on the same extrapolated bed: the
    state after 100 steps is the CPU's bit for bit in every variant."""
    from test_cuda_sources import CXX, emulated_run

    from fvswe.backends import gpu

    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH")
    sim = _channel("outflow", nx=20)
    lv, mesh = sim.layout.levels, sim.mesh
    cell = mesh.edge_cells[lv.edge_level == lv.count - 1, 0]  # the outflow edge's cell
    mirrored = 2.0 * (2000.0 - mesh.centroid[cell, 0])  # to the ghost's barycentre
    assert lv.values[-1] == pytest.approx(1e-3 * mirrored[0], rel=1e-12)  # its bed drop
    sim.backend.advance(4000.0, 100)
    for variant in gpu.VARIANTS:
        W, ctrl = emulated_run(sim.layout, sim.scheme, variant, "lagged", 4000.0, 100)
        assert ctrl["t"] == sim.t and np.array_equal(W, sim.backend.get_state()), variant
        assert ctrl["level_inflow"] == pytest.approx(sim.backend.counters()["level_inflow"],
                                                     rel=1e-12)  # fmt: skip


def test_condition_errors_name_the_tag():
    mesh = strip(4, 1)
    wet = {"initial": {"h": lambda x, y: 1.0 + 0 * x}}
    wet2 = {"initial": {"h1": lambda x, y: 1.0 + 0 * x, "h2": lambda x, y: 1.0 + 0 * x}}
    with pytest.raises(ConfigError, match="boundary tag 'west': an interface level needs a two"):
        _sim(
            mesh,
            1,
            {"west": Level(0.0, interface=-1.0), "east": "wall", "wall": "wall"},
            H=1.0,
            **wet,
        )
    with pytest.raises(ConfigError, match="boundary tag 'west': a two-layer level needs the"):
        _sim(mesh, 2, {"west": Level(0.0), "east": "wall", "wall": "wall"}, H=2.0, **wet2)
    with pytest.raises(ConfigError, match="boundary tag 'east': a lower-layer discharge needs"):
        _sim(
            mesh,
            1,
            {"west": "wall", "east": Discharge(1.0, lower=1.0), "wall": "wall"},
            H=1.0,
            **wet,
        )
    with pytest.raises(ConfigError, match="boundary tag 'east' lower: expected a number"):
        _sim(
            mesh,
            2,
            {"west": "wall", "east": Discharge(1.0, lower=[1]), "wall": "wall"},
            H=2.0,
            **wet2,
        )
    with pytest.raises(ConfigError, match="unknown condition 'discharge'"):
        _sim(mesh, 1, {"west": "discharge", "east": "wall", "wall": "wall"}, H=1.0, **wet)


def _emulated_case(layers: int, **kw) -> Simulation:
    """A run through every kind of boundary with tables: one layer with wetting and drying."""
    mesh = strip(30, 2, x0=0.0, x1=60.0)
    if layers == 1:

        def H(x, y):
            return 1.0 - x / 40.0  # dry beyond x = 40 m

        boundary = {
            "west": Discharge(lambda t: 2.0 + np.sin(t), every=0.5, until=60.0),
            "east": Level(lambda t: 0.1 * t, every=1.0, until=60.0),
            "wall": Characteristic(lambda t: 0.05 * np.sin(t), every=0.5, until=60.0),
        }
        initial = {"h": lambda x, y: np.maximum(H(x, y), 0.0)}
        return _sim(mesh, 1, boundary, scheme="hll-wd", H=H, initial=initial, **kw)
    boundary = {
        "west": Discharge(1.0, lower=lambda t: 0.5 * np.sin(t), every=0.5, until=60.0),
        "east": Level(0.0, interface=lambda t: -1.0 + 0.1 * np.sin(t), every=0.5, until=60.0),
        "wall": Characteristic(0.02, every=1.0, until=60.0),
    }
    initial = {"h1": lambda x, y: 1.0 + 0 * x, "h2": lambda x, y: 1.0 + 0.1 * np.cos(x / 7)}
    return _sim(mesh, 2, boundary, H=2.0, r=0.9, initial=initial, **kw)


@pytest.mark.parametrize("layers", [1, 2])
def test_step_kernels_on_host_match_cpu_bitwise(layers):
    """The CUDA step kernels (run on the host, tests/cuda_host) with discharge, level and
    characteristic boundaries: float64 states and steps bitwise those of the CPU backend,
    inflow counters to 1e-12 (the two sum the edges' fluxes in different orders)."""
    from test_cuda_sources import CXX, emulated_run

    from fvswe.backends import gpu

    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH")
    sim = _emulated_case(layers)
    sim.backend.advance(5.0, 10**6)
    ref, counters = sim.backend.get_state(), sim.backend.counters()
    keys = ("level_inflow", "level_inflow2")[:layers]
    for variant in gpu.VARIANTS:
        W, ctrl = emulated_run(sim.layout, sim.scheme, variant, "lagged", 5.0, 10**6)
        assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps)
        assert np.array_equal(W, ref), variant
        for key in keys:
            assert counters[key] != 0
            assert ctrl[key] == pytest.approx(counters[key], rel=1e-12, abs=0)


# -- case files -------------------------------------------------------------------------------
CASE = """
layers = {layers}
t_end = 2.0
r = 0.9
[mesh]
generator = "strip"
nx = 10
ny = 2
x1 = 10.0
[initial]
H = 2.0
{initial}
[boundary]
{boundary}
"""


def _load(tmp_path, boundary: str, layers: int = 1):
    from fvswe import casefile

    initial = 'h = "H"' if layers == 1 else "h1 = 1.0\nh2 = 1.0"
    path = tmp_path / "case.toml"
    path.write_text(CASE.format(layers=layers, initial=initial, boundary=boundary))
    return casefile.load(path)


def test_case_file_boundaries_reach_the_tables(tmp_path):
    """Discharge (Q expression, q table, lower layer from a file), two-layer levels and
    characteristic boundaries from a case file: the tables the backends read."""
    (tmp_path / "lower.txt").write_text("# t Q\n0 0.5\n4 1.5\n")
    spec = _load(
        tmp_path,
        '[boundary.west]\nkind = "discharge"\nQ = "2 * t"\nQ_lower = { file = "lower.txt" }\n'
        "every = 1.0\nuntil = 4.0\n"
        "[boundary.east]\nlevel = 0.1\ninterface = { times = [0, 4], values = [-1, -0.5] }\n"
        "until = 4.0\n"
        '[boundary.wall]\nkind = "characteristic"\nlevel = "0.01 * t"\nuntil = 4.0\n',
        layers=2,
    )
    assert isinstance(spec.boundary["west"], Discharge)
    assert isinstance(spec.boundary["east"], Level)
    assert isinstance(spec.boundary["wall"], Characteristic)
    mesh = spec.load_mesh()
    lv = level_tables(mesh, spec.boundary, layers=2)
    assert lv.names == ("west", "west lower", "east", "east interface", "wall")
    width = 2.0  # the strip's west side: ny cells of 1 m
    np.testing.assert_allclose(lv.at(2.0), [4.0 / width, 1.0 / width, 0.1, -0.75, 0.02])
    sim = spec.simulation(mesh)
    summary = sim.run(spec.t_end)
    assert summary.counters["level_inflow2"] != 0


@pytest.mark.parametrize(
    ("boundary", "cls", "value"),
    [
        ('west = { kind = "discharge", q = { times = [0, 9], values = [1, 1] } }',
         UnitDischarge, 1.0),
        ('west = { kind = "characteristic" }', Characteristic, 0.0),
        ('west = { kind = "level", level_file = "tide.txt" }', Level, 0.3),
    ],
    ids=["unit-discharge", "characteristic", "level-file"],
)  # fmt: skip
def test_case_file_boundary_kinds(tmp_path, boundary, cls, value):
    (tmp_path / "tide.txt").write_text("0 0.3\n9 0.3\n")
    spec = _load(tmp_path, f'{boundary}\neast = "wall"\nwall = "wall"\n')
    assert type(spec.boundary["west"]) is cls
    lv = level_tables(spec.load_mesh(), spec.boundary)
    np.testing.assert_allclose(lv.at(1.0), [value])


@pytest.mark.parametrize(
    ("west", "message"),
    [
        ('{ kind = "inflow", Q = 1 }', "'boundary.west.kind' must be one of level, discharge"),
        ('{ kind = "discharge", Q = 1, q = 1 }', "'boundary.west' needs exactly one of 'Q' or 'q'"),
        ('{ kind = "discharge" }', "'boundary.west' needs exactly one of 'Q' or 'q'"),
        ('{ kind = "discharge", Q = 1, q_lower = 1 }', "give 'Q_lower' with 'Q'"),
        ("{ level = 0.0, Q = 1 }", "'boundary.west.Q' is not a key of a level boundary"),
        ('{ kind = "discharge", Q = { file = 3 } }', "'boundary.west.Q' must be a number, an"),
        ('{ kind = "discharge", Q = "sqrt(-1 - t)" }', "boundary.west.Q"),
        ('{ kind = "discharge", Q = "t", every = 0 }', "every and until must be positive"),
        ("{ Q = 1 }", "'boundary.west.Q' is not a key of a level boundary"),
        ('{ kind = "characteristic", interface = 1 }', "'boundary.west.interface' is not a key"),
    ],
)  # fmt: skip
def test_case_file_boundary_errors_name_the_key(tmp_path, west, message):
    """Each mistake: a one-line ConfigError naming the file and the key."""
    import re

    with pytest.raises(ConfigError, match=re.escape(message)) as err:
        spec = _load(tmp_path, f'west = {west}\neast = "wall"\nwall = "wall"\n')
        level_tables(spec.load_mesh(), spec.boundary)
    assert "\n" not in str(err.value)


# -- the ghost states against the NumPy reference ---------------------------------------------
def _random_boundary_states(n: int, layers: int, seed: int = 5):
    """Wet, thin and dry states with sub- and supercritical velocities, unit normals, beds,
    levels and unit discharges in and out."""
    rng = np.random.default_rng(seed)
    W = np.zeros((n, 6))
    for c in (0, 3)[:layers]:
        h = rng.uniform(0.0, 3.0, n) * (rng.random(n) > 0.1)
        h[rng.random(n) < 0.1] = rng.uniform(0, 1e-3)
        W[:, c] = h
        W[:, c + 1 : c + 3] = h[:, None] * rng.normal(0.0, 3.0, (n, 2))
    theta = rng.uniform(0, 2 * np.pi, n)
    H = rng.uniform(0.5, 4.0, n)
    a = rng.normal(0.0, 2.0, n)
    b = rng.normal(-1.0, 1.0, n)
    return W, H, a, b, np.cos(theta), np.sin(theta)


@pytest.mark.parametrize("layers", [1, 2])
def test_numba_ghosts_match_the_numpy_reference(layers):
    """Every ghost of fvswe/physics/ghosts.py equals fvswe/schemes/ghosts.py to 1e-14."""
    from fvswe.physics import ghosts as nb
    from fvswe.schemes import ghosts as ref

    eps_h = 1e-4
    W, H, a, b, ex, ey = _random_boundary_states(400, layers)
    expected = {
        "level": ref.level_ghost(W, H, a, b, layers, eps_h),
        "discharge": ref.discharge_ghost(W, a, b, ex, ey, G, layers, eps_h),
        "characteristic": ref.characteristic_ghost(W, H, a, ex, ey, G, layers, eps_h),
        "fluctuation": ref.discharge_fluctuation(W[:, ::-1], W, a, b, ex, ey, layers),
    }
    for e in range(W.shape[0]):
        w = tuple(W[e])
        got = {
            "level": nb.level_ghost(w, H[e], a[e], b[e], layers, eps_h),
            "discharge": nb.discharge_ghost(w, a[e], b[e], ex[e], ey[e], G, layers, eps_h),
            "characteristic": nb.characteristic_ghost(w, H[e], a[e], ex[e], ey[e], G, layers,
                                                      eps_h),
            "fluctuation": nb.discharge_fluctuation(w[::-1], w, a[e], b[e], ex[e], ey[e], layers),
        }  # fmt: skip
        for name, g in got.items():
            scale = max(1.0, np.abs(expected[name][e]).max())
            assert np.abs(np.array(g) - expected[name][e]).max() <= 1e-14 * scale, (name, e)


def test_discharge_ghost_carries_the_discharge_and_keeps_the_invariant():
    """One layer: ``h_g u_n,g = phi`` and ``u_n,g + 2 c_g = R`` (subcritical root), or the
    critical ``c_g = R/3`` for an outflow the invariant cannot carry."""
    from fvswe.schemes.ghosts import discharge_celerity

    rng = np.random.default_rng(2)
    R = rng.uniform(-2.0, 20.0, 5000)
    phi = rng.normal(0.0, 5.0, 5000)
    c = discharge_celerity(phi, R, G)
    h = c * c / G
    inflow = phi < 0
    assert np.all(c[inflow] > 0) and np.all(c[inflow] >= R[inflow] / 3)
    residual = (2 * c - R) * c * c + G * phi
    scale = c**3 + np.abs(R) * c * c + G * np.abs(phi)
    rooted = inflow | (residual <= 1e-12 * scale) & (c > np.maximum(R, 0) / 3)
    assert np.all(np.abs(residual[rooted]) <= 1e-13 * scale[rooted])
    u = phi[rooted] / h[rooted]
    assert np.allclose(u + 2 * c[rooted], R[rooted], rtol=1e-12, atol=1e-12 * np.abs(R).max())
    critical = ~rooted
    assert critical.any() and np.all(phi[critical] >= 0)
    assert np.allclose(c[critical], np.maximum(R[critical], 0) / 3, rtol=1e-15, atol=0)


GHOST_HARNESS = r"""
#include <cstdio>
#include <cstdlib>
#include "physics.cuh"
int main(int argc, char** argv)
{
    const int n = std::atoi(argv[1]), layers = std::atoi(argv[2]);
    double prm[2];
    if (std::fread(prm, sizeof(double), 2, stdin) != 2) return 1;
    for (int e = 0; e < n; ++e) {
        double row[11], out[24] = {};
        if (std::fread(row, sizeof(double), 11, stdin) != 11) return 1;
        const double H = row[6], a = row[7], b = row[8], ex = row[9], ey = row[10];
        const auto w = fv_load6(row);
        const auto reversed = fv_make(row[5], row[4], row[3], row[2], row[1], row[0]);
        fv_store(ghosts::level_ghost<double>(w, H, a, b, layers, prm[1]), out);
        fv_store(ghosts::discharge_ghost<double>(w, a, b, ex, ey, prm[0], layers, prm[1]), out + 6);
        fv_store(ghosts::characteristic_ghost<double>(w, H, a, ex, ey, prm[0], layers, prm[1]),
                 out + 12);
        fv_store(ghosts::discharge_fluctuation<double>(reversed, w, a, b, ex, ey, layers),
                 out + 18);
        std::fwrite(out, sizeof(double), 24, stdout);
    }
}
"""


@pytest.mark.parametrize("layers", [1, 2])
def test_cuda_ghosts_on_host_are_bitwise_the_numba_ones(layers):
    """The emitted ghosts (physics.cuh) compiled for the host (no FMA contraction) give the
    bits of fvswe/physics/ghosts.py under Numba on wet, thin and dry states, inflows and
    outflows."""
    import subprocess

    from test_cuda_sources import CXX, host_binary

    from fvswe.physics import ghosts as nb

    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH")
    exe = host_binary("ghosts", GHOST_HARNESS, ["-std=c++17", "-O1", "-ffp-contract=off"])
    eps_h = 1e-4
    W, H, a, b, ex, ey = _random_boundary_states(2000, layers, seed=11)
    rows = np.column_stack((W, H, a, b, ex, ey))
    stdin = np.array([G, eps_h]).tobytes() + rows.tobytes()
    out = subprocess.run([str(exe), str(len(rows)), str(layers)], input=stdin,
                         capture_output=True, check=True).stdout  # fmt: skip
    got = np.frombuffer(out, dtype=np.float64).reshape(len(rows), 4, 6)
    for e in range(len(rows)):
        w = tuple(W[e])
        want = (
            nb.level_ghost(w, H[e], a[e], b[e], layers, eps_h),
            nb.discharge_ghost(w, a[e], b[e], ex[e], ey[e], G, layers, eps_h),
            nb.characteristic_ghost(w, H[e], a[e], ex[e], ey[e], G, layers, eps_h),
            nb.discharge_fluctuation(w[::-1], w, a[e], b[e], ex[e], ey[e], layers),
        )
        assert np.array_equal(got[e], np.array(want)), e


MPI_SCRIPT = """
import sys
import re

import numpy as np
from mpi4py import MPI
sys.path.insert(0, {tests!r})
from test_boundaries import _emulated_case
sim = _emulated_case({layers}, backend="cpu", comm=MPI.COMM_WORLD)
summary = sim.run(5.0)
W = sim.state()
if MPI.COMM_WORLD.rank == 0:
    c = summary.counters
    np.savez({out!r}, W=W, inflow=[c[k] for k in sorted(c) if k.startswith("level_inflow")])
"""


@pytest.mark.parametrize("layers", [1, 2])
def test_ranks_give_the_single_process_bits_with_boundary_tables(tmp_path, layers):
    """Two MPI ranks (fvswe.parallel): the state and the per-layer inflow counters of the runs
    through discharge, level and characteristic boundaries are the single process's bits.
    The single process runs first: it compiles and caches the kernels that the ranks then
    load, instead of each rank compiling them at once."""
    from pathlib import Path

    pytest.importorskip("mpi4py")
    from test_mpi import MPIEXEC, mpiexec

    if MPIEXEC is None:
        pytest.skip("needs mpiexec")
    sim = _emulated_case(layers, backend="cpu")
    summary = sim.run(5.0)
    tests = Path(__file__).resolve().parent
    script, out = tmp_path / "ranks.py", tmp_path / "out.npz"
    script.write_text(MPI_SCRIPT.format(tests=str(tests), layers=layers, out=str(out)))
    done = mpiexec(2, str(script), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    keys = sorted(k for k in summary.counters if k.startswith("level_inflow"))
    assert len(keys) == layers
    with np.load(out) as z:
        assert np.array_equal(z["W"], sim.state())
        assert np.array_equal(z["inflow"], [summary.counters[k] for k in keys])


def test_a_hole_in_the_mesh_is_named_with_its_edge_count_and_first_edge():
    """Edges a mesh file tags with no name (the rim of a hole) get the tag 'wall': a case
    that gives it no condition, or names a tag the mesh lacks, hears how many edges carry it
    and where the first lies, in one line."""
    from fvswe.mesh import Mesh

    x, y = np.meshgrid(np.arange(4.0), np.arange(4.0), indexing="ij")
    nodes = np.column_stack([x.ravel(), y.ravel()])
    quads = [[4 * i + j, 4 * (i + 1) + j, 4 * (i + 1) + j + 1, 4 * i + j + 1]
             for i in range(3) for j in range(3) if (i, j) != (1, 1)]  # fmt: skip
    ring = [0, 4, 8, 12, 13, 14, 15, 11, 7, 3, 2, 1]
    outer = np.column_stack([ring, np.roll(ring, -1)])
    mesh = Mesh.from_arrays(nodes, np.array(quads), boundary_tags={"outer": outer},
                            source="pond.msh")  # fmt: skip
    rim = "boundary tag 'wall' (given to the edges the mesh file leaves untagged, such as a "
    rim += "hole's rim) holds 4 edge(s), the first from ("
    for boundary, start in (
        ({"outer": "wall"}, f"pond.msh: {rim}"),
        ({"outer": "wall", "island": "wall"}, "boundary condition for tag 'island', which "
         f"pond.msh lacks (its boundary tags: outer, wall); {rim}"),
    ):  # fmt: skip
        with pytest.raises(ConfigError) as err:
            _sim(mesh, 1, boundary, H=1.0, initial={"h": 1.0})
        message = str(err.value)
        assert message.startswith(start) and "\n" not in message, message
        assert re.search(r"the first from \([12], [12]\) to \([12], [12]\)", message), message
