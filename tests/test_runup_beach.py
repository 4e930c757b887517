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


@pytest.fixture(scope="module")
def coarse():
    """fvswe on the 8 m and 4 m strips (1353 and 2705 cells), errors against the analytic."""
    return {dx: beach.errors(beach.run_fvswe(dx, "cpu", "float64")) for dx in (8.0, 4.0)}


@needs_data
def test_profiles_near_the_analytic_and_closer_on_the_finer_strip(coarse):
    """The surface at 160, 175, 220 s within 0.6 m RMS of the analytic solution on the 4 m strip
    (seen 0.23, 0.16, 0.38 m; the wave is 16 m high there, ANUGA DE0 on its 25 m mesh 0.20,
    0.37, 0.31 m), and each error smaller than on the 8 m strip."""
    fine, rough = coarse[4.0], coarse[8.0]
    for t in ("t160", "t175", "t220"):
        assert fine[t]["eta_rms"] < 0.6, t
        assert fine[t]["eta_rms"] < rough[t]["eta_rms"], t


@needs_data
def test_shoreline_and_runup(coarse):
    """The shoreline from 100 to 280 s within 60 m RMS on the 4 m strip (seen 49 m; a shoreline
    that never moved: 116 m) and closer than on the 8 m strip; the highest runup within 12 % of
    the analytic 16.4 m (seen 17.8 m)."""
    fine, rough = coarse[4.0]["shore"], coarse[8.0]["shore"]
    assert fine["rms"] < 60.0
    assert fine["rms"] < rough["rms"]
    assert abs(fine["runup"] - fine["runup_exact"]) < 0.12 * fine["runup_exact"]
