"""What makes a run folder safe to open: every file read by one checked reader, then checked field
by field against an allow-list of types (run-file validation only).

Why: a run folder may come from someone else (a shared drive, an e-mail) or be edited by hand.
Every file of a run is read through `dpcore.files` (size capped before reading, nesting capped,
no symbolic link inside the folder) and checked here (`check_config`, `check_status`,
`check_ledger`, `check_evaluation`, `check_data_paths`), so a tampered or truncated file is a
one-line RunFileError ("<file>: <reason>"), never a traceback, code that runs or a file outside the
runs folder read as data. Liveness and the run lock live in `dpcore.runs.liveness`.
"""
from __future__ import annotations

import math
import typing
from pathlib import Path

from dpcore.files import RunFileError, check_inside, read_json  # noqa: F401 (read_json: dpcore.report's import)
from dpcore.runs.naming import NAME_RE

STATUSES = ("created", "running", "done", "stopped", "failed", "interrupted")  # status.json's "status"


# ----------------------------------------------------------------------------- field checks
def _is_number(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("inf", "-inf", "nan")


def _is_finite_number(v) -> bool:
    return _is_number(v) and math.isfinite(float(v))


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


def check_params(cls, values: dict, where: str, prefix: str = "") -> None:
    """Every key of `values` is a field of model config class `cls` and parses as it (the
    declaration's own parser, dpcore.models.params.parse_value, which the CLI and the pages use)."""
    from dpcore.errors import InvalidParameter
    from dpcore.models.params import config_fields, parse_value

    if not isinstance(values, dict):
        raise RunFileError(where, f"{prefix.rstrip('.') or 'it'} must be an object, got {type(values).__name__}")
    fields = {p.name: p for p in config_fields(cls)}
    for k, v in values.items():
        if k not in fields:
            raise RunFileError(where, f"{prefix}{str(k)[:40]} is not a known field")
        try:
            parse_value(fields[k], v)
        except InvalidParameter as exc:
            raise RunFileError(where, f"{prefix}{' '.join(str(exc).split())[:160]}") from None


def check_fields(cls, values: dict, where: str, prefix: str = "") -> None:
    """Every key of `values` is a field of dataclass `cls` (DataConfig) and has the field's type."""
    import dataclasses

    if not isinstance(values, dict):
        raise RunFileError(where, f"{prefix.rstrip('.') or 'it'} must be an object, got {type(values).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    for k, v in values.items():
        if k not in names:
            raise RunFileError(where, f"{prefix}{k} is not a known field")
        if not _matches(hints.get(k), v):
            raise RunFileError(where, f"{prefix}{k} has the wrong type ({type(v).__name__}: {str(v)[:40]!r})")


def check_config(d, where: str) -> dict:
    """config.json: {"model": str, "params": {field: value}, "data": {DataConfig field: value}, ...}."""
    from dpcore.models import MODELS

    if not isinstance(d, dict):
        raise RunFileError(where, f"must be an object, got {type(d).__name__}")
    model = d.get("model")
    if not isinstance(model, str) or model not in MODELS:
        raise RunFileError(where, f"unknown model {str(model)[:40]!r}")
    check_params(MODELS[model].config_class, d.get("params", {}), where, "params.")
    from dpcore.runs.config import DataConfig

    data = d.get("data") or {}
    check_fields(DataConfig, data, where, "data.")
    if not isinstance(d.get("name"), (str, type(None))):
        raise RunFileError(where, "name must be a string")
    if d.get("name") is not None:
        if not NAME_RE.fullmatch(d["name"]):
            raise RunFileError(where, f"name {d['name'][:40]!r} is not a run name (letters, digits, ._=+-)")
    if data.get("dataset") is not None:
        from dpcore.data.registry import BUILTINS

        if data["dataset"] not in BUILTINS:
            raise RunFileError(where, f"data.dataset {str(data['dataset'])[:40]!r} is not a built-in dataset")
    return d


def check_data_paths(data, root: Path, where: str = "config.json"):
    """`data` (a DataConfig) with its CSV files (data.csv, data.test_csv) resolved by name inside
    ROOT/_uploads, never a path elsewhere: a run folder from someone else must not make the
    workbench read /etc/passwd, and a runs folder that moved keeps its runs usable."""
    import dataclasses
    import re

    from dpcore.runs.uploads import uploads_dir

    folder, changes = uploads_dir(root), {}
    for key in ("csv", "test_csv"):
        value = getattr(data, key, None)
        if value is None:
            continue
        name = Path(value).name
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.csv", name):
            raise RunFileError(where, f"data.{key} {str(value)[:80]!r} is not a table kept in the runs "
                                      f"folder's uploads ({folder.name}/NAME.csv)")
        p = folder / name
        if p.is_symlink():
            raise RunFileError(where, f"data.{key} {name!r} is a symbolic link")
        changes[key] = str(p)
    return dataclasses.replace(data, **changes) if changes else data


def check_evaluation(d, where: str = "evaluation.json") -> dict:
    """evaluation.json: an object whose known parts (utility, marginals, attacks, …) are objects."""
    if not isinstance(d, dict):
        raise RunFileError(where, f"must be an object, got {type(d).__name__}")
    for key in ("utility", "marginals", "attacks", "audit"):
        if d.get(key) is not None and not isinstance(d[key], dict):
            raise RunFileError(where, f"{key} must be an object, got {type(d[key]).__name__}")
    attacks = d.get("attacks") or {}
    if not isinstance(attacks.get("best") or {}, dict):
        raise RunFileError(where, "attacks.best must be an object")
    if not isinstance(attacks.get("attacks", []), list) or not all(
            isinstance(a, dict) for a in attacks.get("attacks", [])):
        raise RunFileError(where, "attacks.attacks must be a list of objects")
    if not isinstance(attacks.get("skipped") or {}, dict):
        raise RunFileError(where, "attacks.skipped must be an object")
    for key in ("mean", "reference"):
        v = (d.get("utility") or {}).get(key)
        if v is not None and not isinstance(v, dict):
            raise RunFileError(where, f"utility.{key} must be an object")
    ref = (d.get("utility") or {}).get("reference") or {}
    if not isinstance(ref.get("mean") or {}, dict):
        raise RunFileError(where, "utility.reference.mean must be an object")
    if not isinstance(d.get("warnings", []), list):
        raise RunFileError(where, "warnings must be a list")
    _check_released_score(d.get("released_score"), where)
    return d


MAX_SCORE_CLASSES = 1000  # a target's levels (the schema's categorical limit is far below)


def _check_released_score(s, where: str) -> None:
    """The released usefulness score (dpcore.runs.run_score): numbers and an allow-listed partition."""
    from dpcore.privacy.ledger import PARTITIONS

    if s is None:
        return
    if not isinstance(s, dict):
        raise RunFileError(where, "released_score must be an object")
    for k in ("correct", "wrong", "noise_multiplier"):
        if not _is_finite_number(s.get(k)):
            raise RunFileError(where, f"released_score.{k} must be a finite number")
    if isinstance(s.get("record_index"), bool) or not isinstance(s.get("record_index"), int):
        raise RunFileError(where, "released_score.record_index must be an integer")
    if s.get("partition") not in PARTITIONS:
        raise RunFileError(where, f"released_score.partition must be one of {PARTITIONS}")
    per_class = s.get("per_class")
    if per_class is not None and not (
            isinstance(per_class, list) and 1 <= len(per_class) <= MAX_SCORE_CLASSES
            and all(isinstance(p, list) and len(p) == 2 and all(_is_finite_number(x) for x in p)
                    for p in per_class)):
        raise RunFileError(where, "released_score.per_class must be a list of [right, wrong] number pairs "
                                  f"(at most {MAX_SCORE_CLASSES})")


def check_done(status: dict, ledger: dict, where: str = "status.json") -> None:
    """"done" needs the steps the ledger records: a run whose ledger holds 6 DP-SGD steps but whose
    status says done at step 5 was edited or cut short, and is not presented as finished."""
    if status.get("status") != "done":
        return
    step = status.get("step")
    records = ledger.get("records") if isinstance(ledger, dict) else None
    # Every DP-SGD step is a training step (P3GM, DP-VAE); DP-EM iterations and a marginal model's
    # measurements (AIM, MST) are not counted one by one in the step count, so they set no floor.
    need = max((r.get("steps", 0) for r in records or [] if isinstance(r, dict)
                and str(r.get("name", "")).startswith("dp-sgd")
                and isinstance(r.get("steps"), int) and not isinstance(r.get("steps"), bool)), default=0)
    if isinstance(step, int) and step < need:
        raise RunFileError(where, f"says done at step {step}, but the ledger records {need} steps")


_STATUS_TYPES: dict[str, type | tuple[type, ...]] = {"status": str, "message": (str, type(None)), "created": str, "started": str,
                 "finished": str, "phase": (str, type(None)), "host": str, "pid": int,
                 "created_ts": (int, float), "heartbeat": (int, float), "seconds": (int, float, type(None)),
                 "step": (int, type(None)), "total_steps": (int, type(None)),
                 "epsilon": (int, float, str, type(None)), "ledger_chain": dict}


def check_status(d, where: str) -> dict:
    if not isinstance(d, dict):
        raise RunFileError(where, f"must be an object, got {type(d).__name__}")
    for k, v in d.items():
        want = _STATUS_TYPES.get(k)
        if want is not None and (not isinstance(v, want) or (isinstance(v, bool) and want is not str)):
            raise RunFileError(where, f"{k} has the wrong type ({type(v).__name__})")
    if d.get("status", "created") not in STATUSES:
        raise RunFileError(where, f"unknown status {str(d.get('status'))[:40]!r}")
    return d


def check_ledger(d, where: str) -> dict:
    if not isinstance(d, dict) or not isinstance(d.get("records", []), list):
        raise RunFileError(where, "must be an object with a list of records")
    for k in ("epsilon", "delta"):
        if k in d and d[k] is not None and not _is_number(d[k]):
            raise RunFileError(where, f"{k} must be a number")
    if not isinstance(d.get("private", True), bool):
        raise RunFileError(where, "private must be true or false")
    if not isinstance(d.get("chain", {}), dict):
        raise RunFileError(where, "chain must be an object")
    from dpcore.models.saved import ledger_records  # the one reader of a ledger list (model.json's too)

    ledger_records(d.get("records", []), where)
    if d.get("selection") is not None:
        selection_record(d["selection"], where)
    return d


def selection_record(d, where: str):
    """SelectionRecord from JSON (private selection of the best run), any bad field a RunError."""
    from dpcore.errors import DPCoreError
    from dpcore.privacy.accountant import selection_from_dict

    if not isinstance(d, dict) or not isinstance(d.get("candidates", []), list) or not all(
            isinstance(c, dict) or (isinstance(c, list) and all(isinstance(r, dict) for r in c))
            for c in d.get("candidates", [])):
        raise RunFileError(where, "the selection record must hold a list of candidates")
    try:
        return selection_from_dict(d)
    except (DPCoreError, TypeError, ValueError, KeyError) as exc:
        raise RunFileError(where, f"bad selection record ({' '.join(str(exc).split())[:120]})") from None


def check_model_files(model_dir: Path, model: str) -> None:
    """model.json (every field, classes from the allow-list) and its config before any loading."""
    from dpcore.models import MODELS
    from dpcore.models.saved import read_model_meta

    meta = read_model_meta(model_dir, model)
    check_params(MODELS[model].config_class, meta["config"], "model.json", "config.")
    check_inside(Path(model_dir).parent, Path(model_dir) / "weights.safetensors")


def as_number(v) -> float:
    try:
        f = float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan
    return f


