"""A model of the GPU ranks' halo round (issue 28): measured on the device, checked against
the measured scaling runs, and used to predict 8 to 64 GPUs on one host and on several.

A GPU rank's step is its kernels on its own cells plus one halo round (docs/PARALLEL.md):
with two layers the limiter's theta exchange, the state's halo exchange (a pack kernel,
grouped NCCL send/recv with every neighbouring part, an unpack kernel) and the Δt
all-reduce, issued one after the other from Python on the rank's stream. The model::

    t_step(P)  = max(t_cells(N / P) + t_halo(P), t_issue(P))
    t_cells(n) = t0 + n / T                     (one GPU's step: fixed cost + cells / rate)
    t_halo(P)  = X · (α_x + (m − 1) α_m + B(P) / β) + K · t_k + α_r(P)

``t_halo`` with the GPU's own costs (operations replayed from a CUDA graph), ``t_issue``
the same round with the costs of issuing each operation from Python (which overlaps the
kernels still running). ``X`` exchanges (2 with two layers, 1 with one) and ``K`` their
pack/unpack launches, each costing ``t_k``; ``B(P)`` the bytes the busiest part receives
in one exchange (its halo cells times a packed row); ``α_x`` (one peer; each further peer
adds a message's ``α_m``), ``β``, ``t_k`` and the all-reduce's ``α_r`` measured by
``measure`` (NCCL between GPUs of one host); ``t0``, ``T`` fitted to one GPU's throughput
at several sizes (``benchmarks/throughput.py`` JSON); the halo cells and neighbours of the
busiest part from the actual partition (``fvswe.partition``, Hilbert: what the device's
ranks use without pymetis), scaled as ``√N`` to other mesh sizes. With the halo hidden
behind the interior's work (issue 28's overlap), the GPU's part of the step is
``max(t_cells, t_halo)`` plus the all-reduce, which stays exposed, and the step still at
least ``t_issue``; with the NCCL calls replayed from CUDA graphs too, ``t_issue`` drops
out. Several hosts: a part with a neighbour on another host pays the network's
``α``/``β`` (inputs: ``--net-alpha``, ``--net-bandwidth``) for its exchange, and the
all-reduce ``log2(hosts)`` network latencies more.

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
#: The launch measured: a kernel as small as a halo's pack of a few thousand rows.
COPY = r"""extern "C" __global__ void touch(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 1.0f;
}"""
#: Back-to-back operations timed per size (one synchronisation at the end).
REPEATS = 200
#: Part counts predicted; GPUs per host for the several-host prediction.
PARTS = (1, 2, 4, 8, 16, 32, 64)
GPUS_PER_HOST = 8


class Probe:
    """NCCL and launch timings between the ranks' GPUs, each operation issued back to back
    from Python (``issued``: what the host pays, as the halo round is issued today) and
    replayed from a CUDA graph (``device``: the GPU's own cost, what remains when nothing
    waits for Python)."""

    def __init__(self):
        import cupy as cp
        from cupy.cuda import nccl
        from mpi4py import MPI

        self.cp, self.nccl, self.MPI = cp, nccl, MPI
        self.comm = comm = MPI.COMM_WORLD
        cp.cuda.Device(comm.rank % cp.cuda.runtime.getDeviceCount()).use()
        uid = comm.bcast(nccl.get_unique_id() if comm.rank == 0 else None)
        self.nc = nccl.NcclCommunicator(comm.size, uid, comm.rank)
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.peers = sorted({(comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size}
                            - {comm.rank})  # fmt: skip

    def _seconds(self, run) -> float:
        """The slowest rank's seconds per operation of ``run()`` (REPEATS operations)."""
        self.stream.synchronize()
        self.comm.Barrier()
        start = time.perf_counter()
        run()
        self.stream.synchronize()
        return self.comm.allreduce((time.perf_counter() - start) / REPEATS, op=self.MPI.MAX)

    def timed(self, op) -> tuple[float, float]:
        """``(issued, device)`` seconds per ``op()``."""
        for _ in range(10):
            op()

        def issue():
            for _ in range(REPEATS):
                op()

        issued = self._seconds(issue)
        self.stream.begin_capture()
        issue()
        graph = self.stream.end_capture()
        graph.launch(self.stream)
        return issued, self._seconds(lambda: graph.launch(self.stream))

    def grouped(self, size: int, messages: int) -> tuple[float, float]:
        """One grouped exchange of ``messages`` pairs of ``size`` bytes over the peers."""
        cp, nccl, nc, s = self.cp, self.nccl, self.nc, self.stream.ptr
        with self.stream:
            send = [cp.ones(size // 4, cp.float32) for _ in range(messages)]
            recv = [cp.empty(size // 4, cp.float32) for _ in range(messages)]

        def op():
            nccl.groupStart()
            for k, (a, b) in enumerate(zip(send, recv, strict=True)):
                q = self.peers[k % len(self.peers)]
                nc.send(a.data.ptr, a.size, nccl.NCCL_FLOAT32, q, s)
                nc.recv(b.data.ptr, b.size, nccl.NCCL_FLOAT32, q, s)
            nccl.groupEnd()

        return self.timed(op)

    def allreduce(self) -> tuple[float, float]:
        """The Δt pair's min-reduction."""
        with self.stream:
            pair = self.cp.ones(2, self.cp.float64)
        nccl, ptr = self.nccl, pair.data.ptr
        return self.timed(lambda: self.nc.allReduce(ptr, ptr, 2, nccl.NCCL_FLOAT64,
                                                    nccl.NCCL_MIN, self.stream.ptr))  # fmt: skip

    def launch(self) -> tuple[float, float]:
        """A RawKernel launch as small as a halo's pack of a few thousand rows."""
        with self.stream:
            rows = self.cp.ones(4096, self.cp.float32)
        touch = self.cp.RawKernel(COPY, "touch")
        return self.timed(
            lambda: touch((16,), (256,), (rows, np.int32(rows.size)), stream=self.stream)
        )


def measure(args) -> None:
    """Time the exchange at each size and message count, the all-reduce and a launch, issued
    and replayed; rank 0 writes both sets with their fits."""
    probe = Probe()
    exchange = {size: probe.grouped(size, len(probe.peers)) for size in SIZES}
    messages = {k: probe.grouped(SIZES[2], k) for k in MESSAGES}
    reduce, launch = probe.allreduce(), probe.launch()
    if probe.comm.rank != 0:
        return
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    name = probe.cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    out = dict(benchmark="halo_model measure", ranks=probe.comm.size, peers=len(probe.peers),
               device=name, date=now)  # fmt: skip
    for i, how in enumerate(("issued", "device")):
        ex = {k: v[i] for k, v in exchange.items()}
        per = [v[i] for v in messages.values()]
        out[how] = dict(exchange_s={str(k): v for k, v in ex.items()}, allreduce_s=reduce[i],
                        messages_s=dict(zip(map(str, MESSAGES), per, strict=True)),
                        message_s=float(np.polyfit(MESSAGES, per, 1)[0]),
                        launch_s=launch[i], **fit_exchange(ex))  # fmt: skip
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
    """One predicted row: a run of ``cells`` cells on ``P`` GPUs (one part each). The GPU
    pays the halo round's device cost after its kernels; Python issues the round while the
    kernels still run, so the step is the longer of the two (``issued`` alone where the
    measurement has no ``device`` set)."""
    t0, rate = fit
    halo = part["halo"] * np.sqrt(cells / part["cells"])
    t_cells = t0 + cells / P / rate
    device, reduce, issued = 0.0, 0.0, 0.0
    if P > 1:
        device, reduce = halo_seconds(m.get("device", m), halo, part["peers"], P, args)
        issued = halo_seconds(m.get("issued", m), halo, part["peers"], P, args)[0]
    hidden = max(t_cells, device - reduce) + reduce
    return dict(gpus=P, hosts=-(-P // GPUS_PER_HOST), cells=int(cells), halo_cells=int(halo),
                peers=part["peers"], t_cells_us=t_cells * 1e6, t_halo_us=device * 1e6,
                t_issue_us=issued * 1e6, step_us=max(t_cells + device, issued) * 1e6,
                step_overlapped_us=max(hidden, issued) * 1e6,
                step_graphs_us=hidden * 1e6)  # fmt: skip


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
            for key in ("", "_overlapped", "_graphs"):
                r[f"speedup{key}"] = base / r[f"step{key}_us"]
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
          f"t_issue µs | {what} | overlapped | + NCCL in graphs |")  # fmt: skip
    for r in rows:
        print(f"| {r['gpus']} | {r['hosts']} | {r['halo_cells']} | {r['peers']} | "
              f"{r['t_cells_us']:.0f} | {r['t_halo_us']:.0f} | {r['t_issue_us']:.0f} | "
              f"{r['speedup']:.2f} | {r['speedup_overlapped']:.2f} | "
              f"{r['speedup_graphs']:.2f} |")  # fmt: skip


def check(args, table: dict, fit, m: dict) -> list[dict]:
    """The halo model against a ``benchmarks/scaling.py`` JSON's measured runs (same mesh),
    with that run's own one-GPU step as ``t_cells`` (the rate fitted elsewhere may come
    from another machine): the halo round and the speed-up it leaves."""
    with open(args.scaling) as f:
        runs = json.load(f)[args.scaling_key]["runs"]
    cells = table[1]["cells"]
    one = next(r for r in runs if r["ranks"] == 1)["us_per_step"] * 1e-6
    rows = []
    for r in runs:
        P = r["ranks"]
        model = step_row(P, cells, table[P], (fit[0], cells / (one - fit[0])), m, args)
        gain, hidden = one * 1e6 / model["step_us"], one * 1e6 / model["step_overlapped_us"]
        rows.append(dict(gpus=P, measured_halo_us=r["halo_us"], model_issue_us=model["t_issue_us"],
                         model_device_us=model["t_halo_us"],
                         measured_speedup=r["speedup"], model_speedup=gain,
                         model_speedup_overlapped=hidden))  # fmt: skip
        print(f"check {P} GPUs: halo round alone {r['halo_us']:.0f} µs measured, "
              f"{model['t_issue_us']:.0f} model (issued; {model['t_halo_us']:.0f} on the GPU); "
              f"speed-up {r['speedup']:.2f} measured, {gain:.2f} model ({hidden:.2f} "
              "overlapped)")  # fmt: skip
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
