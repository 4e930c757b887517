"""The README's library quickstart (docs/quickstart.py) runs as written and does what it says."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest
from meshio.xdmf import TimeSeriesReader

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "docs" / "quickstart.py"


def test_quickstart_runs_and_writes_a_series_and_a_picture(tmp_path, monkeypatch, capsys):
    import matplotlib.image

    monkeypatch.chdir(tmp_path)
    names = runpy.run_path(str(QUICKSTART), run_name="__main__")
    out = tmp_path / "quickstart-out"
    sim = names["sim"]
    assert sim.t == 4.0 and sim.steps > 0
    assert re.match(r"t = 4\.0 s, \d+ steps on (cpu|gpu); interface from", capsys.readouterr().out)
    fields = sim.fields()
    ahead = (fields["x"] > 10) & (fields["x"] < 12)
    assert fields["h1"][ahead].mean() > 0.7  # the light upper layer has run east over the lock
    assert min(fields["h1"].min(), fields["h2"].min()) > 0
    with TimeSeriesReader(out / "solution.xdmf") as reader:
        reader.read_points_cells()
        times = [reader.read_data(k)[0] for k in range(reader.num_steps)]
    assert times == [0.0, 1.0, 2.0, 3.0, 4.0]
    image = matplotlib.image.imread(out / "lock-exchange.png")
    assert image[..., :3].std() > 0.05


def test_readme_shows_the_quickstart_word_for_word():
    readme = ROOT / "README.md"
    if not readme.is_file():
        pytest.skip("no README.md")
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), flags=re.DOTALL)
    assert QUICKSTART.read_text() in blocks, "paste docs/quickstart.py into README.md"
