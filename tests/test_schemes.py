"""NumPy reference fluxes against docs/SCHEMES.md §10.1 item 1 and the identities of §3–§7."""

from __future__ import annotations

import numpy as np
import pytest
import schemes_helpers as h

from fvswe import registry
from fvswe.errors import ConfigError
from fvswe.physics import constants
from fvswe.schemes import common, get_flux, hll, pvm_ifcp, reference, roe

pytestmark = pytest.mark.filterwarnings("error")

TWO = [name for name, _ in registry.distinct_kernels(2)]
#: One-layer kernels without wet/dry treatment (the dry ones' own: tests/test_wetdry.py).
ONE = [name for name, _ in registry.distinct_kernels(1) if not registry.get(name).dry]
TOL = 1e-12


def path_scale(Wi, Wj, Hi, Hj, n, r):
    """Per-edge magnitude of the terms whose difference is A DW - S DH (for relative errors)."""
    _, S = h.roe_matrix(Wi, Wj, n, r=r)
    terms = (
        h.physical_flux(Wi, n),
        h.physical_flux(Wj, n),
        h.b_times(Wi, Wj, n, r=r),
        S * (Hj - Hi)[:, None],
    )
    return np.max([np.abs(t).max(axis=1) for t in terms], axis=0)


@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize("layers", [2, 1])
def test_roe_property(r, layers):
    """(a) A_ij DW = F(Wj) - F(Wi) - B_ij DW for the matrix of §3.2, and the package's
    rotated total fluctuation v (§3.3) is T (A DW - S DH)."""
    Wi, Wj, Hi, Hj, n = h.hyperbolic_edges(1, r, layers)
    A, _ = h.roe_matrix(Wi, Wj, n, r=r)
    lhs = np.einsum("eab,eb->ea", A, Wj - Wi)
    rhs = h.physical_flux(Wj, n) - h.physical_flux(Wi, n) - h.b_times(Wi, Wj, n, r=r)
    scale = path_scale(Wi, Wj, Hi, Hj, n, r)
    assert h.rel_err(lhs, rhs, scale) < TOL
    if layers == 2:
        L1, L2, DH = common.edge2(Wi, Wj, Hi, Hj, n[:, 0], n[:, 1], h.G, 5e-3)
        v = common.total_fluctuation(L1, L2, DH, r)
        vt = (common.tangential_fluctuation(L1), common.tangential_fluctuation(L2))
        mine = common.assemble2((v[0], v[1], vt[0], v[2], v[3], vt[1]), n[:, 0], n[:, 1])
    else:
        L, DH = common.edge1(Wi, Wj, Hi, Hj, n[:, 0], n[:, 1], h.G, 5e-3)
        v = common.total_fluctuation1(L, DH)
        mine = common.assemble1((v[0], v[1], common.tangential_fluctuation(L)), n[:, 0], n[:, 1])
    ref = h.total_fluctuation(Wi, Wj, Hi, Hj, n, r=r)
    assert np.abs(ref).max() > 1.0
    assert h.rel_err(mine, ref, scale) < TOL


@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize(("layers", "name"), [(2, s) for s in TWO] + [(1, s) for s in ONE])
def test_fluctuation_identity(layers, name, r):
    """(b) F- + F+ = A_ij DW - S_ij DH (§2.2, identity (*)) for every scheme."""
    Wi, Wj, Hi, Hj, n = h.hyperbolic_edges(2, r, layers)
    Fm, Fp, dmax, flags = get_flux(name, layers)(Wi, Wj, Hi, Hj, n, r=r, return_flags=True)
    ref = h.total_fluctuation(Wi, Wj, Hi, Hj, n, r=r)
    assert h.rel_err(Fm + Fp, ref, path_scale(Wi, Wj, Hi, Hj, n, r)) < TOL
    assert np.abs(Fm).max() > 1e-3 * np.abs(ref).max()  # a real split, not all on one side
    assert not flags.any()
    assert np.all(dmax > 0)


@pytest.mark.parametrize("r", [0.5, 0.98, 0.998])
def test_eig4_against_numpy(r):
    """(c) EIG4 roots match numpy.linalg.eigvals of the 4x4 A (§3.4) and lie in their brackets."""
    rng = np.random.default_rng(3)
    n = 20000
    c1 = h.G * rng.uniform(0.4, 4.5, n)
    c2 = h.G * rng.uniform(0.4, 4.5, n)
    u1 = rng.normal(0.0, 2.0, n)
    u2 = u1 + rng.normal(0.0, 0.3 * np.sqrt((1 - r) * (c1 + c2)), n)
    lam = np.linalg.eigvals(h.normal_matrix4(u1, u2, c1, c2, r))
    real = np.all(lam.imag == 0, axis=1)
    ref = np.sort(lam.real, axis=1)
    l1, l2, l3, l4, disc = common.eig4(u1, u2, c1, c2, r)
    mine = np.stack((l1, l2, l3, l4), axis=1)
    assert real.sum() > n // 2
    assert np.array_equal(disc >= 0, real) or np.mean((disc >= 0) == real) > 0.999
    ok = real & (disc >= 0)
    err = np.abs(mine[ok] - ref[ok]).max(axis=1) / np.abs(ref[ok]).max(axis=1)
    assert err.max() < 1e-12
    assert np.all(np.diff(mine[ok], axis=1) > 0)
    sc1, sc2 = np.sqrt(c1[ok]), np.sqrt(c2[ok])
    lo = np.maximum(u1[ok] - sc1, u2[ok] - sc2)
    hi = np.minimum(u1[ok] + sc1, u2[ok] + sc2)
    assert np.all((l2[ok] > lo - 1e-12 * hi) & (l3[ok] < hi + 1e-12 * np.abs(hi)))


@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize("layers", [2, 1])
def test_block_roe_matches_full_projector(r, layers):
    """(d) The block Roe formula (§3.5) equals P-_ij (A DW - S DH) with P- from the 6x6 eig
    where no wave is transonic (elsewhere the entropy fix of §3.6 adds to it)."""
    Wi, Wj, Hi, Hj, n = h.hyperbolic_edges(4, r, layers)
    keep = ~h.transonic(Wi, Wj, n, r=r)
    assert keep.sum() > len(keep) // 3
    Wi, Wj, Hi, Hj, n = Wi[keep], Wj[keep], Hi[keep], Hj[keep], n[keep]
    Fm, Fp, _ = get_flux("roe", layers)(Wi, Wj, Hi, Hj, n, r=r)
    P, _ = h.full_roe_projector(Wi, Wj, n, r=r)
    v = h.total_fluctuation(Wi, Wj, Hi, Hj, n, r=r)
    ref = np.einsum("eab,eb->ea", P, v)
    scale = np.abs(v).max(axis=1)
    assert h.rel_err(Fm, ref, scale) < TOL
    assert h.rel_err(Fp, v - ref, scale) < TOL


@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize("layers", [2, 1])
@pytest.mark.parametrize("name", ["roe", "ir-roe"])
def test_entropy_fix_matches_harten_hyman(name, layers, r):
    """§3.6: on edges with a transonic wave, the normal part of F- is the Harten-Hyman split
    of an independent eigen-decomposition (numpy.linalg.eig, cell eigenvalues from eigvals),
    and differs from the unfixed P- v."""
    Wi, Wj, Hi, Hj, n = h.transonic_edges(4, r, layers)
    assert len(Wi) > 200
    Fm, _, _, flags = get_flux(name, layers)(Wi, Wj, Hi, Hj, n, r=r, return_flags=True)
    assert not flags.any()
    mine = h.rotated_normal(Fm, n)
    ref = h.harten_hyman_split(Wi, Wj, Hi, Hj, n, r=r)
    v = h.rotated_normal(h.total_fluctuation(Wi, Wj, Hi, Hj, n, r=r), n)
    du = h.rotated_normal(Wj, n) - h.rotated_normal(Wi, n)
    scale = np.maximum(np.abs(v).max(axis=1), 10.0 * np.abs(du).max(axis=1))
    assert h.rel_err(mine, ref, scale) < 1e-11
    P, _ = h.full_roe_projector(Wi, Wj, n, r=r)
    unfixed = h.rotated_normal(np.einsum("eab,eb->ea", P, h.total_fluctuation(Wi, Wj, Hi, Hj,
                                                                           n, r=r)), n)  # fmt: skip
    assert h.rel_err(mine, unfixed, scale) > 1e-3


@pytest.mark.parametrize("r", [0.5, 0.98])
@pytest.mark.parametrize("layers", [2, 1])
@pytest.mark.parametrize("name", ["roe", "ir-roe"])
def test_without_the_entropy_fix_the_split_is_the_independent_roe_split(name, layers, r):
    """Issue 32, item 12: ``entropy_fix = false`` (the paper's schemes). On the edges the fix
    acts on, the normal part of F- is the unfixed P- v of an independent eigen-decomposition
    (numpy.linalg.eig) to round-off (Roe: all of F-), and differs from the fixed one."""
    Wi, Wj, Hi, Hj, n = h.transonic_edges(4, r, layers)
    flux = reference(registry.kernel(name, layers, entropy_fix=False))
    Fm, Fp, _, flags = flux(Wi, Wj, Hi, Hj, n, h.G, r, 5e-3, True)
    assert not flags.any()
    P, _ = h.full_roe_projector(Wi, Wj, n, r=r)
    v = h.total_fluctuation(Wi, Wj, Hi, Hj, n, r=r)
    unfixed = np.einsum("eab,eb->ea", P, v)
    scale = np.abs(v).max(axis=1)
    assert h.rel_err(h.rotated_normal(Fm, n), h.rotated_normal(unfixed, n), scale) < 1e-13
    if name == "roe":
        assert h.rel_err(Fm, unfixed, scale) < 1e-13 and h.rel_err(Fp, v - unfixed, scale) < 1e-13
    fixed = get_flux(name, layers)(Wi, Wj, Hi, Hj, n, r=r)[0]
    assert h.rel_err(Fm, fixed, scale) > 1e-3


def test_only_roe_and_ir_roe_run_without_an_entropy_fix():
    assert sorted({name for name, _ in registry.UNFIXED}) == ["ir-roe", "roe"]
    with pytest.raises(ConfigError, match="^entropy_fix: false, but scheme 'hll' has no "):
        registry.kernel("hll", 1, entropy_fix=False)


@pytest.mark.parametrize(("layers", "name"), [(2, s) for s in TWO] + [(1, s) for s in ONE])
def test_rotational_covariance(layers, name):
    """(e) Rotating states and normal by one angle rotates F-, F+ and keeps ||D||."""
    Wi, Wj, Hi, Hj, n = h.hyperbolic_edges(5, 0.5, layers)
    flux = get_flux(name, layers)
    Fm, Fp, d = flux(Wi, Wj, Hi, Hj, n)
    R = h.rotation(0.7321)
    Gm, Gp, e = flux(h.rotate_states(Wi, R), h.rotate_states(Wj, R), Hi, Hj, n @ R.T)
    assert h.rel_err(Gm, h.rotate_states(Fm, R), np.abs(Fm).max(axis=1)) < TOL
    assert h.rel_err(Gp, h.rotate_states(Fp, R), np.abs(Fp).max(axis=1)) < TOL
    assert np.abs(e - d).max() < TOL * d.max()


@pytest.mark.parametrize(("layers", "name"), [(2, s) for s in TWO] + [(1, s) for s in ONE])
def test_reversal(layers, name):
    """(f) F-(Wj, Wi, Hj, Hi, -eta) = F+(Wi, Wj, Hi, Hj, eta), same ||D||."""
    Wi, Wj, Hi, Hj, n = h.hyperbolic_edges(6, 0.98, layers)
    flux = get_flux(name, layers)
    Fm, Fp, d = flux(Wi, Wj, Hi, Hj, n, r=0.98)
    Gm, Gp, e = flux(Wj, Wi, Hj, Hi, -n, r=0.98)
    assert h.rel_err(Gm, Fp, np.abs(Fp).max(axis=1)) < TOL
    assert h.rel_err(Gp, Fm, np.abs(Fm).max(axis=1)) < TOL
    assert np.abs(e - d).max() < TOL * d.max()


@pytest.mark.parametrize(("layers", "name"), [(2, s) for s in TWO] + [(1, s) for s in ONE])
def test_lake_at_rest(layers, name):
    """Lake at rest gives exactly zero contributions; round-off only when jumps are inexact."""
    rng = np.random.default_rng(7)
    flux = get_flux(name, layers)
    Wi, Wj, Hi, Hj, n = h.lake_at_rest(rng, 2000, layers, exact=True)
    assert np.abs(Hj - Hi).max() > 0.5
    Fm, Fp, d = flux(Wi, Wj, Hi, Hj, n, r=0.98)
    assert np.all(Fm == 0) and np.all(Fp == 0)
    assert np.all(d > 1.0)
    Wi, Wj, Hi, Hj, n = h.lake_at_rest(rng, 2000, layers, exact=False)
    Fm, Fp, d = flux(Wi, Wj, Hi, Hj, n, r=0.98)
    assert max(np.abs(Fm).max(), np.abs(Fp).max()) < TOL * h.G


@pytest.mark.parametrize(("layers", "name"), [(2, s) for s in TWO] + [(1, s) for s in ONE])
def test_wall_ghost(layers, name):
    """A wall ghost (§7.1) gives zero mass flux G-_h = qn_i + F-_h; an open ghost gives F- = 0."""
    rng = np.random.default_rng(8)
    Wi = h.random_two_layer(rng, 2000) if layers == 2 else h.random_one_layer(rng, 2000)
    Hi = rng.uniform(4.0, 6.0, 2000)
    n = h.unit_normals(rng, 2000)
    flux = get_flux(name, layers)
    Wg = common.wall_ghost(Wi, n)
    Fm, _, d = flux(Wi, Wg, Hi, Hi, n, r=0.5)
    for k in range(0, Wi.shape[1], 3):
        qn = Wi[:, k + 1] * n[:, 0] + Wi[:, k + 2] * n[:, 1]
        assert np.abs(qn).max() > 0.5
        assert np.abs(qn + Fm[:, k]).max() < 1e-13 * np.abs(Wi).max()
    assert np.all(d > 0)
    Fm, Fp, _ = flux(Wi, common.open_ghost(Wi), Hi, Hi, n, r=0.5)
    assert np.all(Fm == 0) and np.all(Fp == 0)


def test_single_layer_roe_is_hll_with_roe_speeds():
    """§6: HLL with SL, SR = u -/+ c (the Roe eigenvalues) is Roe's normal split.

    Exactly so on a flat bottom: HLL's (Dh - DH, Dqn) equals A^{-1} v only when
    u DH = 0 (A^{-1} S = (c^2/(c^2-u^2), 0)), as for IFCP's wj (§5.3).
    """
    Wi, Wj, Hi, _, n = h.hyperbolic_edges(9, 0.5, 1, speed=3.0)
    keep = ~h.transonic(Wi, Wj, n)  # no entropy fix (§3.6) on these edges
    Wi, Wj, Hi, n = Wi[keep], Wj[keep], Hi[keep], n[keep]
    Hj = Hi
    L, DH = common.edge1(Wi, Wj, Hi, Hj, n[:, 0], n[:, 1], h.G, 5e-3)
    v = common.total_fluctuation1(L, DH)
    c = np.sqrt(L.c2)
    a0, a1 = hll.hll_coefficients(L.u - c, L.u + c)
    mine = np.stack(hll.viscous_split1(v, L, DH, a0, a1), axis=1)
    ref = np.stack(roe.normal_split1(v, L, h.G)[0], axis=1)
    vs = np.stack(v, axis=1)
    assert np.abs(ref).max() > 1.0
    assert h.rel_err(mine, ref, np.abs(vs).max(axis=1)) < TOL
    # With Einfeldt speeds it is a different (more diffusive) scheme.
    sl, sr = hll.einfeldt_speeds(L, h.G)
    b0, b1 = hll.hll_coefficients(sl, sr)
    other = np.stack(hll.viscous_split1(v, L, DH, b0, b1), axis=1)
    assert h.rel_err(other, ref, np.abs(vs).max(axis=1)) > 1e-3


@pytest.mark.parametrize("r", [0.5, 0.98])
def test_ifcp_viscosity_is_quadratic_in_A(r):
    """§5.3: with DH = 0, IFCP's D-_4 = (v - Q A^{-1} v)/2, Q = alpha0 I + alpha1 A + alpha2 A^2;
    and Roe's is (v - |A| A^{-1} v)/2 — IFCP with the exact |A| would be Roe."""
    Wi, Wj, _, _, n = h.hyperbolic_edges(10, r, 2)
    Hs = np.full(len(Wi), 5.0)
    L1, L2, DH = common.edge2(Wi, Wj, Hs, Hs, n[:, 0], n[:, 1], h.G, 5e-3)
    v = common.total_fluctuation(L1, L2, DH, r)
    A = h.normal_matrix4(L1.u, L2.u, L1.c2, L2.c2, r)
    DU = np.stack((L1.dh, L1.dqn, L2.dh, L2.dqn), axis=1)
    vs = np.stack(v, axis=1)
    l1, l2, l3, l4, _ = pvm_ifcp.approx_eigenvalues(L1, L2, r)
    chi = np.sign(l1 + l4) * np.maximum(np.abs(l2), np.abs(l3))
    a0, a1, a2 = pvm_ifcp.ifcp_coefficients(l1, l4, chi)
    Q = a0[:, None, None] * np.eye(4) + a1[:, None, None] * A + a2[:, None, None] * (A @ A)
    ref = 0.5 * (vs - np.einsum("eab,eb->ea", Q, DU))
    mine = np.stack(pvm_ifcp.viscous_split2(v, L1, L2, DH, r, a0, a1, a2), axis=1)
    assert h.rel_err(mine, ref, np.abs(vs).max(axis=1)) < TOL
    lam, K = np.linalg.eig(A)
    absA = np.einsum("eab,eb,ebc->eac", K, np.abs(lam), np.linalg.inv(K)).real
    roe_ref = 0.5 * (vs - np.einsum("eab,eb->ea", absA, DU))
    Dm, *_ = roe.normal_split2(v, L1, L2, r)
    assert h.rel_err(np.stack(Dm, axis=1), roe_ref, np.abs(vs).max(axis=1)) < TOL
    assert h.rel_err(mine, roe_ref, np.abs(vs).max(axis=1)) > 1e-4  # IFCP is not Roe


@pytest.mark.parametrize(("layers", "name"), [(2, s) for s in TWO] + [(1, s) for s in ONE])
def test_supercritical_edges_are_upwind(layers, name):
    """All eigenvalues positive: an upwind scheme sends the whole fluctuation downstream
    (F- = 0); there |x| = x on the spectrum, so IFCP's interpolation is exactly |A|."""
    rng = np.random.default_rng(11)
    Wi = h.random_two_layer(rng, 500, 0.02) if layers == 2 else h.random_one_layer(rng, 500, 0.02)
    Wj = Wi * rng.uniform(0.9, 1.1, Wi.shape)
    n = h.unit_normals(rng, 500)
    for k in range(0, Wi.shape[1], 3):  # add a normal velocity of 12 (> all wave speeds)
        for W in (Wi, Wj):
            W[:, k + 1 : k + 3] += 12.0 * W[:, k : k + 1] * n
    Hi = rng.uniform(4.0, 6.0, 500)
    Hj = Hi + rng.uniform(-0.1, 0.1, 500)
    Fm, Fp, _ = get_flux(name, layers)(Wi, Wj, Hi, Hj, n, r=0.5)
    assert np.abs(Fp).max() > 1.0
    # registry.Scheme.upwind: F- = 0 exactly where upwind, far from it where not (Rusanov).
    assert (np.abs(Fm).max() < 1e-12 * np.abs(Fp).max()) == registry.get(name).upwind


@pytest.mark.parametrize("shift", [-2.0, 1.5])
def test_near_coincident_pair_projector(shift):
    """§3.5 (b): a flagged near-double internal pair of one sign gives P- v (P- from the
    matrix sign function: numpy.linalg.eig is unreliable on a nearly defective A)."""
    r = 0.5
    Wi, Wj, Hi, Hj, n = h.near_double_internal_root(r, shift)
    for name in ("roe", "ir-roe"):
        Fm, Fp, _, flags = get_flux(name, 2)(Wi, Wj, Hi, Hj, n, r=r, return_flags=True)
        near = (flags & constants.FLAG_NEAR_COINCIDENT) != 0
        fb = (flags & constants.FLAG_NONHYPERBOLIC) != 0
        assert near.sum() + fb.sum() == len(flags)
        assert near.sum() > len(flags) // 4
    Fm, Fp, _, flags = roe.flux2(Wi, Wj, Hi, Hj, n, r=r, return_flags=True)
    near = (flags & constants.FLAG_NEAR_COINCIDENT) != 0
    P = h.sign_projector(Wi[near], Wj[near], n[near], r=r)
    v = h.total_fluctuation(Wi[near], Wj[near], Hi[near], Hj[near], n[near], r=r)
    ref = np.einsum("eab,eb->ea", P, v)
    assert h.rel_err(Fm[near], ref, np.abs(v).max(axis=1)) < 1e-12


def test_near_coincident_pair_of_mixed_sign_gets_half_weight():
    """§3.5 (b): a near-double internal pair straddling 0 splits its subspace half/half:
    D-_4 = s-(l1) P1 v + s-(l4) P4 v + (I - P1 - P4) v / 2 (P1, P4 external spectral
    projectors from numpy eigenvectors, reliable for these simple, separated roots)."""
    r = 0.5
    Wi, Wj, Hi, Hj, n = h.near_double_internal_root(r, 0.0)
    L1, L2, _ = common.edge2(Wi, Wj, Hi, Hj, n[:, 0], n[:, 1], h.G, 5e-3)
    centre = common.eig4(L1.u, L2.u, L1.c2, L2.c2, r)[1]
    Wi, Wj, Hi, Hj, n = h.near_double_internal_root(r, -centre)  # move the pair onto 0
    L1, L2, DH = common.edge2(Wi, Wj, Hi, Hj, n[:, 0], n[:, 1], h.G, 5e-3)
    l1, l2, l3, l4, disc = common.eig4(L1.u, L2.u, L1.c2, L2.c2, r)
    v = common.total_fluctuation(L1, L2, DH, r)
    Dm, _, _, flags = roe.normal_split2(v, L1, L2, r)
    mixed = (np.sign(l2) != np.sign(l3)) & (flags == constants.FLAG_NEAR_COINCIDENT)
    assert mixed.sum() > 5
    A = h.normal_matrix4(L1.u, L2.u, L1.c2, L2.c2, r)[mixed]
    lam, K = np.linalg.eig(A)
    mu, Y = np.linalg.eig(np.swapaxes(A, 1, 2))
    vs = np.stack(v, axis=1)[mixed]
    ref = 0.5 * vs
    for pick, s in ((np.argmin, 1.0), (np.argmax, 0.0)):  # lambda1 < 0 < lambda4
        e = np.arange(len(A))
        k = K[e, :, pick(lam.real, axis=1)].real
        y = Y[e, :, pick(mu.real, axis=1)].real
        Pv = k * (np.einsum("ea,ea->e", y, vs) / np.einsum("ea,ea->e", y, k))[:, None]
        ref += (s - 0.5) * Pv
    mine = np.stack(Dm, axis=1)[mixed]
    assert h.rel_err(mine, ref, np.abs(vs).max(axis=1)) < 1e-12
    assert h.rel_err(mine, 0.5 * vs, np.abs(vs).max(axis=1)) > 1e-3


def test_split_weights():
    """sgn(0) = 0: a zero speed splits half/half (§0; the entropy fix of §3.6 is separate)."""
    x = np.array([-2.0, -0.0, 0.0, 1e-300, 3.0])
    assert np.array_equal(common.s_minus(x), [1.0, 0.5, 0.5, 0.0, 0.0])


def test_complex_pair_falls_back_to_pvm_ifcp():
    """§3.5 (c): a complex internal pair flags the edge and uses PVM-IFCP's contributions."""
    r = 0.98
    Wi, Wj, Hi, Hj, n = h.near_double_internal_root(r, 0.3)
    for W in (Wi, Wj):  # double the shear: far outside the hyperbolic region
        W[:, 1:3] *= 2.0
    ref = pvm_ifcp.flux2(Wi, Wj, Hi, Hj, n, r=r, return_flags=True)
    for name in ("roe", "ir-roe"):
        Fm, Fp, d, flags = get_flux(name, 2)(Wi, Wj, Hi, Hj, n, r=r, return_flags=True)
        assert np.all(flags & constants.FLAG_NONHYPERBOLIC)
        assert np.array_equal(Fm, ref[0]) and np.array_equal(Fp, ref[1])
        assert np.array_equal(d, ref[2])
    assert np.all(ref[3] & constants.FLAG_NONHYPERBOLIC)


@pytest.mark.parametrize(("layers", "name"), [(2, s) for s in TWO] + [(1, s) for s in ONE])
def test_thin_layer_fallback(layers, name):
    """§8: a layer thinner than eps_h (even dry) gives finite contributions that keep (*)
    up to the desingularisation, flag 4 for the kernels that fall back (registry's
    thin_fallback), and no warnings."""
    rng = np.random.default_rng(13)
    E = 500
    Wi = h.random_two_layer(rng, E) if layers == 2 else h.random_one_layer(rng, E)
    Wj = h.random_two_layer(rng, E) if layers == 2 else h.random_one_layer(rng, E)
    Wi[:, :3] *= np.where(np.arange(E) % 2 == 0, 0.0, 1e-4)[:, None]
    Wj[:, :3] *= 1e-3
    n = h.unit_normals(rng, E)
    Hi = rng.uniform(4.0, 6.0, E)
    Fm, Fp, d, flags = get_flux(name, layers)(Wi, Wj, Hi, Hi, n, r=0.5, return_flags=True)
    assert np.isfinite(Fm).all() and np.isfinite(Fp).all() and np.all(d > 0)
    expect = constants.FLAG_THIN if layers in registry.get(name).thin_fallback else 0
    assert np.all(flags & constants.FLAG_THIN == expect)
    # Mass components: F-_h + F+_h = Dqn exactly as in the wet case.
    qn = lambda W, k: W[:, k + 1] * n[:, 0] + W[:, k + 2] * n[:, 1]  # noqa: E731
    for k in range(0, Wi.shape[1], 3):
        dq = qn(Wj, k) - qn(Wi, k)
        assert np.abs(Fm[:, k] + Fp[:, k] - dq).max() < 1e-13 * np.abs(Wi).max()


def test_all_dry_edge_is_zero():
    """Both layers dry on both sides: no contribution and no speed (no NaN)."""
    z = np.zeros((3, 6))
    n = h.unit_normals(np.random.default_rng(14), 3)
    for name in TWO:
        Fm, Fp, d = get_flux(name, 2)(z, z, np.ones(3), np.ones(3), n)
        assert np.all(Fm == 0) and np.all(Fp == 0) and np.all(d == 0)
    for name in ONE:
        Fm, Fp, d = get_flux(name, 1)(z[:, :3], z[:, :3], np.ones(3), np.ones(3), n)
        assert np.all(Fm == 0) and np.all(Fp == 0) and np.all(d == 0)


def test_registry():
    assert get_flux("pvm-ifcp", 1) is get_flux("hll", 1)
    with pytest.raises(ConfigError, match="hll"):
        get_flux("hll", 2)
    with pytest.raises(ConfigError, match="choose from"):
        get_flux("godunov", 1)
    W = np.ones((4, 6))
    with pytest.raises(ConfigError, match=r"Wi, Wj: expected two \(E, 6\)"):
        roe.flux(W, W[:3], np.ones(4), np.ones(4), np.ones((4, 2)))
    with pytest.raises(ConfigError, match="single-layer"):
        hll.flux(W, W, np.ones(4), np.ones(4), np.ones((4, 2)))
