"""Over 60 edited run folders (the issue's tester's list, kept as a test): each is opened the way the
app's Runs page lists runs and by the CLI's sample / evaluate / attack. Nothing raises, nothing
prints a traceback, no file outside the run folder is read, a bad file lists its run as
"unreadable: <file>: <reason>", and the good run next to it stays usable.
"""
import contextlib
import io
import json
import os
import shutil
import struct
from pathlib import Path

import pytest

from dpcore.cli import main

TRAIN = ["train", "--model", "dp-vae", "--dataset", "digits", "--rows", "200", "--latent-dim", "2", "--hidden",
         "8", "--epochs", "2", "--batch-size", "50", "--epsilon", "5"]
SECRET = "root:x:0:0:SECRET-OUTSIDE-THE-RUN"


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def _json(rel, fn):
    def edit(run: Path, ctx):
        p = run / rel
        p.write_text(json.dumps(fn(json.loads(p.read_text()), ctx)))
    return edit


def _raw(rel, payload):
    def edit(run: Path, ctx):
        (run / rel).write_bytes(payload if isinstance(payload, bytes) else payload.encode())
    return edit


def _link(rel, target):
    def edit(run: Path, ctx):
        p = run / rel
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
        p.symlink_to(target(ctx) if callable(target) else target)
    return edit


def _sparse(rel, size):
    def edit(run: Path, ctx):
        with open(run / rel, "r+b" if (run / rel).exists() else "wb") as fh:
            fh.truncate(size)
    return edit


def _weights(fn):
    def edit(run: Path, ctx):
        from safetensors.torch import load_file, save_file

        p = run / "model" / "weights.safetensors"
        save_file(fn(load_file(str(p))), str(p))
    return edit


def _header(n):
    def edit(run: Path, ctx):
        p = run / "model" / "weights.safetensors"
        raw = p.read_bytes()
        p.write_bytes(struct.pack("<Q", n) + raw[8:])
    return edit


def _status(**kw):
    return _json("status.json", lambda d, ctx: {**d, **{k: (v(ctx) if callable(v) else v) for k, v in kw.items()}})


def _config(fn):
    return _json("config.json", lambda d, ctx: fn(d, ctx))


def _data(**kw):
    return _config(lambda d, ctx: {**d, "data": {**d["data"], **{k: (v(ctx) if callable(v) else v)
                                                                 for k, v in kw.items()}}})


def _params(**kw):
    return _config(lambda d, ctx: {**d, "params": {**d["params"], **kw}})


U = "unreadable"
# name → (edit, what the listing shows: a status prefix, or "usable" = listed with its own status)
CASES = {
    # config.json
    "config-list": (_config(lambda d, c: [d]), f"{U}: config.json"),
    "config-string": (_raw("config.json", '"x"'), f"{U}: config.json"),
    "config-number": (_raw("config.json", "3"), f"{U}: config.json"),
    "config-null": (_raw("config.json", "null"), f"{U}: config.json"),
    "config-truncated": (_raw("config.json", '{"model": "dp-va'), f"{U}: config.json"),
    "config-empty": (_raw("config.json", ""), f"{U}: config.json"),
    "config-binary": (_raw("config.json", b"\xff\xfe\x00garbage"), f"{U}: config.json"),
    "config-deep": (_raw("config.json", _deep(50_000)), f"{U}: config.json"),
    "config-huge": (_raw("config.json", '{"x": "' + "a" * (5 * 2**20) + '"}'), f"{U}: config.json"),
    "config-symlink": (_link("config.json", lambda c: c["secret"]), f"{U}: config.json"),
    "config-unknown-model": (_config(lambda d, c: {**d, "model": "evil"}), f"{U}: config.json"),
    "config-model-path": (_config(lambda d, c: {**d, "model": "../../x"}), f"{U}: config.json"),
    "config-params-list": (_config(lambda d, c: {**d, "params": [1]}), f"{U}: config.json"),
    "config-param-type": (_params(hidden="wide"), f"{U}: config.json"),
    "config-param-unknown": (_params(evil=1), f"{U}: config.json"),
    "config-param-nan": (_raw("config.json", "{}"), f"{U}: config.json"),
    "config-epochs-string": (_params(epochs="1e12"), f"{U}: config.json"),
    "config-csv-passwd": (_data(dataset=None, csv="/etc/passwd"), f"{U}: config.json"),
    "config-csv-relative": (_data(dataset=None, csv="../../etc/passwd"), f"{U}: config.json"),
    "config-csv-outside": (_data(dataset=None, csv=lambda c: c["outside_csv"]), "usable"),
    "config-test-csv-passwd": (_data(test_csv="/etc/passwd"), f"{U}: config.json"),
    "config-dataset-path": (_data(dataset="../../etc/passwd"), f"{U}: config.json"),
    "config-dataset-unknown": (_data(dataset="nosuch"), f"{U}: config.json"),
    "config-both-sources": (_data(csv="/tmp/x.csv"), f"{U}: config.json"),
    "config-name-path": (_config(lambda d, c: {**d, "name": "../../evil"}), f"{U}: config.json"),
    "config-name-list": (_config(lambda d, c: {**d, "name": ["x"]}), f"{U}: config.json"),
    "config-data-unknown": (_data(evil=1), f"{U}: config.json"),
    "config-a-folder": (lambda run, c: ((run / "config.json").unlink(), (run / "config.json").mkdir()),
                        f"{U}: config.json"),
    # status.json
    "status-list": (_json("status.json", lambda d, c: [d]), f"{U}: status.json"),
    "status-unknown": (_status(status="pwned"), f"{U}: status.json"),
    "status-step-string": (_status(step="7"), f"{U}: status.json"),
    "status-heartbeat-string": (_status(status="running", heartbeat="soon"), f"{U}: status.json"),
    "status-pid-huge": (_status(status="running", pid=10**30, heartbeat=lambda c: c["now"]), "interrupted"),
    "status-future-other-host": (_status(status="running", host="elsewhere", heartbeat=lambda c: c["now"] + 1e7),
                                 "unknown (last seen"),
    "status-future-this-host": (_status(status="running", pid=1, heartbeat=lambda c: c["now"] + 1e9),
                                "unknown (last seen"),
    "status-stale-other-host": (_status(status="running", host="elsewhere", heartbeat=lambda c: c["now"] - 3600),
                                "unknown (last seen"),
    "status-dead-pid": (_status(status="running", pid=2**22 + 12345, heartbeat=lambda c: c["now"]), "interrupted"),
    "status-heartbeat-1e308": (_status(status="running", host="elsewhere", heartbeat=1e308), "unknown (last seen"),
    # a whole new status.json (json.dumps writes Infinity) that keeps the ledger's hash chain (dpcore.runs.ledger_chain)
    "status-heartbeat-inf": (_json("status.json", lambda d, c: {"status": "running", "heartbeat": float("inf"),
                                                                "ledger_chain": d.get("ledger_chain")}), "interrupted"),
    "status-done-early": (_status(step=1), f"{U}: status.json"),
    "status-empty": (_raw("status.json", ""), f"{U}: status.json"),
    "status-deep": (_raw("status.json", _deep(50_000)), f"{U}: status.json"),
    "status-huge": (_raw("status.json", " " * (5 * 2**20) + "{}"), f"{U}: status.json"),
    "status-symlink": (_link("status.json", lambda c: c["secret"]), f"{U}: status.json"),
    # ledger.json
    "ledger-list": (_json("ledger.json", lambda d, c: [d]), f"{U}: ledger.json"),
    "ledger-records-dict": (_json("ledger.json", lambda d, c: {**d, "records": {"a": 1}}), f"{U}: ledger.json"),
    "ledger-bad-record": (_json("ledger.json", lambda d, c: {**d, "records": [{"name": "x"}]}), f"{U}: ledger.json"),
    "ledger-epsilon-dict": (_json("ledger.json", lambda d, c: {**d, "epsilon": {}}), f"{U}: ledger.json"),
    "ledger-private-string": (_json("ledger.json", lambda d, c: {**d, "private": "yes"}), f"{U}: ledger.json"),
    "ledger-deep": (_raw("ledger.json", _deep(50_000)), f"{U}: ledger.json"),
    "ledger-many-items": (_raw("ledger.json", json.dumps({"records": [0] * 300_000})), f"{U}: ledger.json"),
    "ledger-symlink": (_link("ledger.json", lambda c: c["secret"]), f"{U}: ledger.json"),
    "ledger-truncated": (_raw("ledger.json", '{"records": ['), f"{U}: ledger.json"),
    # evaluation.json
    "eval-list": (_raw("evaluation.json", '["x",1]'), f"{U}: evaluation.json"),
    "eval-deep": (_raw("evaluation.json", _deep(50_000)), f"{U}: evaluation.json"),
    "eval-number": (_raw("evaluation.json", "1"), f"{U}: evaluation.json"),
    "eval-utility-list": (_raw("evaluation.json", '{"utility": [1]}'), f"{U}: evaluation.json"),
    "eval-utility-mean-list": (_raw("evaluation.json", '{"utility": {"mean": [1]}}'), f"{U}: evaluation.json"),
    "eval-best-list": (_raw("evaluation.json", '{"attacks": {"best": [1]}}'), f"{U}: evaluation.json"),
    "eval-attacks-string": (_raw("evaluation.json", '{"attacks": "x"}'), f"{U}: evaluation.json"),
    "eval-warnings-dict": (_raw("evaluation.json", '{"warnings": {}}'), f"{U}: evaluation.json"),
    "eval-garbage": (_raw("evaluation.json", b"\x00\xff"), f"{U}: evaluation.json"),
    "eval-huge": (_sparse("evaluation.json", 6 * 2**20), f"{U}: evaluation.json"),
    "eval-symlink": (_link("evaluation.json", lambda c: c["secret"]), f"{U}: evaluation.json"),
    # metrics.jsonl
    "metrics-symlink": (_link("metrics.jsonl", lambda c: c["secret"]), f"{U}: metrics.jsonl"),
    "metrics-huge": (_sparse("metrics.jsonl", 300 * 2**20), "usable"),
    "metrics-garbage": (_raw("metrics.jsonl", b"\xff\n[1,2]\n" + _deep(50_000).encode() + b"\n"), "usable"),
    "metrics-folder": (lambda run, c: ((run / "metrics.jsonl").unlink(), (run / "metrics.jsonl").mkdir()), "usable"),
    # model/
    "model-linked-to-other-run": (_link("model", lambda c: c["other_model"]), f"{U}: model:"),
    # the listing reads model.json's ledger copy (dpcore.runs.verify): a broken one is unreadable there
    "model-json-list": (_raw("model/model.json", "[]"), U),
    "model-json-symlink": (_link("model/model.json", lambda c: c["secret"]), f"{U}: model.json"),
    "model-json-deep": (_raw("model/model.json", _deep(50_000)), f"{U}: model.json"),
    "model-n-features-huge": (_json("model/model.json", lambda d, c: {**d, "n_features": 10**12}), "usable"),
    "weights-sparse-2gb": (_sparse("model/weights.safetensors", 2 * 2**30), "usable"),
    "weights-extra-tensor": (_weights(lambda t: {**t, "evil": __import__("torch").zeros(1_000_000)}), "usable"),
    "weights-missing-tensor": (_weights(lambda t: dict(list(t.items())[1:])), "usable"),
    "weights-truncated": (lambda run, c: (run / "model/weights.safetensors").write_bytes(
        (run / "model/weights.safetensors").read_bytes()[:-100]), "usable"),
    "weights-header-inflated": (_header(2**40), "usable"),
    "weights-garbage": (_raw("model/weights.safetensors", b"garbage" * 10), "usable"),
    "weights-symlink": (_link("model/weights.safetensors", lambda c: c["other_weights"]), f"{U}: weights"),
    "weights-missing": (lambda run, c: (run / "model/weights.safetensors").unlink(), "usable"),
}
# which of sample / evaluate / attack must refuse (exit code 2); the others may also succeed
MODEL_BROKEN = {k for k in CASES if k.startswith(("model-", "weights-"))}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A good run and an edited copy of it per case, all in one runs folder."""
    import time

    base = tmp_path_factory.mktemp("edited")
    root = base / "runs"
    secret = base / "secret.txt"
    secret.write_text(SECRET + "\n")
    outside = base / "outside" / "evil.csv"
    outside.parent.mkdir()
    outside.write_text("a,b\n" + "".join(f"{SECRET},{i}\n" for i in range(50)))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*TRAIN, "--out", str(root / "good")]) == 0
        assert main([*TRAIN, "--out", str(root / "other"), "--hidden", "8"]) == 0
    ctx = {"secret": str(secret), "outside_csv": str(outside), "now": time.time(),
           "other_model": str(root / "other" / "model"),
           "other_weights": str(root / "other" / "model" / "weights.safetensors")}
    for name, (edit, _) in CASES.items():
        shutil.copytree(root / "good", root / name, symlinks=True)
        edit(root / name, ctx)
    return root


def test_there_are_enough_cases():
    assert len(CASES) >= 60, len(CASES)


def test_the_runs_listing_and_table_survive_every_edit(world):
    from dpcore.report import headline, load_evaluation
    from dpcore.runs import list_runs
    from dpcore.ui.tables import runs_table

    listed = {s.name: s for s in list_runs(world)}
    assert listed["good"].status == "done" and listed["other"].status == "done"
    wrong = []
    for name, (_, expect) in CASES.items():
        s = listed.get(name)
        status = None if s is None else s.status
        if expect == "usable":
            ok = status is not None and not status.startswith(U)
        else:
            ok = status is not None and status.startswith(expect)
        if not ok:
            wrong.append(f"{name}: {status!r} (expected {expect!r})")
        if status and status.startswith(U):
            assert "\n" not in status and SECRET not in status
    assert not wrong, "\n".join(wrong)
    frame = runs_table(list(listed.values()))  # what the Runs page draws
    assert len(frame) == len(listed) and not frame["status"].isna().any()
    for s in listed.values():
        headline(load_evaluation(s.path))  # never raises, whatever the file holds


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cli_refuses_in_one_line(world, name, tmp_path, run_cli):
    run = world / name
    cmds = {"sample": ["sample", str(run), "--n", "5", "--out", str(tmp_path / "s.csv")],
            "evaluate": ["evaluate", str(run), "--n-targets", "10", "--n-samples", "50"],
            "attack": ["attack", str(run), "--attacks", "dcr", "--n-targets", "10"]}
    readable = not CASES[name][1].startswith(U)
    for cmd, argv in cmds.items():
        if readable and name not in MODEL_BROKEN and cmd != "sample" and name != "config-csv-outside":
            continue  # the model and data are intact: evaluate/attack would do their full work
        rc, out, err = run_cli(argv)
        text = out + err
        assert "Traceback" not in text and SECRET not in text, (cmd, text[-400:])
        if name in MODEL_BROKEN or not readable or (name == "config-csv-outside" and cmd != "sample"):
            lines = text.strip("\n").split("\n")
            assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: "), (cmd, rc, text[-400:])
        else:
            assert rc == 0, (cmd, text[-400:])


def test_an_unreadable_run_can_be_deleted(world):
    from dpcore.runs import delete_run

    for name in ("config-deep", "status-done-early", "eval-list"):
        delete_run(world / name)
        assert not (world / name).exists()
    assert os.path.exists(world / "good" / "model" / "weights.safetensors")
