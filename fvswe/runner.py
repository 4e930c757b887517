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
#: A progress bar appears once a run has taken this long.
PROGRESS_AFTER_S = 1.0


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


def advance(
    sim,
    times: Sequence[float],
    *,
    on_output: Callable | None = None,
    checkpoint_every: float | None = None,
    on_checkpoint: Callable | None = None,
    progress: bool = False,
    label: str = "",
):
    """Run ``sim`` through the output ``times`` (the last is the end) and return a RunSummary.

    ``on_output(sim)`` is called at the start time and at every later output
    time; ``on_checkpoint(sim)`` each time the simulated time passes a multiple
    of ``checkpoint_every``. Ctrl-C stops at the next whole chunk of steps and
    raises :class:`RunInterruptedError`. The summary's steps and wall time cover
    this call only.
    """
    t_start = sim.t
    every = checkpoint_every
    next_checkpoint = (math.floor(t_start / every) + 1) * every if every else math.inf
    look = 10  # steps between looks; adapted to LOOK_EVERY_S after each chunk
    steps, wall, last = 0, 0.0, None
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
        with _sigint() as flag:
            for t_out in (0.0, *times):
                if t_out < t_start:
                    continue
                while sim.t < t_out:
                    last = sim.run(t_out, max_steps=8 * look, check_every=look, callback=callback)
                    steps += last.steps
                    wall += last.wall_s
                    per_step = last.wall_s / max(last.steps, 1)
                    look = max(1, min(1000, int(LOOK_EVERY_S / max(per_step, 1e-9))))
                if on_output is not None:
                    on_output(sim)
    finally:
        bar.close()
    if last is None:
        last = sim.run(sim.t)
    return dataclasses.replace(last, steps=steps, wall_s=wall)
