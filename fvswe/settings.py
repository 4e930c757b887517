"""The run settings: one table, and the one set of defaults, of a run's scalar choices.

Each :class:`Setting` row is read by everything that names run settings, so a new
setting is one row here plus the code that uses it:

- the case file's top-level keys, their types, help and template lines
  (:data:`fvswe.casefile.SCHEMA`, ``fvswe case --template``, docs/guide/case-files.md);
- the flags of ``fvswe run`` and their override of the case file (:mod:`fvswe.cli.run`);
- the keyword arguments of :class:`~fvswe.simulation.Simulation`: their defaults and
  the checks of :func:`resolve` (choices, ranges);
- the run identity that a restart must share (:func:`fvswe.restart.identity`).

A setting of one method only (``only``: the implicit method's θ, preconditioner, ...; the
explicit method's integrator, threads, fast math, thin-layer depth) keeps its default under
the other, and a run that sets it there is refused in one line rather than silently
ignoring it.

Structured inputs (mesh, initial state, boundaries, friction, Coriolis, wind) are not run
settings: they have tables of their own in the case file and fingerprints in the identity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import integrators
from . import registry as schemes
from .backends import BACKENDS
from .errors import ConfigError
from .implicit.cg import TOL
from .implicit.precond import CHOICES as PRECONDITIONER_CHOICES
from .implicit.rrb import COARSE_CELLS

#: The TOML types of a number (an integer is a number too).
NUMBER = (int, float)
#: ``Setting.older`` of a key every recorded identity holds.
ALWAYS = object()


@dataclass(frozen=True)
class Setting:
    """One run setting.

    ``types`` are its TOML types; ``default`` is its value when nobody sets it (None:
    computed, see ``help``); ``choices`` its allowed values and ``check(value)`` the reason a
    value is refused (None: accepted), both applied by :func:`resolve`. ``identity``: a run
    continuing from a checkpoint must have the same value; ``older`` is then the value of
    runs whose checkpoints and series were written before the key joined the identity
    (:data:`ALWAYS`: it always belonged to it), so that they still restart. ``flag``: ``fvswe
    run`` has ``--name`` (underscores as dashes), which overrides the case file.
    A switch whose default is true has ``--no-name`` instead (:meth:`flag_name`).
    ``example`` is the template's TOML value (default: the default's), ``active=False``
    writes it commented out. ``only``: the method (:data:`METHODS`) it belongs to (``""``:
    every method); :func:`resolve` refuses another value than the default under the other.
    """

    name: str
    types: type | tuple[type, ...]
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    check: Callable[[Any], str | None] | None = None
    identity: bool = False
    older: Any = ALWAYS
    flag: bool = True
    example: str = ""
    active: bool = True
    only: str = ""

    def validate(self, value: Any) -> None:
        """A one-line :class:`ConfigError` naming the setting for a value it refuses."""
        if self.choices and value not in self.choices:
            raise ConfigError(
                f"{self.name}: unknown {value!r} (choose from {', '.join(self.choices)})"
            )
        unset = value is None and self.default is None  # computed later (see ``help``)
        reason = None if self.check is None or unset else self.check(value)
        if reason is not None:
            raise ConfigError(f"{self.name}: {reason}, got {value!r}")

    def toml_example(self) -> str:
        """The template's value: ``example``, else the default written as TOML."""
        return self.example or ("" if self.default is None else _toml(self.default))

    def flag_name(self) -> str:
        """``fvswe run``'s flag: ``--name`` (underscores as dashes), ``--no-name`` for a switch
        that is on by default."""
        name = self.name.replace("_", "-")
        return f"--no-{name}" if self.default is True else f"--{name}"

    def flag_help(self) -> str:
        """The help of ``--name``: the case file's, with the default."""
        if self.default is True:
            return f"switch off: {self.help}"
        plain = self.default is None or isinstance(self.default, bool)
        return self.help if plain else f"{self.help} (default: {self.default})"


def _toml(value: bool | int | float | str) -> str:
    """``value`` as a TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _cfl(value) -> str | None:
    return None if 0 < value <= 1 else "must lie in (0, 1]"


def _number(value) -> bool:
    return isinstance(value, NUMBER) and not isinstance(value, bool) and math.isfinite(value)


def _theta(value) -> str | None:
    return None if _number(value) and 0.5 <= value <= 1 else "must lie in [0.5, 1]"


def _positive(value) -> str | None:
    return None if _number(value) and value > 0 else "must be a positive number"


def _coarse(value) -> str | None:
    whole = isinstance(value, int) and not isinstance(value, bool)
    return None if whole and 4 <= value <= 65536 else "must be an integer in [4, 65536]"


#: The methods: the finite volumes, and the C-grid thesis's θ-scheme (fvswe.implicit).
METHODS = ("explicit", "implicit")


#: Every run setting, in the order of the case file's template and key table.
SETTINGS: tuple[Setting, ...] = (
    Setting("layers", int, 2, "1 or 2", identity=True, flag=False, example="1"),
    Setting("g", NUMBER, 9.81, "gravity (m/s²)", identity=True, flag=False),
    Setting("r", NUMBER, 0.5, "two layers: density ratio ρ1/ρ2 in (0, 1)", identity=True,
            flag=False),
    Setting("eps_h", NUMBER, None, "desingularisation depth of velocities (m, docs/SCHEMES.md "
            "§8)", identity=True, flag=False, example="5e-3", only="explicit"),
    Setting("scheme", str, "ir-roe", schemes.describe(), identity=True, example='"hll-wd"'),
    Setting("order", str, "none", "cell ordering: none, rcm, gps, random, hilbert, morton, auto",
            identity=True, example='"rcm"'),
    Setting("cfl", NUMBER, 0.9, "CFL number in (0, 1]", check=_cfl, identity=True),
    Setting("dtype", str, "float64", "float64 or float32", choices=("float64", "float32"),
            identity=True),
    Setting("backend", str, "auto", "cpu, gpu or auto (the GPU when CuPy sees one)",
            choices=BACKENDS, example='"auto"'),
    Setting("fast_math", bool, False, "float32 on the GPU: approximate division and square "
            "root, denormals flushed (faster, not IEEE; docs/GPU.md)", identity=True,
            older=False, example="true", active=False, only="explicit"),
    Setting("compensated", bool, True, "float32: keep each depth's rounding remainder "
            "(one per layer) in a second float32 array, so that long runs keep their volume "
            "(docs/SCHEMES.md §2.7); no effect in float64", identity=True, older=True,
            example="false", active=False, only="explicit"),
    Setting("entropy_fix", bool, True, "Roe and IR-Roe: the Harten-Hyman entropy fix of "
            "transonic waves (docs/SCHEMES.md §3.6); false runs the paper's schemes exactly",
            identity=True, older=True, example="false", active=False, only="explicit"),
    Setting("dt_mode", str, "lagged", "lagged, nonlagged or fixed (then give dt)",
            choices=("lagged", "nonlagged", "fixed"), identity=True),
    Setting("dt", NUMBER, None, "time step of dt_mode = fixed (s)", identity=True,
            example="0.05", active=False),
    Setting("integrator", str, "euler", "time integration: euler, ssp-rk2 or ssp-rk3 "
            "(docs/SCHEMES.md §2.6)", choices=tuple(integrators.BY_NAME), identity=True,
            older="euler", only="explicit"),
    Setting("reconstruction", str, "constant", "constant (first order in space) or linear "
            "(second order: limited least-squares gradients; a multi-stage integrator, the CPU; "
            "docs/SCHEMES.md §19)", choices=schemes.RECONSTRUCTION_NAMES,
            identity=True, older="constant", example='"linear"', active=False,
            only="explicit"),
    Setting("threads", int, None, "CPU threads (default: the cores left idle, at least 1)",
            example="1", active=False, only="explicit"),
    Setting("method", str, "explicit", "explicit (the finite volumes) or implicit (the C-grid "
            "thesis's θ-scheme: one layer on a Cartesian grid, walls and levels; "
            "docs/IMPLICIT.md)", choices=METHODS, identity=True, older="explicit"),
    Setting("theta", NUMBER, 0.6, "method = implicit: θ in [0.5, 1] (0.5 Crank-Nicolson, 1 "
            "backward Euler)", check=_theta, identity=True, older=0.6, active=False,
            only="implicit"),
    Setting("preconditioner", str, "auto", "method = implicit: the CG's preconditioner, rrb "
            "(repeated red-black), jacobi, amg (pyamg), none, or auto (rrb on the CPU, jacobi "
            "on the GPU)", choices=PRECONDITIONER_CHOICES,
            identity=True, older="rrb", active=False, only="implicit"),
    Setting("cg_tol", NUMBER, TOL, "method = implicit: CG stops at ||r||_2 < cg_tol (m)",
            check=_positive, identity=True, older=TOL, active=False, only="implicit"),
    Setting("dry_depth", NUMBER, 1e-3, "method = implicit: a face with a smaller upwind depth "
            "is dry (m)", check=_positive, identity=True, older=1e-3, active=False,
            only="implicit"),
    Setting("max_wave_courant", NUMBER, 10.0, "method = implicit: the step's largest "
            "gravity-wave Courant number (cfl is the advective one)", check=_positive,
            identity=True, older=10.0, active=False, only="implicit"),
    Setting("dt_max", NUMBER, None, "method = implicit: the step's largest Δt (s; default: "
            "none)", check=_positive, identity=True, older=None, example="60.0", active=False,
            only="implicit"),
    Setting("rrb_coarse", int, COARSE_CELLS, "method = implicit: RRB factors a level of at "
            "most this many cells completely (Cholesky; MARIN's RRB-k)", check=_coarse,
            identity=True, older=COARSE_CELLS, active=False, only="implicit"),
)  # fmt: skip

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
NAMES: tuple[str, ...] = tuple(BY_NAME)


def defaults() -> dict[str, Any]:
    """Every setting at its default."""
    return {s.name: s.default for s in SETTINGS}


def default(name: str) -> Any:
    """The default of one setting."""
    return BY_NAME[name].default


def resolve(given: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting: ``given`` values, checked (:meth:`Setting.validate`), else defaults;
    a setting of the other method (``only``) must keep its default.

    A name that is no setting is a TypeError, as for any unknown keyword argument.
    """
    unknown = [name for name in given if name not in BY_NAME]
    if unknown:
        raise TypeError(f"Simulation() got an unexpected keyword argument {unknown[0]!r}")
    values = {**defaults(), **given}
    for setting in SETTINGS:
        setting.validate(values[setting.name])
    method = values["method"]
    for setting in SETTINGS:
        value = values[setting.name]
        if setting.only not in ("", method) and value != setting.default:
            raise ConfigError(f"{setting.name}: {value!r} is a setting of method "
                              f"{setting.only!r}, this run's method is {method!r}")  # fmt: skip
    return values


def reference_markdown() -> str:
    """The table of the run settings, their defaults, flags, whether a restart must keep
    them and the method they belong to, for docs/guide/case-files.md."""
    rows = ["| setting | default | `fvswe run` flag | a restart keeps it | method |",
            "|---|---|---|---|---|"]  # fmt: skip
    for s in SETTINGS:
        value = "–" if s.default is None else f"`{_toml(s.default)}`"
        flag = f"`{s.flag_name()}`" if s.flag else ""
        keeps = "yes" if s.identity else ""
        rows.append(f"| `{s.name}` | {value} | {flag} | {keeps} | {s.only or 'both'} |")
    return "\n".join(rows) + "\n"
