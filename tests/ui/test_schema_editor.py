"""The Data page's schema editor as data: inference problems are notes, edits become declarations."""
from __future__ import annotations

import pandas as pd
import pytest

from dpcore.errors import DPCoreError
from dpcore.ui.schema_editor import DATE, DROP, declared_from_edits, guess_target, schema_rows, target_problem


def _frame(n=300):
    import numpy as np

    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(str),
        "admit_date": pd.date_range("2024-01-01", periods=n, freq="D").strftime("%Y-%m-%d"),
        "region": rng.choice(["n", "s"], n),
        "bmi": rng.normal(25, 4, n).round(1).astype(str),
        "target": rng.choice(["0", "1"], n),
    })


def test_a_column_inference_refuses_is_a_note_with_drop_proposed_not_an_error():
    frame = _frame().assign(note=[f"free text {i}" for i in range(300)])
    rows = schema_rows(frame, "target")
    text = rows.set_index("column").loc["note"]
    assert text["kind"] == DROP and "300 distinct values" in text["note"]
    date = rows.set_index("column").loc["admit_date"]
    assert date["kind"] == DATE and "2024-01-01 to 2024-10-26" in date["note"]
    assert rows.set_index("column").loc["age", "kind"] == "integer"
    # typed columns: an empty bound is a blank number (NaN), never the text "None"
    assert rows["lower"].dtype == "float64" and pd.isna(rows.set_index("column").loc["region", "lower"])
    assert rows["categories"].dtype == "string"


def test_edits_declare_kinds_bounds_categories_and_dropped_columns():
    frame = _frame()
    rows = schema_rows(frame, "target")
    edited = rows.copy()
    at = edited.index[edited["column"] == "age"][0]
    edited.loc[at, ["public", "lower", "upper"]] = [True, 0.0, 120.0]
    at = edited.index[edited["column"] == "region"][0]
    edited.loc[at, ["public", "categories"]] = [True, "n, s, e"]
    at = edited.index[edited["column"] == "admit_date"][0]
    edited.loc[at, "kind"] = DROP
    out = declared_from_edits(rows, edited, "target", dp_bounds=False)
    assert out["drop"] == ["admit_date"]
    assert out["bounds"] == {"age": [0.0, 120.0]}
    assert out["categories"] == {"region": ["n", "s", "e"]}
    assert out["types"] == {"age": "integer", "region": "categorical"}
    # ...and the data layer reads the table with them (the dropped date is gone)
    from dpcore.data.csv import dataset_from_frame

    ds = dataset_from_frame(frame.drop(columns=out["drop"]), target="target", types=out["types"],
                            bounds=out["bounds"], categories=out["categories"])
    assert [c.name for c in ds.schema.columns] == ["age", "region", "bmi", "target"]


@pytest.mark.parametrize("edit, message", [
    ({"column": "target", "kind": DROP}, "cannot be dropped"),
    ({"column": "age", "public": True, "lower": float("nan"), "upper": 5.0}, "give its lower and upper"),
    ({"column": "age", "public": True, "lower": 9.0, "upper": 5.0}, "must be below"),
])
def test_bad_edits_are_one_line_errors_naming_the_column(edit, message):
    rows = schema_rows(_frame(), "target")
    edited = rows.copy()
    at = edited.index[edited["column"] == edit["column"]][0]
    for k, v in edit.items():
        edited.loc[at, k] = v
    with pytest.raises(DPCoreError, match=message) as exc:
        declared_from_edits(rows, edited, "target", dp_bounds=False)
    assert edit["column"] in str(exc.value) and "\n" not in str(exc.value)


def test_a_date_column_declared_for_dp_bounds_is_read_back_as_dates():
    frame = _frame()
    rows = schema_rows(frame, "target")
    out = declared_from_edits(rows, rows.copy(), "target", dp_bounds=True)
    assert out["types"]["admit_date"] == DATE
    from dpcore.data.csv import dataset_from_frame

    ds = dataset_from_frame(frame, target="target", types=out["types"])
    spec = ds.schema.column("admit_date")
    assert spec.date_format == "%Y-%m-%d" and spec.kind == "integer"
    assert list(ds.to_frame(as_written=True)["admit_date"][:3]) == list(frame["admit_date"][:3])


def test_dropping_every_feature_is_refused():
    rows = schema_rows(_frame(), "target")
    edited = rows.assign(kind=[DROP if c != "target" else k for c, k in zip(rows["column"], rows["kind"])])
    with pytest.raises(DPCoreError, match="keep at least one"):
        declared_from_edits(rows, edited, "target", dp_bounds=False)


def test_targets_are_classes_and_the_guess_is_a_usable_one():
    frame = _frame()
    assert target_problem(frame, "target") is None
    assert "distinct values" in target_problem(frame, "bmi")
    assert "at least two" in target_problem(frame.assign(target="1"), "target")
    assert guess_target(frame) == "target"
    assert guess_target(frame.rename(columns={"target": "smoker"})) == "smoker"  # last usable column
    assert guess_target(frame[["bmi", "admit_date"]]) is None
