"""Jacobi-preconditioned (or plain) CG on the GPU in two kernel launches an iteration.

The kernels (``cg.cu`` beside this module, compiled by NVRTC through CuPy's RawModule) do
what :func:`~fvswe.implicit.cg.pcg` does with the same formulas (``α = r·z / (p·Ap + tiny)``,
``β = r·z (new) / (r·z (old) + tiny)``), the operator of
:class:`~fvswe.implicit.operator.Stencil` in difference form from its face coefficients,
and the dot products reduced on the device inside the kernels (no cuBLAS, no host
synchronisation inside an iteration): ``cg_product`` forms the direction ``p = z + β p``
and ``q = A p`` with ``p·q``; ``cg_update`` advances ``x`` and ``r``, applies ``M⁻¹`` and
reduces ``r·r`` and ``r·z``. The stopping test reads the scalars every ``check``
iterations as :func:`~.cg.pcg` does, one transfer each. The coefficients come from the
step's array code; only the linear algebra is here. ``runtime`` is CuPy, or on the host
the CUDA emulator of tests/host_runtime.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .cg import MAX_ITERATIONS, TOL, Solve, _tests, _verdict, not_converged

#: The preconditioners these kernels apply (``none``: ``M = I``).
PRECONDITIONERS = ("jacobi", "none")
#: Threads of a block (``THREADS`` in cg.cu) and the most blocks of a launch (each thread
#: walks the cells grid-stride beyond ``THREADS * BLOCKS``: about a full H200).
THREADS, BLOCKS = 256, 1024
SOURCE = Path(__file__).with_name("cg.cu")
#: Slots of the scalar array (cg.cu): p·Ap, r·r, r·z after an even, an odd number of updates.
PQ, RR, RZ = 0, 1, 2

_MODULES: dict = {}


def applies(xp, preconditioner: str) -> bool:
    """Whether a step on ``xp`` solves with these kernels: CuPy (a module with RawModule)
    and a preconditioner of :data:`PRECONDITIONERS`."""
    return preconditioner in PRECONDITIONERS and hasattr(xp, "RawModule")


def _module(runtime, dtype):
    key = (id(runtime), np.dtype(dtype).name)
    if key not in _MODULES:
        real = "double" if np.dtype(dtype) == np.float64 else "float"
        code = SOURCE.read_text()
        _MODULES[key] = runtime.RawModule(code=code, options=("--std=c++17", f"-DREAL={real}"))
    return _MODULES[key]


class KernelCG:
    """The CG of one system shape at a time on ``runtime`` in ``dtype`` (buffers kept)."""

    def __init__(self, runtime, dtype, preconditioner: str) -> None:
        module = _module(runtime, dtype)
        self.start, self.product, self.update = (
            module.get_function(name) for name in ("cg_start", "cg_product", "cg_update")
        )
        self.runtime, self.dtype = runtime, np.dtype(dtype)
        self.jacobi = np.int32(preconditioner == "jacobi")
        self.tiny = np.finfo(self.dtype).tiny
        self._shape = None

    def _buffers(self, shape) -> None:
        if shape == self._shape:
            return
        rt, n = self.runtime, shape[0] * shape[1]
        self.blocks = min(BLOCKS, -(-n // THREADS))
        self.r, self.z, self.inv, self.q, *self.p = (rt.empty(n, self.dtype) for _ in range(6))
        self.partial = rt.empty(2 * self.blocks, self.dtype)
        self.counter = rt.zeros(1, np.uint32)  # the last block sets it back to 0
        self.s = rt.zeros(4, self.dtype)
        self._shape = shape

    def _launch(self, kernel, *args) -> None:
        kernel((self.blocks,), (THREADS,), (*args, self.partial, self.counter, self.s))

    def solve(self, stencil, b, x, tol: float = TOL, maxiter: int = MAX_ITERATIONS,
              check: int = 1) -> tuple[object, Solve]:  # fmt: skip
        """``A x = b`` from the guess ``x`` (updated in place where C-contiguous, else a
        copy; returned) as
        :func:`~.cg.pcg`: the same tests (the guess; 1, 2, 4, ... below ``check``; every
        ``check``), at most ``check - 1`` iterations past the criterion."""
        rt, (ny, nx) = self.runtime, b.shape
        self._buffers(b.shape)
        # row-major, all four (the step's y coefficients are a transposed view: one copy)
        b, x, cx, cy = (rt.ascontiguousarray(a, dtype=self.dtype)
                        for a in (b, x, stencil.cx, stencil.cy))  # fmt: skip
        nx_, ny_, tiny = np.int32(nx), np.int32(ny), self.tiny
        flat = x.reshape(-1)  # a view: the kernels update x
        self._launch(self.start, b.reshape(-1), flat, cx, cy, nx_, ny_, self.jacobi, self.r,
                     self.z, self.inv)  # fmt: skip
        residual = math.sqrt(float(self.s.get()[RR]))  # the one transfer before the loop
        if residual < tol:
            return x, Solve(0, residual)
        for k in range(1, maxiter + 1):
            parity = np.int32(k & 1)
            self._launch(self.product, self.z, self.p[1 - parity], cx, cy, nx_, ny_,
                         np.int32(k == 1), parity, tiny, self.p[parity], self.q)  # fmt: skip
            self._launch(self.update, self.p[parity], self.q, self.inv, np.int32(nx * ny),
                         self.jacobi, parity, tiny, flat, self.r, self.z)  # fmt: skip
            if _tests(k, check) or k == maxiter:
                s = self.s.get()
                done = _verdict(k, tol, s[RR], s[PQ], s[RZ + 1 - parity])
                if done is not None:
                    return x, done
        raise not_converged(math.sqrt(float(s[RR])), maxiter, tol)
