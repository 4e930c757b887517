"""benchmarks/largest.py on two CPU ranks at small sizes: the mesh built and cut, the ranks
running from their parts alone, each rank's memory and its bytes per owned cell."""

from __future__ import annotations

import json
import math

import pytest
from test_mpi import _launcher_options, pytestmark  # noqa: F401 (skipped without mpiexec)

from fvswe.cli.bench import load

bench = load("largest.py")


def _main(tmp_path, runs: str, *extra: str) -> None:
    launcher = " ".join(["mpiexec", *_launcher_options()])
    bench.main(["--runs", runs, "--mpiexec", launcher, "--work", str(tmp_path / "work"),
                "--out", str(tmp_path / "largest.json"), *extra])  # fmt: skip


def test_rows_of_ranks_holding_their_parts(tmp_path):
    _main(tmp_path, "square-4k:2,square-64k:2")
    small, large = json.loads((tmp_path / "largest.json").read_text())["rows"]
    for row, cells in ((small, 4000), (large, 64000)):
        assert row["cells"] == sum(row["owned"]) == cells and row["ranks"] == 2
        assert row["holds_part"] and row["steps"] >= 1 and row["setup_s"] > 0
        assert row["cut_s"] > 0 and row["cut_peak_bytes"] > row["part_bytes"] > 0
        assert len(row["peak_rss_bytes"]) == 2 and min(row["peak_rss_bytes"]) > 0
        assert row["device_bytes"] == [0, 0]
    assert small["rss_per_owned_cell"] is None
    # CPU ranks hold some 0.6 kB a cell of their part (the layout, slots, two-layer state)
    assert all(100 < b < 5000 and math.isfinite(b) for b in large["rss_per_owned_cell"])
    assert not list((tmp_path / "work").iterdir())  # the part files removed (no --keep)


def test_a_run_in_three_calls(tmp_path):
    """``--stop build``, ``--stop cut``, then ``--reuse``: nothing cut by the first call, the
    part files of the second taken by the third (no cut there), whose ranks hold them."""
    rows = tmp_path / "largest.json"
    _main(tmp_path, "square-16k:2", "--stop", "build")
    built = json.loads(rows.read_text())["rows"][0]
    assert built["build_s"] > 0 and "cut_s" not in built
    assert not list((tmp_path / "work").iterdir())
    _main(tmp_path, "square-16k:2", "--stop", "cut")
    cut = json.loads(rows.read_text())["rows"][0]
    assert cut["cut_s"] > 0 and "setup_s" not in cut
    assert (tmp_path / "work" / "square-16k-2" / "manifest.json").is_file()
    _main(tmp_path, "square-16k:2", "--reuse")
    ran = json.loads(rows.read_text())["rows"][0]
    assert ran["cut_s"] is None and ran["holds_part"] and ran["owned"] == cut["owned"]
    assert not (tmp_path / "work" / "square-16k-2").exists()  # removed after its run


def test_a_failing_step_is_one_line(tmp_path):
    with pytest.raises(SystemExit) as stop:
        _main(tmp_path, "square-5k:2")
    said = str(stop.value.code)
    assert said.startswith("largest: building square-5k failed (exit 1): ") and "\n" not in said
