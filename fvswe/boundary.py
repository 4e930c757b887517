"""Boundary conditions by tag: which ghost state each boundary edge sees (docs/SCHEMES.md §7).

Conditions are ``"wall"``, ``"open"`` or an imposed water level: :class:`Level`
(or the shorthand ``("level", eta)``), with ``eta`` a function of time, a
two-column ``t eta`` text file or a ``(times, values)`` pair. The level ghost
of a one-layer edge is ``h_g = max(eta(t) + H_i, 0)`` with the inner cell's
velocity (zero if the cell is dry) and ``H_g = H_i``.

Every level is handed to the backends as a piecewise-linear table, so the CPU
and the GPU evaluate the same ``eta(t)``: a function is sampled every
``Level.every`` seconds up to ``Level.until``; a file or a pair is used at its
own samples. Before the first and after the last sample the end values hold,
and :class:`~fvswe.simulation.Simulation` refuses to run past the last one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ConfigError

#: Edge condition codes stored in ``Layout.edge_bc`` (0 marks an interior edge).
INTERIOR, WALL, OPEN, LEVEL = 0, 1, 2, 3
KINDS = {"wall": WALL, "open": OPEN, "level": LEVEL}

#: Defaults for sampling a level given as a function: every 10 s for 30 days.
LEVEL_EVERY_S = 10.0
LEVEL_UNTIL_S = 30 * 86400.0


@dataclass(frozen=True)
class Level:
    """An imposed water level ``eta(t)`` (m above the reference) on a boundary tag.

    ``eta``: a function of ``t`` (scalar or array), a path to a text file with
    two columns ``t eta`` (``#`` comments allowed, times increasing), or a pair
    ``(times, values)``. ``every`` and ``until`` say how a function is sampled.
    """

    eta: Callable[[float], float] | str | Path | tuple
    every: float = LEVEL_EVERY_S
    until: float = LEVEL_UNTIL_S

    def table(self, where: str = "level") -> tuple[np.ndarray, np.ndarray]:
        """The piecewise-linear table ``(times, values)`` both backends interpolate."""
        eta = self.eta
        if callable(eta):
            if not (self.every > 0 and self.until > 0):
                raise ConfigError(f"{where}: every and until must be positive")
            n = int(np.ceil(self.until / self.every))
            t = np.arange(n + 1) * float(self.every)
            try:
                v = np.asarray(eta(t), dtype=np.float64)
                if v.shape != t.shape:
                    raise ValueError
            except (TypeError, ValueError):  # a function of a scalar only
                v = np.array([float(eta(float(s))) for s in t])
        elif isinstance(eta, (str, Path)):
            t, v = read_columns(Path(eta), where, "level", ("t", "eta"))
        else:
            try:
                t, v = (np.asarray(a, dtype=np.float64).reshape(-1) for a in eta)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"{where}: expected a function of t, a file or (times, values), got {eta!r}"
                ) from None
        _check_table(t, v, where)
        return t, v


def read_columns(path: Path, where: str, what: str, names: tuple[str, ...]) -> tuple:
    """The columns ``names`` of a ``what`` text file (whitespace or commas, ``#`` comments),
    as float64 arrays; a one-line ConfigError starting with ``where`` otherwise."""
    if not path.is_file():
        raise ConfigError(f"{where}: no such {what} file {path}")
    try:
        text = path.read_text(encoding="utf-8").replace(",", " ")
        data = np.loadtxt(text.splitlines(), dtype=np.float64, ndmin=2)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read {what} file {path} ({exc})") from None
    if data.shape[1] != len(names):
        count = {2: "two", 3: "three"}.get(len(names), str(len(names)))
        raise ConfigError(f"{where}: {what} file {path} needs {count} columns ({', '.join(names)})")
    return tuple(data[:, k].copy() for k in range(len(names)))


def _check_table(t: np.ndarray, v: np.ndarray, where: str) -> None:
    if t.shape != v.shape or t.size < 1:
        raise ConfigError(f"{where}: level times and values must be two equal, non-empty lists")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(v))):
        bad = int(np.flatnonzero(~(np.isfinite(t) & np.isfinite(v)))[0])
        raise ConfigError(f"{where}: level sample {bad} is not finite")
    if np.any(np.diff(t) <= 0):
        bad = int(np.flatnonzero(np.diff(t) <= 0)[0]) + 1
        raise ConfigError(f"{where}: level times must increase (sample {bad}: t = {t[bad]:g})")


def _kind(name: str, condition) -> tuple[int, Level | None]:
    """``(code, Level or None)`` of one tag's condition."""
    if isinstance(condition, Level):
        return LEVEL, condition
    if isinstance(condition, tuple) and len(condition) == 2 and condition[0] == "level":
        return LEVEL, Level(condition[1])
    if isinstance(condition, str) and condition in KINDS and condition != "level":
        return KINDS[condition], None
    raise ConfigError(
        f"boundary tag {name!r}: unknown condition {condition!r} "
        f"(choose from wall, open, Level(eta) or ('level', eta))"
    )


def edge_conditions(mesh, conditions: Mapping[str, object] | None = None) -> np.ndarray:
    """Per-edge condition codes from ``{tag name: condition}``.

    ``None`` puts walls on every boundary. Otherwise every boundary tag of the
    mesh needs a condition, and every condition needs a tag of the mesh, so a
    misspelt tag is an error rather than a silent wall.
    """
    codes = np.zeros(mesh.n_edges, dtype=np.int8)
    boundary = mesh.edge_cells[:, 1] < 0
    if conditions is None:
        codes[boundary] = WALL
        return codes
    present = {name for name, tid in mesh.tags.items() if np.any(mesh.edge_tag == tid)}
    for name, condition in conditions.items():
        if name not in mesh.tags:
            known = ", ".join(sorted(present)) or "none"
            raise ConfigError(
                f"boundary condition for tag {name!r}, which {mesh.source} lacks "
                f"(its boundary tags: {known})"
            )
        codes[mesh.edge_tag == mesh.tags[name]] = _kind(name, condition)[0]
    missing = sorted(present - set(conditions))
    if missing:
        raise ConfigError(
            f"boundary tag {missing[0]!r} of {mesh.source} has no condition "
            f"(give one of {', '.join(KINDS)})"
        )
    return codes


@dataclass(frozen=True)
class LevelTables:
    """All level conditions of a run, packed for the backends.

    ``edge_level[e]`` is the table of edge ``e`` (-1: none); table ``k`` is
    ``times[offsets[k]:offsets[k+1]]`` / ``values[...]``; ``names[k]`` its tag.
    """

    edge_level: np.ndarray  # (E,) int32
    offsets: np.ndarray  # (n_levels + 1,) int64
    times: np.ndarray  # (N,) float64
    values: np.ndarray  # (N,) float64
    names: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.names)

    def at(self, t: float) -> np.ndarray:
        """``eta(t)`` of every table (linear between samples, end values held outside)."""
        o = self.offsets
        return np.array(
            [np.interp(t, self.times[o[k] : o[k + 1]], self.values[o[k] : o[k + 1]])
             for k in range(self.count)]
        )  # fmt: skip

    def end(self) -> tuple[float, str] | None:
        """The earliest last sample over the tables and its tag (None without levels)."""
        if not self.count:
            return None
        ends = self.times[self.offsets[1:] - 1]
        k = int(np.argmin(ends))
        return float(ends[k]), self.names[k]


def level_tables(mesh, conditions: Mapping[str, object] | None = None) -> LevelTables:
    """The level tables of ``conditions`` (validated as by :func:`edge_conditions`)."""
    edge_level = np.full(mesh.n_edges, -1, dtype=np.int32)
    names, times, values = [], [], []
    for name, condition in (conditions or {}).items():
        code, level = _kind(name, condition)
        if code != LEVEL or name not in mesh.tags:
            continue
        t, v = level.table(f"boundary tag {name!r}")
        edge_level[mesh.edge_tag == mesh.tags[name]] = len(names)
        names.append(name)
        times.append(t)
        values.append(v)
    offsets = np.concatenate(([0], np.cumsum([t.size for t in times]))).astype(np.int64)
    if not names:
        times, values = [np.zeros(0)], [np.zeros(0)]
    return LevelTables(
        edge_level, offsets, np.concatenate(times), np.concatenate(values), tuple(names)
    )
