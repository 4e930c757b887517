"""Checkpoint and restart: a restarted run continues bit for bit; Ctrl-C leaves a checkpoint."""

from __future__ import annotations

import dataclasses
import os
import signal

import numpy as np
import pytest
from meshio.xdmf import TimeSeriesReader

from fvswe import casefile, output, runner
from fvswe.cli import main
from fvswe.errors import ConfigError
from fvswe.mesh import write_mesh
from fvswe.mesh.generate import structured_square


@pytest.fixture(scope="module")
def mesh():
    return structured_square(16)


def identity(sim) -> dict:
    return {"cells": sim.mesh.n_cells, "mesh": output.mesh_fingerprint(sim.mesh)}


@pytest.mark.parametrize(
    ("dt_mode", "dtype", "order"),
    [("lagged", "float64", "none"), ("nonlagged", "float32", "rcm"), ("lagged", "float32", "gps")],
)
def test_restart_from_a_checkpoint_file_is_bit_for_bit(tmp_path, mesh, dt_mode, dtype, order):
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
            or output.save_checkpoint(tmp_path / f"c{len(saved)}.npz", s, identity(s))
        ),
    )
    assert len(saved) >= 2 and any(t not in times for t in saved)  # also between outputs
    for k, t in enumerate(saved, start=1):
        again = spec.simulation(mesh)
        snap = output.load_checkpoint(tmp_path / f"c{k}.npz", again, identity(again))
        output.restore_checkpoint(again, snap)
        assert again.t == t
        runner.advance(again, times)
        assert again.steps == whole.steps and again.t == whole.t
        np.testing.assert_array_equal(again.state(), whole.state())
        assert again.backend.counters() == whole.backend.counters()
        assert again.mass_initial == whole.mass_initial


def test_checkpoint_of_another_run_is_refused(tmp_path, mesh):
    spec = casefile.from_case("test1").with_overrides(backend="cpu")
    sim = spec.simulation(mesh)
    sim.run(0.01)
    output.save_checkpoint(tmp_path / "c.npz", sim, {**identity(sim), "scheme": "roe"})
    with pytest.raises(Exception, match=r"c\.npz was written by a run with scheme = 'roe'"):
        output.load_checkpoint(tmp_path / "c.npz", sim, {**identity(sim), "scheme": "ir-roe"})
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(Exception, match="not a fvswe checkpoint"):
        output.load_checkpoint(tmp_path / "bad.npz", sim, identity(sim))


def test_checkpoint_of_another_arithmetic_is_refused(tmp_path, mesh):
    """Fast math changes float32 results, so `fvswe run`'s checkpoint identity holds it: a
    restart must use the arithmetic of the run that wrote the checkpoint (and one written
    before the identity held it ran IEEE)."""
    from fvswe.cli.run import _identity

    spec = casefile.from_case("test1").with_overrides(backend="cpu")
    sim = spec.simulation(mesh)
    sim.run(0.01)
    ieee, fast = _identity(spec, sim), _identity(spec.with_overrides(fast_math=True), sim)
    assert (ieee["fast_math"], fast["fast_math"]) == (False, True)
    output.save_checkpoint(tmp_path / "c.npz", sim, fast)
    with pytest.raises(ConfigError, match=r"with fast_math = True, this run has False"):
        output.load_checkpoint(tmp_path / "c.npz", sim, ieee)
    assert output.load_checkpoint(tmp_path / "c.npz", sim, fast)["t"] == sim.t
    older = {k: v for k, v in ieee.items() if k != "fast_math"}
    output.save_checkpoint(tmp_path / "old.npz", sim, older)
    assert output.load_checkpoint(tmp_path / "old.npz", sim, ieee)["t"] == sim.t
    with pytest.raises(ConfigError, match=r"with fast_math = False, this run has True"):
        output.load_checkpoint(tmp_path / "old.npz", sim, fast)


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

    def save_then_interrupt(path, sim, ident):
        """The first periodic checkpoint is followed by a Ctrl-C, as from the keyboard."""
        save(path, sim, ident)
        calls.append(sim.t)
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
    assert "scheme = 'ir-roe', this run has 'roe'" in err and err.count("\n") == 1
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


def test_checkpoint_of_a_run_with_other_source_terms_is_refused(tmp_path, mesh):
    """Friction, interfacial friction, Coriolis and wind are part of a run's identity: a
    checkpoint restarts only a run with the same source terms (the CLI checks them too)."""
    from fvswe.cli.run import _identity
    from fvswe.forcing import Wind

    spec = casefile.from_case("test1").with_overrides(backend="cpu")
    base = spec.simulation(mesh)
    assert "forcing" in _identity(spec, base)
    base.run(0.01)
    path = tmp_path / "c.npz"
    output.save_checkpoint(path, base, {"forcing": output.forcing_fingerprint(base)})
    same = spec.simulation(mesh)
    snap = output.load_checkpoint(path, same, {"forcing": output.forcing_fingerprint(same)})
    assert snap["steps"] == base.steps
    for change in ({"friction": ("manning", 0.02)}, {"interfacial_friction": 1e-3},
                   {"coriolis": 1e-4}, {"wind": Wind(speed=5.0, direction=270.0)}):  # fmt: skip
        sim = dataclasses.replace(spec, settings={**spec.settings, **change}).simulation(mesh)
        with pytest.raises(ConfigError, match=r"c\.npz was written by a run with forcing = "):
            output.load_checkpoint(path, sim, {"forcing": output.forcing_fingerprint(sim)})
