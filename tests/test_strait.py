"""The strait application's committed mesh and run script (scripts/make_strait_mesh.py,
scripts/run_strait.py; docs/validation.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from fvswe.mesh import read_mesh

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):
    """A module of scripts/ (which import each other by name, as when run from there)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    return module


geometry = _script("make_strait_mesh")


def test_committed_mesh_has_the_geometry_tags_and_depth():
    mesh = read_mesh(ROOT / "meshes" / "strait.npz")
    assert set(mesh.tags) == {"west", "east", "strait"}
    np.testing.assert_allclose(mesh.depth, geometry.depth(mesh.centroid[:, 0]), rtol=1e-12)
    assert abs(mesh.depth.min() - geometry.HS) < 1.0 and mesh.depth.max() == geometry.H0
    nodes = mesh.nodes[np.unique(mesh.edge_nodes[mesh.edge_tag == mesh.tags["strait"]])]
    narrows = nodes[np.abs(nodes[:, 0]) < 1e-6]  # the channel's sides at the sill crest
    np.testing.assert_allclose(np.sort(narrows[:, 1]), [-geometry.BMIN / 2, geometry.BMIN / 2])
    assert abs(mesh.area.sum() - _area()) < 1e-6 * _area()
    assert (ROOT / "meshes" / "strait.npz").stat().st_size < 2**21


def _area() -> float:
    """The domain's area: two basins and the channel (its width integrated, Simpson)."""
    x = np.linspace(-geometry.L / 2, geometry.L / 2, 20001)
    w = geometry.width(x)
    channel = (x[1] - x[0]) / 3 * (w[0] + w[-1] + 4 * w[1:-1:2].sum() + 2 * w[2:-1:2].sum())
    return 2 * geometry.LB * geometry.WB + channel


def test_run_script_reports_the_exchange(capsys):
    run = _script("run_strait")
    mesh = str(ROOT / "meshes" / "strait.npz")
    args = ["--mesh", mesh, "--t-end", "1800", "--every", "600", "--window", "0", "1"]
    assert run.main(args) == 0
    out = capsys.readouterr().out
    # b sqrt(g' Hs^3) / 4 = 1e4 * sqrt(0.02 * 9.81 * 300^3) / 4
    assert abs(run.theory(0.98) - 5.7540e6) < 1e2
    assert "exchange over t in [0, 1800] s" in out and "theory 5.754e+06 m3/s" in out
