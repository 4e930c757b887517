"""The first hour of a new user (issue 17): bathymetry conventions, flags that do what they
say, quiet pipes, comparable pictures, compile time apart, threads under load, the balance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import meshio
import numba
import numpy as np
import pytest

from fvswe import runner
from fvswe.backends import cpu
from fvswe.cli import main
from fvswe.errors import MeshError
from fvswe.mesh import read_mesh
from fvswe.mesh.generate import strip, structured_square
from fvswe.simulation import Simulation

REPO = Path(__file__).resolve().parents[1]


# -- bathymetry: stated, never guessed ----------------------------------------------------------
@pytest.fixture(scope="module")
def beach(tmp_path_factory):
    """A gmsh file whose z is the bed elevation of a beach: -4 m at x = -5 rising to +1 m."""
    base = structured_square(6)
    z = -4.0 + 0.5 * (base.nodes[:, 0] + 5.0)
    path = tmp_path_factory.mktemp("beach") / "beach.msh"
    points = np.column_stack([base.nodes, z])
    meshio.write(path, meshio.Mesh(points, [("triangle", base.cells)]), file_format="gmsh22")
    return path, z[base.cells].mean(axis=1)


def test_z_is_read_as_the_convention_says_and_never_guessed(beach):
    path, z_cell = beach
    with pytest.raises(MeshError, match=r"z coordinate is not zero.*--bathymetry .* z:elevation"):
        read_mesh(path)
    up = read_mesh(path, bathymetry="z:elevation").depth
    down = read_mesh(path, bathymetry="z:depth").depth
    np.testing.assert_allclose(up, -z_cell, rtol=0, atol=1e-12)  # H positive down = -elevation
    np.testing.assert_allclose(down, z_cell, rtol=0, atol=1e-12)
    assert up.max() > 3.5 and up.min() < 0  # deep water offshore, dry land (H < 0) inland
    assert read_mesh(path, bathymetry="none").depth is None


def test_a_named_field_needs_a_sign_and_bad_choices_are_one_line(tmp_path):
    base = structured_square(4)
    bed = np.linspace(-2.0, 3.0, base.n_nodes)
    path = tmp_path / "field.vtu"
    points = np.column_stack([base.nodes, np.zeros(base.n_nodes)])
    meshio.write(path, meshio.Mesh(points, [("triangle", base.cells)], point_data={"bed": bed}))
    with pytest.raises(MeshError, match="field 'bed' may be the bathymetry"):
        read_mesh(path)
    np.testing.assert_allclose(
        read_mesh(path, bathymetry="bed:elevation").depth, -bed[base.cells].mean(axis=1)
    )
    bad_choices = {
        "bed": "SOURCE:elevation",
        "bed:up": "SOURCE:elevation",
        "z:depth": "the z coordinate is zero",
        "h:depth": "no field 'h'",
    }
    for bad, message in bad_choices.items():
        with pytest.raises(MeshError, match=message) as err:
            read_mesh(path, bathymetry=bad)
        assert "\n" not in str(err.value)


def test_mesh_info_says_what_was_taken(capsys, beach):
    path, z_cell = beach
    assert main(["mesh", "info", str(path)]) == 2
    err = capsys.readouterr().err
    assert "--bathymetry" in err and len(err.strip().splitlines()) == 1
    assert main(["mesh", "info", str(path), "--bathymetry", "z:elevation", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["bathymetry"].startswith("z coordinate as bed elevation (positive up")
    assert info["depth_min"] == pytest.approx(-z_cell.max()) and info["depth_max"] > 3.5
    assert main(["mesh", "info", "square-4k", "--json"]) == 0  # the bundled mesh: flat, as before
    info = json.loads(capsys.readouterr().out)
    assert info["bathymetry"] == "none" and info["depth"] is False


def test_run_and_case_file_take_the_bathymetry(capsys, beach, tmp_path):
    path, z_cell = beach
    argv = ["run", "test1", "--mesh", str(path), "--backend", "cpu", "--t-end", "1e-3", "-q"]
    assert main(argv) == 2
    assert "--bathymetry" in capsys.readouterr().err
    out = tmp_path / "o"
    assert main([*argv, "--bathymetry", "z:elevation", "-o", str(out), "--json"]) == 0
    capsys.readouterr()
    assert np.array_equal(np.load(out / "final.npz")["H"], 6.0 + 0 * z_cell)  # test1 sets H
    case = tmp_path / "beach.toml"
    case.write_text(f't_end = 1e-3\nlayers = 1\nscheme = "hll-wd"\nbackend = "cpu"\n'
                    f'[mesh]\nfile = "{path}"\nbathymetry = "z:elevation"\n'
                    '[initial]\nh = "maximum(depth, 0)"\n')  # fmt: skip
    assert main(["run", str(case), "-o", str(tmp_path / "c"), "-q"]) == 0
    final = np.load(tmp_path / "c" / "final.npz")
    np.testing.assert_allclose(final["H"], -z_cell, atol=1e-12)  # no H given: the file's bed
    case.write_text('t_end = 1e-3\n[mesh]\nfamily = "square-4k"\nbathymetry = "z:depth"\n')
    assert main(["run", str(case), "-q"]) == 2
    assert "mesh.family takes no options" in capsys.readouterr().err


# -- flags that do what their help says ---------------------------------------------------------
def test_nx_keeps_t_end_and_the_courant_number(capsys):
    argv = ["run", "mjos-drop", "--nx", "16", "--backend", "cpu", "--json", "-q"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["t"] == 50.0  # the case's t_end, not 50 * 64 / 16
    assert report["steps"] == 1250  # dt 0.01 s * 64/16: the same Courant number


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith("fvswe 0.1.0 (numpy ")


def test_a_closed_pipe_ends_quietly():
    """``fvswe cases | head -0``: the reader is gone before fvswe writes; no traceback."""
    read, write = os.pipe()
    os.close(read)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "fvswe", "cases"], stdout=write,
                          stderr=subprocess.PIPE, env=env, timeout=120)  # fmt: skip
    os.close(write)
    assert done.returncode == 141 and done.stderr == b""


def test_bench_outside_a_checkout_says_so_in_one_line(capsys, monkeypatch, tmp_path):
    from fvswe.cli import bench

    monkeypatch.setattr(bench, "benchmarks_dir", lambda: tmp_path / "site-packages" / "benchmarks")
    assert main(["bench", "reorder", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "source checkout" in err and len(err.strip().splitlines()) == 1


# -- pictures a scientist compares --------------------------------------------------------------
def beach_sim() -> Simulation:
    """One layer on a beach: bed from 4 m deep to 4 m above the still water; a 0.5 m wave."""

    def h(x, y):
        return np.maximum(0.5 * (x < -3) - 0.8 * x, 0.0)

    return Simulation(structured_square(10), layers=1, scheme="hll-wd", backend="cpu",
                      dt_mode="nonlagged", H=lambda x, y: -0.8 * x, initial={"h": h})  # fmt: skip


def test_colour_limits_stay_fixed_over_a_series_and_ignore_dry_land(monkeypatch, tmp_path):
    from fvswe import plot

    seen = []
    real = plot.draw
    monkeypatch.setattr(plot, "draw", lambda *a, **k: seen.append(k) or real(*a, **k))
    sim = beach_sim()
    pictures = plot.Pictures(["eta", "u"], limits={"h": (0.0, 9.0)})
    pictures.draw(sim, tmp_path / "0.png")
    sim.run(0.5)
    pictures.draw(sim, tmp_path / "1.png")
    sim.run(1.0)
    pictures.draw(sim, tmp_path / "2.png")
    first, second, third = (k["limits"] for k in seen)
    eta = sim.fields()["eta"]
    assert first["eta"] == second["eta"] == third["eta"] == pytest.approx((0.0, 0.5))
    assert np.max(eta) >= 3.0  # the dry beach's "surface" is its ground; it sets no limit
    assert first["u"] == (0.0, 0.0) and second["u"][1] > 0  # at rest; then fixed from frame 1
    assert third["u"] == second["u"]
    dry = seen[-1]["dry"]["eta"]
    assert dry.sum() > 0 and np.all(sim.fields()["h"][dry] < sim.model.eps_h)


def test_velocity_limits_ignore_thin_cells():
    from fvswe.plot import colour_limits, grid_shape

    u = np.concatenate([np.linspace(-1.0, 1.0, 201), [900.0, -700.0, 800.0]])
    h = np.concatenate([np.full(201, 2.0), [1e-4, 1e-3, 0.05]])  # three cells thinner than 5 %
    lo, hi = colour_limits("u", u, h)
    assert lo == -hi and hi == pytest.approx(0.99, abs=1e-12)  # |u| of the thick cells: 0..1
    assert colour_limits("u", u)[1] > 1.0  # without thicknesses the outliers count
    assert [grid_shape(n, False) for n in (1, 3, 4, 5, 9)] == [(1, 1), (1, 3), (2, 2), (2, 3),
                                                                (3, 3)]  # fmt: skip


# -- compile time apart; threads ----------------------------------------------------------------
def test_warm_up_is_bitwise_neutral_and_kept_out_of_the_wall_time(monkeypatch):
    plain = beach_sim()
    plain.run(1.0)
    sim = beach_sim()
    calls = []
    advance = sim.backend.advance

    def slow_first(t_end, steps):  # as a first call that compiles for 0.3 s
        calls.append(steps)
        if len(calls) == 1:
            time.sleep(0.3)
        return advance(t_end, steps)

    monkeypatch.setattr(sim.backend, "advance", slow_first)
    started = time.perf_counter() - 0.5  # as a command that began 0.5 s earlier
    summary = runner.advance(sim, [1.0], started=started)
    assert np.array_equal(sim.state(), plain.state()) and sim.steps == plain.steps
    assert summary.steps == plain.steps and calls[:2] == [1, 1]
    assert 0.25 <= summary.compile_s <= 1.0 and summary.wall_s < summary.compile_s
    assert summary.to_dict()["compile_s"] == summary.compile_s
    # the time to the first step: the set-up before advance, then the compile
    assert summary.setup_s >= 0.5 + summary.compile_s
    assert summary.to_dict()["setup_s"] == summary.setup_s
    text = runner.summary_text("beach", sim, summary)
    assert f"{summary.setup_s:.3g} s to the first step" in text and "compiling" in text
    assert runner.advance(beach_sim(), [0.1]).setup_s is None  # untimed: not reported
    assert summary.cell_steps_per_s == pytest.approx(summary.cells * summary.steps / summary.wall_s)
    assert cpu.kernels_cached(sim.dtype, layers=1) is True  # compiled in this process by now
    assert cpu.kernels_cached("float16") is False  # never compiled, nor in Numba's cache


def test_a_cold_cache_is_announced_once(monkeypatch):
    said = []
    cold = lambda dtype, compensated=False, layers=2: dtype != "float64"  # noqa: E731
    monkeypatch.setattr(cpu, "kernels_cached", cold)
    runner.advance(beach_sim(), [0.1], say=said.append)
    assert len(said) == 1 and said[0].startswith("compiling the CPU kernels (once")
    monkeypatch.setattr(cpu, "kernels_cached", lambda dtype, compensated=False, layers=2: True)
    runner.advance(beach_sim(), [0.1], say=said.append)
    assert len(said) == 1


def test_thread_count_changes_no_bit():
    """Threads 1 and 2 (and the default choice) in a process that has two Numba threads."""
    code = (
        "import numpy as np, numba\n"
        "from fvswe.cases import get_case\n"
        "from fvswe.mesh import family\n"
        "states = []\n"
        "for threads in (1, 2, None):\n"
        "    sim = get_case('test2').simulation(mesh=family('square-4k'), backend='cpu',"
        " threads=threads, order='rcm')\n"
        "    sim.run(0.02)\n"
        "    states.append(sim.state())\n"
        "assert numba.config.NUMBA_NUM_THREADS == 2\n"
        "print(all(np.array_equal(states[0], s) for s in states[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "NUMBA_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_default_threads_are_the_idle_cores(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    idle = cpu.idle_cores(0.05)
    assert idle is not None and -0.01 <= idle <= cores + 0.01
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    for seen, expected in ((0.0, 1), (0.4, 1), (1.6, 2), (64.0, cores)):
        monkeypatch.setattr(cpu, "idle_cores", lambda s=seen: s)
        cpu.default_threads.cache_clear()
        assert cpu.default_threads() == min(expected, cores, numba.config.NUMBA_NUM_THREADS)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")  # the user's choice is taken as given
    cpu.default_threads.cache_clear()
    assert cpu.default_threads() == numba.config.NUMBA_NUM_THREADS
    cpu.default_threads.cache_clear()


# -- the summary: a balance and sentences -------------------------------------------------------
def test_mass_balance_names_open_boundaries_and_events_become_sentences():
    walls = beach_sim()
    text = runner.summary_text("beach", walls, runner.advance(walls, [0.5]))
    assert "unaccounted" in text and "open boundaries" not in text
    channel = Simulation(strip(20, 2), layers=1, scheme="hll-wd", backend="cpu", H=1.0,
                         initial={"h": 1.0, "qx": 0.5},
                         boundary={"east": "open", "west": "wall", "wall": "wall"})  # fmt: skip
    summary = runner.advance(channel, [0.5])
    (balance,) = runner.mass_balance(channel, summary)
    assert balance["open_boundaries"] and balance["rest"] < 0  # water left through the east
    assert balance["initial"] + balance["net_in"] + balance["rest"] == pytest.approx(
        balance["now"], rel=1e-14
    )
    assert "through the open boundaries" in runner.summary_text("channel", channel, summary)
    fake = SimpleNamespace(n_cells=100, n_edges=150, steps=10)
    said = runner.event_sentences(fake, {"clipped_cells": 120, "nonhyperbolic_edges": 1})
    assert said == ["12 % of cell updates clipped a negative depth to 0 (120 times)"]
