"""What determines a run: the model and its parameters (`RunConfig`) and the rows it trains on
(`DataConfig`), as config.json holds them.

Why a module of its own: the run store, the folder operations, the runner and the run-file checks
all need these two classes, and none of them should need the others to get them.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpcore.errors import InvalidParameter, check_probability
from dpcore.models.params import config_to_dict


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class DataConfig:
    """Which rows a run trains on: a built-in `dataset` or a `csv` file (+ `target`), and the split."""

    dataset: str | None = None
    csv: str | None = None
    target: str | None = None
    test_size: float = 0.1
    split_seed: int = 0
    outlier: bool = False
    n: int | None = None  # built-ins: a seeded subset of at most n rows (demos, tests); files: see rows_share
    # Files with n: each row kept iff its keyed coin < rows_share = min(1, n/Ñ), Ñ the file's noisy
    # row count (ledgered); set when the run first loads its data, so later loads keep the same rows.
    rows_share: float | None = None
    # CSV only: the schema edits made on the Data page, so a run re-reads the file exactly as shown.
    delimiter: str = ","
    types: dict | None = None
    bounds: dict | None = None
    categories: dict | None = None
    name: str | None = None
    # CSV only: noise multiplier of DP-estimated bounds for declared-kind columns without declared
    # bounds (ledgered; None = min/max of the rows, "preprocessing not covered by ε").
    dp_bounds_noise: float | None = None
    # CSV only: held-out rows from a second file read with the training file's schema (then no split).
    test_csv: str | None = None
    # CSV only: columns left out of the table (identifiers, free text, a column the editor dropped).
    drop: list | None = None
    # CSV only: declared date columns and their formats, {column: one of dpcore.data.dates.FORMATS}
    # (else a date's format is read off the rows: not covered by ε). None in runs saved before it.
    date_formats: dict | None = None
    # CSV only: the id of the split key the run trained with (dpcore.runs.uploads; random, set when
    # the run is created): a replaced or missing key is refused, never silently redrawn.
    split_key_id: str | None = None

    @property
    def keyed_split(self) -> bool:
        """Whether the held-out rows are the other side of the file's keyed split (each row on one
        side only), as `load` makes them: a file, no separate test file, a test share above 0."""
        return self.csv is not None and self.test_csv is None and self.test_size > 0

    def __post_init__(self) -> None:
        if (self.dataset is None) == (self.csv is None):
            raise InvalidParameter("give exactly one of dataset (a built-in name) or csv (a file)")
        if self.test_size != 0:
            check_probability("test_size", self.test_size)
        if self.test_csv is not None and self.csv is None:
            raise InvalidParameter("test_csv (--test) applies to a csv file only")
        if self.drop is not None and (self.csv is None or not all(isinstance(c, str) for c in self.drop)):
            raise InvalidParameter("drop: a list of column names of a csv file")
        if self.date_formats is not None and (self.csv is None or not isinstance(self.date_formats, dict)):
            raise InvalidParameter("date_formats: {column: format} of a csv file's date columns")

    def load(self, noise=None, schema=None, max_bytes: int | None = None):
        """(train, test) Datasets; test is None when test_size is 0 and no test_csv is given (the
        model fits on every row; utility and membership attacks then have no held-out rows).

        Files only: `noise` is the run's NoiseSource (dpcore.privacy.randomness; None = a fresh
        secret one): DP bounds and the noisy row count of `n` draw from it and land in the train
        set's meta["privacy_records"], which the model's ledger starts with. `schema`: the schema
        a trained model saved (re-reading a run's data: no new noisy release, the same bounds).
        The split and the row limit decide each row on its own by the file's secret split key.
        max_bytes: the file's size cap (the app's upload limit; None = read_csv's default).
        """
        from dpcore.data import load_split, read_csv, train_test_split
        from dpcore.data.split import all_rows, keyed_subset
        from dpcore.runs.uploads import display_name, split_key_for

        if self.dataset is not None:
            if self.test_size == 0:
                return all_rows(*load_split(self.dataset, seed=self.split_seed, outlier=self.outlier, n=self.n)), None
            return load_split(self.dataset, seed=self.split_seed, test_size=self.test_size,
                              outlier=self.outlier, n=self.n)
        if noise is None:
            from dpcore.privacy.randomness import NoiseSource

            noise = NoiseSource.secret()
        csv = self.csv
        assert csv is not None  # __post_init__: exactly one of dataset and csv
        cap: dict[str, Any] = {} if max_bytes is None else {"max_bytes": max_bytes}
        name = self.name or display_name(csv)
        if schema is not None:
            ds = read_csv(csv, schema=schema, delimiter=self.delimiter, name=name, drop=self.drop, **cap)
        else:
            ds = read_csv(csv, target=self.target, **cap, delimiter=self.delimiter, types=self.types,
                          drop=self.drop,
                          bounds=self.bounds, categories=self.categories, name=name, date_formats=self.date_formats,
                          undeclared="data" if self.dp_bounds_noise is None else "dp",
                          bounds_noise_multiplier=self.dp_bounds_noise or 10.0,
                          seed=noise.numpy("dp-bounds") if self.dp_bounds_noise is not None else None)
        if self.n is not None or self.keyed_split:
            key, key_id = split_key_for(csv, self.split_key_id)  # the run's own key, or refused
        if self.n is not None:
            if self.rows_share is None:
                self.rows_share = _rows_share(ds, self.n, noise)
            ds = keyed_subset(ds, self.rows_share, key)
        if self.test_csv is not None:
            test = read_csv(self.test_csv, schema=ds.schema, delimiter=self.delimiter, name=name, drop=self.drop)
            return all_rows(ds), all_rows(test, role="test")
        if self.test_size == 0:
            return all_rows(ds), None
        train, test = train_test_split(ds, test_size=self.test_size, key=key)
        test.meta["split_key_id"] = key_id  # which key drew the held-out rows (dpcore.runs.run_score)
        return train, test

    def public_rows(self, train=None) -> int | None:
        """`public_row_count` of this data: `train`, these rows already loaded (else a built-in's
        are read, once per setting and process)."""
        if self.dataset is None or train is not None:
            return public_row_count(self.dataset, None if train is None else train.n)
        return _builtin_train_rows(self.dataset, self.test_size, self.split_seed, self.outlier, self.n)

    @property
    def label(self) -> str:
        from dpcore.runs.uploads import display_name

        if self.dataset is not None:
            return self.dataset
        assert self.csv is not None  # __post_init__: exactly one of dataset and csv
        return display_name(self.csv)


def public_row_count(dataset: str | None, n: int | None) -> int | None:
    """The training-row count a default may depend on: `n` for a built-in dataset (a public file
    with a public seeded split, so its size is a public fact), None for a CSV file, whose row count
    is private (a run releases only the noisy ñ).

    Why one rule: a default chosen from a file's exact size lands in config.json and the release
    (an ε that jumps at 3 000 rows, a δ = 1/n^1.1 that gives n back), telling a file from its
    neighbour; the model resolves its own size-dependent settings from ñ inside the run."""
    return None if dataset is None or n is None else int(n)


def _rows_share(ds, n: int, noise) -> float:
    """min(1, n/Ñ) with Ñ the file's noisy row count (ledgered in ds.meta["privacy_records"]): a
    row limit that keeps each row on its own, at a rate that is a function of a released value."""
    from dpcore.privacy.dataset_size import noisy_count
    from dpcore.privacy.ledger import PrivacyLedger

    led = PrivacyLedger()
    n_file = noisy_count(ds.n, noise.numpy("file-size"), ledger=led)
    rec = {**led.to_list()[-1], "name": "file-size (row limit)", "partition": "all"}  # every row of the file
    ds.meta["privacy_records"] = [*(ds.meta.get("privacy_records") or []), rec]
    return min(1.0, n / n_file)


@functools.lru_cache(maxsize=64)
def _builtin_train_rows(dataset: str, test_size: float, split_seed: int, outlier: bool, n: int | None) -> int:
    train, _ = DataConfig(dataset=dataset, test_size=test_size, split_seed=split_seed, outlier=outlier, n=n).load()
    return int(train.n)


@dataclass
class RunConfig:
    """Everything that determines a run: same RunConfig → same run for non-private models and with
    `reproducible_noise` (debug); a private model's mechanism noise is secret, so it differs."""

    model: str
    params: dict = field(default_factory=dict)
    # a dict (config.json's "data") is accepted too: __post_init__ turns it into a DataConfig
    data: DataConfig = field(default_factory=lambda: DataConfig(dataset="digits"))
    name: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.data, dict):
            self.data = DataConfig(**self.data)
        # every default from the declarations, a size-dependent one (P3GM's ε, epochs) from the
        # public row count of a built-in (a file: the constant); given values win. The Train page's
        # widgets start from the same `params.defaults`, so the CLI and the app train one model.
        from dpcore.models import config_class
        from dpcore.models.params import config_field, size_default, sized_fields

        cls = config_class(self.model)
        missing = [f for f in sized_fields(cls) if f not in self.params]
        if missing:
            rows = self.data.public_rows()
            self.params = {**{f: size_default(config_field(cls, f), rows) for f in missing}, **self.params}
        self.params = config_to_dict(self.model_config())  # validates and fills in the other defaults

    def model_config(self):
        from dpcore.models import config_class
        from dpcore.models.params import config_from_dict

        return config_from_dict(config_class(self.model), dict(self.params))

    @property
    def seed(self) -> int:
        return int(self.params.get("seed", 0))

    def to_dict(self) -> dict:
        return {"model": self.model, "params": dict(self.params),
                "data": dataclasses.asdict(self.data), "name": self.name, "seed": self.seed}

    def to_file_dict(self) -> dict:
        """config.json's form: a kept CSV by its file name only, never the server's absolute path
        (a run resolves it inside its ROOT/_uploads on load: dpcore.runs.safety.check_data_paths)."""
        d = self.to_dict()
        for key in ("csv", "test_csv"):
            if d["data"].get(key) is not None:
                d["data"][key] = Path(d["data"][key]).name
        return d

    @classmethod
    def from_dict(cls, d: dict) -> RunConfig:
        params = {k: (float(v) if isinstance(v, str) and v in ("inf", "-inf", "nan") else v)
                  for k, v in d.get("params", {}).items()}
        data = d.get("data") or {}
        return cls(model=d["model"], params=params, name=d.get("name"),
                   data=DataConfig(**data) if isinstance(data, dict) else data)

    def default_name(self) -> str:
        """`<model>-<data>-eps<ε>[-<settings that differ from the defaults>]-s<seed>-<time>`."""
        from dpcore.runs.naming import run_name, settings_label

        label = Path(self.data.label).stem if self.data.csv else self.data.label
        return run_name(self.model, label, self.params.get("epsilon", math.inf), self.seed,
                        datetime.now().strftime("%Y%m%d-%H%M%S"),
                        settings_label(self.model, self.params, dataclasses.asdict(self.data)))
