"""A run folder from someone else: no code runs, and every bad file is a one-line RunError."""
import json
import shutil
import sys

import pytest

from dpcore.errors import RunError
from dpcore.jobs import train_run
from dpcore.runs import Run, RunConfig, list_runs

DATA = {"csv": None}


@pytest.fixture(scope="module")
def csv_run(tmp_path_factory):
    """A tabular run (its model.json names the schema and encoder classes)."""
    root = tmp_path_factory.mktemp("tamper")
    path = root / "t.csv"
    path.write_text("a,c,y\n" + "".join(f"{i % 9},{'xyz'[i % 3]},{i % 2}\n" for i in range(90)))
    cfg = RunConfig("vae", dict(latent_dim=2, hidden=8, epochs=1, batch_size=30),
                    {"csv": str(path), "target": "y", "bounds": {"a": [0, 10]}})
    return train_run(cfg, root / "runs", name="t")


def _copy(run, dest):
    shutil.copytree(run.path, dest)
    return dest


def _edit(path, fn):
    d = json.loads(path.read_text())
    path.write_text(json.dumps(fn(d)))


def test_a_shared_run_cannot_import_code(csv_run, tmp_path, monkeypatch):
    run_dir = _copy(csv_run, tmp_path / "shared")
    marker = tmp_path / "pwned"
    (run_dir / "evil_mod.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nclass Thing: pass\n")
    monkeypatch.chdir(run_dir)
    monkeypatch.syspath_prepend(str(run_dir))

    def evil(d):
        d["template"]["schema"]["class"] = "evil_mod:Thing"
        return d

    _edit(run_dir / "model" / "model.json", evil)
    with pytest.raises(RunError, match="not one a saved model may use"):
        Run(run_dir).load_model()
    assert not marker.exists() and "evil_mod" not in sys.modules


def _deep(n):
    v = 0
    for _ in range(n):
        v = [v]
    return v


MODEL_EDITS = {
    "list for object": lambda d: [d],
    "missing template": lambda d: {k: v for k, v in d.items() if k != "template"},
    "n_features a string": lambda d: {**d, "n_features": "12"},
    "huge n_features": lambda d: {**d, "n_features": 10**12},
    "config wrong type": lambda d: {**d, "config": {**d["config"], "hidden": "wide"}},
    "config unknown key": lambda d: {**d, "config": {**d["config"], "evil": 1}},
    "deep nesting": lambda d: {**d, "calibration": {"x": _deep(100_000)}},
    "template label names": lambda d: {**d, "template": {**d["template"], "label_names": {"a": 1}}},
    "ledger garbage": lambda d: {**d, "ledger": [{"name": 1}]},
}


@pytest.mark.parametrize("edit", sorted(MODEL_EDITS))
def test_tampered_model_json(csv_run, tmp_path, edit):
    run_dir = _copy(csv_run, tmp_path / "r")
    p = run_dir / "model" / "model.json"
    d = MODEL_EDITS[edit](json.loads(p.read_text()))
    p.write_text(json.dumps(d) if edit != "deep nesting" else "[" * 100_000 + "]" * 100_000)
    with pytest.raises(RunError) as exc:
        Run(run_dir).load_model()
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("payload", [b"", b"garbage" * 10, "truncate", "nan"])
def test_bad_weights(csv_run, tmp_path, payload):
    run_dir = _copy(csv_run, tmp_path / "w")
    w = run_dir / "model" / "weights.safetensors"
    if payload == "truncate":
        w.write_bytes(w.read_bytes()[: len(w.read_bytes()) // 2])
    elif payload == "nan":
        from safetensors.torch import load_file, save_file

        t = load_file(str(w))
        k = next(k for k, v in t.items() if v.is_floating_point())
        t[k] = t[k] * float("nan")
        save_file(t, str(w))
    else:
        w.write_bytes(payload)
    with pytest.raises(RunError, match="weights"):
        Run(run_dir).load_model()


RUN_FILE_EDITS = {
    ("config.json", "list"): lambda d: [d],
    ("config.json", "no model"): lambda d: {k: v for k, v in d.items() if k != "model"},
    ("config.json", "params list"): lambda d: {**d, "params": [1, 2]},
    ("config.json", "epochs string"): lambda d: {**d, "params": {**d["params"], "epochs": "1e12"}},
    ("config.json", "data unknown key"): lambda d: {**d, "data": {**d["data"], "x": 1}},
    ("config.json", "deep"): lambda d: {**d, "name": _deep(50)},
    ("status.json", "list"): lambda d: [d],
    ("status.json", "bad status"): lambda d: {**d, "status": "pwned"},
    ("status.json", "step string"): lambda d: {**d, "step": "7"},
    ("ledger.json", "records dict"): lambda d: {**d, "records": {"a": 1}},
    ("ledger.json", "bad record"): lambda d: {**d, "records": [{"name": "x", "mechanism": "laplace"}]},
    ("ledger.json", "epsilon dict"): lambda d: {**d, "epsilon": {}},
}


@pytest.mark.parametrize("edit", sorted(RUN_FILE_EDITS), ids=lambda e: f"{e[0]}:{e[1]}")
def test_tampered_run_files(csv_run, tmp_path, edit):
    run_dir = _copy(csv_run, tmp_path / "r")
    fname, _ = edit
    _edit(run_dir / fname, RUN_FILE_EDITS[edit])
    with pytest.raises(RunError) as exc:
        run = Run(run_dir)
        run.summary()
        run.ledger()
    assert "\n" not in str(exc.value)
    listed = [(s.name, s.status) for s in list_runs(tmp_path)]  # listed as unreadable, not a crash
    assert listed == [("r", f"unreadable: {fname}: {exc.value.reason}")] if hasattr(exc.value, "reason") else \
        [n for n, st in listed] == ["r"] and listed[0][1].startswith("unreadable: ")


def test_empty_and_garbage_json(csv_run, tmp_path):
    run_dir = _copy(csv_run, tmp_path / "g")
    (run_dir / "status.json").write_bytes(b"")
    with pytest.raises(RunError, match="unreadable"):
        Run(run_dir).status()
    (run_dir / "config.json").write_bytes(b"\xff\xfe garbage")
    with pytest.raises(RunError, match="unreadable"):
        Run(run_dir)
