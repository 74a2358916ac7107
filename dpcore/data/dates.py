"""Dates and times as a column kind: modelled as numbers, decoded back to the file's own format.

Why: an admission date or a timestamp has thousands of distinct values, too many for a categorical
column, and is not a number as written. Every model here learns numbers, so a date column is read
as days since 1970-01-01 (fractional for times), keeps its format on its ColumnSpec
(`date_format`), and the encoder writes synthetic values back in that format. The column then gets
a numeric column's treatment everywhere: bounds declared, DP-estimated or read off the rows (with
the same "not covered by ε" label), and every model — neural or marginal — takes it unchanged.

A column counts as dates when nearly all of its non-missing values parse in one of FORMATS; the
format is inferred from the column's values, never from a single row.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

# Tried in this order; day-first before month-first where both parse (more of the world writes so).
FORMATS = ("%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d",
           "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%d-%m-%Y")
DATE_SHAPE = re.compile(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}([ T]\d{1,2}:\d{2}(:\d{2})?)?$")
MIN_SHARE = 0.98      # of the non-missing values that must parse in the format
SAMPLE = 500          # values looked at before parsing a whole column
EPOCH = np.datetime64("1970-01-01T00:00:00", "s")
SECONDS_PER_DAY = 86_400.0


def has_time(fmt: str) -> bool:
    return "%H" in fmt


def date_format(values: pd.Series) -> str | None:
    """The format the column's dates are written in (None when it is not a date column)."""
    text = values.astype("str").str.strip()
    text = text[text != ""]
    if len(text) == 0:
        return None
    sample = text.iloc[:SAMPLE]
    if sample.str.match(DATE_SHAPE).mean() < MIN_SHARE:
        return None
    best, best_share = None, 0.0
    for fmt in FORMATS:
        share = pd.to_datetime(sample, format=fmt, errors="coerce").notna().mean()
        if share > best_share + 1e-12:
            best, best_share = fmt, share
    if best is None or best_share < MIN_SHARE:
        return None
    if len(text) > SAMPLE and pd.to_datetime(text, format=best, errors="coerce").notna().mean() < MIN_SHARE:
        return None
    return best


def to_days(values: pd.Series, fmt: str) -> np.ndarray:
    """Days since 1970-01-01 (float; NaN where a value is missing or does not parse)."""
    parsed = pd.to_datetime(values.astype("str").str.strip(), format=fmt, errors="coerce")
    seconds = (parsed - pd.Timestamp("1970-01-01")).dt.total_seconds().to_numpy(dtype=float)
    return seconds / SECONDS_PER_DAY


def days_as_text(values: pd.Series, fmt: str) -> pd.Series:
    """The column as the text of its day numbers (whole days for a date-only format), blanks kept
    blank, so the rest of the CSV path reads it as it reads any numeric column."""
    days = to_days(values, fmt)
    if not has_time(fmt):
        days = np.round(days)
    text = pd.Series([("" if np.isnan(d) else (f"{d:.0f}" if not has_time(fmt) else f"{d:.6f}")) for d in days],
                     index=values.index, dtype=object)
    return text


def from_days(days: np.ndarray, fmt: str) -> np.ndarray:
    """Day numbers → text in `fmt` (None where a value is missing)."""
    x = np.asarray(days, dtype=float)
    out = np.full(x.shape, None, dtype=object)
    ok = np.isfinite(x)
    if ok.any():
        seconds = np.round(x[ok] * SECONDS_PER_DAY).astype("int64")
        stamps = pd.to_datetime(seconds, unit="s")
        out[ok] = np.asarray(stamps.strftime(fmt), dtype=object)
    return out
