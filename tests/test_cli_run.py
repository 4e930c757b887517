"""``fvswe run`` and ``fvswe cases``: outputs, overrides, and one-line errors that write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fvswe.cli import build_parser, main
from fvswe.mesh import write_mesh
from fvswe.mesh.generate import strip, structured_square


@pytest.fixture(scope="module")
def meshes(tmp_path_factory):
    """A 128-cell square (boundary tag ``wall``) and a strip (tags west, east, wall), as files."""
    d = tmp_path_factory.mktemp("meshes")
    write_mesh(structured_square(8), d / "square.npz")
    write_mesh(strip(16, 2, x0=-1.0, x1=1.0), d / "strip.npz")
    (d / "garbage.msh").write_text("this is not a mesh\n")
    return d


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cases_lists_every_case_on_one_line(capsys):
    from fvswe.cases import CASES

    assert main(["cases"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(CASES)
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["cases", "--help"]])
def test_help_is_complete(capsys, argv):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 0
    text = capsys.readouterr().out
    if argv[0] == "run":
        flags = ("--mesh", "--scheme", "--order", "--dtype", "--backend", "--t-end", "--cfl",
                 "--dt-mode", "--dt", "--threads", "--output", "--output-every", "--png",
                 "--checkpoint-every", "--restart", "--overwrite", "--json", "--quiet",
                 "examples:")  # fmt: skip
        for flag in flags:
            assert flag in text, flag


@pytest.mark.parametrize(
    ("argv", "said"),
    [(["run", "test1", "--gauge", "-1,2"], "fvswe run: error: argument --gauge: expected one "
      "argument (write a value that starts with '-' as --gauge=VALUE) (see fvswe run --help)"),
     (["run", "test1", "--bogus"], "fvswe: error: unrecognized arguments: --bogus")],
)  # fmt: skip
def test_a_usage_error_is_one_line(capsys, tmp_path, argv, said):
    """``--gauge -1,2`` (argparse reads -1,2 as a flag) printed the whole 20-line usage of
    ``fvswe run`` before its error: now one line, exit 2, nothing written."""
    with pytest.raises(SystemExit) as stop:
        main([*argv, "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith(said) and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_named_case_writes_outputs_and_a_json_summary(capsys, meshes, tmp_path):
    out = tmp_path / "out"
    code, stdout, err = run(capsys, "test1", "--mesh", str(meshes / "square.npz"),
                            "--backend", "cpu", "-o", str(out), "--json", "-q")  # fmt: skip
    assert code == 0, err
    report = json.loads(stdout)
    assert report == json.loads((out / "summary.json").read_text())
    assert report["case"] == "test1" and report["cells"] == 128 and report["t"] == 0.1
    assert report["steps"] > 0 and report["steps_total"] == report["steps"]
    assert len(report["peak_rss_bytes"]) == 1 and report["device_bytes"] == [0]  # the CPU's
    assert report["output_times"] == [0.0, 0.1]
    for key in ("wall_s", "cell_steps_per_s", "mass", "mass_initial", "clipped_cells",
                "nonhyperbolic_edges"):  # fmt: skip
        assert key in report, key
    assert max(report["mass_rel_drift"]) < 1e-13  # walls: mass kept to round-off
    with np.load(out / "final.npz") as final:
        assert sorted(final.files) == sorted(["x", "y", "area", "H", "h1", "q1x", "q1y", "h2",
                                              "q2x", "q2y"])  # fmt: skip
        mesh = structured_square(8)
        np.testing.assert_array_equal(final["x"], mesh.centroid[:, 0])  # original cell order
        np.testing.assert_array_equal(final["H"], 6.0)
        assert final["area"].sum() == pytest.approx(100.0, rel=1e-14)
        moved = np.abs(final["h1"] - np.where(np.hypot(final["x"], final["y"]) > 1.5, 4, 0.5))
        assert moved.max() > 0.1 and final["h1"].min() >= 0
    assert sorted(p.name for p in out.iterdir()) == [
        "final.npz",
        "solution",
        "solution.h5",
        "solution.xdmf",
        "summary.json",
    ]  # no temporary files left behind, no lock
    assert sorted(p.name for p in (out / "solution").iterdir()) == ["000000.h5", "000001.h5"]


def test_flags_override_the_case_file(capsys, meshes, tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(f'scheme = "roe"\ndtype = "float64"\nt_end = 0.05\n[mesh]\nfile = '
                    f'"{meshes / "square.npz"}"\n[initial]\nH = 6.0\nh1 = 2.0\nh2 = "H - h1 - '
                    f'0.1 * (x > 0)"\n')  # fmt: skip
    code, stdout, err = run(capsys, str(case), "--scheme", "pvm-ifcp", "--dtype", "float32",
                            "--t-end", "0.02", "--backend", "cpu", "--json", "-q")  # fmt: skip
    assert code == 0, err
    report = json.loads(stdout)
    assert (report["scheme"], report["dtype"], report["t"]) == ("pvm-ifcp", "float32", 0.02)
    assert report["source"] == str(case)
    # the set-up's stages (issue 31), in order, which make up the time to the first step
    stages = report["setup_stages"]
    assert list(stages) == ["inputs", "mesh", "initial_state", "reorder", "layout", "backend",
                            "compile"]  # fmt: skip
    assert min(stages.values()) >= 0 and sum(stages.values()) <= report["setup_s"]


BAD = {
    "unknown case": (["tset1"], "unknown case 'tset1'"),
    "unknown scheme": (["test1", "--scheme", "godunov"], "unknown 'godunov'"),
    "unknown ordering": (["test1", "--order", "sorted"], "unknown method 'sorted'"),
    "missing mesh": (["test1", "--mesh", "{d}/nowhere.msh"], "nowhere.msh"),
    "unreadable mesh": (["test1", "--mesh", "{d}/garbage.msh"], "garbage.msh"),
    "bad t_end": (["test1", "--t-end", "-1"], "t_end"),
    "png without output": (["test1", "--png", "h1"], "--png needs --output"),
    "unknown png field": (["test1", "--png", "h3", "-o", "{o}"], "unknown field 'h3'"),
    "missing checkpoint": (["test1", "--restart", "{d}/none.npz"], "none.npz"),
    "fast math on the cpu": (["test1", "--dtype", "float32", "--fast-math"],
                             "fast_math: the GPU backend only"),
    "fast math in float64": (["test1", "--fast-math"], "fast_math: float32 only"),
}  # fmt: skip


@pytest.mark.parametrize("name", BAD)
def test_bad_input_is_one_line_nonzero_and_writes_nothing(capsys, meshes, tmp_path, name):
    argv, expected = BAD[name]
    out = tmp_path / "out"
    argv = [a.format(d=meshes, o=out) for a in argv]
    if "--mesh" not in argv:
        argv += ["--mesh", str(meshes / "square.npz")]
    if "--png" not in argv:
        argv += ["-o", str(out)]
    code, stdout, err = run(capsys, *argv, "--backend", "cpu", "-q")
    assert code != 0
    assert err.startswith("fvswe: error: ") and err.count("\n") == 1, err
    assert expected in err
    assert not out.exists()


def _case(tmp_path: Path, meshes: Path, mesh: str, body: str) -> Path:
    path = tmp_path / "case.toml"
    path.write_text(f't_end = 0.01\n{body}\n[mesh]\nfile = "{meshes / mesh}"\n')
    return path


CASE_BAD = {
    "tag without condition": (
        "strip.npz",
        'layers = 1\n[boundary]\nwest = "open"\nwall = "wall"\n[initial]\nh = 1.0\n',
        "boundary tag 'east'",
    ),
    "condition for a missing tag": (
        "square.npz",
        '[boundary]\nwall = "wall"\ninflow = "open"\n[initial]\nh1 = 1.0\nh2 = 1.0\n',
        "tag 'inflow'",
    ),
    "negative depth": ("square.npz", '[initial]\nh1 = "x"\nh2 = 1.0\n', "negative depth"),
    "negative depth on a bed above the reference": (
        "strip.npz", 'layers = 1\n[boundary]\nwest = "wall"\neast = "wall"\nwall = "wall"\n'
        '[initial]\nH = "-x"\nh = "H"\n', "initial h: -0.0833333 m in cell 16 at (0.08333, "
        "0.04167) of "),
    "the bed-sign hint": (
        "strip.npz", 'layers = 1\n[boundary]\nwest = "wall"\neast = "wall"\nwall = "wall"\n'
        '[initial]\nH = "-x"\nh = "H"\n', "32 cell(s) with a negative depth; H there "
        "is -0.0833333 m, a bed above the reference level: H is a depth, positive down"),
    "malformed TOML": ("square.npz", "[initial\nh1 = 1\n", "malformed TOML"),
    "unknown key": ("square.npz", "[initial]\nh1 = 1\n[outputs]\nevery = 1\n", "'outputs'"),
    "fast_math not a boolean": ("square.npz", "fast_math = 1\n[initial]\nh1 = 1\nh2 = 1\n",
                                "'fast_math' must be boolean"),
    "fast_math on the cpu": ("square.npz", 'dtype = "float32"\nfast_math = true\n[initial]\n'
                             "h1 = 1\nh2 = 1\n", "fast_math: the GPU backend only"),
}  # fmt: skip


@pytest.mark.parametrize("name", CASE_BAD)
def test_bad_case_files_are_one_line_nonzero_and_write_nothing(capsys, meshes, tmp_path, name):
    mesh, body, expected = CASE_BAD[name]
    out = tmp_path / "out"
    code, _, err = run(capsys, str(_case(tmp_path, meshes, mesh, body)), "--backend", "cpu",
                       "-o", str(out), "-q")  # fmt: skip
    assert code != 0
    assert err.startswith("fvswe: error: ") and err.count("\n") == 1, err
    assert expected in err
    assert not out.exists()


def test_gpu_asked_for_where_none_exists(capsys, meshes, tmp_path):
    from fvswe.backends import gpu

    if gpu.available()[0]:
        pytest.skip("this machine has a usable GPU")
    out = tmp_path / "out"
    code, _, err = run(capsys, "test1", "--mesh", str(meshes / "square.npz"), "--backend", "gpu",
                       "-o", str(out))  # fmt: skip
    assert code != 0 and err.startswith("fvswe: error: backend 'gpu' is unavailable")
    assert err.count("\n") == 1 and not out.exists()


def test_one_layer_case_file_with_open_ends(capsys, meshes, tmp_path, monkeypatch):
    """Without --output, the file's pictures and checkpoints are skipped, not an error."""
    body = ('layers = 1\nscheme = "hll"\n[boundary]\nwest = "open"\neast = "open"\nwall = "wall"\n'
            '[initial]\nh = "where(x < 0, 2.0, 1.0)"\n'
            '[output]\npng = ["h"]\ncheckpoint_every = 0.002\n')  # fmt: skip
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run(capsys, str(_case(tmp_path, meshes, "strip.npz", body)),
                            "--backend", "cpu", "--json", "-q")  # fmt: skip
    assert code == 0, err
    report = json.loads(stdout)
    assert report["t"] == 0.01 and len(report["mass"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.toml"]


def test_a_collapsing_dt_stops_in_one_line(capsys, meshes, monkeypatch):
    """A Δt that collapses stops the run at the first check interval spent below the floor
    (10 steps here) in one line naming the cell that sets it, the step and the time, exit
    status 2, instead of stepping on for ever. The stand-in for a runaway tip: once the first
    interval (steps 1-10) has set the reference Δt, cell 5's area (as the kernels see it)
    shrinks a billion times; step 11 computes the collapsed Δt that steps 12-30 take."""
    from fvswe import runner
    from fvswe.backends.cpu.pipeline import CpuBackend

    watch = CpuBackend.watch_dt

    def shrink(self, floor):
        area = self._mesh.area.copy()
        area[5] *= 1e-9
        area.flags.writeable = False  # as the backend's (no second compilation of the passes)
        self._mesh = self._mesh._replace(area=area)
        watch(self, floor)

    monkeypatch.setattr(CpuBackend, "watch_dt", shrink)
    monkeypatch.setattr(runner, "next_look", lambda last: 10)  # looks 10 steps apart
    code, out, err = run(capsys, "test1", "--mesh", str(meshes / "square.npz"), "--backend",
                         "cpu", "--order", "none", "--t-end", "100", "--allow-mass-error",
                         "-q")  # fmt: skip
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("fvswe: error: dt collapsed: ") and " a step over 10 steps " in err
    assert "below 1e-06 of the first steps' " in err and "by step 30, t = " in err
    assert "a stable step first fell below " in err and " in cell 5 at (" in err
    assert "at step 11 (t = " in err
