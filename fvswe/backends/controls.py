"""The run's controls: one table for the CPU's kernel arguments and the GPU's ``struct Ctrl``.

Every row of :data:`CONTROLS` is one field: its C type, what it holds and, for the run's
settings and per-cell data (friction, boundary tables, forcing, ...), how its value follows
from the :class:`Setup`. The GPU backend writes all of them into its control block (the C
struct and its NumPy twin are generated from the table: :mod:`fvswe.backends.cuda_header`),
the rows the CPU uses become the fields of its kernels' :data:`Controls` named tuple. A new
control is one row here, and the code that reads it.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..integrators import INTEGRATORS, Integrator, table_fractions
from .layout import Layout


@dataclass(frozen=True)
class Setup:
    """What a backend is built from: the layout, the time-step rule and the integrator."""

    layout: Layout
    cfl: float
    dt_mode: str
    dt_fixed: float | None
    integrator: Integrator = INTEGRATORS[0]


@dataclass(frozen=True)
class Control:
    """One field of the controls: ``value(setup)`` is its value in a run (an array for a
    pointer, None for a null one), None where the GPU's steps keep it (time, counters, the
    limiter's lists); ``cpu``: the CPU's kernels read it too."""

    name: str
    ctype: str
    doc: str
    value: Callable[[Setup], Any] | None = None
    cpu: bool = True


def _coefficients(setup: Setup) -> np.ndarray | None:
    """The bottom friction's coefficients: one value where every cell's is the same."""
    coef = setup.layout.friction_coef
    if coef is None:
        return None
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    return coef[:1] if coef.size and (coef == coef[0]).all() else coef


def level_edges(lay: Layout) -> np.ndarray:
    """The edges with tables (level, discharge, characteristic), in edge order (their index
    m among them is their slot in the GPU's per-step level fluxes)."""
    if lay.levels is None:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(lay.levels.edge_level >= 0)


def _levels(setup: Setup, field: str, dtype) -> np.ndarray | None:
    lv = setup.layout.levels
    if lv is None or not lv.count:  # (a part of a run with tables may have no such edge)
        return None
    values = {"table": lambda: lv.edge_level[level_edges(setup.layout)],
              "offsets": lambda: lv.offsets, "times": lambda: lv.times,
              "values": lambda: lv.values}  # fmt: skip
    return np.ascontiguousarray(values[field](), dtype=dtype)


def _wind(setup: Setup, field: str, default):
    wind = setup.layout.wind
    if wind is None:
        return default
    value = getattr(wind, field)
    return np.ascontiguousarray(value, np.float64) if isinstance(value, np.ndarray) else value


def _per_cell(values) -> np.ndarray | None:
    return None if values is None else np.ascontiguousarray(values, dtype=np.float64)


def _sources(setup: Setup, field: str, dtype) -> np.ndarray | None:
    """An array of the run's point sources and rain (:class:`fvswe.sources.SourceTables`)."""
    tables = setup.layout.sources
    return None if tables is None else np.ascontiguousarray(getattr(tables, field), dtype=dtype)


def _limiter(setup: Setup, size: int, fill, dtype) -> np.ndarray | None:
    """The GPU limiter's per-cell work arrays (two layers), as a step finds them."""
    lay = setup.layout
    return np.full(size * lay.n_cells, fill, dtype=dtype) if lay.model.layers == 2 else None


#: Every control, in the order of ``struct Ctrl``.
CONTROLS: tuple[Control, ...] = (
    Control("t", "double", "simulated time"),
    Control("dt", "double", "time step of the current (lagged: the next) step"),
    Control("dt_next", "double", "the next step's dt, while a multi-stage step runs"),
    Control("t_end", "double", "stop time of the current advance()"),
    Control("dt_fixed", "double", 'the step of dt_mode "fixed"', lambda s: s.dt_fixed or 0.0),
    Control("cfl", "double", "gamma of docs/SCHEMES.md (3)", lambda s: s.cfl),
    Control("dt_used", "double", "the (possibly clipped) step being taken"),
    Control("steps", "long long", "steps taken since construction"),
    Control("max_steps", "long long", "stop when steps reaches this"),
    Control("clipped", "unsigned long long", "depths clipped to 0"),
    Control("nonhyp", "unsigned long long", "FLAG_NONHYPERBOLIC edge evaluations"),
    Control("degenerate", "unsigned long long", "FLAG_NEAR_COINCIDENT: near-coincident pair"),
    Control("thin", "unsigned long long", "FLAG_THIN: thin-layer fallback"),
    Control("blocks_done", "unsigned int", "ticket of the last-block reduction (reset by it)"),
    Control("fixed", "int", '1: dt_mode "fixed"', lambda s: int(s.dt_mode == "fixed")),
    Control("stalled", "int", "1: the reduction gave no positive dt (NaN or 0): stop stepping"),
    Control("friction", "int", "bottom friction (one layer, or the lower of two): 0 none, "
            "FRICTION_CHEZY, FRICTION_MANNING", lambda s: s.layout.friction_kind),
    Control("friction_coef", "const double*", "per cell (or one for all): Chezy C or Manning n",
            _coefficients),
    Control("friction_stride", "int", "friction_coef's stride: 1 per cell, 0 one value for all",
            lambda s: int(_coefficients(s) is not None and _coefficients(s).size > 1)),
    Control("g", "double", "gravity", lambda s: s.layout.model.g),
    Control("r", "double", "density ratio", lambda s: s.layout.model.r),
    Control("eps_h", "double", "thin-layer depth (docs/SCHEMES.md §8)",
            lambda s: s.layout.model.eps_h),
    Control("interfacial_coef", "const double*", "per cell: c_i of two layers (null: none)",
            lambda s: _per_cell(s.layout.interfacial_coef)),
    Control("level_inflow", "double", "m^3 in through the edges with tables (upper layer)"),
    Control("level_inflow2", "double", "the same for the lower of two layers"),
    # Boundaries with tables (fvswe.boundary.LevelTables): edge m with tables (in edge order)
    # uses table level_table[m] (and the next one), whose samples are level_times/values
    # [level_offsets[k] .. level_offsets[k+1]); each step writes its outward mass flux per
    # layer |Gamma| (F-_h + q_i.eta) into level_flux[2 m + layer] (the GPU's).
    Control("level_table", "const int*", "first table of each edge with tables",
            lambda s: _levels(s, "table", np.int32), cpu=False),
    Control("level_offsets", "const long long*", "first sample of each table",
            lambda s: _levels(s, "offsets", np.int64)),
    Control("level_times", "const double*", "sample times", lambda s: _levels(s, "times", float)),
    Control("level_values", "const double*", "sample values",
            lambda s: _levels(s, "values", float)),
    Control("level_flux", "double*", "outward mass flux per layer of each edge with tables",
            lambda s: np.zeros(2 * level_edges(s.layout).size) if level_edges(s.layout).size
            else None, cpu=False),
    Control("n_level", "int", "edges with tables", lambda s: level_edges(s.layout).size),
    Control("thin_cells", "unsigned long long", "layers left with 0 < h < eps_h after an update"),
    Control("clip_t", "double", "time of the first step that clipped a depth"),
    Control("cfl_t", "double", "time of the first fixed step above the stable one"),
    Control("courant", "double", "its largest Courant number dt sum(|Gamma| ||D||) / (2 |V|)"),
    Control("clip_step", "long long", "1 + that step (0: none)"),
    Control("cfl_step", "long long", "1 + that step (0: none)"),
    Control("dt_floor", "double", "record the first step whose stable dt falls below this"),
    Control("slow_t", "double", "the time of that step"),
    Control("slow_step", "long long", "1 + that step (0: none)"),
    Control("clip_cell", "int", "smallest cell clipped in that step, as cell - NO_CELL (0: none)"),
    Control("cfl_cell", "int", "smallest cell with Courant number > 1 in it, likewise"),
    # Coriolis and wind (fvswe/physics/forcing.py, docs/SCHEMES.md §15)
    Control("coriolis_f", "const double*", "the Coriolis parameter f per cell (1/s); null: none",
            lambda s: _per_cell(s.layout.coriolis)),
    Control("sphere", "const double*", "a lon/lat mesh on the sphere: per cell G_x, G_y, "
            "tan(phi)/R (fvswe.mesh.sphere, docs/SCHEMES.md §20); null: planar",
            lambda s: None if s.layout.sphere is None else _per_cell(s.layout.sphere).ravel()),
    Control("wind_times", "const double*", "the wind table (fvswe.forcing.WindTable): times (s)",
            lambda s: _wind(s, "times", None)),
    Control("wind_u", "const double*", "u10 (m/s)", lambda s: _wind(s, "u", None)),
    Control("wind_v", "const double*", "v10 (m/s)", lambda s: _wind(s, "v", None)),
    Control("n_wind", "int", "samples (0: no wind)",
            lambda s: 0 if s.layout.wind is None else s.layout.wind.times.size),
    Control("wind_law", "int", "drag law: 1 constant, 2 Large & Pond, 3 Wu (0: no wind)",
            lambda s: _wind(s, "law", 0)),
    Control("wind_cd", "double", "the constant law's C_d", lambda s: _wind(s, "cd", 0.0)),
    Control("wind_ratio", "double", "rho_air / rho_water", lambda s: _wind(s, "ratio", 0.0)),
    # Point sources, sinks and rain (fvswe.sources, docs/SCHEMES.md §16): cell i adds
    # source_weight[e] source_mean[source_table[e]] to the depth rate of the table's layer for
    # e in [source_start[i], source_start[i+1]); source_mean holds each table's mean over the
    # step (the step's sources op writes it), source_area its weights times the cells' areas.
    Control("n_sources", "int", "source tables (0: no sources)",
            lambda s: 0 if s.layout.sources is None else s.layout.sources.count),
    Control("source_start", "const int*", "first entry of each cell (L + 1)",
            lambda s: _sources(s, "start", np.int32)),
    Control("source_table", "const int*", "the table of each entry",
            lambda s: _sources(s, "table", np.int32)),
    Control("source_weight", "const double*", "the weight of each entry",
            lambda s: _sources(s, "weight", np.float64)),
    Control("source_offsets", "const long long*", "first sample of each table",
            lambda s: _sources(s, "offsets", np.int64)),
    Control("source_times", "const double*", "sample times", lambda s: _sources(s, "times", float)),
    Control("source_values", "const double*", "sample values",
            lambda s: _sources(s, "values", float)),
    Control("source_layer", "const int*", "the layer each table feeds (0 the upper or only)",
            lambda s: _sources(s, "layer", np.int32)),
    Control("source_kind", "const int*", "each table's counter: 0 sources, 1 rain",
            lambda s: _sources(s, "kind", np.int32)),
    Control("source_area", "const double*", "each table's weights times the cells' areas (m^2)",
            lambda s: _sources(s, "volume", float)),
    Control("source_mean", "double*", "each table's mean over the step being taken",
            lambda s: None if s.layout.sources is None else np.zeros(s.layout.sources.count)),
    Control("source_volume", "double", "m^3 the sources put in the upper (or only) layer"),
    Control("source_volume2", "double", "the same for the lower of two layers"),
    Control("rain_volume", "double", "m^3 the rain put in (evaporation took out)"),
    # The positivity limiter (docs/SCHEMES.md §13.4; two layers), on the device: the normal
    # pass lists its candidate cells, limit_theta and limit_update act on them and reset.
    Control("t_step", "double", "start time of the step being taken"),
    Control("t_stage", "double", "time of the stage being taken (its boundary tables, forcing)"),
    Control("weight", "double", "the stage's weight in the step's counters"),
    Control("step_no", "long long", "1 + the index of the step being taken"),
    Control("updates", "long long", "stage updates taken (each adds its inflow once)"),
    Control("stages", "const double*", "per stage of the integrator: c, a, weight",
            lambda s: np.array([[g.c, g.a, g.weight] for g in s.integrator.stages]).ravel(),
            cpu=False),
    Control("stage_q", "const double*", "per stage: q of the midpoint kinds' table time t + q dt",
            lambda s: np.array(table_fractions(s.integrator, s.dt_mode)), cpu=False),
    Control("t_mid", "double", "the midpoint kinds' table time of the stage being taken"),
    Control("limited", "unsigned long long", "layers of cells limited (theta < 1)"),
    Control("lim_cells", "int*", "the step's candidates (n_cells long)",
            lambda s: _limiter(s, 1, 0, np.int32), cpu=False),
    Control("lim_theta", "double*", "theta per cell and layer: 1 but in a step's limit kernels",
            lambda s: _limiter(s, 2, 1.0, np.float64), cpu=False),
    Control("lim_claim", "int*", "per cell: 0 but in a step's limit kernels (LIM_* marks)",
            lambda s: _limiter(s, 1, 0, np.int32), cpu=False),
    Control("listed", "unsigned long long", "candidates listed in all steps (the limiter's work)"),
    Control("candidates", "int", "cells in lim_cells (0: the limit kernels return at once)"),
    # GPU ranks (docs/PARALLEL.md): limit_update recomputes owned cells only, and also the
    # owned neighbours of the halo cells listed after the candidates (theta < 1 at their owner).
    Control("owned", "int", "cells [0, owned) are this part's (all cells on one device)",
            lambda s: s.layout.owned_cells),
    Control("halo_listed", "int", "halo cells in lim_cells after the candidates"),
    Control("rest", "int", "a compensated float32 state (docs/SCHEMES.md §2.7): its remainders "
            "follow each state buffer after this many 4-vectors (0: none)"),
    # The linear reconstruction (docs/SCHEMES.md §19; FVSWE_LINEAR modules only, last so that
    # the fields above keep their offsets): GpuBackend points them when the run is linear.
    Control("lin_faces", "void*", "per slot its face state, packed as the state (real4s)"),
    Control("lin_interior", "void*", "per slot its |Gamma| times cell-interior term (NVAR reals)"),
    Control("lin_slot", "const int*", "per slot the slot across its edge (-1 boundary, -2 none)"),
    Control("lin_geom", "const void*", "per slot: the LSQ weights (wx, wy), the face offset "
            "(row 4 m + q of a value per cell; reals)"),
    Control("lin_fallback", "int*", "per owned cell: 1 where it fell back to first order"),
    Control("lin_partial", "double*", "per block of troubled_pass: 7 minima, 7 maxima"),
    Control("lin_extent", "double*", "the variables' 7 minima and 7 maxima over the cells"),
    Control("first_order", "unsigned long long", "cells left first order by the reconstruction"),
    Control("lin_vars", "void*", "per cell its 7 reconstruction variables (zeros where "
            "troubled) and 1 where troubled, else 0, as two real4s (troubled_pass)"),
)  # fmt: skip

#: C type -> NumPy field type (pointers are 8-byte device addresses).
_NUMPY = {"double": "f8", "long long": "i8", "unsigned long long": "u8",
          "unsigned int": "u4", "int": "i4"}  # fmt: skip
#: Host view of ``struct Ctrl`` (same fields, same offsets: C's alignment rules, which
#: NumPy's ``align=True`` follows).
CTRL_DTYPE = np.dtype(
    [(c.name, "u8" if c.ctype.endswith("*") else _NUMPY[c.ctype]) for c in CONTROLS], align=True
)
#: The CPU kernels' controls: the rows with a value that the CPU reads.
CPU_CONTROLS = tuple(c for c in CONTROLS if c.value is not None and c.cpu)
Controls = namedtuple("Controls", [c.name for c in CPU_CONTROLS])
#: C pointee type -> the NumPy dtype of an absent array on the CPU (an empty one).
_EMPTY = {"double": np.float64, "long long": np.int64, "int": np.int32}


def values(setup: Setup) -> dict[str, Any]:
    """``{name: value}`` of every control with one (arrays, None for a null pointer)."""
    return {c.name: c.value(setup) for c in CONTROLS if c.value is not None}


def cpu_controls(setup: Setup) -> Controls:
    """The CPU kernels' :data:`Controls`: scalars as NumPy scalars of their C type, an absent
    array as an empty one (the kernels test its size)."""
    out = []
    for c in CPU_CONTROLS:
        v = c.value(setup)
        if c.ctype.endswith("*"):
            pointee = c.ctype.removeprefix("const ").removesuffix("*")
            v = np.zeros(0, _EMPTY[pointee]) if v is None else v
        else:
            v = np.dtype(_NUMPY[c.ctype]).type(v)
        out.append(v)
    return Controls(*out)


def host_block(setup: Setup, pointers: dict[str, int]) -> np.ndarray:
    """A control block for the GPU: every value, ``pointers`` giving the device address of
    each array (absent: null), dt NaN unless fixed, the rest zero."""
    ctrl = np.zeros(1, dtype=CTRL_DTYPE)
    for name, v in values(setup).items():
        if isinstance(v, np.ndarray) or v is None:
            ctrl[name] = pointers.get(name, 0)
        else:
            ctrl[name] = v
    ctrl["dt"] = setup.dt_fixed if setup.dt_mode == "fixed" else math.nan
    return ctrl
