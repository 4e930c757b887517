"""Periodic boundaries (docs/SCHEMES.md §7.8): tag pairs joined into interior edges, on the
CPU, the host-run GPU kernels, ranks and case files; mismatched pairs refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

from fvswe.boundary import Periodic
from fvswe.errors import ConfigError, MeshError
from fvswe.grid import Grid
from fvswe.mesh.core import Mesh
from fvswe.mesh.periodic import periodic
from fvswe.simulation import Simulation


def rising_strip(nx: int, ny: int, dx: float = 1.0) -> Mesh:
    """``nx x ny`` squares of side ``dx``, each cut by its rising diagonal (no mirror symmetry
    across the strip), tagged ``west``, ``east``, ``south`` and ``north``."""
    gx, gy = np.meshgrid(np.arange(nx + 1) * dx, np.arange(ny + 1) * dx, indexing="ij")
    a, b = (v.ravel() for v in np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij"))
    n00 = a * (ny + 1) + b
    n10, n01, n11 = n00 + ny + 1, n00 + 1, n00 + ny + 2
    cells = np.concatenate([np.stack([n00, n10, n11], 1), np.stack([n00, n11, n01], 1)])
    col = np.arange(nx)
    west = np.stack([np.arange(ny), np.arange(1, ny + 1)], 1)
    south = np.stack([col * (ny + 1), (col + 1) * (ny + 1)], 1)
    tags = {"west": west, "east": west + nx * (ny + 1), "south": south, "north": south + ny}
    return Mesh.from_arrays(np.stack([gx.ravel(), gy.ravel()], 1), cells, boundary_tags=tags)


def dam_break(sides: dict, nx: int = 20, ny: int = 2, **kw) -> Simulation:
    """A 1-D dam break along an ``nx x ny`` strip of triangles, walls at its ends."""
    return Simulation(
        rising_strip(nx, ny), layers=1, H=1.0, boundary={"west": "wall", "east": "wall", **sides},
        initial={"h": lambda x, y: np.where(x < nx / 2, 2.0, 1.0)}, **kw,
    )  # fmt: skip


def periodic_strip_simulation(nx: int, **kw) -> Simulation:
    """The dam break on ``nx x 4`` triangles periodic across the strip (HLL; the case
    ``periodic-strip`` of tests/mpi_driver.py)."""
    return dam_break({"south": Periodic("north")}, nx=nx, ny=4, scheme="hll", **kw)


def uniform_channel(mesh, **kw) -> Simulation:
    """A uniform flow along a channel, periodic west-east, walls south and north."""
    sides = {"west": Periodic("east"), "south": "wall", "north": "wall"}
    return Simulation(mesh, layers=1, H=1.0, initial={"h": 1.0, "qx": 0.4}, boundary=sides, **kw)


def test_joined_edges_are_interior_with_the_slots_and_normal_of_both_sides():
    """Each west edge becomes one interior edge to the east cell a period away: its normal
    +-x out of the west cell, the east cell's slot, no boundary edge left on either tag."""
    mesh = Grid(4, 3, dx=2.0, dy=1.0).mesh()
    joined = periodic(mesh, [("west", "east")])
    assert joined.n_edges == mesh.n_edges - 3
    west = (mesh.edge_tag == mesh.tags["west"]) & mesh.boundary
    new = np.isin(joined.edge_slot[:, 0], mesh.edge_slot[west, 0])
    i, j = joined.edge_cells[new].T
    assert np.array_equal(j, i + 3) and np.all(joined.edge_tag[new] == 0)
    assert np.array_equal(joined.edge_normal[new], np.tile([-1.0, 0.0], (3, 1)))
    assert np.array_equal(joined.edge_slot[new, 1], 4 * j + 1)  # the east cell's east side
    assert not np.isin(joined.edge_tag, [mesh.tags["west"], mesh.tags["east"]]).any()
    # every slot has one edge; the mesh's other arrays are unchanged
    assert np.array_equal(np.sort(joined.edge_slot[joined.edge_slot >= 0]), np.arange(48))
    assert joined.cells is not None and np.array_equal(joined.centroid, mesh.centroid)


@pytest.mark.parametrize("mesh", [Grid(6, 3, dx=1.0, dy=1.0).mesh(), rising_strip(6, 3)])
def test_a_periodic_channel_keeps_a_uniform_flow_exactly_uniform(mesh):
    """Quads and triangles: a uniform flow through a periodic channel stays bit for bit
    uniform; with walls at its ends instead it stops against them."""
    sim = uniform_channel(mesh, scheme="roe")
    W0 = sim.state().copy()
    sim.backend.advance(100.0, 20)
    assert np.array_equal(sim.state(), W0)
    walled = Simulation(mesh, layers=1, H=1.0, initial={"h": 1.0, "qx": 0.4}, scheme="roe")
    walled.backend.advance(100.0, 20)
    assert not np.array_equal(walled.state(), W0)


def cross_strip(sim: Simulation) -> float:
    """The strip's mean cross-strip velocity over its mean along-strip speed."""
    f = sim.fields()
    return float(np.sum(f["area"] * f["qy"]) / np.sum(f["area"] * np.abs(f["qx"])))


def test_periodic_strip_dam_break_keeps_the_cross_strip_velocity_at_round_off():
    """A 1-D dam break on an asymmetric strip of triangles: periodic across the strip, the
    mean cross-strip velocity stays at round-off (measured 7e-18 of the along-strip one);
    "open" sides grow it to 0.39 and walls to 0.02 in the same 30 steps."""
    ratios = {}
    for name, sides in (("periodic", {"south": Periodic("north")}),
                        ("open", {"south": "open", "north": "open"}),
                        ("wall", {"south": "wall", "north": "wall"})):  # fmt: skip
        sim = dam_break(sides, scheme="hll")
        sim.backend.advance(100.0, 30)
        ratios[name] = abs(cross_strip(sim))
    assert ratios["periodic"] < 1e-15
    assert ratios["open"] > 0.1 and ratios["wall"] > 0.01


@pytest.mark.parametrize(
    ("mesh", "pairs", "message"),
    [
        (Grid(4, 3, dx=1.0, dy=1.0).mesh(), [("west", "south")],
         "periodic tags 'west' and 'south' do not match: 3 edges against 4 (first of 'west' "
         "at (0, 0.5))"),
        (Mesh.from_arrays([[0, 0], [1, 0], [2, 0], [0, 1], [1, 1.5], [2, 1]],
                          [[0, 1, 4, 3], [1, 2, 5, 4]],
                          boundary_tags={"south": [[0, 1], [1, 2]], "north": [[3, 4], [4, 5]]}),
         [("south", "north")],
         "periodic tags 'south' and 'north' do not match: the edge of 'south' at (0.5, 0) "
         "has no mate shifted by (0, 1.25)"),
        (Grid(4, 3, dx=1.0, dy=1.0).mesh(), [("west", "inlet")],
         "periodic pair ('west', 'inlet'): tag 'inlet' owns no boundary edge"),
        (Grid(4, 1, dx=1.0, dy=1.0).mesh(), [("south", "north")],
         "cell 0 meets itself across the period"),
    ],
)  # fmt: skip
def test_mismatched_pairs_are_refused_in_one_line(mesh, pairs, message):
    with pytest.raises(MeshError) as err:
        periodic(mesh, pairs)
    text = str(err.value)
    assert message in text and "\n" not in text


def test_implicit_and_conditions_on_joined_tags_are_refused():
    """The implicit C-grid does not cross a period: refused in one line naming the pair; a
    condition besides Periodic on a joined tag (which acts nowhere) is refused in one line
    saying the tag is joined."""
    mesh = Grid(4, 3, dx=1.0, dy=1.0).mesh()
    message = ("^method: 'implicit' is not available with periodic boundaries "
               "\\(tags 'west' and 'east'\\); use 'explicit'$")  # fmt: skip
    with pytest.raises(ConfigError, match=message):
        uniform_channel(mesh, method="implicit")
    message = "^boundary tag 'east': joined periodic with 'west', it takes no condition of its own$"
    with pytest.raises(ConfigError, match=message):
        Simulation(mesh, layers=1, H=1.0, initial={"h": 1.0},
                   boundary={"west": Periodic("east"), "east": "wall", "south": "wall",
                             "north": "wall"})  # fmt: skip


def test_joined_cells_least_squares_geometry_is_an_interior_cells():
    """Triangles periodic along the strip: a cell beside the seam sees its joined neighbour
    moved by the period, so its least-squares weights and face offsets are those of the same
    triangle three columns in (without the translation they are off by the strip's length)."""
    sim = uniform_channel(
        rising_strip(8, 2), reconstruction="linear", integrator="ssp-rk2", order="none"
    )
    lay, n = sim.layout, 8 * 2  # cells: the lower triangles column by column, then the upper
    for first in (0, 7 * 2, n, n + 7 * 2):  # the first and last column's, lower and upper
        inner = first + 3 * 2 if first % n == 0 else first - 3 * 2
        for key in ("lsq_weight", "face_offset"):
            got, want = getattr(lay, key)[[first, first + 1]], getattr(lay, key)[[inner, inner + 1]]
            assert np.allclose(got, want, rtol=0, atol=1e-12), (key, first)


def _wave(shift: int, **kw) -> Simulation:
    """A wave along a doubly periodic ring of 8 x 2 grid cells under the linear
    reconstruction, moved by ``shift`` cells (exact binary geometry: every cell's weights
    alike)."""
    levels = 1.0 + 0.1 * np.sin(np.arange(8) * np.pi / 4)
    h = {"h": lambda x, y: levels[(np.floor(x).astype(int) + shift) % 8]}
    return Simulation(Grid(8, 2, 1.0, 0.5).mesh(), H=1.0, initial=h, layers=1, scheme="hll",
                      boundary={"west": Periodic("east"), "south": Periodic("north")},
                      reconstruction="linear", integrator="ssp-rk2", dt_mode="fixed",
                      dt=0.02, **kw)  # fmt: skip


def test_linear_reconstruction_across_the_pair_is_the_interior_one_bitwise():
    """The joined cells' least-squares weights and face offsets see the translation: they are
    every interior cell's bit for bit, and the wave moved by three cells (across the seam)
    runs moved by three cells, to round-off: the seam's edge keeps the mesh's orientation
    (cell 0 -> 7, normal -x, where the interior edges run west -> east), so its flux is
    evaluated mirrored, which equals the interior one up to rounding (with the limiter of
    docs/SCHEMES.md §19.2 the crest's discharge is 6.9e-20 on one side of the seam, 0 on the
    other)."""
    sim = _wave(0)
    lay = sim.layout
    for key in ("lsq_weight", "face_offset"):
        values = getattr(lay, key)
        assert np.array_equal(values, np.broadcast_to(values[0], values.shape)), key
    moved = _wave(3)
    sim.run(0.4)
    moved.run(0.4)
    W, Wm = sim.state().reshape(2, 8, 3), moved.state().reshape(2, 8, 3)
    assert np.ptp(W[:, :, 0]) > 0.05
    assert np.allclose(np.roll(Wm, 3, axis=1), W, rtol=0, atol=1e-15)


CASE = """
t_end = 1.0
layers = 1
scheme = "roe"
[mesh]
generator = "strip"
nx = 8
ny = 2
x1 = 8.0
[initial]
h = 1.0
qx = 0.4
[boundary]
wall = "wall"
"""


def test_case_file_periodic_pairs_reach_the_run_and_its_identity(tmp_path):
    """``west = {kind = "periodic", partner = "east"}`` joins the pair (a uniform flow stays
    bitwise uniform); the pair belongs to the run's identity and details; a bad key is one
    line naming it."""
    from fvswe import casefile, restart

    path = tmp_path / "case.toml"
    path.write_text(CASE + 'west = { kind = "periodic", partner = "east" }\n')
    spec = casefile.load(path)
    assert spec.boundary["west"] == Periodic("east")
    sim = spec.simulation(spec.load_mesh())
    assert (
        sim.periodic == [("west", "east")]
        and not sim.mesh.boundary[
            np.isin(sim.mesh.edge_tag, [sim.mesh.tags["west"], sim.mesh.tags["east"]])
        ].any()
    )
    W0 = sim.state().copy()
    sim.backend.advance(10.0, 10)
    assert np.array_equal(sim.state(), W0)
    assert restart.details(sim)["boundary"]["boundary.west"] == "periodic with 'east'"
    path.write_text(CASE + 'west = "open"\neast = "open"\n')
    plain = casefile.load(path)
    other = plain.simulation(plain.load_mesh())
    assert restart.mismatch(other.identity(), sim.identity()) is not None
    path.write_text(CASE + 'west = { kind = "periodic", partner = "east", every = 1.0 }\n')
    with pytest.raises(ConfigError, match=r"'boundary.west': a periodic boundary takes one key"):
        casefile.load(path)


def test_host_gpu_runs_the_periodic_strip_as_the_cpu_bitwise():
    """The host-run GPU kernels (block, in blocks of 32 cells: joined edges cross blocks)
    give the CPU's state bit for bit on the periodic dam break; a periodic Cartesian grid is
    not one the ``grid`` variant sees (its tiles cannot), so it runs the others and
    ``variant = "grid"`` is refused."""
    from test_cuda_sources import CXX, emulated_run

    from fvswe.backends.gpu.device import grid_arrays
    from fvswe.backends.gpu.tuning import resolve_variant

    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH")
    sim = dam_break({"south": Periodic("north")}, scheme="hll")
    sim.backend.advance(100.0, 30)
    W, ctrl = emulated_run(sim.layout, sim.scheme, "block", "lagged", 100.0, 30, cells=32)
    assert ctrl["t"] == sim.t and np.array_equal(W, sim.backend.get_state())
    grid = Grid(6, 3, dx=1.0, dy=1.0).mesh()
    assert grid_arrays(Simulation(grid, layers=1, H=1.0, initial={"h": 1.0}).layout)
    assert grid_arrays(uniform_channel(grid).layout) is None
    with pytest.raises(ConfigError, match="variant: 'grid' needs a Cartesian grid"):
        resolve_variant("grid", "hll", grid.n_cells, grid=False)


#: The linear reconstruction's settings (it needs a multi-stage integrator).
LINEAR = {"reconstruction": "linear", "integrator": "ssp-rk2"}


@pytest.mark.parametrize("variant", ["block", "gather"])
def test_host_gpu_runs_the_linear_periodic_strip_as_the_cpu_bitwise(variant):
    """Under the linear reconstruction the host-run GPU kernels (block: 32 cells a block,
    the joined edges crossing blocks) read the joined cells' weights and offsets as the CPU:
    state, time and steps bit for bit."""
    from host_runtime import HostRuntime
    from test_cuda_sources import CXX

    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH")
    options = {"variant": variant, "cells": 32, "runtime": HostRuntime()}
    cpu = periodic_strip_simulation(24, backend="cpu", **LINEAR)
    dev = periodic_strip_simulation(24, backend="gpu", backend_options=options, **LINEAR)
    for sim in (cpu, dev):
        sim.run(1e6, max_steps=12)
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps) and cpu.steps == 12
    assert np.array_equal(dev.state(), cpu.state())


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["edge", "gather", "slot", "block"])
@pytest.mark.parametrize("settings", [{}, LINEAR], ids=["constant", "linear"])
def test_gpu_runs_the_periodic_strip_as_the_cpu_bitwise(variant, settings):
    """On a GPU (float64: --fmad=false), every unstructured variant gives the CPU's periodic
    dam break bit for bit, under either reconstruction: state, time and steps."""
    from gpu_skip import skip_without_gpu

    skip_without_gpu()
    cpu = periodic_strip_simulation(24, backend="cpu", **settings)
    dev = periodic_strip_simulation(
        24, backend="gpu", backend_options={"variant": variant}, **settings
    )
    for sim in (cpu, dev):
        sim.run(2.0)
    assert dev.steps == cpu.steps and dev.t == cpu.t
    assert np.array_equal(dev.state(), cpu.state())


def test_cli_refuses_a_mismatched_pair_in_one_line_before_writing(tmp_path, capsys):
    """``fvswe run`` of a case whose periodic pair does not match: one line naming both tags
    and the first edge's position, a non-zero exit, no output folder."""
    from fvswe.cli import main

    path = tmp_path / "case.toml"
    path.write_text(CASE + 'west = { kind = "periodic", partner = "wall" }\neast = "wall"\n')
    capsys.readouterr()
    try:
        code = main(["run", str(path), "-o", str(tmp_path / "out"), "-q", "--backend", "cpu"])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1, err
    assert "periodic tags 'west' and 'wall' do not match: 2 edges against 16 (first of " in err
    assert "'west' at (0, 1.5))" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("settings", [{}, LINEAR], ids=["constant", "linear"])
def test_a_renumbered_periodic_run_is_the_same_bits(settings):
    """The joined edges survive a cell renumbering (``Mesh.permuted`` keeps each edge's two
    sides and its translation): RCM and Hilbert orders give the unordered run's state bit for
    bit, under either reconstruction."""
    ref = periodic_strip_simulation(24, **settings)
    ref.backend.advance(100.0, 20)
    for order in ("rcm", "hilbert"):
        sim = periodic_strip_simulation(24, order=order, **settings)
        sim.backend.advance(100.0, 20)
        assert np.array_equal(sim.state(), ref.state()), order


def test_sections_across_a_periodic_channel_count_the_discharge_once():
    """A section across the channel closed on itself (wall to wall: it leaves the joined
    mesh whole) counts the uniform discharge once with its sign, either way round; one along
    the channel once around the period (between the rows) counts the zero cross flow."""
    from fvswe.probes import Probes, Section

    sim = uniform_channel(rising_strip(8, 2), scheme="roe")
    lines = {"across": [(4.0, -1.0), (4.0, 3.0)], "back": [(4.2, 3.0), (3.8, -1.0)],
             "along": [(-1.0, 1.0), (9.0, 1.0)]}  # fmt: skip
    probes = Probes(sim, sections=[Section(k, tuple(v)) for k, v in lines.items()])
    assert [len(cut) for cut in probes.cut_edges] == [2, 2, 8]
    sim.run(2.0)
    probes.sample()
    across, back, along = probes.volume[-1, :, 0]
    assert across == pytest.approx(0.4 * 2.0 * sim.t, rel=1e-13) and back == -across
    assert along == 0.0


def test_a_section_across_a_periodic_strip_balances_the_side_it_fills():
    """The dam break on the strip periodic across: a section across it (running through the
    seam between the joined pairs) counts what the east side gained, to round-off."""
    from fvswe.probes import Probes, Section

    sim = periodic_strip_simulation(24)
    probes = Probes(sim, sections=[Section("dam", ((14.0, -1.0), (14.0, 5.0)))])
    east = probes.part_cells(0, right=True)
    assert np.all(sim.mesh.centroid[east, 0] > 14.0) and east.size == 10 * 2 * 4
    before = np.sum(sim.backend.get_state()[east, 0] * sim.mesh.area[east])
    sim.run(3.0)
    probes.sample()
    gained = np.sum(sim.backend.get_state()[east, 0] * sim.mesh.area[east]) - before
    assert gained > 0.5 and probes.volume[-1, 0, 0] == pytest.approx(gained, rel=1e-12)


@pytest.mark.parametrize(
    ("points", "message"),
    [
        (((0.0, -1.0), (0.0, 3.0)), "crosses a periodic seam at (0, 0.5); draw it off the seams"),
        (((8.2, 3.0), (7.8, -1.0)), "crosses a periodic seam at (8, 0.5); draw it off the seams"),
        (((0.1, 1.0), (4.0, -1.0)),
         "ends on a periodic seam near (0, 0.5), where the flow passes around it; run it from "
         "wall to wall or once around the period"),
        (((4.0, 1.0), (4.0, -1.0)), "the line must cross the mesh from boundary to boundary"),
    ],
)  # fmt: skip
def test_sections_on_a_periodic_seam_are_refused_in_one_line(points, message):
    """A section cutting a joined pair of cells (on either side of the seam), or ending on a
    seam (the flow passes around its end through the joined edges), is refused in one line
    naming the section and the place."""
    from fvswe.probes import Probes, Section

    sim = uniform_channel(rising_strip(8, 2))
    with pytest.raises(ConfigError) as err:
        Probes(sim, sections=[Section("s", points)])
    text = str(err.value)
    assert text.startswith("section 's': ") and message in text and "\n" not in text
