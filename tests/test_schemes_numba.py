"""Numba per-edge kernels (fvswe.physics) against the NumPy reference (fvswe.schemes)."""

from __future__ import annotations

import numpy as np
import pytest
import schemes_helpers as h
from numba import njit

from fvswe import registry
from fvswe.backends.cpu import get_edge_flux
from fvswe.errors import ConfigError
from fvswe.physics import common as ncommon
from fvswe.physics import constants
from fvswe.schemes import common, get_flux

pytestmark = pytest.mark.filterwarnings("error")  # the special-case edges raise no warnings

SCHEMES = [(layers, name) for name, layers in registry.distinct_kernels()]
TOL = 1e-12


@njit
def drive2(kernel, Wi, Wj, Hi, Hj, n, g, r, eps_h, Fm, Fp, d, flags):
    """Run a two-layer kernel over every edge (row) of the input arrays."""
    for e in range(Wi.shape[0]):
        a, b, dm, f = kernel(
            (Wi[e, 0], Wi[e, 1], Wi[e, 2], Wi[e, 3], Wi[e, 4], Wi[e, 5]),
            (Wj[e, 0], Wj[e, 1], Wj[e, 2], Wj[e, 3], Wj[e, 4], Wj[e, 5]),
            Hi[e], Hj[e], n[e, 0], n[e, 1], g, r, eps_h,
        )  # fmt: skip
        for k in range(6):
            Fm[e, k] = a[k]
            Fp[e, k] = b[k]
        d[e] = dm
        flags[e] = f


@njit
def drive1(kernel, Wi, Wj, Hi, Hj, n, g, r, eps_h, Fm, Fp, d, flags):
    """Run a one-layer kernel over every edge (row) of the input arrays."""
    for e in range(Wi.shape[0]):
        a, b, dm, f = kernel(
            (Wi[e, 0], Wi[e, 1], Wi[e, 2]), (Wj[e, 0], Wj[e, 1], Wj[e, 2]),
            Hi[e], Hj[e], n[e, 0], n[e, 1], g, r, eps_h,
        )  # fmt: skip
        for k in range(3):
            Fm[e, k] = a[k]
            Fp[e, k] = b[k]
        d[e] = dm
        flags[e] = f


def run_numba(name, layers, Wi, Wj, Hi, Hj, n, r, g=h.G, eps_h=5e-3):
    E, nv = Wi.shape
    Fm, Fp = np.empty((E, nv)), np.empty((E, nv))
    d, flags = np.empty(E), np.empty(E, dtype=np.int64)
    drive = drive2 if layers == 2 else drive1
    drive(get_edge_flux(name, layers), Wi, Wj, Hi, Hj, n, g, r, eps_h, Fm, Fp, d, flags)
    return Fm, Fp, d, flags


def edge_set(layers, r):
    """Hyperbolic random edges plus the special cases: lake at rest, walls, open
    boundaries, thin and dry layers, near-double and complex internal pairs, internal
    gaps swept to 0 for both signs, transonic waves (entropy fix)."""
    rng = np.random.default_rng(21)
    parts = [h.hyperbolic_edges(22, r, layers, E=1500), h.transonic_edges(26, r, layers)]
    parts.append(h.lake_at_rest(rng, 100, layers, exact=False))
    W = h.random_two_layer(rng, 300) if layers == 2 else h.random_one_layer(rng, 300)
    Hb = rng.uniform(4.0, 6.0, 300)
    nb = h.unit_normals(rng, 300)
    parts.append((W, common.wall_ghost(W, nb), Hb, Hb, nb))
    parts.append((W, common.open_ghost(W), Hb, Hb, nb))
    thin = [W.copy(), W[::-1].copy()]
    thin[0][:, :3] *= np.where(np.arange(300) % 3 == 0, 0.0, 1e-4)[:, None]
    thin[1][:, :3] *= 3e-3
    parts.append((thin[0], thin[1], Hb, Hb[::-1].copy(), nb))
    if layers == 2:
        for shift in (-2.0, 0.7):
            parts.append(h.near_double_internal_root(r, shift))
        parts += [h.gap_sweep_edges(r, side) for side in (-1, 0, 1)]
        Wi, Wj, Hi, Hj, n = h.near_double_internal_root(r, 0.3)
        Wi[:, 1:3] *= 2.0
        Wj[:, 1:3] *= 2.0
        parts.append((Wi, Wj, Hi, Hj, n))
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))


def agree(a, b, tol):
    """Per edge ||a - b||_inf <= tol ||b||_inf (exact where b is 0); returns the max ratio."""
    diff = np.abs(a - b).max(axis=1)
    scale = np.abs(b).max(axis=1)
    assert np.all(diff <= tol * scale)
    return float((diff / np.where(scale > 0, scale, 1.0)).max())


@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize(("layers", "name"), SCHEMES)
def test_numba_matches_reference(layers, name, r):
    """Every Numba kernel equals its NumPy reference to 1e-12 relative, flags identical."""
    Wi, Wj, Hi, Hj, n = edge_set(layers, r)
    ref = get_flux(name, layers)(Wi, Wj, Hi, Hj, n, r=r, return_flags=True)
    Fm, Fp, d, flags = run_numba(name, layers, Wi, Wj, Hi, Hj, n, r)
    agree(Fm, ref[0], TOL)
    agree(Fp, ref[1], TOL)
    agree(d[:, None], ref[2][:, None], TOL)
    assert np.array_equal(flags, ref[3])
    if layers == 2 and name != "pvm-ifcp":  # the special cases are really exercised
        flags_checked = (constants.FLAG_NONHYPERBOLIC, constants.FLAG_NEAR_COINCIDENT,
                         constants.FLAG_THIN)  # fmt: skip
        for bit in flags_checked:
            assert np.count_nonzero(flags & bit) >= 30
    assert np.abs(ref[0]).max() > 1.0


@pytest.mark.parametrize(("layers", "name"), SCHEMES)
def test_float32_inputs(layers, name):
    """float32 inputs: the kernels promote to float64, so they equal the reference on the
    rounded inputs to 1e-12, and the float64 result to ~1e-5 relative."""
    r = 0.98
    Wi, Wj, Hi, Hj, n = h.hyperbolic_edges(23, r, layers, E=1000)
    f32 = [a.astype(np.float32) for a in (Wi, Wj, Hi, Hj, n)]
    Fm, Fp, d, flags = run_numba(name, layers, *f32, r)
    ref32 = get_flux(name, layers)(*f32, r=r, return_flags=True)
    agree(Fm, ref32[0], TOL)
    agree(Fp, ref32[1], TOL)
    assert np.array_equal(flags, ref32[3])
    ref64 = get_flux(name, layers)(Wi, Wj, Hi, Hj, n, r=r)
    scale = np.abs(h.total_fluctuation(Wi, Wj, Hi, Hj, n, r=r)).max(axis=1) + np.abs(ref64[0]).max(
        axis=1
    )
    err = np.abs(Fm - ref64[0]).max(axis=1) / scale
    assert err.max() < 1e-5
    assert err.max() > 1e-10  # the inputs really were rounded
    assert np.abs(d - ref64[2]).max() < 1e-5 * ref64[2].max()


def test_wall_ghost_kernels():
    rng = np.random.default_rng(24)
    W = h.random_two_layer(rng, 50)
    n = h.unit_normals(rng, 50)
    ref = common.wall_ghost(W, n)
    for e in range(50):
        assert ncommon.wall_ghost(tuple(W[e]), n[e, 0], n[e, 1]) == tuple(ref[e])


def test_eig4_kernel_matches_reference():
    rng = np.random.default_rng(25)
    c1 = h.G * rng.uniform(0.4, 4.5, 500)
    c2 = h.G * rng.uniform(0.4, 4.5, 500)
    u1 = rng.normal(0.0, 2.0, 500)
    u2 = u1 + rng.normal(0.0, 1.0, 500)
    ref = np.stack(common.eig4(u1, u2, c1, c2, 0.9), axis=1)
    mine = np.array([ncommon.eig4(*a, 0.9) for a in zip(u1, u2, c1, c2, strict=True)])
    assert np.array_equal(mine, ref)


def test_split_weights_kernel():
    for x in (-2.0, -0.0, 0.0, 1e-300, 3.0):
        assert ncommon.s_minus(x) == common.s_minus(np.array([x]))[0]


def test_registry():
    assert get_edge_flux("pvm-ifcp", 1) is get_edge_flux("hll", 1)
    with pytest.raises(ConfigError, match="choose from"):
        get_edge_flux("hll", 2)
