"""Pictures of a run: cell fields drawn with tripcolor into PNG files (no display needed).

Pictures of one run compare: :class:`Pictures` fixes each field's colour limits
over the series (given by the user, else taken from the first frame where the
field is not constant), velocity limits ignore dry and thin cells (the 99th
percentile of |u| where the layer is thicker than :data:`THIN` times its
thickest cell), and surfaces and velocities are drawn over water only: dry
cells (layer thinner than the model's ``eps_h``) are drawn in :data:`LAND`.
"""

from __future__ import annotations

import math
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
#: Colour of dry cells in the panels of surfaces and velocities.
LAND = "#c9b48f"
#: Velocity limits ignore cells whose layer is thinner than this fraction of its thickest cell.
THIN = 0.05
#: Quantile of |u| over the kept cells that sets a velocity's colour limit.
VELOCITY_QUANTILE = 0.99
#: Field -> the layer thickness (of :func:`~fvswe.output.output_fields`) saying where it is wet.
OVER_WATER = {
    "eta": "h", "u": "h", "v": "h",
    "eta1": "depth", "u1": "h1", "v1": "h1",
    "eta2": "h2", "u2": "h2", "v2": "h2",
}  # fmt: skip

Limits = tuple[float, float]


def _triangles(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Triangles for tripcolor and, for each, the cell it comes from (quads become two)."""
    if cells.shape[1] == 3:
        return cells, np.arange(len(cells))
    tris = np.concatenate([cells[:, [0, 1, 2]], cells[:, [0, 2, 3]]])
    return tris, np.tile(np.arange(len(cells)), 2)


def is_velocity(name: str) -> bool:
    """Velocities get a diverging colour map centred on 0 and symmetric limits."""
    return LABELS.get(name, (name, ""))[1] == "m/s"


def colour_limits(name: str, values: np.ndarray, thickness: np.ndarray | None = None) -> Limits:
    """Limits for one frame of a field: min/max, or for velocities a symmetric quantile.

    ``thickness`` (the layer's, per cell) restricts velocities to cells thicker
    than :data:`THIN` of the thickest, so a few thin cells cannot set the scale.
    """
    values = np.asarray(values, dtype=np.float64)
    if not values.size:  # every cell dry
        return 0.0, 0.0
    if not is_velocity(name):
        return float(values.min()), float(values.max())
    if thickness is not None and np.max(thickness) > 0:
        values = values[thickness > THIN * np.max(thickness)]
    top = float(np.quantile(np.abs(values), VELOCITY_QUANTILE)) if values.size else 0.0
    return -top, top


def panel(
    ax,
    nodes: np.ndarray,
    cells: np.ndarray,
    name: str,
    values: np.ndarray,
    *,
    limits: Limits | None = None,
    dry: np.ndarray | None = None,
):
    """Draw one cell field on ``ax`` with a labelled colourbar; return the artist.

    Velocities use a diverging map centred on 0; other fields ``viridis``.
    ``limits`` fixes the colour range (values beyond it saturate, the colourbar
    shows arrows); ``dry`` (a per-cell mask) draws those cells in :data:`LAND`.
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.tri import Triangulation

    tris, owner = _triangles(np.asarray(cells))
    values = np.asarray(values, dtype=np.float64)[owner]
    label, unit = LABELS.get(name, (name, ""))
    if limits is None:
        limits = colour_limits(name, values)
    lo, hi = limits
    if not hi > lo:  # a constant field: a range around it, so the colours still mean something
        pad = max(abs(lo) * 1e-3, 1e-12)
        lo, hi = lo - pad, hi + pad
    grid = Triangulation(nodes[:, 0], nodes[:, 1], tris)
    land = None if dry is None else np.asarray(dry, dtype=bool)[owner]
    if land is not None and land.any():
        grid.set_mask(land)
        ground = Triangulation(nodes[:, 0], nodes[:, 1], tris[land])
        ax.tripcolor(ground, facecolors=np.zeros(int(land.sum())),
                     cmap=ListedColormap([LAND]), shading="flat", antialiased=False)  # fmt: skip
        label = f"{label} (dry: sand colour)"
    im = ax.tripcolor(
        grid,
        facecolors=values,
        cmap="RdBu_r" if is_velocity(name) else "viridis",
        vmin=lo,
        vmax=hi,
        shading="flat",
        antialiased=False,  # antialiased triangles leave hairline seams between them
    )
    ax.set_aspect("equal")
    ax.set_xlim(nodes[:, 0].min(), nodes[:, 0].max())
    ax.set_ylim(nodes[:, 1].min(), nodes[:, 1].max())
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_title(label, fontsize=10)
    ax.figure.colorbar(
        im, ax=ax, shrink=0.85, extend="both", label=f"{name} [{unit}]" if unit else name
    )
    return im


def grid_shape(n: int, elongated: bool) -> tuple[int, int]:
    """(rows, columns) of ``n`` panels: one column for strips, else as square as it gets."""
    if elongated:
        return n, 1
    ncols = n if n <= 3 else math.ceil(math.sqrt(n))
    return -(-n // ncols), ncols


def draw(
    nodes: np.ndarray,
    cells: np.ndarray,
    fields: Mapping[str, np.ndarray],
    path: str | Path,
    *,
    t: float | None = None,
    title: str | None = None,
    limits: Mapping[str, Limits] | None = None,
    dry: Mapping[str, np.ndarray] | None = None,
) -> Path:
    """One :func:`panel` per field (cell values over ``cells``); save a PNG.

    Panels fill a grid as square as the count allows (four: 2 x 2), each sized
    to the domain's aspect, laid out by matplotlib's constrained layout so
    colourbars and titles never overlap; long thin domains (strips) get one
    stretched full-width panel a row. ``limits`` and ``dry`` map field names to
    :func:`panel`'s arguments.
    """
    from matplotlib.figure import Figure  # not pyplot: no global state, no display needed

    limits, dry = limits or {}, dry or {}
    n = len(fields)
    span = np.ptp(nodes[:, :2], axis=0)
    elongated = span[0] > ELONGATED * span[1]  # e.g. a 1-D strip: stacked, stretched panels
    nrows, ncols = grid_shape(n, elongated)
    if elongated:
        size = (10.0, 2.4 * nrows)
    else:
        aspect = float(np.clip(span[1] / span[0], 1 / ELONGATED, 2.0)) if span[0] > 0 else 1.0
        size = (4.8 * ncols, (3.6 * aspect + 0.8) * nrows + 0.4)
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, (name, values) in zip(axes.ravel()[:n], fields.items(), strict=True):
        panel(ax, nodes, cells, name, values, limits=limits.get(name), dry=dry.get(name))
        if elongated:
            ax.set_aspect("auto")
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    heading = " — ".join(s for s in (title, None if t is None else f"t = {t:.4g} s") if s)
    if heading:
        fig.suptitle(heading)
    path = Path(path)
    fig.savefig(path, dpi=110)
    return path


class Pictures:
    """PNG frames of one run's fields, with colour limits fixed over the whole series.

    ``limits`` (from the user) wins; any other field's limits are those of the
    first frame where it is not constant (velocities: :func:`colour_limits`
    over wet, not thin cells), kept for every later frame.
    """

    def __init__(self, names: Sequence[str], limits: Mapping[str, Limits] | None = None) -> None:
        self.names = tuple(names)
        self.limits: dict[str, Limits] = dict(limits or {})

    def draw(self, sim, path: str | Path, *, title: str | None = None) -> Path:
        """A PNG of the named :func:`~fvswe.output.output_fields` of ``sim`` now."""
        from .output import original_cells, output_fields

        fields = output_fields(sim)
        check_fields(self.names, fields)
        layers = ("h",) if "h" in fields else ("h1", "h2")
        fields["depth"] = sum(fields[k] for k in layers)
        dry, frame = {}, {}
        for name in self.names:
            values = fields[name]
            thickness = fields.get(OVER_WATER.get(name, ""))
            if thickness is not None:
                dry[name] = thickness < sim.model.eps_h
                values, thickness = values[~dry[name]], thickness[~dry[name]]
            if name not in self.limits:
                frame[name] = colour_limits(name, values, thickness)
                if frame[name][1] > frame[name][0]:
                    self.limits[name] = frame[name]
        return draw(
            sim.mesh.nodes,
            original_cells(sim.mesh),
            {name: fields[name] for name in self.names},
            path,
            t=sim.t,
            title=title,
            limits={**frame, **self.limits},
            dry=dry,
        )


def snapshot(sim, names: Sequence[str], path: str | Path, *, title: str | None = None) -> Path:
    """A PNG of the named :func:`~fvswe.output.output_fields` of ``sim`` at its current time."""
    return Pictures(names).draw(sim, path, title=title)


def parse_limits(text: str) -> dict[str, Limits]:
    """``"eta=-0.1:0.1,u=-1:1"`` -> ``{"eta": (-0.1, 0.1), "u": (-1.0, 1.0)}``."""
    out = {}
    for item in filter(None, text.split(",")):
        name, _, span = item.partition("=")
        lo, _, hi = span.partition(":")
        try:
            out[name.strip()] = (float(lo), float(hi))
        except ValueError:
            raise ConfigError(f"--png-limits: expected NAME=LO:HI, got {item!r}") from None
        if not out[name.strip()][1] > out[name.strip()][0]:
            raise ConfigError(f"--png-limits: {item!r} needs LO < HI")
    return out


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
