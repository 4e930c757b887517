"""Pictures of a run: cell fields drawn with tripcolor into PNG files (no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .errors import ConfigError

#: Field name -> (what it is, unit), for colourbar labels.
LABELS: dict[str, tuple[str, str]] = {
    "h1": ("upper layer thickness h1", "m"),
    "h2": ("lower layer thickness h2", "m"),
    "eta1": ("free surface η1", "m"),
    "eta2": ("interface η2", "m"),
    "u1": ("upper layer velocity u1", "m/s"),
    "v1": ("upper layer velocity v1", "m/s"),
    "u2": ("lower layer velocity u2", "m/s"),
    "v2": ("lower layer velocity v2", "m/s"),
    "h": ("water depth h", "m"),
    "eta": ("free surface η", "m"),
    "u": ("velocity u", "m/s"),
    "v": ("velocity v", "m/s"),
    "bathymetry": ("bottom depth H (positive down)", "m"),
}


#: Domains this many times wider than high get one full-width panel per row, not to scale.
ELONGATED = 4.0


def _triangles(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Triangles for tripcolor and, for each, the cell it comes from (quads become two)."""
    if cells.shape[1] == 3:
        return cells, np.arange(len(cells))
    tris = np.concatenate([cells[:, [0, 1, 2]], cells[:, [0, 2, 3]]])
    return tris, np.tile(np.arange(len(cells)), 2)


def panel(ax, nodes: np.ndarray, cells: np.ndarray, name: str, values: np.ndarray):
    """Draw one cell field on ``ax`` with a labelled colourbar; return the artist.

    Velocities use a diverging map centred on 0; other fields ``viridis``.
    """
    from matplotlib.tri import Triangulation

    tris, owner = _triangles(np.asarray(cells))
    values = np.asarray(values, dtype=np.float64)[owner]
    label, unit = LABELS.get(name, (name, ""))
    diverging = unit == "m/s"
    vmax = max(float(np.abs(values).max()), 1e-12) if diverging else None
    im = ax.tripcolor(
        Triangulation(nodes[:, 0], nodes[:, 1], tris),
        facecolors=values,
        cmap="RdBu_r" if diverging else "viridis",
        vmin=-vmax if diverging else None,
        vmax=vmax,
        shading="flat",
        antialiased=False,  # antialiased triangles leave hairline seams between them
    )
    ax.set_aspect("equal")
    ax.set_xlim(nodes[:, 0].min(), nodes[:, 0].max())
    ax.set_ylim(nodes[:, 1].min(), nodes[:, 1].max())
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(label, fontsize=10)
    ax.figure.colorbar(im, ax=ax, shrink=0.85, label=f"{name} [{unit}]" if unit else name)
    return im


def draw(
    nodes: np.ndarray,
    cells: np.ndarray,
    fields: Mapping[str, np.ndarray],
    path: str | Path,
    *,
    t: float | None = None,
    title: str | None = None,
) -> Path:
    """One :func:`panel` per field (cell values over ``cells``); save a PNG.

    Up to three panels a row, drawn to scale, except for long thin domains
    (strips), which get one stretched full-width panel a row.
    """
    from matplotlib.figure import Figure  # not pyplot: no global state, no display needed

    n = len(fields)
    span = np.ptp(nodes[:, :2], axis=0)
    elongated = span[0] > ELONGATED * span[1]  # e.g. a 1-D strip: stacked, stretched panels
    ncols = 1 if elongated else min(n, 3)
    nrows = -(-n // ncols)
    size = (10.0, 2.4 * nrows) if elongated else (4.6 * ncols, 4.2 * nrows)
    fig = Figure(figsize=size)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, (name, values) in zip(axes.ravel()[:n], fields.items(), strict=True):
        panel(ax, nodes, cells, name, values)
        if elongated:
            ax.set_aspect("auto")
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    heading = " — ".join(s for s in (title, None if t is None else f"t = {t:.4g} s") if s)
    if heading:
        fig.suptitle(heading)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    return path


def snapshot(sim, names: Sequence[str], path: str | Path, *, title: str | None = None) -> Path:
    """A PNG of the named :func:`~fvswe.output.output_fields` of ``sim`` at its current time."""
    from .output import original_cells, output_fields

    fields = output_fields(sim)
    check_fields(names, fields)
    return draw(
        sim.mesh.nodes,
        original_cells(sim.mesh),
        {name: fields[name] for name in names},
        path,
        t=sim.t,
        title=title,
    )


def check_fields(names: Sequence[str], available) -> None:
    """A one-line error for a field name that cannot be drawn."""
    if not names:
        raise ConfigError("png: no field names given")
    for name in names:
        if name not in available:
            raise ConfigError(f"png: unknown field {name!r} (choose from {', '.join(available)})")


def check_title(title: str | None, where: str = "title") -> None:
    """A one-line error for a title whose ``$...$`` math text matplotlib cannot draw."""
    from matplotlib import cbook, mathtext

    if not title or not cbook.is_math_text(title):
        return
    try:
        mathtext.MathTextParser("path").parse(title)
    except ValueError as exc:
        reason = " ".join(str(exc).split()[-8:])
        raise ConfigError(f"{where}: cannot draw {title!r} as math text ({reason})") from None
