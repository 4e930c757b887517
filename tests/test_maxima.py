"""Maximum-value and arrival-time maps (issue 32, item 4; docs/SCHEMES.md §18).

The maps against the exact Stoker dam break, against the output fields taken step by step,
their files, and the one-line refusals. Restarts: tests/test_restart.py; ranks:
tests/test_mpi.py; the host-run GPU: tests/test_gpu_ranks_host.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_cuda_sources import CXX, NVCC, cached_build

from fvswe import output
from fvswe.cases import get_case
from fvswe.cli import main
from fvswe.errors import ConfigError
from fvswe.exact import dam_break
from fvswe.grid import Grid
from fvswe.maxima import NAMES, Maxima
from fvswe.mesh import write_mesh
from fvswe.mesh.generate import structured_square
from fvswe.simulation import Simulation

HL, HR, DAM, T_END, G = 1.0, 0.1, 50.0, 5.0, 9.81


def test_stoker_dam_break_maxima_and_arrival_match_the_exact_solution():
    """A wet-bed dam break (Stoker) on 200 cells of 0.5 m: behind the shock the exact depth is
    the plateau's ``h_m`` and the speed ``u_m``, which the maps hold within 1 % and 2 % on the
    plateau at t = 5 s; the shock (speed ``s``) reaches x = 58, 60, 62 m at ``(x - 50) / s``,
    and the maps' arrival of 0.01 m is within 0.3 s (under 2 cells of the shock's travel)
    before it: the captured shock spreads over a few cells. Beyond the shock nothing arrived.
    The maximum depth's time is t = 5 s on the plateau (the depth still grows there by
    round-off) and 0 upstream, where the depth only fell."""
    m = Grid(200, 1, 0.5, 1.0).mesh()
    sim = Simulation(m, layers=1, scheme="hll-wd", H=0.0, boundary=dict.fromkeys(m.tags, "wall"),
                     initial={"h": lambda x, y: np.where(x < DAM, HL, HR)}, backend="cpu",
                     maxima=Maxima(0.01))  # fmt: skip
    sim.run(T_END)
    maps, x = sim.maxima(), sim.fields()["x"]
    h, u, feature = dam_break(x, T_END, HL, HR, DAM, G)
    plateau = (x > feature["tail"] + 2.0) & (x < feature["shock"] - 2.0)
    hm, um = h[plateau].max(), u[plateau].max()
    assert np.abs(maps["max_depth"][plateau] / hm - 1).max() < 0.01
    assert np.abs(maps["max_speed"][plateau] / um - 1).max() < 0.02
    s = (feature["shock"] - DAM) / T_END
    for at in (58.0, 60.0, 62.0):
        i = np.argmin(np.abs(x - at))
        lag = (x[i] - DAM) / s - maps["arrival_time"][i]
        assert 0.0 <= lag < 0.3, (at, lag)
    assert np.isnan(maps["arrival_time"][x > feature["shock"] + 3.0]).all()
    assert np.all(maps["time_max_depth"][x < DAM - 1.0] == 0.0)
    assert np.all(maps["max_depth"][x < DAM - 1.0] == HL)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_maps_are_the_largest_output_fields_of_every_step(dtype):
    """Two layers (test1 on 8 x 8 squares, every quantity moving): after each step the maps
    equal the largest of the output fields so far and the time of its first occurrence, bit
    for bit (eta1, eta2, the depth h1 + h2), the speeds within round-off of the output
    velocity's length; the arrival is the first step whose |eta1 - eta1(0)| exceeds the
    threshold. In float32 too: the maps widen the state to float64, as the outputs do."""
    sim = get_case("test1").simulation(structured_square(8), backend="cpu", maxima=1e-3,
                                       dtype=dtype)  # fmt: skip
    assert list(sim.maxima()) == list(NAMES[2])
    f0 = output.output_fields(sim)
    best = {"eta1": f0["eta1"], "eta2": f0["eta2"], "depth": f0["h1"] + f0["h2"]}
    when = {k: np.zeros_like(v) for k, v in best.items()}
    arrival = np.full_like(f0["eta1"], np.nan)
    for _ in range(12):
        sim.run(0.1, max_steps=1)
        f = output.output_fields(sim)
        now = {"eta1": f["eta1"], "eta2": f["eta2"], "depth": f["h1"] + f["h2"]}
        for k, v in now.items():
            when[k] = np.where(v > best[k], sim.t, when[k])
            best[k] = np.maximum(v, best[k])
        arrived = np.isnan(arrival) & (np.abs(f["eta1"] - f0["eta1"]) > 1e-3)
        arrival[arrived] = sim.t
    maps = sim.maxima()
    for name, key in (("max_eta1", "eta1"), ("max_eta2", "eta2"), ("max_depth", "depth")):
        assert np.array_equal(maps[name], best[key]), name
        assert np.array_equal(maps[f"time_{name}"], when[key]), name
    assert np.array_equal(maps["initial_eta1"], f0["eta1"])
    assert np.array_equal(maps["arrival_time"], arrival, equal_nan=True)
    assert 0 < np.count_nonzero(~np.isnan(arrival)) < arrival.size
    speed = np.hypot(f["u1"], f["v1"])
    assert np.all(maps["max_speed1"] >= speed * (1 - 1e-14))
    assert np.any(maps["time_max_speed1"] == sim.t)


def test_maps_files_from_a_case_file_in_both_formats(tmp_path, capsys):
    """``[maxima]`` in a case file: maxima.nc (CF-UGRID, the maps on the mesh's faces, NaN
    where nothing arrived) and maxima.xdmf + .h5, the same values, in the original order."""
    netCDF4 = pytest.importorskip("netCDF4")
    import h5py

    mesh = tmp_path / "square.npz"
    write_mesh(structured_square(8), mesh)
    case = tmp_path / "case.toml"
    case.write_text(f'case = "test1"\nt_end = 0.05\nbackend = "cpu"\n[mesh]\nfile = "{mesh}"\n'
                    "[maxima]\narrival_threshold = 0.001\n")  # fmt: skip
    out = tmp_path / "out"
    assert main(["run", str(case), "-o", str(out), "--format", "both", "-q"]) == 0
    capsys.readouterr()
    with netCDF4.Dataset(out / "maxima.nc") as ds, h5py.File(out / "maxima.h5", "r") as f:
        assert ds["mesh"].cf_role == "mesh_topology" and ds.arrival_threshold == 0.001
        assert float(ds["time"][()]) == 0.05 == float(f.attrs["t"])
        for name in NAMES[2]:
            nc = np.ma.filled(ds[name][:], np.nan)
            assert ds[name].location == "face" and np.array_equal(nc, f[name][()], True), name
        arrival = f["arrival_time"][()]
        assert np.isnan(arrival).any() and (arrival > 0).any()
    index = (out / "maxima.xdmf").read_text()
    assert 'Name="arrival_time"' in index and "maxima.h5:/cells" in index


def test_bad_maps_inputs_are_one_line_errors(tmp_path, capsys):
    """A threshold that is no positive number, an unknown [maxima] key, --maxima without a
    folder, a restart with maps from a checkpoint without them or with another threshold, and
    the implicit method (which keeps none): one line each, exit 2 in the CLI."""
    for bad in (0.0, -1.0, float("nan"), "1", True):
        with pytest.raises(ConfigError, match=r"^maxima.arrival_threshold: must be a positive"):
            Maxima(bad)
    case = tmp_path / "case.toml"
    case.write_text('case = "test1"\n[maxima]\nthreshold = 0.1\n')
    assert main(["run", str(case)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "threshold" in err and "maxima" in err
    assert main(["run", "test1", "--maxima"]) == 2
    assert capsys.readouterr().err == "fvswe: error: --maxima needs --output DIR\n"
    mesh = structured_square(8)
    plain = get_case("test1").simulation(mesh, backend="cpu")
    with pytest.raises(ConfigError, match="its run kept no maxima maps"):
        get_case("test1").simulation(mesh, backend="cpu", maxima=True).restore(plain.snapshot())
    snap = get_case("test1").simulation(mesh, backend="cpu", maxima=0.02).snapshot()
    message = "maxima.arrival_threshold: 0.02 in the checkpoint's run, 0.01 now"
    with pytest.raises(ConfigError, match=re.escape(message)):
        get_case("test1").simulation(mesh, backend="cpu", maxima=True).restore(snap)
    with pytest.raises(ConfigError, match="^method 'implicit': maxima .* explicit method only"):
        get_case("cgrid-tide").simulation(method="implicit", maxima=True)


def _host_gpu(variant: str) -> dict:
    """The GPU backend's options on the host runtime (tests/host_runtime.py)."""
    from host_runtime import HostRuntime

    return {"backend": "gpu", "backend_options": {"variant": variant, "runtime": HostRuntime()}}


def _maps_bits(sim) -> dict[str, bytes]:
    return {name: values.tobytes() for name, values in sim.maxima().items()}


def _test1(**kw):
    return get_case("test1").simulation(structured_square(8), **kw)


def _slide(**kw):
    from test_slide import slide_basin_simulation

    return slide_basin_simulation(1, **kw)


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(
    ("make", "options", "variant", "times"),
    [(_test1, {"integrator": "ssp-rk3"}, "edge", (0.05, 0.1)),
     (_test1, {"dt_mode": "nonlagged"}, "slot", (0.05, 0.1)),
     (_slide, {}, "gather", (0.5, 1.0))],
)  # fmt: skip
def test_the_gpu_maps_on_the_host_are_the_cpus(make, options, variant, times):
    """The GPU's maxima_pass (the emitted maxima::*, after each step, started on the device)
    on the host: the maps bitwise the CPU's in float64, as the state is (two layers, SSP-RK3
    on the edge variant, the non-lagged Δt on slot; a moving bed, whose surface moves with
    the bed, on one layer), also after a restore half-way from the GPU's snapshot. (In
    float32 the GPU's state differs from the CPU's by design, and so do its maps.)"""
    t_half, t_end = times
    cpu = make(backend="cpu", maxima=1e-3, **options)
    dev = make(maxima=1e-3, **options, **_host_gpu(variant))
    for sim in (cpu, dev):
        sim.run(t_half)
    again = make(maxima=1e-3, **options, **_host_gpu(variant))
    again.restore(dev.snapshot())
    for sim in (cpu, dev, again):
        sim.run(t_end)
    reference = _maps_bits(cpu)
    assert _maps_bits(dev) == reference and _maps_bits(again) == reference
    arrival = cpu.maxima()["arrival_time"]
    assert np.count_nonzero(arrival > t_half) > 0 and np.isnan(arrival).any()


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: cannot compile the CUDA sources")
@pytest.mark.parametrize(("layers", "dtype", "variant"), [(2, "float64", "gather")])
def test_the_maxima_pass_compiles_for_the_device(layers, dtype, variant):
    """A module of a run with maps (FVSWE_MAXIMA) compiles to sm_90 PTX with its maxima_pass;
    one without has none (a default run's module is unchanged)."""
    from fvswe.backends import gpu

    ptx = {}
    for maxima in (True, False):
        opts = gpu.compile_options("roe" if layers == 2 else "hll-wd", layers, np.dtype(dtype),
                                   variant, 3, maxima=maxima)  # fmt: skip
        cmd = [NVCC, "--ptx", "-arch=sm_90", *opts]
        ptx[maxima] = cached_build(variant, gpu.source(variant), cmd, ".cu").read_text()
    assert ".entry maxima_pass(" in ptx[True] and "maxima_pass" not in ptx[False]


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["edge", "gather", "slot", "block"])
def test_the_gpu_maps_are_the_cpus(variant):
    """On a GPU, float64: test1's maps (two layers) bitwise the CPU's in every variant, as the
    state is (docs/ARCHITECTURE.md, Determinism), and NaN where nothing arrived."""
    from fvswe.backends import gpu

    ok, why = gpu.available()
    if not ok:
        pytest.skip(f"no GPU backend here: {why}")
    mesh = structured_square(16)
    cpu = get_case("test1").simulation(mesh, backend="cpu", maxima=1e-3)
    dev = get_case("test1").simulation(mesh, backend="gpu", maxima=1e-3,
                                       backend_options={"variant": variant})  # fmt: skip
    cpu.run(0.1)
    dev.run(0.1)
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps)
    assert _maps_bits(dev) == _maps_bits(cpu)
