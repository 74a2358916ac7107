"""`python -m dpcore account|calibrate`: JSON contract, human table, bad-argument exit codes."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dpcore.cli import main
from dpcore.privacy import accountant as A
from dpcore.privacy.dataset_size import with_count

ROOT = Path(__file__).resolve().parents[2]
MNIST = ["--n", "63000", "--batch", "300", "--epochs", "4"]


def run_json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_account_p3gm_json_contract(capsys):
    out = run_json(capsys, ["account", "--model", "p3gm", *MNIST, "--sgd-sigma", "1.4",
                            "--pca-sigma", "5", "--em-sigma", "100", "--em-iters", "20",
                            "--components", "1", "--delta", "1e-5"])
    assert {"epsilon", "delta", "ledger", "baseline_epsilon", "epsilon_pld"} <= set(out)
    led = A.p3gm_ledger(63000, 300, 4, 5.0, 100.0, 20, 1, 1.4)
    assert out["ledger"] == led.to_list()
    assert out["delta"] == 1e-5
    assert out["epsilon"] == pytest.approx(A.epsilon(led, 1e-5))
    assert out["baseline_epsilon"] == pytest.approx(A.baseline_epsilon(led, 1e-5))
    assert out["epsilon_pld"] == pytest.approx(A.pld_epsilon(led, 1e-5))
    assert out["epsilon_pld"] < out["epsilon"] < out["baseline_epsilon"]


def test_account_center_none_is_the_official_ledger(capsys):
    out = run_json(capsys, ["account", "--center", "none"])  # defaults: the official MNIST config
    assert [r["name"] for r in out["ledger"]] == ["dp-pca", "dp-em-weights", "dp-em-means",
                                                  "dp-em-variances", "dp-sgd"]
    assert out["epsilon"] == pytest.approx(
        A.epsilon(A.p3gm_ledger(63000, 300, 4, 5, 100, 20, 1, 1.4, center="none"), 1e-5))


def test_account_dp_vae(capsys):
    out = run_json(capsys, ["account", "--model", "dp-vae", "--sgd-sigma", "1.2", *MNIST[:4],
                            "--epochs", "10"])
    assert [r["name"] for r in out["ledger"]] == ["dp-sgd"]
    assert out["ledger"][0]["steps"] == 2100
    assert out["epsilon"] == pytest.approx(A.epsilon(A.dp_vae_ledger(63000, 300, 10, 1.2), 1e-5))


def test_calibrate_p3gm_json_contract(capsys):
    out = run_json(capsys, ["calibrate", "--model", "p3gm", "--epsilon", "1", "--delta", "1e-5",
                            "--encoder-share", "0.3", *MNIST])
    for key in ("pca_sigma", "em_sigma", "sgd_sigma", "mean_sigma"):
        assert out[key] > 0
    assert 0.98 <= out["epsilon"] <= 1.0 + 1e-9
    led = with_count()  # the run's noisy row count comes first, then the model's records
    led.extend(A.p3gm_ledger(63000, 300, 4, out["pca_sigma"], out["em_sigma"], 20, 1,
                             out["sgd_sigma"], out["mean_sigma"]))
    assert out["ledger"] == led.to_list()
    assert out["epsilon"] == pytest.approx(A.epsilon(led, 1e-5))


def test_calibrate_dp_vae(capsys):
    out = run_json(capsys, ["calibrate", "--model", "dp-vae", "--epsilon", "2", *MNIST])
    assert out["pca_sigma"] is None and out["sgd_sigma"] > 0
    assert 1.96 <= out["epsilon"] <= 2.0 + 1e-9
    assert [r["name"] for r in out["ledger"]] == ["dataset-size", "dp-sgd"]


def test_account_with_count_prepends_the_runs_count_record(capsys):
    plain = run_json(capsys, ["account"])
    out = run_json(capsys, ["account", "--with-count"])
    assert out["ledger"] == with_count().to_list() + plain["ledger"]
    assert out["epsilon"] > plain["epsilon"]


def test_human_table(capsys):
    assert main(["account"]) == 0
    text = capsys.readouterr().out
    assert "dp-sgd" in text and "epsilon (RDP, tight)" in text and "{" not in text


@pytest.mark.parametrize("argv", [
    ["calibrate", "--epsilon", "0"],
    ["calibrate", "--epsilon", "-1"],
    ["calibrate", "--epsilon", "1", "--delta", "1"],
    ["calibrate", "--epsilon", "1", "--encoder-share", "1.5"],
    ["calibrate", "--epsilon", "1", "--encoder-share", "0"],
    ["calibrate", "--epsilon", "1", "--batch", "70000"],
    ["account", "--batch", "70000"],
    ["account", "--delta", "0"],
    ["account", "--model", "dp-vae", "--pca-sigma", "3"],
])
def test_bad_arguments_exit_nonzero_with_one_line(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err and "Traceback" not in err


def test_module_entry_point_bad_argument():
    proc = subprocess.run([sys.executable, "-m", "dpcore", "calibrate", "--epsilon", "0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "epsilon" in proc.stderr
