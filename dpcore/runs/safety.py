"""What makes a run folder safe to share, kill and open: checked JSON, a lock, and liveness.

Why: a run folder may come from someone else (a shared drive, an e-mail) or be left behind by a
process that was killed. Every JSON file of a run is read through `read_json` (size, nesting depth)
and checked field by field (`check_config`, `check_status`, `check_ledger`), so a tampered or
truncated file is a one-line RunError, never a traceback or code that runs. A training process holds
an exclusive `flock` on ROOT/_locks/NAME.lock for as long as it trains (the kernel drops it when the
process dies), and writes its pid, host and a heartbeat into status.json; a "running" run whose
process is gone or whose heartbeat is stale reads as "interrupted".
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import socket
import time
import typing
from pathlib import Path

from dpcore.errors import RunError

MAX_JSON_BYTES = 4 * 2**20     # config.json, status.json, ledger.json
MAX_MODEL_JSON_BYTES = 64 * 2**20
MAX_DEPTH = 24                 # nesting of dicts/lists in any run file
MAX_ITEMS = 200_000            # list/dict entries in one run file
LOCKS = "_locks"               # ROOT/_locks/NAME.lock (names starting with _ are never runs)
HEARTBEAT_SECONDS = 2.0        # how often a training process refreshes status.json
STALE_SECONDS = float(os.environ.get("DPCORE_STALE_SECONDS", 30.0))


# ----------------------------------------------------------------------------- reading JSON
def read_json(path: Path, *, max_bytes: int = MAX_JSON_BYTES, default=None):
    """Parse a run file (size- and depth-limited); RunError naming the file otherwise."""
    path = Path(path)
    try:
        if path.is_symlink():
            raise RunError(f"run file is a symbolic link: {path}")
        size = path.stat().st_size
        if size > max_bytes:
            raise RunError(f"run file too large: {path} ({size} bytes, at most {max_bytes})")
        text = path.read_bytes().decode("utf-8")
        obj = json.loads(text)
    except FileNotFoundError:
        if default is not None:
            return default
        raise RunError(f"run file missing: {path}") from None
    except RecursionError:
        raise RunError(f"run file unreadable: {path} (nested too deeply)") from None
    except (OSError, ValueError) as exc:
        raise RunError(f"run file unreadable: {path} ({exc})") from None
    check_shape(obj, str(path))
    return obj


def check_shape(obj, where: str) -> None:
    """Nesting depth ≤ MAX_DEPTH and ≤ MAX_ITEMS entries in total (iterative: no recursion)."""
    stack, count = [(obj, 0)], 0
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth >= MAX_DEPTH:
                raise RunError(f"run file unreadable: {where} (nested deeper than {MAX_DEPTH})")
            items = v.values() if isinstance(v, dict) else v
            count += len(v)
            if count > MAX_ITEMS:
                raise RunError(f"run file unreadable: {where} (more than {MAX_ITEMS} entries)")
            stack.extend((x, depth + 1) for x in items)


# ----------------------------------------------------------------------------- field checks
def _is_number(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("inf", "-inf", "nan")


def _matches(hint, v) -> bool:
    """Does JSON value `v` fit the type hint of a config field (str, int, float, bool, dict, list,
    X | None, Literal)?"""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", typing.Union)):
        return any(_matches(a, v) for a in typing.get_args(hint))
    if origin is typing.Literal:
        return v in typing.get_args(hint)
    if hint is type(None) or hint is None:
        return v is None
    if hint is bool:
        return isinstance(v, bool)
    if hint is int:
        return isinstance(v, int) and not isinstance(v, bool)
    if hint is float:
        return _is_number(v)
    if hint is str:
        return isinstance(v, str)
    if hint is dict or origin is dict:
        return isinstance(v, dict)
    if hint in (list, tuple) or origin in (list, tuple):
        return isinstance(v, list)
    return True  # a type this check does not know: left to the class's own validation


def check_fields(cls, values: dict, where: str) -> None:
    """Every key of `values` is a field of dataclass `cls` and has the field's type."""
    import dataclasses

    if not isinstance(values, dict):
        raise RunError(f"{where} must be an object, got {type(values).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    for k, v in values.items():
        if k not in names:
            raise RunError(f"{where} has an unknown field {k!r}")
        if not _matches(hints.get(k), v):
            raise RunError(f"{where}.{k} has the wrong type ({type(v).__name__}: {str(v)[:40]!r})")


def check_config(d, where: str) -> dict:
    """config.json: {"model": str, "params": {field: value}, "data": {DataConfig field: value}, ...}."""
    from dpcore.models import MODELS

    if not isinstance(d, dict):
        raise RunError(f"{where} must be an object, got {type(d).__name__}")
    model = d.get("model")
    if not isinstance(model, str) or model not in MODELS:
        raise RunError(f"{where}: unknown model {str(model)[:40]!r}")
    check_fields(MODELS[model].config_class, d.get("params", {}), f"{where} params")
    from dpcore.runs.store import DataConfig

    check_fields(DataConfig, d.get("data") or {}, f"{where} data")
    if not isinstance(d.get("name"), (str, type(None))):
        raise RunError(f"{where}.name must be a string")
    return d


_STATUS_TYPES = {"status": str, "message": (str, type(None)), "created": str, "started": str,
                 "finished": str, "phase": (str, type(None)), "host": str, "pid": int,
                 "created_ts": (int, float), "heartbeat": (int, float), "seconds": (int, float, type(None)),
                 "step": (int, type(None)), "total_steps": (int, type(None)),
                 "epsilon": (int, float, str, type(None))}


def check_status(d, where: str) -> dict:
    from dpcore.runs.store import STATUSES

    if not isinstance(d, dict):
        raise RunError(f"{where} must be an object, got {type(d).__name__}")
    for k, v in d.items():
        want = _STATUS_TYPES.get(k)
        if want is not None and (not isinstance(v, want) or (isinstance(v, bool) and want is not str)):
            raise RunError(f"{where}.{k} has the wrong type ({type(v).__name__})")
    if d.get("status", "created") not in STATUSES:
        raise RunError(f"{where}: unknown status {str(d.get('status'))[:40]!r}")
    return d


def check_ledger(d, where: str) -> dict:
    if not isinstance(d, dict) or not isinstance(d.get("records", []), list):
        raise RunError(f"{where} must be an object with a list of records")
    for k in ("epsilon", "delta"):
        if k in d and d[k] is not None and not _is_number(d[k]):
            raise RunError(f"{where}.{k} must be a number")
    if not isinstance(d.get("private", True), bool):
        raise RunError(f"{where}.private must be true or false")
    ledger_records(d.get("records", []), where)
    if d.get("selection") is not None:
        selection_record(d["selection"], where)
    return d


def selection_record(d, where: str):
    """SelectionRecord from JSON (private selection of the best run), any bad field a RunError."""
    from dpcore.errors import DPCoreError
    from dpcore.privacy.ledger import SelectionRecord

    if not isinstance(d, dict) or not isinstance(d.get("candidates", []), list) or not all(
            isinstance(c, dict) or (isinstance(c, list) and all(isinstance(r, dict) for r in c))
            for c in d.get("candidates", [])):
        raise RunError(f"{where}: the selection record must hold a list of candidates")
    try:
        return SelectionRecord.from_dict(d)
    except (DPCoreError, TypeError, ValueError, KeyError) as exc:
        raise RunError(f"{where}: bad selection record ({' '.join(str(exc).split())[:120]})") from None


def ledger_records(records, where: str):
    """PrivacyLedger from a JSON list, any bad record a one-line RunError."""
    from dpcore.errors import DPCoreError
    from dpcore.privacy.ledger import PrivacyLedger

    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise RunError(f"{where}: ledger records must be a list of objects")
    try:
        return PrivacyLedger.from_list(records)
    except (DPCoreError, TypeError, ValueError, KeyError) as exc:
        raise RunError(f"{where}: bad ledger record ({' '.join(str(exc).split())[:120]})") from None


def check_model_files(model_dir: Path, model: str) -> None:
    """model.json (every field, classes from the allow-list) and its config before any loading."""
    from dpcore.models import MODELS
    from dpcore.models.saved import read_model_meta

    meta = read_model_meta(model_dir, model)
    check_fields(MODELS[model].config_class, meta["config"], "model.json config")
    weights = Path(model_dir) / "weights.safetensors"
    if weights.is_symlink():
        raise RunError(f"model weights are a symbolic link: {weights}")


def as_number(v) -> float:
    try:
        f = float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan
    return f


# ----------------------------------------------------------------------------- liveness
HOST = socket.gethostname()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError, OSError):
        return False
    return True


def is_alive(status: dict, now: float | None = None) -> bool:
    """Is the process that wrote this "running" status still training it?"""
    now = time.time() if now is None else now
    beat = status.get("heartbeat")
    if not isinstance(beat, (int, float)) or now - beat > STALE_SECONDS:
        return False
    pid = status.get("pid")
    if status.get("host") == HOST and isinstance(pid, int):
        return pid_alive(pid)
    return True


def liveness() -> dict:
    return {"pid": os.getpid(), "host": HOST, "heartbeat": time.time()}


# ----------------------------------------------------------------------------- the lock
class RunLock:
    """An exclusive, non-blocking flock on ROOT/_locks/NAME.lock; released on `release` or process death."""

    def __init__(self, root: Path, name: str):
        self.name = name
        self.path = Path(root) / LOCKS / f"{name}.lock"
        self._fd: int | None = None

    def acquire(self) -> bool:
        try:
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(mode=0o700, exist_ok=True)  # in the runs root, never its parents
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise RunError(f"cannot lock run {self.name!r} in {self.path.parent}: "
                           f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> "RunLock":
        if not self.acquire():
            raise RunError(f"run {self.name!r} is being trained or changed by another process")
        return self

    def __exit__(self, *exc) -> None:
        self.release()
