"""A full, read-only or forbidden disk (simulated by a patched writer, the one place bytes are
written): one `error:` line, exit code 2, the old run kept, the new one marked failed, and nothing
half-written left behind."""
import errno
import json

import pytest

import dpcore.io
from dpcore.runs import Run, list_runs

TRAIN = ["train", "--model", "vae", "--dataset", "digits", "--rows", "200", "--latent-dim", "2", "--hidden", "8",
         "--epochs", "1", "--batch-size", "100"]


def _failing(monkeypatch, code=errno.ENOSPC, when=lambda path: True):
    real = dpcore.io.write

    def write(fh, payload, path=None):
        if when(str(path)):
            raise OSError(code, __import__("os").strerror(code))
        return real(fh, payload, path)
    monkeypatch.setattr(dpcore.io, "write", write)


def _one_line(rc, err, *words):
    lines = err.strip("\n").split("\n")
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, (rc, err)
    for w in words:
        assert w in lines[0], err


def _leftovers(root):
    return sorted(p.name for p in root.rglob("*") if p.name.startswith(".") and p.name != "_locks")


@pytest.fixture(scope="module")
def kept(tmp_path_factory, run_cli):
    root = tmp_path_factory.mktemp("disk") / "runs"
    assert run_cli([*TRAIN, "--out", str(root / "keep")])[0] == 0
    return root


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_overwrite_on_a_full_disk_keeps_the_old_run(kept, monkeypatch, code, run_cli):
    before = (kept / "keep" / "config.json").read_text()
    _failing(monkeypatch, code, when=lambda path: "weights" in path)
    rc, _, err = run_cli([*TRAIN, "--out", str(kept / "keep"), "--overwrite", "--seed", "5"])
    _one_line(rc, err, "weights.safetensors", __import__("os").strerror(code))
    assert (kept / "keep" / "config.json").read_text() == before  # the old run is untouched
    assert Run(kept / "keep").status()["status"] == "done" and Run(kept / "keep").load_model() is not None
    assert _leftovers(kept) == []


def test_a_new_run_on_a_full_disk_is_marked_failed(kept, monkeypatch, run_cli):
    _failing(monkeypatch, when=lambda path: "weights" in path)
    rc, _, err = run_cli([*TRAIN, "--out", str(kept / "new")])
    _one_line(rc, err, "No space left on device")
    st = Run(kept / "new").status()
    assert st["status"] == "failed" and "No space left" in st["message"]
    assert not (kept / "new" / "model" / "weights.safetensors").exists() and _leftovers(kept) == []


def test_a_full_disk_before_anything_is_written(kept, monkeypatch, run_cli):
    _failing(monkeypatch)  # even config.json cannot be written
    names = {s.name for s in list_runs(kept)}
    rc, _, err = run_cli([*TRAIN, "--out", str(kept / "never")])
    _one_line(rc, err, "No space left on device")
    assert {s.name for s in list_runs(kept)} == names and _leftovers(kept) == []


def test_metrics_on_a_full_disk(kept, monkeypatch, run_cli):
    _failing(monkeypatch, when=lambda path: "metrics" in path)
    rc, _, err = run_cli([*TRAIN, "--out", str(kept / "m")])
    _one_line(rc, err, "metrics.jsonl")
    assert Run(kept / "m").status()["status"] == "failed"


@pytest.mark.parametrize("ext", [".csv", ".npz", ".png"])
def test_sample_on_a_full_disk_writes_nothing(kept, tmp_path, monkeypatch, ext, run_cli):
    _failing(monkeypatch)
    out = tmp_path / f"s{ext}"
    rc, _, err = run_cli(["sample", str(kept / "keep"), "--n", "20", "--out", str(out)])
    _one_line(rc, err, "No space left on device", "unchanged")
    assert list(tmp_path.iterdir()) == []


def test_evaluation_json_on_a_full_disk_keeps_the_old_scores(kept, monkeypatch):
    from dpcore.report import load_evaluation, save_evaluation

    save_evaluation(kept / "keep", utility={"mean": {"accuracy": 0.5}})
    before = json.loads((kept / "keep" / "evaluation.json").read_text())
    _failing(monkeypatch)
    with pytest.raises(Exception) as exc:
        save_evaluation(kept / "keep", utility={"mean": {"accuracy": 0.9}})
    assert "No space left" in str(exc.value) and "\n" not in str(exc.value)
    assert load_evaluation(kept / "keep") == before
