"""benchmarks/cgrid.py end to end on the CPU: rows, thesis figures, budget cuts and skips."""

from __future__ import annotations

import json

import pytest

from fvswe.cli.bench import load

cg = load("cgrid.py")


def test_thesis_figures_are_the_published_ones():
    assert cg.THESIS["cgrid-tide"][1056] == (503.0, 2_510_297)
    assert cg.THESIS["cgrid-island"][6148] == (5.757, 1000)
    assert cg.thesis_entry("cgrid-tide", 96, 24.0, 1000) == (4.35, 237_670)
    assert cg.thesis_entry("cgrid-tide", 96, 0.5, 1000) is None  # not the thesis's 24 h
    assert cg.thesis_entry("cgrid-island", 6148, 24.0, 10) is None
    order = [(r["case"], r["n"]) for r in cg.plan(["cgrid-tide", "cgrid-island"], None, 24, 1000)]
    assert order[-1] == ("cgrid-tide", 1056)  # the largest last, so a budget cuts it


def test_small_runs_end_to_end(tmp_path, capsys):
    out = tmp_path / "cgrid.json"
    cg.main(["--backend", "cpu", "--sizes", "8", "--hours", "0.1", "--steps", "50",
             "--warmup", "5", "--out", str(out)])  # fmt: skip
    doc = json.loads(out.read_text())
    assert doc["backend"] == "cpu" and doc["dtype"] == "float32" and doc["date"]
    rows = {r["case"]: r for r in doc["results"]}
    tide, island = rows["cgrid-tide"], rows["cgrid-island"]
    assert tide["t"] == 360.0 and not tide["cut"] and tide["steps"] > 0
    assert tide["max_abs_qy"] == 0.0 and tide["mass_rel_drift"][0] < 1e-5
    assert island["steps"] == 50 and not island["cut"] and island["cells"] == 64
    assert "thesis_s" not in tide and "speedup_vs_thesis" not in island
    assert capsys.readouterr().out.count("\n") == 5  # header lines, two runs, "wrote"


def test_budget_cuts_the_run_and_skips_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(cg, "MIN_START_S", 0.5)
    out = tmp_path / "cgrid.json"
    # 700 h at 48^2: billions of cell-steps, far beyond 2 s on any machine
    cg.main(["--backend", "cpu", "--cases", "cgrid-tide", "--sizes", "48,64", "--hours", "700",
             "--check-every", "50", "--budget-s", "2", "--out", str(out)])  # fmt: skip
    first, second = json.loads(out.read_text())["results"]
    assert first["cut"] and 0 < first["t"] < first["t_goal"] and first["wall_s"] > 0
    assert "thesis_s" not in first
    assert second["skipped"] and "steps" not in second


def test_a_refused_set_up_is_one_line(tmp_path):
    args = ["--backend", "cpu", "--cases", "cgrid-tide", "--sizes", "8", "--hours", "1000"]
    with pytest.raises(SystemExit, match=r"^cgrid-tide 8x8: t_end: .* level series"):
        cg.main([*args, "--out", str(tmp_path / "x.json")])
