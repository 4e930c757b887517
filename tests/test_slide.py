"""A moving bed (fvswe.slide, fvswe/physics/slide.py, docs/SCHEMES.md §17): the water rides on
the bed, so each layer's volume is conserved while the surface's volume changes by the bed's;
a slide at rest under a lake at rest leaves it at rest; a small bump at constant speed follows
the linear solution (fvswe.exact.moving_bed) at first order."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from gpu_skip import skip_without_gpu
from test_cuda_sources import CXX, NVCC, cached_build

from fvswe import Simulation
from fvswe.backends import gpu
from fvswe.errors import ConfigError
from fvswe.grid import Grid
from fvswe.mesh.generate import square
from fvswe.physics import slide as formulas
from fvswe.slide import Slide, bed_at, slide_table

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "moving_bed.py"
_spec = importlib.util.spec_from_file_location("moving_bed", SCRIPT)
moving = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(moving)


def _surface_volume(sim: Simulation) -> float:
    f = sim.fields()
    return float(np.sum(f["area"] * f["eta1" if "eta1" in f else "eta"]))


def _bed_volume(sim: Simulation) -> float:
    f = sim.fields()
    return float(np.sum(f["area"] * f["H"]))


#: The basin's slide: 0.2 m high, it starts inside and leaves through the north-east corner
#: by Watts and Grilli's law (its bed volume, partly outside, changes).
BASIN_SLIDE = Slide(thickness=0.2, length=4.0, width=3.0, start=(6.0, 5.0), direction=(1.0, 0.8),
                    acceleration=2.0, terminal_velocity=4.0)  # fmt: skip


def slide_basin_simulation(layers: int = 1, slide: Slide = BASIN_SLIDE, **kw) -> Simulation:
    """A 20 m square basin with walls, 1 m deep (two layers: 0.4 m over 0.6 m), and
    ``slide``."""
    mesh = square(400, seed=3, half=10.0)
    initial = {"h": 1.0} if layers == 1 else {"h1": 0.4, "h2": 0.6}
    scheme = "hll-wd" if layers == 1 else "roe"
    return Simulation(mesh, layers=layers, H=1.0, initial=initial, slide=slide,
                      **{"scheme": scheme, "order": "none", **kw})  # fmt: skip


@pytest.mark.parametrize(("layers", "integrator"), [(1, "euler"), (2, "ssp-rk3")])
def test_layers_keep_their_volume_and_the_surface_follows_the_bed(layers, integrator):
    """Each layer's volume is its initial one to round-off while the slide moves, and the
    surface's volume changes by exactly minus the bed depth's (the bed's volume) change, which
    is not zero: the slide leaves the basin."""
    sim = slide_basin_simulation(layers, integrator=integrator, backend="cpu")
    surface0, bed0 = _surface_volume(sim), _bed_volume(sim)
    sim.run(3.0)
    for now, start in zip(sim.mass(), sim.mass_initial, strict=True):
        assert abs(now - start) <= 1e-13 * start
    change = _bed_volume(sim) - bed0
    assert change > 0.5  # m^3 of the slide's 1.9 left: the bed deepened
    assert abs((_surface_volume(sim) - surface0) + change) <= 1e-12 * sim.mass_initial[0]


def at_rest(slide: Slide, mesh, depth: float) -> np.ndarray:
    """The depth of water at rest at level 0 over a flat bed ``depth`` deep and ``slide`` at
    t = 0: the bed with the slide."""
    table = slide_table(slide, mesh.centroid, np.full(mesh.n_cells, depth))
    return bed_at(table, 0.0, np.float64)


def test_a_slide_at_rest_under_a_lake_at_rest_leaves_it_at_rest():
    """A 0.3 m slide that does not move under a flat surface (h = the bed with the slide):
    after 2 s the surface is flat and the water still to round-off (hll-wd is well balanced)."""
    mesh = square(300, seed=1, half=10.0)
    slide = Slide(thickness=0.3, length=5.0, width=3.0, start=(1.0, -2.0), direction=(1, 1),
                  speed=0.0)  # fmt: skip
    bed = at_rest(slide, mesh, 1.0)
    assert bed.min() < 0.75
    sim = Simulation(mesh, layers=1, H=1.0, initial={"h": bed}, slide=slide, scheme="hll-wd",
                     backend="cpu", order="none")  # fmt: skip
    sim.run(2.0)
    f = sim.fields()
    assert sim.steps > 15
    assert np.abs(f["eta"]).max() <= 1e-14
    assert max(np.abs(f["qx"]).max(), np.abs(f["qy"]).max()) <= 1e-14


def test_a_bump_at_constant_speed_converges_to_the_linear_solution_at_first_order():
    """benchmarks/moving_bed.py's strip: amplitude 1e-3 of the depth, U = c / 2, t = 8 s (the
    free waves stay inside): the L1 error of eta falls at order ~1 (observed 0.94 and 1.18
    from 200 to 800 cells; 0.69 from 100 cells, 5 across the slide's half-length)."""
    errors = [moving.strip_error(nx) for nx in (200, 400, 800)]
    assert errors[-1] < 0.15 * moving.BUMP * 2 * moving.HALF  # the waves are resolved
    assert min(moving.orders(errors)) > 0.85, errors


def test_the_laws_of_motion_and_the_shape():
    """Constant speed ``U t``; Watts-Grilli starts at rest with acceleration ``a0`` and tends to
    ``u_t``, continuous where the formula turns linear; the shape's volume is pi L W T / 4."""
    assert formulas.travel(3.0, 0, 2.5, 0.0) == 7.5
    a0, ut = 2.0, 4.0
    s0, t0 = ut * ut / a0, ut / a0
    h = 1e-4
    start = formulas.travel(h, 1, s0, t0)
    assert abs(2 * start / h**2 - a0) <= 1e-3 * a0
    late = (formulas.travel(100 + h, 1, s0, t0) - formulas.travel(100 - h, 1, s0, t0)) / (2 * h)
    assert abs(late - ut) <= 1e-9
    edge = 20.0 * t0
    assert (
        abs(formulas.travel(edge * (1 + 1e-15), 1, s0, t0) - formulas.travel(edge, 1, s0, t0))
        < 1e-12
    )
    n = 201
    xi = np.linspace(-1, 1, n)
    dxi = xi[1] - xi[0]
    cells = [formulas.shape(a, b) for a in xi for b in xi]
    assert abs(sum(cells) * dxi * dxi - math.pi / 4) <= 1e-4


@pytest.mark.parametrize(
    ("kw", "message"),
    [({"speed": 1.0, "acceleration": 1.0, "terminal_velocity": 2.0}, "give speed, or"),
     ({"acceleration": 1.0}, "give speed, or"),
     ({"speed": 1.0, "thickness": -1.0}, "slide thickness: must be >= 0"),
     ({"speed": 1.0, "length": 0.0}, "slide length: must be > 0"),
     ({"speed": 1.0, "direction": (0.0, 0.0)}, "slide direction: must not be (0, 0)"),
     ({"acceleration": -1.0, "terminal_velocity": 2.0}, "slide acceleration: must be > 0")],
)  # fmt: skip
def test_a_bad_slide_is_one_line_naming_the_key(kw, message):
    args = {"thickness": 0.1, "length": 2.0, "width": 1.0, "start": (0.0, 0.0), **kw}
    mesh = square(50, seed=1, half=5.0)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Simulation(mesh, layers=1, H=1.0, initial={"h": 1.0}, slide=Slide(**args), backend="cpu")


def _host_gpu(variant: str) -> dict:
    """The GPU backend's options on the host runtime (tests/host_runtime.py)."""
    from host_runtime import HostRuntime

    return {"backend": "gpu", "backend_options": {"variant": variant, "runtime": HostRuntime()}}


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(
    ("layers", "integrator", "variant"), [(1, "euler", "gather"), (2, "ssp-rk3", "edge")]
)
def test_the_gpu_bed_on_the_host_is_the_cpus(layers, integrator, variant):
    """The GPU's bed_pass (before each later stage, after each step; the emitted slide::bed)
    on the host: state, bed, steps and time bitwise the CPU's (float64), and a run restored
    from a snapshot half-way (the bed recomputed from t) ends on the same bits."""
    cpu = slide_basin_simulation(layers, integrator=integrator, backend="cpu")
    dev = slide_basin_simulation(layers, integrator=integrator, **_host_gpu(variant))
    cpu.run(0.5)  # the same clipped step as the restored run's
    cpu.run(1.0)
    dev.run(0.5)
    again = slide_basin_simulation(layers, integrator=integrator, **_host_gpu(variant))
    again.restore(dev.snapshot())
    dev.run(1.0)
    again.run(1.0)
    ref = cpu.backend.get_state()
    for sim in (dev, again):
        assert (sim.t, sim.steps) == (cpu.t, cpu.steps)
        assert np.array_equal(sim.backend.get_state(), ref)
        H = sim.backend._W.get()[:, 0, 3]  # the device's bed, after the step
        assert np.array_equal(H, cpu.bed())
    assert not np.array_equal(cpu.bed(), cpu.layout.H)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: cannot compile the CUDA sources")
@pytest.mark.parametrize(
    ("scheme", "layers", "dtype", "variant", "k"),
    [("roe", 2, "float64", "gather", 3), ("hll-wd", 1, "float32", "grid", 4)],
)
def test_the_bed_pass_compiles_for_the_device(scheme, layers, dtype, variant, k):
    """A module of a run with a slide (FVSWE_SLIDE) compiles to sm_90 PTX with its bed_pass,
    the emitted slide::bed with CUDA's log and cosh inside."""
    opts = gpu.compile_options(scheme, layers, np.dtype(dtype), variant, k, slide=True)
    out = cached_build(variant, gpu.source(variant), [NVCC, "--ptx", "-arch=sm_90", *opts], ".cu")
    ptx = out.read_text()
    assert ".entry bed_pass(" in ptx


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["edge", "gather", "slot", "block"])
def test_the_gpu_bed_is_the_cpus(variant):
    """On a GPU: the two-layer basin with its slide leaving it by Watts and Grilli's law
    (SSP-RK3): time and steps the CPU's, the state to round-off (CUDA's log and cosh of the
    law of motion are not the host's correctly rounded ones: a few ulp), the layers' volumes
    conserved."""
    skip_without_gpu()
    cpu = slide_basin_simulation(2, integrator="ssp-rk3", backend="cpu")
    dev = slide_basin_simulation(2, integrator="ssp-rk3", backend="gpu",
                                 backend_options={"variant": variant})  # fmt: skip
    cpu.run(2.0)
    dev.run(2.0)
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps)
    assert np.abs(dev.state() - cpu.state()).max() <= 1e-12
    assert np.abs(dev.fields()["eta1"] - cpu.fields()["eta1"]).max() <= 1e-12
    for now, start in zip(dev.mass(), dev.mass_initial, strict=True):
        assert abs(now - start) <= 1e-13 * start


CASE = """
t_end = 1.0
layers = 1
scheme = "hll-wd"
backend = "cpu"
[mesh]
generator = "strip"
nx = 40
x1 = 100.0
[initial]
H = 4.0
h = "H"
[slide]
thickness = 0.5
length = 10.0
width = inf
start = [30.0, 1.0]
{law}
"""


def test_a_case_files_slide_and_its_h_at_rest(tmp_path):
    """``[slide]`` of a case file: ``h = "H"`` is the water at rest over the bed with the slide
    (eta = 0 where the bed rose by up to 0.5 m); a missing key is one line naming it."""
    from fvswe import casefile

    path = tmp_path / "case.toml"
    path.write_text(CASE.format(law="acceleration = 0.5\nterminal_velocity = 2.0"))
    spec = casefile.load(path)
    sim = spec.simulation(spec.load_mesh())
    f = sim.fields()
    assert f["H"].min() < 3.6 and np.abs(f["eta"]).max() == 0.0
    sim.run(1.0)
    assert np.abs(sim.fields()["eta"]).max() > 1e-3
    path.write_text(CASE.format(law="").replace("thickness = 0.5\n", ""))
    with pytest.raises(ConfigError, match=r"case.toml: missing key 'slide.thickness'$"):
        casefile.load(path)
    path.write_text(CASE.format(law="speed = -1.0\nterminal_velocity = 2.0"))
    with pytest.raises(ConfigError, match=r"case.toml: slide: give speed, or acceleration and"):
        casefile.load(path)


def test_a_checkpoint_continues_only_with_its_slide():
    """The slide is in the restart identity: a snapshot restores into the same run (its bed
    recomputed from t), and a run whose slide moves otherwise refuses it in one line naming
    the slide's parameters."""
    from dataclasses import replace

    sim = slide_basin_simulation(1, backend="cpu")
    sim.run(0.3)
    snap = sim.snapshot()
    again = slide_basin_simulation(1, backend="cpu")
    again.restore(snap)
    assert np.array_equal(again.fields()["H"], sim.fields()["H"])
    faster = replace(BASIN_SLIDE, terminal_velocity=5.0)
    other = slide_basin_simulation(1, slide=faster, backend="cpu")
    with pytest.raises(ConfigError, match=r"slide: .*s0 8 m, t0 2 s' in the checkp") as err:
        other.restore(snap)
    assert "\n" not in str(err.value)


def test_the_plan_sets_the_bed_before_each_later_stage_and_after_the_step():
    """ssp-rk3's plan with a moving bed: the bed of stage 1's state (t + dt) and stage 2's
    (t + dt/2) right before their residuals, the state's after advance (the new t), none for
    stage 0 (the state holds the bed of t); the GPU launches bed_pass for each, with the
    stage in its op bits."""
    from fvswe import integrators
    from fvswe.backends.cuda_header import OP_STAGE_SHIFT
    from fvswe.backends.gpu.plan import compile_plan

    ops = integrators.step_plan(integrators.get("ssp-rk3"), "lagged", 1, bed=True)
    beds = [k for k, op in enumerate(ops) if op.kind == "bed"]
    assert [(ops[k].dst, ops[k].stage) for k in beds] == [("V", 1), ("W", 2), ("U", 0)]
    assert [ops[k + 1].kind for k in beds[:2]] == ["residual", "residual"]
    assert [ops[k + 1].src for k in beds[:2]] == ["V", "W"] and ops[beds[2] - 1].kind == "advance"
    assert integrators.step_plan(integrators.get("ssp-rk3"), "lagged", 1) == tuple(
        op for op in ops if op.kind != "bed"
    )
    launches = [x for x in compile_plan(ops, "gather", True, bed=True) if x.kernel == "bed_pass"]
    assert [(x.dst, x.op >> OP_STAGE_SHIFT) for x in launches] == [("V", 1), ("W", 2), ("U", 0)]


def test_the_implicit_method_refuses_a_slide():
    mesh = Grid(8, 8, 1.0, 1.0).mesh()
    with pytest.raises(ConfigError, match=r"^method 'implicit': slide \(a moving bed\) is for"):
        Simulation(
            mesh,
            layers=1,
            H=1.0,
            initial={"h": 1.0},
            method="implicit",
            slide=Slide(thickness=0.1, length=2.0, width=2.0, start=(4.0, 4.0), speed=0.5),
        )
