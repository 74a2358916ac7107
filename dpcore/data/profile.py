"""One vectorised pass over a text table: missing cells, parsed numbers and a kind guess per column.

Why: schema inference and the table checks looked at every column on its own, several times
(4 000-odd columns took 98 s and 1 GB). Cells of a CSV repeat a lot, so every distinct text is
stripped, lowered and parsed once (`pd.factorize` over the whole table) and the answers are
spread back to the cells as arrays of shape (rows, columns).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

_INT_PATTERN = r"[+-]?\d+"
# the spellings of a missing cell (lower-cased, stripped); the schema reads them from here
NA_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "#n/a", "-nan", "<na>"})


def is_text(values: pd.Series) -> bool:
    """A column held as text (object or pandas' string dtype): the cells to strip and parse."""
    return values.dtype == object or pd.api.types.is_string_dtype(values.dtype)


def as_text(values: pd.Series) -> pd.Series:
    """Text view of a column (pandas' vectorised string dtype; NA stays NA)."""
    return values if isinstance(values.dtype, pd.StringDtype) else values.astype("str")


@dataclass
class TextProfile:
    """Per-cell views of a text table (rows × columns) and a kind guess per column."""

    columns: list
    missing: np.ndarray   # bool: empty or an NA spelling
    number: np.ndarray    # float64: the parsed number, NaN where the text is not a number
    kind: list[str]       # "integer" | "numeric" | "boolean" | "categorical" (guessed from the rows)
    stripped: np.ndarray  # object: the stripped text of each cell

    def column(self, name) -> int:
        return self.columns.index(name)


def text_profile(frame: pd.DataFrame) -> TextProfile | None:
    """The profile of a table whose every cell is text (what `parse_csv` returns), else None."""
    if frame.shape[1] == 0 or not all(pd.api.types.is_string_dtype(t) or t == object for t in frame.dtypes):  # noqa: E721 - dtype equality
        return None
    arr = frame.to_numpy(dtype=object)
    codes, uniques = pd.factorize(arr.ravel(order="F"), use_na_sentinel=False)
    if not all(isinstance(u, str) for u in uniques):
        return None
    u = pd.Series(uniques, dtype=object).str.strip()
    low = u.str.lower()
    u_missing = low.isin(NA_TOKENS).to_numpy(dtype=bool)
    u_number = pd.to_numeric(u, errors="coerce").to_numpy(dtype=float)
    u_int = u.str.fullmatch(_INT_PATTERN).to_numpy(dtype=bool)
    u_bool = low.isin({"true", "false"}).to_numpy(dtype=bool)
    shape = (frame.shape[1], frame.shape[0])  # column-major ravel: reshape, then transpose
    cell = lambda a: a[codes].reshape(shape).T  # noqa: E731
    missing = cell(u_missing)
    present = ~missing
    number = np.where(present, cell(u_number), np.nan)
    parsed = ~np.isnan(number) | missing
    all_int = (cell(u_int) | missing).all(axis=0)
    all_num = parsed.all(axis=0)
    all_bool = (cell(u_bool) | missing).all(axis=0)
    any_present = present.any(axis=0)
    kind = ["categorical" if not p else "integer" if i else "numeric" if n else "boolean" if b else "categorical"
            for p, i, n, b in zip(any_present, all_int, all_num, all_bool)]
    return TextProfile(list(frame.columns), missing, number, kind, cell(u.to_numpy(dtype=object)))
