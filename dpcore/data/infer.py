"""A first schema read off a table's rows, for the user to edit: each column's kind guessed from its
values, bounds and category lists read off the rows, unless declared (dpcore.data.schema says why
only declared ones are public: whatever is read here makes the column origin "data")."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from dpcore.data.profile import as_text, is_text, text_profile
from dpcore.data.schema import (
    _INT_RE,
    DEFAULT_MAX_LEVELS,
    KINDS,
    ColumnSpec,
    Schema,
    _all_python_bools,
    _plain,
    _sort_key,
    cast_values,
    category_key,
    decimals_of,
    is_missing,
)
from dpcore.errors import DataError, InvalidParameter


def infer_kind(values: pd.Series) -> str:
    """Guess a column's kind from its non-missing values (text or typed). The user may override."""
    if pd.api.types.is_bool_dtype(values.dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(values.dtype):
        return "integer"
    if pd.api.types.is_float_dtype(values.dtype):
        return "numeric"
    if not is_text(values):
        return "numeric" if pd.api.types.is_numeric_dtype(values.dtype) else "categorical"
    present = values[~is_missing(values)]
    if present.empty:
        return "categorical"
    if _all_python_bools(present):
        return "boolean"
    text = as_text(present).str.strip()
    if text.str.fullmatch(_INT_RE.pattern[1:-1]).all():
        return "integer"
    try:
        text.astype("float64")
        return "numeric"
    except (TypeError, ValueError):
        pass
    if text.str.lower().isin({"true", "false"}).all():
        return "boolean"
    return "categorical"


def infer_schema(frame: pd.DataFrame, *, target: str | None = None, types: dict | None = None,
                 bounds: dict | None = None, categories: dict | None = None, nullable: dict | None = None,
                 max_levels: int = DEFAULT_MAX_LEVELS) -> Schema:
    """A schema the user can edit. A column is *declared* when its kind is given (`types`) or
    implied by a declared domain (`bounds` → numeric, `categories` → categorical): its kind and
    nullability (`nullable`, default True, so a missing value never adds a column) then never
    come from the rows. Kinds guessed from the rows, and bounds or categories read off them,
    make the column origin "data" ("preprocessing not covered by ε")."""
    types, bounds, categories = dict(types or {}), dict(bounds or {}), dict(categories or {})
    nullable = dict(nullable or {})
    for arg, given in (("types", types), ("bounds", bounds), ("categories", categories), ("nullable", nullable)):
        unknown = [k for k in given if k not in frame.columns]
        if unknown:
            raise InvalidParameter(f"{arg} names unknown column(s): {', '.join(map(str, unknown))}")
    if target is not None and target not in frame.columns:
        raise InvalidParameter(f"target column {target!r} not found; columns are: {', '.join(map(str, frame.columns))}")
    bad = [k for k, v in types.items() if v not in KINDS]
    if bad:
        raise InvalidParameter(f"types[{bad[0]!r}] must be one of {KINDS}, got {types[bad[0]]!r}")
    prof = text_profile(frame)
    specs = []
    for j, name in enumerate(frame.columns):
        kind = declared_kind(name, types, bounds, categories)
        declared = kind is not None
        if prof is not None:
            miss, guess = prof.missing[:, j], prof.kind[j]
        else:
            miss = is_missing(frame[name])
            guess = infer_kind(frame[name]) if not declared or name == target else None
        kind = kind or guess
        whole = name == target and guess == "integer" and kind in ("numeric", "integer")
        if name == target and kind in ("numeric", "integer"):  # a target is a class, never a number:
            kind = "categorical"                                 # 0/1 is two classes (levels kept as ints)
        may_miss = False if name == target else bool(nullable.get(name, True) if declared else miss.any())
        spec = ColumnSpec(name=name, kind=kind, nullable=may_miss, origin="declared" if declared else "data")
        if kind in ("numeric", "integer") and name != target:
            if name in bounds:
                lo, hi = bounds[name]
                spec = replace(spec, lower=float(lo), upper=float(hi))
            else:
                x = prof.number[:, j] if prof is not None else \
                    pd.to_numeric(frame[name][~miss], errors="coerce").to_numpy(dtype=float)
                x = x[~np.isnan(x)]
                if len(x):
                    lo, hi = float(np.min(x)), float(np.max(x))
                    if not (math.isfinite(lo) and math.isfinite(hi)):
                        raise DataError(f"column {name!r} contains infinite values")
                    spec = replace(spec, lower=lo, upper=hi if hi > lo else lo + 1.0,
                                   decimals=decimals_of(x) if kind == "numeric" else None)
                spec = replace(spec, origin="data")
        elif name in categories:
            spec = replace(spec, categories=list(categories[name]))
        elif kind == "boolean":
            spec = replace(spec, categories=[False, True])
        else:
            raw = pd.Series(prof.stripped[~miss, j], dtype=object) if prof is not None else frame[name][~miss]
            values = cast_values(raw, kind, name) if len(raw) else raw
            levels = list({category_key(v): v for v in pd.unique(values)[::-1]}.values())[::-1]
            if len(levels) > max_levels:
                raise DataError(f"column {name!r} has {len(levels)} distinct values, too many for a "
                                f"categorical column (limit {max_levels}); drop it or declare it numeric")
            levels = [int(v) if kind == "integer" or whole else _plain(v) for v in levels]
            spec = replace(spec, categories=sorted(levels, key=_sort_key), origin="data")
        specs.append(spec)
    return Schema(specs, target=target)


def declared_kind(name, types: dict, bounds: dict, categories: dict) -> str | None:
    """The kind a user declared (or implied by declaring bounds / categories); None = guess it."""
    if types.get(name):
        return types[name]
    if name in bounds:
        return "numeric"
    if name in categories:
        return "categorical"
    return None
