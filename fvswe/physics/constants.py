"""The constants and the edge-state record every formula shares (docs/SCHEMES.md).

Plain Python, imported by the physics (Numba, and emitted for CUDA), by the NumPy
references in :mod:`fvswe.schemes` and by the backends; it imports nothing of fvswe, so
:mod:`fvswe.physics` depends on nothing above it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Flag bits reported per edge (interface contract).
FLAG_NONHYPERBOLIC = 1
FLAG_NEAR_COINCIDENT = 2
FLAG_THIN = 4

#: EIG4 (§3.4): Newton stopping rule |dx| <= NEWTON_TOL (|x| + cext), at most NEWTON_MAXIT steps.
NEWTON_TOL = 1e-14
NEWTON_MAXIT = 30
#: Newton steps polishing each deflated internal root (§3.4 step 2).
POLISH_STEPS = 2
#: A polished internal root that moved by more than POLISH_REACH (lambda4 - lambda1) and raised
#: |f| was thrown off a near-double root: the deflated pair is kept (§3.4 step 2). 1 switches
#: the guard off (float64); the float32 GPU modules set 1e-3 (fvswe.physics.common.FLOAT32).
POLISH_REACH = 1.0
#: Near-coincident internal pair: lambda3 - lambda2 < NEAR_COINCIDENT (lambda4 - lambda1) (§3.5).
NEAR_COINCIDENT = 1e-6
#: The entropy fix gives the internal pair one weight where lambda3 - lambda2 < PAIR_GAP
#: (lambda4 - lambda1) (§3.6, "The internal pair"): its waves' own weights only above it.
PAIR_GAP = 1e-2
#: Thin edges (§13.1): a lower layer thinner than the bed step and than PIERCED_RATIO times the
#: shallower side's total depth takes the hydrostatic reconstruction.
PIERCED_RATIO = 0.05
#: The outrun test (§13.1) runs only where a side's lower-layer normal velocity lies farther
#: than sqrt(OUTRUN_REACH (c1^2 + c2^2)) from both layers' velocities: it needs more than
#: cext, and the factor leaves room for the rounding of U and cext (its answer is unchanged).
OUTRUN_REACH = 0.5

SQRT2 = float(np.sqrt(2.0))

#: Rusanov safeguard (§5.2): a node gap <= RUSANOV_GAP (|lambda1| + |lambda4|).
RUSANOV_GAP = 1e-12
#: Below this total depth (and ``(1 - r) g`` times it) an edge's approximate eigenvalues take
#: the dry limit (§5.1): the smallest normal float64, so that ``1/(h1 + h2)`` stays finite on
#: the denormal films a wetting front leaves (a reciprocal of one overflowed to inf, 0 inf = NaN).
DRY_DEPTH = float(np.finfo(np.float64).tiny)

#: Newton on the discharge ghost's celerity (§7.5): at most this many steps, stopping once a
#: step is below ``DISCHARGE_TOL`` times the celerity; mirrored by the backends.
DISCHARGE_MAXIT = 60
DISCHARGE_TOL = 1e-15

#: Bottom-friction laws: the ``kind`` codes of every backend (0: none; §14).
FRICTION_KINDS = {"chezy": 1, "manning": 2}
CHEZY = FRICTION_KINDS["chezy"]

#: Large & Pond (1981): C_d = 1.2e-3 below this 10 m wind speed (m/s) ...
LP_BREAK = 11.0
#: ... and (0.49 + 0.065 U10) 1e-3 above it, U10 held at this speed beyond it (§15).
LP_CAP = 25.0


class Layer(NamedTuple):
    """One layer seen from an edge, rotated to (normal, tangent) (§0, §3.1, §8).

    ``*i``/``*j`` are the two sides; ``un*``/``ut*`` desingularised velocities;
    ``hbar, u, w, c2`` the Roe averages ``hbar``, ``ubar.eta``, ``ubar.tau``,
    ``g hbar``; ``dh, dqn, dqt`` the jumps ``j - i``.
    """

    hi: np.ndarray
    hj: np.ndarray
    qni: np.ndarray
    qnj: np.ndarray
    qti: np.ndarray
    qtj: np.ndarray
    uni: np.ndarray
    unj: np.ndarray
    uti: np.ndarray
    utj: np.ndarray
    hbar: np.ndarray
    u: np.ndarray
    w: np.ndarray
    c2: np.ndarray
    dh: np.ndarray
    dqn: np.ndarray
    dqt: np.ndarray
