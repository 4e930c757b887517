"""The slide-tsunami application (scripts/run_slide_tsunami.py, examples/slide_tsunami.toml)
and the denormal films its wetting front leaves (docs/SCHEMES.md §5.1)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_cuda_sources import CXX, host_flux
from test_strait import ROOT, _script

from fvswe import registry
from fvswe.backends.cpu import get_edge_flux
from fvswe.cli import main
from fvswe.schemes import get_flux

slide = _script("run_slide_tsunami")
G = 9.81


@pytest.fixture(scope="module")
def coarse():
    """The script's default run: 80 cells across (50 m, 13 440 cells), sampled every 5 s to
    300 s (at 100 m cells PVM-IFCP clips the slide's front at 47 s)."""
    sim = slide.build(80)
    return sim, slide.run(sim, 300.0, 5.0)


def test_each_layer_is_conserved_and_nothing_is_clipped(coarse):
    sim, res = coarse
    mass = res["mass"]
    assert np.all(np.abs(mass - mass[0]) <= 1e-12 * mass[0])
    assert sim.backend.counters()["clipped_cells"] == 0


def test_the_slide_accelerates_downslope(coarse):
    """The slide's centre of mass starts at rest and gains speed down the slope."""
    _, res = coarse
    c = res["centre"]  # every 5 s
    assert abs(c[0] - slide.X0) < 1.0
    steps = np.diff(c[:5])
    assert np.all(np.diff(steps) > 0) and steps[0] > 0
    assert c[-1] > slide.X0 + 1000.0


def test_dipole_trough_over_the_start_crest_ahead_of_the_front(coarse):
    """At 10 s the surface dips above the slide's starting place and rises ahead of its front."""
    _, res = coarse
    x, eta = res["x"], res["eta1"][2]
    assert res["t"][2] == 10.0
    trough, crest = x[np.nanargmin(eta)], x[np.nanargmax(eta)]
    assert slide.X0 - slide.R0 < trough < slide.X0 < slide.X0 + slide.R0 < crest
    assert np.nanmin(eta) < -1.0 and np.nanmax(eta) > 0.5


def test_leading_wave_travels_at_the_long_wave_speed(coarse):
    """The offshore gauge sees an elevation first, arriving within 20 % of the travel time at
    sqrt(g H) from the slide's initial front; the shore gauge sees a depression first."""
    _, res = coarse
    t = res["t"]
    expected = slide.travel_time(slide.X0 + slide.R0, slide.GAUGES["offshore"])
    arrived = slide.arrival(t, res["offshore"])
    assert abs(arrived / expected - 1) < 0.2, (arrived, expected)
    for gauge, sign in (("offshore", 1), ("shore", -1)):
        eta = res[gauge]
        first = eta[np.argmax(np.abs(eta) > 0.05)]
        assert np.sign(first) == sign


def test_the_wave_runs_up_the_beach(coarse):
    """The run-up wets land above the initial shoreline (the upper layer spreads onto dry
    cells), the land above the run-up staying dry bit for bit. (The drawdown does not dry
    a wet cell at this resolution: the shoreline's cell is 0.6 m deep, the drawdown 1 m at
    the 1.9 m deep gauge.)"""
    sim, res = coarse
    assert res["runup"].max() > 0.0 > res["runup"][0]
    assert res["flooded"].max() > 10
    f = sim.fields()
    assert np.all(sim.state()[-f["H"] > res["runup"].max()] == 0.0)


@pytest.mark.parametrize("scheme", registry.names(2))
def test_denormal_films_beside_dry_cells_give_finite_fluxes(scheme):
    """A wetting front leaves upper-layer films of 1e-323 m; PVM-IFCP's eigenvalues (also the
    thin-edge fallback of Roe and IR-Roe) took 1/(h1 + h2) = inf there and the run ended in
    NaN. All schemes now give finite fluxes, Numba and the CUDA sources (on the host) equal to
    the NumPy reference bit for bit."""
    films = np.array([0.0, 5e-324, 9e-323, 1e-310, 3e-308, 1e-300])
    hi, hj = (a.ravel() for a in np.meshgrid(films, films))
    E = len(hi)
    Wi, Wj = np.zeros((E, 6)), np.zeros((E, 6))
    Wi[:, 0], Wj[:, 0] = hi, hj
    Wi[:, 1], Wj[:, 1] = -hi, 2 * hj  # some momentum in the films
    H = np.full(E, -0.625)  # land: both cells on the same bed above the sea
    n = np.tile([1.0, 0.0], (E, 1))
    edges = (Wi, Wj, H, H, n)
    with np.errstate(all="ignore"):  # the reference evaluates the branches it discards
        ref = get_flux(scheme, 2)(*edges, G, 0.5, 1.0, True)
    assert all(np.all(np.isfinite(a)) for a in ref)
    kernel = get_edge_flux(scheme, 2)
    for e in range(E):
        fm, fp, de, fl = kernel(tuple(Wi[e]), tuple(Wj[e]), H[e], H[e], 1.0, 0.0, G, 0.5, 1.0)
        assert np.array_equal(fm, ref[0][e]) and np.array_equal(fp, ref[1][e])
        assert de == ref[2][e] and fl == ref[3][e]
    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH for the CUDA sources")
    for a, b in zip(host_flux("double", scheme, 2, edges, G, 0.5, 1.0), ref, strict=True):
        assert np.array_equal(a, b)


def test_case_file_runs_through_the_cli(tmp_path, capsys):
    """examples/slide_tsunami.toml runs with ``fvswe run`` (6720 triangles), each layer's
    volume conserved, nothing clipped, and its offshore gauge sees the leading wave at the
    script's sqrt(g H) travel time."""
    out = tmp_path / "out"
    rc = main(["run", str(ROOT / "examples" / "slide_tsunami.toml"), "-o", str(out),
               "--t-end", "90"])  # fmt: skip
    assert rc == 0, capsys.readouterr()
    summary = json.loads((out / "summary.json").read_text())
    assert max(summary["mass_rel_drift"]) <= 1e-12 and summary["clipped_cells"] == 0
    rows = np.genfromtxt(out / "gauges.csv", delimiter=",", names=True, dtype=None)
    offshore = rows[rows["gauge"] == "offshore"]
    assert offshore["t"][-1] == 90.0 and offshore["eta1"].max() > 0.2
    expected = slide.travel_time(slide.X0 + slide.R0, slide.GAUGES["offshore"])
    arrived = slide.arrival(offshore["t"], offshore["eta1"])
    assert abs(arrived / expected - 1) < 0.2, (arrived, expected)
