"""Thacker's planar surface in a paraboloid (benchmarks/thacker.py, issue 27): on a coarse
Delaunay mesh, fvswe's linear reconstruction (SSP-RK2) against first order (forward Euler),
``hll-wd``, against the exact solution; no ANUGA here (the benchmark runs it)."""

from __future__ import annotations

import numpy as np
import pytest

from fvswe.cli.bench import load

thacker = load("thacker.py")
CELLS = 600


@pytest.fixture(scope="module")
def runs():
    return {rec: thacker.run_fvswe(CELLS, rec) for rec in ("constant", "linear")}


def test_exact_solution_is_a_rotating_plane():
    """The exact depth is the plane over the bed where wet, its shoreline a circle of the
    basin, and the water volume the same at every time (sampled on a fine grid)."""
    x, y = np.meshgrid(np.linspace(-2, 2, 801), np.linspace(-2, 2, 801))
    volumes = [thacker.exact(x, y, t)[0].sum() for t in (0.0, *thacker.TIMES)]
    assert np.ptp(volumes) < 1e-3 * volumes[0]
    h, u, v = thacker.exact(x, y, thacker.TIMES[0])
    assert h.min() == 0.0 and np.all(u[h == 0] == 0) and np.all(v[h == 0] == 0)
    assert np.allclose(np.hypot(u, v)[h > 0], thacker.ETA * thacker.OMEGA)


def test_linear_beats_first_order(runs):
    """The L1 depth error of the linear reconstruction at most 0.6 of first order's at a
    quarter and a half period (seen about 0.4 and 0.27 on 1000 cells), and the speed's too."""
    const, lin = runs["constant"]["errors"], runs["linear"]["errors"]
    for t in ("t1", "t2"):
        assert lin[t]["h_l1"] < 0.6 * const[t]["h_l1"], t
        assert lin[t]["vel_l1"] < 0.75 * const[t]["vel_l1"], t


def test_depths_non_negative_and_mass_to_round_off(runs):
    """No depth below 0 after any step, and the mass to 1e-13 relative, both reconstructions."""
    for r in runs.values():
        assert r["min_depth"] >= 0.0, r["code"]
        assert r["mass_rel_drift"] < 1e-13, r["code"]
