"""Case files: every key read, expressions evaluated safely, bad input named in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fvswe import casefile
from fvswe.errors import ConfigError
from fvswe.mesh.generate import structured_square

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def mesh():
    return structured_square(8)


def write(tmp_path: Path, text: str, name: str = "case.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


BASE = """
t_end = 0.05
[mesh]
generator = "structured_square"
n = 8
"""


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_examples_load(path):
    spec = casefile.load(path)
    assert spec.t_end > 0 and spec.times()[-1] == spec.t_end
    assert spec.source == str(path)


def test_test1_example_matches_the_named_case(mesh):
    """The explicit example file and the named case give the same initial state and settings."""
    from_file = casefile.load(EXAMPLES / "test1.toml")
    named = casefile.from_case("test1")
    for key in ("layers", "g", "r", "scheme", "cfl", "dtype", "dt_mode"):
        assert from_file.settings[key] == named.settings[key], key
    H_file, init_file = from_file.initial_fields(mesh)
    H_case, init_case = named.initial_fields(mesh)
    np.testing.assert_array_equal(np.broadcast_to(H_file, (mesh.n_cells,)), H_case)
    for key in ("h1", "h2"):
        np.testing.assert_array_equal(init_file[key], init_case[key])
    assert from_file.mesh == {"family": "square-4k"}
    assert from_file.output_every == 0.025 and from_file.png == ("h1", "eta2")


def test_expressions_see_coordinates_earlier_entries_constants_and_velocities(tmp_path, mesh):
    spec = casefile.load(
        write(
            tmp_path,
            BASE
            + """
[initial]
H = "2 + 0.1 * x"
h1 = "where(hypot(x, y) < 1, 1.5, 1.0) * cos(0 * pi)"
h2 = "H - h1"
u1 = 0.5
v2 = "-y / 10"
""",
        )
    )
    H, init = spec.initial_fields(mesh)
    x, y = mesh.centroid.T
    np.testing.assert_allclose(H, 2 + 0.1 * x, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(init["h1"], np.where(np.hypot(x, y) < 1, 1.5, 1.0))
    np.testing.assert_allclose(init["h2"], H - init["h1"], rtol=0, atol=1e-15)
    np.testing.assert_allclose(init["q1x"], 0.5 * init["h1"], rtol=1e-15)
    np.testing.assert_allclose(init["q2y"], -y / 10 * init["h2"], rtol=1e-15)
    assert "u1" not in init and "v2" not in init


def test_depth_from_the_mesh_file_is_a_name_and_the_default_bathymetry(tmp_path):
    from fvswe.mesh import Mesh, write_mesh

    base = structured_square(4)
    depth = 3.0 + base.centroid[:, 0] ** 2
    write_mesh(Mesh.from_arrays(base.nodes, base.cells, depth=depth), tmp_path / "m.npz")
    text = 't_end = 1.0\n[mesh]\nfile = "m.npz"\n[initial]\nh = "depth + 1"\n'
    spec = casefile.load(write(tmp_path, "layers = 1\n" + text))
    mesh = spec.load_mesh()
    H, init = spec.initial_fields(mesh)
    np.testing.assert_allclose(H, depth)  # no H given: the file's depth
    np.testing.assert_allclose(init["h"], depth + 1)


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('true')",
        "x.__class__",
        "(lambda: 1)()",
        "x[0]",
        "'text'",
        "open('f')",
        "[1, 2]",
        "x if y else 1",
        "where(x > 0, 1, 0, out=x)",
        "sin",
        "exp(x",
        "nosuch + 1",
    ],
)
def test_unsafe_or_bad_expressions_are_one_line_errors_naming_file_and_key(
    tmp_path, mesh, expression
):
    path = write(tmp_path, BASE + f"[initial]\nh1 = {json.dumps(expression)}\n")
    spec = casefile.load(path)
    with pytest.raises(ConfigError) as err:
        spec.initial_fields(mesh)
    message = str(err.value)
    assert f"{path}: initial.h1" in message and "\n" not in message


def test_non_finite_expression_names_the_cell(tmp_path, mesh):
    spec = casefile.load(write(tmp_path, BASE + '[initial]\nh1 = "log(x)"\n'))
    with pytest.raises(ConfigError, match=r"initial\.h1: 'log\(x\)' is not finite in cell \d+"):
        spec.initial_fields(mesh)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("t_end = 1\nshceme = 'roe'\n", "'shceme'"),
        ("t_end = 1\n[output]\nevry = 0.1\n", "'output.evry'"),
        ("t_end = 1\n[mesh]\ngenerator = 'square'\ncels = 10\n", "'mesh.cels'"),
        ("t_end = 1\n[mesh]\nfile = 'a.msh'\nn = 1\n", "'mesh.n'"),
        ("t_end = 1\n[mesh]\ngenerator = 'hexagon'\n", "'hexagon'"),
        ("t_end = 1\n[initial]\nh3 = 1\n", "'initial.h3'"),
        ("t_end = 1\n[initial]\nh = 1\n", "'initial.h'"),  # two layers: h is not a field
        ("t_end = 'soon'\n", "'t_end'"),
        ("t_end = 1\ncfl = true\n", "'cfl'"),
        ("t_end = 1\nmesh = 3\n", "'mesh'"),
        ("scheme = 'roe'\n", "'t_end'"),
        ("t_end = 1\n[output]\ntimes = [0.5, 'end']\n", "'output.times'"),
        ("t_end = 1\n[mesh]\nfile = 'a.msh'\nfamily = 'square-4k'\n", "exactly one"),
        ("t_end = 1\ncase = 'test9'\n", "'test9'"),
    ],
)
def test_unknown_or_mistyped_keys_are_named(tmp_path, text, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        casefile.load(path)
    message = str(err.value)
    assert key in message and "\n" not in message
    if "test9" not in key:
        assert str(path) in message


def test_malformed_toml_names_the_file(tmp_path):
    path = write(tmp_path, "t_end = 0.1\n[initial\nh1 = 1\n")
    with pytest.raises(ConfigError, match=rf"^{path}: malformed TOML \(.*line 2"):
        casefile.load(path)


def test_output_times(tmp_path):
    spec = casefile.load(write(tmp_path, "t_end = 0.1\n[output]\nevery = 0.03\ntimes = [0.05]\n"))
    assert spec.times() == pytest.approx([0.03, 0.05, 0.06, 0.09, 0.1], abs=1e-15)
    exact = casefile.load(write(tmp_path, "t_end = 0.1\n[output]\nevery = 0.025\n"))
    assert len(exact.times()) == 4 and exact.times()[-1] == 0.1  # 4 * 0.025 is t_end itself
    late = casefile.load(write(tmp_path, "t_end = 0.1\n[output]\ntimes = [0.2]\n"))
    with pytest.raises(ConfigError, match="output time 0.2 lies outside"):
        late.times()


def test_a_file_based_on_a_named_case_overrides_it_and_flags_override_the_file(tmp_path):
    spec = casefile.load(write(tmp_path, "case = 'test2'\norder = 'rcm'\nt_end = 0.05\n"))
    assert spec.name == "test2" and spec.settings["r"] == 0.98
    assert spec.settings["order"] == "rcm" and spec.t_end == 0.05
    assert callable(spec.initial["h1"])  # the case's own functions
    flagged = spec.with_overrides(order="gps", scheme="roe", cfl=None, t_end=0.02)
    assert flagged.settings["order"] == "gps" and flagged.settings["scheme"] == "roe"
    assert flagged.settings["cfl"] == spec.settings["cfl"] and flagged.t_end == 0.02


def test_resolve_tells_cases_from_files(tmp_path):
    assert casefile.resolve("test1").source == "case 'test1'"
    with pytest.raises(ConfigError, match="no such case file"):
        casefile.resolve(str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="unknown case 'tset1'"):
        casefile.resolve("tset1")


# -- boundaries, friction, probes, schema -----------------------------------------------------
STRIP = """
layers = 1
t_end = 4.0
[mesh]
generator = "strip"
nx = 8
[boundary]
east = "open"
wall = "wall"
"""


@pytest.mark.parametrize(
    ("west", "times", "values"),
    [
        ("{ times = [0, 2, 4], levels = [0.0, 0.5, 0.25] }", [0, 2, 4], [0.0, 0.5, 0.25]),
        ('{ level_file = "tide.txt" }', [0, 1, 4], [0.1, -0.2, 0.3]),
        ('{ level = "0.1 * t", every = 1.0, until = 3.0 }', [0, 1, 2, 3], [0, 0.1, 0.2, 0.3]),
        ("{ level = 0.25, every = 2.0, until = 4.0 }", [0, 2, 4], [0.25, 0.25, 0.25]),
    ],
    ids=["inline", "file", "expression", "number"],
)
def test_level_boundaries_from_a_table_a_file_or_an_expression(tmp_path, west, times, values):
    (tmp_path / "tide.txt").write_text("# t eta\n0 0.1\n1, -0.2\n4 0.3\n")
    spec = casefile.load(write(tmp_path, STRIP + f"west = {west}\n"))
    t, v = spec.boundary["west"].table()
    np.testing.assert_allclose(t, times, rtol=0, atol=1e-15)
    np.testing.assert_allclose(v, values, rtol=0, atol=1e-15)
    assert spec.boundary["east"] == "open"


def test_friction_gauges_sections_and_output_keys_reach_the_spec(tmp_path):
    text = (
        BASE.replace("t_end = 0.05", "t_end = 0.05\nlayers = 1")
        + """
[friction]
law = "chezy"
coefficient = 65
[output]
format = "both"
crs = "EPSG:2154"
probe_every = 0.01
[[gauges]]
x = 0.5
y = -0.5
[[gauges]]
name = "b"
x = 1
y = 2
[[sections]]
points = [[0, -6], [0, 6]]
"""
    )
    spec = casefile.load(write(tmp_path, text))
    assert spec.settings["friction"] == ("chezy", 65.0)
    assert (spec.output_format, spec.crs, spec.probe_every) == ("both", "EPSG:2154", 0.01)
    assert [(g.name, g.x, g.y) for g in spec.gauges] == [("gauge1", 0.5, -0.5), ("b", 1, 2)]
    assert spec.sections[0].name == "section1"
    assert spec.sections[0].points == ((0.0, -6.0), (0.0, 6.0))


@pytest.mark.parametrize("layers", [1, 2])
def test_the_template_holds_every_key_of_the_schema_and_runs(tmp_path, capsys, layers):
    """One layer, and two (``--layers 2``, issue 32 item 10: the same channel with two layers
    at rest and the interface held at the tide's boundary)."""
    from fvswe.cli import main

    assert main(["case", "--template", "--layers", str(layers)]) == 0
    text = capsys.readouterr().out
    for key in casefile.SCHEMA:
        example = key.example
        if layers == 2:
            example = casefile.TWO_LAYER_EXAMPLES.get((key.section, key.name), (example,))[0]
        if example and not key.name.startswith("<"):
            assert f"{key.name} = {example}" in text, key.dotted
    path = write(tmp_path, text)
    spec = casefile.load(path)
    assert spec.gauges and spec.sections and "west" in spec.boundary
    assert spec.settings["layers"] == layers and ("h2" in spec.initial) == (layers == 2)
    out = tmp_path / "out"
    t_end = "30" if layers == 1 else "5"  # the same code runs both: two layers briefly
    assert main(["run", str(path), "-o", str(out), "-q", "--backend", "cpu", "--t-end", t_end]) == 0
    assert (out / "sections.csv").is_file() and (out / "solution.xdmf").is_file()


def test_the_docs_key_table_is_the_schema():
    """docs/guide/case-files.md carries :func:`casefile.reference_markdown` verbatim."""
    docs = Path(__file__).resolve().parents[1] / "docs" / "guide" / "case-files.md"
    assert casefile.reference_markdown() in docs.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "expression",
    ["6 + 0*9**9**9**9", "2**2**2**2**2**2**2**2", "-" * 500 + "1", "+".join(["x"] * 300),
     "(" * 45 + "x" + " + 1)" * 45, "x" * 2001, "9" * 400],
)  # fmt: skip
def test_expressions_are_bounded_and_fail_fast_in_one_line(tmp_path, mesh, expression):
    import time

    path = write(tmp_path, BASE + f"[initial]\nH = {json.dumps(expression)}\n")
    spec = casefile.load(path)
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        spec.initial_fields(mesh)
    assert time.perf_counter() - start < 2.0  # a hang would be minutes; this is milliseconds
    message = str(err.value)
    assert message.startswith(f"{path}: initial.H: ") and "\n" not in message
    assert len(message) < 200 + len(str(path))
