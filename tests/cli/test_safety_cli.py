"""One-line errors with exit code 2 before any work; caps; signals; formula-safe CSVs."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from dpcore.cli import main

ROOT = Path(__file__).resolve().parents[2]
VAE = ["--model", "vae", "--dataset", "digits", "--rows", "200", "--latent-dim", "2", "--hidden", "8",
       "--epochs", "1", "--batch-size", "100"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "runs" / "r"
    assert main(["train", *VAE, "--out", str(out), "--json"]) == 0
    return out


def _fails(argv, capsys, match):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and match in err, err
    return err


def test_bad_out_for_train(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    _fails(["train", *VAE, "--out", ""], capsys, "--out must name a run folder")
    _fails(["train", *VAE, "--out", "/"], capsys, "--out must name a run folder")
    _fails(["train", *VAE, "--out", "afile/r"], capsys, "is a file")
    _fails(["train", *VAE, "--out", "bad\n"], capsys, "run name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_unreadable_csv(tmp_path, capsys):
    (tmp_path / "dir.csv").mkdir()
    _fails(["train", "--model", "vae", "--data", str(tmp_path / "dir.csv"), "--out", str(tmp_path / "r")],
           capsys, "is a folder")


def test_sample_arguments(run_dir, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    _fails(["sample", str(run_dir), "--seed", "-1", "--out", str(tmp_path / "s.csv")], capsys, "--seed")
    _fails(["sample", str(run_dir), "--n", "10000000000", "--out", str(tmp_path / "s.csv")], capsys,
           "DPCORE_MAX_SAMPLES")
    _fails(["sample", str(run_dir), "--out", str(tmp_path / "afile" / "s.csv")], capsys, "does not exist")
    _fails(["sample", str(run_dir), "--out", str(tmp_path / "nope" / "s.csv")], capsys, "does not exist")
    _fails(["sample", str(run_dir), "--out", str(tmp_path / "s.xlsx")], capsys, "must end in")
    assert not (tmp_path / "nope").exists()


def test_account_and_training_step_caps(tmp_path, capsys):
    _fails(["account", "--epochs", "1e12", "--json"], capsys, "DPCORE_MAX_STEPS")
    _fails(["account", "--model", "dp-vae", "--epochs", "1e12"], capsys, "DPCORE_MAX_STEPS")
    _fails(["calibrate", "--epsilon", "1", "--epochs", "1e12"], capsys, "DPCORE_MAX_STEPS")
    _fails(["account", "--batch", "0"], capsys, "--batch")
    _fails(["train", *VAE[:-2], "--batch-size", "1", "--epochs", "100000000", "--out", str(tmp_path / "r")],
           capsys, "DPCORE_MAX_STEPS")
    assert not (tmp_path / "r").exists()


def test_evaluate_report_checked_first(run_dir, tmp_path, capsys):
    t0 = time.perf_counter()
    _fails(["evaluate", str(run_dir), "--report", str(tmp_path)], capsys, "--report")
    _fails(["evaluate", str(run_dir), "--report", str(tmp_path / "nope" / "r.html")], capsys, "does not exist")
    assert time.perf_counter() - t0 < 5  # no evaluation ran


def test_synthetic_csv_neutralises_formulas(tmp_path, capsys):
    evil = ["=HYPERLINK(\"http://x\")", "@SUM(A1)", "+cmd|' /C calc'!A0", "-2+3", "\tx"]
    rows = "".join(f"{i % 5},{evil[i % 5]},{i % 2}\n" for i in range(100))
    (tmp_path / "e.csv").write_text("num,=cat,y\n" + rows)
    out = tmp_path / "runs" / "e"
    assert main(["train", "--model", "pgm", "--data", str(tmp_path / "e.csv"), "--target", "y",
                 "--pca-dim", "2", "--hidden", "8", "--epochs", "1", "--batch-size", "50",
                 "--warmup-steps", "0", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["sample", str(out), "--n", "200", "--out", str(tmp_path / "s.csv")]) == 0
    text = (tmp_path / "s.csv").read_text()
    frame = pd.read_csv(tmp_path / "s.csv", keep_default_na=False)
    assert list(frame.columns)[1] == "'=cat"
    cells = set(frame["'=cat"])
    assert any(c.startswith("'") for c in cells), cells
    assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells), cells
    assert frame["num"].dtype.kind in "if"  # numbers stay numbers
    assert "\n=" not in text and ",=" not in text and ",@" not in text
    assert main(["sample", str(out), "--n", "200", "--out", str(tmp_path / "raw.csv"), "--raw"]) == 0
    raw = pd.read_csv(tmp_path / "raw.csv", keep_default_na=False)
    assert "=cat" in raw.columns and any(str(c).startswith(("=", "@", "+", "-")) for c in raw["=cat"])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_a_cli_run_and_keeps_the_model(tmp_path, sig):
    out = tmp_path / "runs" / "s"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "dpcore", "train", *VAE[:-4], "--epochs", "500",
                             "--batch-size", "100", "--out", str(out), "--json"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        partial = [p for p in (tmp_path / "runs").glob(".s.partial-*")] if (tmp_path / "runs").exists() else []
        if partial and (partial[0] / "metrics.jsonl").exists():
            break
        time.sleep(0.1)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert json.loads(stdout)["status"] == "stopped"
    from dpcore.runs import Run

    run = Run(out)
    assert run.status()["status"] == "stopped" and run.load_model().sample(2, seed=0).n == 2
