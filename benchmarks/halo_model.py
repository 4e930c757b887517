"""A model of the GPU ranks' halo round (issue 28): measured on the device, checked against
the measured scaling runs, and used to predict 8 to 64 GPUs on one host and on several.

A GPU rank's step is its kernels on its own cells plus one halo round (docs/PARALLEL.md):
with two layers the limiter's theta exchange, the state's halo exchange (a pack kernel,
grouped NCCL send/recv with every neighbouring part, an unpack kernel) and the Δt
all-reduce, issued one after the other from Python on the rank's stream. The model::

    t_step(P)  = t_cells(N / P) + t_halo(P)
    t_cells(n) = t0 + n / T                     (one GPU's step: fixed cost + cells / rate)
    t_halo(P)  = X · (α_x + (m − 1) α_m + B(P) / β) + K · t_k + α_r(P)

``X`` exchanges (2 with two layers, 1 with one) and ``K`` their pack/unpack launches, each
costing ``t_k``; ``B(P)`` the bytes the busiest part receives in one exchange (its halo
cells times a packed row); ``α_x`` (one peer; each further peer adds a message's ``α_m``),
``β``, ``t_k`` and the all-reduce's ``α_r`` measured by ``measure`` (NCCL between GPUs of
one host); ``t0``, ``T`` fitted to one GPU's throughput at
several sizes (``benchmarks/throughput.py`` JSON); the halo cells and neighbours of the
busiest part from the actual partition (``fvswe.partition``, Hilbert: what the device's
ranks use without pymetis), scaled as ``√N`` to other mesh sizes. With the halo hidden
behind the interior's work (issue 28's overlap), ``t_step = max(t_cells, t_halo)`` plus the
all-reduce, which stays exposed. Several hosts: a part with a neighbour on another host
pays the network's ``α``/``β`` (inputs: ``--net-alpha``, ``--net-bandwidth``) for its
exchange, and the all-reduce ``log2(hosts)`` network latencies more.

    mpirun -n 2 python3 benchmarks/halo_model.py measure --out nccl.json    # one GPU a rank
    python3 benchmarks/halo_model.py predict --nccl nccl.json --throughput tp.json \\
        --scaling benchmarks/results/scaling_gpu_h200x4_block_strong.json --json model.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import time

import numpy as np

#: Message sizes of the exchange measurement (bytes): 256 B to 16 MiB.
SIZES = [256 * 4**k for k in range(8)]
#: Messages in one grouped exchange (of SIZES[2] bytes each): the cost of a further peer.
MESSAGES = (1, 2, 4, 8)
#: Back-to-back operations timed per size (one synchronisation at the end).
REPEATS = 200
#: Part counts predicted; GPUs per host for the several-host prediction.
PARTS = (1, 2, 4, 8, 16, 32, 64)
GPUS_PER_HOST = 8


def measure(args) -> None:
    """Time grouped NCCL send/recv with the ring neighbours at each size, the all-reduce of
    two doubles and a small kernel launch, each issued back to back from Python on one
    stream (as the halo round is); rank 0 writes the slowest rank's seconds per operation."""
    import cupy as cp
    from cupy.cuda import nccl
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    cp.cuda.Device(comm.rank % cp.cuda.runtime.getDeviceCount()).use()
    uid = comm.bcast(nccl.get_unique_id() if comm.rank == 0 else None)
    nc = nccl.NcclCommunicator(comm.size, uid, comm.rank)
    stream = cp.cuda.Stream(non_blocking=True)
    peers = sorted({(comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size} - {comm.rank})

    def timed(op) -> float:
        for _ in range(10):
            op()
        stream.synchronize()
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(REPEATS):
            op()
        stream.synchronize()
        return comm.allreduce((time.perf_counter() - start) / REPEATS, op=MPI.MAX)

    def grouped(size: int, messages: int):
        """One grouped exchange of ``messages`` pairs of ``size`` bytes, over the peers."""
        with stream:
            send = [cp.ones(size // 4, cp.float32) for _ in range(messages)]
            recv = [cp.empty(size // 4, cp.float32) for _ in range(messages)]

        def op():
            nccl.groupStart()
            for k, (s, r) in enumerate(zip(send, recv, strict=True)):
                q = peers[k % len(peers)]
                nc.send(s.data.ptr, s.size, nccl.NCCL_FLOAT32, q, stream.ptr)
                nc.recv(r.data.ptr, r.size, nccl.NCCL_FLOAT32, q, stream.ptr)
            nccl.groupEnd()

        return timed(op)

    exchange = {size: grouped(size, len(peers)) for size in SIZES}
    messages = {k: grouped(SIZES[2], k) for k in MESSAGES}
    with stream:
        pair = cp.ones(2, cp.float64)
        rows = cp.ones(4096, cp.float32)
    reduce_s = timed(
        lambda: nc.allReduce(
            pair.data.ptr, pair.data.ptr, 2, nccl.NCCL_FLOAT64, nccl.NCCL_MIN, stream.ptr
        )  # fmt: skip
    )

    def launch():
        with stream:
            cp.multiply(rows, 1.0, out=rows)

    launch_s = timed(launch)
    if comm.rank == 0:
        out = dict(benchmark="halo_model measure", ranks=comm.size, peers=len(peers),
                   device=cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                   date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   exchange_s={str(k): v for k, v in exchange.items()}, allreduce_s=reduce_s,
                   messages_s={str(k): v for k, v in messages.items()},
                   message_s=float(np.polyfit(MESSAGES, list(messages.values()), 1)[0]),
                   launch_s=launch_s, **fit_exchange(exchange))  # fmt: skip
        print(json.dumps(out, indent=1))
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


def fit_exchange(exchange: dict) -> dict:
    """Least squares of ``t = α + bytes / β`` over the measured sizes."""
    b = np.array([float(k) for k in exchange])
    t = np.array(list(exchange.values()))
    slope, alpha = np.polyfit(b, t, 1)
    return {"alpha_s": float(alpha), "bandwidth_Bps": float(1.0 / slope)}


def fit_cells(throughput: dict, scheme: str, dtype: str) -> tuple[float, float]:
    """``(t0, T)`` of ``t_cells(n) = t0 + n / T`` fitted to one GPU's steps at several sizes
    (the fastest variant at each size in a ``benchmarks/throughput.py`` JSON)."""
    best: dict[int, float] = {}
    for r in throughput["results"]:
        if r["scheme"] == scheme and r["dtype"] == dtype:
            t = r["cells"] / r["cell_steps_per_s"]
            best[r["cells"]] = min(best.get(r["cells"], t), t)
    n = np.array(sorted(best), dtype=float)
    slope, t0 = np.polyfit(n, np.array([best[int(k)] for k in n]), 1)
    return max(float(t0), 0.0), float(1.0 / slope)


def partition_table(mesh_name: str, parts: tuple[int, ...]) -> dict[int, dict]:
    """The busiest part's halo cells and neighbour count for each part count (Hilbert)."""
    from fvswe.mesh import family
    from fvswe.partition import assign, split

    mesh = family(mesh_name)
    table = {}
    for p in parts:
        if p == 1:
            table[p] = {"halo": 0, "peers": 0, "cells": mesh.n_cells}
            continue
        split_parts = split(mesh, assign(mesh, p, "hilbert"))
        halo, peers = max(q.n_halo for q in split_parts), max(len(q.peers) for q in split_parts)
        table[p] = {"halo": halo, "peers": peers, "cells": mesh.n_cells}
        print(f"  {p} parts: halo {table[p]['halo']}, peers {table[p]['peers']}", flush=True)
    return table


def halo_seconds(m: dict, halo: float, peers: int, P: int, args) -> tuple[float, float]:
    """``(t_halo, its all-reduce)`` of the busiest of ``P`` parts, ``halo`` halo cells and
    ``peers`` neighbours (each beyond the first adds a message's cost to an exchange; the
    all-reduce grows as log2 of the GPUs on a host, then by a network latency per doubling
    of the hosts)."""
    hosts = -(-P // GPUS_PER_HOST)
    itemsize = 4 if args.dtype == "float32" else 8
    exchanges = [halo * args.row_values * itemsize]  # the state's packed rows
    if args.layers == 2:
        exchanges.append(halo * 8)  # the limiter's theta (double) per halo cell
    alpha, beta = m["alpha_s"], m["bandwidth_Bps"]
    if hosts > 1:  # the busiest part has a neighbour on another host
        alpha, beta = max(alpha, args.net_alpha), min(beta, args.net_bandwidth)
    reduce = m["allreduce_s"] * max(np.log2(min(P, GPUS_PER_HOST)), 1.0)
    reduce += args.net_alpha * np.log2(hosts)
    sends = sum(alpha + (peers - 1) * m["message_s"] + b / beta for b in exchanges)
    return float(sends + 2 * len(exchanges) * m["launch_s"] + reduce), float(reduce)


def step_row(P: int, cells: float, part: dict, fit: tuple[float, float], m: dict, args) -> dict:
    """One predicted row: a run of ``cells`` cells on ``P`` GPUs (one part each)."""
    t0, rate = fit
    hosts = -(-P // GPUS_PER_HOST)
    halo = part["halo"] * np.sqrt(cells / part["cells"])
    t_cells = t0 + cells / P / rate
    t_halo, t_reduce = halo_seconds(m, halo, part["peers"], P, args) if P > 1 else (0.0, 0.0)
    hidden = max(t_cells, t_halo - t_reduce) + t_reduce if P > 1 else t_cells
    return dict(gpus=P, hosts=hosts, cells=int(cells), halo_cells=int(halo), peers=part["peers"],
                t_cells_us=t_cells * 1e6, t_halo_us=t_halo * 1e6, step_us=(t_cells + t_halo) * 1e6,
                step_overlapped_us=hidden * 1e6)  # fmt: skip


def predict(args) -> None:
    """Predicted strong (``--cells``) and weak (``--weak`` cells a GPU) scaling, checked
    against the measured runs of ``--scaling``."""
    with open(args.nccl) as f:
        m = json.load(f)
    with open(args.throughput) as f:
        fit = fit_cells(json.load(f), args.scheme, args.dtype)
    table = partition_table(args.mesh, PARTS)
    out = dict(inputs=dict(nccl=m, t0_us=fit[0] * 1e6, rate_G=fit[1] / 1e9, settings=vars(args)))
    cases = [(f"strong {c:.0f}", lambda P, c=c: c, lambda P, c=c: c) for c in args.cells]
    cases.append((f"weak {args.weak:.0f}", lambda P: args.weak * P, lambda P: args.weak))
    for label, total, alone in cases:
        rows = []
        for P in PARTS:
            r = step_row(P, total(P), table[P], fit, m, args)
            base = step_row(1, alone(P), table[1], fit, m, args)["step_us"]
            r["speedup"], r["speedup_overlapped"] = (base / r["step_us"],
                                                     base / r["step_overlapped_us"])  # fmt: skip
            rows.append(r)
        out[label] = rows
        print_rows(label, rows)
    if args.scaling:
        out["check"] = check(args, table, fit, m)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


def print_rows(label: str, rows: list[dict]) -> None:
    what = "efficiency" if label.startswith("weak") else "speed-up"
    print(f"\n{label}: | GPUs | hosts | halo cells | peers | t_cells µs | t_halo µs | "
          f"{what} | overlapped |")  # fmt: skip
    for r in rows:
        print(f"| {r['gpus']} | {r['hosts']} | {r['halo_cells']} | {r['peers']} | "
              f"{r['t_cells_us']:.0f} | {r['t_halo_us']:.0f} | {r['speedup']:.2f} | "
              f"{r['speedup_overlapped']:.2f} |")  # fmt: skip


def check(args, table: dict, fit, m: dict) -> list[dict]:
    """The model against a ``benchmarks/scaling.py`` JSON's measured runs (same mesh)."""
    with open(args.scaling) as f:
        runs = json.load(f)[args.scaling_key]["runs"]
    cells = table[1]["cells"]
    one = next(r for r in runs if r["ranks"] == 1)["us_per_step"]
    rows = []
    for r in runs:
        P = r["ranks"]
        model = step_row(P, cells, table[P], fit, m, args)
        rows.append(dict(gpus=P, measured_halo_us=r["halo_us"], model_halo_us=model["t_halo_us"],
                         measured_speedup=r["speedup"],
                         model_speedup=step_row(1, cells, table[1], fit, m, args)["step_us"]
                         / model["step_us"], measured_one_gpu_us=one,
                         model_one_gpu_us=model["t_cells_us"] * P))  # fmt: skip
        print(f"check {P} GPUs: halo {r['halo_us']:.0f} µs measured, {model['t_halo_us']:.0f} "
              f"model; speed-up {r['speedup']:.2f} measured, {rows[-1]['model_speedup']:.2f} "
              "model")  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    mp = sub.add_parser("measure")
    mp.add_argument("--out", default="nccl.json")
    pp = sub.add_parser("predict")
    pp.add_argument("--nccl", required=True, help="the measure JSON")
    pp.add_argument("--throughput", required=True, help="benchmarks/throughput.py JSON, sizes")
    pp.add_argument("--scheme", default="pvm-ifcp")
    pp.add_argument("--dtype", default="float32")
    pp.add_argument("--layers", type=int, default=2)
    pp.add_argument("--row-values", type=int, default=8, help="values in a packed halo row")
    pp.add_argument("--mesh", default="square-8m", help="the mesh partitioned for halo sizes")
    pp.add_argument("--cells", type=float, nargs="+", default=[8322240, 33288960])
    pp.add_argument("--weak", type=float, default=2080560, help="cells a GPU, weak scaling")
    pp.add_argument("--net-alpha", type=float, default=10e-6, help="network latency (s)")
    pp.add_argument("--net-bandwidth", type=float, default=25e9, help="network (bytes/s)")
    pp.add_argument("--scaling", default="", help="a benchmarks/scaling.py JSON to check")
    pp.add_argument("--scaling-key", default="pvm_ifcp")
    pp.add_argument("--json", default="")
    args = parser.parse_args()
    measure(args) if args.command == "measure" else predict(args)


if __name__ == "__main__":
    main()
