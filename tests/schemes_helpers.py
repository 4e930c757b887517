"""Shared constructions for the scheme tests: random edge sets, and — independent of
fvswe — the Cartesian 6x6 Roe matrix of docs/SCHEMES.md §3.2, physical fluxes, ``B``,
``S`` and the full 6x6 projector built with numpy.linalg.eig."""

from __future__ import annotations

import numpy as np

from fvswe.schemes import common

G = 9.81


def unit_normals(rng, E):
    th = rng.uniform(0.0, 2.0 * np.pi, E)
    return np.stack((np.cos(th), np.sin(th)), axis=1)


def random_two_layer(rng, E, speed=0.4, hmin=0.4, hmax=4.5):
    """(E, 6) wet states with moderate velocities."""
    h1 = rng.uniform(hmin, hmax, E)
    h2 = rng.uniform(hmin, hmax, E)
    u = rng.normal(0.0, speed, (E, 4))
    return np.stack((h1, h1 * u[:, 0], h1 * u[:, 1], h2, h2 * u[:, 2], h2 * u[:, 3]), axis=1)


def random_one_layer(rng, E, speed=1.0, hmin=0.4, hmax=4.5):
    h = rng.uniform(hmin, hmax, E)
    u = rng.normal(0.0, speed, (E, 2))
    return np.stack((h, h * u[:, 0], h * u[:, 1]), axis=1)


def roe_average(Wi, Wj, k):
    """(hbar, ubar (E,2)) of the layer whose components start at column k."""
    hi, hj = Wi[:, k], Wj[:, k]
    ui = Wi[:, k + 1 : k + 3] / hi[:, None]
    uj = Wj[:, k + 1 : k + 3] / hj[:, None]
    si, sj = np.sqrt(hi)[:, None], np.sqrt(hj)[:, None]
    return 0.5 * (hi + hj), (si * ui + sj * uj) / (si + sj)


def roe_matrix(Wi, Wj, normal, g=G, r=0.5):
    """Cartesian Roe matrix A_ij (E, n, n) and S_ij (E, n) of §3.2 (n = 6) or §6 (n = 3)."""
    E, n = Wi.shape
    ex, ey = normal[:, 0], normal[:, 1]
    A = np.zeros((E, n, n))
    S = np.zeros((E, n))
    c2 = []
    for k in range(0, n, 3):
        hbar, ub = roe_average(Wi, Wj, k)
        ux, uy = ub[:, 0], ub[:, 1]
        un = ux * ex + uy * ey
        c = g * hbar
        c2.append(c)
        A[:, k, k + 1] = ex
        A[:, k, k + 2] = ey
        A[:, k + 1, k] = c * ex - ux * un
        A[:, k + 1, k + 1] = un + ex * ux
        A[:, k + 1, k + 2] = ey * ux
        A[:, k + 2, k] = c * ey - uy * un
        A[:, k + 2, k + 1] = ex * uy
        A[:, k + 2, k + 2] = un + ey * uy
        S[:, k + 1] = c * ex
        S[:, k + 2] = c * ey
    if n == 6:
        A[:, 1, 3] = c2[0] * ex
        A[:, 2, 3] = c2[0] * ey
        A[:, 4, 0] = r * c2[1] * ex
        A[:, 5, 0] = r * c2[1] * ey
    return A, S


def physical_flux(W, normal, g=G):
    """F_eta(W) = F1 ex + F2 ey (§1), for (E, 6) or (E, 3)."""
    ex, ey = normal[:, 0], normal[:, 1]
    F = np.zeros_like(W)
    for k in range(0, W.shape[1], 3):
        h, qx, qy = W[:, k], W[:, k + 1], W[:, k + 2]
        qn = qx * ex + qy * ey
        p = 0.5 * g * h * h
        F[:, k] = qn
        F[:, k + 1] = qx * qn / h + p * ex
        F[:, k + 2] = qy * qn / h + p * ey
    return F


def b_times(Wi, Wj, normal, g=G, r=0.5):
    """B_ij DW with B_eta at the mid state (§1, §2.2); zero for one layer."""
    D = Wj - Wi
    out = np.zeros_like(D)
    if Wi.shape[1] == 6:
        h1 = 0.5 * (Wi[:, 0] + Wj[:, 0])
        h2 = 0.5 * (Wi[:, 3] + Wj[:, 3])
        for col, e in ((0, normal[:, 0]), (1, normal[:, 1])):
            out[:, 1 + col] = -g * h1 * e * D[:, 3]
            out[:, 4 + col] = -r * g * h2 * e * D[:, 0]
    return out


def total_fluctuation(Wi, Wj, Hi, Hj, normal, g=G, r=0.5):
    """A_ij DW - S_ij DH in the Cartesian frame (E, n)."""
    A, S = roe_matrix(Wi, Wj, normal, g, r)
    return np.einsum("eab,eb->ea", A, Wj - Wi) - S * (Hj - Hi)[:, None]


def full_roe_projector(Wi, Wj, normal, g=G, r=0.5):
    """P-_ij = K diag(s-(lambda)) K^{-1} from numpy.linalg.eig of the 6x6 (or 3x3) A_ij."""
    A, _ = roe_matrix(Wi, Wj, normal, g, r)
    lam, K = np.linalg.eig(A)
    s = 0.5 * (1.0 - np.sign(lam.real))
    P = np.einsum("eab,eb,ebc->eac", K, s, np.linalg.inv(K))
    return P.real, lam


def sign_projector(Wi, Wj, normal, g=G, r=0.5, steps=60):
    """P-_ij = (I - sign(A_ij))/2 with the matrix sign function by Newton's iteration
    X <- (X + X^{-1})/2: robust where A_ij is nearly defective (eig is not)."""
    A, _ = roe_matrix(Wi, Wj, normal, g, r)
    X = A
    for _ in range(steps):
        X = 0.5 * (X + np.linalg.inv(X))
    return 0.5 * (np.eye(A.shape[1]) - X)


def normal_matrix4(u1, u2, c1, c2, r):
    """The 4x4 normal matrix A of §3.2 (E, 4, 4)."""
    E = len(u1)
    A = np.zeros((E, 4, 4))
    A[:, 0, 1] = 1.0
    A[:, 1, 0] = c1 - u1 * u1
    A[:, 1, 1] = 2.0 * u1
    A[:, 1, 2] = c1
    A[:, 2, 3] = 1.0
    A[:, 3, 0] = r * c2
    A[:, 3, 2] = c2 - u2 * u2
    A[:, 3, 3] = 2.0 * u2
    return A


def rotation(theta):
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def rotate_states(W, R):
    """Rotate every momentum vector of (E, 6|3) states by the 2x2 matrix R."""
    out = W.copy()
    for k in range(1, W.shape[1], 3):
        out[:, k : k + 2] = W[:, k : k + 2] @ R.T
    return out


def hyperbolic_mask(Wi, Wj, normal, g=G, r=0.5, gap=1e-3):
    """Edges whose 6x6 A_ij has real eigenvalues separated by > gap * spread."""
    A, _ = roe_matrix(Wi, Wj, normal, g, r)
    lam = np.linalg.eigvals(A)
    real = np.all(np.abs(lam.imag) <= 1e-12 * np.abs(lam).max(axis=1, keepdims=True), axis=1)
    ls = np.sort(lam.real, axis=1)
    spread = ls[:, -1] - ls[:, 0]
    return real & (np.diff(ls, axis=1).min(axis=1) > gap * spread)


def rel_err(a, b, scale=None):
    """max over edges of ||a - b||_inf / scale (scale per edge, default ||b||_inf)."""
    if scale is None:
        scale = np.abs(b).max(axis=1)
    return float((np.abs(a - b).max(axis=1) / scale).max())


def hyperbolic_edges(seed, r, layers=2, E=4000, speed=None):
    """Random wet edges (states, depths, normals) with well separated real eigenvalues."""
    rng = np.random.default_rng(seed)
    if layers == 2:
        sp = speed if speed is not None else (0.4 if r < 0.9 else 0.15)
        Wi = random_two_layer(rng, E, sp)
        Wj = random_two_layer(rng, E, sp)
    else:
        Wi = random_one_layer(rng, E, speed or 1.0)
        Wj = random_one_layer(rng, E, speed or 1.0)
    Hi = rng.uniform(4.0, 6.0, E)
    Hj = rng.uniform(4.0, 6.0, E)
    n = unit_normals(rng, E)
    keep = hyperbolic_mask(Wi, Wj, n, r=r)
    assert keep.sum() > E // 2
    return Wi[keep], Wj[keep], Hi[keep], Hj[keep], n[keep]


def lake_at_rest(rng, E, layers, exact):
    """Lake at rest on Test 2's free surfaces (eta1 = 2, eta2 = 1), q = 0 (§7.3).

    With ``exact`` the depths H are multiples of 2^-10, so all jumps are exact.
    """
    x = rng.uniform(-3, 3, (2, E))
    H = 1.0 - 1.5 * np.exp(-(x**2))
    if exact:
        H = np.round(H * 1024) / 1024
    z = np.zeros(E)
    if layers == 2:
        W = [np.stack((z + 1.0, z, z, Hk + 1.0, z, z), axis=1) for Hk in H]
    else:
        W = [np.stack((Hk + 2.0, z, z), axis=1) for Hk in H]
    return W[0], W[1], H[0], H[1], unit_normals(rng, E)


def critical_shear(h1, h2, r, shift=0.0):
    """The layer shear ``u1 - u2`` at the edge of hyperbolicity for depths ``h1, h2`` and
    velocities ``shift +/- shear/2``: bisection on the sign of EIG4's discriminant."""
    c1, c2 = G * h1, G * h2
    lo, hi = np.zeros(len(h1)), np.full(len(h1), 3.0 * np.sqrt((1 - r) * (c1 + c2)))
    for _ in range(80):  # past ~60 steps lo, hi are adjacent floats: a fixed point
        mid = 0.5 * (lo + hi)
        real = common.eig4(shift + mid / 2, shift - mid / 2, c1, c2, r)[4] >= 0
        lo, hi = np.where(real, mid, lo), np.where(real, hi, mid)
    return lo


def sheared_edges(h1, h2, u1, u2, n):
    """Edges whose cells share the normal velocities ``u1``, ``u2`` (so the Roe averages
    are those), with depths 2 % apart: ``Wi, Wj``."""
    Wi, Wj = np.zeros((len(h1), 6)), np.zeros((len(h1), 6))
    for W, f in ((Wi, 0.99), (Wj, 1.01)):
        W[:, 0], W[:, 3] = f * h1, (2.0 - f) * h2
        W[:, 1:3] = W[:, :1] * u1[:, None] * n
        W[:, 4:6] = W[:, 3:4] * u2[:, None] * n
    return Wi, Wj


def near_double_internal_root(r, shift, E=64):
    """Edges at the edge of hyperbolicity: the internal pair almost coincides (§3.5 (b)).

    Both sides share depths; the layer shear is found by bisection on the sign
    of EIG4's discriminant, then stepped back into the hyperbolic side.
    """
    rng = np.random.default_rng(12)
    h1 = rng.uniform(0.5, 3.0, E)
    h2 = rng.uniform(0.5, 3.0, E)
    du = critical_shear(h1, h2, r, shift)
    n = unit_normals(rng, E)
    Wi, Wj = sheared_edges(h1, h2, shift + du / 2, shift - du / 2, n)
    return Wi, Wj, np.full(E, 5.0), np.full(E, 5.0), n


def gap_sweep_edges(r, side, steps=range(0, 17, 2), E=4):
    """Two-layer edges whose internal pair sits at chosen gaps (docs/SCHEMES.md §3.5).

    For ``E`` depth pairs the critical shear is reduced by the factors ``1 - 10^-k``
    (k in ``steps``): the internal gap shrinks like ``10^(-k/2)`` of the external
    one, down to the float64 floor (~1e-8) and below it to an exact or complex
    double root. A common velocity then puts the pair's centre at
    ``side * 0.3 (lambda4 - lambda1)`` (one sign) or, with ``side = 0``, on 0
    (opposite signs). The bottom jumps at random. Returns ``Wi, Wj, Hi, Hj, normal``.
    """
    rng = np.random.default_rng(21)
    h1 = rng.uniform(0.5, 3.0, E)
    h2 = rng.uniform(0.5, 3.0, E)
    factors = np.array([1.0 - 10.0**-k for k in steps])
    du = (critical_shear(h1, h2, r)[:, None] * factors[None, :]).ravel()
    h1, h2 = np.repeat(h1, len(factors)), np.repeat(h2, len(factors))
    l1, l2, l3, l4, _ = common.eig4(du / 2, -du / 2, G * h1, G * h2, r)
    shift = side * 0.3 * (l4 - l1) - 0.5 * (l2 + l3)
    n = unit_normals(rng, len(du))
    Wi, Wj = sheared_edges(h1, h2, shift + du / 2, shift - du / 2, n)
    return Wi, Wj, rng.uniform(4.0, 6.0, len(du)), rng.uniform(4.0, 6.0, len(du)), n


def close_pair_edges(seed, r, E=3000, bed=0.0):
    """Two-layer edges whose internal pair nearly coincides and is transonic (docs/SCHEMES.md
    §3.6, "The internal pair"), ``E`` tried of each construction: :func:`critical_cells`,
    :func:`critical_roe` and :func:`close_cells`; then a common velocity puts 0 between the
    cells' ``lambda2`` (a third of the edges), their ``lambda3`` (a third: one wave of the pair
    transonic, the other maybe not) or at the pair's mean (both transonic where the cells'
    pairs lie apart). Kept where the cells' and the Roe state's pairs are real: relative gaps
    from the float64 floor (about 1e-8) to about 0.1. The bed jumps by ``bed`` times the
    cells' relative difference. Returns ``Wi, Wj, Hi, Hj, normal``."""
    rng = np.random.default_rng(seed)
    parts = [transonic_pair(rng, r, *build(rng, r, E), bed)
             for build in (critical_cells, critical_roe, close_cells)]  # fmt: skip
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))


def critical_cells(rng, r, E):
    """Each cell at its own critical shear reduced by ``1 - 10^-k`` (k uniform in [0.5, 17]),
    the cells up to 30 % apart in depth and 0.3 external speeds in velocity: ``(U, rho)``, the
    cells' ``(h1, u1, h2, u2)`` (2, E, 4) and their relative difference."""
    rho = 10.0 ** rng.uniform(-4.0, -0.5, E)
    h = rng.uniform(0.5, 3.0, (2, E))
    U = np.empty((2, E, 4))
    for c in range(2):
        h1, h2 = h * (1.0 + rho * rng.uniform(-0.5, 0.5, (2, E)))
        shear = critical_shear(h1, h2, r) * (1.0 - 10.0 ** rng.uniform(-17.0, -0.5, E))
        mean = rho * rng.uniform(-0.5, 0.5, E) * np.sqrt(G * (h1 + h2))
        U[c] = np.stack((h1, mean + shear / 2, h2, mean - shear / 2), 1)
    return U, rho


def critical_roe(rng, r, E):
    """The Roe state at its critical shear reduced by ``1 - 10^-k``, its cells apart by a jump
    that keeps the Roe averages (as :func:`critical_cells`)."""
    rho = 10.0 ** rng.uniform(-4.0, -0.5, E)
    h = rng.uniform(0.5, 3.0, (2, E))
    shear = critical_shear(h[0], h[1], r) * (1.0 - 10.0 ** rng.uniform(-17.0, -0.5, E))
    U = np.empty((2, E, 4))
    for k, (hk, uk) in enumerate(((h[0], shear / 2), (h[1], -shear / 2))):
        hi = hk * (1.0 + rho * rng.normal(0.0, 1.0, E))
        ui = uk + rho * rng.normal(0.0, 1.0, E) * np.sqrt(G * (h[0] + h[1]))
        U[:, :, 2 * k] = hi, 2.0 * hk - hi  # Roe's hbar = hk
        U[:, :, 2 * k + 1] = ui, uk - (ui - uk) * np.sqrt(hi / (2.0 * hk - hi))  # ubar = uk
    return U, rho


def close_cells(rng, r, E):
    """Pairs closing to the float64 floor (as :func:`critical_cells`): for a target gap
    ``gam = 10^U(-8.5, -1.5)`` each cell at its critical shear reduced by about ``gam^2``,
    the cells' mean velocities apart by ``apart`` (from ``gam`` to 0.3 external speeds) and
    their depths by about ``gam^2 / apart``, so that the Roe shear stays as close: nearly
    equal cells, or cells whose pairs lie far apart around a Roe pair that still closes."""
    gam = 10.0 ** rng.uniform(-8.5, -1.5, E)
    apart = 10.0 ** rng.uniform(np.log10(gam), -0.5, E)
    jitter = gam**2 / apart * 10.0 ** rng.uniform(-1.0, 1.0, E)
    h = rng.uniform(0.5, 3.0, (2, E))
    U = np.empty((2, E, 4))
    for c in range(2):
        h1, h2 = h * (1.0 + jitter * rng.uniform(-0.5, 0.5, (2, E)))
        shear = critical_shear(h1, h2, r) * (1.0 - gam**2 * 10.0 ** rng.uniform(-1.0, 1.0, E))
        mean = (c - 0.5) * apart * np.sqrt(G * (h1 + h2))
        U[c] = np.stack((h1, mean + shear / 2, h2, mean - shear / 2), 1)
    return U, apart


def transonic_pair(rng, r, U, rho, bed):
    """The edges of :func:`close_pair_edges` from its constructions' cells ``U`` (2, E, 4)."""
    E = U.shape[1]
    cells = [common.eig4(V[:, 1], V[:, 3], G * V[:, 0], G * V[:, 2], r) for V in U]
    mode = rng.integers(0, 3, E)
    a = np.where(mode == 0, cells[0][1], cells[0][2])
    b = np.where(mode == 0, cells[1][1], cells[1][2])
    zero = np.minimum(a, b) + rng.uniform(0.0, 1.0, E) * np.abs(b - a)
    mean = 0.25 * (cells[0][1] + cells[0][2] + cells[1][1] + cells[1][2])
    zero = np.where(mode == 2, mean, zero)
    swap = (a > b)[:, None]
    U = np.stack((np.where(swap, U[1], U[0]), np.where(swap, U[0], U[1])))
    U[:, :, 1] -= zero
    U[:, :, 3] -= zero
    n = unit_normals(rng, E)
    Wi, Wj = (np.concatenate([np.stack((V[:, k], V[:, k] * V[:, k + 1] * n[:, 0],
                                        V[:, k] * V[:, k + 1] * n[:, 1]), 1)
                              for k in (0, 2)], 1) for V in U)  # fmt: skip
    Hi = np.full(E, 5.0)
    Hj = Hi + bed * rho * rng.normal(0.0, 1.0, E)
    L1, L2, _ = common.edge2(Wi, Wj, Hi, Hj, n[:, 0], n[:, 1], G, 5e-3)
    keep = (common.eig4(L1.u, L2.u, L1.c2, L2.c2, r)[4] >= 0) & (cells[0][4] >= 0)
    keep &= (cells[1][4] >= 0) & (U[:, :, ::2].min(axis=(0, 2)) > 0.1)
    return Wi[keep], Wj[keep], Hi[keep], Hj[keep], n[keep]


def fluctuation_ratio(Fm, edges, g=G, r=0.5):
    """``|D-|_s / max(|v|_s, |s DU|_s)`` per edge (docs/SCHEMES.md §3.6, "The internal
    pair"): ``D-`` the normal part of ``F-``, ``s = max(|lambda1|, |lambda4|)`` of the
    normal Roe matrix (numpy.linalg.eigvals), ``|x|_s = max(|x0|, |x1|/s, |x2|, |x3|/s)``; and the
    relative internal gap ``(lambda3 - lambda2)/(lambda4 - lambda1)`` (below 1e-4 from
    :func:`internal_gap`)."""
    Wi, Wj, Hi, Hj, n = edges
    roe = [roe_average(Wi, Wj, k) for k in (0, 3)]
    u = [np.einsum("ed,ed->e", ub, n) for _, ub in roe]
    A = normal_matrix4(u[0], u[1], g * roe[0][0], g * roe[1][0], r)
    lam = np.sort(np.linalg.eigvals(A).real, axis=1)
    s = np.maximum(np.abs(lam[:, 0]), np.abs(lam[:, 3]))[:, None]
    unit = np.array([1.0, 0.0, 1.0, 0.0]) + np.array([0.0, 1.0, 0.0, 1.0]) / s

    def size(x):
        return np.abs(x * unit).max(axis=1)

    v = rotated_normal(total_fluctuation(Wi, Wj, Hi, Hj, n, g, r), n)
    du = rotated_normal(Wj, n) - rotated_normal(Wi, n)
    ratio = size(rotated_normal(Fm, n)) / np.maximum(size(v), size(s * du))
    gap = (lam[:, 2] - lam[:, 1]) / (lam[:, 3] - lam[:, 0])
    close = internal_gap(u[0], u[1], g * roe[0][0], g * roe[1][0], r, lam)
    return ratio, np.where(gap < 1e-4, close / (lam[:, 3] - lam[:, 0]), gap)


def internal_gap(u1, u2, c1, c2, r, lam):
    """``lambda3 - lambda2`` of a close real pair, exact for the float64 data to a relative
    ``O(gap)`` where eigvals is not (its error ``~eps/gap`` is the gap itself near 1e-8):
    ``f = p1 p2 - r c1 c2`` (§3.4) has its maximum ``f* > 0`` between the pair, at ``x*``
    (Newton on ``f'`` from the pair's mean in ``lam``), so the gap is ``2 sqrt(2 f*/|f''|)``
    with ``f*`` in double-double (its cancellation is what limits float64)."""
    x = 0.5 * (lam[:, 1] + lam[:, 2])
    for _ in range(4):
        a, b = x - u1, x - u2
        p1, p2 = a * a - c1, b * b - c2
        d2 = 2.0 * (p1 + p2) + 8.0 * a * b
        x = x - 2.0 * (a * p2 + b * p1) / d2
    p = [_dd_add(_dd_mul(d, d), (-c, 0.0)) for d, c in ((_two_sum(x, -u1), c1),
                                                      (_two_sum(x, -u2), c2))]  # fmt: skip
    k = _dd_mul(_two_prod(r * np.ones_like(c1), c1), (c2, 0.0))
    top = _dd_add(_dd_mul(*p), (-k[0], -k[1]))[0]
    return 2.0 * np.sqrt(2.0 * np.maximum(top, 0.0) / np.abs(d2))


def _two_sum(a, b):
    """``a + b`` as an unevaluated sum ``(s, e)`` (Knuth)."""
    s = a + b
    t = s - a
    return s, (a - (s - t)) + (b - t)


def _two_prod(a, b):
    """``a b`` as ``(p, e)`` exactly (Dekker's splitting)."""
    p = a * b
    ah, al, bh, bl = (*_split(a), *_split(b))
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _split(a):
    c = 134217729.0 * a  # 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _dd_add(x, y):
    """Double-double ``x + y``."""
    s, e = _two_sum(x[0], y[0])
    return _two_sum(s, e + (x[1] + y[1]))


def _dd_mul(x, y):
    """Double-double ``x y``."""
    p, e = _two_prod(x[0], y[0])
    return _two_sum(p, e + (x[0] * y[1] + x[1] * y[0]))


def rotated_normal(W, normal):
    """The normal components ``(h1, q1n, h2, q2n)`` (or ``(h, qn)``) of Cartesian (E, 6|3) rows."""
    ex, ey = normal[:, 0], normal[:, 1]
    cols = []
    for k in range(0, W.shape[1], 3):
        cols += [W[:, k], W[:, k + 1] * ex + W[:, k + 2] * ey]
    return np.stack(cols, axis=1)


def cell_eigenvalues(W, normal, g=G, r=0.5):
    """Sorted eigenvalues (E, 4|2) of each cell's own normal matrix (§3.2 at the cell's
    state, numpy.linalg.eigvals); NaN rows where the internal pair is complex."""
    U = rotated_normal(W, normal)
    if W.shape[1] == 3:
        c = np.sqrt(g * U[:, 0])
        u = U[:, 1] / U[:, 0]
        return np.stack((u - c, u + c), axis=1)
    A = normal_matrix4(U[:, 1] / U[:, 0], U[:, 3] / U[:, 2], g * U[:, 0], g * U[:, 2], r)
    lam = np.linalg.eigvals(A)
    out = np.sort(lam.real, axis=1)
    out[np.any(lam.imag != 0, axis=1)] = np.nan
    return out


def transonic(Wi, Wj, normal, g=G, r=0.5):
    """Edges where some field's eigenvalue is < 0 in cell i and > 0 in cell j."""
    li, lj = cell_eigenvalues(Wi, normal, g, r), cell_eigenvalues(Wj, normal, g, r)
    return np.any((li < 0) & (lj > 0), axis=1)


def harten_hyman_split(Wi, Wj, Hi, Hj, normal, g=G, r=0.5):
    """Roe's normal ``D-`` with the Harten-Hyman fix (§3.6), from numpy.linalg.eig of the
    rotated 4x4 (2x2) Roe matrix: ``K (s- alpha + w beta)`` with ``alpha = K^{-1} v``,
    ``beta = K^{-1} DU`` and, for a field with cell eigenvalues ``ll < 0 < lr``,
    ``w = ll (lr - lam)/(lr - ll) - min(lam, 0)``."""
    ex, ey = normal[:, 0], normal[:, 1]
    v = rotated_normal(total_fluctuation(Wi, Wj, Hi, Hj, normal, g, r), normal)
    du = rotated_normal(Wj, normal) - rotated_normal(Wi, normal)
    us, cs = [], []
    for k in range(0, Wi.shape[1], 3):
        hbar, ub = roe_average(Wi, Wj, k)
        us.append(ub[:, 0] * ex + ub[:, 1] * ey)
        cs.append(g * hbar)
    if Wi.shape[1] == 6:
        A = normal_matrix4(us[0], us[1], cs[0], cs[1], r)
    else:
        A = np.zeros((len(v), 2, 2))
        A[:, 0, 1] = 1.0
        A[:, 1, 0] = cs[0] - us[0] ** 2
        A[:, 1, 1] = 2.0 * us[0]
    lam, K = np.linalg.eig(A)
    order = np.argsort(lam.real, axis=1)
    lam = np.take_along_axis(lam.real, order, axis=1)
    K = np.take_along_axis(K.real, order[:, None, :], axis=2)
    alpha = np.linalg.solve(K, v[..., None])[..., 0]
    beta = np.linalg.solve(K, du[..., None])[..., 0]
    ll, lr = cell_eigenvalues(Wi, normal, g, r), cell_eigenvalues(Wj, normal, g, r)
    fix = (ll < 0) & (lr > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(fix, ll * (lr - lam) / (lr - ll) - np.minimum(lam, 0.0), 0.0)
    s = 0.5 * (1.0 - np.sign(lam))
    return np.einsum("eab,eb->ea", K, s * alpha + w * beta)


def transonic_edges(seed, r, layers=2, E=4000):
    """Random wet, hyperbolic edges drifting along the normal at up to the external speed,
    kept where some wave is transonic (``transonic``): the edges the entropy fix acts on."""
    rng = np.random.default_rng(seed)
    Wi, Wj, Hi, Hj, n = hyperbolic_edges(seed, r, layers, E)
    drift = rng.uniform(-1.0, 1.0, len(Wi)) * np.sqrt(G * (Wi[:, 0] + Wi[:, -3]))
    for W in (Wi, Wj):
        for k in range(0, W.shape[1], 3):
            W[:, k + 1 : k + 3] += (W[:, k] * drift)[:, None] * n
    keep = transonic(Wi, Wj, n, r=r) & hyperbolic_mask(Wi, Wj, n, r=r)
    return Wi[keep], Wj[keep], Hi[keep], Hj[keep], n[keep]
