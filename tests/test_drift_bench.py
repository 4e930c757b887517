"""benchmarks/drift.py end to end on the CPU: a compensated float32 run keeps its volume."""

from __future__ import annotations

import json

from fvswe.cli.bench import load

drift = load("drift.py")


def test_compensated_and_plain_rows_with_their_drift(tmp_path, capsys):
    out = tmp_path / "drift.json"
    drift.main(["--backend", "cpu", "--size", "4000", "--steps", "1000", "--warmup", "5",
                "--out", str(out)])  # fmt: skip
    doc = json.loads(out.read_text())
    rows = {r["state"]: r for r in doc["rows"]}
    comp, plain = rows["compensated"], rows["plain"]
    assert comp["compensated"] and not plain["compensated"]
    assert comp["variant"] is None  # the CPU has no kernel variant
    assert comp["steps"] == plain["steps"] == 1000 and comp["dtype"] == "float32"
    # the float32 areas' rounding only (docs/GPU.md); plain loses the sub-ulp increments
    assert max(comp["mass_rel_drift"]) < 1e-9 < max(plain["mass_rel_drift"])
    assert "error" not in comp and doc["compensation_cost"] < 1
    assert "compensation cost" in capsys.readouterr().out
