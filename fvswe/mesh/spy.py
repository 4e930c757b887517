"""Spy plots of the cell adjacency matrix (the renumbering paper's Figure 4), as PNG.

The matrix is binned onto a pixel grid (a pixel is dark when any neighbour
pair falls in it), so a 2 M-cell mesh plots as fast as a small one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..output import atomic_write
from .core import Mesh
from .orderings import bandwidth

#: Pixels per side of each spy panel.
PIXELS = 600


def spy_image(mesh: Mesh, pixels: int = PIXELS) -> np.ndarray:
    """Boolean ``pixels x pixels`` image: True where the adjacency (or diagonal) has entries."""
    n = mesh.n_cells
    ec = mesh.edge_cells[mesh.edge_cells[:, 1] >= 0]
    rows = np.concatenate([ec[:, 0], ec[:, 1], np.arange(n)])
    cols = np.concatenate([ec[:, 1], ec[:, 0], np.arange(n)])
    scale = min(pixels, n) / n
    img = np.zeros((min(pixels, n),) * 2, dtype=bool)
    img[(rows * scale).astype(np.int64), (cols * scale).astype(np.int64)] = True
    return img


def spy_png(
    mesh: Mesh, path: str | Path, methods: Sequence[str] = ("none",), seed: int = 0
) -> None:
    """Write one spy panel per ordering ``method`` side by side, titled with its bandwidth.

    The image type follows the suffix of ``path`` (an unknown one is a one-line
    error before any work); the file appears complete or not at all.
    """
    from matplotlib.figure import Figure  # not pyplot: no global state, no display needed

    fig = Figure(figsize=(4 * len(methods), 4.3))
    kinds = fig.canvas.get_supported_filetypes()
    suffix = Path(path).suffix.lstrip(".").lower()
    if suffix not in kinds:
        raise ConfigError(f"{path}: unknown image type {suffix!r} (choose from {', '.join(kinds)})")
    axes = fig.subplots(1, len(methods), squeeze=False)
    for ax, method in zip(axes[0], methods, strict=True):
        m = mesh.reordered(method, seed=seed)[0]
        n = m.n_cells
        ax.imshow(spy_image(m), cmap="Greys", extent=(0, n, n, 0), interpolation="nearest")
        ax.set_title(f"{method}: bandwidth {bandwidth(m)}", fontsize=10)
        ax.set_xlabel("cell j")
        ax.set_ylabel("cell i")
    fig.suptitle(f"{Path(mesh.source).name}: {mesh.n_cells} cells", fontsize=11)
    fig.tight_layout()
    atomic_write(path, lambda p: fig.savefig(p, dpi=100))
