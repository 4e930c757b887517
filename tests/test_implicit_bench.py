"""benchmarks/implicit.py end to end on the CPU at small sizes: its rows and the thesis's counts."""

from __future__ import annotations

import json

import pytest

from fvswe.cli.bench import load

bench = load("implicit.py")


def test_iterations_table_beside_the_thesis(tmp_path):
    pytest.importorskip("pyamg")
    out = tmp_path / "it.json"
    bench.main(["iterations", "--backend", "cpu", "--n", "24", "--steps", "1", "--spinup", "5",
                "--out", str(out)])  # fmt: skip
    doc = json.loads(out.read_text())
    rows = {(r["ratio"], r["preconditioner"]): r for r in doc["rows"]}
    assert set(rows) == {(k, p) for k in (1, 10, 50, 100) for p in ("rrb", "jacobi", "amg")}
    assert rows[(100, "jacobi")]["thesis_iterations"] == 496
    assert rows[(100, "rrb")]["thesis_iterations"] == 7
    # more steps' worth of gravity waves per step, more iterations; RRB well below Jacobi
    assert rows[(100, "rrb")]["iterations_per_solve"] > rows[(1, "rrb")]["iterations_per_solve"]
    assert rows[(100, "rrb")]["iterations_per_solve"] < rows[(100, "jacobi")][
        "iterations_per_solve"]  # fmt: skip
    assert doc["setup_ms"]["rrb"] > 0


def test_basin_and_tide_rows(tmp_path):
    out = tmp_path / "basin.json"
    bench.main(["basin", "--backend", "cpu", "--n", "16", "--hours", "2", "--ratios", "1,5",
                "--out", str(out)])  # fmt: skip
    doc = json.loads(out.read_text())
    first, big = doc["rows"]
    assert first["gauge_rms_vs_first_ratio_m"] == 0 and big["steps"] < first["steps"]
    assert 3 < big["ratio"] < 8 and doc["explicit"]["steps"] > first["steps"] / 2
    out = tmp_path / "tide.json"
    bench.main(["tide", "--backend", "cpu", "--n", "12", "--hours", "1", "--explicit",
                "--wave-courant", "10", "--out", str(out)])  # fmt: skip
    (row,) = json.loads(out.read_text())["rows"]
    assert row["gravity_courant_max"] <= 10 + 1e-9 and row["gauge_rms_vs_explicit_m"] < 0.05
