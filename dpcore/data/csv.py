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
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from dpcore.data.conform import conform
from dpcore.data.dataset import Dataset
from dpcore.data.dates import dates_as_numbers, with_date_formats
from dpcore.data.dp_bounds import privatise_bounds
from dpcore.data.encoder import MISSING_MODES, TabularEncoder
from dpcore.data.infer import declared_kind, infer_schema
from dpcore.data.profile import is_text, text_profile
from dpcore.data.schema import DEFAULT_MAX_LEVELS, Schema, cast_frame, is_missing
from dpcore.data.split import row_digests
from dpcore.errors import DataError, InvalidParameter

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
OTHER_DELIMITERS = (",", ";", "\t", "|")
UNDECLARED_MODES = ("data", "dp")
# Hard caps on a table's shape (bytes alone let 12 M tiny rows or 5 000 columns through).
DEFAULT_MAX_ROWS = 2_000_000
DEFAULT_MAX_COLUMNS = 10_000
MAX_CELLS = 50_000_000  # columns × rows, checked on the header and the line count before parsing
CAP_ENV = {"max_rows": "DPCORE_MAX_ROWS", "max_columns": "DPCORE_MAX_COLUMNS"}


def shape_caps(max_rows: int | None = None, max_columns: int | None = None) -> tuple[int, int]:
    """(max_rows, max_columns): the arguments, else $DPCORE_MAX_ROWS / $DPCORE_MAX_COLUMNS, else the defaults."""
    out = []
    for arg, given, default in (("max_rows", max_rows, DEFAULT_MAX_ROWS),
                                ("max_columns", max_columns, DEFAULT_MAX_COLUMNS)):
        source = arg
        if given is None:
            given, source = os.environ.get(CAP_ENV[arg]), CAP_ENV[arg]
        if given is None or given == "":
            out.append(default)
            continue
        try:
            value = int(given)
        except (TypeError, ValueError):
            value = 0
        if value < 1 or str(value) != str(given).strip():
            raise InvalidParameter(f"{source} must be a positive whole number, got {given!r}")
        out.append(value)
    return out[0], out[1]


def check_shape(rows: int, columns: int, *, max_rows: int | None = None, max_columns: int | None = None,
                name: str = "the table") -> None:
    """One-line DataError when a table is over the row or column cap (says how to raise it)."""
    cap_rows, cap_cols = shape_caps(max_rows, max_columns)
    if columns > cap_cols:
        raise DataError(f"{name} has {columns} columns, over the cap of {cap_cols} (max_columns, or the "
                        f"environment variable {CAP_ENV['max_columns']})")
    if rows > cap_rows:
        raise DataError(f"{name} has more than {cap_rows} rows, over the cap (max_rows, or the "
                        f"environment variable {CAP_ENV['max_rows']})")


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


def parse_csv(source: Any, *, delimiter: str = ",", max_bytes: int = DEFAULT_MAX_BYTES,
              max_rows: int | None = None, max_columns: int | None = None, name: str | None = None) -> pd.DataFrame:
    """Raw text table (object columns, values as written) after the structural checks.

    name: the table's name in error messages (a stored upload's is the name its owner gave it,
    never the content-hashed file it is kept as); default the file's own name.

    max_rows / max_columns: hard caps on the shape (default: $DPCORE_MAX_ROWS / $DPCORE_MAX_COLUMNS,
    else 2 000 000 rows and 10 000 columns), checked on the header and while rows are counted,
    before any parsing or inference.
    """
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\r\n":
        raise InvalidParameter(f"delimiter must be one character (not a quote or newline), got {delimiter!r}")
    cap_rows, cap_cols = shape_caps(max_rows, max_columns)
    data, found = read_bytes(source, max_bytes)
    name = name or found
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
                check_shape(0, width, max_columns=cap_cols, name=name)
                _check_header(header, delimiter, name)
                lines = text.count("\n") + (not text.endswith("\n"))
                if 1 < lines and width - 1 > lines - 1:  # even with one label column, fewer rows than features
                    raise DataError(f"{name}: the table has more columns ({width - 1}) than rows ({lines - 1}) "
                                    "even with one of them the target (checked before parsing); it cannot be "
                                    "learned from")
                if width * (lines - 1) > MAX_CELLS:
                    raise DataError(f"{name}: {width} columns × up to {lines - 1} rows is over the cap of "
                                    f"{MAX_CELLS} cells")
                if lines <= cap_rows:  # newlines bound the rows: no need to count them
                    cap_rows = None
                continue
            n_rows += 1
            if cap_rows is not None and n_rows > cap_rows:
                check_shape(n_rows, width, max_rows=cap_rows, max_columns=cap_cols, name=name)
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
    dup = sorted(h for h, k in Counter(header).items() if k > 1)
    if dup:
        raise DataError(f"{name} has duplicate column names: {', '.join(dup)}")


def check_table(frame: pd.DataFrame, *, target: str | None = None, declared: set | frozenset = frozenset()
                ) -> None:
    """Content checks that make a table unusable for training (each names the column).

    Columns in `declared` (kind given by the user) skip the empty/constant checks: those answers
    depend on the rows, and a declared column must behave the same whatever one row holds.
    """
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
    todo = [j for j, c in enumerate(frame.columns) if c not in declared]
    prof = text_profile(frame.iloc[:, todo]) if todo else None
    for k, j in enumerate(todo):
        name, col = frame.columns[j], frame.iloc[:, j]
        miss = prof.missing[:, k] if prof is not None else is_missing(col)
        if miss.all():
            raise DataError(f"column {name!r} is empty (all values missing); drop it")
        if name == target or miss.any():
            continue
        if prof is not None:
            keys = prof.stripped[:, k]
        else:
            keys = col.astype("str").str.strip().to_numpy() if is_text(col) else col.to_numpy()
        if (keys == keys[0]).all():
            raise DataError(f"column {name!r} is constant (every value is {col.iloc[0]!r}); drop it")


def dataset_from_frame(frame: pd.DataFrame, *, name: str = "table", target: str | None = None,
                       schema: Schema | None = None, types: dict | None = None,
                       bounds: dict | None = None, categories: dict | None = None, nullable: dict | None = None,
                       missing: str = "indicator", max_levels: int = DEFAULT_MAX_LEVELS,
                       undeclared: str = "data", bounds_noise_multiplier: float = 10.0, seed: int | None = None,
                       meta: dict | None = None, max_rows: int | None = None, max_columns: int | None = None,
                       date_formats: dict | None = None) -> Dataset:
    """Check, type, encode a table. With no `schema`, one is inferred (`dpcore.data.infer.infer_schema`:
    declared kinds, `bounds` and `categories` are public; the rest is data-derived and marks the
    Dataset `preprocessing_private=False`). Declared columns are fitted row by row into their
    domain (`dpcore.data.conform`), so one row never changes what is published.

    undeclared: "data" (min/max of the rows; not covered by ε) or "dp" (numeric bounds of columns
    whose kind is declared, from a noisy histogram, `dpcore.data.dp_bounds`; its ledger record
    lands in meta["privacy_records"], which every model's ledger starts with). Category lists are
    never privatised: declare them.

    date_formats: {column: format} declares date columns with their format (one of
    dpcore.data.dates.FORMATS): a cell that does not parse in it is missing. A date column without a
    declared format has its format read off the rows, and origin "data" (dpcore.data.dates).
    Each row's identity for a keyed split is computed from its cells as written, before any of this.
    """
    if missing not in MISSING_MODES:
        raise InvalidParameter(f"missing must be one of {MISSING_MODES}, got {missing!r}")
    if undeclared not in UNDECLARED_MODES:
        raise InvalidParameter(f"undeclared must be one of {UNDECLARED_MODES}, got {undeclared!r}")
    check_shape(*frame.shape, max_rows=max_rows, max_columns=max_columns)
    row_ids = row_digests(frame)  # each row's identity for a keyed split: its cells as written
    frame, types, formats, read = dates_as_numbers(frame, schema=schema, types=types, bounds=bounds,
                                                   categories=categories, target=target, date_formats=date_formats)
    if schema is not None:
        target = schema.target if target is None else target
        if target != schema.target:
            raise InvalidParameter(f"target {target!r} differs from the schema's target {schema.target!r}")
        kind_declared = set(schema.names)
    else:
        kind_declared = {c for c in frame.columns if declared_kind(c, types or {}, bounds or {}, categories or {})}
    check_table(frame, target=target, declared=kind_declared)
    if schema is None:
        schema = infer_schema(frame, target=target, types=types, bounds=bounds, categories=categories,
                              nullable=nullable, max_levels=max_levels)
        if formats:
            schema = with_date_formats(schema, formats)
    frame = frame[[c for c in schema.names if c in frame.columns]]
    records = []
    if undeclared == "dp":
        todo = [c.name for c in schema.feature_columns
                if c.is_continuous and c.origin == "data" and c.name in kind_declared]
        frame = conform(frame, schema, todo)  # parse, round; no bounds yet
        schema, record = privatise_bounds(frame, schema, noise_multiplier=bounds_noise_multiplier, seed=seed,
                                          columns=todo)
        records = [record] if record else []
    if read:  # a format read off the rows: not covered, whatever the bounds (after the DP ones)
        schema = with_date_formats(schema, formats, read)
    public = [c.name for c in schema.feature_columns if not c.data_derived and c.name in frame.columns]
    canon = cast_frame(conform(frame, schema, public), schema)
    encoder = TabularEncoder(schema, missing=missing)
    features, labels = encoder._encode_canonical(canon)
    return Dataset(name=name, features=features, labels=labels, label_names=schema.label_names,
                   schema=schema, encoder=encoder, preprocessing_private=schema.private, row_ids=row_ids,
                   meta={**(meta or {}), "missing": missing, "data_derived": schema.data_derived,
                         "privacy_records": records})


def read_csv(source: Any, *, target: str | None = None, delimiter: str = ",", types: dict | None = None,
             missing: str = "indicator", bounds: dict | None = None, categories: dict | None = None,
             schema: Schema | None = None, drop: list[str] | None = None,
             max_levels: int = DEFAULT_MAX_LEVELS, max_bytes: int = DEFAULT_MAX_BYTES,
             undeclared: str = "data", bounds_noise_multiplier: float = 10.0, seed: int | None = None,
             name: str | None = None, nullable: dict | None = None, max_rows: int | None = None,
             max_columns: int | None = None, date_formats: dict | None = None) -> Dataset:
    """A CSV file (path, bytes or upload) → Dataset.

    types: {column: "numeric"|"integer"|"categorical"|"boolean"} declares kinds (else guessed from
        the rows, which is data-derived; declared `bounds` imply numeric, `categories` categorical).
    nullable: {column: bool} for declared columns (default True: a missing value, or one outside
        the declared domain, gets the `__missing` indicator instead of changing the schema).
    max_rows / max_columns: shape caps (default $DPCORE_MAX_ROWS / $DPCORE_MAX_COLUMNS, else
        2 000 000 and 10 000), checked before any parsing.
    bounds / categories: the public domain per column; columns without them get data-derived
        bounds and the Dataset is marked `preprocessing_private=False` ...
    undeclared: ... unless undeclared="dp": numeric bounds then come from a noisy histogram with
        noise multiplier `bounds_noise_multiplier`, ledgered in meta["privacy_records"].
        Undeclared category lists stay data-derived (declare them to be covered by ε).
    missing: "indicator" (a 0/1 column per nullable column) or "category" (an extra one-hot level
        for nullable categorical columns).
    drop: columns to ignore (identifiers, free text).
    date_formats: {column: format} declares date columns and their format (else read off the rows:
        not covered by ε; see dataset_from_frame).
    """
    frame = parse_csv(source, delimiter=delimiter, max_bytes=max_bytes, max_rows=max_rows, max_columns=max_columns,
                      name=name)
    if drop:
        unknown = [c for c in drop if c not in frame.columns]
        if unknown:
            raise InvalidParameter(f"drop names unknown column(s): {', '.join(map(str, unknown))}")
        frame = frame.drop(columns=list(drop))
    label = name or (Path(str(source)).name if isinstance(source, (str, os.PathLike)) else
                     Path(str(getattr(source, "name", "uploaded.csv"))).name)
    return dataset_from_frame(frame, name=label, target=target, schema=schema, types=types, bounds=bounds,
                              categories=categories, nullable=nullable, missing=missing, max_levels=max_levels,
                              max_rows=max_rows, max_columns=max_columns, date_formats=date_formats,
                              undeclared=undeclared, bounds_noise_multiplier=bounds_noise_multiplier, seed=seed,
                              meta={"source": label, "delimiter": delimiter})
