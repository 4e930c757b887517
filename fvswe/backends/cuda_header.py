"""The CUDA sources' generated headers: Python is the one definition of what both sides share.

``physics.cuh`` is the device physics emitted from the Numba source (fvswe/codegen.py).
``constants.cuh`` holds the constants (flag bits, EIG4's iteration counts and
tolerances, boundary codes, kernel ops, the last-step rule, friction laws) and the
step control block ``struct Ctrl``, written from :data:`CTRL_FIELDS` so that it and
:data:`CTRL_DTYPE` have the same fields at the same offsets. ``schemes.cuh`` includes
the compiled kernel's header and names its flux, from
:data:`fvswe.registry.KERNEL_IDS`. Neither exists as a file in the
repository: :func:`fvswe.backends.gpu.source` inlines them where the sources include
them, and :func:`write` puts them beside a host compiler's inputs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from .. import registry
from ..boundary import CHARACTERISTIC, DISCHARGE, LEVEL, OPEN, WALL
from ..physics import constants as common
from ..registry import resolve
from .base import EPS_U_RATIO, LAST_STEP_RTOL, LIMIT_MARGIN
from .layout import FRICTION_KINDS

#: A zeroed control block means "no cell": cells are stored as ``cell - NO_CELL``, which
#: atomicMin lowers to the smallest cell index (see ``Ctrl::clip_cell``).
NO_CELL = 2**31 - 1
#: A boundary code is ``bc | m << BC_BITS``: ``bc`` the condition (fvswe.boundary), ``m``
#: the edge's index among the edges with tables (levels, discharges, characteristics).
BC_BITS = 3
#: Kernel op bits: ``OP_UPDATE`` W -= dt/|V| sum(slots), then t += dt, steps += 1;
#: ``OP_DT`` dt = min_i dt_i (after the update when both); ``OP_COUNT`` count flagged
#: edges (edge passes that feed an update).
OP_UPDATE, OP_DT, OP_COUNT = 1, 2, 4
#: ``constexpr`` integers and doubles of ``constants.cuh`` (name -> value).
CONSTANTS: dict[str, int | float] = {
    "FLAG_NONHYPERBOLIC": common.FLAG_NONHYPERBOLIC,
    "FLAG_NEAR_COINCIDENT": common.FLAG_NEAR_COINCIDENT,
    "FLAG_THIN": common.FLAG_THIN,
    "NEWTON_MAXIT": common.NEWTON_MAXIT,
    "POLISH_STEPS": common.POLISH_STEPS,
    "NO_CELL": NO_CELL,
    "OP_UPDATE": OP_UPDATE,
    "OP_DT": OP_DT,
    "OP_COUNT": OP_COUNT,
    "BC_WALL": WALL,
    "BC_OPEN": OPEN,
    "BC_LEVEL": LEVEL,
    "BC_DISCHARGE": DISCHARGE,
    "BC_CHARACTERISTIC": CHARACTERISTIC,
    "BC_BITS": BC_BITS,
    "FRICTION_CHEZY": FRICTION_KINDS["chezy"],
    "FRICTION_MANNING": FRICTION_KINDS["manning"],
    "LAST_STEP_RTOL": LAST_STEP_RTOL,
    "LIMIT_MARGIN64": LIMIT_MARGIN["float64"],
    "LIMIT_MARGIN32": LIMIT_MARGIN["float32"],
    "EPS_U_RATIO64": EPS_U_RATIO["float64"],
    "EPS_U_RATIO32": EPS_U_RATIO["float32"],
}

#: C type -> NumPy field type (pointers are 8-byte device addresses).
_NUMPY = {"double": "f8", "long long": "i8", "unsigned long long": "u8",
          "unsigned int": "u4", "int": "i4"}  # fmt: skip

#: ``struct Ctrl``, the step control block, one per GPU backend in device memory: the host
#: reads it every few steps. (name, C type, meaning).
CTRL_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("t", "double", "simulated time"),
    ("dt", "double", "time step of the next step (lagged: from the previous speeds)"),
    ("t_end", "double", "stop time of the current advance()"),
    ("dt_fixed", "double", 'the step of dt_mode "fixed"'),
    ("cfl", "double", "gamma of docs/SCHEMES.md (3)"),
    ("dt_used", "double", "the (possibly clipped) step last taken"),
    ("steps", "long long", "steps taken since construction"),
    ("max_steps", "long long", "stop when steps reaches this"),
    ("clipped", "unsigned long long", "depths clipped to 0"),
    ("nonhyp", "unsigned long long", "FLAG_NONHYPERBOLIC edge evaluations"),
    ("degenerate", "unsigned long long", "FLAG_NEAR_COINCIDENT: near-coincident internal pair"),
    ("thin", "unsigned long long", "FLAG_THIN: thin-layer fallback"),
    ("blocks_done", "unsigned int", "ticket of the last-block reduction (reset by it)"),
    ("fixed", "int", '1: dt_mode "fixed" (the reduction leaves dt alone)'),
    ("stalled", "int", "1: the reduction gave no positive dt (NaN or 0): stop stepping"),
    (
        "friction",
        "int",
        "bottom friction (one layer, or the lower of two): 0 none, "
        "FRICTION_CHEZY, FRICTION_MANNING",
    ),
    ("friction_coef", "const double*", "per cell: Chezy C or Manning n"),
    ("g", "double", "gravity, for the friction"),
    ("r", "double", "density ratio, for the interfacial friction"),
    ("eps_h", "double", "thin-layer depth of the desingularised velocities, likewise"),
    ("interfacial_coef", "const double*", "per cell: c_i of two layers (null: none)"),
    ("level_inflow", "double", "m^3 that entered through the edges with tables (upper layer)"),
    ("level_inflow2", "double", "the same for the lower of two layers"),
    # Boundaries with tables (fvswe.boundary.LevelTables), on the device: edge m with tables
    # (in edge order) uses table level_table[m] (and the next one), whose samples are
    # level_times/values[level_offsets[k] .. level_offsets[k+1]); each step writes its
    # outward mass flux per layer |Gamma| (F-_h + q_i.eta) into level_flux[2 m + layer].
    ("level_table", "const int*", "first table of each edge with tables"),
    ("level_offsets", "const long long*", "first sample of each table"),
    ("level_times", "const double*", "sample times"),
    ("level_values", "const double*", "sample values"),
    ("level_flux", "double*", "outward mass flux per layer of each edge with tables"),
    ("n_level", "int", "edges with tables"),
    ("friction_stride", "int", "friction_coef's stride: 1 per cell, 0 one value for all"),
    ("thin_cells", "unsigned long long", "layers left with 0 < h < eps_h after an update"),
    ("clip_t", "double", "time of the first step that clipped a depth"),
    ("cfl_t", "double", "time of the first fixed step above the stable one"),
    ("courant", "double", "its largest Courant number dt sum(|Gamma| ||D||) / (2 |V|)"),
    ("clip_step", "long long", "1 + that step (0: none)"),
    ("cfl_step", "long long", "1 + that step (0: none)"),
    ("clip_cell", "int", "smallest cell clipped in that step, as cell - NO_CELL (0: none)"),
    ("cfl_cell", "int", "smallest cell with Courant number > 1 in it, likewise"),
    # Coriolis and wind (fvswe/physics/forcing.py, docs/SCHEMES.md §15), on the device:
    ("coriolis_f", "const double*", "the Coriolis parameter f of each cell (1/s); null: none"),
    ("wind_times", "const double*", "the wind table (fvswe.forcing.WindTable): times (s)"),
    ("wind_u", "const double*", "u10 (m/s)"),
    ("wind_v", "const double*", "v10 (m/s)"),
    ("n_wind", "int", "samples (0: no wind)"),
    ("wind_law", "int", "drag law: 1 constant, 2 Large & Pond, 3 Wu"),
    ("wind_cd", "double", "the constant law's C_d"),
    ("wind_ratio", "double", "rho_air / rho_water"),
    # The positivity limiter (docs/SCHEMES.md §13.4; two layers), on the device: the normal
    # pass lists its candidate cells, limit_theta and limit_update act on them and reset.
    ("t_step", "double", "start time of the step last taken (t before finish_step advanced it)"),
    ("limited", "unsigned long long", "layers of cells limited (theta < 1)"),
    ("lim_cells", "int*", "the step's candidates (n_cells long)"),
    ("lim_theta", "double*", "theta per cell and layer: 1 but in a step's limit kernels"),
    ("lim_claim", "int*", "per cell: 0 but in a step's limit kernels (LIM_* marks)"),
    ("listed", "unsigned long long", "candidates listed in all steps (the limiter's work)"),
    ("candidates", "int", "cells in lim_cells (0: the limit kernels return at once)"),
    # GPU ranks (docs/PARALLEL.md): limit_update recomputes owned cells only, and also the
    # owned neighbours of the halo cells listed after the candidates (theta < 1 at their owner).
    ("owned", "int", "cells [0, owned) are this part's (all cells on one device)"),
    ("halo_listed", "int", "halo cells in lim_cells after the candidates"),
    ("pad2", "int", "alignment"),
)

#: Host view of ``struct Ctrl`` (same fields, same offsets: both are written from
#: :data:`CTRL_FIELDS`, with C's alignment rules, which NumPy's ``align=True`` follows).
CTRL_DTYPE = np.dtype(
    [(name, "u8" if ctype.endswith("*") else _NUMPY[ctype]) for name, ctype, _ in CTRL_FIELDS],
    align=True,
)


def _literal(value: int | float, ctype: str) -> str:
    """A C++ literal that parses to exactly ``value`` in ``ctype``."""
    if ctype == "int":
        return str(int(value))
    if ctype == "float":
        return f"{np.float32(value)!s}f"  # shortest decimal that round-trips in float32
    return repr(float(value))  # shortest decimal that round-trips in float64


def constants() -> str:
    """The text of ``constants.cuh``."""
    lines = ["// Generated by fvswe/backends/cuda_header.py from the Python definitions.",
             "#pragma once", ""]  # fmt: skip
    for name, value in CONSTANTS.items():
        ctype = "int" if isinstance(value, int) else "double"
        lines.append(f"inline constexpr {ctype} {name} = {_literal(value, ctype)};")
    lines += ["", "struct Ctrl {"]
    lines += [f"    {ctype} {name};  // {doc}" for name, ctype, doc in CTRL_FIELDS]
    return "\n".join([*lines, "};", ""])


def schemes() -> str:
    """The text of ``schemes.cuh``: for ``-DFVSWE_SCHEME=<kernel id>``, ``SCHEME_FLUX``, the
    kernel's ``module::function`` in ``physics.cuh``, checked against ``FVSWE_LAYERS``."""
    lines = ["// Generated by fvswe/backends/cuda_header.py from fvswe/registry.py.",
             "#pragma once"]  # fmt: skip
    for ref, kid in registry.KERNEL_IDS.items():
        layers = registry.KERNEL_LAYERS[ref]
        lines += [
            f"#{'elif' if kid else 'if'} FVSWE_SCHEME == {kid}",
            f"#define SCHEME_FLUX {ref.replace('.', '::')}",
            f"#if FVSWE_LAYERS != {layers}",
            f'#error "FVSWE_SCHEME {kid} ({ref}) needs FVSWE_LAYERS {layers}"',
            "#endif",
        ]
    known = ", ".join(f"{kid} {ref}" for ref, kid in registry.KERNEL_IDS.items())
    lines += ["#else", f'#error "FVSWE_SCHEME must be one of: {known}"']
    return "\n".join([*lines, "#endif", ""])


@cache
def physics() -> str:
    """The text of ``physics.cuh``: the device physics emitted from the Numba modules
    (docs/CODEGEN.md), every kernel of :data:`fvswe.registry.KERNELS` with its
    pointer adapter, and what the pipeline calls besides: the boundary ghosts, the forcing
    and the friction."""
    from .. import codegen, physics

    fluxes = {resolve("fvswe.physics", ref): 3 * n for ref, n in registry.KERNEL_LAYERS.items()}
    ghosts, friction, forcing = physics.ghosts, physics.friction, physics.forcing
    update, limiter = physics.update, physics.limiter
    extra = [
        update.rate,  # the cell update (every variant's volume pass)
        update.increment,
        update.damped,
        update.stable_dt,
        update.combine,
        limiter.outflow_term,  # the positivity limiter (two layers)
        limiter.is_candidate,
        limiter.mass_flux,
        limiter.theta,
        limiter.limited_mass,
        limiter.donor_momentum,
        physics.common.wall_ghost,  # wall ghosts (two layers, one)
        physics.common.wall_ghost1,
        ghosts.level_ghost,  # boundary ghosts and the discharge edges' F- (edge and slot passes)
        ghosts.discharge_ghost,
        ghosts.characteristic_ghost,
        ghosts.discharge_fluctuation,
        forcing.wind_stress,  # forcing, then friction (volume pass)
        forcing.rotation,
        forcing.force_layer,
        friction.interfacial,
        friction.bottom,
    ]
    return codegen.emit(fluxes, extra, physics.common.FLOAT32)


#: Generated header name -> its text.
HEADERS = {"constants.cuh": constants, "schemes.cuh": schemes, "physics.cuh": physics}


def write(directory: str | Path) -> Path:
    """Write the generated headers into ``directory`` (for a host compiler's ``-I``)."""
    directory = Path(directory)
    for name, text in HEADERS.items():
        (directory / name).write_text(text())
    return directory
