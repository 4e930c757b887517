"""Driving a Simulation through its output times, with checkpoints, a progress bar and Ctrl-C.

The run is advanced to each output time exactly (``Simulation.run(t_k)`` in
turn), so the output times belong to the trajectory; checkpoints do not: they
are taken between chunks of whole steps and never shorten a step, so a run
restarted from one takes exactly the steps the uninterrupted run takes.
"""

from __future__ import annotations

import dataclasses
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import SimpleNamespace

#: Wall seconds aimed for between two looks at the run (progress, checkpoint, Ctrl-C).
LOOK_EVERY_S = 0.25
#: The most of a run's wall time its looks' checks may take (a check's mass sum and blow-up
#: scan grow with the mesh: on 10^8 cells they cost as much as tens of steps).
CHECK_SHARE = 0.05
#: A progress bar appears once a run has taken this long.
PROGRESS_AFTER_S = 1.0
#: Event counters (``backend.counters()``) -> (what each counts per, the sentence's verb phrase).
EVENTS = {
    "clipped_cells": ("cell", "clipped a negative depth to 0"),
    "nonhyperbolic_edges": ("edge", "met a non-hyperbolic state (complex eigenvalues)"),
    "degenerate_edges": ("edge", "had near-coincident internal eigenvalues"),
    "thin_layer_edges": ("edge", "fell back to the thin-layer flux"),
    "limited": ("cell", "limited a layer's outflow to its content (docs/SCHEMES.md §13.4)"),
    "first_order_cells": ("cell", "fell back to first order (linear reconstruction, §19.3)"),
}
#: A counter becomes a sentence once it reaches this fraction of its updates.
EVENTS_WORTH_SAYING = 1e-3


class RunInterruptedError(Exception):
    """Ctrl-C arrived; the simulation stands at a whole step (``sim.t``, ``sim.steps``)."""


@contextmanager
def _sigint() -> Iterator[SimpleNamespace]:
    """Turn the first Ctrl-C into a flag the run checks between chunks; a second one aborts."""
    flag = SimpleNamespace(requested=False)
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def handler(signum, frame):
        flag.requested = True
        signal.signal(signal.SIGINT, previous)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)


class _Progress:
    """A rich progress bar of simulated time, steps/s and ETA, shown once the run is slow."""

    def __init__(self, enabled: bool, sim, t_end: float, label: str) -> None:
        self.enabled, self.t_end, self.label = enabled, t_end, label
        self.start, self.steps0, self.t0 = time.perf_counter(), sim.steps, sim.t
        self.bar = None

    def update(self, sim) -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        if self.bar is None:
            if elapsed < PROGRESS_AFTER_S:
                return
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("t = {task.completed:.4g} / {task.total:.4g} s"),
                TextColumn("{task.fields[rate]}"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.task = self.bar.add_task(self.label, total=self.t_end, completed=self.t0, rate="")
            self.bar.start()
        rate = (sim.steps - self.steps0) / elapsed if elapsed > 0 else 0.0
        self.bar.update(self.task, completed=sim.t, rate=f"{rate:,.0f} steps/s")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def show_progress(quiet: bool) -> bool:
    """Progress bars are for people: none with ``--quiet`` or when output is not a terminal."""
    return not quiet and sys.stdout.isatty() and sys.stderr.isatty()


def warm_up(sim, t_end: float) -> float:
    """Compile (or load from Numba's cache) the kernels before the clock starts; their seconds.

    Takes one step and undoes it (``backend.snapshot``/``restore``, bitwise; on ranks holding
    their parts alone, each rank's own backend's), twice:
    the first pays for the compilation, the second is an ordinary step, and
    their difference is the compile time.
    """
    backend = sim.backend
    # ranks holding their parts alone each undo their own step: no global state gathered
    own = backend.local if getattr(backend, "holds_part", False) else backend
    snap = own.snapshot()
    took = []
    for _ in range(2):
        start = time.perf_counter()
        backend.advance(t_end, 1)
        took.append(time.perf_counter() - start)
        own.restore(snap)
    return max(took[0] - took[1], 0.0)


def advance(
    sim,
    times: Sequence[float],
    *,
    on_output: Callable | None = None,
    checkpoint_every: float | None = None,
    on_checkpoint: Callable | None = None,
    progress: bool = False,
    label: str = "",
    say: Callable[[str], None] | None = None,
    started: float | None = None,
):
    """Run ``sim`` through the output ``times`` (the last is the end) and return a RunSummary.

    ``on_output(sim)`` is called at the start time and at every later output
    time; ``on_checkpoint(sim)`` each time the simulated time passes a multiple
    of ``checkpoint_every``. Ctrl-C stops at the next whole chunk of steps and
    raises :class:`RunInterruptedError`. The summary's steps and wall time cover
    this call only; the kernels are compiled first (:func:`warm_up`), and that
    time is the summary's ``compile_s``, not part of ``wall_s``. ``say(text)``
    hears that compiling is under way when the kernels are not cached yet. ``started``, a
    ``time.perf_counter()`` reading from the start of the caller's work, gives the
    summary's ``setup_s``: the time to the first step.
    """
    note = sim.backend.cold_start_note() if say is not None else None
    if note is not None:
        say(note)
    # the flag from the warm-up on: a Ctrl-C while Numba compiles would raise inside its C
    # callbacks, which drop the exception
    with _sigint() as flag:
        compile_s = warm_up(sim, times[-1]) if sim.t < times[-1] else 0.0
        setup_s = None if started is None else time.perf_counter() - started
        t_start = sim.t
        every = checkpoint_every
        next_checkpoint = (math.floor(t_start / every) + 1) * every if every else math.inf
        # steps between looks, adapted after each chunk (next_look), and looks a chunk: the
        # first chunk one, which times a look before eight are taken
        look, looks = 10, 1
        steps, wall, checks, check_s, last = 0, 0.0, 0, 0.0, None
        bar = _Progress(progress, sim, times[-1], label)

        def callback(s) -> None:
            nonlocal next_checkpoint
            bar.update(s)
            if s.t >= next_checkpoint:
                on_checkpoint(s)
                next_checkpoint = (math.floor(s.t / every) + 1) * every
            if flag.requested:
                raise RunInterruptedError(f"interrupted at t = {s.t:.6g} s (step {s.steps})")

        try:
            for t_out in (0.0, *times):
                if t_out < t_start:
                    continue
                while sim.t < t_out:
                    last = sim.run(t_out, max_steps=looks * look, check_every=look,
                                   callback=callback)  # fmt: skip
                    steps, wall = steps + last.steps, wall + last.wall_s
                    checks, check_s = checks + last.checks, check_s + last.check_s
                    look, looks = next_look(last), 8
                if on_output is not None:
                    on_output(sim)
        finally:
            bar.close()
    if last is None:
        last = sim.run(sim.t)
    stages = {}
    if started is not None:  # timed from the caller's start: its stages, then the compilation
        stages = {**getattr(sim, "setup_stages", {}), "compile": compile_s}
    return dataclasses.replace(last, steps=steps, wall_s=wall, checks=checks, check_s=check_s,
                               compile_s=compile_s, setup_s=setup_s,
                               setup_stages=stages)  # fmt: skip


def next_look(last) -> int:
    """Steps between two looks after a chunk that gave ``last`` (a RunSummary): about
    :data:`LOOK_EVERY_S` of stepping (1 to 1000 steps), and more where that many would spend
    over :data:`CHECK_SHARE` of the time in the checks."""
    step_s = max((last.wall_s - last.check_s) / max(last.steps, 1), 1e-9)
    check_s = last.check_s / max(last.checks, 1)
    enough = math.ceil(check_s / (CHECK_SHARE * step_s))
    return max(1, min(1000, int(LOOK_EVERY_S / step_s)), enough)


def mass_balance(sim, summary) -> list[dict[str, float | bool]]:
    """Per layer, the volume balance in m^3: ``initial + net_in + sources + rest = now``.

    ``net_in`` is what the level, discharge and characteristic boundaries let in, net
    (:func:`fvswe.boundary.inflows`; 0 otherwise); ``sources`` what point sources, sinks and
    rain put in (:func:`fvswe.sources.added`); ``rest`` is what no counter measured:
    round-off with walls, or what crossed the open boundaries (``open_boundaries``) when
    there are any.
    """
    from .boundary import inflows
    from .sources import added

    has_open = sim.open_boundaries
    layers = len(summary.mass)
    inflow, put = inflows(summary.counters, layers), added(summary.counters, layers)
    rows = zip(summary.mass_initial, inflow, put, summary.mass, strict=True)
    return [
        {"initial": m0, "net_in": q, "sources": p, "now": m, "rest": m - m0 - q - p,
         "open_boundaries": has_open}
        for m0, q, p, m in rows
    ]  # fmt: skip


def event_sentences(sim, counters: dict) -> list[str]:
    """The event counters as sentences, for those that reached :data:`EVENTS_WORTH_SAYING`.

    Counters cover every step of the simulation (a restart included), so they
    are divided by ``sim.steps`` times the cells or edges.
    """
    per = {"cell": sim.n_cells, "edge": sim.n_edges}
    out = []
    for key, (unit, what) in EVENTS.items():
        updates = per[unit] * sim.steps
        share = counters.get(key, 0) / updates if updates else 0.0
        if share >= EVENTS_WORTH_SAYING:
            out.append(f"{100 * share:.3g} % of {unit} updates {what} ({counters[key]:,} times)")
    return out


def _threads(n: int | None) -> str:
    return "1 thread" if n in (None, 1) else f"{n} threads"


def _before_text(summary) -> str:
    """What came before the first step: the set-up time, and the compile time within it."""
    compiling = f"{summary.compile_s:.3g} s compiling or loading kernels"
    if summary.setup_s is not None:
        within = f", {compiling}" if summary.compile_s else ""
        return f"; {summary.setup_s:.3g} s to the first step (reading, laying out{within})"
    return f"; {compiling} before that" if summary.compile_s else ""


def summary_text(name: str, sim, summary) -> str:
    """The lines ``fvswe run`` prints: speed, compile time, the mass balance, the events."""
    run = f"{sim.backend.name}, {sim.dtype}, {sim.scheme}, {sim.n_cells} cells"
    if summary.steps:
        took = (f"in {summary.steps} steps, {summary.wall_s:.3g} s wall "
                f"({summary.cell_steps_per_s / 1e6:.3g} M cell-steps/s, {run}, ")  # fmt: skip
    else:  # a restart at t_end: nothing to time
        took = f"already, no step to take ({run}, "
    lines = [
        f"{name}: t = {summary.t:g} s {took}{_threads(summary.threads)})" + _before_text(summary)
    ]
    layers = ["volume"] if len(summary.mass) == 1 else ["upper layer", "lower layer"]
    for label, b in zip(layers, mass_balance(sim, summary), strict=True):
        scale = max(abs(b["initial"]), abs(b["now"]), 1e-300)
        if b["open_boundaries"]:
            rest = f"{b['rest']:+.4g} through the open boundaries"
        else:
            rest = f"{b['rest']:+.2g} unaccounted ({abs(b['rest']) / scale:.1g} relative)"
        net_in = f" {b['net_in']:+.6g} in through boundaries," if b["net_in"] else ""
        net_in += f" {b['sources']:+.6g} from sources and rain," if b["sources"] else ""
        lines.append(
            f"  {label} [m^3]: initial {b['initial']:.6g},{net_in} {rest}, now {b['now']:.6g}"
        )
    lines += [f"  {sentence}" for sentence in event_sentences(sim, summary.counters)]
    return "\n".join(lines)
