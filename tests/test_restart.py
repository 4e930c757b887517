"""Checkpoint and restart: a restarted run continues bit for bit; Ctrl-C leaves a checkpoint."""

from __future__ import annotations

import dataclasses
import os
import re
import signal

import numpy as np
import pytest
from meshio.xdmf import TimeSeriesReader

from fvswe import casefile, output, restart, runner
from fvswe.cases import get_case
from fvswe.cli import main
from fvswe.errors import ConfigError
from fvswe.mesh import write_mesh
from fvswe.mesh.generate import structured_square
from fvswe.simulation import Simulation


@pytest.fixture(scope="module")
def mesh():
    return structured_square(16)


@pytest.mark.parametrize(
    ("dt_mode", "dtype", "order"),
    [("lagged", "float64", "none"), ("nonlagged", "float32", "rcm"), ("lagged", "float32", "gps")],
)
def test_restart_from_a_checkpoint_file_is_bit_for_bit(tmp_path, mesh, dt_mode, dtype, order):
    """The library's own checkpoint: ``save_checkpoint(path, sim.snapshot())``, then
    ``restore(load_checkpoint(path))`` into a new Simulation of the same run."""
    spec = casefile.from_case("test2").with_overrides(
        backend="cpu", dt_mode=dt_mode, dtype=dtype, order=order
    )
    times = [0.3, 0.6, 0.9]
    whole = spec.simulation(mesh)
    runner.advance(whole, times)

    first = spec.simulation(mesh)
    saved = []
    runner.advance(
        first,
        times[:2],
        checkpoint_every=0.07,
        on_checkpoint=lambda s: (
            saved.append(s.t)
            or output.save_checkpoint(tmp_path / f"c{len(saved)}.npz", s.snapshot())
        ),
    )
    assert len(saved) >= 2 and any(t not in times for t in saved)  # also between outputs
    for k, t in enumerate(saved, start=1):
        again = spec.simulation(mesh)
        again.restore(output.load_checkpoint(tmp_path / f"c{k}.npz"))
        assert again.t == t
        runner.advance(again, times)
        assert again.steps == whole.steps and again.t == whole.t
        np.testing.assert_array_equal(again.state(), whole.state())
        assert again.backend.counters() == whole.backend.counters()
        assert again.mass_initial == whole.mass_initial


def test_a_snapshot_in_memory_continues_bit_for_bit(mesh):
    """``sim.snapshot()`` and ``other.restore(snap)``, no file: the run goes on bit for bit,
    with the snapshot's initial masses (a level boundary's inflow counters included)."""
    case = get_case("cgrid-tide").with_grid(8, 8)
    whole = case.simulation()
    whole.run(1800.0)  # a time a run stops at belongs to its trajectory (the last step is clipped)
    whole.run(3600.0)
    first = case.simulation()
    first.run(1800.0)
    snap = first.snapshot()
    first.run(2700.0)  # the snapshot does not move with the run it came from
    again = case.simulation(dtype="float64")
    again.restore(snap)
    assert (again.t, again.steps) == (snap["t"], snap["steps"]) and again.t == 1800.0
    again.run(3600.0)
    assert (again.t, again.steps) == (whole.t, whole.steps)
    np.testing.assert_array_equal(again.state(), whole.state())
    assert again.backend.counters() == whole.backend.counters()
    assert again.backend.counters()["level_inflow"] != 0
    assert again.mass_initial == whole.mass_initial and again.mass() == whole.mass()


def test_a_checkpoint_of_another_dtype_is_refused_naming_the_dtype(tmp_path, mesh):
    """eps_h derives from the dtype: the message named eps_h, not the dtype the user gave."""
    spec = casefile.from_case("test1").with_overrides(backend="cpu")
    other = spec.with_overrides(dtype="float32").simulation(mesh)
    output.save_checkpoint(tmp_path / "c.npz", other.snapshot())
    want = r"dtype: 'float32' in the checkpoint's run, 'float64' now$"
    with pytest.raises(ConfigError, match=want):
        spec.simulation(mesh).restore(output.load_checkpoint(tmp_path / "c.npz"))


def test_the_checkpoint_writer_removes_an_older_versions_temporaries(tmp_path, mesh):
    """Issue 34, item 12: fvswe before the ``.part-`` names wrote ``.checkpoint.npz.XXXXXXXX.npz``
    (mkstemp), and a run killed then left it for ever. Nothing else of the name goes: not a
    live ``.part-`` temporary, nor a name mkstemp never makes."""
    stale = [".checkpoint.npz.k2_x9q0a.npz", ".checkpoint.npz.abcdefgh.npz"]
    kept = [".checkpoint.npz.part-k2_x9q0a.npz", ".checkpoint.npz.notes.npz", ".c.npz.abcdefgh.npz"]
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"")
    sim = casefile.from_case("test1").with_overrides(backend="cpu").simulation(mesh)
    output.save_checkpoint(tmp_path / output.CHECKPOINT, sim.snapshot())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([output.CHECKPOINT, *kept])
    (tmp_path / ".summary.json.ab_cd123.json").write_bytes(b"")  # the next run's clean-up
    output.clean_stale(tmp_path)  # (under the folder's lock: .part- temporaries go too)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([output.CHECKPOINT, *kept[1:]])


def test_checkpoint_of_another_run_is_refused_naming_the_setting(tmp_path, mesh):
    spec = casefile.from_case("test1").with_overrides(backend="cpu")
    other = spec.with_overrides(scheme="roe").simulation(mesh)
    other.run(0.01)
    output.save_checkpoint(tmp_path / "c.npz", other.snapshot())
    sim = spec.simulation(mesh)
    before = sim.state()
    with pytest.raises(ConfigError) as err:
        sim.restore(output.load_checkpoint(tmp_path / "c.npz"))
    assert str(err.value) == (
        f"{tmp_path / 'c.npz'} was written by another run: "
        "scheme: 'roe' in the checkpoint's run, 'ir-roe' now"
    )
    assert sim.t == 0.0 and np.array_equal(sim.state(), before)  # nothing changed
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ConfigError, match="not a fvswe checkpoint"):
        output.load_checkpoint(tmp_path / "bad.npz")
    with pytest.raises(ConfigError, match=r"^--restart: x\.npz: no such checkpoint$"):
        output.load_checkpoint(tmp_path / "x.npz", "--restart: x.npz")


def test_checkpoint_of_another_arithmetic_is_refused(tmp_path, mesh):
    """Fast math changes float32 results, so it is part of the run identity: a restart must
    use the arithmetic of the run that wrote the checkpoint (and one written before the
    identity held it ran IEEE)."""
    sim = casefile.from_case("test1").with_overrides(backend="cpu").simulation(mesh)
    sim.run(0.01)
    ieee = sim.snapshot()
    assert ieee["identity"]["fast_math"] is False
    fast = {**ieee, "identity": {**ieee["identity"], "fast_math": True}}
    output.save_checkpoint(tmp_path / "c.npz", fast)
    with pytest.raises(ConfigError, match=r"fast_math: True in the checkpoint's run, False now"):
        sim.restore(output.load_checkpoint(tmp_path / "c.npz"))
    older = {k: v for k, v in ieee["identity"].items() if k != "fast_math"}
    output.save_checkpoint(tmp_path / "old.npz", {**ieee, "identity": older})
    sim.restore(output.load_checkpoint(tmp_path / "old.npz"))
    assert restart.IDENTITY_ADDED["fast_math"] is False  # the whole table: test_settings.py
    fast_now = {**sim.identity(), "fast_math": True}
    assert restart.mismatch(older, fast_now) == (
        "fast_math: False in the checkpoint's run, True now"
    )
    later = {**ieee["identity"], "limiter": "vk"}  # a key of a later fvswe
    assert restart.mismatch(later, sim.identity()) == (
        "limiter: 'vk' in the checkpoint's run, unknown to this fvswe"
    )
    rk3 = {**sim.identity(), "integrator": "ssp-rk3"}  # the integrator belongs to the run
    assert restart.mismatch(rk3, sim.identity()) == (
        "integrator: 'ssp-rk3' in the checkpoint's run, 'euler' now"
    )


def series(path):
    with TimeSeriesReader(path) as reader:
        reader.read_points_cells()
        return [reader.read_data(k) for k in range(reader.num_steps)]


def test_ctrl_c_writes_a_checkpoint_and_the_restart_matches_an_uninterrupted_run(
    tmp_path, mesh, monkeypatch, capsys
):
    write_mesh(mesh, tmp_path / "square.npz")
    common = ["test1", "--mesh", str(tmp_path / "square.npz"), "--t-end", "0.6",
              "--output-every", "0.2", "--backend", "cpu", "-q"]  # fmt: skip
    assert main(["run", *common, "-o", str(tmp_path / "whole")]) == 0

    save = output.save_checkpoint
    calls = []

    def save_then_interrupt(path, snap):
        """The first periodic checkpoint is followed by a Ctrl-C, as from the keyboard."""
        save(path, snap)
        calls.append(snap["t"])
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(output, "save_checkpoint", save_then_interrupt)
    out = tmp_path / "cut"
    capsys.readouterr()
    assert main(["run", *common, "-o", str(out), "--checkpoint-every", "0.15"]) == 130
    err = capsys.readouterr().err
    checkpoint = out / "checkpoint.npz"
    assert err.startswith("fvswe: interrupted at t = ") and err.count("\n") == 1
    assert f"checkpoint written to {checkpoint}; continue with --restart {checkpoint}" in err
    assert 0.15 <= calls[0] < 0.6 and not (out / "final.npz").exists()
    monkeypatch.setattr(output, "save_checkpoint", save)

    assert main(["run", *common, "-o", str(out), "--restart", str(checkpoint)]) == 0
    with np.load(tmp_path / "whole" / "final.npz") as a, np.load(out / "final.npz") as b:
        for key in a.files:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    whole, resumed = series(tmp_path / "whole" / "solution.xdmf"), series(out / "solution.xdmf")
    assert [s[0] for s in resumed] == [s[0] for s in whole]
    for (_, _, a), (_, _, b) in zip(whole, resumed, strict=True):
        for key in a:
            np.testing.assert_array_equal(a[key][0], b[key][0], err_msg=key)


def test_restart_with_different_settings_is_a_one_line_error(tmp_path, mesh, capsys):
    write_mesh(mesh, tmp_path / "square.npz")
    common = ["test1", "--mesh", str(tmp_path / "square.npz"), "--backend", "cpu", "-q"]
    out = tmp_path / "out"
    assert main(["run", *common, "-o", str(out), "--checkpoint-every", "0.02"]) == 0
    before = sorted(p.name for p in out.iterdir())
    assert main(["run", *common, "--scheme", "roe", "--restart", str(out / "checkpoint.npz")]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"fvswe: error: --restart: {out / 'checkpoint.npz'} was written by another run: "
        "scheme: 'ir-roe' in the checkpoint's run, 'roe' now\n"
    )
    assert sorted(p.name for p in out.iterdir()) == before


def test_a_run_recorded_before_its_identity_held_fast_math_restarts_in_place(tmp_path, mesh):
    """An output folder whose series and checkpoint name no fast_math (written before it was
    part of the identity) is an IEEE run: `fvswe run --restart` continues it in place."""
    import json

    import h5py

    write_mesh(mesh, tmp_path / "square.npz")
    common = ["test1", "--mesh", str(tmp_path / "square.npz"), "--t-end", "0.4",
              "--output-every", "0.2", "--backend", "cpu", "-q"]  # fmt: skip
    out = tmp_path / "out"
    assert main(["run", *common, "-o", str(out), "--checkpoint-every", "0.15"]) == 0
    checkpoint = out / "checkpoint.npz"
    with h5py.File(out / f"{output.SERIES}.h5", "r+") as f:
        ident = json.loads(f.attrs["identity"])
        assert ident.pop("fast_math") is False
        f.attrs["identity"] = json.dumps(ident, sort_keys=True)
    with np.load(checkpoint) as z:
        arrays = dict(z)
    meta = json.loads(str(arrays["meta"]))
    assert meta["identity"].pop("fast_math") is False
    np.savez(checkpoint, **{**arrays, "meta": json.dumps(meta)})
    assert main(["run", *common, "-o", str(out), "--restart", str(checkpoint)]) == 0


def test_checkpoint_of_a_run_with_other_source_terms_is_refused_naming_the_key(tmp_path, mesh):
    """Friction, interfacial friction, Coriolis and wind are part of a run's identity: a
    checkpoint restarts only a run with the same source terms, and the refusal names the
    key that differs with both values (an older checkpoint, without the readable values,
    names the fingerprint)."""
    from fvswe.forcing import Wind

    spec = casefile.from_case("test1").with_overrides(backend="cpu")

    def simulation(**change):
        return dataclasses.replace(spec, settings={**spec.settings, **change}).simulation(mesh)

    base = simulation(friction=("manning", 0.025))
    base.run(0.01)
    path = tmp_path / "c.npz"
    output.save_checkpoint(path, base.snapshot())
    same = simulation(friction=("manning", 0.025))
    same.restore(output.load_checkpoint(path))
    assert same.steps == base.steps
    changes = {
        "friction.coefficient: 0.025 in the checkpoint's run, 0.03 now":
            {"friction": ("manning", 0.03)},
        "friction.law: 'manning' in the checkpoint's run, 'chezy' now":
            {"friction": ("chezy", 40.0)},
        "friction.coefficient: 0.025 in the checkpoint's run, 'per cell, hash ":
            {"friction": ("manning", lambda x, y: 0.025 + 0.001 * (x > 0))},
        "friction.interfacial: None in the checkpoint's run, 0.001 now":
            {"friction": ("manning", 0.025), "interfacial_friction": 1e-3},
        "coriolis.f: None in the checkpoint's run, 0.0001 now":
            {"friction": ("manning", 0.025), "coriolis": 1e-4},
        "wind: None in the checkpoint's run, 'on' now":
            {"friction": ("manning", 0.025), "wind": Wind(speed=5.0, direction=270.0)},
    }  # fmt: skip
    snap = output.load_checkpoint(path)
    for message, change in changes.items():
        with pytest.raises(ConfigError) as err:
            simulation(**change).restore(snap)
        assert f"c.npz was written by another run: {message}" in str(err.value), message
    older = {k: v for k, v in snap.items() if k != "identity_details"}  # before they existed
    with pytest.raises(ConfigError, match=r"another run: forcing: '[0-9a-f]{16}' in the "):
        simulation(friction=("manning", 0.03)).restore(older)


def test_a_boundary_change_is_named_by_tag(tmp_path):
    """A changed boundary condition names the tag and both values (its kind, or its level)."""
    from fvswe.boundary import Level
    from fvswe.mesh.generate import strip

    mesh = strip(8, 1, x0=0.0, x1=8.0)
    case = dict(layers=1, scheme="hll-wd", H=1.0, initial={"h": 1.0})

    def simulation(west):
        return Simulation(mesh, boundary={"west": west, "east": "wall", "wall": "wall"}, **case)

    snap = simulation(Level(0.0, every=1.0, until=10.0)).snapshot()
    for west, message in (
        ("wall", "boundary.west: 'level' in the checkpoint's run, 'wall' now"),
        (Level(0.1, every=1.0, until=10.0), "boundary.west series: 0.0 in the checkpoint's "
         "run, 0.1 now"),
    ):  # fmt: skip
        with pytest.raises(ConfigError, match=re.escape(message)):
            simulation(west).restore(snap)


def test_a_restart_at_t_end_reports_no_step_and_no_infinite_speed(mesh):
    """Restarting a finished run takes no step: the summary says so, with no '0 s wall (inf M
    cell-steps/s)', and its speed is 0 (JSON has no infinity)."""
    import json

    sim = Simulation(mesh, layers=1, scheme="hll", H=1.0, initial={"h": 1.0}, backend="cpu")
    sim.run(0.01)
    again = Simulation(mesh, layers=1, scheme="hll", H=1.0, initial={"h": 1.0}, backend="cpu")
    again.restore(sim.snapshot())
    summary = again.run(0.01)
    text = runner.summary_text("c", again, summary)
    assert text.startswith("c: t = 0.01 s already, no step to take (cpu, float64, hll, ")
    assert "inf" not in text and summary.steps == 0
    json.dumps(summary.to_dict(), allow_nan=False)  # raises on inf or NaN


def _probe_records(out) -> dict:
    """The gauge and section files of ``out``: CSV text, and NetCDF variables when written;
    the maximum and arrival maps (maxima.h5's arrays, as bytes: NaN equal to NaN)."""
    import h5py

    records = {name: (out / name).read_text() for name in ("gauges.csv", "sections.csv")}
    with h5py.File(out / "maxima.h5", "r") as f:
        records.update({f"maxima.h5:{k}": f[k][()].tobytes() for k in f})
        records["maxima.h5:t"] = f.attrs["t"]
    if (out / "gauges.nc").exists():
        import netCDF4

        for name in ("gauges.nc", "sections.nc"):
            with netCDF4.Dataset(out / name) as ds:
                records.update({f"{name}:{k}": v[:].tolist() for k, v in ds.variables.items()})
    return records


def _probe_run(tmp_path, mesh, monkeypatch, edge_counts: bool = True) -> list[str]:
    """The arguments of a short test-1 run with a gauge and a section, sampled every 0.025 s,
    and maximum and arrival maps (no t_end, no folder), after its uninterrupted run to 0.3 s
    into ``tmp_path/whole``."""
    from fvswe.backends.cpu.pipeline import CpuBackend
    from fvswe.probes import Probes

    monkeypatch.setattr(CpuBackend, "counts_edges", edge_counts)
    monkeypatch.setattr(Probes, "plot", lambda self, path: open(path, "wb").close())  # speed
    write_mesh(mesh, tmp_path / "square.npz")
    common = ["test1", "--mesh", str(tmp_path / "square.npz"), "--output-every", "0.1",
              "--backend", "cpu", "-q", "--gauge", "1.0,0.5,g", "--section=0.3,-5,0.3,5",
              "--probe-every", "0.025", "--maxima", "--arrival-threshold", "0.001"]  # fmt: skip
    assert main(["run", *common, "--t-end", "0.3", "-o", str(tmp_path / "whole")]) == 0
    return common


@pytest.mark.parametrize("edge_counts", [True, False])
def test_gauges_and_sections_continue_bit_for_bit_across_two_ctrl_c_and_restarts(
    tmp_path, mesh, monkeypatch, capsys, edge_counts
):
    """Issue 32, items 2 and 4: a run interrupted twice and restarted twice leaves gauge and
    section records (CSV and NetCDF) and maximum and arrival maps equal, row for row and bit
    for bit, to the uninterrupted run's; with edge counts (the CPU's) and without (the GPU's:
    a side closed by walls)."""
    common = _probe_run(tmp_path, mesh, monkeypatch, edge_counts)
    whole = _probe_records(tmp_path / "whole")
    assert whole["gauges.csv"].count("\n") == 14 == whole["sections.csv"].count("\n")
    arrival = np.frombuffer(whole["maxima.h5:arrival_time"])
    assert 0 < np.count_nonzero(arrival > 0) < arrival.size  # some cells, not all, reached
    save, saves = output.save_checkpoint, []

    def save_then_interrupt(path, snap):
        """The first checkpoint of each of the first two runs is followed by a Ctrl-C (which
        writes the second)."""
        save(path, snap)
        saves.append(float(snap["t"]))
        if len(saves) in (1, 3):
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(output, "save_checkpoint", save_then_interrupt)
    out = tmp_path / "cut"
    cut = [*common, "--t-end", "0.3", "-o", str(out), "--checkpoint-every", "0.06"]
    assert main(["run", *cut]) == 130
    assert (out / "gauges.csv").is_file() and (out / "sections.csv").is_file()
    assert (out / "maxima.xdmf").is_file()  # written at the checkpoint and at the Ctrl-C
    restart = ["--restart", str(out / "checkpoint.npz")]
    assert main(["run", *cut, *restart]) == 130
    assert main(["run", *cut, *restart]) == 0
    assert saves[0] <= saves[1] < saves[2] <= saves[3] < 0.3, saves
    assert _probe_records(out) == whole
    capsys.readouterr()


def test_extending_a_finished_run_keeps_its_gauge_and_section_records(
    tmp_path, mesh, monkeypatch, capsys
):
    """Issue 32, item 2: a finished run to 0.1 s extended to 0.3 s by --restart keeps the
    records to 0.1 s: both equal the uninterrupted run's, bit for bit. A restart with another
    gauge is refused in one line before anything is written."""
    common = _probe_run(tmp_path, mesh, monkeypatch)
    short = ["-o", str(tmp_path / "short"), "--checkpoint-every", "0.05"]
    assert main(["run", *common, "--t-end", "0.1", *short]) == 0
    restart = ["--restart", str(tmp_path / "short" / "checkpoint.npz")]
    other = [a if a != "1.0,0.5,g" else "1.0,0.5,h" for a in common]  # another gauge
    capsys.readouterr()
    assert main(["run", *other, "--t-end", "0.3", *short, *restart]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its run recorded other gauges ([['g', 1.0, 0.5]]" in err
    assert main(["run", *common, "--t-end", "0.3", *short, *restart]) == 0
    assert _probe_records(tmp_path / "short") == _probe_records(tmp_path / "whole")
    capsys.readouterr()


def test_the_entropy_fix_belongs_to_the_run_identity(tmp_path, mesh, capsys):
    """Issue 32, item 12: a run with --no-entropy-fix (``entropy_fix = false``) restarted with
    the fix is refused in one line naming the key; a checkpoint recorded before the key
    joined the identity is one of a run with the fix; a scheme without a fix refuses it."""
    write_mesh(mesh, tmp_path / "square.npz")
    common = ["test2", "--mesh", str(tmp_path / "square.npz"), "--backend", "cpu", "-q",
              "--scheme", "roe", "--t-end", "0.02"]  # fmt: skip
    out = tmp_path / "out"
    assert (
        main(["run", *common, "--no-entropy-fix", "-o", str(out), "--checkpoint-every", "0.01"])
        == 0
    )
    capsys.readouterr()
    restart_ = ["--restart", str(out / "checkpoint.npz")]
    assert main(["run", *common, "-o", str(tmp_path / "b"), *restart_]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "entropy_fix: False in the checkpoint's run, True now" in err
    assert main(["run", *common, "--no-entropy-fix", "-o", str(tmp_path / "c"), *restart_]) == 0
    sim = casefile.from_case("test2").with_overrides(backend="cpu", scheme="roe").simulation(mesh)
    older = {k: v for k, v in sim.identity().items() if k != "entropy_fix"}
    assert restart.mismatch(older, sim.identity()) is None
    with pytest.raises(ConfigError, match="^entropy_fix: false, but scheme 'hll' has no entropy"):
        Simulation(mesh, layers=1, scheme="hll", backend="cpu", initial={"h": 1.0},
                   entropy_fix=False)  # fmt: skip


def test_a_compensated_float32_checkpoint_holds_the_remainders_bit_for_bit(tmp_path):
    """A compensated float32 run (docs/SCHEMES.md §2.7) keeps each depth's rounding
    remainder; its checkpoint holds them (``C``, one column per layer), so the restart
    continues bit for bit, and a restart without them would not: the remainders are part of
    the state. A checkpoint of the older remainders per component is refused in one line."""
    case = get_case("cgrid-tide").with_grid(8, 1)
    options = dict(backend="cpu", dtype="float32")
    whole = case.simulation(**options)
    whole.run(1800.0)  # a time a run stops at belongs to its trajectory
    whole.run(3600.0)
    first = case.simulation(**options)
    first.run(1800.0)
    output.save_checkpoint(tmp_path / "c.npz", first.snapshot())
    snap = output.load_checkpoint(tmp_path / "c.npz")
    assert snap["C"].dtype == np.float32 and np.count_nonzero(snap["C"]) > 0
    assert snap["C"].shape == (whole.mesh.n_cells, 1)  # the depths' only: one per layer
    again = case.simulation(**options)
    again.restore(snap)
    again.run(3600.0)
    assert (again.steps, again.t) == (whole.steps, whole.t)
    np.testing.assert_array_equal(again.backend.get_state(), whole.backend.get_state())
    np.testing.assert_array_equal(again.backend.remainders(), whole.backend.remainders())
    assert again.mass() == whole.mass()
    lost = case.simulation(**options)
    lost.restore({**snap, "C": np.zeros_like(snap["C"])})
    lost.run(3600.0)
    assert not np.array_equal(lost.backend.get_state(), whole.backend.get_state())
    older = {**snap, "C": np.zeros((whole.mesh.n_cells, 3), np.float32)}
    with pytest.raises(ConfigError, match=r"^.*c\.npz: state C holds a remainder per component "):
        case.simulation(**options).restore(older)
