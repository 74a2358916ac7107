"""Fit each row into a declared column's domain, one row at a time, before anything is encoded.

Why: a column whose kind, bounds or categories are public must publish the same schema whatever
one row holds; if an odd value changed a kind, added a column or stopped the run, the published
run would tell the attacker about that row. So, per row and per declared column:
- numbers outside the bounds are clipped to them (±inf included); an integer column's fractional
  value is rounded;
- a value the kind cannot hold — text in a numeric column, a level not in the declared category
  list, an unknown boolean spelling — is treated as missing;
- declared columns are nullable by default, so "missing" always has a place (the encoder's
  `__missing` indicator or `<missing>` level). A column declared `nullable=False` that still meets
  a missing value is a broken promise: a one-line DataError before any training.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpcore.data.schema import FALSE_TOKENS, TRUE_TOKENS, ColumnSpec, Schema, category_key, is_missing
from dpcore.errors import DataError


def conform(frame: pd.DataFrame, schema: Schema, columns: list[str]) -> pd.DataFrame:
    """A copy of `frame` whose `columns` hold only values their declared spec can encode."""
    out = frame.copy()
    for name in columns:
        spec = schema.column(name)
        col = frame[name]
        miss = is_missing(col)
        values = _fit(col, miss, spec)
        bad = pd.isna(values).to_numpy(dtype=bool) if isinstance(values, pd.Series) else pd.isna(values)
        if bad.any() and not spec.nullable and name != schema.target:
            raise DataError(f"column {name!r} is declared not nullable but has missing or undeclared values; "
                            "declare it nullable")
        out[name] = pd.Series(values, index=frame.index, dtype=object if spec.kind != "numeric" and
                              spec.kind != "integer" else float)
    return out


def _fit(col: pd.Series, miss: np.ndarray, spec: ColumnSpec):
    if spec.is_continuous:
        if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
            x = col.to_numpy(dtype=float, na_value=np.nan)
        else:
            text = col.astype(object).where(~miss, None)
            x = pd.to_numeric(text.map(lambda v: v.strip() if isinstance(v, str) else v), errors="coerce")
            x = np.asarray(x, dtype=float)
        x = np.where(miss, np.nan, x)
        if spec.kind == "integer":
            x = np.round(x)
        if spec.lower is not None and spec.upper is not None:
            lo, hi = float(spec.lower), float(spec.upper)
            if spec.kind == "integer":
                lo, hi = float(math.ceil(lo)), float(math.floor(hi))
            x = np.clip(x, lo, hi)  # NaN stays NaN
        return x
    if spec.kind == "boolean":
        low = col.astype(object).map(lambda v: v.strip().lower() if isinstance(v, str) else v)
        truth = {**{t: True for t in TRUE_TOKENS | {"1", "1.0"}}, **{t: False for t in FALSE_TOKENS | {"0", "0.0"}},
                 True: True, False: False}
        return np.array([None if m else truth.get(v) for v, m in zip(low, miss)], dtype=object)
    lookup = {category_key(c): c for c in spec.categories or []}
    inner, uniques = pd.factorize(col.astype(object), use_na_sentinel=True)
    mapped = np.array([lookup.get(category_key(u)) for u in uniques] + [None], dtype=object)
    values = mapped[inner]  # the sentinel -1 picks the trailing None
    values[miss] = None
    return values
