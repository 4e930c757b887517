"""Rusanov (docs/SCHEMES.md §6.1) against independent oracles.

Its NumPy reference is its own Numba kernel looped (fvswe/schemes/looped.py), so the
generic tests that compare the two prove nothing for it; these do: the textbook flux
written here, the lake at rest over a bump, and Stoker's exact dam break.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import schemes_helpers as h

from fvswe.backends.cpu import get_edge_flux
from fvswe.mesh.generate import structured_square
from fvswe.schemes import get_flux
from fvswe.schemes.looped import looped
from fvswe.simulation import Simulation

pytestmark = pytest.mark.filterwarnings("error")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "convergence.py"
_spec = importlib.util.spec_from_file_location("convergence", SCRIPT)
conv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conv)


def flat_bed_edges(seed: int, E: int = 3000):
    """Wet one-layer edges on a flat bed, sub- and supercritical, any normal."""
    rng = np.random.default_rng(seed)
    Wi = h.random_one_layer(rng, E, speed=4.0, hmin=0.05, hmax=4.0)
    Wj = h.random_one_layer(rng, E, speed=4.0, hmin=0.05, hmax=4.0)
    H = np.full(E, rng.uniform(-2.0, 5.0))
    return Wi, Wj, H, h.unit_normals(rng, E)


def textbook_rusanov(Wi, Wj, n, g=h.G):
    """``F = (F(Ui) + F(Uj))/2 - s/2 (Uj - Ui)``, ``s = max(|u.n| + sqrt(g h))`` of both sides
    [Toro, Riemann Solvers, 3rd ed., §10.5.1], with ``F(U) = F1 nx + F2 ny``; and ``s``."""
    speed = [np.abs((W[:, 1] * n[:, 0] + W[:, 2] * n[:, 1]) / W[:, 0]) + np.sqrt(g * W[:, 0])
             for W in (Wi, Wj)]  # fmt: skip
    s = np.maximum(*speed)
    Fi, Fj = h.physical_flux(Wi, n, g), h.physical_flux(Wj, n, g)
    return 0.5 * (Fi + Fj) - 0.5 * s[:, None] * (Wj - Wi), s


def test_flat_bed_edges_are_the_textbook_flux():
    """On a flat bed F- = F_R - F(Ui), F+ = F(Uj) - F_R (so F- + F+ = F(Uj) - F(Ui)), to the
    round-off of the Roe identity; ||D|| = s; no flags."""
    Wi, Wj, H, n = flat_bed_edges(31)
    Fm, Fp, d, flags = get_flux("rusanov", 1)(Wi, Wj, H, H, n, return_flags=True)
    FR, s = textbook_rusanov(Wi, Wj, n)
    Fi, Fj = h.physical_flux(Wi, n), h.physical_flux(Wj, n)
    scale = np.max([np.abs(F).max(axis=1) for F in (Fi, Fj, FR)], axis=0)[:, None]
    assert np.abs((Fm - (FR - Fi)) / scale).max() < 1e-13
    assert np.abs((Fp - (Fj - FR)) / scale).max() < 1e-13
    assert np.abs((Fm + Fp - (Fj - Fi)) / scale).max() < 1e-13
    assert np.abs(d - s).max() < 1e-14 * s.max() and np.all(flags == 0)
    un = [(W[:, 1] * n[:, 0] + W[:, 2] * n[:, 1]) / W[:, 0] for W in (Wi, Wj)]
    froude = [np.abs(u) / np.sqrt(h.G * W[:, 0]) for u, W in zip(un, (Wi, Wj), strict=True)]
    assert np.mean((froude[0] > 1) & (froude[1] > 1)) > 0.05  # supercritical edges drawn too


def test_reference_is_the_cpu_kernel_looped():
    """get_flux's reference is the CPU backend's kernel over the edges, bit for bit."""
    Wi, Wj, H, n = flat_bed_edges(32, 200)
    Hj = H + np.linspace(-0.5, 0.5, 200)
    a = get_flux("rusanov", 1)(Wi, Wj, H, Hj, n, return_flags=True)
    b = looped(get_edge_flux("rusanov", 1), 1)(Wi, Wj, H, Hj, n, return_flags=True)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_lake_at_rest_over_a_bump():
    """A flat surface over a Gaussian bump (wet everywhere) stays at rest to round-off for
    1000 steps: the viscosity acts on D(h - H), zero there (§7.3)."""
    mesh = structured_square(16)
    sim = Simulation(
        mesh, layers=1, scheme="rusanov",
        H=lambda x, y: 1.0 - 0.8 * np.exp(-(x**2 + y**2) / 2.0),
        initial={"h": lambda x, y: 1.0 - 0.8 * np.exp(-(x**2 + y**2) / 2.0)},
    )  # fmt: skip
    h0 = sim.fields()["h"]
    sim.backend.advance(1e9, 1000)
    f = sim.fields()
    assert sim.steps == 1000 and np.ptp(h0) > 0.7
    assert np.abs(f["h"] - h0).max() < 1e-13
    assert max(np.abs(f["qx"]).max(), np.abs(f["qy"]).max()) < 1e-13


def test_stoker_first_order_once_the_fan_is_open():
    """Stoker (fvswe.exact.dam_break, h_r = 0.1) from the exact solution at t0 = 1 s to 5 s:
    the L1 error falls at order >= 0.85 from 100 to 400 columns (measured 0.91, 0.95), and
    stays above HLL's (Rusanov's viscosity s dominates HLL's interpolation of |x|)."""
    rusanov = [conv.errors("rusanov", nx, 0.1, t0=1.0)["total"] for nx in (100, 200, 400)]
    hll = [conv.errors("hll", nx, 0.1, t0=1.0)["total"] for nx in (100, 200, 400)]
    assert np.all(conv.orders(rusanov) >= 0.85), conv.orders(rusanov)
    assert rusanov[-1] < 0.35
    assert np.all(np.array(rusanov) > 1.2 * np.array(hll)), (rusanov, hll)
