"""Marginals: how closely synthetic columns (1-way) and column pairs (2-way) follow the real ones.

Why total variation distance (TVD = ½ Σ |p − q|): it is the P3GM paper's 2-way metric (Table VIII:
5 equal-width bins per numeric column, mean over column pairs) and reads as "the largest difference
in probability any event over these bins can show". Columns are compared in the user's decoded
columns (`Dataset.to_frame()`): categoricals by category, numerics by equal-width bins.

Bins: image pixels and other unencoded features use the public [0, 1] feature range; decoded
numeric columns use the declared schema bounds when the schema exposes them, else the pooled
min/max of both sets (an evaluation statistic, shown to whoever holds the real data anyway).
Integer columns with at most 20 distinct values count as categorical.

Atoms: a decoded numeric column with declared bounds also gets one level per atom
(`dpcore.data.encoder.atom_values`: the bounds, and zero inside them), holding the rows exactly at
that value, so a point mass (25 % of incomes exactly 0) is compared as a share of its own: a model
that smears it over the first bin shows the gap, in the TVDs and in the 1-way bars ("= 0").
An atom no row of either set holds is an empty level and changes nothing.

Many columns (85 one-hot-decoded columns, 794 pixels): the pairs are capped to the `max_columns`
columns whose real 2-way-binned marginal has the highest entropy (constant columns such as image
borders give TVD 0 for every pair and would only dilute the mean); k columns give k(k − 1)/2 pairs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError, InvalidParameter

DISCRETE_MAX_LEVELS = 20
MISSING = "<missing>"


@dataclass
class _Column:
    name: str
    real: np.ndarray
    synth: np.ndarray
    discrete: bool
    bounds: tuple[float, float] | None = None
    categories: list | None = None
    atoms: tuple = ()  # values with a level of their own (decoded numerics with declared bounds)
    date_format: str | None = None  # a date column (day numbers): its bins are labelled as dates


def _schema_spec(ds: Dataset, col: str):
    """The schema's spec of column `col`, or None."""
    cols = getattr(ds.schema, "columns", None)
    if isinstance(cols, dict):
        return cols.get(col)
    if cols is not None:
        return next((c for c in cols if getattr(c, "name", None) == col), None)
    return None


def _schema_bounds(ds: Dataset, col: str) -> tuple[float, float] | None:
    """Declared (public) bounds of a numeric column, when the schema exposes them."""
    spec = _schema_spec(ds, col)
    for lo_name, hi_name in (("low", "high"), ("lower", "upper"), ("min", "max"), ("minimum", "maximum")):
        lo, hi = getattr(spec, lo_name, None), getattr(spec, hi_name, None)
        if lo is not None and hi is not None:
            try:
                return float(lo), float(hi)
            except (TypeError, ValueError):
                return None
    return None


def _columns(real: Dataset, synth: Dataset) -> list[_Column]:
    """Both sets' columns side by side: pixels straight from features (the same values to_frame()
    gives, without building an 800-column frame), anything encoded through to_frame()."""
    if real.encoder is None and synth.encoder is None:
        if real.n_features != synth.n_features:
            raise DataError(f"real has {real.n_features} features, synthetic {synth.n_features}")
        out = [_Column(f"px{i}", real.features[:, i], synth.features[:, i], False, (0.0, 1.0))
               for i in range(real.n_features)]
        if real.labels is not None and synth.labels is not None:
            names = None if real.label_names is None else [str(v) for v in real.label_names]
            out.append(_Column("label", _label_values(real), _label_values(synth), True, categories=names))
        return out
    fr, fs = real.to_frame(), synth.to_frame()
    missing = [c for c in fr.columns if c not in fs.columns]
    if missing:
        raise DataError(f"synthetic set lacks columns {missing[:5]}")
    out = []
    for c in fr.columns:
        r, s = fr[c], fs[c]
        num = pd.api.types.is_numeric_dtype(r) and pd.api.types.is_numeric_dtype(s) \
            and not pd.api.types.is_bool_dtype(r)
        if num and pd.api.types.is_integer_dtype(r) and pd.api.types.is_integer_dtype(s):
            num = len(np.union1d(r.unique(), s.unique())) > DISCRETE_MAX_LEVELS
        if num:
            bounds = _schema_bounds(real, str(c))
            atoms = () if bounds is None else _atoms(*bounds)
            fmt = getattr(_schema_spec(real, str(c)), "date_format", None)
            out.append(_Column(str(c), r.to_numpy(dtype=np.float64, na_value=np.nan),
                               s.to_numpy(dtype=np.float64, na_value=np.nan), False, bounds, atoms=atoms,
                               date_format=fmt if isinstance(fmt, str) else None))
        else:
            order = [str(v) for v in r.cat.categories] if isinstance(r.dtype, pd.CategoricalDtype) else None
            out.append(_Column(str(c), _as_text(r), _as_text(s), True, categories=order))
    return out


def _atoms(lo: float, hi: float) -> tuple:
    """The atom values of a column declared on [lo, hi] (the encoder's public rule)."""
    from types import SimpleNamespace

    from dpcore.data.encoder import atom_values

    return atom_values(SimpleNamespace(lower=lo, upper=hi)) if lo < hi else ()


def _as_text(values) -> np.ndarray:
    """Category values as strings, missing values as MISSING (so they count as a level)."""
    v = pd.Series(values, dtype=object)
    miss = v.isna().to_numpy()
    out = v.to_numpy().astype(str).astype(object)
    out[miss] = MISSING
    return out


def _label_values(ds: Dataset) -> np.ndarray:
    if ds.label_names is None:
        return ds.labels.astype(str).astype(object)
    return np.asarray([str(v) for v in ds.label_names], dtype=object)[ds.labels]


def _codes(col: _Column, bins: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer codes 0..m−1 for both sets (missing values get their own code, `bins`; atom j of a
    numeric column the code bins + 1 + j)."""
    if col.discrete:
        r, s = col.real, col.synth  # already text (see _columns)
        seen = set(col.categories or [])
        extra = sorted((set(pd.unique(r)) | set(pd.unique(s))) - seen)
        col.categories = list(col.categories or []) + extra  # declared order first, for the figures
        cats = pd.Index(col.categories)
        return cats.get_indexer(r).astype(np.int64), cats.get_indexer(s).astype(np.int64), len(cats)
    r = np.asarray(col.real, dtype=np.float64)
    s = np.asarray(col.synth, dtype=np.float64)
    lo, hi = col.bounds if col.bounds is not None else (np.nanmin(np.r_[r, s]), np.nanmax(np.r_[r, s]))
    col.bounds = (float(lo), float(hi))
    width = (hi - lo) or 1.0

    def code(x):
        c = np.clip(np.floor((np.nan_to_num(x, nan=lo) - lo) / width * bins), 0, bins - 1).astype(np.int64)
        for j, atom in enumerate(col.atoms):
            c[x == atom] = bins + 1 + j
        return np.where(np.isnan(x), bins, c)

    return code(r), code(s), bins + 1 + len(col.atoms)


def _number(v: float) -> str:
    """A bin edge as people write it: 4,500 and 90,000 (not 4.5e+03), 0.25, 1.5e-05."""
    v = float(v)
    if v == 0 or 1e-3 <= abs(v) < 1e9:
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return f"{v:.3g}"


def _tvd(a: np.ndarray, b: np.ndarray, m: int) -> float:
    p = np.bincount(a, minlength=m) / max(len(a), 1)
    q = np.bincount(b, minlength=m) / max(len(b), 1)
    return float(0.5 * np.abs(p - q).sum())


def _check(real: Dataset, synth: Dataset, bins: int) -> None:
    if real.n == 0 or synth.n == 0:
        raise DataError("marginals need non-empty real and synthetic sets")
    if int(bins) != bins or bins < 1:
        raise InvalidParameter(f"bins must be a positive integer, got {bins!r}")


def _pixel_codes(x: np.ndarray, bins: int) -> np.ndarray:
    return np.clip((x * bins).astype(np.int16), 0, bins - 1)


def one_way_tvd(real: Dataset, synth: Dataset, bins: int = 20) -> dict[str, float]:
    """TVD between real and synthetic 1-way marginals, per decoded column (numerics: `bins` bins)."""
    _check(real, synth, bins)
    out: dict[str, float] = {}
    for col in _columns(real, synth):
        if col.bounds == (0.0, 1.0) and real.encoder is None:  # pixels: fast path
            m = bins
            a, b = _pixel_codes(col.real, bins), _pixel_codes(col.synth, bins)
        else:
            a, b, m = _codes(col, bins)
        out[col.name] = _tvd(a, b, m)
    return out


def two_way_tvd(real: Dataset, synth: Dataset, bins: int = 5, max_columns: int = 20):
    """Mean TVD of 2-way marginals over column pairs (P3GM Table VIII protocol) and the k × k matrix.

    Returns (mean, DataFrame) with NaN on the diagonal. Only the `max_columns` highest-entropy
    columns (in the real data) take part; see the module docstring.
    """
    _check(real, synth, bins)
    if int(max_columns) != max_columns or max_columns < 2:
        raise InvalidParameter(f"max_columns must be an integer >= 2, got {max_columns!r}")
    cols = _columns(real, synth)
    coded = [_codes(c, bins) for c in cols]
    ent = []
    for a, _, m in coded:
        p = np.bincount(a, minlength=m) / len(a)
        p = p[p > 0]
        ent.append(float(-(p * np.log(p)).sum()))
    if len(cols) < 2:
        raise DataError("2-way marginals need at least two columns")
    keep = sorted(np.argsort(-np.asarray(ent), kind="stable")[:max_columns])
    names = [cols[i].name for i in keep]
    k = len(keep)
    mat = np.full((k, k), np.nan)
    for ii in range(k):
        ai, bi, mi = coded[keep[ii]]
        for jj in range(ii + 1, k):
            aj, bj, mj = coded[keep[jj]]
            mat[ii, jj] = mat[jj, ii] = _tvd(ai * mj + aj, bi * mj + bj, mi * mj)
    mean = float(np.nanmean(mat)) if k > 1 else float("nan")
    return mean, pd.DataFrame(mat, index=names, columns=names)


def _date(days: float, fmt: str) -> str:
    """A bin edge of a date column (day numbers) in the file's own format: 2023-01-01, not 19,358."""
    from dpcore.data.dates import from_days

    return str(from_days(np.array([days]), fmt)[0])


def one_way_histogram(real: Dataset, synth: Dataset, column: str, bins: int = 20) -> dict:
    """One decoded column's histogram, real vs synthetic: {"bins": labels (categories, or numeric bin
    ranges with each atom "= value" beside them, in the order of their values), "real",
    "synthetic": shares per bin, "atom": whether each bin is an atom, "tvd"}; an empty "missing"
    bin or atom is left out. (Drawn by `dpcore.figures.data.one_way_figure`.)"""
    col = next((c for c in _columns(real, synth) if c.name == column), None)
    if col is None:
        raise InvalidParameter(f"unknown column {column!r}")
    a, b, m = _codes(col, bins)
    tvd = _tvd(a, b, m)
    p = np.bincount(a, minlength=m) / len(a)
    q = np.bincount(b, minlength=m) / len(b)
    if col.discrete:
        return {"bins": list(col.categories), "real": p, "synthetic": q, "atom": [False] * len(p), "tvd": tvd}
    lo, hi = col.bounds
    edges = np.linspace(lo, hi, bins + 1)
    text = _number if col.date_format is None else (lambda v: _date(v, col.date_format))
    shown = [text(e) for e in edges]
    labels = [f"{shown[i]}–{shown[i + 1]}" for i in range(bins)] + ["missing"] + [f"= {text(a)}" for a in col.atoms]
    # where each level sits on the axis: bins at their middle, an atom at its value (before the bin
    # it lies in), missing last
    place = [((edges[i] + edges[i + 1]) / 2, 1) for i in range(bins)] + [(np.inf, 2)] + \
            [(a, 0) for a in col.atoms]
    keep = [i for i in sorted(range(m), key=lambda i: place[i])
            if i < bins or p[i] > 0 or q[i] > 0]
    return {"bins": [labels[i] for i in keep], "real": p[keep], "synthetic": q[keep],
            "atom": [i > bins for i in keep], "tvd": tvd}
