"""An auditor's diff of every published file: runs on a CSV D and on D + one adversarial row, through
the CLI, must be byte-equal outside the values declared noisy below (issue 41).

Why byte for byte, file by file: a value computed from the exact rows (a content hash in a file
name, a date format read off the rows, a batch from n, a trial's timing) hides anywhere in a run
folder; comparing named fields finds only what someone thought of. Every file of a run folder must
have a handler here, so a new file joins the audit or fails it. Both runs release the same noisy
count ñ (`noisy_count` is pinned: the event that both draws land on one value) and read D's split
key (D + 1's table gets a copy, as in tests/privacy/test_published_neighbours.py), so the split of
D + 1 adds only that row. Also here: the attacks of issue 41 (a content hash in config.json, a
deleted split key, a shortened ledger) fail.
"""
import hashlib
import json
import re
import shutil
import struct

import pytest
from neighbour_tables import SCHEMA, pin_released_count, write_pair

from dpcore.runs import Run
from dpcore.runs.uploads import split_key, split_key_path, store_upload

SMALL = {"mst": ["--iters", "20"], "dp-vae": ["--hidden", "8", "--latent-dim", "2"]}
TOKEN = re.compile(r"^data-[0-9a-f]{16}\.csv$")

# What may differ between the two runs, and why. Everything else must be equal.
WALL_CLOCK = ("created", "created_ts", "started", "finished", "seconds", "heartbeat", "pid", "host")  # status.json:
# when and where the process ran; runs made at different times differ whatever the rows (timing is no value ε covers)
EVENT_KEYS = ("phase", "step", "total_steps", "epsilon")  # metrics.jsonl: the rest is raw losses (not covered,
# docs/privacy.md) and "time", a wall clock
NOISY_SCORE = ("correct", "wrong", "per_class", "accuracy", "noise_sd", "sampling_sd", "balanced_accuracy",
               "balanced_noise_sd", "balanced_sampling_sd")  # evaluation.json: the released noisy counts and
# what is computed from them


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bytes")
    d, d1 = write_pair(tmp)
    schema = tmp / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    stored = {}
    for tag, path in (("d", d), ("d1", d1)):
        (tmp / f"runs-{tag}").mkdir()
        stored[tag] = store_upload(tmp / f"runs-{tag}", path.read_bytes(), path.name)
    split_key(stored["d"])
    shutil.copy(split_key_path(stored["d"]), split_key_path(stored["d1"]))  # one key, as for one file
    return tmp, stored, schema


@pytest.fixture(scope="module")
def pinned():
    mp = pytest.MonkeyPatch()
    pin_released_count(mp)
    yield
    mp.undo()


def _train(run_cli, tables, tag, model, *extra):
    tmp, stored, schema = tables
    out = tmp / f"runs-{tag}" / model  # one run name for both: the name is the user's
    rc, _, err = run_cli(["train", "--model", model, "--data", str(stored[tag]), "--declare", str(schema),
                          "--target", "y", *SMALL[model], *extra, "--out", str(out), "--json"])
    assert rc == 0, err
    return out


@pytest.fixture(scope="module")
def mst_runs(run_cli, tables, pinned):
    """MST on the CLI defaults (a keyed split of 10 %), each with a released score (what
    `evaluate --release-score` releases, without its evaluation against real rows, not covered)."""
    from dpcore.runs.run_score import release_score

    runs = [_train(run_cli, tables, tag, "mst") for tag in ("d", "d1")]
    for path in runs:
        release_score(path, 0.5)
    return runs


def _json_lines(text):
    return [json.loads(line) for line in text.splitlines()]


def _model_json(d):
    """model.json with the trained state's values masked (noisy: weights, noisy statistics; its keys
    stay), the wall time of the fit and the marginals MST/AIM picked with the exponential mechanism
    (a ledgered noisy release)."""
    fixed = ("config", "template", "ledger", "calibration", "released_rows", "fit_result", "model", "n_features",
             "n_classes")
    out = {k: v for k, v in d.items() if k in fixed}
    out["state"] = sorted(k for k in d if k not in fixed)
    out["fit_result"] = {k: v for k, v in (d.get("fit_result") or {}).items() if k != "seconds"}
    out["calibration"] = {k: v for k, v in (d.get("calibration") or {}).items() if k != "selected"}
    return out


def _weights_header(raw: bytes):
    """safetensors: the header's names, dtypes and shapes are fixed by the settings; the tensors are noisy."""
    (size,) = struct.unpack("<Q", raw[:8])
    return {k: {f: v for f, v in t.items() if f != "data_offsets"} if isinstance(t, dict) else t
            for k, t in json.loads(raw[8:8 + size]).items()}


def _selected_shapes(files: dict) -> dict:
    """A marginal model's tensors are the potentials of the marginals it selected with the
    exponential mechanism (model.json's calibration "selected", a ledgered noisy release): their
    shapes follow that choice, so only their names and dtypes are fixed."""
    if "selected" not in json.loads(files["model/model.json"]).get("calibration", {}):
        return files
    return {**files, "model/weights.safetensors": {k: {f: v for f, v in t.items() if f != "shape"}
                                                   for k, t in files["model/weights.safetensors"].items()}}


def _config(d):
    csv = d["data"]["csv"]
    assert TOKEN.match(csv), csv  # a file name only: no server path
    return {**d, "data": {**d["data"], "csv": "data-TOKEN.csv"}}  # a random token (checked below)


HANDLERS = {
    "config.json": lambda raw: _config(json.loads(raw)),
    "status.json": lambda raw: {k: v for k, v in json.loads(raw).items() if k not in WALL_CLOCK},
    "ledger.json": json.loads,  # noise multipliers, rates and ε: functions of the settings and ñ
    "metrics.jsonl": lambda raw: [{k: e.get(k) for k in EVENT_KEYS} | {"keys": sorted(e)} for e in _json_lines(raw)],
    # only the released score: the rest of evaluation.json is evaluation against real rows (not covered)
    "evaluation.json": lambda raw: {f: x for f, x in json.loads(raw)["released_score"].items() if f not in NOISY_SCORE},
    "model/model.json": lambda raw: _model_json(json.loads(raw)),
    "model/weights.safetensors": _weights_header,
}


def _published(run_dir) -> dict:
    files = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file())
    unknown = [f for f in files if f not in HANDLERS]
    assert not unknown, f"published files without a declared comparison: {unknown}"
    out = {f: HANDLERS[f]((run_dir / f).read_bytes() if f.endswith(".safetensors")
                          else (run_dir / f).read_text()) for f in files}
    return _selected_shapes({**out, "model/model.json": (run_dir / "model" / "model.json").read_text()}) | {
        "model/model.json": out["model/model.json"]}


def _assert_same(a_dir, b_dir, what):
    a, b = _published(a_dir), _published(b_dir)
    assert sorted(a) == sorted(b), what
    for name in a:
        assert a[name] == b[name], f"{what}: {name} differs between D and D + 1 row"


def test_mst_with_a_released_score_publishes_the_same_for_neighbours(mst_runs):
    a, b = mst_runs
    _assert_same(a, b, "mst + released score")
    score = json.loads((a / "evaluation.json").read_text())["released_score"]
    assert score["partition"] == "heldout"  # the key the run recorded is the one on disk


def test_a_neural_model_on_the_cli_defaults_publishes_the_same_for_neighbours(run_cli, tables, pinned):
    a, b = (_train(run_cli, tables, tag, "dp-vae") for tag in ("d", "d1"))
    _assert_same(a, b, "dp-vae")


def test_a_selections_released_run_publishes_the_same_for_neighbours(tables, pinned):
    from dpcore.jobs import selection
    from dpcore.jobs.sweep import SweepSpec

    tmp, stored, _ = tables
    released = []
    for tag in ("d", "d1"):
        data = {"csv": str(stored[tag]), "target": "y", "test_size": 0.3,
                **{k: v for k, v in SCHEMA.items() if k != "target"}}
        spec = SweepSpec(model="mst", grid={"epsilon": ["1"]}, data=data, params={"iters": 5}, seeds=1,
                         name="sel", scores=("utility",))
        mp = pytest.MonkeyPatch()
        mp.setattr(selection, "draw_trials", lambda rng, **kw: 2)
        try:
            out = selection.select_private(spec, tmp / f"runs-{tag}", mean_trials=2.0, backend="in-process")
        finally:
            mp.undo()
        released.append(tmp / f"runs-{tag}" / out["released"]["run"])
    _assert_same(*released, "a selection's released run")
    status = json.loads((released[0] / "status.json").read_text())
    assert not set(WALL_CLOCK) & set(status) and "released_at" not in status  # no time that bounds K


# ---------------------------------------------------------------- the attacks of issue 41

def test_the_stored_name_is_random_and_config_json_names_no_path(run_cli, tables, tmp_path):
    _, stored, _ = tables
    raw = stored["d"].read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    for i in range(3):
        (tmp_path / f"root{i}").mkdir()
    names = {store_upload(tmp_path / f"root{i}", raw, "data.csv").name for i in range(3)}
    assert len(names) == 3  # the same bytes in three runs folders: three random names
    assert all(TOKEN.match(n) and n[5:21] not in digest for n in names)
    assert store_upload(tmp_path / "root0", raw, "data.csv").name in names  # kept once per folder
    assert len(list((tmp_path / "root0" / "_uploads").glob("*.csv"))) == 1
    rc, _, err = run_cli(["train", "--model", "mst", "--data", str(tables[0] / "d" / "data.csv"), "--declare",
                          str(tables[2]), "--iters", "5", "--out", str(tmp_path / "runs" / "m"), "--json"])
    assert rc == 0, err
    text = (tmp_path / "runs" / "m" / "config.json").read_text()
    cfg = json.loads(text)
    assert TOKEN.match(cfg["data"]["csv"]) and str(tmp_path) not in text and digest[:16] not in text


def test_a_run_saved_with_an_absolute_upload_path_still_opens(mst_runs, tmp_path):
    src = mst_runs[0]
    copy = shutil.copytree(src, src.parent / "abs-path")
    cfg = json.loads((copy / "config.json").read_text())
    cfg["data"]["csv"] = str(src.parent / "_uploads" / cfg["data"]["csv"])  # as config.json was written before
    (copy / "config.json").write_text(json.dumps(cfg))
    run = Run(copy)
    assert run.check().consistent and run.load_data()[1] is not None


def _score(run_cli, path):
    return run_cli(["evaluate", str(path), "--release-score", "--score-epsilon", "0.3", "--n-targets", "10",
                    "--json"])


def test_a_deleted_split_key_gives_no_parallel_composition(run_cli, tables, tmp_path):
    from dpcore.errors import RunError
    from dpcore.runs.uploads import split_key_for

    _, stored, schema = tables
    root = tmp_path / "runs"
    root.mkdir()
    table = store_upload(root, stored["d"].read_bytes(), "data.csv")
    rc, _, err = run_cli(["train", "--model", "mst", "--data", str(table), "--declare", str(schema), "--iters", "5",
                          "--test-size", "0.3", "--out", str(root / "m"), "--json"])
    assert rc == 0, err
    run = Run(root / "m")
    before = (run.path / "ledger.json").read_bytes()
    split_key_path(table).unlink()  # what the old "damaged key" message told users to do
    rc, out, err = _score(run_cli, run.path)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "restore it from a backup" in err, (rc, err)
    assert (run.path / "ledger.json").read_bytes() == before  # nothing released
    split_key(table)  # a new key drawn for the table (a new run on it would)
    rc, out, err = _score(run_cli, run.path)
    assert rc == 2 and "not the one this run was trained with" in err, (rc, err)
    split_key_path(table).write_bytes(b"short")
    with pytest.raises(RunError, match="damaged") as exc:
        split_key_for(table)
    assert "delet" not in str(exc.value) and "remov" not in str(exc.value)


def test_a_run_saved_before_key_ids_and_chains_opens_and_scores_sequentially(mst_runs):
    src = mst_runs[0]
    copy = src.parent / "no-key-id"
    shutil.copytree(src, copy)
    ev = json.loads((copy / "evaluation.json").read_text())
    ev.pop("released_score")
    (copy / "evaluation.json").write_text(json.dumps(ev))
    led = json.loads((copy / "ledger.json").read_text())
    led.pop("chain")
    led["records"] = led["records"][:-1]  # as a legacy run before its score (ε: the training's, which is stored)
    led["epsilon"] = json.loads((copy / "status.json").read_text())["epsilon"]
    (copy / "ledger.json").write_text(json.dumps(led))
    st = json.loads((copy / "status.json").read_text())
    st.pop("ledger_chain")
    (copy / "status.json").write_text(json.dumps(st))
    cfg = json.loads((copy / "config.json").read_text())
    cfg["data"].pop("split_key_id")
    (copy / "config.json").write_text(json.dumps(cfg))
    check = Run(copy).check()
    assert check.consistent and check.legacy and "before hash chains" in check.note, check.problems
    from dpcore.runs.run_score import release_score

    assert release_score(copy, 0.3)["partition"] is None  # no key id: never an under-count


def _edited(src, name, edit):
    copy = shutil.copytree(src, src.parent / name)
    for rel, fn in edit.items():
        doc = json.loads((copy / rel).read_text())
        (copy / rel).write_text(json.dumps(fn(doc)))
    return copy


def _drop_score(led):
    from dpcore.privacy.accountant import epsilon
    from dpcore.privacy.ledger import PrivacyLedger

    led["records"] = led["records"][:-1]
    led["epsilon"] = float(epsilon(PrivacyLedger.from_list(led["records"]), led["delta"]))
    return led


def test_a_shortened_or_reordered_ledger_is_flagged_everywhere(mst_runs, run_cli, tmp_path):
    from dpcore.runs.ledger_chain import chain

    src = mst_runs[0]
    rechained = lambda led: {**led, "chain": chain(led["records"])}  # noqa: E731 - an attacker who recomputes it
    no_score = lambda ev: {k: v for k, v in ev.items() if k != "released_score"}  # noqa: E731
    edits = {
        "shortened": {"ledger.json": _drop_score},
        "shortened-rechained": {"ledger.json": lambda led: rechained(_drop_score(led))},
        "shortened-score-gone": {"ledger.json": lambda led: rechained(_drop_score(led)),
                                 "evaluation.json": no_score},
        "chain-stripped": {"ledger.json": lambda led: {k: v for k, v in _drop_score(led).items() if k != "chain"},
                           "evaluation.json": no_score},
        "reordered": {"ledger.json": lambda led: {**led, "records": led["records"][::-1]}},
    }
    for name, edit in edits.items():
        run = Run(_edited(src, name, edit))
        check = run.check()
        assert not check.consistent, name
        rc, _, err = run_cli(["evaluate", str(run.path), "--report", str(tmp_path / f"{name}.html"), "--json"])
        assert rc == 2 and "ledger inconsistent" in err and not (tmp_path / f"{name}.html").exists(), (name, err)
    assert Run(src).check().consistent and not Run(src).check().legacy
