"""Benchmark 2 of the long-wave runup workshop, the Monai valley (benchmarks/monai.py,
docs/benchmarks.md): the incident-wave boundary, and the coarse mesh against the laboratory
record of gauges 5, 7 and 9 and the measured runup."""

from __future__ import annotations

import numpy as np
import pytest

from fvswe.boundary import Characteristic
from fvswe.cli.bench import load
from fvswe.mesh import read_mesh
from fvswe.mesh.generate import strip
from fvswe.probes import locate
from fvswe.simulation import Simulation

monai = load("monai.py")
FILES = ("Benchmark_2_Bathymetry.asc", "Benchmark_2_input.txt", "output_ch5-7-9.txt")
MISSING = [f for f in FILES if not (monai.DATA / f).is_file()]
needs_data = pytest.mark.skipif(
    bool(MISSING), reason=f"benchmark data {MISSING} not in {monai.DATA} (see its README.md)"
)
COARSE = monai.ROOT / "meshes" / "monai-0.2.npz"


def _pulse_run(far_field, depth=0.135, a=0.004, tau=0.4, t0=1.5, gauge=2.0):
    """A Gaussian pulse ``a exp(-((t - t0)/tau)^2)`` sent in at x = 0 of a 6 m flat channel
    through a characteristic boundary at level ``far_field(eta, depth)``, the far end
    non-reflecting: ``(t, eta)`` at ``gauge`` metres in."""
    t = np.linspace(0.0, 6.0, 601)
    eta = a * np.exp(-(((t - t0) / tau) ** 2))
    mesh = strip(600, 1, x0=0.0, x1=6.0)
    sim = Simulation(mesh, layers=1, scheme="hll-wd", H=depth, initial={"h": depth},
                     boundary={"west": Characteristic((t, far_field(eta, depth))),
                               "east": Characteristic(), "wall": "wall"})  # fmt: skip
    cell = locate(mesh, gauge, 0.5 * 6.0 / 600)
    times, values = [], []
    for s in np.arange(0.02, 5.0, 0.02):
        sim.run(s)
        times.append(sim.t)
        values.append(sim.fields()["eta"][cell])
    return np.array(times), np.array(values)


def test_far_field_level_lets_in_the_whole_incident_wave():
    """Through :func:`far_field_level` the pulse arrives 2 m in with its amplitude (a simple
    wave keeps its height) and at its characteristic speed ``3 sqrt(g (D + a)) - 2 sqrt(g D)``;
    a far field at the wave's own level lets in half of it."""
    a, depth, g = 0.004, 0.135, 9.81
    t, eta = _pulse_run(monai.far_field_level)
    speed = 3 * np.sqrt(g * (depth + a)) - 2 * np.sqrt(g * depth)
    assert abs(eta.max() - a) < 0.03 * a
    assert abs(t[np.argmax(eta)] - (1.5 + 2.0 / speed)) < 0.03
    _, half = _pulse_run(lambda e, d: e)
    assert abs(half.max() - a / 2) < 0.05 * a


def test_far_field_level_is_the_simple_waves_invariant():
    """The far field at rest at the level given carries the incoming invariant of the simple
    wave, ``u - 2c`` with ``u = 2 (c - c0)``; it is about twice the wave for small waves."""
    g, depth = 9.81, 0.135
    eta = np.array([-0.01, -1e-4, 0.0, 1e-4, 0.016])
    level = monai.far_field_level(eta, depth)
    c, c0 = np.sqrt(g * (depth + eta)), np.sqrt(g * depth)
    np.testing.assert_allclose(-2 * np.sqrt(g * (depth + level)), -(2 * (c - c0) + 2 * c),
                               rtol=1e-14)  # fmt: skip
    np.testing.assert_allclose(level[1:4], 2 * eta[1:4], atol=1e-7)


def test_site_runup_against_the_six_runs():
    """The runup at the three measured sites: the highest wet surface of each site's cell
    against the six runs' mean and range (site A: 8.0-10.0 cm, mean 8.96 cm); a site that
    never wetted has none, and is not within the range."""
    out = monai.site_runup(np.array([0.0945, 0.07, -np.inf]))
    assert out["A"]["in_range"] and abs(out["A"]["measured_mean"] - 0.08958) < 1e-5
    assert abs(out["A"]["rel_error"] - (0.0945 / 0.0895833 - 1)) < 1e-5
    assert not out["B"]["in_range"] and out["B"]["rel_error"] > 0.1  # above 6.75 cm
    assert out["C"] == {"max_surface": None, "measured_mean": pytest.approx(0.055833, abs=1e-6),
                        "rel_error": None, "in_range": False}  # fmt: skip


@pytest.fixture(scope="module")
def coarse():
    """The committed coarse mesh (offshore edges 0.2 m, 11 563 cells) for the whole 22.5 s."""
    mesh = read_mesh(COARSE)
    sim = monai.build(mesh)
    result = monai.run(sim, mesh)
    t_obs, obs = monai.measured_gauges()
    return result, monai.compare(result, t_obs, obs), sim


@needs_data
def test_gauges_crest_within_ten_percent_and_on_time(coarse):
    """The issue's thresholds: the highest surface at gauges 5, 7, 9 within 10 % of the record
    (seen: -4.3, +4.0, -2.0 %); the first crest's arrival within 0.15 s on this coarse mesh
    (seen: +0.10, +0.07, -0.10 s; on the 0.1 mesh +0.07, 0.00, -0.18 s: docs/benchmarks.md)."""
    _, gauges, _ = coarse
    for name, g in gauges.items():
        assert abs(g["max_rel_error"]) < 0.10, name
        assert abs(g["arrival_error_s"]) < 0.15, name


@needs_data
def test_gauge_5_trough_and_the_wave_rms(coarse):
    """Gauge 5's leading trough within 15 % (seen 10.2 %; gauges 7 and 9 stand in 3-6 mm of
    water, where the record's trough lies below the bed at gauge 7: docs/benchmarks.md), and at
    every gauge an RMS difference over the wave below 7 mm (seen 4.4-5.4 mm; no wave at all
    gives 16-17 mm)."""
    _, gauges, _ = coarse
    assert abs(gauges["5"]["min_rel_error"]) < 0.15
    for name, g in gauges.items():
        assert g["rms_m"] < 0.007, name


@needs_data
def test_runup_in_the_valley_within_ten_percent(coarse):
    """The highest wetted bed in the valley within 10 % of the six runs' mean at site A
    (8.96 cm; seen 8.33 cm), at the measured point (5.1575, 1.88) within 5 cm."""
    result, _, _ = coarse
    measured = np.mean(monai.RUNUP_MEASURED)
    assert abs(result["runup"] - measured) < 0.10 * measured
    assert np.hypot(result["runup_at"][0] - 5.1575, result["runup_at"][1] - 1.88) < 0.05


@needs_data
def test_runup_at_the_measured_site(coarse):
    """The runup as the experiment measured it: the highest surface of site A's cell
    (5.1575, 1.88; the bed there 8.87 cm) within the six runs' range, 8.0-10.0 cm, and 10 %
    of their mean, 8.96 cm (seen 9.17 cm, +2.3 %)."""
    result, _, _ = coarse
    site = result["site_runup"]["A"]
    assert site["in_range"] and abs(site["rel_error"]) < 0.10


@needs_data
def test_volume_balance_closes_with_the_inflow(coarse):
    """The tank's water changes only by what the offshore boundary let in (its counter)."""
    *_, sim = coarse
    summary = sim.run(sim.t)
    assert summary.mass_rel_drift[0] < 1e-12
    assert abs(summary.counters["level_inflow"]) > 1e-4  # the wave brought water in
