"""The implicit method's linear solver: the 5-point operator, CG and its preconditioners.

Checked against SciPy's direct sparse solve and against a dense-matrix construction of the
same RRB factorisation; the same code runs on CuPy (``gpu`` marked cases).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as spl

from fvswe.errors import ConfigError
from fvswe.implicit import precond
from fvswe.implicit.cg import NotConverged, pcg
from fvswe.implicit.operator import Stencil
from fvswe.implicit.rrb import RRB


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


XP = [np, pytest.param("cupy", marks=pytest.mark.gpu)]


@pytest.fixture(params=XP, ids=["numpy", "cupy"])
def xp(request):
    if request.param is np:
        return np
    cp = _cupy()
    if cp is None:
        pytest.skip("CuPy or a CUDA GPU is not available")
    return cp


def system(ny: int, nx: int, seed: int = 0, scale: float = 40.0, level_east: bool = True):
    """Random face coefficients: walls west, south and north; a level boundary east."""
    rng = np.random.default_rng(seed)
    cx = rng.uniform(0.0, scale, (ny, nx + 1))
    cy = rng.uniform(0.0, scale, (ny + 1, nx))
    cx[:, 0] = 0.0
    cx[:, -1] = rng.uniform(0.0, scale, ny) if level_east else 0.0
    cy[0], cy[-1] = 0.0, 0.0
    return Stencil(cx, cy)


def on(xp, stencil: Stencil) -> Stencil:
    return Stencil(xp.asarray(stencil.cx), xp.asarray(stencil.cy))


def host(a):
    return a.get() if hasattr(a, "get") else a


def test_jacobi_mirrors_the_walls_so_a_uniform_column_stays_uniform():
    """Jacobi's diagonal is ``A``'s away from the domain's boundary and at a level boundary;
    at a wall it counts the cell's opposite face, so coefficients uniform along y (walls
    south and north) give a diagonal uniform along y, bit for bit."""
    st = system(9, 12, seed=3)
    d, jac = st.five(np)[0], st.jacobi_diagonal(np)
    np.testing.assert_allclose(jac[1:-1, 1:], d[1:-1, 1:], rtol=1e-15)  # level boundary east
    np.testing.assert_allclose(jac[1:-1, 0], d[1:-1, 0] + st.cx[1:-1, 1], rtol=1e-15)
    np.testing.assert_allclose(jac[0, 1:], d[0, 1:] + st.cy[1, 1:], rtol=1e-15)
    column = Stencil(np.tile(st.cx[:1], (9, 1)), np.tile(st.cy[1:2], (10, 1)))
    column.cy[0], column.cy[-1] = 0.0, 0.0
    jac = column.jacobi_diagonal(np)
    assert np.array_equal(jac, np.tile(jac[4], (9, 1))) and not np.array_equal(
        column.five(np)[0][0], column.five(np)[0][4]
    )


@pytest.mark.parametrize(("ny", "nx"), [(1, 7), (6, 5), (13, 20)])
def test_operator_is_the_symmetric_positive_definite_matrix_it_stores(ny, nx):
    st = system(ny, nx)
    A = st.csr()
    assert abs(A - A.T).max() == 0
    x = np.random.default_rng(1).standard_normal((ny, nx))
    np.testing.assert_allclose(st.apply(x, np).ravel(), A @ x.ravel(), rtol=1e-13, atol=1e-12)
    d, e, n = st.five(np)
    assert (d > 1).all() and (e <= 0).all() and (n <= 0).all()
    assert (e[:, -1] == 0).all() and (n[-1] == 0).all()
    # strictly diagonally dominant: every row sum is 1 + its boundary coefficients >= 1
    np.testing.assert_allclose(A @ np.ones(ny * nx), st.boundary_diagonal(np).ravel(), rtol=1e-13)
    # a field uniform along y meets exactly zero across the y faces
    uniform = np.tile(x[:1], (ny, 1))
    y = st.apply(uniform, np)
    st_x = Stencil(st.cx, np.zeros_like(st.cy))
    assert np.array_equal(y, st_x.apply(uniform, np))


@pytest.mark.parametrize("name", ["rrb", "jacobi", "amg", "none"])
@pytest.mark.parametrize(("ny", "nx"), [(9, 9), (16, 24), (40, 33)])
def test_pcg_reaches_the_criterion_and_the_direct_solution(name, ny, nx):
    if name == "amg":
        pytest.importorskip("pyamg")
    st = system(ny, nx)
    b = np.random.default_rng(2).standard_normal((ny, nx)) * 1e-2
    x, solve = pcg(lambda v: st.apply(v, np), precond.build(name, st, np), b, np.zeros_like(b),
                   np, tol=1e-9)  # fmt: skip
    assert solve.residual < 1e-9 and solve.iterations > 0
    assert np.linalg.norm(b - st.apply(x, np)) < 1e-9 * 1.01  # the true residual too
    ref = spl.spsolve(st.csr().tocsc(), b.ravel()).reshape(ny, nx)
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-9)


def test_pcg_stops_at_once_when_the_guess_meets_the_criterion():
    st = system(8, 8)
    x0 = np.random.default_rng(3).standard_normal((8, 8))
    x, solve = pcg(lambda v: st.apply(v, np), lambda r: r, st.apply(x0, np), x0.copy(), np, 1e-5)
    assert solve.iterations == 0 and np.array_equal(x, x0)
    with pytest.raises(NotConverged, match="after 2 iterations"):
        pcg(lambda v: st.apply(v, np), lambda r: r, st.apply(x0, np), np.zeros((8, 8)), np,
            1e-12, maxiter=2)  # fmt: skip


def test_rrb_is_complete_cholesky_where_the_grid_is_its_coarsest_level(xp):
    """A grid of at most ``coarse`` cells has no RRB level: M = A, CG takes one iteration."""
    st = system(7, 9)
    M = RRB(*on(xp, st).five(xp), xp, coarse=63)
    assert M.depth == 0
    b = np.random.default_rng(4).standard_normal((7, 9))
    ref = spl.spsolve(st.csr().tocsc(), b.ravel()).reshape(7, 9)
    np.testing.assert_allclose(host(M(xp.asarray(b))), ref, rtol=0, atol=1e-12)
    sd = on(xp, st)
    _, solve = pcg(lambda v: sd.apply(v, xp), M, xp.asarray(b), xp.zeros((7, 9)), xp, 1e-10)
    assert solve.iterations == 1


def dense_rrb_level(A: np.ndarray, ny: int, nx: int):
    """M⁻¹ of one RRB level built with dense matrices (an independent construction): eliminate
    the cells with i + j odd, lump the Schur complement to the turned 5-point stencil
    (dropped entries onto the diagonal), eliminate (odd, odd), lump to the coarse 5-point
    stencil, solve the coarse matrix exactly."""
    j, i = np.divmod(np.arange(ny * nx), nx)
    red, black = np.flatnonzero((i + j) % 2 == 1), np.flatnonzero((i + j) % 2 == 0)

    def lump(S, nodes, keep):
        S = S.copy()
        di = np.abs(i[nodes][:, None] - i[nodes][None, :])
        dj = np.abs(j[nodes][:, None] - j[nodes][None, :])
        drop = ~keep(di, dj) & (S != 0)
        np.fill_diagonal(drop, False)
        S[np.diag_indices_from(S)] += np.where(drop, S, 0.0).sum(axis=1)
        S[drop] = 0.0
        return S

    D1, C = A[np.ix_(red, red)], A[np.ix_(black, red)]
    S1 = lump(A[np.ix_(black, black)] - C @ np.linalg.solve(D1, C.T), black,
              lambda a, b: (a == b) & (a <= 1))  # fmt: skip
    q, p = np.flatnonzero(i[black] % 2 == 1), np.flatnonzero(i[black] % 2 == 0)
    SQ, SPQ = S1[np.ix_(q, q)], S1[np.ix_(p, q)]
    S2 = lump(S1[np.ix_(p, p)] - SPQ @ np.linalg.solve(SQ, SPQ.T), black[p],
              lambda a, b: (a + b == 2) & (a % 2 == 0) | (a + b == 0))  # fmt: skip

    def inverse(r):
        r = r.ravel()
        yR = np.linalg.solve(D1, r[red])
        rB = r[black] - C @ yR
        yQ = np.linalg.solve(SQ, rB[q])
        xP = np.linalg.solve(S2, rB[p] - SPQ @ yQ)
        xB = np.empty(black.size)
        xB[p], xB[q] = xP, yQ - np.linalg.solve(SQ, SPQ.T @ xP)
        x = np.empty(ny * nx)
        x[red], x[black] = yR - np.linalg.solve(D1, C.T @ xB), xB
        return x.reshape(ny, nx)

    return inverse


@pytest.mark.parametrize(("ny", "nx"), [(8, 8), (6, 10), (10, 4)])
def test_rrb_level_is_the_dense_factorisation(xp, ny, nx):
    st = system(ny, nx, seed=ny)
    ref = dense_rrb_level(st.csr().toarray(), ny, nx)
    M = RRB(*on(xp, st).five(xp), xp, coarse=ny * nx // 4)
    assert M.depth == 1
    r = np.random.default_rng(5).standard_normal((ny, nx))
    np.testing.assert_allclose(host(M(xp.asarray(r))), ref(r), rtol=0, atol=1e-13)


@pytest.mark.parametrize(("ny", "nx"), [(33, 40), (1, 50), (64, 64)])
def test_rrb_keeps_row_sums_and_is_symmetric_positive_definite(xp, ny, nx):
    """Lumping keeps every row sum, over all levels: M⁻¹ (A 1) = 1 exactly (round-off)."""
    st = system(ny, nx)
    sd = on(xp, st)
    M = RRB(*sd.five(xp), xp, coarse=4)
    assert M.depth >= 3
    ones = xp.ones((ny, nx))
    np.testing.assert_allclose(host(M(sd.apply(ones, xp))), 1.0, rtol=0, atol=1e-12)
    a, b = (xp.asarray(v) for v in np.random.default_rng(6).standard_normal((2, ny, nx)))
    assert abs(float(xp.vdot(a, M(b)) - xp.vdot(M(a), b))) < 1e-12 * float(xp.vdot(a, a))
    assert float(xp.vdot(a, M(a))) > 0


def test_rrb_beats_jacobi_and_matches_on_float32(xp):
    st = system(64, 64, scale=400.0)
    b = np.random.default_rng(7).standard_normal((64, 64)) * 1e-3
    counts = {}
    for name in ("rrb", "jacobi"):
        sd = on(xp, st)
        _, solve = pcg(lambda v, sd=sd: sd.apply(v, xp), precond.build(name, sd, xp),
                       xp.asarray(b), xp.zeros((64, 64)), xp, 1e-5)  # fmt: skip
        counts[name] = solve.iterations
    assert counts["rrb"] < counts["jacobi"] / 3
    s32 = Stencil(xp.asarray(st.cx, dtype=np.float32), xp.asarray(st.cy, dtype=np.float32))
    b32, x0 = xp.asarray(b, dtype=np.float32), xp.zeros((64, 64), np.float32)
    x32, solve = pcg(lambda v: s32.apply(v, xp), precond.build("rrb", s32, xp), b32, x0, xp, 1e-5)
    assert x32.dtype == np.float32 and solve.residual < 1e-5
    ref = spl.spsolve(st.csr().tocsc(), b.ravel()).reshape(64, 64)
    assert np.abs(host(x32) - ref).max() < 1e-5


def test_unknown_preconditioner_is_one_line():
    with pytest.raises(ConfigError, match=r"^preconditioner: unknown 'ilu' \(choose from rrb"):
        precond.build("ilu", system(4, 4), np)
