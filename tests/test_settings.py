"""The run settings are one table (fvswe/settings.py): the case file's keys, the flags of
`fvswe run` and their override of the file, Simulation's defaults and checks, and the run
identity all come from its rows, so a new setting is one row."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fvswe import casefile, restart, settings
from fvswe.backends import backend_class
from fvswe.cli import build_parser
from fvswe.cli.run import _spec
from fvswe.errors import ConfigError
from fvswe.mesh.generate import structured_square
from fvswe.simulation import Simulation

FLAGGED = [s for s in settings.SETTINGS if s.flag]


@pytest.fixture(scope="module")
def sim():
    return Simulation(structured_square(4), H=2.0, initial={"h1": 1.0, "h2": 1.0})


def test_simulation_takes_its_defaults_from_the_table(sim):
    for s in settings.SETTINGS:
        if s.default is not None:
            assert sim.settings[s.name] == s.default, s.name
    assert (
        sim.backend.name == backend_class("auto").name
        and sim.settings["eps_h"] == sim.model.eps_h > 0
    )
    assert (sim.model.layers, sim.model.g, sim.model.r) == (2, 9.81, 0.5)
    assert (sim.backend.cfl, sim.backend.dt_mode) == (0.9, "lagged")


def test_a_named_case_a_case_file_and_the_library_share_the_defaults(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("t_end = 1.0\n")
    for spec in (casefile.load(path), casefile.from_case("test1")):
        for s in settings.SETTINGS:
            if s.name not in ("layers", "g", "r", "scheme", "cfl"):  # what a case sets itself
                assert spec.settings[s.name] == s.default, (spec.source, s.name)
    assert casefile.load(path).settings == settings.defaults()


def test_the_case_file_keys_are_the_table_rows():
    top = casefile.keys("")
    for s in settings.SETTINGS:
        key = top[s.name]
        assert (key.types, key.help, key.active) == (s.types, s.help, s.active), s.name
        assert key.example == s.toml_example() != "", s.name
        assert f"| `{s.name}` | {key.type_names()} | " in casefile.reference_markdown()
    names = [k.name for k in casefile.SCHEMA if k.section == ""]
    assert names == ["title", "case", "t_end", *settings.NAMES]


def test_the_docs_table_of_settings_is_the_table():
    """docs/guide/case-files.md carries :func:`settings.reference_markdown` verbatim."""
    docs = Path(__file__).resolve().parents[1] / "docs" / "guide" / "case-files.md"
    assert settings.reference_markdown() in docs.read_text(encoding="utf-8")


def _two_values(s: settings.Setting) -> tuple:
    """Two distinct values of a setting's type: one for the case file, one for the flag."""
    if s.choices:
        return s.choices[0], s.choices[1]
    if s.types is bool:  # the flag sets the other value than the default (--no-name: false)
        return bool(s.default), not s.default
    if s.types is int:
        return 1, 2
    return (0.5, 0.25) if s.types == settings.NUMBER else ("a", "b")


def test_every_flag_overrides_the_case_file(tmp_path):
    path = tmp_path / "c.toml"
    values = {s.name: _two_values(s) for s in FLAGGED}
    path.write_text(
        "t_end = 1.0\n" + "".join(f"{n} = {json.dumps(a)}\n" for n, (a, _) in values.items())
    )
    flags = []
    for s in FLAGGED:
        flag, value = s.flag_name(), values[s.name][1]
        flags += [flag] if isinstance(value, bool) else [flag, str(value)]
    parser = build_parser()
    from_file = _spec(parser.parse_args(["run", str(path)]))
    flagged = _spec(parser.parse_args(["run", str(path), *flags]))
    for name, (a, b) in values.items():
        assert (from_file.settings[name], flagged.settings[name]) == (a, b), name
    assert {s.name for s in settings.SETTINGS if not s.flag} == {"layers", "g", "r", "eps_h"}


def test_the_identity_holds_the_identity_settings(sim):
    identity = sim.identity()
    for s in settings.SETTINGS:
        assert (s.name in identity) == s.identity, s.name
        if s.identity:
            assert identity[s.name] == sim.settings[s.name]
    assert {"cells", "mesh", "boundary", "forcing"} <= set(identity)
    assert json.loads(json.dumps(identity)) == identity  # JSON values, as checkpoints store
    assert restart.IDENTITY_ADDED == {
        "fast_math": False,
        "compensated": True,
        "entropy_fix": True,
        "integrator": "euler",
        "reconstruction": "constant",
        "method": "explicit",
        "theta": 0.6,
        "preconditioner": "rrb",
        "cg_tol": 1e-5,
        "dry_depth": 1e-3,
        "max_wave_courant": 10.0,
        "dt_max": None,
        "rrb_coarse": 64,
    }  # the explicit method at its defaults: every run before the implicit method


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"dtype": "float16"}, "dtype: unknown 'float16' (choose from float64, float32)"),
        ({"backend": "tpu"}, "backend: unknown 'tpu' (choose from cpu, gpu, auto)"),
        ({"dt_mode": "later"}, "dt_mode: unknown 'later' (choose from lagged, nonlagged, fixed)"),
        ({"cfl": 0}, "cfl: must lie in (0, 1], got 0"),
        ({"cfl": 1.5}, "cfl: must lie in (0, 1], got 1.5"),
    ],
)
def test_simulation_checks_its_settings_in_one_line(given, message):
    with pytest.raises(ConfigError) as err:
        Simulation(structured_square(2), H=1.0, initial={"h1": 0.5, "h2": 0.5}, **given)
    assert str(err.value) == message


def test_an_unknown_setting_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'shceme'"):
        Simulation(structured_square(2), shceme="roe")


def test_the_tables_choices_are_the_backends():
    from fvswe import integrators
    from fvswe.backends import BACKENDS
    from fvswe.backends.base import DT_MODES
    from fvswe.implicit.precond import BY_DEVICE, PRECONDITIONERS

    assert settings.BY_NAME["dt_mode"].choices == DT_MODES
    assert settings.BY_NAME["backend"].choices == BACKENDS
    assert settings.BY_NAME["integrator"].choices == tuple(i.name for i in integrators.INTEGRATORS)
    assert settings.BY_NAME["preconditioner"].choices == ("auto", *PRECONDITIONERS)
    assert set(BY_DEVICE) == {b for b in BACKENDS if b != "auto"}
    assert settings.BY_NAME["method"].choices == settings.METHODS == ("explicit", "implicit")


def test_a_setting_of_the_other_method_keeps_its_default():
    """The implicit method's rows are refused in an explicit run and the explicit method's in
    an implicit one, unless at their defaults (a run would otherwise silently ignore them)."""
    values = {"eps_h": 1e-3, "fast_math": True, "compensated": False, "entropy_fix": False,
              "integrator": "ssp-rk2", "reconstruction": "linear", "threads": 2, "theta": 1.0,
              "preconditioner": "jacobi", "cg_tol": 1e-6, "dry_depth": 1e-2,
              "max_wave_courant": 5.0, "dt_max": 60.0, "rrb_coarse": 16}  # fmt: skip
    only = {s.name: s.only for s in settings.SETTINGS if s.only}
    assert set(only) == set(values)
    for name, method in only.items():
        s, other = settings.BY_NAME[name], {"explicit": "implicit", "implicit": "explicit"}[method]
        assert settings.resolve({"method": other, name: s.default})[name] == s.default
        assert settings.resolve({"method": method, name: values[name]})[name] == values[name]
        with pytest.raises(ConfigError) as err:
            settings.resolve({"method": other, name: values[name]})
        assert str(err.value) == (f"{name}: {values[name]!r} is a setting of method {method!r}, "
                                  f"this run's method is {other!r}")  # fmt: skip


#: A made-up row (``integrator`` was the first real one added this way); here only in a copy
#: of the table, run apart.
ROW = (
    'Setting("relax", str, "none", "made-up relaxation: none, some or all", '
    'choices=("none", "some", "all"), identity=True, older="none"),'
)

ONE_ROW = """
import importlib.util, json, pathlib, sys
import fvswe
path = pathlib.Path(fvswe.__file__).parent / "settings.py"
source = path.read_text(encoding="utf-8")
end = "\\n)  # fmt: skip\\n"
assert source.count(end) == 1
spec = importlib.util.spec_from_file_location("fvswe.settings", path)
module = importlib.util.module_from_spec(spec)
sys.modules["fvswe.settings"] = fvswe.settings = module
exec(compile(source.replace(end, "\\n    " + sys.argv[1] + end), str(path), "exec"),
     module.__dict__)

from fvswe import casefile, restart
from fvswe.cli import build_parser
from fvswe.cli.run import _spec
from fvswe.errors import ConfigError
from fvswe.mesh.generate import structured_square
from fvswe.simulation import Simulation

case = pathlib.Path(sys.argv[2])
case.write_text('t_end = 1.0\\nrelax = "some"\\n')
parser = build_parser()
mesh = structured_square(2)
sim = Simulation(mesh, H=1.0, initial={"h1": 0.5, "h2": 0.5})
try:
    Simulation(mesh, H=1.0, initial={"h1": 0.5, "h2": 0.5}, relax="most")
    refused = None
except ConfigError as exc:
    refused = str(exc)
print(json.dumps({
    "template": 'relax = "none"  # made-up relaxation' in casefile.template(),
    "keys": "| `relax` | string | made-up relaxation" in casefile.reference_markdown(),
    "file": casefile.load(case).settings["relax"],
    "flag": _spec(parser.parse_args(["run", str(case), "--relax", "all"])).settings["relax"],
    "default": sim.settings["relax"],
    "refused": refused,
    "identity": sim.identity()["relax"],
    "older": restart.completed({"scheme": "roe"})["relax"],
}))
"""


def test_a_new_setting_is_one_row(tmp_path):
    """The table with one more (made-up) row: the template, the key table,
    the case file, the flag overriding it, Simulation's default and check, and the identity
    (with the value of runs recorded before it) all have it."""
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ONE_ROW), ROW, str(tmp_path / "c.toml")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout) == {
        "template": True,
        "keys": True,
        "file": "some",
        "flag": "all",
        "default": "none",
        "refused": "relax: unknown 'most' (choose from none, some, all)",
        "identity": "none",
        "older": "none",
    }
    assert "relax" not in settings.BY_NAME  # this process kept the real table
