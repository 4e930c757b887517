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


GUIDE = ROOT / "docs" / "guide" / "two-layer.md"
#: The guide's runs, shortened: a run without --t-end gets this one (s), and the times given
#: to --t-end and --checkpoint-every are divided by SHORTER.
T_END, SHORTER = 4.0, 300.0


def _guide_commands() -> list[str]:
    """The command lines of the guide's ``bash`` blocks, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def _shortened(argv: list[str]) -> list[str]:
    """A ``run``'s arguments with its times shortened (:data:`T_END`, :data:`SHORTER`)."""
    if argv[0] != "run":
        return argv
    out = list(argv)
    for k, arg in enumerate(out[:-1]):
        if arg in ("--t-end", "--checkpoint-every"):
            out[k + 1] = repr(float(out[k + 1]) / SHORTER)
    return out if "--t-end" in out else [*out, "--t-end", repr(T_END), "-q"]


def test_the_two_layer_guide_runs_as_written(tmp_path, monkeypatch, capsys):
    """Issue 32, item 10: every command of docs/guide/two-layer.md in a copy of examples/,
    in order (gmsh only where it is installed; a ``> FILE`` redirect kept), the runs
    shortened and probes.png left empty; then the files the guide names are there, the
    mesh's groups are those it shows, and the checkpointed run restarted to a later t_end
    has continued its section record from t = 0. (The two-layer template runs in
    tests/test_casefile.py.)"""
    import shlex
    import shutil
    import subprocess

    from fvswe.cli import main
    from fvswe.probes import Probes

    monkeypatch.setattr(Probes, "plot", lambda self, path: open(path, "wb").close())  # speed
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    commands = _guide_commands()
    assert sum(c.startswith("fvswe run") for c in commands) == 3
    for line in commands:
        command, _, redirect = line.partition(">")
        argv = shlex.split(command)
        if argv[0] == "gmsh":
            if shutil.which("gmsh"):
                subprocess.run(argv, check=True, capture_output=True)
            continue
        assert argv[0] == "fvswe", line
        capsys.readouterr()
        assert main(_shortened(argv[1:])) == 0, line
        if redirect:
            Path(redirect.strip()).write_text(capsys.readouterr().out, encoding="utf-8")
        elif argv[1:3] == ["mesh", "info"]:
            assert "river 8, sea 8, shore 80" in capsys.readouterr().out
    assert "layers = 2" in Path("my_channel.toml").read_text(encoding="utf-8")
    channel = tmp_path / "out" / "channel"
    for name in ("solution.xdmf", "gauges.csv", "sections.csv", "maxima.xdmf", "maxima.h5"):
        assert (channel / name).is_file(), name
    rows = (tmp_path / "out" / "long" / "sections.csv").read_text().splitlines()
    assert rows[1].startswith("0.0,sill_crest,") and rows[-1].startswith("12.0,sill_crest,")
