"""The renumbering paper's study, reproduced and extended: run time against cell ordering.

    python3 benchmarks/reorder_impact.py --backend gpu --out $OUT/reorder --budget-s 480
    python3 benchmarks/reorder_impact.py --quick --out /tmp/reorder     # CPU, CI-sized
    fvswe bench reorder --backend cpu --sizes 4k,16k,64k --out out/reorder_cpu
    python3 benchmarks/reorder_impact.py --from-json out/reorder/results.json  # reports only

For test1 and test2 (docs/CASES.md §A), each scheme, each member of the paper's
mesh family and each ordering (the paper's original, RCM and GPS; beyond it
random, Hilbert and Morton), in float32 and float64, it times the whole run to
``t_end`` (0.1 s, the paper's) from the initial state: a warm-up run first
(kernel compilation, CUDA graph capture), then ``--repeats`` timed runs (CUDA
events on the backend's stream on the GPU, wall clock on the CPU) reported as
median, min/max, steps and cell-steps/s. Each reordered mesh is built once and
serves every test, dtype and scheme.

Cells run in priority order: the paper's (orig/RCM/GPS, float32) at every
size first, then the other orderings in float32, then float64. With
``--budget-s`` a cell whose predicted cost (the same test/scheme/dtype at the
largest smaller size, scaled by cells^1.5 since steps grow like sqrt(cells))
no longer fits runs with one repeat, or is skipped and listed as such. A cell
that raises is listed under ``failed`` and the study goes on. ``results.json``
is rewritten after every mesh (``finished`` says whether the plan was gone
through), the reports after every tier, so a run cut short still leaves
results; ``--from-json`` rebuilds the reports from it.

Outputs in ``--out``: ``results.json`` (every measurement, meshes with their
bandwidths, device, library versions, date), ``tables.md`` (Tables 1-2 in the
paper's layout with its GTX 580 seconds beside ours and the speed ratio, all
orderings, Table 3 of bandwidths, the share of edges the GPU block variant
evaluates twice, the best ordering per size and the one
``order="auto"`` should mean on this backend), ``figure3.png`` (time reduction
against the original ordering per scheme and size with the paper's as ticks,
like its Figure 3; ``figure3_float64.png`` too) and ``figure4_spy_<size>.png``
(spy plots of the adjacency in orig/RCM/GPS order, the paper's Figure 4;
``_extra`` for the other orderings). The paper's numbers come from
``reference/paper_tables.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Iterable, Iterator
from itertools import groupby, product
from pathlib import Path

import numpy as np
import scipy
from mesh_prep import _cpu as cpu_model
from mesh_prep import _mean_gap as mean_gap
from throughput import SIZES, backend_factory, case_layout

from fvswe.backends.layout import BLOCK_CELLS, twice_evaluated
from fvswe.cases import get_case
from fvswe.mesh import bandwidth, family, profile

REFERENCE = Path(__file__).resolve().parent / "reference" / "paper_tables.json"
TESTS = ("test1", "test2")
SCHEMES = ("roe", "ir-roe", "pvm-ifcp")
ORDERS = ("none", "rcm", "gps", "random", "hilbert", "morton")
PAPER_ORDERS = ("none", "rcm", "gps")
DTYPES = ("float32", "float64")
LABEL = {"none": "orig", "rcm": "RCM", "gps": "GPS", "random": "random", "hilbert": "Hilbert",
         "morton": "Morton", "roe": "Roe", "ir-roe": "IR-Roe", "pvm-ifcp": "IFCP"}  # fmt: skip
#: Timed repeats per size unless --repeats says otherwise (fewer where one run is long).
REPEATS = {4000: 5, 16000: 5, 64000: 5, 256000: 3, 1024000: 2, 2080560: 2}
#: Orderings ``order="auto"`` may resolve to: those giving the same cell order whatever the
#: input numbering (orig keeps the file's own, random is the worst case by design).
AUTO_CANDIDATES = ("rcm", "gps", "hilbert", "morton")
#: Seconds kept back from --budget-s for the reports (tables, figures, spy plots).
REPORT_RESERVE_S = 20.0
#: Seconds a cell costs beyond its runs (layout, backend, first check), for the budget.
CELL_OVERHEAD_S = 0.05
#: Sizes studied by default: the whole family on a GPU, what fits in minutes on a CPU.
DEFAULT_SIZES = {"gpu": ",".join(SIZES), "cpu": "4k,16k,64k"}
#: --quick: CI-sized (one thread: steadier than a team of threads on a busy small machine).
QUICK = {"backend": "cpu", "sizes": "4k,16k", "repeats": 1, "t_end": 0.02, "threads": 1}


def size_label(cells: int) -> str:
    """``4k`` ... ``2m`` for family members, else the count."""
    return next((k for k, v in SIZES.items() if v == cells), str(cells))


def write_json(doc: dict, path: Path) -> None:
    """Write atomically, so a run killed mid-write leaves the previous complete file."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


# -- measuring ------------------------------------------------------------------------------------
class Meshes:
    """Family members and their reorderings, each built once; records prep time and metrics."""

    def __init__(self) -> None:
        self._base: dict[int, object] = {}
        self._reordered: dict[tuple[int, str], object] = {}
        self.records: list[dict] = []

    def get(self, cells: int, order: str):
        key = (cells, order)
        if key not in self._reordered:
            t0 = time.perf_counter()
            if cells not in self._base:
                self._base[cells] = family(cells)
            t1 = time.perf_counter()
            mesh = self._base[cells].reordered(order)[0]
            t2 = time.perf_counter()
            self._reordered[key] = mesh
            self.records.append({
                "cells": mesh.n_cells, "order": order, "family_s": t1 - t0, "reorder_s": t2 - t1,
                "bandwidth": bandwidth(mesh), "profile": profile(mesh),
                "mean_neighbour_gap": mean_gap(mesh),
                "twice_evaluated": twice_evaluated(mesh.edge_cells, BLOCK_CELLS),
            })  # fmt: skip
            print(f"mesh {size_label(cells)} {LABEL[order]}: bandwidth "
                  f"{self.records[-1]['bandwidth']}, {t2 - t0:.1f} s", flush=True)  # fmt: skip
        return self._reordered[key]


def time_runs(B, timer, W0: np.ndarray, t_end: float, repeats: int) -> dict:
    """A warm-up run, then ``repeats`` timed runs to ``t_end``, each from the initial state."""
    times, steps = [], []
    for _ in range(1 + repeats):
        B.set_state(W0)
        B.t = 0.0
        before = B.steps
        times.append(timer.time(B, lambda: B.advance(t_end, 10**9)))
        steps.append(B.steps - before)
    warmup, times = times[0], times[1:]
    if len(set(steps)) != 1:
        raise RuntimeError(f"runs from the same state took different step counts: {steps}")
    med = statistics.median(times)
    return {
        "steps": steps[0], "t": B.t, "repeats": repeats, "times_s": times, "warmup_s": warmup,
        "median_s": med, "min_s": min(times), "max_s": max(times),
        "spread": (max(times) - min(times)) / med if med > 0 else 0.0,
        "valid": B.first_invalid() is None,
    }  # fmt: skip


def predict_run_s(rows: list[dict], test: str, scheme: str, dtype: str, cells: int) -> float:
    """Seconds one run of this cell should take, from the slowest measured run of the same
    test/scheme (same dtype if any) at the largest size not above ``cells``, times
    (cells/size)^1.5; 0 when nothing comparable was measured yet."""
    for same_dtype in (True, False):
        near = [r for r in rows if r["test"] == test and r["scheme"] == scheme
                and r["cells"] <= cells and (r["dtype"] == dtype or not same_dtype)]  # fmt: skip
        if near:
            size = max(r["cells"] for r in near)
            slowest = max(r["median_s"] for r in near if r["cells"] == size)
            return slowest * (cells / size) ** 1.5
    return 0.0


def tiers(orders: Iterable[str], dtypes: Iterable[str]) -> list[tuple[str, list, list]]:
    """(name, orders, dtypes) in priority order: the paper's cells, other orderings, float64."""
    orders, dtypes = list(orders), list(dtypes)
    paper = [o for o in orders if o in PAPER_ORDERS]
    extra = [o for o in orders if o not in PAPER_ORDERS]
    rest = [d for d in dtypes if d != "float32"]
    out = []
    if "float32" in dtypes:
        out += [("paper", paper, ["float32"]), ("extra-orders", extra, ["float32"])]
    out.append(("float64", orders, rest))
    return [t for t in out if t[1] and t[2]]


def machine_info(backend: str, timer, threads: int | None) -> dict:
    import numba

    info = {"backend": backend, "cpu": cpu_model(), "cores": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "numba": numba.__version__, **timer.machine()}  # fmt: skip
    if backend == "cpu":
        info["threads"] = threads or numba.get_num_threads()
        n = info["threads"]
        info["device"] = f"{info['cpu']} ({n} thread{'s' if n > 1 else ''})"
    return info


def planned(args) -> Iterator[tuple[str, int, str, str, str, str]]:
    """(tier, cells, order, test, dtype, scheme) in running order: tier by tier; within one,
    each reordered mesh serves all its tests, dtypes and schemes (one layout per test/dtype)."""
    for tier, orders, dtypes in tiers(args.orders, args.dtypes):
        for cells, order, test, dtype, scheme in product(
            args.sizes, orders, args.tests, dtypes, args.schemes
        ):
            yield tier, cells, order, test, dtype, scheme


def run_study(args, paper: dict) -> dict:
    """Measure every planned cell (within the budget), rewriting results.json as it goes."""
    start = time.perf_counter()
    Backend, timer = backend_factory(args.backend)
    extra = {"threads": args.threads} if args.backend == "cpu" else {}
    if args.backend == "gpu" and args.variant:
        extra["variant"] = args.variant
    repeats = {c: args.repeats or REPEATS.get(c, 3) for c in args.sizes}
    doc = {
        "benchmark": "reorder_impact",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(args.backend, timer, args.threads),
        "settings": {
            "t_end": args.t_end,
            "paper_t_end": paper["t_end"],
            "dt_mode": "lagged",
            "repeats": {size_label(c): n for c, n in repeats.items()},
            "budget_s": args.budget_s,
            "quick": args.quick,
            "tests": args.tests,
            "schemes": args.schemes,
            "orders": args.orders,
            "dtypes": args.dtypes,
            "sizes": args.sizes,
            "note": args.note,
        },
        "results": [],
        "skipped": [],
        "failed": [],
        "meshes": [],
        "finished": False,
        "complete": False,
    }
    rows, meshes = doc["results"], Meshes()
    plan = list(planned(args))
    print(f"reorder impact on {args.backend}: {doc['machine']['device']}; {len(plan)} cells "
          f"planned, budget {args.budget_s or 'none'} s", flush=True)  # fmt: skip

    def save(finished: bool = False) -> None:
        """results.json as it stands; ``finished`` once the whole plan has been gone through."""
        doc["meshes"], doc["elapsed_s"] = meshes.records, time.perf_counter() - start
        doc["finished"] = finished
        doc["complete"] = finished and not doc["skipped"] and not doc["failed"]
        write_json(doc, args.out / "results.json")

    def repeats_that_fit(run_s: float, want: int) -> int:
        """``want``, else 1, else 0 timed runs (plus the warm-up) within the budget left."""
        if args.budget_s is None:
            return want
        left = args.budget_s - REPORT_RESERVE_S - (time.perf_counter() - start)
        return next((n for n in (want, 1) if (1 + n) * run_s + CELL_OVERHEAD_S <= left), 0)

    layout, layout_key = None, None
    for tier, in_tier in groupby(plan, key=lambda c: c[0]):
        for (cells, order), group in groupby(in_tier, key=lambda c: c[1:3]):
            ran = False
            for _, _, _, test, dtype, scheme in group:
                cell = {"test": test, "scheme": scheme, "cells": cells, "order": order,
                        "dtype": dtype, "tier": tier}  # fmt: skip
                run_s = predict_run_s(rows, test, scheme, dtype, cells)
                reps = repeats_that_fit(run_s, repeats[cells])
                if reps == 0:
                    doc["skipped"].append({**cell, "reason": "budget", "predicted_run_s": run_s})
                    continue
                case = get_case(test)
                if layout_key != (cells, order, test, dtype):
                    mesh = meshes.get(cells, order)
                    layout = case_layout(case, mesh, np.dtype(dtype))
                    layout_key = (cells, order, test, dtype)
                row = {**cell, "size": size_label(cells)}
                try:
                    B = Backend(layout, scheme, cfl=case.cfl, dt_mode="lagged", **extra)
                    row.update({k: getattr(B, k, None) for k in ("variant", "block", "threads")})
                    row.update(time_runs(B, timer, layout.W0, args.t_end, reps))
                except Exception as exc:  # one broken cell must not end a one-shot study
                    doc["failed"].append({**cell, "error": f"{type(exc).__name__}: {exc}"})
                    print(f"FAILED {cell}: {doc['failed'][-1]['error']}", flush=True)
                    continue
                finally:
                    B = None  # frees the device memory before the next backend
                row["cell_steps_per_s"] = cells * row["steps"] / row["median_s"]
                p = paper_seconds(paper, test, cells, scheme, order, dtype)
                if p is not None and args.t_end == paper["t_end"]:
                    row.update(paper_s=p, speedup_vs_paper=p / row["median_s"])
                rows.append(row)
                ran = True
                print(progress(row, time.perf_counter() - start), flush=True)
            if ran:
                save()
        write_reports(doc, args.out, paper, spy=False)
    save(finished=True)
    return doc


def progress(row: dict, elapsed: float) -> str:
    """One line per measured cell, for the log."""
    paper = (
        f"  paper {row['paper_s']:.4g} s, x{row['speedup_vs_paper']:.3g}"
        if "paper_s" in row
        else ""
    )
    return (f"[{elapsed:6.1f} s] {row['size']:>4} {LABEL[row['order']]:>7} {row['test']} "
            f"{row['dtype']} {row['scheme']:>8}: {row['median_s']:.4g} s "
            f"(±{50 * row['spread']:.0f}%, {row['repeats']} rep) {row['steps']} steps "
            f"{row['cell_steps_per_s'] / 1e6:.4g} M cell-steps/s{paper}")  # fmt: skip


# -- reports --------------------------------------------------------------------------------------
def paper_seconds(paper: dict, test: str, cells: int, scheme: str, order: str, dtype: str):
    """The paper's GTX 580 seconds of this cell, or None (only float32, orig/RCM/GPS)."""
    if dtype != paper["dtype"]:
        return None
    return paper["seconds"].get(test, {}).get(str(cells), {}).get(scheme, {}).get(order)


def index(doc: dict) -> dict[tuple, dict]:
    """Measurements by (test, scheme, cells, order, dtype)."""
    return {(r["test"], r["scheme"], r["cells"], r["order"], r["dtype"]): r for r in doc["results"]}


def reductions(doc: dict) -> dict[tuple, float]:
    """Time reduction (%) of each measurement against the original ordering of the same cell."""
    by = index(doc)
    out = {}
    for (test, scheme, cells, order, dtype), r in by.items():
        base = by.get((test, scheme, cells, "none", dtype))
        if base is not None and order != "none":
            out[(test, scheme, cells, order, dtype)] = 100 * (1 - r["median_s"] / base["median_s"])
    return out


def mean_ratio(doc: dict, cells: int, dtypes: Iterable[str]) -> dict[str, float]:
    """Each ordering's time relative to orig at ``cells``: the geometric mean over the tests,
    schemes and ``dtypes`` measured in every ordering present there ({} without orig)."""
    by, dtypes = index(doc), tuple(dtypes)
    here = {r["order"] for r in doc["results"] if r["cells"] == cells and r["dtype"] in dtypes}
    orders = sorted(here, key=ORDERS.index)
    keys = [(t, s, d) for t, s, d in product(TESTS, SCHEMES, dtypes)
            if all((t, s, cells, o, d) in by for o in orders)]  # fmt: skip
    if "none" not in orders or not keys:
        return {}
    return {
        o: math.exp(statistics.fmean(
            math.log(by[(t, s, cells, o, d)]["median_s"] / by[(t, s, cells, "none", d)]["median_s"])
            for t, s, d in keys))
        for o in orders
    }  # fmt: skip


def best_orders(doc: dict) -> dict[str, dict[int, tuple[str, float]]]:
    """Per dtype and size: the ordering with the smallest :func:`mean_ratio`, and that ratio."""
    out: dict[str, dict[int, tuple[str, float]]] = {}
    for dtype in DTYPES:
        for cells in sorted({r["cells"] for r in doc["results"] if r["dtype"] == dtype}):
            gm = mean_ratio(doc, cells, (dtype,))
            if gm:
                best = min(gm, key=gm.get)
                out.setdefault(dtype, {})[cells] = (best, gm[best])
    return out


def recommend(doc: dict) -> tuple[str, int, dict[str, float]] | None:
    """``order="auto"``: the candidate of :data:`AUTO_CANDIDATES` with the smallest
    :func:`mean_ratio` (dtypes pooled) at the largest size measured in every dtype of the
    study; returns it, that size and every candidate's ratio."""
    dtypes = {r["dtype"] for r in doc["results"]}
    sizes = sorted({r["cells"] for r in doc["results"]}, reverse=True)
    for cells in sizes:
        if {r["dtype"] for r in doc["results"] if r["cells"] == cells} != dtypes:
            continue
        gm = mean_ratio(doc, cells, sorted(dtypes))
        cand = {o: v for o, v in gm.items() if o in AUTO_CANDIDATES}
        if cand:
            return min(cand, key=cand.get), cells, cand
    return None


def _seconds(x: float) -> str:
    return f"{x:.3g}" if x >= 0.01 else f"{x:.2e}"


def _spread(r: dict) -> str:
    """`` ±x%`` (half the max-min spread over the median) when there were several repeats."""
    return f" ±{50 * r['spread']:.0f}%" if r["repeats"] > 1 else ""


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + [
        "| " + " | ".join(r) + " |" for r in rows
    ]


def tables_md(doc: dict, paper: dict) -> str:
    """The Markdown report: the paper's Tables 1-3 with ours beside them, and the extensions."""
    m, st = doc["machine"], doc["settings"]
    by, red = index(doc), reductions(doc)
    sizes = sorted({r["cells"] for r in doc["results"]} | {int(c) for c in paper["bandwidth"]})
    same_t = st["t_end"] == paper["t_end"]
    lines = [
        f"# Reordering impact on the {m['backend'].upper()}: {m['device']}, beside the paper's "
        "GTX 580",
        "",
        f"{doc['date']}; {m['cpu']}, {m['cores']} cores; Python {m['python']}, NumPy "
        f"{m['numpy']}, Numba {m['numba']}"
        + (f", CuPy {m['cupy']}" if "cupy" in m else "")
        + "."
        + "".join(
            f" GPU kernels: {v} variant, {b} threads per block."
            for v, b in sorted(
                {(r["variant"], r["block"]) for r in doc["results"] if r.get("variant")}
            )
        ),
        "",
        f"Whole runs to t = {st['t_end']} s from the initial state (lagged Δt, CFL 0.9), warm "
        "(after a warm-up run: kernel compilation, on the GPU graph capture); median of the timed "
        "repeats (" + ", ".join(f"{k}: {v}" for k, v in st["repeats"].items()) + "). The paper: "
        f"GeForce GTX 580, float32, t = {paper['t_end']} s. Orderings: orig = the generator's "
        "own with the 1→4 refinement appending children (the paper's pathology), RCM "
        "(SciPy), GPS, and beyond the paper random, Hilbert and Morton curves.",
        "",
    ]
    if st.get("note"):
        lines += [f"Note: {st['note']}", ""]
    if not same_t:
        lines += [f"**t_end = {st['t_end']} s differs from the paper's {paper['t_end']} s: "
                  "no speed ratios.**", ""]  # fmt: skip
    if not doc.get("finished", True):
        lines += ["**Partial results: this run stopped before the end of its plan.**", ""]
    if doc.get("failed"):
        lines += [f"**{len(doc['failed'])} cells failed** (errors in results.json).", ""]
    if doc["skipped"]:
        lines += [f"**{len(doc['skipped'])} cells skipped for the time budget** (listed in "
                  "results.json); their table entries read —.", ""]  # fmt: skip
    for num, test in ((1, "test1"), (2, "test2")):
        head = ["volumes"] + [f"{LABEL[s]} {LABEL[o]}" for s in SCHEMES for o in PAPER_ORDERS]
        rows = []
        for cells in sizes:
            row = [str(cells)]
            for s in SCHEMES:
                for o in PAPER_ORDERS:
                    p = paper_seconds(paper, test, cells, s, o, "float32")
                    r = by.get((test, s, cells, o, "float32"))
                    ours = _seconds(r["median_s"]) if r else "—"
                    ratio = f" ({p / r['median_s']:.3g}×)" if r and p and same_t else ""
                    row.append(f"{ours} / {p if p is not None else '—'}{ratio}")
            rows.append(row)
        lines += [f"## Table {num} — {test}, float32: seconds, ours / paper (paper ÷ ours)", ""]
        lines += _table(head, rows) + [""]
        head = ["volumes"] + [f"{LABEL[s]} {LABEL[o]}" for s in SCHEMES for o in ORDERS[1:]]
        rows = []
        for cells in sizes:
            row = [str(cells)]
            for s in SCHEMES:
                base = paper_seconds(paper, test, cells, s, "none", "float32")
                for o in ORDERS[1:]:
                    v = red.get((test, s, cells, o, "float32"))
                    p = paper_seconds(paper, test, cells, s, o, "float32")
                    ref = f" ({100 * (1 - p / base):.0f})" if p is not None and base else ""
                    row.append(("—" if v is None else f"{v:.0f}") + ref)
            rows.append(row)
        lines += [f"### {test}, float32: time reduction against orig, % (paper's in brackets)", ""]
        lines += _table(head, rows) + [""]
    for dtype in DTYPES:
        for test in TESTS:
            rows = []
            for cells in sizes:
                for s in SCHEMES:
                    cols = [by.get((test, s, cells, o, dtype)) for o in ORDERS]
                    if not any(cols):
                        continue
                    row = [str(cells), LABEL[s]]
                    for o, r in zip(ORDERS, cols, strict=True):
                        v = red.get((test, s, cells, o, dtype))
                        txt = "—" if r is None else _seconds(r["median_s"]) + _spread(r)
                        row.append(txt + (f" ({-v:+.0f}%)" if v is not None else ""))
                    done = [(r["median_s"], o) for o, r in zip(ORDERS, cols, strict=True) if r]
                    row.append(LABEL[min(done)[1]])
                    rows.append(row)
            if rows:
                lines += [f"## All orderings — {test}, {dtype}: median seconds ±half-spread "
                          "(change against orig)", ""]  # fmt: skip
                lines += _table(["volumes", "scheme"] + [LABEL[o] for o in ORDERS] + ["best"], rows)
                lines += [""]
    steps_same = all(
        len({r["steps"] for r in doc["results"] if (r["test"], r["scheme"], r["cells"],
             r["dtype"]) == key}) == 1
        for key in {(r["test"], r["scheme"], r["cells"], r["dtype"]) for r in doc["results"]}
    )  # fmt: skip
    lines += [f"Every ordering took the same number of steps in every cell: {steps_same}.", ""]
    bw = {(r["cells"], r["order"]): r["bandwidth"] for r in doc["meshes"]}
    rows = []
    for cells in sizes:
        pb = paper["bandwidth"].get(str(cells), {})
        row = [str(cells)]
        for o in ORDERS:
            ours = bw.get((cells, o), "—")
            row.append(f"{ours} / {pb[o]}" if o in pb else str(ours))
        rows.append(row)
    lines += ["## Table 3 — bandwidth of the cell adjacency (max |i−j|): ours / paper", ""]
    lines += _table(["volumes"] + [LABEL[o] for o in ORDERS], rows) + [""]
    twice = {(r["cells"], r["order"]): r["twice_evaluated"] for r in doc["meshes"]
             if "twice_evaluated" in r}  # fmt: skip
    if twice:  # the GPU block variant's extra flux work (fvswe.backends.layout.twice_evaluated)
        rows = [[str(c)] + [f"{100 * twice[c, o]:.1f}" if (c, o) in twice else "—" for o in ORDERS]
                for c in sizes]  # fmt: skip
        lines += [f"## Edges the GPU block variant evaluates twice (%, {BLOCK_CELLS} cells a "
                  "block)", ""]  # fmt: skip
        lines += _table(["volumes"] + [LABEL[o] for o in ORDERS], rows) + [""]
    best = best_orders(doc)
    if best:
        rows = [[str(c)] + [f"{LABEL[best[d][c][0]]} ({100 * (best[d][c][1] - 1):+.0f}%)"
                            if c in best.get(d, {}) else "—" for d in DTYPES]
                for c in sorted({c for v in best.values() for c in v})]  # fmt: skip
        lines += ["## Best ordering per size: geometric mean over tests and schemes of the time "
                  "relative to orig", ""]  # fmt: skip
        lines += _table(["volumes"] + list(DTYPES), rows) + [""]
    rec = recommend(doc)
    if rec:
        order, cells, cand = rec
        ratios = ", ".join(f"{LABEL[o]} {100 * (v - 1):+.1f}%" for o, v in cand.items())
        lines += [f"Recommended `order=\"auto\"` on {m['backend']}: **{order}**. At {cells} "
                  "cells, the largest size measured in every dtype, its time relative to orig "
                  "(geometric mean over tests, schemes and dtypes) is the smallest among the "
                  f"orderings independent of the input numbering: {ratios}.", ""]  # fmt: skip
    return "\n".join(lines)


def paper_reduction(paper: dict, test: str, cells: int, scheme: str, order: str):
    """The paper's time reduction (%) of ``order`` against orig, or None."""
    base = paper_seconds(paper, test, cells, scheme, "none", "float32")
    p = paper_seconds(paper, test, cells, scheme, order, "float32")
    return None if p is None or not base else 100 * (1 - p / base)


def figure3(doc: dict, paper: dict, path: Path, dtype: str) -> bool:
    """Bars of the time reduction against orig per ordering, size, scheme and test, with the
    paper's RCM/GPS reductions as black ticks (float32) - the paper's Figure 3."""
    red = reductions(doc)
    keys = [k for k in red if k[4] == dtype]
    if not keys:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    orders = [o for o in ORDERS[1:] if any(k[3] == o for k in keys)]
    sizes = sorted({k[2] for k in keys})
    tests = [t for t in TESTS if any(k[0] == t for k in keys)]
    vals = [red[k] for k in keys]
    lo = max(min(min(vals), 0.0), -60.0) - 8
    hi = max(max(vals), 60.0) + 8
    colours = {"rcm": "tab:blue", "gps": "tab:orange", "random": "tab:grey",
               "hilbert": "tab:green", "morton": "tab:purple"}  # fmt: skip
    size = (5.2 * len(SCHEMES), 3.6 * len(tests) + 0.8)
    fig, axes = plt.subplots(len(tests), len(SCHEMES), figsize=size, squeeze=False, sharey=True)
    width = 0.8 / len(orders)
    x = np.arange(len(sizes))
    for ti, test in enumerate(tests):
        for si, scheme in enumerate(SCHEMES):
            ax = axes[ti, si]
            for oi, o in enumerate(orders):
                v = np.array([red.get((test, scheme, c, o, dtype), np.nan) for c in sizes])
                pos = x - 0.4 + width * (oi + 0.5)
                ax.bar(pos, np.clip(v, lo, None), width, color=colours[o], label=LABEL[o])
                for p, val in zip(pos, v, strict=True):
                    if val < lo:  # clipped bar: its value written along it
                        ax.text(p, lo + 1, f"{val:.0f}", rotation=90, ha="center", va="bottom",
                                fontsize=7, color="white")  # fmt: skip
                ref = [paper_reduction(paper, test, c, scheme, o) for c in sizes]
                if dtype == paper["dtype"] and any(r is not None for r in ref):
                    ref = np.array([np.nan if r is None else r for r in ref])
                    ax.hlines(ref, pos - width / 2, pos + width / 2, colors="black", lw=2.5,
                              zorder=3, label="paper (GTX 580)")  # fmt: skip
            ax.axhline(0, color="black", lw=0.8)
            ax.set_ylim(lo, hi)
            ax.set_xticks(x, [size_label(c) for c in sizes])
            ax.grid(axis="y", alpha=0.3)
            ax.set_title(f"{test}, {LABEL[scheme]}", fontsize=11)
            if si == 0:
                ax.set_ylabel("time reduction vs orig (%)")
            if ti == len(tests) - 1:
                ax.set_xlabel("cells")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    fig.legend(unique.values(), unique.keys(), loc="upper center", ncol=len(unique),
               bbox_to_anchor=(0.5, 0.955), frameon=False, fontsize=10)  # fmt: skip
    m = doc["machine"]
    fig.suptitle(f"Time saved by renumbering against the original ordering (higher is faster): "
                 f"{m['device']}, {m['backend']}, {dtype}, t = {doc['settings']['t_end']} s",
                 fontsize=12)  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 0.935))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_reports(doc: dict, out: Path, paper: dict, spy: bool = True) -> None:
    """tables.md, figure3*.png and (``spy``) the spy plots of Figure 4, into ``out``."""
    (out / "tables.md").write_text(tables_md(doc, paper))
    figure3(doc, paper, out / "figure3.png", "float32")
    figure3(doc, paper, out / "figure3_float64.png", "float64")
    if spy and doc["results"]:
        from fvswe.mesh.spy import spy_png

        sizes = sorted({r["cells"] for r in doc["results"]})
        cells = 16000 if 16000 in sizes else sizes[0]
        measured = [o for o in ORDERS if any(r["order"] == o for r in doc["results"])]
        mesh, name = family(cells), f"figure4_spy_{size_label(cells)}"
        for suffix, group in (("", PAPER_ORDERS), ("_extra", ORDERS[len(PAPER_ORDERS) :])):
            methods = [o for o in group if o in measured]
            if methods:
                spy_png(mesh, out / f"{name}{suffix}.png", methods=methods)


# -- command line ---------------------------------------------------------------------------------
def _names(ap: argparse.ArgumentParser, text: str, allowed: Iterable[str], what: str) -> list:
    """Comma-separated names checked against ``allowed`` (a usage error names the bad one)."""
    allowed = list(allowed)
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [n for n in names if n not in allowed] or ([] if names else [text])
    if bad:
        ap.error(f"--{what}: unknown {bad[0]!r} (choose from {', '.join(allowed)})")
    return names


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="reorder_impact",
        description=__doc__.split("\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--backend", choices=("gpu", "cpu", "auto"), default="auto",
                    help="auto: the GPU when CuPy sees one, else the CPU")  # fmt: skip
    ap.add_argument("--tests", default=",".join(TESTS))
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--sizes", default=None,
                    help=f"of {', '.join(SIZES)} (default: " + "; ".join(
                        f"{b}: {v}" for b, v in DEFAULT_SIZES.items()) + ")")  # fmt: skip
    ap.add_argument("--orders", default=",".join(ORDERS))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    by_size = ", ".join(f"{size_label(c)}: {n}" for c, n in REPEATS.items())
    ap.add_argument("--repeats", type=int, default=None,
                    help=f"timed runs per cell (default by size: {by_size})")  # fmt: skip
    ap.add_argument("--t-end", type=float, default=None, help="simulated seconds (default 0.1)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="wall seconds for the whole study; lower-priority cells are skipped "
                    "when their predicted cost no longer fits")  # fmt: skip
    ap.add_argument("--variant", default=None, help="GPU variant (edge, gather, slot, block)")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (Numba)")
    ap.add_argument("--quick", action="store_true",
                    help="CI-sized: CPU, 1 thread, 4k and 16k, 1 repeat, t_end 0.02")  # fmt: skip
    ap.add_argument("--from-json", type=Path, default=None,
                    help="no measuring: the reports of an earlier results.json")  # fmt: skip
    ap.add_argument("--note", default="", help="a line for the reports (machine load, ...)")
    ap.add_argument("--out", type=Path, default=None, help="output folder")
    args = ap.parse_args(argv)
    if args.backend != "cpu" and not args.quick and not args.from_json:
        from fvswe.backends import gpu

        ok, reason = gpu.available()
        if args.backend == "gpu" and not ok:
            ap.error(f"--backend gpu: {reason}")
        args.backend = "gpu" if ok else "cpu"
    if args.quick:
        args.backend, args.sizes = QUICK["backend"], args.sizes or QUICK["sizes"]
        args.repeats = args.repeats or QUICK["repeats"]
        args.t_end = args.t_end or QUICK["t_end"]
        args.threads = args.threads or QUICK["threads"]
    args.tests = _names(ap, args.tests, TESTS, "tests")
    args.schemes = _names(ap, args.schemes, SCHEMES, "schemes")
    args.orders = _names(ap, args.orders, ORDERS, "orders")
    args.dtypes = _names(ap, args.dtypes, DTYPES, "dtypes")
    sizes = args.sizes or DEFAULT_SIZES.get(args.backend, DEFAULT_SIZES["cpu"])
    args.sizes = [SIZES[s] for s in _names(ap, sizes.lower(), SIZES, "sizes")]
    if args.out is None:
        args.out = args.from_json.parent if args.from_json else Path("out") / "reorder_impact"
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    paper = json.loads(REFERENCE.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_json:
        doc = json.loads(args.from_json.read_text())
    else:
        args.t_end = args.t_end or paper["t_end"]
        doc = run_study(args, paper)
    write_reports(doc, args.out, paper)
    done = len(doc["results"])
    rec = recommend(doc)
    print(f"{done} cells measured, {len(doc['skipped'])} skipped; recommended order: "
          f"{rec[0] if rec else None}; wrote {args.out}/results.json, tables.md, figure3.png, "
          "figure4_spy_*.png", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
