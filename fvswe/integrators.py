"""Time integration as data: each integrator is a list of stages, each step a plan of operations.

A stage is a forward-Euler update of a state (``residual``: the edge pass into the per-cell
slots; ``update``: the cells from their slots, with the positivity limiter) followed by a
convex combination with the step's start (Shu-Osher form: ``U_{s+1} = a U^n + (1 - a)
(U_s + dt L(U_s))``), so the limiter's guarantee holds at every stage and for the step
(SSP: Gottlieb, Shu and Tadmor, SIAM Review 43, 2001). :func:`step_plan` lays a step out as
:class:`Op` records — residual, speeds, update, limiter, tally, combine, halo exchange, Δt
reduction, advance — which the CPU backend interprets with its compiled passes and the GPU
backend compiles into kernel launches and CUDA graphs (docs/ARCHITECTURE.md). Adding an
integrator is one entry of :data:`INTEGRATORS`; a new kind of per-step work is a new op
that both backends map.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError

#: The buffers a plan names: the state (``U``, holding ``U^n`` at a step's start and
#: ``U^{n+1}`` after it) and the stages' outputs (``V``, ``W``).
U, V, W = "U", "V", "W"
BUFFERS = (U, V, W)


@dataclass(frozen=True)
class Stage:
    """One stage: its time ``t + c dt``, the weight ``a`` of ``U^n`` in its combination, and
    ``weight``, the share of its residual in the step (the boundary and source counters add
    ``weight dt`` times the stage's fluxes, so that they sum what the step added)."""

    c: float
    a: float
    weight: float


@dataclass(frozen=True)
class Integrator:
    """A time integrator: ``name``, its order in time, its stages and a line of help."""

    name: str
    order: int
    stages: tuple[Stage, ...]
    help: str


#: Every integrator, the default first (SSP Runge-Kutta in Shu-Osher form).
INTEGRATORS: tuple[Integrator, ...] = (
    Integrator("euler", 1, (Stage(0.0, 0.0, 1.0),), "forward Euler (first order in time)"),
    Integrator(
        "ssp-rk2", 2, (Stage(0.0, 0.0, 0.5), Stage(1.0, 0.5, 0.5)),
        "Heun's SSP Runge-Kutta, two stages (second order in time)",
    ),
    Integrator(
        "ssp-rk3", 3,
        (Stage(0.0, 0.0, 1 / 6), Stage(1.0, 0.75, 1 / 6), Stage(0.5, 1 / 3, 2 / 3)),
        "Shu-Osher SSP Runge-Kutta, three stages (third order in time)",
    ),
)  # fmt: skip
BY_NAME = {i.name: i for i in INTEGRATORS}


def table_fractions(integrator: Integrator, dt_mode: str) -> tuple[float, ...]:
    """Per stage, ``q`` of the time ``t + q dt`` at which a ``midpoint`` boundary kind (a
    discharge: :attr:`fvswe.registry.Boundary.midpoint`) reads its tables, so that the
    volume it lets in, ``Σ_stages weight dt Q(t + q dt)``, is second order in Δt: Euler's
    step midpoint (the midpoint rule); a multi-stage integrator's stage times ``c``, whose
    weights already integrate a linear series exactly (trapezoid, Simpson). Non-lagged Euler
    reads them at the step's start: its only edge pass also chooses Δt (docs/SCHEMES.md §7.5)."""
    if len(integrator.stages) > 1:
        return tuple(s.c for s in integrator.stages)
    return (0.0 if dt_mode == "nonlagged" else 0.5,)


def get(name: str) -> Integrator:
    """The integrator called ``name``, or a one-line error naming the choices."""
    try:
        return BY_NAME[name]
    except KeyError:
        choices = ", ".join(BY_NAME)
        raise ConfigError(f"integrator: unknown {name!r} (choose from {choices})") from None


@dataclass(frozen=True)
class Op:
    """One operation of a step.

    ``kind``:

    - ``residual``: the edge pass over ``src`` into the slots (``count``: its edges' flags
      are counted) at stage ``stage``'s time; a backend whose slots already hold that
      residual (an edge pass feeding both ``speeds`` and ``update``) skips it;
    - ``speeds``: the next Δt from the slots' speeds, now (non-lagged and initial Δt);
    - ``sources``: the point sources' and rain's mean rates over the step (and their volume
      counters), which every stage's update adds (a backend without sources skips it);
    - ``update``: ``dst = src - dt/|V| sum(slots)`` with the clip, damping, forcing and
      friction; with ``dt`` it also gives the next Δt from the slots' speeds (lagged) or
      checks a fixed Δt against them;
    - ``limit_theta``, ``limit_update``: the positivity limiter of that update (two layers);
    - ``tally``: the step's counters of the boundary tables take the stage's fluxes times
      its ``weight``;
    - ``combine``: ``dst = a U + (1 - a) src`` (stage ``stage``'s ``a``; ``src`` the stage's
      update, ``dst`` itself or ``U``: a cell reads and writes only its own values);
    - ``exchange``: a distributed run's halo rows of ``dst`` (``theta``: the limiter's
      factors) from their owners;
    - ``reduce_dt``: the next Δt, the minimum over the ranks (``now``: it is this step's);
    - ``advance``: ``t += dt``, ``steps += 1``; ``dst`` holds the state from now on;
    - ``bed``: a moving bed's depth ``H`` of ``dst`` at stage ``stage``'s time (after
      ``advance``: at the new ``t``), for the residuals that read it (a backend without a
      moving bed skips it; docs/SCHEMES.md §17);
    - ``maxima``: the maximum and arrival maps take the new state ``dst`` (after ``advance``
      and ``bed``: at the new ``t``; docs/SCHEMES.md §18).
    """

    kind: str
    src: str = ""
    dst: str = ""
    stage: int = 0
    count: bool = False
    dt: bool = False
    now: bool = True


def _stage_ops(
    integrator: Integrator, s: int, src: str, out: str, dt: bool, layers: int, bed: bool
) -> list:
    """The ops of stage ``s``: the update of ``src`` into ``out`` and its combination (``bed``:
    a moving bed at the stage's time first, but for stage 0, whose time is the step's start)."""
    ops = [Op("bed", dst=src, stage=s)] if bed and s else []
    ops += [Op("residual", src, stage=s, count=True), Op("update", src, out, s, dt=dt)]
    if layers == 2:
        ops += [Op("limit_theta", src, out, s), Op("exchange", dst="theta"),
                Op("limit_update", src, out, s)]  # fmt: skip
    ops.append(Op("tally", src, out, s))
    if integrator.stages[s].a:  # the last stage's combination is the new U
        last = s == len(integrator.stages) - 1
        ops.append(Op("combine", out, U if last else out, s))
    return ops


def step_plan(
    integrator: Integrator, dt_mode: str, layers: int, bed: bool = False, maxima: bool = False
) -> tuple[Op, ...]:
    """The ops of one step of ``integrator`` under the Δt rule ``dt_mode`` (``lagged``: the
    first stage's speeds give the next step's Δt; ``nonlagged``: the start state's speeds give
    this step's; ``fixed``: the first stage checks the fixed Δt) for ``layers`` layers;
    ``bed``: the run has a moving bed, which the state holds at its time between steps and
    each later stage's state at the stage's time before its residual; ``maxima``: the run
    keeps maximum and arrival maps, which take each step's new state.

    The state is read from ``U``; Euler writes ``V`` (the backends then swap the two), a
    multi-stage integrator alternates ``V`` and ``W`` and combines its last stage into ``U``.
    """
    ops: list[Op] = []
    if dt_mode == "nonlagged":  # the first stage's residual is this one
        ops += [Op("residual", U, count=True), Op("speeds", U), Op("reduce_dt")]
    ops.append(Op("sources"))
    src, outs = U, (V, W)
    for s in range(len(integrator.stages)):
        out = outs[s % 2]
        first = s == 0
        ops += _stage_ops(integrator, s, src, out, first and dt_mode != "nonlagged", layers, bed)
        last = s == len(integrator.stages) - 1
        state = U if last and len(integrator.stages) > 1 else out
        ops.append(Op("exchange", dst=state))
        if first and dt_mode != "nonlagged":  # lagged: the next Δt; fixed: its Courant check
            ops.append(Op("reduce_dt", now=len(integrator.stages) == 1))
        src = state
    ops.append(Op("advance", dst=src))
    if bed:
        ops.append(Op("bed", dst=src))
    if maxima:
        ops.append(Op("maxima", dst=src))
    return tuple(ops)


def initial_dt_plan() -> tuple[Op, ...]:
    """The speeds of the state as it stands: a lagged run's first Δt (flags not counted)."""
    return (Op("residual", U), Op("speeds", U), Op("reduce_dt"))
