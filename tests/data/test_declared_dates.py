"""A declared date column keeps its declared format whatever one row holds (issue 41).

The auditor's pair: D = 300 rows of DD/MM/2024 with both parts ≤ 12, D + 1 = D and 01/25/2024.
Before, the format was read off the rows even for a declared date: model.json's date_format flipped
from %d/%m/%Y to %m/%d/%Y, and since row identities were computed after the conversion, hundreds
of rows changed sides of the keyed split."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from dpcore.data.csv import dataset_from_frame, read_csv
from dpcore.data.split import train_test_split
from dpcore.errors import InvalidParameter

ODD_ROW = "01/25/2024,40,1"


def _pair(tmp_path, n: int = 300):
    rng = np.random.default_rng(7)
    lines = ["visit,age,y"] + [f"{d:02d}/{m:02d}/2024,{a},{t}" for d, m, a, t in
                               zip(rng.integers(1, 13, n), rng.integers(1, 13, n), rng.integers(18, 90, n),
                                   rng.choice(["0", "1"], n))]
    d, d1 = tmp_path / "D.csv", tmp_path / "D1.csv"
    d.write_text("\n".join(lines) + "\n")
    d1.write_text("\n".join([*lines, ODD_ROW]) + "\n")
    return d, d1


def _sides(ds, key) -> dict:
    """{row identity: "train" | "test"} under the keyed split with `key`."""
    train, test = train_test_split(ds, test_size=0.3, key=key)
    return {**{tuple(r): "train" for r in train.row_ids}, **{tuple(r): "test" for r in test.row_ids}}


@pytest.mark.parametrize("declare", [{"date_formats": {"visit": "%d/%m/%Y"}},
                                     {"types": {"visit": "date"}},  # kind only: format read, labelled
                                     {}])
def test_every_common_row_keeps_its_side_of_the_keyed_split(tmp_path, declare):
    d, d1 = _pair(tmp_path)
    key = os.urandom(32)
    a, b = (read_csv(p, target="y", **declare) for p in (d, d1))
    sa, sb = _sides(a, key), _sides(b, key)
    assert len(sb) == len(sa) + 1
    assert all(sb[r] == side for r, side in sa.items())  # identities from the cells as written
    fa, fb = a.schema.column("visit").date_format, b.schema.column("visit").date_format
    if "date_formats" in declare:
        assert fa == fb == "%d/%m/%Y"
        assert pd.isna(b.to_frame(as_written=True)["visit"].iloc[-1])  # 01/25 does not parse: missing
    else:  # read off the rows: the row flips it, and the column says it is not covered by ε
        assert (fa, fb) == ("%d/%m/%Y", "%m/%d/%Y")
        assert "visit" in a.schema.data_derived and not b.preprocessing_private


def test_a_format_read_off_the_rows_is_labelled_even_with_dp_bounds():
    frame = pd.DataFrame({"visit": [f"{1 + i % 28:02d}/{1 + i % 12:02d}/2024" for i in range(400)],
                          "y": ["0", "1"] * 200})
    common = dict(target="y", categories={"y": ["0", "1"]}, undeclared="dp", seed=1)
    kind_only = dataset_from_frame(frame, types={"visit": "date"}, **common)
    declared = dataset_from_frame(frame, date_formats={"visit": "%d/%m/%Y"}, **common)
    assert kind_only.schema.column("visit").origin == "data" and not kind_only.preprocessing_private
    assert declared.schema.column("visit").origin == "dp" and declared.preprocessing_private


@pytest.mark.parametrize("formats, message", [
    ({"visit": "%d/%m/%y"}, "must be one of"),
    ({"when": "%Y-%m-%d"}, "unknown column"),
    ({"y": "%Y-%m-%d"}, "is a class, not a date"),
])
def test_a_declared_format_is_checked_against_the_allow_list(formats, message):
    frame = pd.DataFrame({"visit": ["01/02/2024", "03/04/2024"] * 3, "y": ["0", "1"] * 3})
    with pytest.raises(InvalidParameter, match=message) as exc:
        dataset_from_frame(frame, target="y", date_formats=formats)
    assert "\n" not in str(exc.value)


def test_neighbouring_runs_publish_the_declared_format(tmp_path):
    """Through the run path (config.json's data.date_formats): model.json's date_format is the same
    for D and D + 1, and a config.json saved before the field still loads."""
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig

    d, d1 = _pair(tmp_path)
    saved = []
    for path in (d, d1):
        data = {"csv": str(path), "target": "y", "date_formats": {"visit": "%d/%m/%Y"},
                "bounds": {"visit": [19723.0, 20088.0], "age": [0, 120]}, "types": {"age": "integer"}}
        run = train_run(RunConfig(model="mst", params={"epsilon": 5.0}, data=data), tmp_path / "runs")
        meta = json.loads((run.path / "model" / "model.json").read_text())
        columns = {c["name"]: c for c in meta["template"]["schema"]["state"]["columns"]}
        saved.append((columns["visit"]["date_format"], columns["visit"]["origin"]))
        config = json.loads((run.path / "config.json").read_text())
        assert config["data"]["date_formats"] == {"visit": "%d/%m/%Y"}
    assert saved == [("%d/%m/%Y", "declared")] * 2
    old = {k: v for k, v in config["data"].items() if k != "date_formats"}
    assert RunConfig(model="mst", params={"epsilon": 5.0}, data=old).data.date_formats is None


def test_the_cli_declares_a_format_and_refuses_one_off_the_allow_list(tmp_path, run_cli):
    d, _ = _pair(tmp_path)
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"date_formats": {"visit": "%d/%m/%y"}}))
    rc, _, err = run_cli(["train", "--model", "mst", "--data", str(d), "--target", "y", "--declare", str(schema),
                          "--out", str(tmp_path / "runs" / "x")])
    assert rc == 2 and "date format of column 'visit' must be one of" in err and err.count("\n") == 1
    from dpcore.cli.train import _declared

    schema.write_text(json.dumps({"date_formats": {"visit": "%d/%m/%Y"}, "target": "y"}))
    assert _declared(schema, str(d)) == {"date_formats": {"visit": "%d/%m/%Y"}, "target": "y"}
