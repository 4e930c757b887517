"""The Cartesian grid pass (fvswe/backends/cuda/grid.cu, the GPU backend's ``grid`` variant).

It finds every slot's neighbour, normal, length and boundary code by index arithmetic where
``gather`` reads them from per-slot arrays; on the host (tests/cuda_host) its runs are held
bit for bit to ``gather``'s, which tests/test_cuda_sources.py holds to the CPU backend.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from test_cuda_sources import CXX, THROUGHPUT, emulated_run, min_blocks

from fvswe.backends import cuda_header, gpu
from fvswe.boundary import KINDS, Characteristic, Discharge, Level
from fvswe.cases import get_case
from fvswe.errors import ConfigError
from fvswe.grid import Grid
from fvswe.mesh.generate import structured_square
from fvswe.simulation import Simulation

#: Control block fields that a grid run and a gather run must share exactly.
CTRL_FIELDS = ("t", "steps", "dt", "clipped", "thin", "thin_cells", "nonhyp", "level_inflow",
               "cfl_step", "courant")  # fmt: skip


def test_grid_arrays_of_a_grid_mesh():
    """A Grid's mesh in its own order is found with its shape, its sides' boundary codes
    (the tide's level edges numbered along the west side), its column widths and row
    heights as the Grid forms them, and its areas (one per cell: they differ in bits)."""
    case = get_case("cgrid-tide").with_grid(13, 7)
    sim = case.simulation()
    grid = gpu.grid_arrays(sim.layout)
    assert (grid.nx, grid.ny) == (13, 7)
    code = -gpu.slot_codes(sim.layout).reshape(7, 13, 4)
    south, north, west, east = np.split(grid.side_code, [13, 26, 33])
    assert np.array_equal(south, code[0, :, 0]) and np.array_equal(north, code[-1, :, 2])
    assert np.array_equal(west, code[:, 0, 3]) and np.array_equal(east, code[:, -1, 1])
    assert np.array_equal(west, KINDS["level"] + (np.arange(7) << cuda_header.BC_BITS))
    g = case.grid()
    assert np.array_equal(grid.length, np.concatenate((np.diff(g.x_nodes), np.diff(g.y_nodes))))
    assert grid.area_stride == 1 and np.array_equal(grid.area, sim.layout.area)
    uniform = gpu.grid_arrays(get_case("cgrid-tide").with_grid(24, 10).simulation().layout)
    assert uniform.area_stride == 0 and uniform.area[0] == 25.0 * 60.0


@pytest.mark.parametrize(("nx", "ny"), [(1, 1), (1, 5), (6, 1), (5, 3)])
def test_grid_arrays_of_thin_grids(nx, ny):
    """One row, one column, one cell: the shape is still found (the north neighbour of cell
    0 gives nx, or there is none and all cells form one row)."""
    sim = Simulation(Grid(nx, ny, 0.3, 0.7).mesh(), layers=1, scheme="hll", H=1.0,
                     initial={"h": 1.0})  # fmt: skip
    grid = gpu.grid_arrays(sim.layout)
    assert (grid.nx, grid.ny) == (nx, ny)


def test_grid_arrays_refuse_other_meshes():
    """None for triangles, a renumbered grid, and a grid whose one edge's normal or length
    differs from grid.cu's by a bit (a signed zero, the next float)."""
    tri = Simulation(structured_square(4), layers=1, scheme="hll", H=1.0, initial={"h": 1.0})
    assert gpu.grid_arrays(tri.layout) is None
    mesh = Grid(8, 5, 0.1, 0.3).mesh()
    plain = Simulation(mesh, layers=1, scheme="hll", H=1.0, initial={"h": 1.0})
    assert gpu.grid_arrays(plain.layout) is not None
    ordered = Simulation(mesh, layers=1, scheme="hll", H=1.0, initial={"h": 1.0}, order="rcm")
    assert gpu.grid_arrays(ordered.layout) is None
    lay = plain.layout
    normal, length = lay.edge_normal.copy(), lay.edge_length.copy()
    zero = np.flatnonzero(normal[:, 0] == 0)[3]
    normal[zero, 0] = -normal[zero, 0]
    length[7] = np.nextafter(length[7], np.inf)
    assert gpu.grid_arrays(replace(lay, edge_normal=normal)) is None
    assert gpu.grid_arrays(replace(lay, edge_length=length)) is None


def test_variant_selection_on_grids_and_meshes(monkeypatch):
    """A grid runs ``grid`` unless another variant is asked for; ``grid`` asked for on
    another mesh (directly or by the environment) is a one-line ConfigError."""
    monkeypatch.delenv("FVSWE_GPU_VARIANT", raising=False)
    assert gpu.resolve_variant(None, "hll-wd", 10**6, grid=True) == "grid"
    assert gpu.resolve_variant(None, "hll-wd", 100, grid=True) == "grid"
    assert gpu.resolve_variant("gather", "hll-wd", 10**6, grid=True) == "gather"
    assert gpu.resolve_variant(None, "hll-wd", 10**6) == "gather"
    for asked in ("grid", None):
        if asked is None:
            monkeypatch.setenv("FVSWE_GPU_VARIANT", "grid")
        with pytest.raises(ConfigError) as err:
            gpu.resolve_variant(asked, "hll-wd", 10**6, grid=False)
        assert "grid" in str(err.value) and "\n" not in str(err.value)
    monkeypatch.setenv("FVSWE_GPU_VARIANT", "slot")
    assert gpu.resolve_variant(None, "hll-wd", 10**6, grid=True) == "slot"
    assert "-DFVSWE_K=4" in gpu.compile_options("hll-wd", 1, np.float32, "grid", 4)


def grid_case(name: str, dtype: str, dt_mode: str) -> tuple[Simulation, str, float, int]:
    """A small grid run, its scheme, end time and step limit, on grid.cu's tiles of 16 x 8
    cells (partial ones at the north and east ends): the tide (levels at the west side,
    walls, Chezy friction, the marsh flooding; 24 x 10 cells, one area) to 1 h; the island
    (walls, wet/dry, per-cell areas; 21 x 9, the island's top at a cell centre) for 60
    steps; test1 (two layers; 12 x 11) to 2 s; sides (a level, a discharge, a wall and a
    characteristic condition, Manning friction, a beach; 20 x 9) to 100 s; thin (two
    layers, the lower one ending at x = 0, the line between two tiles, and crossing the
    line between two rows of tiles: thin-layer edges there; 32 x 10) to 1.5 s."""
    dt = None
    if name == "sides":  # every condition, tables on three sides, over a beach that dries
        boundary = {"west": Level(lambda t: 0.3 * np.sin(np.asarray(t) / 20.0), every=1.0,
                                  until=200.0),
                    "south": Discharge(lambda t: 0.5 + 0.0 * np.asarray(t), every=50.0,
                                       until=200.0),
                    "east": "wall", "north": Characteristic()}  # fmt: skip

        def H(x, y):
            return 1.0 - x / 80.0  # dry beyond x = 80 m

        sim = Simulation(Grid(20, 9, 10.0, 10.0).mesh(), layers=1, scheme="hll-wd", H=H,
                         initial={"h": lambda x, y: np.maximum(H(x, y), 0.0)},
                         friction=("manning", 0.03), boundary=boundary, dtype=dtype,
                         dt_mode=dt_mode, dt=0.5 if dt_mode == "fixed" else None)  # fmt: skip
        return sim, "hll-wd", 100.0, 10**6
    if name == "thin":  # a lower layer ending at x = 0, on the line between two x tiles
        sim = Simulation(Grid(32, 10, 10 / 32, 1.0, origin=(-5.0, -5.0)).mesh(), layers=2,
                         scheme="pvm-ifcp", H=2.0, dtype=dtype, dt_mode=dt_mode,
                         initial={"h1": lambda x, y: 2.0 - np.where(x < 0, 1.0, 0.0),
                                  "h2": lambda x, y: np.where(x < 0, 1.0, 0.0)})  # fmt: skip
        return sim, "pvm-ifcp", 1.5, 10**6
    if name == "test1":  # the dam break over [-5, 5]^2
        case = get_case("test1")
        mesh = Grid(12, 11, 10 / 12, 10 / 11, origin=(-5.0, -5.0)).mesh()
        return case.simulation(mesh, dtype=dtype, dt_mode=dt_mode), case.scheme, 2.0, 10**6
    elif name == "cgrid-island":
        case = get_case("cgrid-island").with_grid(21, 9)
        t_end, steps = 1e9, 60
    else:
        case = get_case("cgrid-tide").with_grid(24, 10)
        t_end, steps = 3600.0, 10**6
    if dt_mode == "fixed":
        dt = case.dt or 1.0
    sim = case.simulation(dtype=dtype, dt_mode=dt_mode, dt=dt)
    return sim, case.scheme, t_end, steps


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(
    ("name", "dtype", "dt_mode"),
    [
        ("cgrid-tide", "float64", "nonlagged"),
        ("cgrid-tide", "float64", "lagged"),
        ("cgrid-tide", "float32", "nonlagged"),
        ("cgrid-tide", "float32", "fixed"),
        ("cgrid-island", "float64", "fixed"),
        ("cgrid-island", "float32", "lagged"),
        ("test1", "float64", "lagged"),
        ("thin", "float64", "nonlagged"),
        ("sides", "float64", "nonlagged"),
        ("sides", "float32", "fixed"),
    ],
)
def test_grid_step_on_host_is_gather_bitwise(name, dtype, dt_mode):
    """grid_step's state and control block are gather_step's, bit for bit, and in float64
    the CPU backend's (within 1e-12); the runs are live: cells flood and dry, the tide
    flows in through the level edges."""
    sim, scheme, t_end, steps = grid_case(name, dtype, dt_mode)
    dt = sim.backend.dt_fixed
    W, ctrl = emulated_run(sim.layout, scheme, "grid", dt_mode, t_end, steps, dt)
    W_ref, ctrl_ref = emulated_run(sim.layout, scheme, "gather", dt_mode, t_end, steps, dt)
    assert np.array_equal(W, W_ref)
    for field in CTRL_FIELDS:
        assert np.array_equal(ctrl[field], ctrl_ref[field], equal_nan=True), field
    assert ctrl["steps"] > 20 and not ctrl["stalled"]
    assert np.abs(W - sim.layout.W0).max() > 1e-3 * np.abs(sim.layout.W0).max()
    if name == "thin":  # thin-layer edges (counted once each) on both tiles' lines
        assert ctrl["thin"] > 0
    elif name != "test1":
        assert (W[:, 0] < sim.model.eps_h).any() and (W[:, 0] > 0.1).any()  # dry and wet
    if name == "sides":
        assert ctrl["level_inflow"] != 0
    if name == "cgrid-tide":
        assert ctrl["level_inflow"] > 0  # the rising tide floods the marsh
        assert ((W[:, 0] > 0) & (sim.layout.W0[:, 0] == 0)).any()
    if dtype == "float64":
        sim.backend.advance(t_end, steps)
        ref = sim.backend.get_state()
        assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps)
        assert np.abs(W - ref).max() <= 1e-12 * np.abs(ref).max()


def test_uniform_friction_coefficient_is_uploaded_once():
    """The tide's one Chezy C goes to the device as one value (friction_stride 0: read once
    per cell from one address), a coefficient varying by cell as the per-cell array."""
    from fvswe.backends.controls import Setup, values

    lay = get_case("cgrid-tide").with_grid(8, 3).simulation().layout
    uniform = values(Setup(lay, 0.9, "lagged", None))
    assert np.array_equal(uniform["friction_coef"], [65.0]) and uniform["friction_stride"] == 0
    coef = np.linspace(60.0, 70.0, lay.n_cells)
    varying = values(Setup(replace(lay, friction_coef=coef), 0.9, "lagged", None))
    assert np.array_equal(varying["friction_coef"], coef) and varying["friction_stride"] == 1


def test_grid_shared_bytes_is_the_kernels():
    """gpu.grid_shared_bytes is grid.cu's TILE_VALUES (ptxas counts 7896 B for one layer in
    float32 at block 128: these 7840 and finish_step's reduction): 16 x 8 cells, 280 edges,
    7 values each; two layers in float64 fit 48 KB at block 128, not at 256."""
    assert gpu.grid_shared_bytes(1, np.float32, 128) == 280 * 7 * 4
    assert gpu.grid_shared_bytes(2, np.float64, 128) <= gpu.SHARED_MAX
    assert gpu.grid_shared_bytes(2, np.float64, 256) > gpu.SHARED_MAX


def test_grid_launch_is_the_sweeps_fastest_and_caps_registers():
    """gpu.GRID_LAUNCH's one-layer float32 entry is the fastest IEEE non-lagged row of the
    H100 sweep (benchmarks/grid_sweep.py); its module is compiled for that many resident
    threads (``__launch_bounds__``'s minimum blocks), and a block asked for keeps the cap in
    threads; the two-layer and float64 grid modules keep DEFAULT_BLOCK and RESIDENT_THREADS."""
    doc = json.loads(THROUGHPUT.with_name("grid_sweep_h100.json").read_text())
    rows = [r for r in doc["rows"] if r["dt_mode"] == "nonlagged" and not r["fast_math"]]
    best = max(rows, key=lambda r: r["cell_steps_per_s"])
    assert gpu.GRID_LAUNCH[1, False] == (best["threads"], best["resident"])

    threads, resident = gpu.GRID_LAUNCH[1, False]
    assert gpu.grid_block(1, np.float32) == threads
    assert min_blocks("hll-wd", 1, np.float32, "grid", 4, threads) == resident // threads
    assert min_blocks("hll-wd", 1, np.float32, "grid", 4, 128) == resident // 128
    assert gpu.grid_block(1, np.float64) == gpu.grid_block(2, np.float32) == gpu.DEFAULT_BLOCK
    assert min_blocks("hll-wd", 1, np.float64, "grid", 4, 128) == 1
    assert min_blocks("roe", 2, np.float32, "grid", 4, 128) == gpu.RESIDENT_THREADS[2, False] // 128
    assert gpu.grid_shared_bytes(1, np.float32, threads) <= gpu.SHARED_MAX


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_compensated_float32_on_host_every_variant_keeps_the_tide_volume():
    """The slow tide of tests/test_simulation.py (8 x 1 quads, float32, 1 h) on the host-run
    GPU code: with its remainders (docs/SCHEMES.md §2.7) every variant (edge, gather, slot,
    block, grid) gives the same state and depth remainders bit for bit, the volume net of the
    inflow drifts >= 100 times less than the plain float32 run's, and the state stays
    within float32 round-off of the CPU's compensated run (the CPU forms dt/|V| in float64)."""
    from host_runtime import HostRuntime

    sim = get_case("cgrid-tide").with_grid(8, 1).simulation(backend="cpu", dtype="float32")
    t_end, area = 3600.0, sim.mesh.area

    def run(variant: str, compensated: bool):
        b = gpu.GpuBackend(sim.layout, sim.scheme, variant=variant, compensated=compensated,
                           runtime=HostRuntime())  # fmt: skip
        m0 = b.layer_mass(area)[0]
        b.advance(t_end, 10**6)
        drift = (b.layer_mass(area)[0] - m0 - b.read_control("level_inflow")) / m0
        return b.get_state(), b.remainders(), abs(drift)

    runs = {v: run(v, True) for v in (*gpu.VARIANTS, gpu.GRID_VARIANT)}
    W, C, drift = runs["gather"]
    for variant, (Wv, Cv, _) in runs.items():
        assert np.array_equal(Wv, W) and np.array_equal(Cv, C), variant
    plain = run("gather", False)[2]
    assert np.count_nonzero(C) > 0 and drift * 100 < plain and drift < 5e-9, (drift, plain)
    assert C.shape == (sim.mesh.n_cells, 1)  # the depths' remainders only: one per layer
    sim.run(t_end)
    ref = sim.backend.get_state()
    for c, tol in ((0, 1e-5), (1, 1e-3)):  # h; qx (qy stays 0), from float32 fluxes
        assert np.abs(W - ref)[:, c].max() <= tol * np.abs(ref[:, c]).max()


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_compensated_float32_two_layers_on_host_keeps_a_remainder_per_layer():
    """Two layers, float32, SSP-RK3 (test2 on 8 x 8 squares, 20 steps) on the host-run GPU
    code: the remainders are the depths' only (docs/SCHEMES.md §2.7: a real2 per cell), every
    edge-list variant gives the same state and remainders bit for bit through the update and
    the float64 combination, and the volumes (summed on the device) are those of h + c, the
    CPU's bit for bit (fvswe.exactsum)."""
    from host_runtime import HostRuntime

    from fvswe import casefile, exactsum

    spec = casefile.from_case("test2").with_overrides(backend="cpu", dtype="float32",
                                                      integrator="ssp-rk3")  # fmt: skip
    sim = spec.simulation(structured_square(8))

    def run(variant: str):
        b = gpu.GpuBackend(sim.layout, sim.scheme, variant=variant, compensated=True,
                           integrator="ssp-rk3", runtime=HostRuntime())  # fmt: skip
        b.advance(1e9, 20)
        return b.get_state(), b.remainders(), b.layer_mass(sim.mesh.area)

    runs = {v: run(v) for v in gpu.VARIANTS}
    W, C, mass = runs["gather"]
    assert C.shape == (sim.mesh.n_cells, 2) and np.count_nonzero(C) > 0
    for variant, (Wv, Cv, _) in runs.items():
        assert np.array_equal(Wv, W) and np.array_equal(Cv, C), variant
    sums = sim.model.layer_sums(W, sim.mesh.area, C)
    assert mass == [exactsum.rounded(s) for s in sums]  # the same exact sum, bitwise
