"""Run folders that are safe to overwrite, kill, share and open (findings 1-4, 7, 8)."""
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from dpcore.errors import InvalidParameter, RunError
from dpcore.jobs import train_run
from dpcore.runs import Run, RunConfig, create_run, delete_run, list_runs, rename_run
from dpcore.runs.folders import check_run_name
from dpcore.runs.liveness import RunLock

VAE = dict(latent_dim=2, hidden=8, epochs=1, batch_size=100)
DATA = {"dataset": "digits", "split_seed": 0, "n": 200}


def cfg(**kw):
    return RunConfig("vae", {**VAE, **kw}, DATA)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return train_run(cfg(), root, name="good")


def _copy(run, dest):
    import shutil

    shutil.copytree(run.path, dest)
    return dest


# ----------------------------------------------------------------------------- 1: overwrite
def test_overwrite_refuses_a_folder_that_is_not_a_run(tmp_path):
    victim = tmp_path / "precious"
    victim.mkdir()
    (victim / "thesis.txt").write_text("years of work")
    with pytest.raises(RunError, match="not a run folder"):
        train_run(cfg(), tmp_path, name="precious", overwrite=True)
    assert (victim / "thesis.txt").read_text() == "years of work"
    (tmp_path / "afile").write_text("x")
    with pytest.raises(RunError, match="not a run folder"):
        create_run(tmp_path, "afile", cfg(), overwrite=True)
    assert (tmp_path / "afile").read_text() == "x"


def test_overwrite_replaces_a_finished_run(trained, tmp_path):
    _copy(trained, tmp_path / "r")
    run = train_run(cfg(seed=3), tmp_path, name="r", overwrite=True)
    assert run.path == tmp_path / "r" and run.config.seed == 3 and run.status()["status"] == "done"
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith((".", "_"))] == ["r"]


def test_overwrite_refuses_a_run_being_trained(trained, tmp_path):
    lock = RunLock(tmp_path, "busy")
    assert lock.acquire()
    try:
        with pytest.raises(RunError, match="another process"):
            train_run(cfg(), tmp_path, name="busy", overwrite=True)
    finally:
        lock.release()


# ----------------------------------------------------------------------------- 3: partial + lock
def test_training_happens_in_a_partial_folder_moved_into_place(tmp_path):
    seen = []

    def cb(ev):
        if not seen:
            seen.append(sorted(p.name for p in tmp_path.iterdir()))
            seen.append(list_runs(tmp_path)[0])

    run = train_run(cfg(), tmp_path, cb, name="x")
    names, summary = seen
    assert "x" not in names and any(n.startswith(".x.partial-") for n in names)
    assert summary.status == "running" and summary.name.startswith("x.partial-")
    assert run.path == tmp_path / "x" and run.status()["status"] == "done"
    assert not any(p.name.startswith(".x.partial-") for p in tmp_path.iterdir())


def test_a_deleted_run_folder_is_not_recreated(tmp_path):
    import shutil

    def cb(ev):
        for p in tmp_path.iterdir():
            if p.name.startswith(".y.partial-"):
                shutil.rmtree(p)

    with pytest.raises(RunError):
        train_run(cfg(), tmp_path, cb, name="y")
    assert not any(p.is_dir() and p.name != "_locks" for p in tmp_path.iterdir())


def test_concurrent_auto_named_runs_do_not_collide(tmp_path):
    from dpcore.runs.folders import create_run as create

    made, errors = [], []

    def one():
        try:
            made.append(create(tmp_path, None, cfg()))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len({r.path for r in made}) == 24


# ----------------------------------------------------------------------------- 4: interrupted
def _status(run, **kw):
    d = json.loads((run.path / "status.json").read_text())
    d.update(kw)
    (run.path / "status.json").write_text(json.dumps(d))


def test_a_running_run_whose_process_is_gone_is_interrupted(trained, tmp_path):
    run = Run(_copy(trained, tmp_path / "k"))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    _status(run, status="running", pid=dead.pid, host=__import__("socket").gethostname(), heartbeat=time.time())
    assert run.status()["status"] == "interrupted"
    assert run.load_model().sample(3, seed=0).n == 3  # it keeps what it saved
    moved = rename_run(run.path, "k2")
    delete_run(moved.path)
    assert not moved.path.exists()


def test_a_stale_heartbeat_is_interrupted_a_fresh_one_running(trained, tmp_path):
    run = Run(_copy(trained, tmp_path / "s"))
    _status(run, status="running", pid=os.getpid(), host=__import__("socket").gethostname(),
            heartbeat=time.time() - 3600)
    assert run.status()["status"] == "interrupted"
    _status(run, heartbeat=time.time())
    assert run.status()["status"] == "running"
    with pytest.raises(RunError, match="still running"):
        delete_run(run.path)
    d = json.loads((run.path / "status.json").read_text())  # written by an older version
    (run.path / "status.json").write_text(json.dumps({k: v for k, v in d.items()
                                                      if k not in ("pid", "host", "heartbeat")}))
    assert run.status()["status"] == "interrupted"


# ----------------------------------------------------------------------------- 8: names
@pytest.mark.parametrize("bad", ["run\n", "", ".", "..", "a/b", "-x", "x" * 129])
def test_bad_run_names(bad):
    with pytest.raises(InvalidParameter):
        check_run_name(bad)


def test_default_name_from_an_odd_csv_file_name(tmp_path):
    path = tmp_path / "mes données 2024 (v2).csv"
    path.write_text("a,b,y\n" + "".join(f"{i % 7},{i % 3},{i % 2}\n" for i in range(60)))
    c = RunConfig("vae", VAE, {"csv": str(path), "target": "y"})
    check_run_name(c.default_name())
    assert create_run(tmp_path / "runs", None, c).path.is_dir()


def test_deleting_a_symlinked_run_is_refused(trained, tmp_path):
    real = _copy(trained, tmp_path / "real")
    (tmp_path / "runs").mkdir()
    link = tmp_path / "runs" / "link"
    link.symlink_to(real)
    with pytest.raises(RunError, match="symbolic link"):
        delete_run(link)
    assert (real / "config.json").is_file()


# ----------------------------------------------------------------------------- 7: uploads
def test_uploads_are_absolute_and_go_with_their_last_run(tmp_path, monkeypatch):
    from dpcore.runs.uploads import store_upload

    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.chdir(tmp_path)
    table = ("a,b,y\n" + "".join(f"{i % 7},{i % 3},{i % 2}\n" for i in range(240))).encode()
    path = store_upload("runs", table, "my table.csv")  # a relative root, as the app's default
    assert path.is_absolute() and path.parent == (root / "_uploads").resolve()
    c = RunConfig("vae", VAE, {"csv": str(path), "target": "y"})
    r1, r2 = (train_run(c, "runs", name=n).path.resolve() for n in ("u1", "u2"))
    monkeypatch.chdir(root.parent.parent)  # evaluate from another folder
    assert Run(r1).load_data()[0].n > 0
    delete_run(r1)
    assert path.exists()  # u2 still uses it
    delete_run(r2)
    assert not path.exists()
    assert not any((root / "_uploads" / ".index").glob("[0-9a-f]*"))  # no digest of a deleted table is kept
