"""The GPU's steps: an integrator's plan (:mod:`fvswe.integrators`) compiled into launches.

:func:`compile_plan` maps each op to a kernel of the run's variant or to a call of the halo
hook: the ``edge`` variant evaluates a residual in its own pass (``edge_pass``, once for the
``speeds`` and the ``update`` that read it), the fused variants evaluate it inside the pass
that reads it (``<variant>_step``); the step's last update or combination closes the step
(``OP_ADVANCE``). The backend launches the result and captures it in CUDA graphs
(:meth:`fvswe.backends.gpu.GpuBackend.advance`); :func:`batch_size` chooses how many steps a
graph replays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ...integrators import Op
from ..cuda_header import OP_ADVANCE, OP_COUNT, OP_DT, OP_STAGE_SHIFT, OP_UPDATE

#: The calls of a distributed run's halo hook (:class:`fvswe.backends.gpu.halo.GpuHalo`).
HOOKS = ("exchange", "exchange_theta", "reduce_dt", "tally", "reduce_extent", "exchange_faces")


@dataclass(frozen=True)
class Launch:
    """A kernel launch with its op bits on buffers ``src`` (the state it reads) and ``dst``
    (the one it writes), or, for a kernel in :data:`HOOKS`, a call of the halo hook
    (``dst``: the buffer exchanged; ``now``: the Δt reduced is this step's)."""

    kernel: str
    op: int = 0
    src: str = ""
    dst: str = ""
    now: bool = True
    stage: int = 0


def _pass(op: Op, kernel: str, bits: int) -> Launch:
    return Launch(
        kernel, bits | op.stage << OP_STAGE_SHIFT, op.src, op.dst or op.src, stage=op.stage
    )


def _advance(out: list[Launch], lagged: bool) -> None:
    """``OP_ADVANCE`` on the kernel that ends the step: its last combination, else its last
    update (whose ``OP_DT``, lagged, then sets the next dt at once)."""
    kinds = [launch.kernel for launch in out]
    last = max(
        k for k, name in enumerate(kinds) if name != "combine_step" and out[k].op & OP_UPDATE
    )
    combines = [k for k, name in enumerate(kinds) if name == "combine_step"]
    if combines and combines[-1] > last:
        last = combines[-1]
        out[last] = replace(out[last], op=out[last].op | (OP_DT if lagged else 0))
    out[last] = replace(out[last], op=out[last].op | OP_ADVANCE)


def compile_plan(
    ops: tuple[Op, ...],
    variant: str,
    lagged: bool,
    sources: bool = False,
    bed: bool = False,
    maxima: bool = False,
    counted: bool = False,
    linear: bool = False,
) -> tuple[Launch, ...]:
    """The launches of a step plan (or of the initial Δt's) for ``variant`` (``lagged``: the
    step's first update gave the next step's Δt; ``sources``: the run has point sources or
    rain, whose means the step computes first; ``bed``: a moving bed, whose ``bed`` ops are
    ``bed_pass`` launches; ``maxima``: maximum and arrival maps, whose ``maxima`` op is a
    ``maxima_pass`` launch; ``counted``: edges whose volumes are counted, a ``count_edges``
    launch after each update, before its ``limit_update`` where the limiter's theta is;
    ``linear``: the linear reconstruction, whose ``troubled_pass`` and ``faces_pass`` precede
    each residual's evaluation (on GPU ranks each followed by its halo hook: the variables'
    range reduced over the ranks, the halo cells' face states from their owners), but where
    the face slots hold that residual's state already, as the CPU's do)."""
    step = "volume_pass" if variant == "edge" else f"{variant}_step"
    out: list[Launch] = []
    slots_of = None  # edge: the buffer whose residual the slots hold
    count = False  # fused: the residual the next pass evaluates is counted
    limited = any(op.kind == "limit_update" for op in ops)  # count_edges reads its theta
    faces_of = None  # linear: the buffer whose face states the face slots hold
    for op in ops:
        if op.kind == "residual" and linear and faces_of != op.src:
            out += [_pass(op, "troubled_pass", 0), Launch("reduce_extent"),
                    _pass(op, "faces_pass", OP_COUNT if op.count else 0),
                    Launch("exchange_faces")]  # fmt: skip
            faces_of = op.src
        if op.kind == "residual" and variant == "edge":
            if slots_of != op.src:
                out.append(_pass(op, "edge_pass", OP_COUNT if op.count else 0))
                slots_of = op.src
        elif op.kind == "residual":
            count = op.count
        elif op.kind == "sources" and sources:
            out.append(Launch("source_means"))
        elif op.kind == "bed" and bed:
            out.append(_pass(op, "bed_pass", 0))
        elif op.kind == "maxima" and maxima:
            out.append(_pass(op, "maxima_pass", 0))
        elif op.kind == "speeds":
            out.append(_pass(op, step, OP_DT))
        elif op.kind == "update":
            bits = OP_UPDATE | (OP_DT if op.dt else 0) | (OP_COUNT if count else 0)
            out.append(_pass(op, step, bits))
            slots_of = faces_of = None
            if counted and not limited:
                out.append(_pass(op, "count_edges", 0))
        elif op.kind in ("limit_theta", "limit_update"):
            if counted and op.kind == "limit_update":
                out.append(_pass(op, "count_edges", 0))
            out.append(_pass(op, op.kind, 0))
        elif op.kind == "combine":
            out.append(_pass(op, "combine_step", 0))
        elif op.kind == "exchange":
            theta = op.dst == "theta"
            out.append(
                Launch("exchange_theta" if theta else "exchange", dst="" if theta else op.dst)
            )
        elif op.kind in ("reduce_dt", "tally"):
            out.append(Launch(op.kind, now=op.now))
        elif op.kind == "advance":
            _advance(out, lagged)
    return tuple(out)


def steps_left(ctrl: np.void, t_end: float, launched: int = 0) -> tuple[int, bool]:
    """``(steps, exact)``: how many steps remain beyond the ``launched`` ones not yet seen
    in ``ctrl``. Exact when ``max_steps`` binds; else estimated from the current dt (plus
    one, as a lagged dt may shrink), and then the device skips any surplus."""
    left = int(ctrl["max_steps"] - ctrl["steps"]) - launched
    dt = float(ctrl["dt"])
    if dt > 0 and math.isfinite(dt) and math.isfinite(t_end):
        est = math.ceil((t_end - float(ctrl["t"])) / dt) + 1 - launched
        if est < left:
            return est, False
    return left, True


def batch_size(ctrl: np.void, t_end: float, batch: int, launched: int = 0) -> int:
    """Steps in the next graph: a power of two (>= 2, <= ``batch``), few idle steps: never
    past an exact count (but for a single step left), an estimate rounded up."""
    left, exact = steps_left(ctrl, t_end, launched)
    left = max(left, 1)
    if exact:
        return min(batch, 2 ** max(1, int(math.log2(left))))
    return min(batch, 2 ** max(1, math.ceil(math.log2(left))))
