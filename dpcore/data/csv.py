"""CSV upload → Dataset, with every malformed input turned into a one-line DataError.

Why we parse with the standard `csv` module instead of `pandas.read_csv`: pandas silently pads
short rows with NaN and guesses types from text; we need to *reject* ragged rows, keep the raw
text so a user's type override ("zip codes are categories") still sees "02134", and name the
problem (row number, column, byte offset) in one line.
"""
from __future__ import annotations

import csv as _csv
import io
import os
from pathlib import Path
from typing import Any

import pandas as pd

from dpcore.data.dataset import Dataset
from dpcore.data.dp_bounds import privatise_bounds
from dpcore.data.encoder import MISSING_MODES, TabularEncoder
from dpcore.data.schema import DEFAULT_MAX_LEVELS, Schema, _is_text, cast_frame, infer_schema, is_missing
from dpcore.errors import DataError, InvalidParameter

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
OTHER_DELIMITERS = (",", ";", "\t", "|")
UNDECLARED_MODES = ("data", "dp")


def read_bytes(source: Any, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[bytes, str]:
    """Bytes of a path, bytes object or file-like (e.g. a Streamlit upload), size-checked first."""
    if max_bytes is None or max_bytes <= 0:
        raise InvalidParameter(f"max_bytes must be a positive number of bytes, got {max_bytes!r}")
    limit = f"the {max_bytes / 2**20:.3g} MB limit (max_bytes)"
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, name = bytes(source), "uploaded file"
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise DataError(f"file not found: {path}")
        size = path.stat().st_size
        if size > max_bytes:
            raise DataError(f"{path.name} is {size / 2**20:.3g} MB, over {limit}")
        data, name = path.read_bytes(), path.name
    elif hasattr(source, "read"):
        size = getattr(source, "size", None)
        if size is not None and size > max_bytes:
            raise DataError(f"file is {size / 2**20:.3g} MB, over {limit}")
        data = source.read(max_bytes + 1)
        data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        name = Path(str(getattr(source, "name", "uploaded file"))).name
    else:
        raise InvalidParameter(f"source must be a path, bytes or a file object, got {type(source).__name__}")
    if len(data) > max_bytes:
        raise DataError(f"{name} is over {limit}")
    return data, name


def parse_csv(source: Any, *, delimiter: str = ",", max_bytes: int = DEFAULT_MAX_BYTES) -> pd.DataFrame:
    """Raw text table (object columns, values as written) after the structural checks."""
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\r\n":
        raise InvalidParameter(f"delimiter must be one character (not a quote or newline), got {delimiter!r}")
    data, name = read_bytes(source, max_bytes)
    if not data.strip():
        raise DataError(f"{name} is empty")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{name} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                        "save it as UTF-8") from None
    if "\0" in text:
        raise DataError(f"{name} contains NUL bytes; it is not a text CSV file")
    # Structure first, with the csv module (pandas would silently pad short rows) ...
    reader = _csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header, width, n_rows = None, 0, 0
    try:
        for r in reader:
            if not r:
                continue  # blank line
            if header is None:
                header, width = r, len(r)
                _check_header(header, delimiter, name)
                continue
            n_rows += 1
            if len(r) != width:
                raise DataError(f"{name}: data row {n_rows} has {len(r)} fields, the header has {width} "
                                "(ragged rows, or a delimiter inside an unquoted value)")
    except _csv.Error as exc:
        raise DataError(f"{name}: malformed CSV near line {reader.line_num}: {exc}") from None
    if header is None:
        raise DataError(f"{name} is empty")
    if n_rows == 0:
        raise DataError(f"{name} has a header but no data rows")
    # ... then the fast C parser, every value kept as text (types are decided by the schema).
    try:
        frame = pd.read_csv(io.StringIO(text), sep=delimiter, dtype="str", keep_default_na=False,
                            na_filter=False, header=0, skip_blank_lines=True, engine="c")
    except (ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{name}: malformed CSV: {' '.join(str(exc).split())}") from None
    if frame.shape != (n_rows, width):
        raise DataError(f"{name}: inconsistent CSV structure (quoted line breaks or blank fields)")
    frame.columns = [h.strip() for h in header]
    return frame


def _check_header(raw: list[str], delimiter: str, name: str) -> None:
    header = [h.strip() for h in raw]
    if len(header) == 1:
        for other in OTHER_DELIMITERS:
            if other != delimiter and other in raw[0]:
                raise DataError(f"{name} looks delimited by {other!r}, not the declared {delimiter!r}; "
                                f"pass delimiter={other!r}")
    blank = [i + 1 for i, h in enumerate(header) if not h]
    if blank:
        raise DataError(f"{name}: column {blank[0]} of the header has no name")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise DataError(f"{name} has duplicate column names: {', '.join(dup)}")


def check_table(frame: pd.DataFrame, *, target: str | None = None) -> None:
    """Content checks that make a table unusable for training (each names the column)."""
    if frame.shape[0] == 0:
        raise DataError("the table has a header but no data rows")
    if target is not None:
        if target not in frame.columns:
            raise InvalidParameter(f"target column {target!r} not found; columns are: "
                                   f"{', '.join(map(str, frame.columns))}")
        t = frame[target]
        classes = pd.unique(t[~is_missing(t)].astype("str").str.strip())
        if len(classes) < 2:
            raise DataError(f"target column {target!r} has only one class"
                            + (f" ({classes[0]!r})" if len(classes) else "") + "; it needs at least two")
    n_features = frame.shape[1] - (target is not None)
    if n_features < 1:
        raise DataError("the table has no feature columns besides the target")
    if n_features > frame.shape[0]:
        raise DataError(f"the table has more columns ({n_features}) than rows ({frame.shape[0]}); "
                        "it cannot be learned from")
    for name in frame.columns:
        col = frame[name]
        miss = is_missing(col)
        if miss.all():
            raise DataError(f"column {name!r} is empty (all values missing); drop it")
        present = col[~miss]
        first = present.iloc[0]
        keys = present.astype("str").str.strip() if _is_text(present) else present
        if name != target and not miss.any() and (keys == keys.iloc[0]).all():
            raise DataError(f"column {name!r} is constant (every value is {first!r}); drop it")


def dataset_from_frame(frame: pd.DataFrame, *, name: str = "table", target: str | None = None,
                       schema: Schema | None = None, types: dict | None = None,
                       bounds: dict | None = None, categories: dict | None = None,
                       missing: str = "indicator", max_levels: int = DEFAULT_MAX_LEVELS,
                       undeclared: str = "data", bounds_noise_multiplier: float = 10.0, seed: int | None = None,
                       meta: dict | None = None) -> Dataset:
    """Check, type, encode a table. With no `schema`, one is inferred (declared `bounds` and
    `categories` are public; the rest is data-derived and marks the Dataset
    `preprocessing_private=False`).

    undeclared: "data" (min/max of the rows; not covered by ε) or "dp" (numeric bounds from a noisy
    histogram, `dpcore.data.dp_bounds`; its ledger record lands in meta["privacy_records"], which the
    model must add to its ledger). Category lists are never privatised: declare them.
    """
    if missing not in MISSING_MODES:
        raise InvalidParameter(f"missing must be one of {MISSING_MODES}, got {missing!r}")
    if undeclared not in UNDECLARED_MODES:
        raise InvalidParameter(f"undeclared must be one of {UNDECLARED_MODES}, got {undeclared!r}")
    if schema is not None:
        target = schema.target if target is None else target
        if target != schema.target:
            raise InvalidParameter(f"target {target!r} differs from the schema's target {schema.target!r}")
    check_table(frame, target=target)
    if schema is None:
        schema = infer_schema(frame, target=target, types=types, bounds=bounds, categories=categories,
                              max_levels=max_levels)
    records = []
    if undeclared == "dp":
        schema, record = privatise_bounds(frame, schema, noise_multiplier=bounds_noise_multiplier, seed=seed)
        records = [record] if record else []
    else:
        frame = frame[[c for c in schema.names if c in frame.columns]]
    canon = cast_frame(frame, schema)
    clipped = {}
    for spec in schema.feature_columns:
        if spec.is_continuous:
            x = canon[spec.name].to_numpy(dtype=float, na_value=float("nan"))
            if not pd.isna(x).all() and (abs(x[~pd.isna(x)]) == float("inf")).any():
                raise DataError(f"column {spec.name!r} contains infinite values")
            count = int(((x < spec.lower) | (x > spec.upper)).sum())
            if count:
                clipped[spec.name] = count
    encoder = TabularEncoder(schema, missing=missing)
    features, labels = encoder._encode_canonical(canon)
    return Dataset(name=name, features=features, labels=labels, label_names=schema.label_names,
                   schema=schema, encoder=encoder, preprocessing_private=schema.private,
                   meta={**(meta or {}), "missing": missing, "clipped": clipped,
                         "data_derived": schema.data_derived, "privacy_records": records})


def read_csv(source: Any, *, target: str | None = None, delimiter: str = ",", types: dict | None = None,
             missing: str = "indicator", bounds: dict | None = None, categories: dict | None = None,
             schema: Schema | None = None, drop: list[str] | None = None,
             max_levels: int = DEFAULT_MAX_LEVELS, max_bytes: int = DEFAULT_MAX_BYTES,
             undeclared: str = "data", bounds_noise_multiplier: float = 10.0, seed: int | None = None,
             name: str | None = None) -> Dataset:
    """A CSV file (path, bytes or upload) → Dataset.

    types: {column: "numeric"|"integer"|"categorical"|"boolean"} overrides the inferred kinds.
    bounds / categories: the public domain per column; columns without them get data-derived
        bounds and the Dataset is marked `preprocessing_private=False` ...
    undeclared: ... unless undeclared="dp": numeric bounds then come from a noisy histogram with
        noise multiplier `bounds_noise_multiplier`, ledgered in meta["privacy_records"].
        Undeclared category lists stay data-derived (declare them to be covered by ε).
    missing: "indicator" (a 0/1 column per nullable column) or "category" (an extra one-hot level
        for nullable categorical columns).
    drop: columns to ignore (identifiers, free text).
    """
    frame = parse_csv(source, delimiter=delimiter, max_bytes=max_bytes)
    if drop:
        unknown = [c for c in drop if c not in frame.columns]
        if unknown:
            raise InvalidParameter(f"drop names unknown column(s): {', '.join(map(str, unknown))}")
        frame = frame.drop(columns=list(drop))
    label = name or (Path(str(source)).name if isinstance(source, (str, os.PathLike)) else
                     Path(str(getattr(source, "name", "uploaded.csv"))).name)
    return dataset_from_frame(frame, name=label, target=target, schema=schema, types=types, bounds=bounds,
                              categories=categories, missing=missing, max_levels=max_levels,
                              undeclared=undeclared, bounds_noise_multiplier=bounds_noise_multiplier, seed=seed,
                              meta={"source": label, "delimiter": delimiter})
