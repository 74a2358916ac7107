"""The Data page's schema editor as data: inference problems are notes, edits become declarations."""
from __future__ import annotations

import pandas as pd
import pytest

from dpcore.errors import DPCoreError
from dpcore.ui.schema_editor import (
    DATE,
    DECLARE,
    DROP,
    ESTIMATE,
    READ,
    declared_from_edits,
    dp_bounds_epsilon,
    dp_bounds_rows_needed,
    guess_target,
    schema_rows,
    target_problem,
)


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
    # text columns throughout (no cell mixes types: no Arrow error); an empty bound is missing, shown "—"
    assert (rows.drop(columns="public").dtypes == "string").all() and rows["public"].dtype == "bool"
    assert rows["lower"].isna().all() and rows["upper"].isna().all()


def test_bounds_start_empty_with_the_rows_range_in_the_note_and_a_01_target_is_a_class():
    rows = schema_rows(_frame(), "target").set_index("column")
    assert pd.isna(rows.loc["age", "lower"]) and rows.loc["age", "note"].endswith("in the rows")
    lo, hi = (float(v) for v in rows.loc["age", "note"].split(" in the rows")[0].split(" to "))
    assert 18 <= lo < hi <= 89
    # a 0/1 target is a class to predict: categorical with levels 0 and 1, never "integer"
    assert rows.loc["target", "kind"] == "categorical" and rows.loc["target", "categories"] == "0, 1"
    from dpcore.data.csv import dataset_from_frame

    ds = dataset_from_frame(_frame(), target="target", types={"admit_date": DATE})
    assert ds.schema.column("target").kind == "categorical" and ds.schema.label_names == [0, 1]


def test_edits_declare_kinds_bounds_categories_and_dropped_columns():
    frame = _frame()
    rows = schema_rows(frame, "target")
    edited = rows.copy()
    at = edited.index[edited["column"] == "age"][0]
    edited.loc[at, ["lower", "upper"]] = ["0", "120"]  # typed: declared, no tick needed
    at = edited.index[edited["column"] == "region"][0]
    edited.loc[at, ["public", "categories"]] = [True, "n, s, e"]
    at = edited.index[edited["column"] == "admit_date"][0]
    edited.loc[at, "kind"] = DROP
    out = declared_from_edits(rows, edited, "target", READ)
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
    ({"column": "age", "public": True}, "give both its lower and upper"),
    ({"column": "age", "upper": "5"}, "give both its lower and upper"),
    ({"column": "age", "lower": "9", "upper": "5"}, "must be below"),
    ({"column": "age", "lower": "nine", "upper": "50"}, "'nine' is not a number"),
    ({"column": "admit_date", "lower": "1/2/2024", "upper": "2025-01-01"}, "not a date written YYYY-MM-DD"),
    ({"column": "bmi", "kind": "numeric"}, "declare the bounds of 'age', 'admit_date', 'bmi'"),
])
def test_bad_edits_are_one_line_errors_naming_the_column(edit, message):
    rows = schema_rows(_frame(), "target")
    edited = rows.copy()
    at = edited.index[edited["column"] == edit["column"]][0]
    for k, v in edit.items():
        edited.loc[at, k] = v
    with pytest.raises(DPCoreError, match=message) as exc:
        declared_from_edits(rows, edited, "target", DECLARE)
    assert edit["column"] in str(exc.value) and "\n" not in str(exc.value)


def test_a_date_column_declared_for_dp_bounds_is_read_back_as_dates():
    frame = _frame()
    rows = schema_rows(frame, "target")
    out = declared_from_edits(rows, rows.copy(), "target", ESTIMATE)
    assert out["types"] == {"age": "integer", "admit_date": DATE, "bmi": "numeric"}
    from dpcore.data.csv import dataset_from_frame

    ds = dataset_from_frame(frame, target="target", types=out["types"])
    spec = ds.schema.column("admit_date")
    assert spec.date_format == "%Y-%m-%d" and spec.kind == "integer"
    assert list(ds.to_frame(as_written=True)["admit_date"][:3]) == list(frame["admit_date"][:3])


def test_dropping_every_feature_is_refused():
    rows = schema_rows(_frame(), "target")
    edited = rows.assign(kind=[DROP if c != "target" else k for c, k in zip(rows["column"], rows["kind"])])
    with pytest.raises(DPCoreError, match="keep at least one"):
        declared_from_edits(rows, edited, "target", READ)


def test_targets_are_classes_and_the_guess_is_a_usable_one():
    frame = _frame()
    assert target_problem(frame, "target") is None
    assert "distinct values" in target_problem(frame, "bmi")
    assert "at least two" in target_problem(frame.assign(target="1"), "target")
    assert guess_target(frame) == "target"
    assert guess_target(frame.rename(columns={"target": "smoker"})) == "smoker"  # last usable column
    assert guess_target(frame[["bmi", "admit_date"]]) is None


def mortgage_frame(n=400, seed=0) -> pd.DataFrame:
    """The shape of issue 40's table: the target `deny` in the middle, a yes/no column before it,
    a money column with many zeros, a date, gaps, and a 3-level category as the last column."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "loan_amount": rng.integers(50, 900, n), "self_employed": rng.choice(["yes", "no"], n),
        "debt_income": rng.normal(0.3, 0.1, n).round(3), "co_income": np.where(rng.random(n) < 0.6, 0, 4000),
        "applied": (np.datetime64("2020-01-01") + rng.integers(0, 500, n)).astype(str),
        "deny": rng.choice(["yes", "no"], n, p=[0.12, 0.88]),
        "black": rng.choice(["yes", "no", None], n), "property_type": rng.choice(["1", "2", "3"], n)})


def test_the_target_guess_prefers_a_target_name_then_a_binary_column_over_the_last_column():
    frame = mortgage_frame()
    assert guess_target(frame) == "deny"  # before issue 40: property_type, the last column
    assert guess_target(frame.rename(columns={"deny": "loan_default"})) == "loan_default"  # last word
    unnamed = frame.rename(columns={"deny": "d"}).drop(columns=["black"])
    assert guess_target(unnamed) == "d"  # no target name: the last yes/no column, not property_type
    assert guess_target(frame.rename(columns={"deny": "denial"}).drop(columns=["black", "self_employed"])) \
        == "denial"  # the only binary column
    assert guess_target(frame[["loan_amount", "property_type"]]) == "property_type"  # else the last usable


def test_declared_date_bounds_are_day_numbers_the_table_is_read_with():
    frame = _frame()
    rows = schema_rows(frame, "target")
    edited = rows.copy()
    for col, lo, hi in (("admit_date", "2024-01-01", "2024-12-31"), ("age", "0", "120"), ("bmi", "10", "60")):
        edited.loc[edited["column"] == col, ["lower", "upper"]] = [lo, hi]
    out = declared_from_edits(rows, edited, "target", DECLARE)  # every bound declared: nothing refused
    assert out["types"]["admit_date"] == DATE and out["bounds"]["admit_date"] == [19723.0, 20088.0]
    from dpcore.data.csv import dataset_from_frame

    ds = dataset_from_frame(frame, target="target", **out)
    spec = ds.schema.column("admit_date")
    assert (spec.lower, spec.upper, spec.origin, spec.date_format) == (19723.0, 20088.0, "declared", "%Y-%m-%d")
    assert list(ds.to_frame(as_written=True)["admit_date"][:2]) == ["2024-01-01", "2024-01-02"]
    assert not ds.schema.column("age").data_derived and ds.schema.column("age").upper == 120


def test_the_modes_for_columns_left_undeclared():
    rows = schema_rows(_frame(), "target")
    # kinds and bounds from the rows; a date's format is the one its cell shows (proposed, confirmed)
    assert declared_from_edits(rows, rows.copy(), "target", READ) == {"date_formats": {"admit_date": "%Y-%m-%d"}}
    estimate = declared_from_edits(rows, rows.copy(), "target", ESTIMATE)
    assert "bounds" not in estimate and set(estimate["types"]) == {"age", "admit_date", "bmi"}
    with pytest.raises(DPCoreError, match="bounds mode"):
        declared_from_edits(rows, rows.copy(), "target", "guess")


def test_dp_bounds_are_proposed_only_where_the_table_is_large_enough():
    # studies/dp_bounds.py: 120 rows, 5 columns at σ = 10 refused 19 of 20 draws; 3 000 rows clipped ≤ 1.1 %
    assert not 120 >= dp_bounds_rows_needed(5, 10.0)
    assert 3000 >= dp_bounds_rows_needed(5, 10.0)
    assert dp_bounds_rows_needed(5, 2.0) < dp_bounds_rows_needed(5, 10.0)  # less noise, fewer rows
    # a date's year grid has more bins, so a higher keep threshold: more rows
    assert dp_bounds_rows_needed(5, 10.0, dates=True) > dp_bounds_rows_needed(5, 10.0)
    # the share it costs is the accountant's number for the one record: σ = 10 → about 0.38 at δ = 1e-5
    assert 0.3 < dp_bounds_epsilon(5, 10.0, 1e-5) < 0.45
    assert dp_bounds_epsilon(5, 10.0, 1e-5) == pytest.approx(dp_bounds_epsilon(1, 10.0, 1e-5))


def test_a_date_columns_format_is_proposed_and_the_edits_declare_the_one_confirmed():
    """Issue 41: a date's format was read off the rows even when declared. The editor proposes one in
    the format cell; what the edits declare is that cell, and the table is then read in it: a cell the
    format cannot parse is missing, never a reason to switch formats."""
    frame = _frame().assign(admit_date=lambda f: pd.to_datetime(f["admit_date"]).dt.strftime("%d/%m/%Y"))
    rows = schema_rows(frame, "target")
    assert rows.set_index("column").loc["admit_date", "format"] == "%d/%m/%Y"
    assert rows.set_index("column")["format"].drop("admit_date").isna().all()
    edited = rows.copy()
    at = edited.index[edited["column"] == "admit_date"][0]
    for bad, said in ((None, "choose its date format"), ("%d/%m/%y", "got '%d/%m/%y'")):
        edited.loc[at, "format"] = bad
        with pytest.raises(DPCoreError, match=said) as exc:
            declared_from_edits(rows, edited, "target", READ)
        assert "admit_date" in str(exc.value) and "\n" not in str(exc.value)
    edited.loc[at, "format"] = "%m/%d/%Y"  # the user's word wins over the proposal
    out = declared_from_edits(rows, edited, "target", READ)
    assert out == {"date_formats": {"admit_date": "%m/%d/%Y"}}
    from dpcore.data.csv import dataset_from_frame

    ds = dataset_from_frame(frame, target="target", **out)
    assert ds.schema.column("admit_date").date_format == "%m/%d/%Y"
    days = ds.to_frame(as_written=True)["admit_date"]
    assert days.isna().sum() == (pd.to_datetime(frame["admit_date"], format="%m/%d/%Y", errors="coerce").isna()).sum()
