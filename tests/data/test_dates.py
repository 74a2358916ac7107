"""Dates as a column kind: inferred from the column, learnt as day numbers by every model, written
back in the file's own format."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.data.dates import date_format, days_as_text, from_days, to_days


@pytest.mark.parametrize("values, fmt", [
    (["2024-03-01", "2023-12-31", "", "2024-02-29"], "%Y-%m-%d"),
    (["31/12/2023", "01/03/2024", "29/02/2024"], "%d/%m/%Y"),
    (["12/31/2023", "03/01/2024", "02/29/2024"], "%m/%d/%Y"),
    (["2024-03-01 14:30:00", "2023-12-31 00:00:05"], "%Y-%m-%d %H:%M:%S"),
])
def test_the_format_is_read_off_the_column_and_values_round_trip(values, fmt):
    col = pd.Series(values, dtype=object)
    assert date_format(col) == fmt
    days = to_days(col, fmt)
    back = from_days(days, fmt)
    assert [b or "" for b in back] == values


@pytest.mark.parametrize("values", [["1", "2", "3"], ["a", "b"], ["2024-03-01", "soon", "later", "never"],
                                    ["1.5", "2.25"], ["2024-13-45", "2024-14-50"]])
def test_numbers_words_and_mostly_not_dates_are_not_dates(values):
    assert date_format(pd.Series(values, dtype=object)) is None


def test_days_are_whole_for_dates_and_fractional_for_times():
    assert list(days_as_text(pd.Series(["1970-01-02", ""]), "%Y-%m-%d")) == ["1", ""]
    assert days_as_text(pd.Series(["1970-01-01 12:00:00"]), "%Y-%m-%d %H:%M:%S")[0] == "0.500000"
    assert list(from_days(np.array([0.0, np.nan]), "%d.%m.%Y")) == ["01.01.1970", None]


def _table(n=400) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(str),
        "admit_date": (np.datetime64("2023-01-01") + rng.integers(0, 700, n)).astype(str),
        "region": rng.choice(["north", "south", "east"], n),
        "target": rng.choice(["0", "1"], n),
    })


def test_a_saved_schema_keeps_the_format_and_refuses_a_format_off_the_allow_list():
    from dpcore.data.csv import dataset_from_frame
    from dpcore.data.schema import Schema
    from dpcore.errors import InvalidParameter

    schema = dataset_from_frame(_table(), target="target").schema
    again = Schema.from_dict(schema.to_dict())
    assert again.column("admit_date").date_format == "%Y-%m-%d"
    raw = schema.to_dict()
    raw["columns"][1]["date_format"] = "%Y-%m-%d<script>"
    with pytest.raises(InvalidParameter, match="date_format"):
        Schema.from_dict(raw)


@pytest.mark.parametrize("model, params", [("aim", {"max_time": 5.0}),
                                           ("p3gm", {"epochs": 2, "hidden": 32, "warmup_steps": 10})])
def test_every_model_kind_learns_dates_and_writes_them_back(model, params, tmp_path):
    """A marginal model and a neural one, through the runner: the exported rows' dates parse in the
    file's format and lie within the column's bounds."""
    from dpcore.jobs import train_run
    from dpcore.runs import RunConfig
    from dpcore.runs.export import csv_bytes

    path = tmp_path / "patients.csv"
    _table().to_csv(path, index=False)
    run = train_run(RunConfig(model=model, params={"epsilon": 10.0, **params},
                              data={"csv": str(path), "target": "target"}), tmp_path / "runs")
    from dpcore import report

    bundle = report.load_bundle(run.path)
    import io

    rows = pd.read_csv(io.BytesIO(csv_bytes(bundle.synthetic)), dtype=str)
    parsed = pd.to_datetime(rows["admit_date"].dropna(), format="%Y-%m-%d", errors="coerce")
    assert len(parsed) > 0 and parsed.notna().all(), rows["admit_date"].head()
    assert parsed.min() >= pd.Timestamp("2023-01-01") and parsed.max() <= pd.Timestamp("2024-12-31")
    assert parsed.nunique() > 5  # not one date for everybody


def test_compare_labels_a_date_columns_bins_as_dates():
    """Compare's histogram of a date column reads 2023-01-01–2023-02-05, not day numbers (19,358–19,393)."""
    from dpcore.data.csv import dataset_from_frame
    from dpcore.evaluate.marginals import one_way_histogram

    real = dataset_from_frame(_table(), target="target")
    h = one_way_histogram(real, real, "admit_date", bins=10)
    ranges = [b for b in h["bins"] if not b.startswith("=") and b != "missing"]
    assert len(ranges) == 10, h["bins"]
    for label in ranges:
        lo, hi = label.split("–")
        assert pd.Timestamp(lo) <= pd.Timestamp(hi) and pd.Timestamp("2022-12-31") <= pd.Timestamp(lo), label
    ages = [b for b in one_way_histogram(real, real, "age", bins=4)["bins"] if not b.startswith("=")]
    assert ages[0][0].isdigit() and "-" not in ages[0].split("–")[0]  # a number stays a number
