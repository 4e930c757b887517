"""MARIN's repeated red-black (RRB) preconditioner of a 5-point SPD matrix on a Cartesian grid.

de Jong, van der Ploeg, Ditzel, Vuik (ETNA 46, 2017), after Brand's repeated red-black
ordering. One level halves the grid in both directions in two red-black eliminations:

1. the cells with ``i + j`` odd (the sublattices ``X = [0::2, 1::2]`` and
   ``Y = [1::2, 0::2]``) couple only with the others and are eliminated exactly; the Schur
   complement on ``P = [0::2, 0::2]`` and ``Q = [1::2, 1::2]`` is a 9-point stencil on a
   grid turned by 45°, whose couplings over two cells along an axis (``P``-``P``,
   ``Q``-``Q``) are dropped and *lumped* (added to the diagonals of both ends);
2. on that turned 5-point grid ``Q`` couples only with ``P``: ``Q`` is eliminated exactly,
   and of the Schur complement on ``P`` the diagonal couplings are lumped, leaving a
   5-point matrix on the grid of ``P`` — half the cells each way.

Lumping keeps every row sum, so the preconditioner ``M`` satisfies ``M 1 = A 1`` exactly
(tests/test_implicit_solver.py checks it); the remainder of at most ``coarse`` cells is
factored by a complete (dense) Cholesky. ``M`` is symmetric positive definite wherever
``A`` is a strictly diagonally dominant M-matrix (the θ-scheme's ``I + ...``).

Everything is array code for NumPy or CuPy (``xp``): the levels and factors are built on
the device that holds the matrix, and applying ``M⁻¹`` is a forward sweep down the
levels, two triangular solves, and a backward sweep up.
"""

from __future__ import annotations

from functools import partial

from .operator import add_into, subtract_into

#: The coarsest level holds at most this many cells (then a complete Cholesky); small enough
#: that the host BLAS factors it unthreaded (a 128-cell factor took 100 times longer on two
#: busy cores, OpenBLAS threading).
COARSE_CELLS = 64


def _w(a, xp):
    """``out[J, I] = a[J, I - 1]`` (0 in the first column)."""
    out = xp.zeros_like(a)
    out[:, 1:] = a[:, :-1]
    return out


def _e(a, xp):
    """``out[J, I] = a[J, I + 1]`` (0 in the last column)."""
    out = xp.zeros_like(a)
    out[:, :-1] = a[:, 1:]
    return out


def _s(a, xp):
    """``out[J, I] = a[J - 1, I]`` (0 in the first row)."""
    out = xp.zeros_like(a)
    out[1:, :] = a[:-1, :]
    return out


def _n(a, xp):
    """``out[J, I] = a[J + 1, I]`` (0 in the last row)."""
    out = xp.zeros_like(a)
    out[:-1, :] = a[1:, :]
    return out


def _even(d, e, n, xp):
    """The 5-point matrix padded to an even number of rows and columns with decoupled
    unit rows (diagonal 1, no couplings)."""
    ny, nx = d.shape
    if ny % 2 == 0 and nx % 2 == 0:
        return d, e, n
    shape = (ny + ny % 2, nx + nx % 2)
    dd, ee, nn = xp.ones(shape, d.dtype), xp.zeros(shape, d.dtype), xp.zeros(shape, d.dtype)
    dd[:ny, :nx], ee[:ny, :nx], nn[:ny, :nx] = d, e, n
    return dd, ee, nn


class _Level:
    """One RRB level: the two eliminations from a ``(ny, nx)`` grid to its ``P`` sublattice."""

    def __init__(self, d, e, n, xp):
        self.xp, self.shape = xp, d.shape
        d, e, n = _even(d, e, n, xp)
        self.padded = d.shape
        w, ea, s, no = (partial(f, xp=xp) for f in (_w, _e, _s, _n))
        dP, dX, dY, dQ = d[0::2, 0::2], d[0::2, 1::2], d[1::2, 0::2], d[1::2, 1::2]
        # couplings of each sublattice cell with its east and its north neighbour
        pE, xE, yE, qE = e[0::2, 0::2], e[0::2, 1::2], e[1::2, 0::2], e[1::2, 1::2]
        pN, xN, yN, qN = n[0::2, 0::2], n[0::2, 1::2], n[1::2, 0::2], n[1::2, 1::2]
        self.pE, self.xE, self.yE, self.qE = pE, xE, yE, qE
        self.pN, self.xN, self.yN, self.qN = pN, xN, yN, qN
        iX, iY = 1.0 / dX, 1.0 / dY
        self.iX, self.iY = iX, iY
        # first elimination (X, Y): the Schur diagonals, the turned couplings of Q(J, I) with
        # its corners P(J, I) (sw), P(J, I+1) (se), P(J+1, I) (nw), P(J+1, I+1) (ne) ...
        sP = dP - pE * pE * iX - w(xE * xE * iX) - pN * pN * iY - s(yN * yN * iY)
        sQ = dQ - xN * xN * iX - qN * qN * no(iX) - yE * yE * iY - qE * qE * ea(iY)
        self.sw = -(xN * pE * iX + yE * pN * iY)
        self.se = -(xN * xE * iX + qE * ea(pN * iY))
        self.nw = -(qN * no(pE * iX) + yE * yN * iY)
        self.ne = -(qN * no(xE * iX) + qE * ea(yN * iY))
        # ... and the couplings over two cells along an axis, lumped onto both diagonals
        pp_e, pp_n = -pE * xE * iX, -pN * yN * iY  # P(J,I)-P(J,I+1), P(J,I)-P(J+1,I)
        sP += pp_e + w(pp_e) + pp_n + s(pp_n)
        qq_e, qq_n = -qE * ea(yE * iY), -qN * no(xN * iX)  # Q(J,I)-Q(J,I+1), Q(J,I)-Q(J+1,I)
        sQ += qq_e + w(qq_e) + qq_n + s(qq_n)
        # second elimination (Q) onto the P grid; its diagonal couplings lumped
        iQ = 1.0 / sQ
        self.iQ = iQ
        sw, se, nw, ne = self.sw, self.se, self.nw, self.ne
        D = sP - sw * sw * iQ - w(se * se * iQ) - s(nw * nw * iQ) - s(w(ne * ne * iQ))
        E = -(sw * se * iQ + s(nw * ne * iQ))
        N = -(sw * nw * iQ + w(se * ne * iQ))
        d1, d2 = -sw * ne * iQ, -se * nw * iQ  # P(J,I)-P(J+1,I+1), P(J,I+1)-P(J+1,I)
        D += d1 + s(w(d1)) + w(d2) + s(d2)
        self.coarse = (D, E, N)

    def forward(self, r):
        """The coarse right-hand side of ``r`` and what :meth:`backward` needs. A coupling
        with a neighbour one column (row) over is subtracted on the slice that has one: no
        shifted copies, fewer kernels on the GPU."""
        xp = self.xp
        if r.shape != self.padded:
            full = xp.zeros(self.padded, r.dtype)
            full[: r.shape[0], : r.shape[1]] = r
            r = full
        yX, yY = r[0::2, 1::2] * self.iX, r[1::2, 0::2] * self.iY
        rP = r[0::2, 0::2] - self.pE * yX - self.pN * yY
        subtract_into(rP[:, 1:], (self.xE * yX)[:, :-1])  # X(J, I-1)
        subtract_into(rP[1:, :], (self.yN * yY)[:-1, :])  # Y(J-1, I)
        rQ = r[1::2, 1::2] - self.xN * yX - self.yE * yY
        subtract_into(rQ[:-1, :], self.qN[:-1, :] * yX[1:, :])  # X(J+1, I)
        subtract_into(rQ[:, :-1], self.qE[:, :-1] * yY[:, 1:])  # Y(J, I+1)
        yQ = rQ * self.iQ
        rP -= self.sw * yQ
        subtract_into(rP[:, 1:], (self.se * yQ)[:, :-1])  # Q(J, I-1)
        subtract_into(rP[1:, :], (self.nw * yQ)[:-1, :])  # Q(J-1, I)
        subtract_into(rP[1:, 1:], (self.ne * yQ)[:-1, :-1])  # Q(J-1, I-1)
        return rP, (yX, yY, yQ)

    def backward(self, xP, kept):
        """The solution on this level's grid from the coarse one."""
        yX, yY, yQ = kept
        t = self.sw * xP
        add_into(t[:, :-1], self.se[:, :-1] * xP[:, 1:])
        add_into(t[:-1, :], self.nw[:-1, :] * xP[1:, :])
        add_into(t[:-1, :-1], self.ne[:-1, :-1] * xP[1:, 1:])
        xQ = yQ - t * self.iQ
        t = self.pE * xP + self.xN * xQ
        add_into(t[:, :-1], self.xE[:, :-1] * xP[:, 1:])
        add_into(t[1:, :], (self.qN * xQ)[:-1, :])  # Q(J-1, I)
        xX = yX - t * self.iX
        t = self.pN * xP + self.yE * xQ
        add_into(t[:-1, :], self.yN[:-1, :] * xP[1:, :])
        add_into(t[:, 1:], (self.qE * xQ)[:, :-1])  # Q(J, I-1)
        xY = yY - t * self.iY
        x = self.xp.empty(self.padded, xP.dtype)
        x[0::2, 0::2], x[0::2, 1::2], x[1::2, 0::2], x[1::2, 1::2] = xP, xX, xY, xQ
        return x[: self.shape[0], : self.shape[1]]


class _Cholesky:
    """The complete Cholesky factor of the coarsest 5-point matrix (dense)."""

    def __init__(self, d, e, n, xp):
        self.xp, self.shape = xp, d.shape
        ny, nx = d.shape
        idx = xp.arange(ny * nx).reshape(ny, nx)
        A = xp.zeros((ny * nx, ny * nx), dtype=d.dtype)
        A[idx, idx] = d
        for a, b, c in ((idx[:, :-1], idx[:, 1:], e[:, :-1]), (idx[:-1], idx[1:], n[:-1])):
            A[a, b] = c
            A[b, a] = c
        self.L = xp.linalg.cholesky(A)
        self.solve = _solve_triangular(xp)

    def __call__(self, r):
        y = self.solve(self.L, r.ravel(), lower=True)
        return self.solve(self.L.T, y, lower=False).reshape(self.shape)


def _solve_triangular(xp):
    """SciPy's ``solve_triangular`` for NumPy arrays, CuPy's (cuBLAS) for CuPy arrays."""
    if xp.__name__ == "numpy":
        from scipy.linalg import solve_triangular
    else:
        from cupyx.scipy.linalg import solve_triangular
    return solve_triangular


class RRB:
    """``M⁻¹`` of the RRB factorisation of the 5-point matrix ``(d, e, n)``
    (:meth:`fvswe.implicit.operator.Stencil.five`); call it on a ``(ny, nx)`` residual."""

    def __init__(self, d, e, n, xp, coarse: int = COARSE_CELLS):
        self.levels = []
        while d.size > coarse:
            level = _Level(d, e, n, xp)
            self.levels.append(level)
            d, e, n = level.coarse
        self.coarsest = _Cholesky(d, e, n, xp)

    @property
    def depth(self) -> int:
        """Number of RRB levels above the Cholesky remainder."""
        return len(self.levels)

    def __call__(self, r):
        kept = []
        for level in self.levels:
            r, k = level.forward(r)
            kept.append(k)
        x = self.coarsest(r)
        for level, k in zip(reversed(self.levels), reversed(kept), strict=True):
            x = level.backward(x, k)
        return x
