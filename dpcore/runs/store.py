"""A run on disk: one folder per training run, readable at any moment, even mid-crash.

Layout of ROOT/NAME/:
  config.json    model name, every hyperparameter (defaults filled in), seed, data options, split
  status.json    {"status": created|running|done|stopped|failed, "message", times, progress,
                 pid, host, heartbeat}; "running" with a dead process or a stale heartbeat reads
                 as "interrupted"
  metrics.jsonl  one TrainingEvent per line (appended; a torn last line is skipped on read)
  ledger.json    the privacy ledger + (ε, δ) computed from it by the accountant
  model/         weights.safetensors + model.json (written by the model's `save`)
Every JSON file is written to a temporary file and moved into place (os.replace), so a reader or a
crash never sees half a file. A run trains in ROOT/.NAME.partial-XXXX and moves to ROOT/NAME when it
ends (dpcore.runs.folders); every file is checked when read (dpcore.runs.safety).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dpcore.errors import DPCoreError, InvalidParameter, RunError
from dpcore.files import MAX_METRICS_BYTES, RunFileError, check_inside, read_json, read_run_bytes
from dpcore.io import atomic_write_json, dumps
from dpcore.models.saved import ledger_records
from dpcore.privacy.ledger import PrivacyLedger
from dpcore.runs.config import DataConfig, RunConfig, now_iso  # noqa: F401 (the run store's names)
from dpcore.runs.liveness import running_state
from dpcore.runs.naming import NAME_RE as _NAME_RE  # noqa: F401 (checked by dpcore.runs.folders)
from dpcore.runs.safety import (  # noqa: F401
    STATUSES,
    as_number,
    check_config,
    check_data_paths,
    check_done,
    check_evaluation,
    check_ledger,
    check_model_files,
    check_status,
    selection_record,
)

INCONSISTENT_STATUS = "inconsistent"  # listed only: the ledger's stored copies disagree (dpcore.runs.verify)
PARTIAL = ".partial-"


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
    seeded_noise: bool = False  # reproducible_noise (debugging): ε is no guarantee


def _read_json(path: Path, default=None, check=None):
    """A run file through the checked reader (no symlink inside the run folder), then its checks."""
    d = read_json(path, default=default, base=path.parent)
    return d if check is None else check(d, path.name)


def _num(v) -> float:
    return as_number(v)


def _is_partial(path: Path) -> bool:
    return path.name.startswith(".") and PARTIAL in path.name


class Run:
    """A run folder. Cheap to open: nothing heavy is read until asked for.

    Every file is checked on read (types, sizes, nesting; see dpcore.runs.safety), so a run folder
    from someone else is safe to open: a bad one is a one-line RunError.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not os.path.lexists(self.path / "config.json"):
            raise RunError(f"not a run (no config.json): {self.path}")
        d = _read_json(self.path / "config.json", check=check_config)
        try:
            self.config = RunConfig.from_dict(d)
        except DPCoreError as exc:
            raise RunError(f"config.json of {self.path.name!r} is invalid: {exc}") from None
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise RunError(f"config.json of {self.path.name!r} is invalid ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:120]})") from None
        self.config.data = check_data_paths(self.config.data, self.path.parent)

    @classmethod
    def load(cls, path) -> Run:
        return cls(path)

    @property
    def name(self) -> str:
        """The folder's name (a run still training in ROOT/.NAME.partial-XXXX: NAME.partial-XXXX)."""
        return self.path.name[1:] if _is_partial(self.path) else self.path.name

    @property
    def target_name(self) -> str:
        """The name the run gets in its root once training ends."""
        return self.config.name or self.name

    # ------------------------------------------------------------------ status
    def raw_status(self) -> dict:
        return _read_json(self.path / "status.json", default={"status": "created"}, check=check_status)

    def status(self) -> dict:
        """status.json; a "running" run whose process is gone or silent reads as "interrupted", one
        this host cannot judge (another host's, a heartbeat in the future) as "unknown (last seen …)";
        `summary` and `load_model` also check that "done" has the steps its ledger records."""
        d = self.raw_status()
        state = running_state(d) if d.get("status") == "running" else "running"
        if d.get("status") == "running" and state != "running":
            d = {**d, "status": state,
                 "message": d.get("message") or ("the training process ended without finishing (killed, or the "
                                                 "app restarted)" if state == "interrupted" else
                                                 "no recent heartbeat this host can check")}
        return d

    def set_status(self, status: str, **extra) -> None:
        if status not in STATUSES:
            raise InvalidParameter(f"status must be one of {STATUSES}, got {status!r}")
        d = {**self.raw_status(), **extra, "status": status}
        atomic_write_json(self.path / "status.json", d)

    # ------------------------------------------------------------------ metrics
    def metrics(self) -> list[dict]:
        """All events so far (a torn last line from a crash, or any line not an object, is skipped)."""
        out: list[dict] = []
        try:
            raw = read_run_bytes(self.path / "metrics.jsonl", max_bytes=MAX_METRICS_BYTES, base=self.path)
        except FileNotFoundError:
            return out
        for line in raw.decode("utf-8", "replace").splitlines():
            if len(line) > 100_000:
                continue
            try:
                ev = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(ev, dict) and isinstance(ev.get("step", 0), int):
                out.append(ev)
        return out

    def append_metrics(self, events: list[dict]) -> None:
        if not events:
            return
        if not self.path.is_dir():
            raise RunError(f"run folder {str(self.path)!r} disappeared while training")
        from dpcore import io as dio

        try:
            with open(self.path / "metrics.jsonl", "a") as fh:
                dio.write(fh, "".join(dumps(e).replace("\n", "").replace("  ", "") + "\n" for e in events),
                          self.path / "metrics.jsonl")
                fh.flush()
        except OSError as exc:  # a full disk: the run fails with one line (a torn last line is skipped on read)
            raise RunError(f"cannot write {str(self.path / 'metrics.jsonl')!r}: {exc.strerror or exc}") from None

    # ------------------------------------------------------------------ privacy
    def save_ledger(self, ledger: PrivacyLedger, delta: float, private: bool) -> float:
        """ledger.json with ε computed by the accountant from the ledger (inf when non-private) and
        the records' hash chain, which status.json records too (dpcore.runs.ledger_chain). A caller
        whose status.json another thread may rewrite (the training's heartbeat) passes
        `ledger_chain=run.ledger_chain()` with its final status."""
        from dpcore.runs.ledger_chain import ANCHOR, chain

        if private:
            from dpcore.privacy.accountant import epsilon as accountant_epsilon

            eps = float(accountant_epsilon(ledger, delta)) if len(ledger) or ledger.selection else 0.0
        else:
            eps = math.inf
        records = ledger.to_list()
        doc: dict = {"records": records, "epsilon": eps, "delta": delta, "private": private}
        selection = getattr(ledger, "selection", None)
        if selection is not None:
            doc["selection"] = selection.to_dict()
        doc["chain"] = chain(records, doc.get("selection"))
        atomic_write_json(self.path / "ledger.json", doc)
        atomic_write_json(self.path / "status.json", {**self.raw_status(), ANCHOR: doc["chain"]})
        return eps

    def ledger_chain(self) -> dict | None:
        """ledger.json's hash chain (None for a run saved before chains)."""
        return self._ledger_json().get("chain")

    def _ledger_json(self) -> dict:
        return _read_json(self.path / "ledger.json", default={"records": []}, check=check_ledger)

    def ledger(self) -> PrivacyLedger:
        """The saved ledger (with its private-selection record, for a run released by one)."""
        d = self._ledger_json()
        led = ledger_records(d.get("records", []), "ledger.json")
        if d.get("selection") is not None:
            led.selection = selection_record(d["selection"], "ledger.json")
        return led

    def check(self):
        """The ledger check every opener makes (dpcore.runs.verify): ε recomputed and compared
        (again whenever one of the run's files changed since the last check of this object)."""
        from dpcore.runs.verify import check_run, files_key

        key = files_key(self)
        cached = getattr(self, "_check", None)
        if cached is None or cached[0] != key:
            self._check = (key, check_run(self))
        return self._check[1]

    @property
    def epsilon(self) -> float:
        """The accountant's ε over the saved ledger, recomputed now (inf for non-private models;
        nan before saving and for a run whose stored copies disagree, see dpcore.runs.verify)."""
        return self.check().epsilon

    @property
    def delta(self) -> float:
        return self.check().delta

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
        self.summary()  # every file checked: a run the listing calls unreadable is refused here too
        check_model_files(self.model_dir, self.config.model)
        from dpcore.runs.verify import require_consistent

        require_consistent(self)  # an edited ledger is never opened as a private run
        try:
            return load_model(self.model_dir)
        except DPCoreError as exc:
            raise RunError(f"the model of run {self.name!r} cannot be loaded: {exc}") from None
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, RuntimeError) as exc:
            raise RunError(f"the model of run {self.name!r} cannot be loaded ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:120]})") from None

    def load_data(self):
        """(train, test) as the run saw them: the same split (seed or the file's key), and for DP
        bounds the schema its model saved (re-estimating them would be a new, unledgered release
        and a different encoding)."""
        data, schema = self.config.data, None
        if data.csv is not None and data.dp_bounds_noise is not None and self.has_model():
            from dpcore.models.saved import read_model_meta, template_from_json

            check_model_files(self.model_dir, self.config.model)
            schema = template_from_json(read_model_meta(self.model_dir, self.config.model)["template"]).schema
        return data.load(schema=schema)

    def evaluation(self) -> dict:
        """evaluation.json (checked; {} before any score was saved)."""
        return _read_json(self.path / "evaluation.json", default={}, check=check_evaluation)

    def summary(self) -> RunSummary:
        """One line of the runs table; ε is the accountant's, recomputed now (dpcore.runs.verify):
        a run whose stored copies disagree is listed as "inconsistent", without an ε."""
        st = self.status()
        check_done(st, self._ledger_json())
        self.evaluation()
        for rel in ("metrics.jsonl", "model/model.json", "model/weights.safetensors"):
            check_inside(self.path, self.path / rel)  # lstat only: a link is never followed
        check = self.check()
        return RunSummary(name=self.name, path=str(self.path), model=self.config.model,
                          dataset=self.config.data.label,
                          status=st.get("status", "created") if check.consistent else INCONSISTENT_STATUS,
                          epsilon=check.epsilon, delta=check.delta,
                          created=st.get("created"), finished=st.get("finished"),
                          seconds=st.get("seconds"), message=check.message or st.get("message") or check.note,
                          params=dict(self.config.params), seeded_noise=check.seeded_noise)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"


def list_runs(root) -> list[RunSummary]:
    """Summaries of every run folder under `root`, newest first (unreadable folders skipped).

    Runs still training (or killed while training) live in ROOT/.NAME.partial-XXXX and are listed
    as NAME.partial-XXXX with their status (running, or interrupted once their process is gone).
    """
    root = Path(root)
    if not root.is_dir():
        return []
    out = []
    for p in root.iterdir():
        if p.name.startswith(".") and not _is_partial(p):
            continue
        if p.is_dir() and not p.is_symlink() and (p / "config.json").exists():
            try:
                out.append(Run(p).summary())
            except DPCoreError as exc:  # a bad file: listed as unreadable, the others stay usable
                out.append(unreadable_summary(p, exc))
            except Exception as exc:  # noqa: BLE001 - a half-deleted or foreign folder must not break the list
                out.append(unreadable_summary(p, exc))
    return sorted(out, key=lambda s: s.created or "", reverse=True)


UNREADABLE = "unreadable"


def unreadable_summary(path: Path, exc: BaseException) -> RunSummary:
    """The runs table's line for a folder whose files cannot be used: "unreadable: <file>: <reason>"."""
    if isinstance(exc, RunFileError):
        why = f"{Path(exc.file).name if '/' in exc.file else exc.file}: {exc.reason}"
    elif isinstance(exc, DPCoreError):
        why = str(exc)
    else:
        why = f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}"
    try:
        created = datetime.fromtimestamp(path.lstat().st_mtime, UTC).isoformat(timespec="seconds")
    except OSError:
        created = None
    name = path.name[1:] if _is_partial(path) else path.name
    return RunSummary(name=name, path=str(path), model="?", dataset="?", status=f"{UNREADABLE}: {why}"[:300],
                      epsilon=math.nan, delta=math.nan, created=created, finished=None, seconds=None,
                      message=why[:300], params={})

