"""Gauges and cross-sections: a gauge's series is its cell's values, a section's discharge is
the edge mass flux of the reference scheme, and `fvswe run` writes both from a case file."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from matplotlib.tri import Triangulation
from test_cuda_sources import CXX, NVCC, cached_build
from test_maxima import _host_gpu

from fvswe.backends.cpu.pipeline import CpuBackend
from fvswe.boundary import Discharge, Level
from fvswe.cli import main
from fvswe.errors import ConfigError
from fvswe.mesh.generate import strip, structured_square
from fvswe.output import output_fields
from fvswe.probes import Gauge, Probes, Section
from fvswe.schemes import get_flux
from fvswe.simulation import Simulation

DT = 2e-3


def dam_break(order: str = "rcm", **kw) -> Simulation:
    """Test 1's dam break on 128 cells with some momentum, RCM-renumbered, fixed Δt."""
    h1 = lambda x, y: np.where(np.hypot(x, y) > 1.5, 4.0, 0.5)  # noqa: E731
    initial = {"h1": h1, "h2": lambda x, y: 6.0 - h1(x, y), "q1x": 0.3, "q2y": -0.2}
    return Simulation(structured_square(8), layers=2, H=6.0, order=order, backend="cpu",
                      dt_mode="fixed", dt=DT, initial=initial, **kw)  # fmt: skip


def test_a_gauge_series_is_the_values_of_the_cell_holding_its_point():
    sim = dam_break()
    points = {"a": (0.3, 0.2), "b": (-4.1, 2.9), "c": (4.99, -4.99)}
    probes = Probes(sim, [Gauge(name, x, y) for name, (x, y) in points.items()])
    mesh = structured_square(8)  # the original numbering, located by matplotlib instead
    finder = Triangulation(*mesh.nodes.T, mesh.cells).get_trifinder()
    cells = [int(finder(x, y)) for x, y in points.values()]
    np.testing.assert_array_equal(probes.original_cells, cells)
    seen = [output_fields(sim)]

    def every_two_steps(s) -> None:
        probes.sample(s)
        seen.append(output_fields(s))

    sim.run(5 * DT, check_every=2, callback=every_two_steps)
    assert len(probes.times) == 4 and probes.times[-1] == pytest.approx(5 * DT, abs=1e-15)
    for name, values in probes.gauge_values.items():
        expected = [fields[name][cells] for fields in seen]
        np.testing.assert_array_equal(np.array(values), expected, err_msg=name)


def reference_step_volume(sim, probes: Probes) -> np.ndarray:
    """Volume per layer that one step of Δt carries across the section, into its right side,
    from the NumPy reference flux: through edge e out of cell i, |e| (q_i·n + D⁻_h)."""
    mesh, e = sim.mesh, probes.cut_edges[0]
    W = sim.backend.get_state().astype(np.float64)
    H = sim.layout.H.astype(np.float64)
    i, j = mesh.edge_cells[e].T
    n = mesh.edge_normal[e]
    d_minus, _, _ = get_flux(sim.scheme, 2)(W[i], W[j], H[i], H[j], n, g=sim.model.g,
                                            r=sim.model.r, eps_h=sim.model.eps_h)  # fmt: skip
    right = np.zeros(mesh.n_cells, dtype=bool)
    right[probes.part_cells(0, right=True)] = True
    into_right = np.where(right[i], -1.0, 1.0)
    out = []
    for h, qx, qy in ((0, 1, 2), (3, 4, 5)):
        flux = W[i, qx] * n[:, 0] + W[i, qy] * n[:, 1] + d_minus[:, h]
        out.append(DT * np.sum(into_right * mesh.edge_length[e] * flux))
    return np.array(out)


@pytest.mark.parametrize("scheme", ["ir-roe", "pvm-ifcp"])
def test_section_volume_is_the_sum_of_the_reference_edge_fluxes(scheme):
    """Step by step, the region-volume discharge equals the mass flux through the cut edges
    computed independently by the NumPy reference scheme, to round-off."""
    sim = dam_break(scheme=scheme)
    probes = Probes(sim, sections=[Section("slant", ((0.4, -6.0), (0.9, 6.0)))])
    expected = np.zeros(2)
    for k in range(1, 6):
        expected += reference_step_volume(sim, probes)
        sim.run(k * DT)
        probes.sample()
        np.testing.assert_allclose(probes.volume[-1, 0], expected, rtol=1e-12, atol=1e-12)
    assert np.all(np.abs(expected) > 1e-3)  # a real flow through the section


def test_section_balances_the_volume_change_on_either_side():
    """Walls everywhere: what crossed to the right is what the left side lost, and the mean
    discharges integrate back to the volume."""
    sim = dam_break(order="gps")
    section = Section("bent", ((1.0, -6.0), (0.5, 0.0), (1.2, 6.0)))
    probes = Probes(sim, sections=[section])
    left = probes.part_cells(0, right=False)
    W0 = sim.backend.get_state()[left][:, [0, 3]] * sim.mesh.area[left, None]
    sim.run(0.05, check_every=3, callback=probes.sample)
    W1 = sim.backend.get_state()[left][:, [0, 3]] * sim.mesh.area[left, None]
    lost = W0.sum(axis=0) - W1.sum(axis=0)
    np.testing.assert_allclose(probes.volume[-1, 0], lost, rtol=0, atol=1e-11)
    integrated = np.sum(probes.discharge[1:, 0] * np.diff(probes.times)[:, None], axis=0)
    np.testing.assert_allclose(integrated, probes.volume[-1, 0], rtol=1e-12, atol=1e-12)


def test_discharge_is_positive_to_the_right_of_the_line():
    """A one-layer dam break, deep on the left: water crosses x = 0 towards +x, which is the
    right of a line walked upwards and the left of one walked downwards."""
    mesh = strip(40, 4, x0=-2.0, x1=2.0)
    sim = Simulation(mesh, layers=1, scheme="hll", backend="cpu", H=1.0,
                     initial={"h": lambda x, y: np.where(x < 0, 1.0, 0.5)})  # fmt: skip
    up, down = Section("up", ((0.0, -1.0), (0.0, 1.0))), Section("down", ((0.0, 1.0), (0.0, -1.0)))
    probes = Probes(sim, sections=[up, down])
    sim.run(0.2)
    probes.sample()
    assert probes.volume[-1, 0, 0] > 0.05
    assert probes.volume[-1, 1, 0] == pytest.approx(-probes.volume[-1, 0, 0], rel=1e-12)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: [Gauge("far", 7.0, 0.0)], "gauge 'far': (7, 0) lies outside"),
        (lambda: [Gauge("g", 0, 0), Gauge("g", 1, 1)], "gauges: two named 'g'"),
        (lambda: Section("short", ((0.0, -1.0), (0.0, 1.0))), "splitting it in two"),
        (lambda: Section("away", ((9.0, -1.0), (9.0, 1.0))), "crosses no pair of cells"),
        (lambda: Section("dot", ((0.0, 0.0),)), "two or more finite"),
        (lambda: Section("zigzag", ((-1, -6), (-1, 6), (1, 6), (1, -6))), "3 connected part(s)"),
    ],
)
def test_bad_gauges_and_sections_are_one_line_errors(make, message):
    sim = dam_break()
    item = make()
    with pytest.raises(ConfigError) as err:
        if isinstance(item, Section):
            Probes(sim, sections=[item])
        else:
            Probes(sim, item)
    assert message in str(err.value) and "\n" not in str(err.value)


def open_channel(layers: int, initial: dict, **options) -> tuple[Simulation, Probes]:
    """A 10 m x 2 m channel, a discharge in at the west end and a level at the east, with a
    slanted section across it (both sides reach an open boundary); ``options``: the backend's
    (the CPU's when none)."""
    if layers == 1:
        scheme, bc = "hll", {"west": Discharge(0.6), "east": Level(0.0)}
    else:
        scheme = "ir-roe"
        bc = {"west": Discharge(0.4, lower=-0.2), "east": Level(0.0, interface=-0.5)}
    sim = Simulation(strip(10, 2, x0=0.0, x1=10.0), layers=layers, scheme=scheme, H=1.0,
                     initial=initial, boundary={**bc, "wall": "wall"},
                     **(options or {"backend": "cpu"}))  # fmt: skip
    return sim, Probes(sim, sections=[Section("sill", ((3.3, -1.0), (6.7, 3.0)))])


@pytest.mark.parametrize(
    ("layers", "initial", "inflow"),
    [(1, {"h": 1.0, "qx": 0.3}, [0.6]),
     (2, {"h1": 0.5, "q1x": 0.2, "h2": 0.5, "q2x": -0.1}, [0.4, -0.2])],
)  # fmt: skip
def test_a_section_across_an_open_channel_in_steady_flow_carries_the_inflow(
    layers, initial, inflow
):
    """Uniform flow, steady to round-off (the state does not change): the discharge through
    a section between the discharge and the level boundary is the imposed one in each layer
    (the lower layer's against the upper's), to round-off, in every interval."""
    sim, probes = open_channel(layers, initial)
    sim.run(1.0, check_every=4, callback=probes.sample)
    assert len(probes.times) > 3
    np.testing.assert_allclose(probes.discharge[1:, 0], [inflow] * (len(probes.times) - 1),
                               rtol=1e-13)  # fmt: skip
    np.testing.assert_allclose(probes.volume[-1, 0], np.array(inflow) * 1.0, rtol=1e-13)


def test_a_section_across_an_open_channel_balances_the_side_with_the_imposed_inflow():
    """From rest, the inflow's bore crosses the section: what crossed is what came in through
    the west end (the imposed 0.6 m^3/s) less what the west side kept, to round-off. A second
    Probes object on the same run counts alike."""
    sim, probes = open_channel(1, {"h": 1.0})
    twin = Probes(sim, sections=[Section("again", probes.sections[0].points)])
    west = probes.part_cells(0, right=False)
    before = sim.mesh.area[west] @ sim.backend.get_state()[west, 0]
    sim.run(6.0)
    probes.sample()
    twin.sample()
    kept = sim.mesh.area[west] @ sim.backend.get_state()[west, 0] - before
    assert probes.volume[-1, 0, 0] == pytest.approx(0.6 * 6.0 - kept, rel=1e-12)
    assert probes.volume[-1, 0, 0] > 0.5
    np.testing.assert_array_equal(twin.volume, probes.volume)


def _steady(layers: int):
    initial = {"h": 1.0, "qx": 0.3} if layers == 1 else {"h1": 0.5, "q1x": 0.2, "h2": 0.5,
                                                         "q2x": -0.1}  # fmt: skip
    return lambda **options: open_channel(layers, initial, **options)


def _pulled_apart(**options):
    """tests/test_vanishing.py's two layers pulled apart at x = 0, where the limiter acts from
    the first steps, and a section there."""
    from test_vanishing import pulled_apart_simulation

    sim = pulled_apart_simulation(20, **(options or {"backend": "cpu"}))
    return sim, Probes(sim, sections=[Section("x0", ((0.1, -1.0), (-0.1, 2.0)))])


def _tide_grid(**options):
    """cgrid-tide on a 12 x 3 Cartesian grid (the grid variant), a section across it."""
    from fvswe.cases import get_case

    sim = get_case("cgrid-tide").with_grid(12, 3).simulation(order="none", **options)
    return sim, Probes(sim, sections=[Section("x100", ((110.0, -1e4), (90.0, 1e4)))])


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(
    ("make", "variant", "t_end"),
    [(_steady(1), "edge", 0.5), (_steady(2), "gather", 0.5), (_steady(1), "slot", 0.5),
     (_steady(2), "block", 0.5), (_tide_grid, "grid", 600.0),
     *((_pulled_apart, v, 0.3) for v in ("edge", "gather", "slot", "block"))],
)  # fmt: skip
def test_gpu_sections_on_the_host_are_the_cpus(make, variant, t_end):
    """The GPU's count_edges kernel on the host (tests/host_runtime.py): every variant's
    section volumes are the CPU's bit for bit in float64, on the steady open channel and where
    the positivity limiter scales the cut edges' fluxes (pulled apart), also after a restore
    half-way from the GPU's snapshot."""
    (cpu, pc), (dev, pd) = make(backend="cpu"), make(**_host_gpu(variant))
    again = make(**_host_gpu(variant))[0]
    for sim in (cpu, dev):
        sim.run(t_end / 2)
    snap = {**dev.snapshot(), **pd.state()}
    again.restore(snap)
    pa = Probes(again, sections=pd.sections, resume=snap)
    for sim, probes in ((cpu, pc), (dev, pd), (again, pa)):
        sim.run(t_end)
        probes.sample()
    assert dev.steps == cpu.steps > 4
    assert pd.volume.tobytes() == pc.volume.tobytes() and np.abs(pc.volume).max() > 0
    assert pa.volume[-1].tobytes() == pc.volume[-1].tobytes()
    if make is _pulled_apart:
        assert cpu.backend.counters()["limited"] > 0


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: cannot compile the CUDA sources")
@pytest.mark.parametrize(("layers", "variant"), [(2, "slot"), (1, "grid")])
def test_the_count_edges_kernel_compiles_for_the_device(layers, variant):
    """A module that counts edges (FVSWE_COUNTS) compiles to sm_90 PTX with count_edges; one
    without has none (a default run's module is unchanged)."""
    from fvswe.backends import gpu

    ptx = {}
    for counts in (True, False):
        k = 4 if variant == "grid" else 3
        opts = gpu.compile_options("roe" if layers == 2 else "hll-wd", layers, np.float64,
                                   variant, k, counts=counts)  # fmt: skip
        cmd = [NVCC, "--ptx", "-arch=sm_90", *opts]
        ptx[counts] = cached_build(variant, gpu.source(variant), cmd, ".cu").read_text()
    assert ".entry count_edges(" in ptx[True] and "count_edges" not in ptx[False]


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["edge", "gather", "slot", "block"])
@pytest.mark.parametrize("make", [_steady(2), _pulled_apart])
def test_gpu_sections_are_the_cpus(make, variant):
    """On a GPU, float64: the section volumes bitwise the CPU's in every variant, in steady
    flow between two open ends and where the limiter scales the cut edges' fluxes."""
    from fvswe.backends import gpu

    ok, why = gpu.available()
    if not ok:
        pytest.skip(f"no GPU backend here: {why}")
    (cpu, pc), (dev, pd) = (
        make(backend="cpu"),
        make(backend="gpu", backend_options={"variant": variant}),
    )
    for sim, probes in ((cpu, pc), (dev, pd)):
        sim.run(0.3)
        probes.sample()
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps)
    assert pd.volume.tobytes() == pc.volume.tobytes()


def test_without_edge_counts_a_section_between_two_open_boundaries_is_refused(monkeypatch):
    """A backend that counts no edge fluxes (the implicit method's) needs a side closed by
    walls."""
    monkeypatch.setattr(CpuBackend, "counts_edges", False)
    mesh = strip(10, 2, x0=0.0, x1=10.0)
    sim = Simulation(mesh, layers=1, scheme="hll", backend="cpu", H=1.0, initial={"h": 1.0},
                     boundary={"west": "open", "east": "open", "wall": "wall"})  # fmt: skip
    with pytest.raises(ConfigError, match="'mid': both sides reach an open or level boundary"):
        Probes(sim, sections=[Section("mid", ((5.0, -1.0), (5.0, 3.0)))])


def test_fvswe_run_a_case_file_with_a_level_file_a_gauge_and_a_section(tmp_path, capsys):
    """End to end: the level enters from a file; the section's volume is the change of the
    volume east of it (from final.npz); the gauge's last row is its cell in final.npz."""
    (tmp_path / "tide.txt").write_text("# t eta\n0 0.0\n5 0.1\n10 0.1\n")
    case = tmp_path / "channel.toml"
    case.write_text(
        """
layers = 1
scheme = "hll-wd"
t_end = 8.0
backend = "cpu"
[friction]
law = "chezy"
coefficient = 50
[mesh]
generator = "strip"
nx = 40
ny = 2
x0 = 0.0
x1 = 40.0
[boundary]
west = { level_file = "tide.txt" }
east = "wall"
wall = "wall"
[initial]
H = 1.0
h = "H"
[output]
every = 4.0
format = "both"
probe_every = 0.5
[[gauges]]
name = "g"
x = 10.2
y = 1.1
[[sections]]
name = "s"
points = [[20.0, -1.0], [20.0, 3.0]]
"""
    )
    out = tmp_path / "out"
    assert main(["run", str(case), "-o", str(out), "-q", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["t"] == 8.0 and report["level_inflow"] > 0
    final = np.load(out / "final.npz")
    east = final["x"] > 20.0
    grown = float(np.dot(final["area"][east], final["h"][east] - 1.0))
    with open(out / "sections.csv") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["t"]) for r in rows] == [0.5 * k for k in range(17)]
    assert float(rows[-1]["volume"]) == pytest.approx(grown, rel=1e-12, abs=1e-13)
    assert grown > 1e-3
    with open(out / "gauges.csv") as f:
        last = list(csv.DictReader(f))[-1]
    cell = int(Triangulation(*strip(40, 2, 0.0, 40.0).nodes.T, strip(40, 2, 0.0, 40.0).cells)
               .get_trifinder()(10.2, 1.1))  # fmt: skip
    assert float(last["h"]) == final["h"][cell] and float(last["t"]) == 8.0
    for name in ("solution.nc", "solution.xdmf", "gauges.nc", "sections.nc", "probes.png"):
        assert (out / name).is_file(), name
    xr = pytest.importorskip("xarray")
    with xr.open_dataset(out / "solution.nc", decode_times=False) as ds:
        np.testing.assert_array_equal(ds["time"].values, [0.0, 4.0, 8.0])  # not probe times
    with xr.open_dataset(out / "sections.nc", decode_times=False) as ds:
        assert ds["discharge"].attrs["units"] == "m3 s-1"
        assert ds["volume"].dims == ("section", "time", "layer")
        assert float(ds["volume"].values[0, -1, 0]) == float(rows[-1]["volume"])
    with xr.open_dataset(out / "gauges.nc", decode_times=False) as ds:
        assert ds["h"].dims == ("gauge", "time") and ds["h"].attrs["units"] == "m"
        assert float(ds["h"].values[0, -1]) == float(last["h"])


def test_gauges_and_sections_from_the_command_line(tmp_path, capsys):
    gauges = tmp_path / "gauges.csv"
    gauges.write_text("name,x,y\ncentre,0.1,0.1\n")
    out = tmp_path / "out"
    argv = ["run", "test1", "--mesh", "square-4k", "--t-end", "0.01", "--backend", "cpu", "-q",
            "-o", str(out), "--gauges", str(gauges), "--gauge", "2,2,ne", "--gauge=-2,-2",
            "--section=0,-5,0,5", "--probe-every", "0.005"]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    with open(out / "gauges.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["gauge"] for r in rows[:3]] == ["ne", "g2", "centre"]
    assert sorted({float(r["t"]) for r in rows}) == [0.0, 0.005, 0.01]
    assert Path(out / "sections.csv").read_text().startswith("t,section,discharge1,discharge2")


@pytest.mark.parametrize(("layers", "gauges", "sections"), [(2, 3, 1), (1, 1, 2)])
def test_the_memory_a_probe_plan_needs_is_not_underestimated(tmp_path, layers, gauges, sections):
    """Issue 34, item 5: `fvswe run` sizes --probe-every's samples with memory_needed before
    the folder is made; it bounds what sampling and the CSV files take, within a factor 2."""
    import tracemalloc

    from fvswe import probes

    initial = {"h1": 1.0, "h2": 5.0} if layers == 2 else {"h": 6.0}
    sim = Simulation(structured_square(8), layers=layers, H=6.0, backend="cpu", initial=initial)
    points = [Gauge(f"g{k}", 0.5 * k, 0.1) for k in range(gauges)]
    lines = [Section(f"s{k}", ((0.3 + k, -9.0), (0.3 + k, 9.0))) for k in range(sections)]
    n = 500
    tracemalloc.start()
    try:
        record = Probes(sim, points, lines)
        plan = sorted(set(probes.sample_times(1.0, n - 1)) | {0.5})
        for t in plan[: n - 1]:
            record.times[-1] = -t  # a new time for each sample, without stepping
            record.sample()
        record.write(tmp_path, netcdf=False, png=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    need = probes.memory_needed(n, gauges, sections, layers)
    assert need / 2 < peak <= need, (peak, need)
