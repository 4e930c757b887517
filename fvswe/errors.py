"""Errors meant for people: each carries one line that names the file, cell, step or key."""

from __future__ import annotations

import numpy as np


class FvsweError(Exception):
    """Base class of every error fvswe raises for a user mistake or a failed run.

    The CLI prints ``str(error)`` as one line and exits non-zero; library users
    catch this class.
    """


class MeshError(FvsweError):
    """A mesh that cannot be used: unreadable, empty, degenerate, non-manifold…"""


class ConfigError(FvsweError):
    """A bad argument, option or case-file key (unknown scheme, ordering, tag…)."""


class BlowUpError(FvsweError):
    """The state became invalid during a run (NaN or negative depth)."""


class BackendUnavailable(FvsweError):
    """A backend was asked for that this machine cannot provide (e.g. no GPU)."""


class OutputError(FvsweError):
    """A file of the run's outputs could not be written (disk full, read-only, no permission…)."""


def check_finite(values, where: str, error: type[FvsweError] = ConfigError) -> None:
    """``error("where: not finite (nan) in cell k (n cells)")`` at the first NaN or ±inf of
    the per-cell ``values`` (a single number: no cell), so that a bad input is named before
    the run, not found as a blow-up after outputs were written."""
    a = np.asarray(values, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(a))
    if not bad.size:
        return
    cell = f" in cell {bad[0]} ({bad.size} cells)" if a.ndim else ""
    raise error(f"{where}: not finite ({float(a.flat[bad[0]])!r}){cell}")
