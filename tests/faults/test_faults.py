"""Fault injection: kill -9 / SIGTERM of a CLI `train` at random points, concurrent writers on one
run, concurrent auto-named runs, tampered and truncated folders. After each, the store is
consistent: nothing reported as good that is not, nothing lost that had been saved.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dpcore.errors import DPCoreError
from dpcore.runs import Run, list_runs

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ["-m", "dpcore", "train", "--model", "vae", "--dataset", "digits", "--rows", "300",
         "--latent-dim", "2", "--hidden", "8", "--batch-size", "50", "--no-progress"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
GOOD = ("done", "stopped")


def _train(out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *TRAIN, "--out", str(out), *extra], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _check_store(root: Path) -> dict:
    """Every listed run is consistent: a good status has a loadable model and a complete ledger; a
    running one has a live process. Returns {name: status}."""
    out = {}
    for s in list_runs(root):
        run = Run(s.path)
        st = run.status()["status"]
        assert st != "running", f"{s.name} reads as running but its process is gone"
        if st in GOOD:
            assert run.has_model() and run.load_model().sample(2, seed=0).n == 2
            assert run.ledger() is not None and run.metrics()
        out[s.name] = st
    return out


def _partial(root: Path) -> set[Path]:
    """The folders of runs being written (or left by a kill) under `root`."""
    return set(root.glob(".*.partial-*"))


def _wait_for_metrics(root: Path, before: set[Path] = frozenset(), timeout: float = 60) -> None:
    """Until a run being written under `root` has logged a step; `before`: the folders there before
    its process started (a folder an earlier kill left has metrics already: SIGKILL's second moment
    had come while the new process was still starting)."""
    end = time.time() + timeout
    while time.time() < end:
        if any((p / "metrics.jsonl").exists() for p in _partial(root) - before):
            return
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_train_leaves_a_consistent_store(tmp_path, sig):
    rng = random.Random(int(sig))
    root = tmp_path / "runs"
    from dpcore.cli import main

    assert main([*TRAIN[2:], "--out", str(root / "keep"), "--epochs", "1"]) == 0  # the saved run: the CLI in-process
    for i in range(2):  # two random moments per signal (the edited-folder suite covers the files)
        before = _partial(root)
        proc = _train(root / "keep", "--epochs", "3000", "--overwrite", "--seed", str(i + 1))
        _wait_for_metrics(root, before)
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(sig)
        proc.wait(60)
        state = _check_store(root)
        keep = Run(root / "keep")
        assert keep.status()["status"] in GOOD  # the saved run is never lost
        if sig == signal.SIGKILL:
            assert keep.config.seed == 0 and keep.status()["status"] == "done"  # old run untouched
            assert any(v == "interrupted" for v in state.values())
        else:  # SIGTERM stops like the Stop button: a "stopped" run with its model replaces it
            assert proc.returncode == 0 and keep.config.seed == i + 1
            assert keep.status()["status"] == "stopped"
    # an interrupted run can be deleted
    from dpcore.runs import delete_run

    for s in list_runs(root):
        if s.status == "interrupted":
            delete_run(s.path)
    assert set(_check_store(root)) == {"keep"}


def test_concurrent_writers_on_one_run(tmp_path):
    root = tmp_path / "runs"
    a = _train(root / "same", "--epochs", "3000", "--seed", "1")
    _wait_for_metrics(root)
    b = _train(root / "same", "--epochs", "1", "--seed", "2", "--overwrite")
    _, err_b = b.communicate(timeout=120)
    assert b.returncode == 2 and "another process" in err_b and err_b.count("\n") == 1
    a.send_signal(signal.SIGTERM)
    a.wait(60)
    run = Run(root / "same")
    assert run.config.seed == 1 and run.status()["status"] == "stopped"
    steps = [json.loads(line)["step"] for line in (run.path / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, len(steps) + 1))  # one run's steps, not a mix of two
    _check_store(root)


def test_concurrent_auto_named_runs(tmp_path):
    from dpcore.runs import RunConfig, create_run

    cfg = RunConfig("vae", {"latent_dim": 2, "hidden": 8, "epochs": 1}, {"dataset": "digits"})
    with ThreadPoolExecutor(16) as pool:
        runs = list(pool.map(lambda _: create_run(tmp_path, None, cfg), range(80)))
    assert len({r.path for r in runs}) == 80


def test_tampered_and_truncated_folders_are_listed_unreadable_or_refused(tmp_path, capsys):
    from dpcore.cli import main

    root = tmp_path / "runs"
    assert main([*TRAIN[2:], "--out", str(root / "good"), "--epochs", "1"]) == 0
    import shutil

    for name, damage in [("trunc", lambda p: (p / "config.json").write_text('{"model": "va')),
                         ("nomodel", lambda p: shutil.rmtree(p / "model")),
                         ("halfweights", lambda p: (p / "model" / "weights.safetensors").write_bytes(b"\0" * 10)),
                         ("badstatus", lambda p: (p / "status.json").write_text('{"status": 3}'))]:
        shutil.copytree(root / "good", root / name)
        damage(root / name)
    listed = {s.name: s.status for s in list_runs(root)}
    assert listed["trunc"].startswith("unreadable: config.json: ") and listed["good"] == "done"
    assert listed["badstatus"].startswith("unreadable: status.json: ")
    for name in ("nomodel", "halfweights"):
        with pytest.raises(DPCoreError):
            Run(root / name).load_model()
    from dpcore.cli import main

    assert main(["sample", str(root / "halfweights"), "--n", "5", "--out", str(tmp_path / "s.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
