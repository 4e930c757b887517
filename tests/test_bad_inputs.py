"""A corpus of bad inputs (meshes, case files, flags): each stops `fvswe run` quickly with one
line that names the key or flag (and the case file, for errors found while reading it), exit
status 2 and no output folder. The cases of tests/test_cli_run.py (unknown case, scheme,
ordering; missing or garbage mesh; missing tag...) are not repeated here."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from fvswe.cli import main
from fvswe.mesh import Mesh, write_mesh
from fvswe.mesh.generate import strip, structured_square


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    """Meshes, level files and gauge lists, good and bad."""
    d = tmp_path_factory.mktemp("inputs")
    write_mesh(structured_square(4), d / "square.npz")
    write_mesh(strip(8, 2, x0=0.0, x1=8.0), d / "strip.npz")
    square = structured_square(4)
    inner = square.edge_nodes[square.edge_cells[:, 1] >= 0][:1]  # a dam line inside the mesh
    tags = {**square.boundary_tags(), "dam": inner}
    write_mesh(Mesh.from_arrays(square.nodes, square.cells, boundary_tags=tags), d / "dam.npz")
    (d / "empty.msh").write_text("")
    (d / "mesh.xyz").write_text("0 0 0\n")
    np.savez(d / "arrays.npz", nodes=np.zeros((3, 2)))  # no cells
    (d / "three.txt").write_text("0 0 1\n1 0 1\n")
    (d / "backwards.txt").write_text("0 0\n2 1\n1 0\n")
    (d / "words.txt").write_text("t eta\nsoon high\n")
    (d / "short.txt").write_text("0 0\n0.5 0.1\n")
    (d / "gauges_bad.csv").write_text("a,1\n")
    (d / "gauges_empty.csv").write_text("# none\n")
    bed = np.full((3, 3), 6.0)
    bed[1, 1] = np.inf  # under the mesh
    np.savez(d / "inf.npz", x=[-9.0, 0.0, 9.0], y=[-9.0, 0.0, 9.0], depth=bed)
    np.savez(d / "nan_depth.npz", nodes=[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], cells=[[0, 1, 2]],
             depth=[np.nan])  # fmt: skip
    return d


SQUARE = 't_end = 0.01\n[mesh]\nfile = "{d}/square.npz"\n[initial]\nh1 = 1.0\nh2 = 1.0\n'
STRIP = (
    't_end = 1.0\nlayers = 1\n[mesh]\nfile = "{d}/strip.npz"\n[initial]\nh = 1.0\n'
    '[boundary]\neast = "wall"\nwall = "wall"\n'
)


def west(condition: str) -> str:
    return STRIP + f"west = {condition}\n"


#: name -> (case-file text or None for a named case, extra flags, what the message must say)
CORPUS: dict[str, tuple[str | None, list[str], str]] = {
    # -- meshes
    "empty mesh file": (None, ["--mesh", "{d}/empty.msh"], "empty.msh"),
    "unknown mesh format": (None, ["--mesh", "{d}/mesh.xyz"], "mesh.xyz"),
    "mesh arrays without cells": (None, ["--mesh", "{d}/arrays.npz"], "arrays.npz"),
    "unknown mesh family": (None, ["--mesh", "square-5k"], "square-5k"),
    "generator argument not a number": (
        't_end = 1\n[mesh]\ngenerator = "strip"\nnx = "many"\n', [], "'mesh.nx'"),
    "mesh file and generator": (
        't_end = 1\n[mesh]\nfile = "a.msh"\ngenerator = "strip"\n', [], "exactly one"),
    # -- expressions
    "tower of powers": (SQUARE.replace("h1 = 1.0", 'H = "6 + 0*9**9**9**9"\nh1 = 1.0'), [],
                        "initial.H"),
    "tower of integer names": (SQUARE.replace("h1 = 1.0", 'H = 9\nh1 = "0 * H**H**H**H"'), [],
                               "initial.h1: '0 * H**H**H**H' is not finite in cell 0"),
    "expression too long": (SQUARE.replace("h1 = 1.0", 'h1 = "' + "+".join("1" * 500) + '"'),
                            [], "initial.h1: expression too long"),
    "expression too deep": (SQUARE.replace("h1 = 1.0", 'h1 = "' + "(" * 50 + "1" + "+1)" * 50
                                           + '"'), [], "initial.h1: expression nested too deeply"),
    "huge literal": (SQUARE.replace("h1 = 1.0", 'h1 = "' + "9" * 400 + '"'), [],
                     "initial.h1: number too large"),
    "expression of a string": (SQUARE.replace("h1 = 1.0", 'h1 = "\'a\' * 9"'), [],
                               "initial.h1: constant 'a' not allowed"),
    "initial value a list": (SQUARE.replace("h1 = 1.0", "h1 = [1, 2]"), [], "initial.h1"),
    "velocity and momentum both": (SQUARE.replace("h1 = 1.0", "h1 = 1.0\nu1 = 1\nq1x = 1"), [],
                                   "initial.u1 and initial.q1x"),
    # -- values that are not finite (issue 34, item 6: outputs were written, then "blew up")
    "bathymetry NaN": (SQUARE.replace("h1 = 1.0", "H = nan\nh1 = 1.0"), [],
                       "case.toml: initial.H: not finite (nan)"),
    "momentum infinite": (SQUARE.replace("h1 = 1.0", "h1 = 1.0\nq1x = -inf"), [],
                          "initial.q1x: not finite (-inf)"),
    "depth infinite": (SQUARE.replace("h1 = 1.0", "h1 = inf"), [], "initial.h1: not finite"),
    "raster infinite under the mesh": (SQUARE.replace("h1 = 1.0", 'H = { raster = "{d}/inf.npz",'
                                                      ' method = "nearest" }\nh1 = 1.0'), [],
                                       "inf.npz:depth: not finite (inf) where cell"),
    "mesh depth NaN": (None, ["--mesh", "{d}/nan_depth.npz"], "nan_depth.npz: depth: not finite"),
    # -- boundaries
    "two-layer level without interface": (SQUARE + '[boundary]\nwall = { level = 0.1 }\n', [],
                                          "a two-layer level needs the interface level too"),
    "level file missing": (west('{ level_file = "nowhere.txt" }'), [], "nowhere.txt"),
    "level file three columns": (west('{ level_file = "{d}/three.txt" }'), [],
                                 "needs two columns"),
    "level times backwards": (west('{ level_file = "{d}/backwards.txt" }'), [],
                              "level times must increase"),
    "level file of words": (west('{ level_file = "{d}/words.txt" }'), [], "cannot read series"),
    "run past the level series": (west('{ level_file = "{d}/short.txt" }'), [],
                                  "past the end of the level series of boundary tag 'west'"),
    "run past the discharge series": (
        west('{ kind = "discharge", Q = { file = "{d}/short.txt" } }'), [],
        "past the end of the discharge series of boundary tag 'west' (t = 0.5 s)"),
    "discharge times backwards": (
        west('{ kind = "discharge", Q = { file = "{d}/backwards.txt" } }'), [],
        "boundary tag 'west': discharge times must increase"),
    "condition on an interior line": (SQUARE.replace("square.npz", "dam.npz")
                                      + '[boundary]\nwall = "wall"\ndam = "open"\n', [],
                                      "boundary condition for tag 'dam', which owns no boundary "
                                      "edge of"),
    "level and level file": (west('{ level = 0.1, level_file = "x.txt" }'), [],
                             "'boundary.west' needs exactly one of"),
    "times without levels": (west("{ times = [0, 1] }"), [], "'boundary.west' needs exactly"),
    "level not finite": (west('{ level = "log(t - 1)" }'), [], "boundary.west.level"),
    "unknown level key": (west("{ levle = 0.1 }"), [], "unknown key 'boundary.west.levle'"),
    "condition a number": (west("3"), [], "'boundary.west' must be a string"),
    "unknown condition": (west('"river"'), [], "unknown condition 'river'"),
    "every for a table": (west("{ times = [0, 1], levels = [0, 0], every = 1 }"), [],
                          "'every' and 'until' are for a level expression"),
    # -- physics
    "unknown friction law": (STRIP.replace("[mesh]", '[friction]\nlaw = "darcy"\n'
                                           "coefficient = 1\n[mesh]") + 'west = "wall"\n', [],
                             "friction"),
    "interfacial friction on one layer": (STRIP.replace("[mesh]", '[friction]\ninterfacial = 1e-3'
                                                        "\n[mesh]") + 'west = "wall"\n', [],
                                          "interfacial_friction: needs a two-layer model"),
    "negative interfacial friction": (SQUARE + "[friction]\ninterfacial = -1e-3\n", [],
                                      "interfacial_friction: the coefficient must be finite and"),
    "friction without coefficient": (SQUARE + '[friction]\nlaw = "chezy"\n', [],
                                     "'friction.coefficient'"),
    "negative friction": (STRIP.replace("[mesh]", '[friction]\nlaw = "manning"\n'
                                        "coefficient = -1\n[mesh]") + 'west = "wall"\n', [],
                          "friction (manning): the coefficient must be finite and >= 0"),
    "Chezy value as Manning's": (STRIP.replace("[mesh]", '[friction]\nlaw = "manning"\n'
                                               "coefficient = 25\n[mesh]") + 'west = "wall"\n',
                                 [], "friction (manning): 25 in cell 0 is above 1 s/m^(1/3), "
                                 "not a Manning n (natural channels: 0.01-0.2)"),
    "Manning value as Chezy's": (STRIP.replace("[mesh]", '[friction]\nlaw = "chezy"\n'
                                               "coefficient = 0.025\n[mesh]") + 'west = "wall"\n',
                                 [], "friction (chezy): 0.025 in cell 0 is below 1 m^(1/2)/s"),
    "interface above the surface at a level boundary": (
        STRIP.replace("layers = 1", "layers = 2").replace("h = 1.0", "h1 = 1.0\nh2 = 1.0")
        + "west = { level = 0.0, interface = { times = [0, 10], values = [-1.0, 0.2] } }\n", [],
        "boundary tag 'west': the interface level 0.2 m is above the surface level 0 m at "
        "t = 10 s"),
    # -- gauges, sections, outputs in the file
    "gauge outside the mesh": (SQUARE + "[[gauges]]\nx = 9\ny = 0\n", [], "lies outside"),
    "gauge without y": (SQUARE + "[[gauges]]\nx = 0\n", [], "'gauges.y'"),
    "gauges as a table": (SQUARE + "[gauges]\nx = 0\n", [], "array of tables"),
    "section of one point": (SQUARE + "[[sections]]\npoints = [[0, 0]]\n", [],
                             "two or more [x, y] pairs"),
    "section inside the mesh": (SQUARE + "[[sections]]\npoints = [[0, -3], [0, 3]]\n", [],
                                "splitting it in two"),
    "unknown output format": (SQUARE + '[output]\nformat = "vtk"\n', [], "'output.format'"),
    "time origin not a date": (SQUARE + '[output]\ntime_origin = "next tuesday"\n', [],
                               "case.toml: output.time_origin: expected an ISO date"),
    "crs key not WKT": (SQUARE + '[output]\ncrs = \'PROJCRS["x", CS[]\'\n', [],
                        "case.toml: output.crs: expected EPSG:<code>"),
    "lon/lat mesh with a planar coriolis": (
        SQUARE + '[coriolis]\nlatitude = 45\n[output]\ncrs = \'GEOGCRS["WGS 84", CS[e, 2]]\'\n',
        [], "coriolis: on a lon/lat mesh (crs 'GEOGCRS"),
    "probe interval a string": (SQUARE + '[output]\nprobe_every = "often"\n', [],
                                "'output.probe_every'"),
    # -- flags
    "gauge flag of one number": (None, ["--gauge", "1"], "--gauge: expected 2 numbers"),
    "gauge flag not numbers": (None, ["--gauge", "a,b"], "--gauge: expected comma-separated"),
    "gauge list unreadable": (None, ["--gauges", "{d}/none.csv"], "--gauges: cannot read"),
    "gauge list malformed": (None, ["--gauges", "{d}/gauges_bad.csv"], "line 1: expected"),
    "gauge list empty": (None, ["--gauges", "{d}/gauges_empty.csv"], "lists no gauges"),
    "section flag odd": (None, ["--section", "0,0,1"], "--section: expected x,y pairs"),
    "crs flag not an EPSG code": (None, ["--crs", "EPSG:banana"],
                                  "--crs: expected EPSG:<code> (e.g. EPSG:32631) or WKT, got "
                                  "'EPSG:banana'"),
    "crs flag geographic with linear": (None, ["--crs", "EPSG:4326", "--reconstruction",
                                               "linear"],
                                        "reconstruction: 'linear' is not available on a lon/lat "
                                        "mesh (crs 'EPSG:4326')"),
    "probe interval negative": (None, ["--gauge", "0,0", "--probe-every", "-1"],
                                "--probe-every: must be positive"),
    "probe interval too fine for memory": (None, ["--gauge", "0,0", "--probe-every", "1e-12"],
                                           "--probe-every: 1e-12 s gives "),
    "format without output": (None, ["--format", "netcdf", "--no-output"],
                              "--format needs --output"),
    "section without output": (None, ["--section", "0,-9,0,9", "--no-output"],
                               "--section needs --output"),
}  # fmt: skip


@pytest.mark.parametrize("name", CORPUS)
def test_bad_input_is_one_line_nonzero_and_writes_nothing(capsys, d, tmp_path, name):
    text, flags, expected = CORPUS[name]
    flags = [f.replace("{d}", str(d)) for f in flags]
    if text is None:
        argv = ["test1"] + ([] if "--mesh" in flags else ["--mesh", str(d / "square.npz")])
    else:
        case = tmp_path / "case.toml"
        case.write_text(text.replace("{d}", str(d)))
        argv = [str(case)]
    out = tmp_path / "out"
    if "--no-output" in flags:
        flags.remove("--no-output")
    else:
        flags += ["-o", str(out)]
    start = time.perf_counter()
    code = main(["run", *argv, *flags, "--backend", "cpu", "-q"])
    seconds = time.perf_counter() - start
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("fvswe: error: ") and err.count("\n") == 1, err
    assert expected in err, err
    assert not out.exists()
    assert seconds < 10, f"{name}: {seconds:.1f} s"
    assert len(CORPUS) >= 30
