#!/usr/bin/env bash
# Issue 31 on the H100 (docs/GPU.md, "Float32 volume drift"): the throughput of the plain and
# the compensated float32 pipelines in one process (default variants, 2.08 M cells, Hilbert,
# test1's three two-layer schemes), then the salt-marsh tide at 1056² over 24 h compensated
# (the mass check on) and plain (the check off, for its drift). JSON under
# benchmarks/results/ (or $OUT when set). About 15 minutes in all (two 24 h tides of ~3.5 min
# each, plus compilation): run the three steps as separate commands where one is limited.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-benchmarks/results}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 benchmarks/throughput.py --backend gpu --variants default --order hilbert --sizes 2m \
    --dtypes float32 --compensated --no-whole-run --out "$out/compensated_throughput_h100.json"
python3 benchmarks/cgrid.py --cases cgrid-tide --sizes 1056 \
    --out "$out/cgrid1056_compensated_h100.json"
python3 benchmarks/cgrid.py --cases cgrid-tide --sizes 1056 --no-compensated \
    --out "$out/cgrid1056_plain_h100.json"
