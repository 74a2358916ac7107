"""Run folders and the runner on digits: files, ε, reproducibility, stop, failure, sweeps."""
import json
import math
import threading

import numpy as np
import pytest

from dpcore.errors import InvalidParameter, RunError
from dpcore.jobs import start_training, train_run
from dpcore.privacy.accountant import epsilon as accountant_epsilon
from dpcore.runs import Run, RunConfig, create_run, delete_run, list_runs, rename_run

P3GM = dict(pca_dim=8, hidden=32, epochs=1, batch_size=100, warmup_steps=5)
DATA = {"dataset": "digits", "split_seed": 0}


def cfg(model="p3gm", **kw):
    params = {**(P3GM if model == "p3gm" else dict(latent_dim=4, hidden=16, epochs=1, batch_size=100)), **kw}
    return RunConfig(model, params, DATA)


@pytest.fixture(scope="module")
def done_run(tmp_path_factory):
    return train_run(cfg(), tmp_path_factory.mktemp("runs"), name="first")


def test_run_folder_contents(done_run):
    p = done_run.path
    for f in ("config.json", "status.json", "metrics.jsonl", "ledger.json", "model/model.json",
              "model/weights.safetensors"):
        assert (p / f).is_file(), f
    conf = json.loads((p / "config.json").read_text())
    assert conf["model"] == "p3gm" and conf["seed"] == 0 and conf["data"]["dataset"] == "digits"
    # defaults filled, digits' ε from its public size (params.EPSILON_BY_SIZE: 10 under 3 000 rows)
    assert conf["params"]["epsilon"] == 10.0 and "encoder_share" in conf["params"]
    st = done_run.status()
    assert st["status"] == "done" and st["created"] and st["finished"] and st["message"] is None
    metrics = done_run.metrics()
    assert len(metrics) == st["step"] and metrics[-1]["step"] == metrics[-1]["total_steps"]


def test_run_epsilon_is_the_accountants(done_run):
    eps = done_run.epsilon
    assert eps == accountant_epsilon(done_run.ledger(), done_run.delta)
    assert done_run.delta == 1e-5 and 9.0 < eps <= 10.0 + 1e-6
    assert done_run.metrics()[-1]["epsilon"] == pytest.approx(eps)


def test_same_config_same_run_only_with_reproducible_noise(done_run, tmp_path):
    """The mechanism noise is secret: the same config and seed train another private model; the
    debug mode `reproducible_noise` repeats the run exactly and its ledger says so."""
    again = train_run(cfg(), tmp_path, name="again")
    assert not np.array_equal(done_run.load_model().sample(30, seed=5).features,
                              again.load_model().sample(30, seed=5).features)
    x, y = (train_run(cfg(reproducible_noise=True), tmp_path, name=n) for n in ("x", "y"))
    np.testing.assert_array_equal(x.load_model().sample(30, seed=5).features,
                                  y.load_model().sample(30, seed=5).features)
    assert [m["losses"] for m in x.metrics()] == [m["losses"] for m in y.metrics()]
    assert x.ledger().reproducible_noise and not done_run.ledger().reproducible_noise


def test_stopped_run_is_loadable(tmp_path):
    run = train_run(cfg(), tmp_path, lambda ev: not (ev.phase == "sgd" and ev.step >= 12), name="stopped")
    assert run.status()["status"] == "stopped"
    again = Run.load(run.path)
    assert again.load_model().sample(4, seed=0).n == 4
    assert again.epsilon == accountant_epsilon(again.ledger(), again.delta) < 10.0


def test_background_training_and_stop(tmp_path):
    got = []
    h = start_training(cfg("vae", epochs=200), tmp_path, on_event=got.append)
    for _ in range(600):
        if len(h.events()) > 5:
            break
        threading.Event().wait(0.05)
    h.stop()
    assert h.join(60)
    assert h.status == "stopped" and h.error is None
    run = h.run
    assert run.status()["status"] == "stopped" and math.isinf(run.epsilon)
    evs = h.events()
    assert evs and evs[0]["run"] == run.name and len(got) == len(evs)
    assert h.events(len(evs)) == []
    assert run.load_model().sample(3, seed=0).n == 3


def test_nan_loss_fails_the_run_with_one_line(tmp_path, monkeypatch):
    import torch

    from dpcore.models import networks

    def nan_loss(logits, x, *a, **k):
        return (logits * float("nan")).sum(1)

    monkeypatch.setattr(networks, "recon_per_example", nan_loss)
    with pytest.raises(RunError, match="NaN|nan"):
        train_run(cfg("vae"), tmp_path, name="bad")
    run = Run.load(tmp_path / "bad")
    st = run.status()
    assert st["status"] == "failed" and "\n" not in st["message"] and "nan" in st["message"].lower()
    assert torch is not None


def test_bad_configs_make_no_folder(tmp_path):
    with pytest.raises(InvalidParameter, match="unknown model"):
        train_run(RunConfig("nope", {}, DATA), tmp_path)
    with pytest.raises(InvalidParameter, match="epsilon"):
        train_run(cfg(epsilon=0), tmp_path)
    with pytest.raises(InvalidParameter, match="pca_dim"):
        train_run(cfg(pca_dim=100), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_list_rename_delete_and_sweeps(tmp_path):
    h = start_training([cfg("vae", seed=0), cfg("vae", seed=1)], tmp_path)
    assert h.join(120) and h.status == "done"
    runs = h.runs
    assert len(runs) == 2
    names = {s.name for s in list_runs(tmp_path)}
    assert names == {r.name for r in runs}
    summary = list_runs(tmp_path)[0]
    assert summary.status == "done" and summary.model == "vae" and math.isinf(summary.epsilon)
    moved = rename_run(runs[0].path, "renamed")
    assert moved.name == "renamed" and moved.config.name == "renamed" and moved.has_model()
    delete_run(moved.path)
    assert "renamed" not in {s.name for s in list_runs(tmp_path)}
    with pytest.raises(RunError):
        create_run(tmp_path, runs[1].name, runs[1].config)
    with pytest.raises(RunError):
        Run.load(tmp_path / "missing")


def test_torn_metrics_line_is_skipped(done_run, tmp_path):
    run = create_run(tmp_path, "torn", cfg())
    (run.path / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2, "los')
    assert run.metrics() == [{"step": 1}]


def test_csv_run_keeps_the_schema_edits(tmp_path):
    """A run on an uploaded CSV re-reads it with the Data page's edits (declared bounds, types)."""
    path = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    rows = ["age,city,y"] + [f"{rng.integers(20, 60)},{'ab'[i % 2]},{i % 2}" for i in range(120)]
    path.write_text("\n".join(rows) + "\n")
    data = {"csv": str(path), "target": "y", "delimiter": ",", "types": {"age": "numeric"},
            "bounds": {"age": [0, 100]}, "categories": {"city": ["a", "b", "c"]}}
    run = train_run(RunConfig(model="pgm", params={"epochs": 1, "pca_dim": 2, "hidden": 16, "batch_size": 32,
                                                   "warmup_steps": 0}, data=data),
                    tmp_path / "runs", name="csv")
    train, _ = Run.load(run.path).load_data()
    age = train.schema.column("age")
    assert (age.kind, age.lower, age.upper) == ("numeric", 0, 100)
    assert list(train.schema.column("city").categories) == ["a", "b", "c"]
