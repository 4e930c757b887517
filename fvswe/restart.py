"""What a restart needs of a Simulation: the identity a continuing run must share, and the
check that a snapshot fits the run it is restored into.

The identity (:func:`identity`) holds the mesh (cell count and a fingerprint), the settings
of :data:`fvswe.settings.SETTINGS` marked ``identity`` and fingerprints of the boundary
conditions and of the source terms. The fingerprints are short hashes, exact and small;
:func:`details` gives the readable values behind them (a Manning coefficient, a boundary
tag's kind), which a snapshot carries to name what differs (:func:`mismatch`). Identities
written before a setting joined the identity are completed with its ``older`` value
(:data:`IDENTITY_ADDED`), so their checkpoints and series still restart.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from .boundary import KINDS
from .errors import ConfigError
from .forcing import DRAG_LAWS
from .output import original_cells
from .parallel import Owned
from .schemes.friction import FRICTION_KINDS
from .settings import ALWAYS, BY_NAME, SETTINGS
from .slide import describe

#: Identity keys added after checkpoints and series had been written, and their value in
#: those (fast math was recorded from 2026-11-24; a run without it ran IEEE).
IDENTITY_ADDED = {s.name: s.older for s in SETTINGS if s.identity and s.older is not ALWAYS}
#: What :meth:`Simulation.restore <fvswe.simulation.Simulation.restore>` needs in a snapshot
#: (and the arrays of :func:`state_arrays`).
SNAPSHOT_KEYS = ("W", "t", "steps", "dt", "counters", "mass_initial", "identity")


def state_arrays(sim) -> dict[str, tuple[int, ...]]:
    """The arrays beyond ``W`` that ``sim``'s backend keeps in a snapshot, by name, and their
    shapes (the implicit method's staggered state; none for the explicit backends)."""
    return dict(getattr(sim.backend, "snapshot_arrays", {}))


def _digest(*arrays: np.ndarray | Owned) -> str:
    """sha1 over each array's dtype and bytes in turn; an :class:`~fvswe.parallel.Owned`
    array's on rank 0, streamed from the ranks (collective; the other ranks' digest is not
    the whole run's)."""
    h = hashlib.sha1()
    for a in arrays:
        a = a if isinstance(a, Owned) else np.asarray(a)
        h.update(str(a.dtype).encode())
        if isinstance(a, Owned):
            a.update(h)
        else:
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def mesh_fingerprint(mesh) -> str:
    """A short hash of the nodes and of the cells in original order: same mesh, same hash."""
    cells = original_cells(mesh)
    return _digest(np.asarray(mesh.nodes, dtype=np.float64), np.asarray(cells, dtype=np.int64))


def boundary_fingerprint(sim) -> str:
    """A short hash of each boundary edge's condition, of the boundaries' tables and of the
    periodic tag pairs (absent: the hash of the runs from before periodic boundaries)."""
    layout = sim.layout
    arrays = [layout.edge_bc]
    pairs = getattr(sim, "periodic", None)
    if pairs:
        arrays.append(np.array(pairs, dtype=str))
    levels = getattr(layout, "levels", None)
    if levels is not None:
        arrays += [levels.edge_level, levels.offsets, levels.times, levels.values,
                   np.array(levels.names, dtype=str)]  # fmt: skip
    return _digest(*arrays)


def forcing_fingerprint(sim) -> str:
    """A short hash of the source terms: the friction law and its coefficients per cell, the
    interfacial coefficients, the Coriolis parameter per cell, the wind table, the sources,
    a slide and the sphere's metric of a lon/lat mesh."""
    lay = sim.layout
    arrays = [np.array([lay.friction_kind])]
    for values in (lay.friction_coef, lay.interfacial_coef, lay.coriolis):
        arrays.append(np.zeros(0) if values is None else values)
    if lay.wind is not None:
        w = lay.wind
        arrays += [w.times, w.u, w.v, np.array([w.law, w.cd, w.ratio])]
    if lay.sources is not None:  # (absent: the hash of the runs from before sources)
        src = lay.sources
        arrays += [src.start, src.table, src.weight, src.offsets, src.times, src.values,
                   src.layer, src.kind, np.array(src.names, dtype=str)]  # fmt: skip
    if lay.slide is not None:  # (absent: the hash of the runs from before moving beds)
        arrays.append(lay.slide.params)
    if lay.sphere is not None:  # a lon/lat mesh on the sphere (absent: a planar run's hash)
        arrays.append(lay.sphere)
    return _digest(*arrays)


def identity(sim) -> dict[str, Any]:
    """What a run continuing from ``sim``'s snapshots must share with it (JSON values). A rank
    holding its part alone: give :func:`whole_run`'s view (:func:`identified` does)."""
    settings = sim.settings
    part = getattr(sim, "part", None)  # a rank holding its part alone: the writer's fingerprint
    return {
        "cells": sim.mesh.n_cells if part is None else part.cells,
        "mesh": mesh_fingerprint(sim.mesh) if part is None else part_fingerprint(part.manifest),
        **{s.name: settings[s.name] for s in SETTINGS if s.identity},
        "boundary": boundary_fingerprint(sim),
        "forcing": forcing_fingerprint(sim),
    }


def part_fingerprint(manifest: Mapping[str, Any]) -> str:
    """The :func:`mesh_fingerprint` of a partition's mesh, which its writer stores in the
    manifest (``mesh_fingerprint``; a partition written before: its SHA-256's start, which
    no one process's identity holds)."""
    return manifest.get("mesh_fingerprint") or manifest["mesh_sha256"][:16]


def identified(sim) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``(identity, details)`` of ``sim``; on ranks holding their parts alone, the whole run's,
    equal to one process's: computed by every rank from :func:`whole_run` (the whole arrays
    streamed to rank 0's hashes, a chunk at a time) and rank 0's broadcast (collective)."""
    if getattr(sim, "part", None) is None:
        return identity(sim), details(sim)
    whole = whole_run(sim)
    found = identity(whole), details(whole)  # collective: rank 0's are the whole run's
    return sim.comm.bcast(found if sim.comm.rank == 0 else None)


def whole_run(sim) -> SimpleNamespace:
    """What :func:`identity` and :func:`details` read of a run whose ranks hold their parts
    alone, on every rank: the per-edge conditions and level indices and the per-cell
    coefficients as the ranks' owned rows (:class:`~fvswe.parallel.Owned`: hashed in global
    order, nothing gathered whole), each tag's boundary codes over the ranks' owned edges
    (``tag_codes``; collective), the global tables as they are."""
    lay, mesh, backend = sim.layout, sim.mesh, sim.backend
    n_edges = backend.part.n_owned_edges
    cells = Owned.of(sim.comm, backend.part.cells[: backend.part.n_owned], backend.n_cells)
    edges = Owned.of(sim.comm, backend.part.edges[:n_edges], backend.n_edges)

    def owned(a, of=cells):  # ``a``'s owned rows, of the cells (or ``edges``)
        return None if a is None else replace(of, rows=np.asarray(a)[: of.ids.size])

    coefficients = {key: owned(getattr(lay, key))
                    for key in ("friction_coef", "interfacial_coef", "coriolis")}  # fmt: skip
    levels = lay.levels
    if levels is not None:
        levels = replace(levels, edge_level=owned(levels.edge_level, edges))
    layout = SimpleNamespace(
        **{key: getattr(lay, key) for key in ("friction_kind", "wind", "sources", "slide")},
        sphere=lay.sphere, edge_bc=owned(lay.edge_bc, edges), levels=levels, **coefficients,
    )  # fmt: skip
    mine = _tag_codes(mesh.tags, mesh.edge_tag[:n_edges], lay.edge_bc[:n_edges],
                      mesh.edge_cells[:n_edges, 1] < 0)  # fmt: skip
    every = sim.comm.allgather(mine)
    codes = {tag: sorted(set().union(*(c.get(tag, ()) for c in every)))
             for tag in mesh.tags if any(tag in c for c in every)}  # fmt: skip
    return SimpleNamespace(part=sim.part, settings=sim.settings, layout=layout, tag_codes=codes,
                           mesh=SimpleNamespace(tags=mesh.tags),
                           periodic=getattr(sim, "periodic", ()))  # fmt: skip


def _value(values: np.ndarray | None, what: str, *given: np.ndarray) -> float | str | None:
    """A readable stand-in for an array: its value where all are equal, else ``what`` and a
    hash of it and of the arrays it is ``given`` at (a series' times)."""
    if values is None:
        return None
    if isinstance(values, Owned):  # the ranks' owned rows (collective)
        a = replace(values, rows=values.rows.astype(np.float64, copy=False))
        first = a.uniform()
    else:
        a = np.asarray(values, dtype=np.float64)
        first = float(a.flat[0]) if a.size and np.all(a == a.flat[0]) else None
    return first if first is not None else f"{what}, hash {_digest(*given, a)}"


def _forcing_details(layout) -> dict[str, Any]:
    laws = {code: name for name, code in FRICTION_KINDS.items()}
    out = {
        "friction.law": laws.get(layout.friction_kind),
        "friction.coefficient": _value(layout.friction_coef, "per cell"),
        "friction.interfacial": _value(layout.interfacial_coef, "per cell"),
        "coriolis.f": _value(layout.coriolis, "per cell"),
        "wind": None if layout.wind is None else "on",
        "sources": None if layout.sources is None else ", ".join(layout.sources.names),
    }
    if layout.slide is not None:
        out["slide"] = describe(layout.slide.params)
    w = layout.wind
    if w is not None:
        drag = {code: name for name, code in DRAG_LAWS.items()}[w.law]
        out.update({"wind.u": _value(w.u, "a series", w.times),
                    "wind.v": _value(w.v, "a series", w.times),
                    "wind.drag": w.cd if drag == "constant" else drag,
                    "wind.rho_air/rho_water": w.ratio})  # fmt: skip
    return out


def _tag_codes(tags, edge_tag, edge_bc, boundary) -> dict[str, list[int]]:
    """The condition codes on each tag's ``boundary`` edges, sorted (a tag without: absent)."""
    found = {tag: np.unique(edge_bc[(edge_tag == tid) & boundary]) for tag, tid in tags.items()}
    return {tag: [int(c) for c in codes] for tag, codes in found.items() if codes.size}


def _boundary_details(codes: Mapping[str, list[int]], layout, periodic=()) -> dict[str, Any]:
    names = {code: name for name, code in KINDS.items()}
    out = {f"boundary.{a}": f"periodic with {b!r}" for a, b in periodic}
    for tag, found in codes.items():
        out[f"boundary.{tag}"] = ", ".join(names.get(c, str(c)) for c in found)
    levels = layout.levels
    for k, name in enumerate(levels.names if levels is not None else ()):
        part = slice(levels.offsets[k], levels.offsets[k + 1])
        out[f"boundary.{name} series"] = _value(levels.values[part], "a table", levels.times[part])
    return out


def details(sim) -> dict[str, dict[str, Any]]:
    """The readable values behind the identity's fingerprints, by fingerprint key."""
    mesh, codes = sim.mesh, getattr(sim, "tag_codes", None)  # whole_run's: the ranks' merged
    if codes is None:
        codes = _tag_codes(mesh.tags, mesh.edge_tag, sim.layout.edge_bc, mesh.edge_cells[:, 1] < 0)
    return {
        "boundary": _boundary_details(codes, sim.layout, getattr(sim, "periodic", ())),
        "forcing": _forcing_details(sim.layout),
    }


def completed(saved: Mapping[str, Any]) -> dict[str, Any]:
    """A stored identity with the keys added since it was written (:data:`IDENTITY_ADDED`)."""
    return {**IDENTITY_ADDED, **saved}


#: Identity keys derived from others (``eps_h`` from the dtype and the initial depths): a
#: mismatch names one only when nothing it derives from differs.
DERIVED = ("eps_h",)


def mismatch(
    saved: Mapping[str, Any],
    now: Mapping[str, Any],
    saved_details: Mapping[str, Any] | None = None,
    now_details: Mapping[str, Any] | None = None,
    whose: str = "the checkpoint's run",
) -> str | None:
    """``key: old in the checkpoint's run, new now`` for the first key of ``now`` whose value
    differs in the stored identity ``saved`` (None: none differs); ``whose`` names where
    ``saved`` comes from. Behind a fingerprint, the first readable value of ``details`` that
    differs is named, where both sides have them. A key only ``saved`` has (written by a later
    fvswe) differs too."""
    saved = completed(saved)
    unknown = [key for key in saved if key not in now]
    if unknown:
        key = unknown[0]
        return f"{key}: {saved[key]!r} in {whose}, unknown to this fvswe"
    for key in sorted(now, key=lambda k: k in DERIVED):  # a cause before its consequence
        value, old = now[key], saved.get(key)
        if old == value or _unused(key, now):
            continue
        before = (saved_details or {}).get(key) or {}
        after = (now_details or {}).get(key) or {}
        named = [k for k in after if k in before and before[k] != after[k]]
        if named:
            key, old, value = named[0], before[named[0]], after[named[0]]
        return f"{key}: {old!r} in {whose}, {value!r} now"
    return None


def _unused(key: str, now: Mapping[str, Any]) -> bool:
    """Whether ``key`` is a setting of the other method than ``now``'s (``method`` itself is
    compared): a run keeps such a setting at its default, which may have changed since
    (θ: 0.55 until 2026-11-29), and it changes nothing in the run."""
    setting = BY_NAME.get(key)
    return setting is not None and setting.only not in ("", now.get("method", "explicit"))


def check(sim, snap: Mapping[str, Any]) -> None:
    """A one-line ConfigError unless ``snap`` belongs to ``sim``'s run and holds a valid state.

    Errors are named after ``snap["source"]`` (a checkpoint file), else "snapshot".
    """
    src = snap.get("source", "snapshot")
    missing = [key for key in SNAPSHOT_KEYS if key not in snap]
    if missing:
        raise ConfigError(f"{src}: not a snapshot of a Simulation (no {missing[0]!r})")
    differs = mismatch(snap["identity"], sim.identity(), snap.get("identity_details"), details(sim))
    if differs is not None:
        raise ConfigError(f"{src} was written by another run: {differs}")
    _check_state(src, snap, sim)
    for key, shape in state_arrays(sim).items():
        if key not in snap:
            raise ConfigError(f"{src}: not a snapshot of this run's backend (no {key!r})")
        if key == "C" and np.shape(snap[key]) == (shape[0], sim.model.nvar) != shape:
            raise ConfigError(f"{src}: state C holds a remainder per component (fvswe before "
                              f"issue 31's depth-only remainders); this run keeps one per "
                              f"layer: restart from the start or a newer checkpoint")  # fmt: skip
        _check_array(src, key, snap[key], shape, sim.dtype)
    _check_maxima(src, snap, sim)


def _check_maxima(src: str, snap: Mapping[str, Any], sim) -> None:
    """A run with maximum and arrival maps continues only the maps of a run with the same
    arrival threshold (a run without maps ignores a snapshot's)."""
    threshold = sim.layout.maxima
    if threshold is None:
        return
    if "maxima" not in snap:
        raise ConfigError(f"{src}: its run kept no maxima maps, which this run would continue; "
                          "restart without maxima, or run from the start")  # fmt: skip
    then = float(np.asarray(snap.get("maxima_threshold", np.nan)))
    if then != threshold:
        raise ConfigError(f"{src}: maxima.arrival_threshold: {then:g} in the checkpoint's run, "
                          f"{threshold:g} now")  # fmt: skip
    from .maxima import columns

    shape = (sim.mesh.n_cells, columns(sim.model.layers))
    if np.shape(snap["maxima"]) != shape:
        raise ConfigError(f"{src}: its maxima maps are {list(np.shape(snap['maxima']))}, this "
                          f"run's {list(shape)}")  # fmt: skip


def _check_array(src: str, key: str, a, shape: tuple[int, ...], dtype: str) -> None:
    """A one-line ConfigError unless ``a`` is a finite array of ``shape`` and ``dtype``."""
    a = np.asarray(a)
    if a.shape != shape or a.dtype != np.dtype(dtype):
        raise ConfigError(f"{src}: state {key} is {a.dtype}{list(a.shape)}, "
                          f"this run needs {dtype}{list(shape)}")  # fmt: skip
    bad = np.flatnonzero(~np.isfinite(a))
    if bad.size:
        raise ConfigError(f"{src}: invalid {key} = {float(a.flat[bad[0]])!r} at {bad[0]}")


def _check_state(src: str, snap: Mapping[str, Any], sim) -> None:
    """Shape, dtype and finite non-negative depths of W; time, step count and Δt; masses."""
    W, model = snap["W"], sim.model
    shape = (sim.mesh.n_cells, model.nvar)
    if W.shape != shape or W.dtype != np.dtype(sim.dtype):
        raise ConfigError(f"{src}: state W is {W.dtype}{list(W.shape)}, "
                          f"this run needs {sim.dtype}{list(shape)}")  # fmt: skip
    bad = ~np.isfinite(W)
    for c in model.depth_components:
        bad[:, c] |= W[:, c] < 0
    if bad.any():
        cell, c = np.argwhere(bad)[0]
        part = getattr(sim, "part", None)  # a part's rows: the cell's global id (run's order)
        number = cell if part is None else part.part.cells[cell]
        raise ConfigError(
            f"{src}: invalid {model.fields[c]} = {float(W[cell, c])!r} in cell {number}"
        )
    checks = {
        "t": (np.issubdtype(np.asarray(snap["t"]).dtype, np.floating)
              and math.isfinite(snap["t"]) and snap["t"] >= 0),
        "steps": np.issubdtype(np.asarray(snap["steps"]).dtype, np.integer) and snap["steps"] >= 0,
        "dt": (np.issubdtype(np.asarray(snap["dt"]).dtype, np.floating)
               and (math.isnan(snap["dt"]) or 0 < snap["dt"] < math.inf)),
        "mass_initial": (len(snap["mass_initial"]) == model.layers
                         and all(math.isfinite(m) for m in snap["mass_initial"])),
    }  # fmt: skip
    for key, ok in checks.items():
        if not ok:
            value = snap[key].item() if isinstance(snap[key], np.generic) else snap[key]
            raise ConfigError(f"{src}: invalid {key} = {value!r}")
