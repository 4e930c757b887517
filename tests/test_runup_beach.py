"""Benchmark 1 of the long-wave runup workshop, runup on a 1:10 beach (benchmarks/runup_beach.py,
docs/benchmarks.md): coarse strips against the analytic solution of Carrier, Wu & Yeh (2003)."""

from __future__ import annotations

import numpy as np
import pytest

from fvswe.cli.bench import load

beach = load("runup_beach.py")
FILES = ("initial_condition.txt", "t160.csv", "t175.csv", "t220.csv", "Shoreline.csv")
MISSING = [f for f in FILES if not (beach.DATA / f).is_file()]
needs_data = pytest.mark.skipif(
    bool(MISSING), reason=f"benchmark data {MISSING} not in {beach.DATA} (see its README.md)"
)


def test_strip_is_graded_and_covers_the_beach():
    """Cells of ``dx`` up to 500 m offshore, growing as sqrt(depth) beyond, no sliver at the
    far end; the strip is one row of quads from the land to 59.6 km."""
    for dx in (8.0, 1.0):
        e = beach.edges(dx)
        d = np.diff(e)
        assert e[0] == beach.X_LAND and e[-1] == beach.X_SEA
        assert np.allclose(d[e[:-1] < beach.X_FINE], dx)
        assert np.all(d[:-1] <= dx * np.sqrt(np.maximum(e[1:-1], beach.X_FINE) / beach.X_FINE)
                      + 1e-9)  # fmt: skip
        assert d[-1] >= d[-2]
    mesh = beach.strip(8.0)
    assert mesh.k == 4 and mesh.n_cells == beach.edges(8.0).size - 1


def test_analytic_solution_at_rest_and_quoted_values():
    """fvswe's own analytic solution (no data files): at t = 0 the initial wave at rest (to
    1e-4 m, linear interpolation between 4001 values of sigma; the wave is 8.8 m deep); later
    the shoreline and its velocity as the benchmark's Shoreline.csv gives them, to 2 mm and
    0.01 m/s (its rows at 160.72, 178.11 s and 216.13 s, the highest runup), and the
    highest runup 16.40 m."""
    sol = beach.analytic()
    x = np.linspace(50.0, 30000.0, 60)
    eta, u = sol.profile(x, 0.0, n=4001)
    assert np.abs(eta - beach.eta0(x)).max() < 1e-4 and np.abs(u).max() < 1e-12
    rows = np.array([[160.7200436, 163.0496, 7.089522], [178.1091121, 162.71995, -15.772163],
                     [216.1287595, -163.9979, -0.185974]])  # fmt: skip
    xs, us = sol.shoreline(rows[:, 0])
    assert np.abs(xs - rows[:, 1]).max() < 2e-3
    assert np.abs(us - rows[:, 2]).max() < 1e-2
    runup = -beach.SLOPE * beach.shoreline("analytic")[:, 1].min()
    assert abs(runup - 16.40) < 0.01


@needs_data
def test_analytic_solution_matches_the_benchmark_files():
    """Against the benchmark's files: the initial surface to 1e-6 m; the three profiles within
    0.07 m RMS and 0.05 m/s (seen 0.020, 0.030, 0.064 m; 0.007, 0.039, 0.023 m/s: the files'
    first points lie 0.6, 9.3 and 3.0 m landward of their own Shoreline.csv); the shoreline to
    2 mm and 0.06 m/s but for 172-174 s, where the file's time runs backwards (the solution
    folds at the deepest draw-down); the runup to 5 mm."""
    x, e = beach.initial_surface()
    assert np.abs(beach.eta0(x) - e).max() < 1e-6
    sol = beach.analytic()
    for t in beach.TIMES:
        d = beach.profile(t)
        eta, u = sol.profile(d[:, 0], t)
        assert np.sqrt(np.mean((eta - d[:, 1]) ** 2)) < 0.07, t
        assert np.sqrt(np.mean((u - d[:, 2]) ** 2)) < 0.05, t
    s = beach.shoreline()
    xs, us = sol.shoreline(s[:, 0])
    calm = (s[:, 0] < 172.0) | (s[:, 0] > 174.0)
    assert np.abs(xs - s[:, 1])[calm].max() < 2e-3
    assert np.abs(us - s[:, 2])[calm].max() < 0.06
    assert abs(beach.shoreline("analytic")[:, 1].min() - s[:, 1].min()) < 0.05


@pytest.fixture(scope="module")
def coarse():
    """fvswe on the 8 m strip (1353 cells, a few seconds), against fvswe's own analytic
    solution: no data files needed."""
    return beach.errors(beach.run_fvswe(8.0, "cpu", "float64"), "analytic")


def test_profiles_near_the_analytic(coarse):
    """The surface at 160, 175, 220 s within 0.6, 0.4, 0.75 m RMS of the analytic solution on
    the 8 m strip (seen 0.50, 0.33, 0.63 m; the wave is 16 m high there; ANUGA DE0 on its 25 m
    mesh 0.20, 0.37, 0.31 m)."""
    for t, bound in (("t160", 0.6), ("t175", 0.4), ("t220", 0.75)):
        assert coarse[t]["eta_rms"] < bound, t


def test_shoreline_and_runup(coarse):
    """The shoreline from 100 to 280 s within 80 m RMS on the 8 m strip (seen 72 m), well below
    a shoreline that never moved (116 m); the highest runup within 6 % of the analytic
    16.40 m (seen 17.2 m)."""
    s = beach.shoreline("analytic")
    window = (s[:, 0] >= beach.SHORE_T[0]) & (s[:, 0] <= beach.SHORE_T[1])
    still = np.sqrt(np.mean(s[window, 1] ** 2))
    assert coarse["shore"]["rms"] < 80.0 < 0.75 * still
    runup = coarse["shore"]
    assert abs(runup["runup"] - runup["runup_exact"]) < 0.06 * runup["runup_exact"]
