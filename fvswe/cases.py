"""Named problems from the source papers (CASES.md), runnable from Python and the CLI."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .errors import ConfigError
from .simulation import Simulation

Fn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Case:
    """A named problem: physics, bathymetry, initial state, default mesh and end time."""

    name: str
    summary: str
    layers: int
    H: Fn
    initial: Mapping[str, Fn]
    t_end: float
    r: float = 0.5
    g: float = 9.81
    cfl: float = 0.9
    scheme: str = "ir-roe"
    mesh_cells: int = 4000
    boundary: Mapping[str, str] | None = field(default=None)

    def default_mesh(self):
        """The bundled member of the paper's mesh family this case runs on by default."""
        from .mesh import family

        return family(self.mesh_cells)

    def simulation(self, mesh=None, **options) -> Simulation:
        """A :class:`Simulation` of this case; ``options`` override the case's defaults."""
        kwargs = dict(
            layers=self.layers,
            scheme=self.scheme,
            g=self.g,
            r=self.r,
            H=self.H,
            initial=self.initial,
            boundary=self.boundary,
            cfl=self.cfl,
        )
        kwargs.update(options)
        return Simulation(self.default_mesh() if mesh is None else mesh, **kwargs)


def _test1_h1(x, y):
    return np.where(np.hypot(x, y) > 1.5, 4.0, 0.5)


def _test2_H(x, y):
    return 1.0 - 1.5 * np.exp(-(x**2) - y**2)


CASES: dict[str, Case] = {
    c.name: c
    for c in (
        Case(
            name="test1",
            summary="two layers, internal circular dam break (H = 6, r = 0.5), walls, t = 0.1 s",
            layers=2,
            r=0.5,
            H=lambda x, y: np.full_like(x, 6.0),
            initial={"h1": _test1_h1, "h2": lambda x, y: 6.0 - _test1_h1(x, y)},
            t_end=0.1,
        ),
        Case(
            name="test2",
            summary="two unstable layers over a Gaussian bump (r = 0.98), walls, t = 0.1 s",
            layers=2,
            r=0.98,
            H=_test2_H,
            initial={
                "h1": lambda x, y: np.where(x >= 0, 4.0, 0.5),
                "h2": lambda x, y: np.where(x >= 0, 0.5, 4.0),
            },
            t_end=0.1,
        ),
    )
}


def get_case(name: str) -> Case:
    """The named case, or a one-line error listing the names."""
    try:
        return CASES[name]
    except KeyError:
        raise ConfigError(f"unknown case {name!r} (choose from {', '.join(CASES)})") from None
