"""The linear reconstruction (docs/SCHEMES.md §19, issue 27): second order in space on
irregular triangles that keeps lakes at rest, each layer's mass and non-negative depths
where layers vanish, falls back to first order where it must, and is one setting."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest
from test_cuda_sources import CXX, NVCC, cached_build
from test_maxima import _host_gpu
from test_vanishing import bump_and_shore, lake, pulled_apart_simulation

from fvswe import registry
from fvswe.backends import gpu
from fvswe.cli import main
from fvswe.errors import ConfigError
from fvswe.grid import Grid
from fvswe.simulation import Simulation

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "second_order.py"
spec = importlib.util.spec_from_file_location("second_order", SCRIPT)
second_order = importlib.util.module_from_spec(spec)
spec.loader.exec_module(second_order)
irregular = second_order.irregular
LINEAR = dict(integrator="ssp-rk2", reconstruction="linear", backend="cpu")


def emerged_bump(x, y):
    """A bed with a bump rising 0.5 m above the surface (0) and a shore from x = 3."""
    return 1.0 - 1.5 * np.exp(-(x**2 + y**2) / 2.0) - 0.8 * np.maximum(0.0, x - 3.0)


@pytest.mark.parametrize(("scheme", "dry"), [("hll-wd", True), *(
    (s, False) for s in registry.names(1) if s != "hll-wd")])  # fmt: skip
def test_one_layer_lake_at_rest_on_irregular_triangles(scheme, dry):
    """Nothing moves (to round-off) over a bump that emerges (``hll-wd``; the schemes without
    wet/dry treatment: a submerged one); the dry cells and their neighbours are first order."""
    mesh = irregular(12, half=5.0)

    def H(x, y):
        return emerged_bump(x, y) + (0.0 if dry else 1.0)

    sim = Simulation(mesh, layers=1, scheme=scheme, H=H, initial={"h": lambda x, y: np.maximum(
        0.0, H(x, y))}, **LINEAR)  # fmt: skip
    W0 = sim.state()
    assert ((W0[:, 0] == 0).sum() >= 4) == dry
    s = sim.run(1e6, max_steps=100)
    assert np.abs(sim.state() - W0).max() <= 1e-12
    assert (s.counters["first_order_cells"] > 0) == dry and s.counters["clipped_cells"] == 0


@pytest.mark.parametrize("scheme", registry.names(2))
def test_two_layer_lake_at_rest_with_pierced_interface(scheme):
    """Both layers at rest over a bed that pierces the interface and the surface, on irregular
    triangles: nothing moves (observed: below 1e-14)."""
    mesh = irregular(12, half=5.0)
    sim = Simulation(mesh, layers=2, scheme=scheme, r=0.98, H=bump_and_shore,
                     initial=lake(*mesh.centroid.T), **LINEAR)  # fmt: skip
    W0 = sim.state()
    assert (W0[:, 3] == 0).sum() >= 4 and (W0[:, 0] + W0[:, 3] == 0).sum() >= 4
    s = sim.run(1e6, max_steps=100)
    assert np.abs(sim.state() - W0).max() <= 1e-12
    assert s.mass_rel_drift == [0.0, 0.0] and s.counters["first_order_cells"] > 0


@pytest.mark.parametrize("scheme", registry.names(2))
def test_two_layer_dam_break_onto_a_dry_lower_layer(scheme):
    """Each layer's mass to round-off and no depth below 0 (nothing clipped) while the lower
    layer runs onto the dry half; the front's cells fall back to first order."""
    initial = {"h2": lambda x, y: np.where(x < 0, 0.5, 0.0),
               "h1": lambda x, y: np.where(x < 0, 0.5, 1.0)}  # fmt: skip
    sim = Simulation(irregular(16, half=5.0), layers=2, scheme=scheme, r=0.5, H=1.0,
                     initial=initial, **LINEAR)  # fmt: skip
    s = sim.run(1.0)
    W = sim.state()
    assert max(s.mass_rel_drift) <= 1e-13 and s.counters["clipped_cells"] == 0
    assert W[:, [0, 3]].min() >= 0 and s.counters["first_order_cells"] > 0
    f = sim.fields()
    assert f["x"][f["h2"] > 1e-3].max() > 1.0  # it ran onto the dry part


def test_second_order_on_irregular_triangles():
    """The steady vortex (fvswe.exact.vortex) on 512, 2048 and 8192 irregular triangles:
    observed L1 order at least 1.9 between the two finer meshes with the linear
    reconstruction (observed 1.9-2.1), about 1 at first order."""
    meshes = [irregular(n) for n in (16, 32, 64)]
    linear = second_order.orders([second_order.vortex_error(m, "linear")[0] for m in meshes])
    assert linear[-1] >= 1.9 and linear[0] >= 1.7
    constant = second_order.orders([second_order.vortex_error(m, "constant")[0]
                                    for m in meshes[:2]])  # fmt: skip
    assert constant[0] < 1.3


def test_linear_is_refused_where_it_does_not_run():
    """One line each: forward Euler, an unknown name; on the GPU counted sections (not there
    yet)."""
    mesh = irregular(4)
    with pytest.raises(ConfigError, match="needs a multi-stage integrator"):
        Simulation(mesh, layers=1, scheme="hll", H=1.0, initial={"h": 1.0},
                   reconstruction="linear", backend="cpu")  # fmt: skip
    one = dict(layers=1, scheme="hll", H=1.0, initial={"h": 1.0}, integrator="ssp-rk2",
               reconstruction="linear")  # fmt: skip
    if CXX is not None:
        sim = Simulation(mesh, **one, **_host_gpu("gather"))
        with pytest.raises(ConfigError, match="^sections: .* reconstruction 'linear'"):
            sim.backend.count_edges(np.array([0]))
    with pytest.raises(ConfigError, match="reconstruction: unknown 'cubic'"):
        Simulation(mesh, layers=1, scheme="hll", H=1.0, initial={"h": 1.0},
                   reconstruction="cubic")  # fmt: skip


def test_cli_flag_and_restart_identity(tmp_path):
    """``--reconstruction linear`` reaches the run (its summary counts the first-order
    cells), and a snapshot of a linear run does not restore into a constant one: the
    one-line error names the key."""
    out = tmp_path / "run"
    args = ["run", "examples/dambreak.toml", "--output", str(out), "--integrator", "ssp-rk2",
            "--t-end", "0.05", "--backend", "cpu", "--reconstruction", "linear",
            "--png", ""]  # fmt: skip
    assert main(args) == 0
    assert '"first_order_cells": 0' in (out / "summary.json").read_text()
    mesh = irregular(4)
    runs = [Simulation(mesh, layers=1, scheme="hll", H=1.0, initial={"h": 1.0},
                       integrator="ssp-rk2", reconstruction=rec, backend="cpu")
            for rec in ("linear", "constant")]  # fmt: skip
    with pytest.raises(ConfigError, match="reconstruction") as err:
        runs[1].restore(runs[0].snapshot())
    assert "\n" not in str(err.value)


def _wet_dry_bump(mesh, **kw):
    """One layer over the emerged bump of :func:`emerged_bump`, 0.3 m higher for x < 0: a
    dam break around a dry island (its cells and their neighbours first order)."""
    return Simulation(mesh, layers=1, scheme="hll-wd", H=emerged_bump, initial={
        "h": lambda x, y: np.maximum(0.0, emerged_bump(x, y) + 0.3 * (x < 0))}, **kw)  # fmt: skip


def _dry_lower_layer(mesh, scheme="pvm-ifcp", **kw):
    """Two layers breaking onto a dry lower layer (x > 0): the front's cells first order."""
    initial = {"h2": lambda x, y: np.where(x < 0, 0.5, 0.0),
               "h1": lambda x, y: np.where(x < 0, 0.5, 1.0)}  # fmt: skip
    return Simulation(mesh, layers=2, scheme=scheme, r=0.5, H=1.0, initial=initial, **kw)


def _pulled_apart(mesh, **kw):
    """tests/test_vanishing.py's pulled-apart upper layer (non-lagged Δt): the positivity
    limiter acts (``mesh`` unused: its own strip)."""
    return pulled_apart_simulation(30, **kw)


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(("make", "variant", "integrator", "steps"), [
    (_wet_dry_bump, "block", "ssp-rk2", 12), (_dry_lower_layer, "block", "ssp-rk3", 8),
    (_pulled_apart, "edge", "ssp-rk2", 12), (_pulled_apart, "block", "ssp-rk2", 12),
    (_wet_dry_bump, "gather", "ssp-rk3", 6),
    (_dry_lower_layer, "slot", "ssp-rk2", 6), (_wet_dry_bump, "grid", "ssp-rk3", 8)])  # fmt: skip
def test_linear_on_the_host_gpu_is_the_cpu_bitwise(make, variant, integrator, steps, monkeypatch):
    """Issue 27 stage 3: the GPU's linear reconstruction (linear.cuh: troubled_pass and
    faces_pass before each residual, the edges on the face states), run on the host, gives
    the CPU's float64 state, time and counters bit for bit: one and two layers, SSP-RK2 and
    SSP-RK3, with dry cells and a dry lower layer (first-order fallback) and with the
    positivity limiter acting (pulled apart: edge, and block, whose limiter kernels form the
    interior terms as its step does); in every variant (grid: on a Cartesian grid).
    The block runs take troubled_pass on one block of 32 threads striding over all cells (as
    on millions of cells, where its grid is capped)."""
    options = _host_gpu(variant)
    if variant == "block":
        monkeypatch.setattr(gpu.backend, "TROUBLED_BLOCKS", 1)
        options["backend_options"]["block"] = 32
    grid = Grid(12, 12, 0.8, 0.8, origin=(-4.8, -4.8))
    mesh = grid.mesh() if variant == "grid" else irregular(6, half=5.0)
    cpu = make(mesh, backend="cpu", integrator=integrator, reconstruction="linear")
    dev = make(mesh, integrator=integrator, reconstruction="linear", **options)
    assert dev.backend.variant == variant
    assert variant != "block" or dev.backend._troubled_blocks * dev.backend.block < mesh.n_cells
    for sim in (cpu, dev):
        sim.run(1e6, max_steps=steps)
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps) and cpu.steps == steps
    assert np.array_equal(dev.state(), cpu.state())
    counts = cpu.backend.counters()
    assert dev.backend.counters() == counts and counts["first_order_cells"] > 0
    assert counts["limited"] > 0 or make is not _pulled_apart


def float32_linear_near_the_cpus(make, **backend):
    """docs/GPU.md's float32 promise, kept with the reconstruction in float (issue 27 "Cost":
    the CPU reconstructs the float32 state in float64): a float32 GPU run of ``make`` stays
    within 1e-6 of the CPU's largest value after 12 SSP-RK2 steps, with the same first-order
    cell counts (observed on the host: 3.0e-7 one layer, 1.2e-7 two layers)."""
    mesh = irregular(6, half=5.0)
    opts = dict(integrator="ssp-rk2", reconstruction="linear", dtype="float32")
    cpu = make(mesh, backend="cpu", **opts)
    dev = make(mesh, **opts, **backend)
    for sim in (cpu, dev):
        sim.run(1e6, max_steps=12)
    a, b = cpu.state().astype(np.float64), dev.state().astype(np.float64)
    assert np.abs(a - b).max() <= 1e-6 * np.abs(a).max()
    key = "first_order_cells"
    assert dev.backend.counters()[key] == cpu.backend.counters()[key] > 0


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("make", [_wet_dry_bump, _dry_lower_layer])
def test_a_float32_linear_host_gpu_run_stays_near_the_cpus(make):
    """float32_linear_near_the_cpus on the host GPU (block), one and two layers."""
    float32_linear_near_the_cpus(make, **_host_gpu("block"))


#: float32's unit round-off (2^-24).
EPS32 = 2.0**-24


def float32_linear_properties(**backend):
    """The linear reconstruction's properties in float32 (issue 27 "Cost": a float32 GPU module
    reconstructs in float): one layer at rest around an emerged bump (``hll-wd``) and two at
    rest over an interface and a surface pierced by the bed (PVM-IFCP) move by no more than a
    few round-offs of their largest value in 100 SSP-RK2 steps (observed: 0 and 1 round-off on
    the host, the CPU 0 and 4); a two-layer dam break onto a dry lower layer keeps every depth
    non-negative, clips nothing and keeps each layer's mass to 1e-8 (the float32 cell updates'
    rounding, summed in float64: observed 1e-9, as the CPU's float32 run)."""
    mesh = irregular(12, half=5.0)
    opts = dict(integrator="ssp-rk2", reconstruction="linear", dtype="float32", **backend)
    one = Simulation(mesh, layers=1, scheme="hll-wd", H=emerged_bump, initial={
        "h": lambda x, y: np.maximum(0.0, emerged_bump(x, y))}, **opts)  # fmt: skip
    two = Simulation(mesh, layers=2, scheme="pvm-ifcp", r=0.98, H=bump_and_shore,
                     initial=lake(*mesh.centroid.T), **opts)  # fmt: skip
    for sim in (one, two):
        W0 = sim.state()
        s = sim.run(1e6, max_steps=100)
        assert np.abs(sim.state() - W0).max() <= 4 * EPS32 * np.abs(W0).max()
        assert s.counters["first_order_cells"] > 0 and s.counters["clipped_cells"] == 0
    dam = _dry_lower_layer(irregular(16, half=5.0), **opts)
    s = dam.run(1.0)
    assert max(s.mass_rel_drift) <= 1e-8 and s.counters["clipped_cells"] == 0
    assert dam.state()[:, [0, 3]].min() >= 0 and s.counters["first_order_cells"] > 0


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_float32_linear_host_gpu_runs_keep_rest_depths_and_masses():
    """float32_linear_properties on the host GPU (block)."""
    float32_linear_properties(**_host_gpu("block"))


def test_every_residual_counts_its_first_order_cells():
    """A lake at rest around a dry island (its fallen-back cells the same in every residual):
    two lagged SSP-RK2 steps count twice the first-order cells of one, also the residual of
    the first stage whose reconstruction the initial Δt's speeds made (it was left out)."""
    mesh = irregular(6, half=5.0)
    counts = []
    for steps in (1, 2):
        sim = Simulation(mesh, layers=1, scheme="hll-wd", H=emerged_bump, initial={
            "h": lambda x, y: np.maximum(0.0, emerged_bump(x, y))}, **LINEAR)  # fmt: skip
        counts.append(sim.run(1e6, max_steps=steps).counters["first_order_cells"])
    assert counts[1] == 2 * counts[0] and counts[0] > 0


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: cannot compile the CUDA sources")
def test_the_linear_module_compiles_for_the_device_and_first_order_has_none_of_it():
    """A linear block module (FVSWE_LINEAR) compiles to sm_90 PTX with troubled_pass and
    faces_pass beside its step (no interior_pass: it forms the terms where it uses them; the
    other variants launch it, tested on the host); a first-order module's options are those
    it had before the switch existed (no FVSWE_LINEAR) and its PTX has neither kernel (its
    PTX was checked equal to the one before this change: PVM-IFCP block float32, HLL block
    float64, Roe gather float64, IR-Roe edge float32, HLL-WD slot float32, HLL-WD grid
    float32, Roe grid float64)."""
    scheme, layers, dtype, variant = "pvm-ifcp", 2, np.float32, "block"
    plain = gpu.compile_options(scheme, layers, dtype, variant)
    assert gpu.compile_options(scheme, layers, dtype, variant, linear=False) == plain
    ptx = {}
    for linear in (False, True):
        opts = gpu.compile_options(scheme, layers, dtype, variant, linear=linear)
        cmd = [NVCC, "--ptx", "-arch=sm_90", *opts]
        ptx[linear] = cached_build(variant, gpu.source(variant), cmd, ".cu").read_text()
    for name in ("troubled_pass", "faces_pass", "block_step"):
        assert f".entry {name}(" in ptx[True]
        assert (f".entry {name}(" in ptx[False]) == (name == "block_step")
    # issue 27 "Cost": the block module forms the interior terms where it uses them (no
    # interior_pass, nothing stored), and stores the face states in float32
    assert ".entry interior_pass(" not in ptx[True]
    for name in ("faces_pass",):
        body = ptx[True].split(f".entry {name}(")[1].split(".entry ")[0]
        stores = set(re.findall(r"\bst(?:\.global)?(?:\.v\d)?\.(f\d\d)", body))
        assert stores == {"f32"}


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_a_linear_host_gpu_run_restored_half_way_is_the_straight_run():
    """A linear GPU run (block, on the host) snapshot after 6 steps and restored into a fresh
    one goes on to the straight 12-step run's state and counters (first_order_cells among
    them) bit for bit."""
    mesh = irregular(6, half=5.0)
    options = dict(integrator="ssp-rk2", reconstruction="linear", **_host_gpu("block"))
    straight, half = _wet_dry_bump(mesh, **options), _wet_dry_bump(mesh, **options)
    straight.run(1e6, max_steps=12)
    half.run(1e6, max_steps=6)
    again = _wet_dry_bump(mesh, **options)
    again.restore(half.snapshot())
    again.run(1e6, max_steps=6)
    assert again.steps == 12 and np.array_equal(again.state(), straight.state())
    counts = straight.backend.counters()
    assert again.backend.counters() == counts and counts["first_order_cells"] > 0


def test_a_layout_without_the_linear_geometry_is_refused_in_one_line():
    """The least-squares geometry is built only for linear runs (issue 31: seconds at
    millions of cells); a linear backend on a layout built without it is a ConfigError that
    names the fix, on the CPU and for the GPU's arrays, and a constant run's layout holds
    none."""
    from fvswe.backends.cpu.pipeline import CpuBackend
    from fvswe.backends.gpu.device import linear_arrays

    constant = Simulation(Grid(4, 3, 1.0, 1.0).mesh(), H=1.0, initial={"h": 1.0}, layers=1,
                          scheme="hll", backend="cpu")  # fmt: skip
    lay = constant.layout
    assert lay.lsq_weight is None and lay.face_offset is None
    with pytest.raises(ConfigError, match=r"linear=True"):
        CpuBackend(lay, "hll", 0.5, "lagged", None, integrator="ssp-rk2", reconstruction="linear")
    with pytest.raises(ConfigError, match=r"linear=True"):
        linear_arrays(lay)
    linear = Simulation(Grid(4, 3, 1.0, 1.0).mesh(), H=1.0, initial={"h": 1.0}, layers=1,
                        scheme="hll", **LINEAR)  # fmt: skip
    weights, offsets = linear.layout.linear_geometry()
    assert weights.shape == offsets.shape == (12, 4, 2) and np.isfinite(weights).all()
