"""Dates and times as a column kind: modelled as numbers, decoded back to the file's own format.

Why: an admission date or a timestamp has thousands of distinct values, too many for a categorical
column, and is not a number as written. Every model here learns numbers, so a date column is read
as days since 1970-01-01 (fractional for times), keeps its format on its ColumnSpec
(`date_format`), and the encoder writes synthetic values back in that format. The column then gets
a numeric column's treatment everywhere: bounds declared, DP-estimated or read off the rows (with
the same "not covered by ε" label), and every model — neural or marginal — takes it unchanged.

A declared date column carries its format (`date_formats={col: fmt}`, the schema editor's
"format" cell, a saved schema's `date_format`): the rows then never choose it, and a cell that does
not parse in it is missing, like any value a declared column cannot hold (dpcore.data.conform).
Otherwise inference only proposes one: a column counts as dates when nearly all of its non-missing
values parse in one of FORMATS, and a format read so is a statistic of the rows (one adversarial
row, 01/25/2024 among 300 day-first dates, flips %d/%m/%Y to %m/%d/%Y), so its column has origin
"data" ("preprocessing not covered by ε") whatever its bounds.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dpcore.data.profile import is_text

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


def check_formats(date_formats: dict | None, columns, *, target: str | None, types: dict,
                  categories: dict) -> dict:
    """The declared {column: format}, validated against the allow-list (one-line InvalidParameter)."""
    from dpcore.errors import InvalidParameter

    if date_formats is None:
        return {}
    if not isinstance(date_formats, dict):
        raise InvalidParameter(f"date_formats must map column names to formats, got {type(date_formats).__name__}")
    unknown = [c for c in date_formats if c not in columns]
    if unknown:
        raise InvalidParameter(f"date_formats names unknown column(s): {', '.join(map(str, unknown))}")
    for col, fmt in date_formats.items():
        if fmt not in FORMATS:
            raise InvalidParameter(f"date format of column {col!r} must be one of {', '.join(FORMATS)}; got {fmt!r}")
        if col == target:
            raise InvalidParameter(f"the target column {col!r} is a class, not a date")
        if types.get(col) not in (None, "date") or col in categories:
            raise InvalidParameter(f"column {col!r} has a date format and is declared {types.get(col) or 'categorical'}")
    return dict(date_formats)


def dates_as_numbers(frame: pd.DataFrame, *, schema, types: dict | None, bounds: dict | None,
                     categories: dict | None, target: str | None, date_formats: dict | None = None
                     ) -> tuple[pd.DataFrame, dict | None, dict, set]:
    """Date columns read as day numbers: those of `schema`, those with a declared format, those
    declared types[col] = "date" and undeclared text columns whose values are dates (formats read
    off the rows). Returns the frame, the types with "date" replaced by the numeric kind the days
    take, {column: format}, and the columns whose format was read off the rows."""
    from dpcore.errors import DataError

    types = dict(types or {})
    read: set = set()
    if schema is not None:
        formats = {c.name: c.date_format for c in schema.columns if c.date_format and c.name in frame.columns}
    else:
        formats = check_formats(date_formats, frame.columns, target=target, types=types,
                                categories=categories or {})
        for col, fmt in formats.items():
            types[col] = "numeric" if has_time(fmt) else "integer"
        for col in frame.columns:
            declared = types.get(col)
            if col in formats or col == target or col in (categories or {}):
                continue
            if (col in (bounds or {}) and declared != "date") or declared not in (None, "date"):
                continue  # a date column's declared bounds are day numbers (the editor converts them)
            fmt = date_format(frame[col]) if is_text(frame[col]) else None
            if declared == "date" and fmt is None:
                raise DataError(f"column {col!r} is declared a date, but its values are not dates in one "
                                "format (e.g. 2024-03-01, 01/03/2024, 2024-03-01 14:30:00); declare its "
                                "format (date_formats)")
            if fmt is not None:
                formats[col] = fmt
                read.add(col)
                if declared == "date":
                    types[col] = "numeric" if has_time(fmt) else "integer"
    if not formats:
        return frame, (types or None), {}, read
    frame = frame.copy()
    for col, fmt in formats.items():
        frame[col] = days_as_text(frame[col], fmt)
    return frame, (types or None), formats, read


def with_date_formats(schema, formats: dict, read: set = frozenset()):
    """`schema` with each date column's format; a column in `read` (format read off the rows) gets
    origin "data" (not covered by ε) whatever its bounds: apply it after any DP bounds."""
    from dataclasses import replace

    columns = [replace(c, date_format=formats[c.name], decimals=None if c.kind == "integer" else c.decimals,
                       origin="data" if c.name in read else c.origin)
               if c.name in formats and c.kind in ("numeric", "integer") else c for c in schema.columns]
    return replace(schema, columns=columns)
