"""The reordering-impact study (benchmarks/reorder_impact.py): its --quick run through
``fvswe bench reorder`` gives complete, sane outputs; the paper's reference numbers say
what the paper says; ``order="auto"`` resolves per backend."""

from __future__ import annotations

import copy
import json
import math
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from fvswe.backends.layout import twice_evaluated
from fvswe.cases import get_case
from fvswe.cli import main as cli_main
from fvswe.cli.bench import benchmarks_dir, load
from fvswe.errors import ConfigError
from fvswe.mesh import ORDERINGS, bandwidth, family
from fvswe.mesh.orderings import AUTO, resolve

ri = load("reorder_impact.py")
PAPER = json.loads(ri.REFERENCE.read_text())
QUICK_SIZES = (4000,)  # the smallest member alone: the run is this file's whole cost


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One --quick run (CPU, 4k, one repeat) through the CLI: (folder, results)."""
    import numba

    out = tmp_path_factory.mktemp("reorder")
    threads = numba.get_num_threads()
    try:
        assert cli_main(["bench", "reorder", "--quick", "--sizes", "4k", "--out", str(out)]) == 0
    finally:
        numba.set_num_threads(threads)  # --quick runs on one thread; later tests keep theirs
    return out, json.loads((out / "results.json").read_text())


def _rows(text: str, heading: str) -> dict[str, list[str]]:
    """The body rows of the Markdown table under ``heading``: first cell -> the other cells."""
    lines = text.split(heading, 1)[1].split("\n\n", 2)[1].splitlines()
    return {
        c[0]: c[1:] for c in ([x.strip() for x in ln.strip("|").split("|")] for ln in lines[2:])
    }


@pytest.mark.slow
def test_quick_run_measures_every_cell(quick):
    _, doc = quick
    want = set(product(ri.TESTS, ri.SCHEMES, QUICK_SIZES, ri.ORDERS, ri.DTYPES))
    got = {(r["test"], r["scheme"], r["cells"], r["order"], r["dtype"]) for r in doc["results"]}
    assert got == want and len(doc["results"]) == len(want)
    assert doc["finished"] and doc["complete"] and doc["skipped"] == []
    assert doc["machine"]["backend"] == "cpu" and doc["machine"]["threads"] == 1
    assert doc["machine"]["numpy"] == np.__version__ and doc["failed"] == []
    assert {(m["cells"], m["order"]) for m in doc["meshes"]} == set(product(QUICK_SIZES, ri.ORDERS))


@pytest.mark.slow
def test_quick_run_times_are_sane(quick):
    _, doc = quick
    t_end = ri.QUICK["t_end"]
    for r in doc["results"]:
        assert r["valid"] and r["t"] == pytest.approx(t_end, rel=0, abs=1e-12)
        assert len(r["times_s"]) == r["repeats"] == 1 and r["warmup_s"] > 0
        assert 0 < r["min_s"] <= r["median_s"] <= r["max_s"]
        assert r["cell_steps_per_s"] == pytest.approx(r["cells"] * r["steps"] / r["median_s"])
        assert "paper_s" not in r  # t_end differs from the paper's: no ratio against it
    # Renumbering permutes the cells only: every ordering takes the same steps.
    steps: dict[tuple, set] = {}
    for r in doc["results"]:
        steps.setdefault((r["test"], r["scheme"], r["cells"], r["dtype"]), set()).add(r["steps"])
    assert all(len(s) == 1 for s in steps.values())
    assert min(min(s) for s in steps.values()) >= 2


@pytest.mark.slow
def test_quick_run_reductions_and_best_orders_follow_the_times(quick):
    _, doc = quick
    by = ri.index(doc)
    red = ri.reductions(doc)
    assert len(red) == len(doc["results"]) * 5 // 6
    for (test, scheme, cells, order, dtype), v in red.items():
        ratio = (
            by[(test, scheme, cells, order, dtype)]["median_s"]
            / by[(test, scheme, cells, "none", dtype)]["median_s"]
        )
        assert v == pytest.approx(100 * (1 - ratio), rel=1e-12)
    for dtype, per_size in ri.best_orders(doc).items():
        for cells, (best, gm) in per_size.items():
            ratios = [
                by[(t, s, cells, best, dtype)]["median_s"]
                / by[(t, s, cells, "none", dtype)]["median_s"]
                for t in ri.TESTS
                for s in ri.SCHEMES
            ]
            assert min(ratios) <= gm * (1 + 1e-12) and gm <= max(ratios) * (1 + 1e-12)
            assert gm <= 1 + 1e-12  # orig itself is a candidate
    assert ri.recommend(doc)[0] in ri.AUTO_CANDIDATES


@pytest.mark.slow
def test_quick_tables_hold_every_paper_cell(quick):
    out, doc = quick
    text = (out / "tables.md").read_text()
    for num, test in ((1, "test1"), (2, "test2")):
        rows = _rows(text, f"## Table {num} — {test}")
        assert sorted(rows, key=int) == sorted(PAPER["seconds"][test], key=int)
        for cells, per_scheme in PAPER["seconds"][test].items():
            cols = iter(rows[cells])
            for scheme in ri.SCHEMES:
                for order in ri.PAPER_ORDERS:
                    ours, paper = next(cols).split(" / ")
                    assert paper == str(per_scheme[scheme][order])
                    measured = by_key(doc, test, scheme, int(cells), order, "float32")
                    assert ours == ("—" if measured is None else ri._seconds(measured))
    rows = _rows(text, "## Table 3")
    twice = _rows(text, "## Edges the GPU block variant evaluates twice")
    for cells, paper in PAPER["bandwidth"].items():
        for o, (order, cell) in enumerate(zip(ri.ORDERS, rows[cells], strict=True)):
            ours = cell.split(" / ")
            if order in paper:
                assert ours[1] == str(paper[order])
            if int(cells) in QUICK_SIZES:
                mesh = family(int(cells)).reordered(order)[0]
                assert ours[0] == str(bandwidth(mesh))
                assert twice[cells][o] == f"{100 * twice_evaluated(mesh.edge_cells):.1f}"
            else:
                assert twice[cells][o] == "—"
    assert "no speed ratios" in text


def by_key(doc: dict, test, scheme, cells, order, dtype) -> float | None:
    r = ri.index(doc).get((test, scheme, cells, order, dtype))
    return None if r is None else r["median_s"]


@pytest.mark.slow
def test_tables_give_the_speed_ratio_at_the_papers_t_end(quick):
    """With the paper's t_end, each Table 1-2 cell reads ours / paper (paper ÷ ours)."""
    _, doc = quick
    doc = copy.deepcopy(doc)
    doc["settings"]["t_end"] = PAPER["t_end"]
    rows = _rows(ri.tables_md(doc, PAPER), "## Table 1 — test1")
    for cells in QUICK_SIZES:
        cols = iter(rows[str(cells)])
        for scheme, order in product(ri.SCHEMES, ri.PAPER_ORDERS):
            ours = by_key(doc, "test1", scheme, cells, order, "float32")
            paper = PAPER["seconds"]["test1"][str(cells)][scheme][order]
            assert next(cols) == f"{ri._seconds(ours)} / {paper} ({paper / ours:.3g}×)"


@pytest.mark.slow
def test_quick_pictures_are_not_blank(quick):
    import matplotlib.image

    out, _ = quick
    for name in ("figure3.png", "figure3_float64.png", "figure4_spy_4k.png",
                 "figure4_spy_4k_extra.png"):  # fmt: skip
        img = matplotlib.image.imread(out / name)[..., :3]
        assert img.shape[0] > 300 and img.shape[1] > 800, name
        ink = (img.mean(axis=2) < 0.9).mean()
        assert 0.01 < ink < 0.6 and img.std() > 0.05, name


def test_paper_reference_says_what_the_paper_says():
    """Every cell of Tables 1-3, and the paper's conclusions recomputed from them: RCM saves
    37-55 % for Roe and IR-Roe and about 5 % for PVM-IFCP on the largest mesh; GPS has the
    smaller bandwidth; the original bandwidth of the refined members is 0.75 L."""
    sizes = {"4000", "16000", "64000", "256000", "1024000", "2080560"}
    assert set(PAPER["bandwidth"]) == sizes
    for test in ("test1", "test2"):
        assert set(PAPER["seconds"][test]) == sizes
        for per_scheme in PAPER["seconds"][test].values():
            assert set(per_scheme) == set(ri.SCHEMES)
            for v in per_scheme.values():
                assert set(v) == set(ri.PAPER_ORDERS) and all(x > 0 for x in v.values())
        largest = PAPER["seconds"][test]["2080560"]
        for scheme, (lo, hi) in (("roe", (36.5, 55.5)), ("ir-roe", (36.5, 55.5)),
                                 ("pvm-ifcp", (4.5, 7.5))):  # fmt: skip
            saved = 100 * (1 - largest[scheme]["rcm"] / largest[scheme]["none"])
            assert lo < saved < hi, (test, scheme, saved)
            assert largest[scheme]["rcm"] < largest[scheme]["gps"]
    for cells, bw in PAPER["bandwidth"].items():
        assert bw["gps"] < bw["rcm"] < bw["none"]
        if cells not in ("4000", "2080560"):
            assert bw["none"] == 0.75 * int(cells)


def test_paper_reference_matches_cases_md():
    """The JSON is the transcription of docs/CASES.md §A ."""
    cases = Path(__file__).resolve().parents[1] / "docs" / "CASES.md"
    text = cases.read_text()
    for title, test in (("Table 1 (test1)", "test1"), ("Table 2 (test2)", "test2"),
                        ("Table 3 — bandwidth", None)):  # fmt: skip
        rows = _rows(text, title)
        assert len(rows) == 6
        for cells, cols in rows.items():
            if test is None:
                want = [PAPER["bandwidth"][cells][o] for o in ri.PAPER_ORDERS]
                assert [int(c) for c in cols] == want
            else:
                s = PAPER["seconds"][test][cells]
                want = [s[sc][o] for sc in ri.SCHEMES for o in ri.PAPER_ORDERS]
                assert [float(c) for c in cols] == want


def test_auto_order_resolves_per_backend():
    assert set(AUTO) == {"cpu", "gpu"} and set(AUTO.values()) <= set(ORDERINGS)
    assert resolve("auto", "gpu") == AUTO["gpu"] and resolve("gps", "gpu") == "gps"
    with pytest.raises(ConfigError, match="backend 'tpu'"):
        resolve("auto", "tpu")
    mesh = family(4000)
    assert np.array_equal(mesh.reordered("auto")[1], mesh.reordered(AUTO["cpu"])[1])
    sim = get_case("test1").simulation(mesh, scheme="pvm-ifcp", order="auto", backend="cpu")
    assert sim.order == AUTO["cpu"]
    ref = get_case("test1").simulation(mesh, scheme="pvm-ifcp", order=AUTO["cpu"], backend="cpu")
    assert np.array_equal(sim.mesh.original_index, ref.mesh.original_index)


@pytest.mark.parametrize("folder", sorted(benchmarks_dir().glob("results/reorder_*/results.json")))
def test_auto_follows_the_committed_study(folder):
    """AUTO[backend] is the ordering the committed study of that backend recommends."""
    doc = json.loads(folder.read_text())
    assert AUTO[doc["machine"]["backend"]] == ri.recommend(doc)[0]


def test_budget_prediction_scales_with_cells():
    cell = {"test": "test1", "scheme": "roe", "dtype": "float32"}
    rows = [
        {**cell, "cells": c, "median_s": t} for c, t in ((4000, 0.5), (16000, 1.0), (16000, 2.0))
    ]
    assert ri.predict_run_s(rows, "test1", "roe", "float32", 64000) == pytest.approx(2.0 * 8)
    assert ri.predict_run_s(rows, "test1", "roe", "float64", 16000) == pytest.approx(2.0)
    assert ri.predict_run_s(rows, "test2", "roe", "float32", 16000) == 0.0
    assert math.isclose(ri.predict_run_s(rows, "test1", "roe", "float32", 8000), 0.5 * 2**1.5)
    names = [t[0] for t in ri.tiers(ri.ORDERS, ri.DTYPES)]
    assert names == ["paper", "extra-orders", "float64"]
    assert ri.tiers(("rcm",), ("float64",)) == [("float64", ["rcm"], ["float64"])]
