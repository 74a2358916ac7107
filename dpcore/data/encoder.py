"""Reversible tabular encoder: original columns ↔ a float32 matrix in [0, 1].

Why reversible and schema-driven: models learn on numbers in [0, 1], users want synthetic rows in
their own columns, types and category names. Every constant used here (bounds, category lists)
comes from the public `Schema`, never from the rows being encoded, so encoding leaks nothing that
the schema did not already declare.

Layout, one block per feature column (the target is *not* a feature; it becomes `labels`):
- numeric / integer: one column (x - lower) / (upper - lower), clipped to [0, 1];
- boolean: one 0/1 column;
- categorical: one-hot over the declared categories;
- nullable columns: with missing="indicator" a 0/1 column `name__missing` follows the block
  (the value is imputed by 0, i.e. the lower bound / an all-zero one-hot); with missing="category"
  a categorical column gets an extra level `MISSING` in its one-hot block instead (numeric and
  boolean columns always use an indicator, having no categories to extend).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpcore.data.decode_shares import flag_rows, level_codes
from dpcore.data.schema import MAX_DECIMALS, Schema, _assemble, cast_frame, category_key
from dpcore.errors import DataError, InvalidParameter

MISSING_MODES = ("indicator", "category")
MISSING = "<missing>"
ATOM_TOLERANCE = 2e-7   # a few float32 steps near 1: an encoded value this close to an atom is on it


def atoms_of(spec) -> tuple:
    """Encoded positions of a numeric column's atoms (point masses: an income of exactly 0, an
    amount at its cap): its lower and upper bounds, and zero when it lies strictly inside them.

    Why a fixed rule: these are functions of the public (declared or released) bounds alone, so a
    model may give them a level of their own without reading anything off the rows; their shares
    are then learned or measured under the model's budget like any other level."""
    lo, hi = float(spec.lower), float(spec.upper)
    atoms = [0.0, 1.0]
    if lo < 0.0 < hi:
        atoms.insert(1, (0.0 - lo) / (hi - lo))
    return tuple(atoms)


def atom_values(spec) -> tuple:
    """The column values at `atoms_of(spec)`: (lower, upper) or (lower, 0, upper)."""
    lo, hi = float(spec.lower), float(spec.upper)
    return (lo, 0.0, hi) if lo < 0.0 < hi else (lo, hi)


def value_decimals(spec) -> int | None:
    """The decimals a numeric column's decoded values are rounded to: its schema `decimals`
    (declared, or read off the rows with data-derived bounds), else the digits the encoding can
    carry: a value is stored as a float32 in [0, 1] of its bounds, so digits below
    (upper − lower)·2⁻²⁴ are round-off (a money column over 0–100 000 gets cents, 0–20 000 three
    decimals, a ratio over 0–1.5 six). Why this default: the bounds are public, so it reads nothing
    off the rows (a precision read off them would be a data-derived fact, docs/data-privacy.md), and
    it stops a synthetic amount printing as 9696.906059980392. None for non-numeric columns."""
    if spec.kind != "numeric":
        return None
    if getattr(spec, "decimals", None) is not None:
        return int(spec.decimals)
    resolution = (float(spec.upper) - float(spec.lower)) * 2.0 ** -24
    return int(np.clip(np.floor(-np.log10(resolution)), 0, MAX_DECIMALS))


@dataclass(frozen=True)
class Block:
    """Columns [start, stop) of the feature matrix that encode one original column.

    role: "value" (numeric/integer/boolean), "onehot" (categorical) or "missing" (indicator).
    """

    column: str
    role: str
    start: int
    stop: int


class TabularEncoder:
    """encode(frame) -> (features float32 (n, d), labels int64 | None); decode inverts it.

    Decoding accepts continuous synthetic values: numbers are clipped to the bounds (integers
    rounded, numeric columns rounded to `value_decimals`; a value on an atom, `atoms_of`,
    is written as the atom exactly); one-hot blocks, booleans and missing indicators keep the shares
    of their values' column means (`dpcore.data.decode_shares`: the same as an argmax and a 0.5
    threshold on exact 0/1 values, not on a flat model's soft ones).
    """

    def __init__(self, schema: Schema, missing: str = "indicator"):
        if missing not in MISSING_MODES:
            raise InvalidParameter(f"missing must be one of {MISSING_MODES}, got {missing!r}")
        for spec in schema.feature_columns:
            if spec.is_continuous and (spec.lower is None or spec.upper is None):
                raise InvalidParameter(f"column {spec.name!r} needs bounds (lower, upper) to be encoded")
            if spec.kind == "categorical" and not spec.categories:
                raise InvalidParameter(f"column {spec.name!r} needs its list of categories to be encoded")
        self.schema = schema
        self.missing = missing
        blocks, names, pos = [], [], 0
        for spec in schema.feature_columns:
            if spec.kind == "categorical":
                levels = [str(c) for c in spec.categories]
                if spec.nullable and missing == "category":
                    levels.append(MISSING)
                blocks.append(Block(spec.name, "onehot", pos, pos + len(levels)))
                names += [f"{spec.name}={c}" for c in levels]
                pos += len(levels)
            else:
                blocks.append(Block(spec.name, "value", pos, pos + 1))
                names.append(spec.name)
                pos += 1
            if spec.nullable and not (spec.kind == "categorical" and missing == "category"):
                blocks.append(Block(spec.name, "missing", pos, pos + 1))
                names.append(f"{spec.name}__missing")
                pos += 1
        self.blocks: list[Block] = blocks
        self.feature_names: list[str] = names

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    def onehot_blocks(self) -> list[tuple[int, int]]:
        """(start, stop) of every one-hot block (models may put a softmax there)."""
        return [(b.start, b.stop) for b in self.blocks if b.role == "onehot"]

    # ---------------------------------------------------------------- encode
    def encode(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
        """Rows → features in [0, 1] (values outside the declared bounds are clipped) and labels."""
        schema = self.schema
        need = [c.name for c in schema.feature_columns]
        absent = [c for c in need if c not in frame.columns]
        if absent:
            raise DataError(f"table lacks column(s): {', '.join(map(str, absent))}")
        specs = {c.name: c for c in schema.columns}
        has_target = schema.target is not None and schema.target in frame.columns
        canon = cast_frame(frame[need + ([schema.target] if has_target else [])],
                           Schema([specs[c] for c in need + ([schema.target] if has_target else [])],
                                  target=schema.target if has_target else None,
                                  label_names=schema.label_names if has_target else None))
        return self._encode_canonical(canon)

    def _encode_canonical(self, canon: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
        """encode() on a table already in `cast_frame` form (skips re-parsing)."""
        schema = self.schema
        specs = {c.name: c for c in schema.columns}
        has_target = schema.target is not None and schema.target in canon.columns
        n = len(canon)
        out = np.zeros((n, self.n_features), dtype=np.float32)
        for b in self.blocks:
            spec = specs[b.column]
            col = canon[b.column]
            miss = col.isna().to_numpy()
            if miss.any() and not spec.nullable:
                raise DataError(f"column {b.column!r} has {int(miss.sum())} missing values but is not declared nullable")
            if b.role == "missing":
                out[:, b.start] = miss
            elif b.role == "value":
                if spec.kind == "boolean":
                    out[~miss, b.start] = col[~miss].astype(bool).to_numpy()
                else:
                    x = col.to_numpy(dtype=float, na_value=np.nan)[~miss]
                    if not np.isfinite(x).all():
                        raise DataError(f"column {b.column!r} contains infinite values")
                    lo, hi = float(spec.lower), float(spec.upper)
                    out[~miss, b.start] = np.clip((x - lo) / (hi - lo), 0.0, 1.0)
            else:  # onehot
                codes = col.cat.codes.to_numpy().astype(np.int64)  # int8 + a start past 127 overflows
                rows = np.flatnonzero(codes >= 0)
                out[rows, b.start + codes[rows]] = 1.0
                if miss.any() and b.stop - b.start > len(spec.categories):  # MISSING level
                    out[miss, b.stop - 1] = 1.0
        labels = None
        if has_target:
            labels = label_codes(canon[schema.target], schema.label_names, schema.target)
        return out, labels

    # ---------------------------------------------------------------- decode
    def decode(self, features: np.ndarray, labels: np.ndarray | None = None) -> pd.DataFrame:
        """Features (real or synthetic, any real values) → rows in the original columns and types."""
        x = np.asarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise InvalidParameter(f"features must have shape (n, {self.n_features}), got {x.shape}")
        n = x.shape[0]
        by_col: dict[str, dict[str, Block]] = {}
        for b in self.blocks:
            by_col.setdefault(b.column, {})[b.role] = b
        cols = {}
        for spec in self.schema.columns:
            if spec.name == self.schema.target:
                if labels is None:
                    continue
                cols[spec.name] = self._decode_labels(np.asarray(labels), spec)
                continue
            parts = by_col[spec.name]
            present = np.ones(n, dtype=bool)
            if "missing" in parts:
                present = ~flag_rows(x[:, parts["missing"].start])
            if "onehot" in parts:
                b = parts["onehot"]
                codes = level_codes(x[:, b.start:b.stop])
                if b.stop - b.start > len(spec.categories):
                    present &= codes < len(spec.categories)
                values = np.array(spec.categories, dtype=object)[np.minimum(codes, len(spec.categories) - 1)]
            else:
                v = x[:, parts["value"].start]
                if spec.kind == "boolean":
                    values = flag_rows(v)
                else:
                    lo, hi = float(spec.lower), float(spec.upper)
                    values = lo + np.clip(v, 0.0, 1.0) * (hi - lo)
                    for pos, exact in zip(atoms_of(spec), atom_values(spec), strict=True):
                        # a value a model put on an atom is that value, not 1e-7 off it (float32)
                        values[np.abs(v - pos) <= ATOM_TOLERANCE] = exact
                    if spec.kind == "integer":
                        values = np.clip(np.round(values), np.ceil(lo), np.floor(hi))
                    elif (places := value_decimals(spec)) is not None:  # the column's precision
                        values = np.round(values, places)  # (or the encoding's), not 12 decimals
            cols[spec.name] = _assemble(np.asarray(values)[present], present, spec)
        frame = pd.DataFrame({k: (v.values if isinstance(v, pd.Series) else v) for k, v in cols.items()})
        return frame

    def _decode_labels(self, labels: np.ndarray, spec) -> pd.Series:
        names = list(self.schema.label_names)
        if labels.shape != (len(labels),) or (len(labels) and (labels.min() < 0 or labels.max() >= len(names))):
            raise InvalidParameter(f"labels must be class indices in [0, {len(names)})")
        values = np.array(names, dtype=object)[labels.astype(np.int64)]
        return _assemble(values, np.ones(len(labels), dtype=bool), spec)


def label_codes(values: pd.Series, label_names: list, target: str) -> np.ndarray:
    """Target values → class indices into `label_names` (missing or unknown classes raise)."""
    miss = values.isna().to_numpy()
    if miss.any():
        raise DataError(f"target column {target!r} has {int(miss.sum())} missing values")
    lookup = {category_key(v): i for i, v in enumerate(label_names)}
    inner, uniques = pd.factorize(pd.Series(values.to_numpy(dtype=object), dtype=object))
    found = np.array([lookup.get(category_key(v), -1) for v in uniques], dtype=np.int64)
    if (found < 0).any():
        raise DataError(f"target column {target!r} has a class {uniques[np.flatnonzero(found < 0)[0]]!r} "
                        "not in its declared classes")
    return found[inner] if len(inner) else np.zeros(0, dtype=np.int64)
