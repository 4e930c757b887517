"""Longitude/latitude meshes solved on the sphere (docs/SCHEMES.md §20): the geometry, the
Williamson et al. (1992) test 2 converging, lakes at rest, mass, and what is refused."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fvswe.boundary import Periodic
from fvswe.errors import ConfigError, MeshError
from fvswe.forcing import OMEGA, Coriolis
from fvswe.mesh.core import Mesh
from fvswe.mesh.generate import lonlat_band, structured_square
from fvswe.mesh.sphere import RADIUS, on_sphere
from fvswe.simulation import Simulation

G = 9.80616  # Williamson et al. (1992)
U0 = 2 * np.pi * RADIUS / (12 * 86400.0)
H0 = 2.94e4 / G
BAND = {"west": Periodic("east"), "south": "wall", "north": "wall"}


def zonal_flow(lat):
    """Williamson test 2 (alpha = 0): ``(h, u)`` at the latitudes ``lat`` (degrees)."""
    s = np.sin(np.radians(lat))
    return H0 - (RADIUS * OMEGA * U0 + 0.5 * U0 * U0) * s * s / G, U0 * np.cos(np.radians(lat))


def williamson2(n: int, layers: int = 1, **kw) -> Simulation:
    """Test 2 on the band |phi| <= 60 degrees of ``3n x n`` rectangles, walls at its edges;
    with two layers (not steady: for comparisons), its depth split 2:3 between them, both
    with its velocity (the case ``sphere-band`` of tests/mpi_driver.py)."""
    mesh = lonlat_band(3 * n, n, 60.0)
    h, u = zonal_flow(mesh.centroid[:, 1])
    initial = {"h": h, "qx": h * u}
    if layers == 2:
        initial = {"h1": 0.4 * h, "q1x": 0.4 * h * u, "h2": 0.6 * h, "q2x": 0.6 * h * u}
    return Simulation(mesh, layers=layers, g=G, crs="EPSG:4326", coriolis=Coriolis(sphere=True),
                      boundary=BAND, initial=initial, **kw)  # fmt: skip


def test_band_geometry_is_the_sphere_s():
    """Areas sum to the band's ``2 pi R^2 (2 sin 60°)``; a meridian edge is ``R dphi`` long
    and a parallel one ``R cos(phi) dlambda``; the closure defect ``G`` is ``(0, -tan(phi)/R)``
    to second order."""
    mesh, metric = on_sphere(lonlat_band(36, 12, 60.0))
    band = 2 * np.pi * RADIUS**2 * 2 * np.sin(np.radians(60.0))
    assert abs(mesh.area.sum() - band) < 1e-12 * band
    ends = mesh.nodes[mesh.edge_nodes]
    meridian = ends[:, 0, 0] == ends[:, 1, 0]
    parallel = ends[:, 0, 1] == ends[:, 1, 1]
    assert np.allclose(mesh.edge_length[meridian], RADIUS * np.radians(10.0), rtol=1e-14)
    lat = np.radians(ends[parallel, 0, 1])
    assert np.allclose(mesh.edge_length[parallel], RADIUS * np.cos(lat) * np.radians(10.0),
                       rtol=1e-14)  # fmt: skip
    assert np.abs(metric[:, 0]).max() < 1e-12 / RADIUS
    tan = np.tan(np.radians(mesh.centroid[:, 1])) / RADIUS
    assert np.abs(metric[:, 1] + tan).max() < 0.02 / RADIUS
    assert np.array_equal(metric[:, 2], tan)


def test_williamson_2_converges_at_first_order_with_mass_kept():
    """The steady zonal geostrophic flow after 6 hours: the L1 error of ``h`` falls with each
    halving of the mesh (by 1.83 and 1.91: first order, docs/validation.md) and each run's
    mass is kept to round-off."""
    errors = []
    for n in (6, 12, 24):
        sim = williamson2(n)
        sim.run(6 * 3600.0)
        f = sim.fields()
        h, _ = zonal_flow(sim.mesh.centroid[np.argsort(sim.mesh.original_index), 1])
        errors.append(np.abs(f["h"] - h).mean() / h.mean())
        assert abs(sim.mass()[0] - sim.mass_initial[0]) < 1e-13 * sim.mass_initial[0]
    assert errors[0] < 0.06 and errors[1] < 0.6 * errors[0] and errors[2] < 0.6 * errors[1]


def tilted_rotation(
    lon, lat, alpha: float = np.radians(45.0), h0: float = 1000.0, u0: float = 40.0
):
    """A steady state without Coriolis: a solid-body rotation ``u = u0 (a x r)`` about the
    axis ``a`` tilted by ``alpha`` from the pole, held by ``g h = g h0 - (a . r)^2 u0^2 / 2``
    (Williamson test 2 with Ω = 0, where the equations keep every rotation of the sphere):
    ``(h, u_east, u_north)`` at degrees ``lon``, ``lat``."""
    lam, phi = np.radians(lon), np.radians(lat)
    ue = u0 * (np.cos(alpha) * np.cos(phi) - np.sin(alpha) * np.sin(phi) * np.cos(lam))
    un = u0 * np.sin(alpha) * np.sin(lam)
    ar = np.sin(alpha) * np.cos(phi) * np.cos(lam) + np.cos(alpha) * np.sin(phi)
    return h0 - (u0 * ar) ** 2 / (2 * G), ue, un


def test_a_tilted_solid_body_rotation_converges_with_the_advective_correction():
    """The momentum part of ``-F_adv . G`` (fvswe.physics.sphere.metric_rates) is checked
    where it acts: a rotation about an axis 45° from the pole crosses the parallels, so
    ``q . G`` is not 0 as in Williamson 2. After 3 hours, away from the walls at ±60° that
    the flow crosses (|φ| < 30°, farther than its gravity waves travel), the L1 errors of
    ``h`` and of the discharges halve with the mesh (measured ratios 0.49, 0.50 and 0.55,
    0.53). With the momentum part removed they stall (0.66, 0.86 and 0.78, 0.89)."""
    errors = []
    for n in (12, 24, 48):
        mesh = lonlat_band(3 * n, n, 60.0)
        h, ue, un = tilted_rotation(*mesh.centroid.T)
        sim = Simulation(mesh, layers=1, g=G, H=1100.0, crs="EPSG:4326", boundary=BAND,
                         initial={"h": h, "qx": h * ue, "qy": h * un})  # fmt: skip
        sim.run(3 * 3600.0)
        f = sim.fields()
        h, ue, un = tilted_rotation(f["x"], f["y"])
        inner = np.abs(f["y"]) < 30.0
        dq = np.abs(f["qx"] - h * ue) + np.abs(f["qy"] - h * un)
        errors.append((np.abs(f["h"] - h)[inner].mean() / (1000.0 - h).max(),
                       dq[inner].mean() / (1000.0 * 40.0)))  # fmt: skip
    (h1, q1), (h2, q2), (h3, q3) = errors
    assert h3 < 5e-3 and q3 < 4.5e-3
    assert h2 < 0.56 * h1 and h3 < 0.56 * h2 and q2 < 0.62 * q1 and q3 < 0.62 * q2


@pytest.mark.parametrize("layers,scheme", [(1, "hll-wd"), (2, "roe")])
def test_lake_at_rest_with_an_island_stays_at_rest_exactly(layers, scheme):
    """A lake at rest over a rough bed with an island (dry cells) in the band, Coriolis on:
    after 40 steps every depth is its initial bits and every discharge 0."""
    mesh = lonlat_band(24, 8, 45.0)
    x, y = mesh.centroid.T
    rng = np.random.default_rng(3)
    H = 4000.0 + 800.0 * rng.uniform(-1, 1, mesh.n_cells)
    H = np.where(np.hypot(x - 30.0, y) < 12.0, -50.0, H)  # the island, above the surface
    init = {"h": np.maximum(H, 0.0)}
    if layers == 2:
        init = {"h1": np.minimum(np.maximum(H, 0.0), 500.0), "h2": np.maximum(H - 500.0, 0.0)}
    sim = Simulation(mesh, layers=layers, scheme=scheme, H=H, initial=init, boundary=BAND,
                     crs="EPSG:4326", coriolis=Coriolis(sphere=True))  # fmt: skip
    W0 = sim.backend.get_state().copy()
    assert (W0[:, 0] == 0).any()
    sim.backend.advance(1e9, 40)
    W = sim.backend.get_state()
    assert sim.steps == 40 and np.array_equal(W, W0)


def test_a_projected_crs_changes_nothing():
    """A projected CRS (UTM) leaves the run planar: the same bits as without ``crs``."""
    runs = []
    for crs in (None, "EPSG:32631"):
        sim = Simulation(structured_square(4), layers=1, H=1.0, crs=crs,
                         initial={"h": lambda x, y: 1.0 + 0.1 * (x > 0)})  # fmt: skip
        sim.run(0.5)
        runs.append(sim.state())
        assert sim.layout.sphere is None
    assert np.array_equal(*runs)


def crossing_mesh() -> Mesh:
    """Two triangles across the ±180° meridian, their nodes at 179° and -179°."""
    nodes = np.array([[179.0, 0.0], [-179.0, 0.0], [-179.0, 1.0], [179.0, 1.0]])
    return Mesh.from_arrays(nodes, np.array([[0, 1, 2], [0, 2, 3]]))


@pytest.mark.parametrize(
    "mesh,kw,error,message",
    [
        (lonlat_band(6, 2), {"reconstruction": "linear"}, ConfigError,
         r"^reconstruction: 'linear' is not available on a lon/lat mesh"),
        (lonlat_band(6, 2), {"coriolis": 1e-4}, ConfigError,
         r"^coriolis: on a lon/lat mesh .* give sphere = true"),
        (structured_square(2), {"crs": None, "coriolis": Coriolis(sphere=True)}, ConfigError,
         r"^coriolis: sphere = true needs a lon/lat mesh"),
        (lonlat_band(6, 2), {"radius": -1.0}, ConfigError, r"^radius: expected a positive"),
        (crossing_mesh(), {}, MeshError, r"cell \d at .* spans 358 degrees of longitude"),
        (Mesh.from_arrays(np.array([[0.0, 80], [5, 80], [0, 90]]), np.array([[0, 1, 2]])), {},
         MeshError, r"node 2 at latitude 90: a lon/lat mesh must stay off the poles"),
    ],
)  # fmt: skip
def test_what_the_sphere_does_not_run_is_refused_in_one_line(mesh, kw, error, message):
    """The linear reconstruction, a planar Coriolis on a lon/lat mesh (and a spherical one on a
    planar mesh), a bad radius, a cell across the ±180° meridian and a node at a pole."""
    kw = {"crs": "EPSG:4326", **kw}
    with pytest.raises(error, match=message) as info:
        Simulation(mesh, layers=1, H=1.0, initial={"h": 1.0}, **kw)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "layers,variant", [(1, "edge"), (1, "gather"), (1, "slot"), (1, "block"), (2, "block")]
)
def test_host_gpu_runs_the_sphere_as_the_cpu_bitwise(layers, variant):
    """The host-run GPU kernels (``FVSWE_SPHERE`` modules; block in blocks of 32 cells, the
    periodic seam crossing blocks) give the CPU's state bit for bit in float64 on test 2 of
    one layer and of two (Roe), Coriolis and the metric terms acting."""
    from test_cuda_sources import CXX, emulated_run

    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH")
    sim = williamson2(6, layers, scheme="roe")
    sim.backend.advance(1e9, 12)
    W, ctrl = emulated_run(sim.layout, sim.scheme, variant, "lagged", 1e9, 12, cells=32)
    assert ctrl["t"] == sim.t and np.array_equal(W, sim.backend.get_state())


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["edge", "gather", "slot", "block"])
@pytest.mark.parametrize("layers", [1, 2])
def test_gpu_runs_the_sphere_as_the_cpu_bitwise(layers, variant):
    """On a GPU (float64: --fmad=false), every unstructured variant gives the CPU's test 2
    (one and two layers) bit for bit: state, time and steps."""
    from gpu_skip import skip_without_gpu

    skip_without_gpu()
    cpu = williamson2(12, layers, scheme="roe", backend="cpu")
    dev = williamson2(12, layers, scheme="roe", backend="gpu", backend_options={"variant": variant})
    for sim in (cpu, dev):
        sim.run(3 * 3600.0)
    assert dev.steps == cpu.steps and dev.t == cpu.t
    assert np.array_equal(dev.state(), cpu.state())


def test_cli_runs_a_lon_lat_case_with_gauges_sections_and_netcdf(tmp_path, capsys, monkeypatch):
    """``fvswe run`` of a lon/lat basin (crs EPSG:4326, degrees): a gauge at a lon/lat point
    records its cell's depth, the section's volume is the volume gained beyond it (areas and
    edge lengths on the sphere agree), and solution.nc's coordinates are longitude and
    latitude in degrees. (The records' PNG is left empty: matplotlib took seconds.)"""
    import csv
    import json

    from fvswe.cli import main
    from fvswe.mesh import write_mesh
    from fvswe.mesh.generate import strip
    from fvswe.probes import Probes, locate

    monkeypatch.setattr(Probes, "plot", lambda self, path: open(path, "wb").close())

    flat = strip(20, 12, 0.0, 20.0)
    basin = Mesh.from_arrays(flat.nodes + [0.0, 40.0], flat.cells,
                             boundary_tags=flat.boundary_tags())  # fmt: skip
    write_mesh(basin, tmp_path / "basin.npz")
    case = tmp_path / "case.toml"
    case.write_text(f"""t_end = 200000.0
layers = 1
[mesh]
file = "{tmp_path / "basin.npz"}"
[boundary]
west = "wall"
east = "wall"
wall = "wall"
[coriolis]
sphere = true
[initial]
H = 1.0
h = "where(x < 5.0, 2.0, 1.0)"
[output]
crs = "EPSG:4326"
format = "netcdf"
probe_every = 50000.0
[[gauges]]
name = "g"
x = 12.3
y = 45.2
[[sections]]
name = "s"
points = [[10.0, 39.0], [10.0, 53.0]]
""")
    out = tmp_path / "out"
    assert main(["run", str(case), "-o", str(out), "-q", "--json", "--backend", "cpu"]) == 0
    assert json.loads(capsys.readouterr().out)["t"] == 200000.0
    final = np.load(out / "final.npz")
    east = final["x"] > 10.0
    grown = float(np.dot(final["area"][east], final["h"][east] - 1.0))
    with open(out / "sections.csv") as f:
        volume = float(list(csv.DictReader(f))[-1]["volume"])
    assert grown > 1e6 and volume == pytest.approx(grown, rel=1e-12)
    with open(out / "gauges.csv") as f:
        last = list(csv.DictReader(f))[-1]
    assert float(last["h"]) == final["h"][locate(basin, 12.3, 45.2)]
    xr = pytest.importorskip("xarray")
    with xr.open_dataset(out / "solution.nc", decode_times=False) as ds:
        assert ds["node_x"].attrs["standard_name"] == "longitude"
        assert ds["face_y"].attrs["units"] == "degrees_north"


@pytest.mark.parametrize("variant", ["edge", "gather", "slot", "block"])
def test_sphere_modules_compile_with_nvcc_and_planar_ones_are_unchanged(variant):
    """A lon/lat run's module (``FVSWE_SPHERE``) compiles to PTX with nvcc in every
    unstructured variant, with the step kernels; a planar run's options have no trace of it."""
    from test_cuda_sources import NVCC, cached_build

    from fvswe.backends import gpu

    planar = gpu.compile_options("roe", 2, np.dtype("float64"), variant, 3)
    assert planar == gpu.compile_options("roe", 2, np.dtype("float64"), variant, 3, sphere=False)
    assert not any("SPHERE" in o for o in planar)
    if NVCC is None:
        pytest.skip("nvcc is not on PATH: cannot compile the CUDA sources")
    opts = gpu.compile_options("roe", 2, np.dtype("float64"), variant, 3, sphere=True)
    assert "-DFVSWE_SPHERE=1" in opts
    cmd = [NVCC, "--ptx", "-arch=sm_90", *opts]
    ptx = cached_build(variant, gpu.source(variant), cmd, ".cu").read_text()
    kernels = ("edge_pass", "volume_pass") if variant == "edge" else (f"{variant}_step",)
    for name in (*kernels, "limit_update"):
        assert f".entry {name}(" in ptx


def test_a_lon_lat_grid_of_quads_runs_and_never_takes_the_grid_variant():
    """A Cartesian grid in lon/lat (quads, symmetric about the equator: every row's edges of
    equal length) runs on the sphere with its mass kept; the GPU's ``grid`` variant, whose
    tiles know no metric, does not take it (the other variants do)."""
    from fvswe.backends.gpu.device import grid_arrays
    from fvswe.grid import Grid

    mesh = Grid(8, 2, dx=2.0, dy=1.0, origin=(-8.0, -1.0)).mesh()
    runs = {}
    for crs in (None, "EPSG:4326"):
        runs[crs] = Simulation(mesh, layers=1, H=100.0, crs=crs,
                               initial={"h": lambda x, y: 100.0 + 10.0 * (x < 0)})  # fmt: skip
    assert grid_arrays(runs[None].layout) is not None
    assert grid_arrays(runs["EPSG:4326"].layout) is None
    sim = runs["EPSG:4326"]
    sim.run(20000.0)
    assert sim.steps > 5 and abs(sim.mass()[0] / sim.mass_initial[0] - 1) < 1e-14


def test_the_example_case_file_runs_on_the_sphere():
    """examples/williamson2.toml (the lonlat_band generator, a periodic pair, ``[coriolis]
    sphere = true``, ``output.crs = "EPSG:4326"``) on a coarser band runs on the sphere: the
    L1 error of ``h`` against test 2 stays below 2 % for 2 hours, mass kept."""
    from pathlib import Path

    from fvswe import casefile

    spec = casefile.load(Path(__file__).resolve().parents[1] / "examples" / "williamson2.toml")
    spec = replace(spec, mesh={**spec.mesh, "nlon": 36, "nlat": 12})
    sim = spec.simulation(spec.load_mesh())
    assert sim.layout.sphere is not None and sim.coriolis.sphere
    sim.run(7200.0)
    h, _ = zonal_flow(sim.mesh.centroid[np.argsort(sim.mesh.original_index), 1])
    assert np.abs(sim.fields()["h"] - h).mean() / h.mean() < 0.02
    assert abs(sim.mass()[0] / sim.mass_initial[0] - 1) < 1e-13


def test_a_parts_owned_cells_get_the_whole_meshs_metric_bits(tmp_path):
    """On part files of an irregular lon/lat mesh, the closure of each owned cell's edges
    summed in their global order (``edge_ids``) is the whole mesh's, bit for bit; in the
    part's own edge order a border cell's is not (so the order is needed)."""
    from fvswe.partfile import read_part, write_parts
    from fvswe.partition import assign, split

    band = lonlat_band(36, 12, 60.0)
    inner = (np.abs(band.nodes[:, 0]) < 179.9) & (np.abs(band.nodes[:, 1]) < 59.9)
    nodes = band.nodes.copy()
    nodes[inner] += np.random.default_rng(1).uniform(-2.0, 2.0, (int(inner.sum()), 2))
    mesh = Mesh.from_arrays(nodes, band.cells, boundary_tags=band.boundary_tags())
    whole, metric = on_sphere(mesh)
    write_parts(mesh, split(mesh, assign(mesh, 3, "hilbert")), tmp_path / "p", method="hilbert",
                order="none")  # fmt: skip
    differs = 0
    for k in range(3):
        local, part = read_part(tmp_path / "p", k)
        own = part.cells[: part.n_owned]
        sphere, mine = on_sphere(local, edge_ids=part.edges)
        assert np.array_equal(mine[: part.n_owned], metric[own])
        assert np.array_equal(sphere.area[: part.n_owned], whole.area[own])
        differs += int(np.any(on_sphere(local)[1][: part.n_owned] != metric[own]))
    assert differs > 0
