"""A file's split and row limit decide each row on its own (a keyed hash): neighbouring files give
neighbouring training sets, and every run on one file shares one test set."""
import shutil

import numpy as np
import pytest

from dpcore.data.split import KEY_BYTES, row_coins, row_digests
from dpcore.runs import DataConfig
from dpcore.runs.uploads import split_key, split_key_path


def _rows(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    return [f"{rng.normal():.4f},{rng.integers(0, 9)},{'yes' if rng.random() < .3 else 'no'}" for _ in range(n)]


def _write(path, rows):
    path.write_text("x,k,y\n" + "\n".join(rows) + "\n")
    return path


def _multiset(ds):
    frame = ds.to_frame()
    return sorted(map(tuple, frame.astype(str).to_numpy()))


DECLARED = dict(target="y", types={"x": "numeric", "k": "integer"}, bounds={"x": [-5, 5], "k": [0, 9]},
                categories={"y": ["no", "yes"]})


def _load(path, **extra):
    return DataConfig(csv=str(path), test_size=0.1, **DECLARED, **extra).load()


@pytest.mark.parametrize("where", [0, 500, "dup"])
def test_neighbouring_files_give_neighbouring_training_sets(tmp_path, where):
    rows = _rows()
    extra = rows[123] if where == "dup" else "4.9999,9,yes"  # a copy of a row, or an outlier
    more = rows[:] + [extra] if where == "dup" else rows[:where] + [extra] + rows[where:]
    d, d1 = _write(tmp_path / "d.csv", rows), _write(tmp_path / "d1.csv", more)
    split_key(d)
    shutil.copy(split_key_path(d), split_key_path(d1))  # the same key
    (tr0, te0), (tr1, te1) = _load(d), _load(d1)
    a, b = _multiset(tr0), _multiset(tr1)
    assert len(b) - len(a) in (0, 1)
    for r in a:
        b.remove(r)  # every training row of D is a training row of D + 1
    assert len(b) <= 1  # ...and D + 1 has at most the added row more
    assert _multiset(te0) == _multiset(te1) or len(_multiset(te1)) == len(_multiset(te0)) + 1
    assert tr0.meta["split"] == "keyed" and "split_seed" not in tr0.public_meta()


def test_runs_on_one_file_share_one_test_set_and_the_key_is_secret(tmp_path):
    d = _write(tmp_path / "d.csv", _rows(300))
    _, te_a = _load(d)
    _, te_b = DataConfig(csv=str(d), test_size=0.1, split_seed=7, **DECLARED).load()
    assert _multiset(te_a) == _multiset(te_b)  # the split seed plays no part for a file
    key = split_key(d)
    assert len(key) == KEY_BYTES and split_key_path(d).stat().st_mode & 0o077 == 0
    other = _write(tmp_path / "other.csv", _rows(300))
    assert split_key(other) != key  # OS entropy per file, not derived from anything public


def test_coins_depend_on_the_row_and_the_key_only():
    import pandas as pd

    frame = pd.DataFrame({"a": ["1", "2", "1", "3"], "b": ["x", "y", "x", "z"]})
    ids = row_digests(frame)
    assert ids[0, 0] == ids[2, 0] and list(ids[:, 1]) == [0, 0, 1, 0]  # copies: occurrence 0, 1
    key = bytes(range(KEY_BYTES))
    u = row_coins(ids, key, "split")
    sub = row_coins(row_digests(frame.iloc[[1, 3]]), key, "split")
    assert np.array_equal(u[[1, 3]], sub)  # other rows leave a row's coin unchanged
    assert not np.array_equal(u, row_coins(ids, bytes(KEY_BYTES), "split"))


def test_row_limit_on_a_file_is_per_row_and_ledgered(tmp_path):
    rows = _rows()
    d, d1 = _write(tmp_path / "d.csv", rows), _write(tmp_path / "d1.csv", rows[:10] + ["4.9999,9,yes"] + rows[10:])
    split_key(d)
    shutil.copy(split_key_path(d), split_key_path(d1))
    cfg = DataConfig(csv=str(d), test_size=0.1, n=400, **DECLARED)
    tr0, _ = cfg.load()
    assert cfg.rows_share is not None and 0.3 < cfg.rows_share < 0.5  # n/Ñ, Ñ ≈ 1000 ± 50·4
    rec = [r for r in tr0.meta["privacy_records"] if r["name"].startswith("file-size")]
    assert len(rec) == 1 and rec[0]["noise"] == "secret" and rec[0]["sensitivity"] == 1.0
    tr1, _ = DataConfig(csv=str(d1), test_size=0.1, n=400, rows_share=cfg.rows_share, **DECLARED).load()
    a, b = _multiset(tr0), _multiset(tr1)
    for r in a:
        b.remove(r)
    assert len(b) <= 1
    again, _ = cfg.load()  # a run re-reading its data: the same share, the same rows, no new count
    assert _multiset(again) == _multiset(tr0) and not any(
        r["name"].startswith("file-size") for r in again.meta["privacy_records"])


def test_cli_rows_on_a_file_is_ledgered_and_rereads_the_same_rows(tmp_path, capsys):
    import json

    from dpcore.cli import main
    from dpcore.runs import Run

    d = _write(tmp_path / "d.csv", _rows(600))
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(DECLARED))
    out = tmp_path / "runs" / "r"
    assert main(["train", "--model", "dp-vae", "--data", str(d), "--schema", str(schema), "--rows", "200",
                 "--hidden", "8", "--epochs", "1", "--out", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    names = [r["name"] for r in res["ledger"]]
    assert names[:2] == ["file-size (row limit)", "dataset-size"] and res["private"] is True
    assert res["epsilon"] == pytest.approx(1.0, rel=1e-3)  # both counts inside the target
    run = Run(out)
    share = run.config.data.rows_share
    assert 0.2 < share < 0.5
    a, b = run.load_data(), run.load_data()
    assert _multiset(a[0]) == _multiset(b[0]) and _multiset(a[1]) == _multiset(b[1])


def test_a_run_trains_and_rereads_the_same_split_of_a_file_given_by_path(tmp_path):
    """A table given by path is copied to ROOT/_uploads before anything reads it, so its split key
    lives beside the copy the run re-reads: the training rows the run saw are the ones evaluation
    and the attacks later treat as members (a key beside the original gave another test set)."""
    from dpcore.jobs import train_run
    from dpcore.runs import Run, RunConfig

    d = _write(tmp_path / "d.csv", _rows(400))
    cfg = RunConfig("dp-vae", {"hidden": 8, "epochs": 1},
                    DataConfig(csv=str(d), **DECLARED))
    run = train_run(cfg, tmp_path / "runs")
    assert not split_key_path(d).exists()  # nothing was keyed beside the user's own file
    assert split_key_path(run.config.data.csv).exists()
    train, test = run.load_data()
    again, _ = Run(run.path).config.data.load()
    assert _multiset(train) == _multiset(again) and train.n + test.n == 400
