"""The linear reconstruction at shocks (docs/SCHEMES.md §19, issue 27): dam breaks.

One layer (exact solutions, :func:`fvswe.exact.dam_break`): Stoker (wet, ``hr = 0.1``, a
transonic fan and a shock; ``hll`` and ``roe``) and Ritter (dry bed, ``hll-wd``) in a
``LENGTH`` m channel, dam at ``DAM``, 1 m behind it, walls, to ``T_END``, on a strip of
irregular triangles (:func:`irregular_strip`: ``nx`` columns of ``ROWS`` rows, inner nodes
moved at random by up to a quarter of the spacing) at each ``--nx`` (each 2x finer), both
reconstructions, SSP-RK2. Per run: the L1 error of ``h`` (``Σ |V_i| |h_i - h(x_i)| /
width``, m^2) and within ``WINDOW`` m of the shock or dry front, their observed orders, the
oscillation measures :func:`tv_excess` and :func:`largest_rise` of the column profile
(:func:`columns`), the smallest depth over every step, the mass drift.

Two layers (no exact solution): a lower-layer dam break onto a dry lower layer (flat
surface, r = 0.5) and the paper's test 2 along its section y = 0 (docs/CASES.md: the layers'
depths swap at x = 0, an internal dam break, over the bed ``1 - 1.5 exp(-x^2)``), Roe,
IR-Roe and PVM-IFCP on one ``--nx2`` strip, both reconstructions, against a first-order
reference on a ``REF``-times finer strip: each layer's mass drift, smallest depth, L1
difference and TV excess over the reference's. Prints the tables of docs/validation.md::

    PYTHONPATH=$PWD python benchmarks/shocks.py --json benchmarks/results/shocks_cpu.json
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from fvswe.exact import dam_break
from fvswe.mesh import Mesh
from fvswe.mesh.generate import strip
from fvswe.simulation import Simulation

#: The one-layer channel: length and dam (m), final time (s), depth behind the dam (m),
#: rows of rectangles across the strip, the half-width (m) of the shock's window.
LENGTH, DAM, T_END, HL, ROWS, WINDOW = 40.0, 20.0, 2.0, 1.0, 2, 2.0
#: The one-layer cases: name -> (depth beyond the dam, schemes).
ONE_LAYER = {"stoker": (0.1, ("hll", "roe")), "ritter": (0.0, ("hll-wd",))}
#: The two-layer cases: name -> (x range, r, bed depth H(x, y), h1, h2 (upper, lower), t).
TWO_LAYER = {
    "lower-dam-break": ((-5.0, 5.0), 0.5, lambda x, y: np.ones_like(x),
                        lambda x, y: np.where(x < 0, 0.5, 1.0),
                        lambda x, y: np.where(x < 0, 0.5, 0.0), 1.0),
    "test2-section": ((-5.0, 5.0), 0.98, lambda x, y: 1.0 - 1.5 * np.exp(-(x**2)),
                      lambda x, y: np.where(x >= 0, 4.0, 0.5),
                      lambda x, y: np.where(x >= 0, 0.5, 4.0), 0.1),
}  # fmt: skip
#: How many times finer the two-layer first-order reference is.
REF = 8
LINEAR = dict(integrator="ssp-rk2", backend="cpu")


def irregular_strip(nx: int, x0: float, x1: float, rows: int = ROWS, seed: int = 0) -> Mesh:
    """:func:`fvswe.mesh.generate.strip` of ``nx x rows`` squares (``west``/``east`` tags),
    its nodes moved at random by up to a quarter of the spacing: along x unless on the west or
    east end, along y unless on a long side (the strip keeps its shape)."""
    base = strip(nx, rows, x0, x1)
    nodes = base.nodes.copy()
    step = (x1 - x0) / nx
    rng = np.random.default_rng(seed)
    move = rng.uniform(-0.25 * step, 0.25 * step, nodes.shape)
    inner_x = (nodes[:, 0] > x0 + 1e-9) & (nodes[:, 0] < x1 - 1e-9)
    inner_y = (nodes[:, 1] > 1e-9) & (nodes[:, 1] < rows * step - 1e-9)
    nodes[:, 0] += np.where(inner_x, move[:, 0], 0.0)
    nodes[:, 1] += np.where(inner_y, move[:, 1], 0.0)
    tags = {n: base.edge_nodes[base.edge_tag == t] for n, t in base.tags.items()}
    return Mesh.from_arrays(nodes, base.cells, boundary_tags=tags,
                            source=f"<irregular strip {nx}x{rows}>")  # fmt: skip


def columns(f: dict, name: str, nx: int, x0: float, x1: float) -> np.ndarray:
    """Area-weighted means of field ``name`` over the ``nx`` columns of the strip (cells by
    centroid: a perturbed triangle's centroid stays inside its column)."""
    col = np.clip(((f["x"] - x0) / (x1 - x0) * nx).astype(int), 0, nx - 1)
    return np.bincount(col, f["area"] * f[name], nx) / np.bincount(col, f["area"], nx)


def tv_excess(profile: np.ndarray, reference_tv: float) -> float:
    """The oscillation measure: the total variation ``Σ |p_{j+1} - p_j|`` of a column profile
    minus the reference's. The exact dam breaks are monotone (TV = ``hl - hr``), so smearing
    and a misplaced shock cost nothing and every new extremum adds twice its height: 0 means
    no new oscillation, whatever the resolution."""
    return float(np.abs(np.diff(profile)).sum() - reference_tv)


def largest_rise(profile: np.ndarray) -> float:
    """The largest oscillation (m) of a profile that should not increase along x (the exact
    dam breaks): the highest rise of a column above the lowest one before it. One number for
    the worst wiggle or spike, which the TV excess would sum with every other; 0 for any
    monotone profile, however smeared."""
    return float(np.max(profile - np.minimum.accumulate(profile)))


def run(mesh: Mesh, layers: int, scheme: str, rec: str, t: float, **setup) -> tuple:
    """Run to ``t``: ``(fields, summary, smallest depth of any layer after any step)``."""
    sim = Simulation(mesh, layers=layers, scheme=scheme, reconstruction=rec,
                     boundary=dict.fromkeys(mesh.tags, "wall"), **LINEAR, **setup)  # fmt: skip
    depth = list(sim.model.depth_components)
    low = [float(sim.state()[:, depth].min())]
    s = sim.run(t, check_every=1, callback=lambda x: low.append(float(x.state()[:, depth].min())))
    return sim.fields(), s, min(low)


def one_layer(case: str, scheme: str, rec: str, nx: int) -> dict:
    """One dam-break run on ``irregular_strip(nx)``: errors, TV excess, depth, mass."""
    hr = ONE_LAYER[case][0]
    mesh = irregular_strip(nx, 0.0, LENGTH)
    start = time.perf_counter()
    f, s, low = run(mesh, 1, scheme, rec, T_END, H=0.0,
                    initial={"h": lambda x, y: np.where(x < DAM, HL, hr)})  # fmt: skip
    width = LENGTH / nx * ROWS
    exact, _, features = dam_break(f["x"], T_END, HL, hr, DAM)
    err = f["area"] * np.abs(f["h"] - exact) / width
    near = np.abs(f["x"] - features["shock" if hr else "front"]) < WINDOW
    profile = columns(f, "h", nx, 0.0, LENGTH)
    return dict(case=case, scheme=scheme, reconstruction=rec, nx=nx, cells=mesh.n_cells,
                error=float(err.sum()), shock_error=float(err[near].sum()),
                tv_excess=tv_excess(profile, HL - hr), rise=largest_rise(profile),
                min_depth=low, mass_drift=s.mass_rel_drift[0], steps=s.steps,
                clipped=s.counters["clipped_cells"],
                seconds=time.perf_counter() - start)  # fmt: skip


def two_layer(case: str, scheme: str, nx: int) -> list[dict]:
    """Both reconstructions on ``irregular_strip(nx)`` and the first-order reference on a
    ``REF``-times finer one: per layer, the L1 difference of the column means from the
    reference's averaged onto the same columns, the TV excess over that average's TV
    (averaging adds no variation: it is the best profile the coarse columns can hold), the
    mass drift; and the smallest depth."""
    (x0, x1), r, H, h1, h2, t = TWO_LAYER[case]
    setup = dict(r=r, H=H, initial={"h1": h1, "h2": h2})
    ref = run(irregular_strip(REF * nx, x0, x1), 2, scheme, "constant", t, **setup)[0]
    rows = []
    for rec in ("constant", "linear"):
        f, s, low = run(irregular_strip(nx, x0, x1), 2, scheme, rec, t, **setup)
        row = dict(case=case, scheme=scheme, reconstruction=rec, nx=nx, min_depth=low,
                   clipped=s.counters["clipped_cells"])  # fmt: skip
        for k, name in enumerate(("h1", "h2")):
            want = columns(ref, name, REF * nx, x0, x1).reshape(nx, REF).mean(axis=1)
            mine = columns(f, name, nx, x0, x1)
            row[f"{name}_difference"] = float(np.abs(mine - want).sum() * (x1 - x0) / nx)
            row[f"{name}_tv_excess"] = tv_excess(mine, float(np.abs(np.diff(want)).sum()))
            row[f"{name}_mass_drift"] = s.mass_rel_drift[k]
        rows.append(row)
    return rows


def orders(values: list[float]) -> list[str]:
    """The observed orders between successive meshes (the spacing halves), as text."""
    v = np.asarray(values)
    return ["", *(f"{o:.2f}" for o in np.log2(v[:-1] / v[1:]))]


def one_layer_table(nxs: list[int]) -> list[dict]:
    """The one-layer rows, printed as the table of docs/validation.md."""
    print("| case | scheme | reconstruction | cells | L1 error | order | at the shock | order "
          "| TV excess | largest rise | min depth | mass drift |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for case, (_, schemes) in ONE_LAYER.items():
        for scheme in schemes:
            for rec in ("constant", "linear"):
                runs = [one_layer(case, scheme, rec, nx) for nx in nxs]
                order = orders([r["error"] for r in runs])
                at = orders([r["shock_error"] for r in runs])
                for r, o, a in zip(runs, order, at, strict=True):
                    print(f"| {case} | {scheme} | {rec} | {r['cells']} | {r['error']:.3e} | {o} "
                          f"| {r['shock_error']:.3e} | {a} | {r['tv_excess']:.1e} "
                          f"| {r['rise']:.1e} "
                          f"| {r['min_depth']:.1e} | {r['mass_drift']:.0e} |")  # fmt: skip
                rows += runs
    return rows


def two_layer_table(nx: int, schemes: list[str]) -> list[dict]:
    """The two-layer rows, printed as the table of docs/validation.md."""
    print(f"\n| case | scheme | reconstruction | L1 diff. h1, h2 (vs {REF}x finer first order) "
          "| TV excess h1, h2 | min depth | mass drift h1, h2 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    rows = []
    for case in TWO_LAYER:
        for scheme in schemes:
            for r in two_layer(case, scheme, nx):
                print(f"| {case} | {scheme} | {r['reconstruction']} "
                      f"| {r['h1_difference']:.2e}, {r['h2_difference']:.2e} "
                      f"| {r['h1_tv_excess']:.1e}, {r['h2_tv_excess']:.1e} | {r['min_depth']:.1e} "
                      f"| {r['h1_mass_drift']:.0e}, {r['h2_mass_drift']:.0e} |")  # fmt: skip
                rows.append(r)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nx", type=int, nargs="+", default=[100, 200, 400, 800])
    parser.add_argument("--nx2", type=int, default=100)
    parser.add_argument("--schemes2", nargs="+", default=["roe", "ir-roe", "pvm-ifcp"])
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    rows = one_layer_table(args.nx)
    rows2 = two_layer_table(args.nx2, args.schemes2) if args.nx2 else []
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"t": T_END, "one_layer": rows, "two_layer": rows2}, f, indent=1)


if __name__ == "__main__":
    main()
