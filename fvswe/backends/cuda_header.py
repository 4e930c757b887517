"""The CUDA sources' generated headers: Python is the one definition of what both sides share.

``constants.cuh`` holds the constants (flag bits, EIG4's iteration counts and
tolerances, boundary codes, kernel ops, the last-step rule, friction laws) and the
step control block ``struct Ctrl``, written from :data:`CTRL_FIELDS` so that it and
:data:`CTRL_DTYPE` have the same fields at the same offsets. ``schemes.cuh`` includes
the compiled kernel's header and names its flux, from
:data:`fvswe.schemes.registry.KERNEL_IDS`. Neither exists as a file in the
repository: :func:`fvswe.backends.gpu.source` inlines them where the sources include
them, and :func:`write` puts them beside a host compiler's inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..boundary import LEVEL, OPEN, WALL
from ..schemes import common, registry
from .base import LAST_STEP_RTOL
from .layout import FRICTION_KINDS

#: A zeroed control block means "no cell": cells are stored as ``cell - NO_CELL``, which
#: atomicMin lowers to the smallest cell index (see ``Ctrl::clip_cell``).
NO_CELL = 2**31 - 1
#: Kernel op bits: ``OP_UPDATE`` W -= dt/|V| sum(slots), then t += dt, steps += 1;
#: ``OP_DT`` dt = min_i dt_i (after the update when both); ``OP_COUNT`` count flagged
#: edges (edge passes that feed an update).
OP_UPDATE, OP_DT, OP_COUNT = 1, 2, 4
#: EIG4's precision-dependent constants (docs/SCHEMES.md §3.4, §3.5) as ``Prec<T>``:
#: float64 is the reference's (the CPU computes in float64 only); float32 loosens both.
PRECISION = {
    "double": {"newton_tol": common.NEWTON_TOL, "near_coincident": common.NEAR_COINCIDENT},
    "float": {"newton_tol": 1e-6, "near_coincident": 1e-3},
}

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
    "FRICTION_CHEZY": FRICTION_KINDS["chezy"],
    "FRICTION_MANNING": FRICTION_KINDS["manning"],
    "LAST_STEP_RTOL": LAST_STEP_RTOL,
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
    ("friction", "int", "one layer: 0 none, FRICTION_CHEZY, FRICTION_MANNING"),
    ("friction_coef", "double", "Chezy C or Manning n"),
    ("g", "double", "gravity, for the friction"),
    ("level_inflow", "double", "m^3 that entered through the imposed-level edges"),
    # Imposed-level boundaries (fvswe.boundary.LevelTables), on the device: level edge m (in
    # edge order) uses table level_table[m], whose samples are level_times/values[
    # level_offsets[k] .. level_offsets[k+1]); each step writes its outward mass flux
    # |Gamma| (F-_h + q_i.eta) into level_flux[m].
    ("level_table", "const int*", "table of each level edge"),
    ("level_offsets", "const long long*", "first sample of each table"),
    ("level_times", "const double*", "sample times"),
    ("level_values", "const double*", "sample levels"),
    ("level_flux", "double*", "outward mass flux of each level edge this step"),
    ("n_level", "int", "level edges"),
    ("pad", "int", "alignment"),
    ("thin_cells", "unsigned long long", "layers left with 0 < h < eps_h after an update"),
    ("clip_t", "double", "time of the first step that clipped a depth"),
    ("cfl_t", "double", "time of the first fixed step above the stable one"),
    ("courant", "double", "its largest Courant number dt sum(|Gamma| ||D||) / (2 |V|)"),
    ("clip_step", "long long", "1 + that step (0: none)"),
    ("cfl_step", "long long", "1 + that step (0: none)"),
    ("clip_cell", "int", "smallest cell clipped in that step, as cell - NO_CELL (0: none)"),
    ("cfl_cell", "int", "smallest cell with Courant number > 1 in it, likewise"),
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
    lines += ["", "template <typename T> struct Prec;"]
    for real, values in PRECISION.items():
        members = " ".join(
            f"static constexpr {real} {k} = {_literal(v, real)};" for k, v in values.items()
        )
        lines.append(f"template <> struct Prec<{real}> {{ {members} }};")
    lines += ["", "struct Ctrl {"]
    lines += [f"    {ctype} {name};  // {doc}" for name, ctype, doc in CTRL_FIELDS]
    return "\n".join([*lines, "};", ""])


def schemes() -> str:
    """The text of ``schemes.cuh``: for ``-DFVSWE_SCHEME=<kernel id>``, the kernel's header
    (included once per module) and ``SCHEME_FLUX``, its ``module::function``, checked
    against ``FVSWE_LAYERS``."""
    by_module: dict[str, list[int]] = {}
    for ref, kid in registry.KERNEL_IDS.items():
        by_module.setdefault(ref.split(".")[0], []).append(kid)
    lines = ["// Generated by fvswe/backends/cuda_header.py from fvswe/schemes/registry.py.",
             "#pragma once"]  # fmt: skip
    for n, (module, ids) in enumerate(by_module.items()):
        test = " || ".join(f"FVSWE_SCHEME == {kid}" for kid in ids)
        lines += [f"#{'elif' if n else 'if'} {test}", f'#include "{module}.cuh"']
    known = ", ".join(f"{kid} {ref}" for ref, kid in registry.KERNEL_IDS.items())
    lines += ["#else", f'#error "FVSWE_SCHEME must be one of: {known}"', "#endif"]
    for ref, kid in registry.KERNEL_IDS.items():
        layers = registry.KERNEL_LAYERS[ref]
        lines += [
            f"#{'elif' if kid else 'if'} FVSWE_SCHEME == {kid}",
            f"#define SCHEME_FLUX {ref.replace('.', '::')}",
            f"#if FVSWE_LAYERS != {layers}",
            f'#error "FVSWE_SCHEME {kid} ({ref}) needs FVSWE_LAYERS {layers}"',
            "#endif",
        ]
    return "\n".join([*lines, "#endif", ""])


#: Generated header name -> its text.
HEADERS = {"constants.cuh": constants, "schemes.cuh": schemes}


def write(directory: str | Path) -> Path:
    """Write the generated headers into ``directory`` (for a host compiler's ``-I``)."""
    directory = Path(directory)
    for name, text in HEADERS.items():
        (directory / name).write_text(text())
    return directory
