"""``fvswe mesh``: inspect, renumber, spy-plot, partition (and write per-part files), generate.

FILE is a mesh file (any meshio format with triangles or quads, or fvswe's
``.npz``) or the name of a member of the paper's family (``square-4k``,
``square-16k``, ``square-64k``, ``square-256k``, ``square-1m``,
``square-130k``, ``square-2m``), made and cached on first use.

The bathymetry is never guessed: a file whose z coordinate is not zero, or
that has a field named like a bathymetry, needs ``--bathymetry SOURCE:SIGN``
(SOURCE ``z`` or a field name; SIGN ``elevation``, positive up, or ``depth``,
positive down), or ``--bathymetry none``. A field named ``depth`` (what fvswe
writes) is read as depth, positive down.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from ..backends.layout import BLOCK_CELLS, twice_evaluated
from ..errors import ConfigError
from ..mesh import ORDERINGS, Mesh, bandwidth, load, profile, write_mesh
from ..mesh.io import read_mesh_with_note

#: Help of ``--bathymetry`` (``fvswe mesh info|reorder`` and ``fvswe run``).
BATHYMETRY_HELP = (
    "where the bed is and which way is up: z:elevation (z is bed height, positive up), "
    "z:depth (positive down), FIELD:elevation, FIELD:depth, or none"
)


def _seed(text: str) -> int:
    """``--seed``: a non-negative integer (NumPy's generators take no other), else argparse's
    one-line usage error."""
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"a non-negative integer, not {text!r}")
    return seed


def _load(spec: str, bathymetry: str | None = None) -> tuple[Mesh, str]:
    """Load FILE and say what its bathymetry is; mesh warnings become one stderr line each."""
    if Path(spec).exists() or bathymetry is not None:
        return _warned(lambda: read_mesh_with_note(spec, bathymetry))
    # a member of the paper's family (flat, no bathymetry), or a one-line error
    return _warned(lambda: load(spec)), "none"


def _warned(make):
    """``make()``, the warnings it raised printed as one stderr line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = make()
    for w in caught:
        print(f"fvswe: warning: {w.message}", file=sys.stderr)
    return out


def mesh_info(mesh: Mesh, bathymetry: str = "") -> dict:
    """The numbers ``fvswe mesh info`` reports, as a JSON-ready dict.

    ``bathymetry`` says what the reader took as the bed (from :func:`_load`).
    """
    depth = mesh.depth
    bnd = mesh.boundary
    counts = {name: int((mesh.edge_tag[bnd] == tid).sum()) for name, tid in mesh.tags.items()}
    return {
        "source": mesh.source,
        "cells": mesh.n_cells,
        "cell_type": "triangle" if mesh.k == 3 else "quad",
        "nodes": mesh.n_nodes,
        "edges": mesh.n_edges,
        "boundary_edges": int(bnd.sum()),
        "tags": counts,
        "area_min": float(mesh.area.min()),
        "area_max": float(mesh.area.max()),
        "area_total": float(mesh.area.sum()),
        "depth": depth is not None,
        "bathymetry": bathymetry,
        "depth_min": None if depth is None else float(depth.min()),
        "depth_max": None if depth is None else float(depth.max()),
        "bandwidth": bandwidth(mesh),
        "profile": profile(mesh),
        # the GPU block variant's extra flux work in this order (fvswe.backends.layout)
        "block_cells": BLOCK_CELLS,
        "twice_evaluated": twice_evaluated(mesh.edge_cells, BLOCK_CELLS),
    }


def _info(args: argparse.Namespace) -> int:
    mesh, note = _load(args.file, args.bathymetry)
    if args.method != "none":
        mesh = mesh.reordered(args.method, seed=args.seed)[0]
    info = mesh_info(mesh, note) | {"ordering": args.method}
    if args.json:
        print(json.dumps(info))
        return 0
    tags = ", ".join(f"{name} {count}" for name, count in info["tags"].items())
    print(f"{info['source']}: {info['cells']} {info['cell_type']}s, {info['nodes']} nodes")
    print(f"  edges      {info['edges']} ({info['boundary_edges']} boundary: {tags})")
    print(
        f"  area       min {info['area_min']:.6g}  max {info['area_max']:.6g}"
        f"  total {info['area_total']:.6g}"
    )
    span = (
        f": H from {info['depth_min']:.6g} to {info['depth_max']:.6g} m (positive down)"
        if info["depth"]
        else ""
    )
    print(f"  bathymetry {info['bathymetry']}{span}")
    print(f"  ordering   {args.method}: bandwidth {info['bandwidth']}, profile {info['profile']}")
    print(
        f"  gpu block  {100 * info['twice_evaluated']:.1f} % of the edges evaluated twice"
        f" ({info['block_cells']} cells a block)"
    )
    return 0


def _reorder(args: argparse.Namespace) -> int:
    mesh = _load(args.input, args.bathymetry)[0]
    out = Path(args.output)
    if not out.parent.is_dir():
        raise ConfigError(f"{out}: folder {out.parent} does not exist")
    new, _ = mesh.reordered(args.method, seed=args.seed)
    write_mesh(new, out)
    print(
        f"{out}: {new.n_cells} cells in {args.method} order, bandwidth "
        f"{bandwidth(mesh)} -> {bandwidth(new)}"
    )
    return 0


def _spy(args: argparse.Namespace) -> int:
    from ..mesh.spy import spy_png

    mesh = _load(args.file)[0]
    spy_png(mesh, args.output, methods=args.method, seed=args.seed)
    print(f"{args.output}: spy plot of {mesh.n_cells} cells ({', '.join(args.method)})")
    return 0


def _partition(args: argparse.Namespace) -> int:
    from ..partition import assign, draw_parts, method_name, split, stats

    if args.png and Path(args.png).suffix.lower() != ".png":
        raise ConfigError(f"--png: {args.png}: not a .png name (the picture is a PNG file)")
    mesh, order, pairs = _to_cut(args)
    if pairs:  # joined before the renumbering and the cut, as a run joins them
        from ..mesh.periodic import periodic

        mesh = periodic(mesh, pairs)
    if order != "none":  # cut as a run in that order cuts it
        mesh = mesh.reordered(order)[0]
    method = method_name(args.method)
    part = assign(mesh, args.parts, method)
    parts = split(mesh, part)
    info = stats(mesh, part, parts) | {"method": method, "order": order}
    if args.output:
        from ..partfile import write_parts

        write_parts(mesh, parts, args.output, method=method, order=order, periodic=pairs)
        info["output"] = args.output
    if args.png:
        title = (
            f"{Path(mesh.source).name}: {info['parts']} parts ({method}), "
            f"edge cut {info['edge_cut']}, imbalance {info['imbalance']:.3f}"
        )
        draw_parts(mesh, part, args.png, title=title)
    if args.json:
        print(json.dumps(info))
        return 0
    print(f"{info['source']}: {info['cells']} cells in {info['parts']} parts ({method})")
    print(f"  {'part':>4} {'owned':>9} {'halo':>7} {'neighbours':>10}")
    for p, (owned, halo, nb) in enumerate(
        zip(info["owned"], info["halo"], info["neighbours"], strict=True)
    ):
        print(f"  {p:>4} {owned:>9} {halo:>7} {nb:>10}")
    print(f"  edge cut   {info['edge_cut']} edges")
    print(f"  imbalance  {info['imbalance']:.4f} (largest part / mean part)")
    if args.png:
        print(f"  picture    {args.png}")
    if args.output:
        print(f"  files      {args.output}: manifest.json and {info['parts']} part files")
    return 0


def _to_cut(args: argparse.Namespace) -> tuple[Mesh, str, list[tuple[str, str]]]:
    """``(mesh, order, periodic pairs)`` to cut: FILE's mesh, ``--order`` (default none) and
    ``--periodic``; or, FILE a case file (``.toml``), its mesh, its run's order (resolved for
    its backend here) and its periodic pairs, unless the flags say otherwise."""
    pairs = [_pair(text) for text in args.periodic or ()]
    if Path(args.file).suffix != ".toml":
        return _load(args.file, args.bathymetry)[0], args.order or "none", pairs
    from ..backends import backend_class
    from ..boundary import periodic_pairs
    from ..casefile import load as load_case
    from ..mesh.orderings import resolve

    if args.bathymetry is not None:
        raise ConfigError(f"--bathymetry: {args.file} is a case file: its [mesh] says where "
                          "the bed is")  # fmt: skip
    spec = load_case(args.file)
    backend = backend_class(spec.settings.get("backend", "auto")).name
    order = args.order or resolve(spec.settings.get("order", "none"), backend)
    return _warned(spec.load_mesh), order, pairs or periodic_pairs(spec.boundary)[0]


def _pair(text: str) -> tuple[str, str]:
    """``A:B`` of ``--periodic``: the tags joined, A's edges onto B's."""
    a, colon, b = text.partition(":")
    if not (a and colon and b) or ":" in b:
        raise ConfigError(f"--periodic: expected TAG:TAG (e.g. west:east), got {text!r}")
    return a, b


def _generate(args: argparse.Namespace) -> int:
    from ..mesh.generate import square

    mesh = square(args.cells, seed=args.seed)
    write_mesh(mesh, args.output)
    print(f"{args.output}: {mesh.n_cells} triangles, {mesh.n_nodes} nodes")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``fvswe mesh`` and its actions to the top-level parser."""
    p = subparsers.add_parser(
        "mesh",
        help="inspect, renumber, spy-plot, partition and generate meshes",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    methods = list(ORDERINGS)

    info = sub.add_parser(
        "info", help="cells, edges, boundary tags, areas, bandwidth, profile, GPU block locality"
    )
    info.add_argument("file", metavar="FILE", help="mesh file or family name (e.g. square-4k)")
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.add_argument("--method", choices=methods, default="none", help="renumber first")
    info.add_argument("--seed", type=_seed, default=0, help="seed of the random ordering")
    info.add_argument("--bathymetry", metavar="SOURCE:SIGN", help=BATHYMETRY_HELP)
    info.set_defaults(func=_info)

    reorder = sub.add_parser("reorder", help="renumber the cells and write the mesh")
    reorder.add_argument("input", metavar="IN", help="mesh file or family name")
    reorder.add_argument("output", metavar="OUT", help=".npz, .msh (gmsh 2.2) or any meshio format")
    reorder.add_argument("--method", choices=methods, required=True)
    reorder.add_argument("--seed", type=_seed, default=0, help="seed of the random ordering")
    reorder.add_argument("--bathymetry", metavar="SOURCE:SIGN", help=BATHYMETRY_HELP)
    reorder.set_defaults(func=_reorder)

    spy = sub.add_parser("spy", help="PNG spy plot of the cell adjacency, one panel per method")
    spy.add_argument("file", metavar="FILE", help="mesh file or family name")
    spy.add_argument("-o", "--output", required=True, metavar="PNG")
    spy.add_argument("--method", choices=methods, nargs="+", default=["none"])
    spy.add_argument("--seed", type=_seed, default=0, help="seed of the random ordering")
    spy.set_defaults(func=_spy)

    part = sub.add_parser(
        "partition", help="split into parts for MPI ranks: sizes, halos, edge cut, imbalance"
    )
    part.add_argument("file", metavar="FILE",
                      help="mesh file or family name, or a case file (.toml): its mesh, the "
                      "run's order and its periodic pairs")  # fmt: skip
    part.add_argument("-n", "--parts", type=int, required=True, metavar="P", help="parts")
    part.add_argument("--method", choices=["auto", "metis", "hilbert"], default="auto",
                      help="METIS k-way (auto: when pymetis imports) or Hilbert runs")  # fmt: skip
    part.add_argument("--order", choices=methods, default=None,
                      help="renumber first, as the run will (its `order`, resolved; default: "
                      "none, or a case file's)")  # fmt: skip
    part.add_argument("-o", "--output", metavar="DIR",
                      help="write DIR/part-NNNN.npz and DIR/manifest.json")  # fmt: skip
    part.add_argument("--bathymetry", metavar="SOURCE:SIGN", help=BATHYMETRY_HELP)
    part.add_argument("--periodic", action="append", metavar="A:B",
                      help="join tag A's edges to tag B's before the cut, as a run with the "
                      "condition A = { kind = \"periodic\", partner = \"B\" } does "
                      "(repeatable)")  # fmt: skip
    part.add_argument("--png", metavar="PNG", help="draw the parts and the cut edges")
    part.add_argument("--json", action="store_true", help="print one JSON object")
    part.set_defaults(func=_partition)

    gen = sub.add_parser("generate", help="generate a mesh (square: the paper's Delaunay square)")
    gen.add_argument("kind", choices=["square"])
    gen.add_argument("--cells", type=int, default=4000, help="exact number of triangles")
    gen.add_argument("--seed", type=_seed, default=0)
    gen.add_argument("-o", "--output", required=True, metavar="OUT")
    gen.set_defaults(func=_generate)
