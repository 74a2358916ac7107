"""A run on disk: one folder per training run, readable at any moment, even mid-crash.

Layout of ROOT/NAME/:
  config.json    model name, every hyperparameter (defaults filled in), seed, data options, split
  status.json    {"status": created|running|done|stopped|failed, "message", times, progress}
  metrics.jsonl  one TrainingEvent per line (appended; a torn last line is skipped on read)
  ledger.json    the privacy ledger + (ε, δ) computed from it by the accountant
  model/         weights.safetensors + model.json (written by the model's `save`)
Every JSON file is written to a temporary file and moved into place (os.replace), so a reader or a
crash never sees half a file.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from dpcore.errors import InvalidParameter, RunError, check_probability
from dpcore.models._common import atomic_write_json, config_to_dict, dumps
from dpcore.privacy.ledger import PrivacyLedger

STATUSES = ("created", "running", "done", "stopped", "failed")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]{0,127}$")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class DataConfig:
    """Which rows a run trains on: a built-in `dataset` or a `csv` file (+ `target`), and the split."""

    dataset: str | None = None
    csv: str | None = None
    target: str | None = None
    test_size: float = 0.1
    split_seed: int = 0
    outlier: bool = False
    n: int | None = None  # keep a seeded subset of at most n rows (demos, tests)
    # CSV only: the schema edits made on the Data page, so a run re-reads the file exactly as shown.
    delimiter: str = ","
    types: dict | None = None
    bounds: dict | None = None
    categories: dict | None = None
    name: str | None = None
    # CSV only: noise multiplier of DP-estimated bounds for declared-kind columns without declared
    # bounds (ledgered; None = min/max of the rows, "preprocessing not covered by ε").
    dp_bounds_noise: float | None = None

    def __post_init__(self) -> None:
        if (self.dataset is None) == (self.csv is None):
            raise InvalidParameter("give exactly one of dataset (a built-in name) or csv (a file)")
        check_probability("test_size", self.test_size)

    def load(self):
        """(train, test) Datasets."""
        from dpcore.data import load_split, read_csv, train_test_split

        if self.dataset is not None:
            return load_split(self.dataset, seed=self.split_seed, test_size=self.test_size,
                              outlier=self.outlier, n=self.n)
        ds = read_csv(self.csv, target=self.target, delimiter=self.delimiter, types=self.types,
                      bounds=self.bounds, categories=self.categories, name=self.name,
                      undeclared="data" if self.dp_bounds_noise is None else "dp",
                      bounds_noise_multiplier=self.dp_bounds_noise or 10.0, seed=self.split_seed)
        if self.n is not None and ds.n > self.n:
            import numpy as np

            ds = ds.subset(np.sort(np.random.default_rng(self.split_seed).choice(ds.n, self.n, replace=False)))
        return train_test_split(ds, test_size=self.test_size, seed=self.split_seed)

    @property
    def label(self) -> str:
        return self.dataset if self.dataset is not None else Path(self.csv).name


@dataclass
class RunConfig:
    """Everything that determines a run: same RunConfig → same run for non-private models and with
    `reproducible_noise` (debug); a private model's mechanism noise is secret, so it differs."""

    model: str
    params: dict = field(default_factory=dict)
    data: DataConfig | dict = field(default_factory=lambda: DataConfig(dataset="digits"))
    name: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.data, dict):
            self.data = DataConfig(**self.data)
        self.params = config_to_dict(self.model_config())  # validates and fills in defaults

    def model_config(self):
        from dpcore.models import config_class
        from dpcore.models._common import config_from_dict

        return config_from_dict(config_class(self.model), dict(self.params))

    @property
    def seed(self) -> int:
        return int(self.params.get("seed", 0))

    def to_dict(self) -> dict:
        return {"model": self.model, "params": dict(self.params),
                "data": dataclasses.asdict(self.data), "name": self.name, "seed": self.seed}

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        params = {k: (float(v) if isinstance(v, str) and v in ("inf", "-inf", "nan") else v)
                  for k, v in d.get("params", {}).items()}
        return cls(model=d["model"], params=params, data=d.get("data") or {}, name=d.get("name"))

    def default_name(self) -> str:
        eps = self.params.get("epsilon", math.inf)
        eps_s = "inf" if not math.isfinite(eps) else f"{eps:g}"
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        return f"{self.model}-{self.data.label}-eps{eps_s}-s{self.seed}-{stamp}"


@dataclass
class RunSummary:
    """One line of the runs table."""

    name: str
    path: str
    model: str
    dataset: str
    status: str
    epsilon: float
    delta: float
    created: str | None
    finished: str | None
    seconds: float | None
    message: str | None
    params: dict


def _read_json(path: Path, default=None):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        if default is not None:
            return default
        raise RunError(f"run file missing: {path}") from None
    except ValueError as exc:
        raise RunError(f"run file unreadable: {path} ({exc})") from None


def _num(v) -> float:
    return float(v) if v is not None else math.nan


class Run:
    """A run folder. Cheap to open: nothing heavy is read until asked for."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not (self.path / "config.json").is_file():
            raise RunError(f"not a run (no config.json): {self.path}")
        self.config = RunConfig.from_dict(_read_json(self.path / "config.json"))

    @classmethod
    def load(cls, path) -> "Run":
        return cls(path)

    @property
    def name(self) -> str:
        return self.path.name

    # ------------------------------------------------------------------ status
    def status(self) -> dict:
        return _read_json(self.path / "status.json", default={"status": "created"})

    def set_status(self, status: str, **extra) -> None:
        if status not in STATUSES:
            raise InvalidParameter(f"status must be one of {STATUSES}, got {status!r}")
        d = {**self.status(), **extra, "status": status}
        atomic_write_json(self.path / "status.json", d)

    # ------------------------------------------------------------------ metrics
    def metrics(self) -> list[dict]:
        """All events so far (a torn last line from a crash is skipped)."""
        out = []
        try:
            lines = (self.path / "metrics.jsonl").read_text().splitlines()
        except FileNotFoundError:
            return out
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def append_metrics(self, events: list[dict]) -> None:
        if not events:
            return
        with open(self.path / "metrics.jsonl", "a") as fh:
            fh.write("".join(dumps(e).replace("\n", "").replace("  ", "") + "\n" for e in events))
            fh.flush()

    # ------------------------------------------------------------------ privacy
    def save_ledger(self, ledger: PrivacyLedger, delta: float, private: bool) -> float:
        """ledger.json with ε computed by the accountant from the ledger (inf when non-private)."""
        if private:
            from dpcore.privacy.accountant import epsilon as accountant_epsilon

            eps = float(accountant_epsilon(ledger, delta)) if len(ledger) else 0.0
        else:
            eps = math.inf
        atomic_write_json(self.path / "ledger.json", {"records": ledger.to_list(), "epsilon": eps,
                                                      "delta": delta, "private": private})
        return eps

    def ledger(self) -> PrivacyLedger:
        d = _read_json(self.path / "ledger.json", default={"records": []})
        return PrivacyLedger.from_list(d.get("records", []))

    @property
    def epsilon(self) -> float:
        """The accountant's ε of the saved ledger (inf for non-private models, nan before saving)."""
        return _num(_read_json(self.path / "ledger.json", default={}).get("epsilon"))

    @property
    def delta(self) -> float:
        return _num(_read_json(self.path / "ledger.json", default={}).get("delta"))

    # ------------------------------------------------------------------ model and data
    @property
    def model_dir(self) -> Path:
        return self.path / "model"

    def has_model(self) -> bool:
        return (self.model_dir / "model.json").is_file() and (self.model_dir / "weights.safetensors").is_file()

    def load_model(self):
        """The fitted Synthesizer saved by the run (RunError if training never got that far)."""
        from dpcore.models import load_model

        if not self.has_model():
            raise RunError(f"run {self.name!r} has no saved model (status: {self.status()['status']})")
        return load_model(self.model_dir)

    def load_data(self):
        """(train, test) exactly as the run saw them (same data options and split seed)."""
        return self.config.data.load()

    def summary(self) -> RunSummary:
        st = self.status()
        led = _read_json(self.path / "ledger.json", default={})
        return RunSummary(name=self.name, path=str(self.path), model=self.config.model,
                          dataset=self.config.data.label, status=st.get("status", "created"),
                          epsilon=_num(led.get("epsilon")), delta=_num(led.get("delta")),
                          created=st.get("created"), finished=st.get("finished"),
                          seconds=st.get("seconds"), message=st.get("message"),
                          params=dict(self.config.params))

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"


def check_run_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise InvalidParameter(f"run name must be 1-128 letters, digits or ._=+- (no slashes), got {name!r}")
    return name


def create_run(root, name: str | None, config: RunConfig | dict, *, overwrite: bool = False) -> Run:
    """Make ROOT/NAME with config.json and status.json ("created"); NAME defaults to one made
    from the config. An existing run is an error unless `overwrite` (then it is replaced)."""
    cfg = config if isinstance(config, RunConfig) else RunConfig.from_dict(config)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    base = check_run_name(name or cfg.name or cfg.default_name())
    path = root / base
    if path.exists():
        if name is not None or cfg.name is not None:
            if not overwrite:
                raise RunError(f"run {str(path)!r} already exists (choose another name or overwrite)")
            shutil.rmtree(path)
        else:  # auto-named: find a free suffix
            i = 2
            while (root / f"{base}-{i}").exists():
                i += 1
            path = root / f"{base}-{i}"
    try:
        path.mkdir()
    except FileExistsError:
        raise RunError(f"run {str(path)!r} already exists") from None
    cfg = dataclasses.replace(cfg, name=path.name)
    atomic_write_json(path / "config.json", cfg.to_dict())
    atomic_write_json(path / "status.json", {"status": "created", "created": now_iso(),
                                             "created_ts": time.time()})
    return Run(path)


def list_runs(root) -> list[RunSummary]:
    """Summaries of every run folder under `root`, newest first (unreadable folders skipped)."""
    root = Path(root)
    if not root.is_dir():
        return []
    out = []
    for p in root.iterdir():
        if p.is_dir() and (p / "config.json").is_file():
            try:
                out.append(Run(p).summary())
            except Exception:  # a half-deleted or foreign folder must not break the list
                continue
    return sorted(out, key=lambda s: s.created or "", reverse=True)


def delete_run(path) -> None:
    p = Path(path)
    if not (p / "config.json").is_file():
        raise RunError(f"not a run: {p}")
    if Run(p).status().get("status") == "running":
        raise RunError(f"run {p.name!r} is still running; stop it first")
    shutil.rmtree(p)


def rename_run(path, new_name: str) -> Run:
    p = Path(path)
    run = Run(p)
    if run.status().get("status") == "running":
        raise RunError(f"run {p.name!r} is still running; stop it first")
    target = p.parent / check_run_name(new_name)
    if target.exists():
        raise RunError(f"a run named {new_name!r} already exists")
    os.replace(p, target)
    d = run.config.to_dict()
    d["name"] = new_name
    atomic_write_json(target / "config.json", d)
    return Run(target)

