"""`train --out NAME` lands in the runs folder; `runs prune` clears interrupted partial folders only."""
import json
import os

import pytest

from dpcore.cli import main
from dpcore.runs import list_runs
from dpcore.runs.liveness import RunLock

VAE = ["--model", "vae", "--dataset", "digits", "--rows", "200", "--latent-dim", "2", "--hidden", "8",
       "--epochs", "1", "--batch-size", "100"]


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    root = tmp_path / "store"
    monkeypatch.setenv("DPCORE_RUNS_DIR", str(root))
    monkeypatch.chdir(tmp_path)
    return root


def test_a_bare_out_name_goes_to_the_runs_folder(runs, tmp_path):
    assert main(["train", *VAE, "--out", "plain"]) == 0
    assert (runs / "plain" / "config.json").is_file() and not (tmp_path / "plain").exists()


def _partial(root, name, pid):
    p = root / f".{name}.partial-abc{pid}"
    p.mkdir(parents=True)
    (p / "config.json").write_text(json.dumps({"model": "vae", "params": {}, "data": {"dataset": "digits"},
                                               "name": name}))
    (p / "status.json").write_text(json.dumps({"status": "running", "pid": pid, "host": os.uname().nodename,
                                               "heartbeat": 0}))
    return p


def test_prune_removes_interrupted_partials_only(runs, capsys):
    assert main(["train", *VAE, "--out", "kept"]) == 0
    dead = _partial(runs, "dead", 2**22 + 7)
    live = _partial(runs, "busy", os.getpid())
    statuses = {s.name: s.status for s in list_runs(runs)}
    assert statuses[dead.name[1:]] == "interrupted"
    capsys.readouterr()
    assert main(["runs", "prune"]) == 2  # no terminal to ask: --yes is needed
    assert "add --yes" in capsys.readouterr().err and dead.exists()
    with RunLock(runs, "busy"):  # a process still trains "busy": never touched
        assert main(["runs", "prune", "--yes", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["removed"] == [dead.name[1:]] and not dead.exists() and live.exists()
    assert (runs / "kept" / "config.json").is_file()
    assert main(["runs", "prune", "--yes"]) == 0  # "busy" is unlocked now: it goes too
    assert not live.exists() and {s.name for s in list_runs(runs)} == {"kept"}
