"""The pentadiagonal system of the θ-scheme: ``A = I + Σ_faces c_f (difference across f)``.

The unknowns are the level increments of the ``(ny, nx)`` cells in row-major order. Each
face ``f`` of the staggered C-grid carries a coefficient ``c_f >= 0`` (``θ² g Δt² / Δx²``
times the face depth and the friction factor, docs/IMPLICIT.md); an interior face couples
its two cells, a level boundary face adds its ``c_f`` to its cell's diagonal (the outside
level is known), a wall face has ``c_f = 0``. ``A`` is then a symmetric, strictly
diagonally dominant M-matrix: symmetric positive definite.

:meth:`Stencil.apply` is the matrix-free product in difference form (``x_i - x_j`` per
face), so a field uniform along y gives exactly zero across the y faces; :meth:`Stencil.five`
is the compact diagonal storage the preconditioners factor, :meth:`Stencil.csr` the SciPy
matrix of the references (a direct solve, pyamg). Arrays are NumPy or CuPy (``xp``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Stencil:
    """Face coefficients of ``A``: ``cx`` ``(ny, nx + 1)`` on the x faces (west to east),
    ``cy`` ``(ny + 1, nx)`` on the y faces (south to north); NumPy or CuPy arrays."""

    cx: object
    cy: object

    @property
    def shape(self) -> tuple[int, int]:
        return (self.cx.shape[0], self.cy.shape[1])

    def boundary_diagonal(self, xp):
        """``1 +`` the boundary faces' coefficients of each cell: the part of the diagonal
        no interior face owns."""
        d = xp.ones(self.shape, dtype=self.cx.dtype)
        add_into(d[:, 0], self.cx[:, 0])
        add_into(d[:, -1], self.cx[:, -1])
        add_into(d[0, :], self.cy[0, :])
        add_into(d[-1, :], self.cy[-1, :])
        return d

    def apply(self, x, xp, diag=None):
        """``A x`` for a ``(ny, nx)`` array; ``diag`` the :meth:`boundary_diagonal`, if kept."""
        y = x * (self.boundary_diagonal(xp) if diag is None else diag)
        fx = self.cx[:, 1:-1] * (x[:, :-1] - x[:, 1:])
        add_into(y[:, :-1], fx)
        subtract_into(y[:, 1:], fx)
        fy = self.cy[1:-1, :] * (x[:-1, :] - x[1:, :])
        add_into(y[:-1, :], fy)
        subtract_into(y[1:, :], fy)
        return y

    def five(self, xp):
        """``(d, e, n)``, each ``(ny, nx)``: the diagonal, the coupling of each cell with its
        east neighbour and with its north neighbour (negative; 0 in the last column, row)."""
        d = self.boundary_diagonal(xp)
        add_into(d[:, :-1], self.cx[:, 1:-1])
        add_into(d[:, 1:], self.cx[:, 1:-1])
        add_into(d[:-1, :], self.cy[1:-1, :])
        add_into(d[1:, :], self.cy[1:-1, :])
        e = xp.zeros_like(d)
        e[:, :-1] = -self.cx[:, 1:-1]
        n = xp.zeros_like(d)
        n[:-1, :] = -self.cy[1:-1, :]
        return d, e, n

    def jacobi_diagonal(self, xp):
        """Jacobi's diagonal: ``1 + west + east + south + north``, in that order, where a face
        on the domain's boundary with ``c = 0`` (a wall) counts its cell's opposite face. A
        wall acts as a mirror, so a residual uniform along y (the pseudo-1-D tide between
        walls) gives a uniform ``M⁻¹ r``, bit for bit (``A``'s diagonal lacks the wall's face
        in the rows next to it and would part them); any positive diagonal is an SPD
        preconditioner. ``cg.cu``'s ``jacobi_at`` is the same sum."""
        w, e = _mirrored(self.cx[:, :-1], self.cx[:, 1:], xp, axis=1)
        s, n = _mirrored(self.cy[:-1, :], self.cy[1:, :], xp, axis=0)
        return 1.0 + w + e + s + n

    def csr(self):
        """``A`` as a SciPy CSR matrix (host, float64), cells in row-major order."""
        import scipy.sparse as sp

        host = Stencil(_host(self.cx).astype(np.float64), _host(self.cy).astype(np.float64))
        d, e, n = host.five(np)
        nx = d.shape[1]
        e, n = e.ravel()[:-1], n.ravel()[:-nx]
        return sp.diags([d.ravel(), e, e, n, n], [0, 1, -1, nx, -nx], format="csr")


def _mirrored(low, high, xp, axis: int):
    """Each cell's low and high face coefficients along ``axis``, a zero one on the domain's
    boundary (the first cells' low, the last cells' high faces) replaced by the same cell's
    opposite face (as it was: a cell alone between two walls keeps 0)."""
    first = (slice(None), slice(0, 1)) if axis == 1 else (slice(0, 1), slice(None))
    last = (slice(None), slice(-1, None)) if axis == 1 else (slice(-1, None), slice(None))
    mirrored_low, mirrored_high = low.copy(), high.copy()
    mirrored_low[first] = xp.where(low[first] == 0, high[first], low[first])
    mirrored_high[last] = xp.where(high[last] == 0, low[last], high[last])
    return mirrored_low, mirrored_high


def add_into(view, value) -> None:
    """``view += value`` in place. ``a[s] += v`` would also assign the slice back onto
    itself: a second kernel on CuPy."""
    view += value


def subtract_into(view, value) -> None:
    """``view -= value`` in place (see :func:`add_into`)."""
    view -= value


def _host(a):
    """A NumPy copy of a NumPy or CuPy array."""
    return a.get() if hasattr(a, "get") else a
