"""Public schema of a table: column kinds, value bounds, category lists, target.

Why a schema of its own: scaling bounds and category lists decide the encoding, and they are
*public* information only when declared (by the user, or from a dataset's documented domain).
Statistics read off private rows leak; `ColumnSpec.origin` records where each bound came from so
a dataset built from data-derived bounds is marked "preprocessing not covered by ε".
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from dpcore.data.dates import FORMATS
from dpcore.data.profile import NA_TOKENS, as_text, is_text
from dpcore.errors import DataError, InvalidParameter

KINDS = ("numeric", "integer", "categorical", "boolean")
# Where a bound / category list came from. Only "data" is a privacy leak.
ORIGINS = ("declared", "documented", "data", "dp")
TRUE_TOKENS = frozenset({"true", "t", "yes"})
FALSE_TOKENS = frozenset({"false", "f", "no"})
_INT_RE = re.compile(r"^[+-]?\d+$")
DEFAULT_MAX_LEVELS = 200
MAX_DECIMALS = 6  # a column written with more decimals than this is not rounded at all


def decimals_of(values: np.ndarray) -> int | None:
    """The fewest decimals (0…MAX_DECIMALS) every value is written with, None when more are needed."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    for d in range(MAX_DECIMALS + 1):
        if np.allclose(np.round(x, d), x, rtol=0, atol=1e-9 * max(1.0, float(np.abs(x).max(initial=0)))):
            return d
    return None


@dataclass
class ColumnSpec:
    """One column: kind, bounds (numeric/integer), categories (categorical), nullable.

    lower/upper: the public scaling range; values outside are clipped by the encoder.
    categories: the public list of levels, in a fixed order (the one-hot order).
    origin: "declared" | "documented" | "data" | "dp" — where bounds/categories came from.
    decimals: numeric columns: the precision decoded values are rounded to (incomes in cents: 2;
        None = not rounded). Declared, or read with the bounds when those are read off the data.
    """

    name: str
    kind: str
    lower: float | None = None
    upper: float | None = None
    categories: list[Any] | None = None
    nullable: bool = False
    origin: str = "declared"
    decimals: int | None = None
    # dates and times (dpcore.data.dates): a numeric/integer column of days since 1970-01-01, written
    # back in this format (one of dates.FORMATS; None = not a date column)
    date_format: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidParameter(f"kind of column {self.name!r} must be one of {KINDS}, got {self.kind!r}")
        if self.origin not in ORIGINS:
            raise InvalidParameter(f"origin of column {self.name!r} must be one of {ORIGINS}, got {self.origin!r}")
        if self.kind == "boolean" and self.categories is None:
            self.categories = [False, True]
        if self.kind in ("numeric", "integer") and self.lower is not None and self.upper is not None:
            lo, hi = float(self.lower), float(self.upper)
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
                raise InvalidParameter(
                    f"bounds of column {self.name!r} must be finite with lower < upper, got ({self.lower}, {self.upper})")
        if self.decimals is not None and (isinstance(self.decimals, bool) or not isinstance(self.decimals, int)
                                          or not 0 <= self.decimals <= MAX_DECIMALS):
            raise InvalidParameter(f"decimals of column {self.name!r} must be an integer in [0, {MAX_DECIMALS}], "
                                   f"got {self.decimals!r}")
        if self.date_format is not None:
            if self.date_format not in FORMATS or self.kind not in ("numeric", "integer"):
                raise InvalidParameter(f"date_format of column {self.name!r} must be one of {FORMATS} on a "
                                       f"numeric or integer column, got {self.date_format!r} ({self.kind})")
        if self.categories is not None:
            self.categories = list(self.categories)
            if len({category_key(c) for c in self.categories}) != len(self.categories):
                raise InvalidParameter(f"categories of column {self.name!r} contain duplicates")

    @property
    def is_continuous(self) -> bool:
        return self.kind in ("numeric", "integer")

    @property
    def data_derived(self) -> bool:
        return self.origin == "data"

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["categories"] is not None:
            d["categories"] = [_plain(c) for c in d["categories"]]
        return d


@dataclass
class Schema:
    """Ordered columns of the original table, the target column (if any) and its class names."""

    columns: list[ColumnSpec]
    target: str | None = None
    label_names: list[Any] | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise DataError(f"duplicate column names: {', '.join(map(str, dup))}")
        if self.target is not None:
            if self.target not in names:
                raise InvalidParameter(f"target column {self.target!r} not found; columns are: {', '.join(map(str, names))}")
            spec = self.column(self.target)
            if self.label_names is None:
                self.label_names = list(spec.categories) if spec.categories is not None else None
            if self.label_names is None:
                raise InvalidParameter(f"target column {self.target!r} needs its list of classes (categories)")
            if spec.categories is None:
                self.columns[names.index(self.target)] = replace(spec, categories=list(self.label_names))

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def feature_columns(self) -> list[ColumnSpec]:
        return [c for c in self.columns if c.name != self.target]

    def column(self, name: str) -> ColumnSpec:
        for c in self.columns:
            if c.name == name:
                return c
        raise InvalidParameter(f"no column named {name!r}; columns are: {', '.join(map(str, self.names))}")

    @property
    def data_derived(self) -> list[str]:
        """Columns whose bounds/categories were read off the private rows (not covered by ε)."""
        return [c.name for c in self.columns if c.data_derived]

    @property
    def private(self) -> bool:
        """True when every bound and category list is public or privatised."""
        return not self.data_derived

    def with_column(self, name: str, **changes) -> Schema:
        """A copy with one column edited (the user's override of an inferred kind or bound)."""
        cols = [replace(c, **changes) if c.name == name else c for c in self.columns]
        if name not in self.names:
            self.column(name)  # raises naming the column
        label_names = self.label_names
        if name == self.target and "categories" in changes:
            label_names = list(changes["categories"])
        return Schema(cols, target=self.target, label_names=label_names, meta=dict(self.meta))

    def to_dict(self) -> dict:
        return {"columns": [c.to_dict() for c in self.columns], "target": self.target,
                "label_names": None if self.label_names is None else [_plain(v) for v in self.label_names],
                "meta": dict(self.meta)}

    @classmethod
    def from_dict(cls, d: dict) -> Schema:
        return cls([ColumnSpec(**c) for c in d["columns"]], target=d.get("target"),
                   label_names=d.get("label_names"), meta=dict(d.get("meta") or {}))


def _plain(v):
    """numpy scalars → Python scalars (so schemas serialise to JSON)."""
    return v.item() if isinstance(v, np.generic) else v


def is_missing(values: pd.Series) -> np.ndarray:
    """Missing = NaN/None/NA or (for text) one of the usual NA spellings. Vectorised."""
    miss = values.isna().to_numpy(dtype=bool)
    if is_text(values):
        na_text = as_text(values).str.strip().str.lower().isin(NA_TOKENS)
        miss = miss | na_text.to_numpy(dtype=bool)
    return miss


def _all_python_bools(values: pd.Series) -> bool:
    return values.dtype == object and len(values) > 0 and \
        set(map(type, values.to_numpy())) <= {bool, np.bool_}


def _parse_float(text: pd.Series, name: str, kind: str) -> pd.Series:
    try:
        return text.astype("float64")
    except (TypeError, ValueError):
        bad = pd.to_numeric(text, errors="coerce").isna().to_numpy()
        raise DataError(f"column {name!r} declared {kind} has a non-numeric value {text[bad].iloc[0]!r}") from None


def _sort_key(v):
    return (0, float(v), "") if isinstance(v, (int, float, np.number)) and not isinstance(v, bool) else (1, 0.0, str(v))


def cast_values(values: pd.Series, kind: str, name: str) -> pd.Series:
    """Non-missing values → the kind's type (text parsed, vectorised; a value that does not parse raises)."""
    if kind in ("numeric", "integer"):
        if pd.api.types.is_bool_dtype(values.dtype) or _all_python_bools(values):
            raise DataError(f"column {name!r} is boolean, not {kind}")
        if pd.api.types.is_numeric_dtype(values.dtype):  # typed input: no text to parse
            num = values.astype(float)
        elif values.dtype == object and set(map(type, values.to_numpy())) <= {int, float, np.int64, np.float64}:
            num = values.astype(float)
        else:
            num = _parse_float(as_text(values).str.strip(), name, kind)
        arr = num.to_numpy()
        if kind == "integer" and np.isfinite(arr).all() and (arr % 1 != 0).any():
            raise DataError(f"column {name!r} declared integer has a fractional value {arr[arr % 1 != 0][0]!r}")
        return num
    if kind == "boolean":
        if pd.api.types.is_bool_dtype(values.dtype) or _all_python_bools(values):
            return values.astype(bool)
        low = as_text(values).str.strip().str.lower()
        ok = low.isin(TRUE_TOKENS | FALSE_TOKENS | {"1", "0", "1.0", "0.0"}).to_numpy(dtype=bool)
        if not ok.all():
            raise DataError(f"column {name!r} declared boolean has a value {values[~ok].iloc[0]!r}")
        return pd.Series(low.isin(TRUE_TOKENS | {"1", "1.0"}).to_numpy(dtype=bool), index=values.index)
    # categorical: keep the original value; text is stripped
    if isinstance(values.dtype, pd.StringDtype):
        return values.str.strip()
    if values.dtype == object:
        return values.map(lambda v: v.strip() if isinstance(v, str) else v)
    return values.astype(object)


def cast_frame(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """The canonical form of a table under `schema`: what `TabularEncoder.decode` returns.

    numeric → float64; integer → int64 (Int64 when nullable); boolean → bool (boolean when
    nullable); categorical → pandas Categorical over the declared categories. Missing → NA.
    """
    out = {}
    for spec in schema.columns:
        if spec.name not in frame.columns:
            raise DataError(f"column {spec.name!r} is missing from the table")
        col = frame[spec.name]
        miss = is_missing(col)
        vals = cast_values(col[~miss], spec.kind, spec.name)
        out[spec.name] = _assemble(vals if spec.kind == "categorical" else vals.to_numpy(), ~miss, spec)
    return pd.DataFrame(out, index=frame.index)


def _assemble(values: np.ndarray | pd.Series, present: np.ndarray, spec: ColumnSpec) -> pd.Series | pd.Categorical:
    """Build one canonical column from the present values (in order) and the present-mask."""
    n = len(present)
    if spec.kind == "numeric":
        arr = np.full(n, np.nan)
        arr[present] = values.astype(float)
        return pd.Series(arr, dtype="float64")
    if spec.kind == "integer":
        if spec.nullable or not present.all():
            arr = pd.array([pd.NA] * n, dtype="Int64")
            arr[present] = np.round(values.astype(float)).astype(np.int64)
            return pd.Series(arr)
        return pd.Series(np.round(values.astype(float)).astype(np.int64))
    if spec.kind == "boolean":
        if spec.nullable or not present.all():
            arr = pd.array([pd.NA] * n, dtype="boolean")
            arr[present] = values.astype(bool)
            return pd.Series(arr)
        return pd.Series(values.astype(bool))
    cats = list(spec.categories or [])
    codes = np.full(n, -1, dtype=np.int64)
    if present.any():
        lookup = {category_key(c): i for i, c in enumerate(cats)}
        series = values if isinstance(values, pd.Series) else pd.Series(values, dtype=object)
        inner, uniques = pd.factorize(series)  # hash once; look up each distinct value once
        uniques = list(uniques)
        found_u = np.array([lookup.get(category_key(v), -1) for v in uniques], dtype=np.int64)
        unknown = [v for v, f in zip(uniques, found_u) if f < 0]
        if unknown:
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            raise DataError(f"column {spec.name!r} has a value {unknown[0]!r} not in its declared categories{more}")
        codes[present] = found_u[inner]
    return pd.Series(pd.Categorical.from_codes(codes, categories=_category_index(cats)))


def category_key(v):
    """Category lookup key: 1, 1.0 and the text "1" are the same level (CSV text meets declared ints)."""
    if isinstance(v, (bool, np.bool_)):
        return ("b", bool(v))
    if isinstance(v, str):
        t = v.strip()
        try:
            v = int(t) if _INT_RE.match(t) else float(t)
        except ValueError:
            return ("s", t)
        if not math.isfinite(v):
            return ("s", t)
    if isinstance(v, (int, float, np.number)):
        f = float(v)
        return ("n", int(f)) if f.is_integer() else ("n", f)
    return ("s", str(v))


def _category_index(cats: Iterable[Any]) -> pd.Index:
    cats = list(cats)
    if all(isinstance(c, str) for c in cats):
        return pd.Index(cats, dtype=object)
    return pd.Index(cats, dtype=object) if any(isinstance(c, str) for c in cats) else pd.Index(cats)
