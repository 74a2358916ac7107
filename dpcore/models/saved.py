"""A saved model's files: the public template (schema, no rows) as JSON checked against an
allow-list, model.json's checks, and the weights as safetensors (never pickle).

Why an allow-list: a run folder may come from someone else, so a model.json names classes only
from a fixed list and nothing in it is ever imported or executed.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpcore.data.dataset import Dataset
from dpcore.errors import RunError
from dpcore.io import atomic_write_bytes

if TYPE_CHECKING:  # torch is imported where tensors are read, not when a run folder is listed
    import torch

MAX_FEATURES = 10_000_000  # columns a saved model may declare (a 3000×3000 RGB image is 27M: too big)


def read_model_meta(directory, name: str) -> dict:
    """model.json of a saved model, checked field by field to hold a `name` model (one-line
    RunError otherwise: wrong types, missing keys, a list for an object, deep nesting, huge files)."""
    from dpcore.files import MAX_MODEL_JSON_BYTES, read_json

    d = Path(directory)
    meta = read_json(d / "model.json", max_bytes=MAX_MODEL_JSON_BYTES, base=d.parent)
    where = f"{d / 'model.json'}"
    if not isinstance(meta, dict):
        raise RunError(f"{where} must be an object, got {type(meta).__name__}")
    if meta.get("model") != name:
        raise RunError(f"{d} holds a {str(meta.get('model'))[:40]!r} model, not {name!r}")
    for key, kind in (("config", dict), ("template", dict), ("ledger", list), ("n_features", int),
                      ("n_classes", int)):
        if not isinstance(meta.get(key), kind) or isinstance(meta.get(key), bool):
            raise RunError(f"{where}: {key!r} is missing or not a{'n' if kind is int else ''} "
                           f"{ {dict: 'object', list: 'list', int: 'integer'}[kind]}")
    for key in ("n_features", "n_classes", "width"):
        v = meta.get(key, 0)
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_FEATURES:
            raise RunError(f"{where}: {key!r} must be an integer in [0, {MAX_FEATURES}]")
    for key in ("calibration", "fit_result"):
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            raise RunError(f"{where}: {key!r} must be an object")
    check_template(meta["template"], where)
    ledger_records(meta["ledger"], where)
    return meta


def ledger_records(records, where: str):
    """PrivacyLedger from a JSON list (model.json's, ledger.json's), any bad record a one-line
    RunFileError."""
    from dpcore.errors import DPCoreError
    from dpcore.files import RunFileError
    from dpcore.privacy.ledger import PrivacyLedger

    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise RunFileError(where, "ledger records must be a list of objects")
    try:
        return PrivacyLedger.from_list(records)
    except (DPCoreError, TypeError, ValueError, KeyError) as exc:
        raise RunFileError(where, f"bad ledger record ({' '.join(str(exc).split())[:120]})") from None

def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    return v


def template_to_json(data: Dataset) -> dict:
    """What `sample` needs to rebuild rows in the original schema, as JSON.

    Schema and encoder are saved through their own `to_dict` when they have one; otherwise the
    run re-creates them from its data config (they are public information, not model weights).
    """
    out: dict[str, Any] = {
        "name": data.name,
        "n_features": data.n_features,
        "label_names": None if data.label_names is None else [_plain(v) for v in data.label_names],
        "image_shape": None if data.image_shape is None else list(data.image_shape),
        "preprocessing_private": bool(data.preprocessing_private),
        "meta": json.loads(json.dumps(data.public_meta(), default=str)),  # no counts, no paths
    }
    for key in ("schema", "encoder"):
        obj = getattr(data, key)
        cls = f"{type(obj).__module__}:{type(obj).__qualname__}"
        if obj is not None and hasattr(obj, "to_dict"):
            out[key] = {"class": cls, "state": obj.to_dict()}
        elif obj is not None and hasattr(obj, "schema") and hasattr(obj.schema, "to_dict"):
            # a TabularEncoder is fully determined by its (public) schema and missing-value mode
            out[key] = {"class": cls, "schema": obj.schema.to_dict(),
                        "schema_class": f"{type(obj.schema).__module__}:{type(obj.schema).__qualname__}",
                        "missing": getattr(obj, "missing", None)}
    return out


def _allowed_classes() -> dict[str, type]:
    """The only classes a saved template may name: a run folder never chooses code to import."""
    from dpcore.data.encoder import TabularEncoder
    from dpcore.data.schema import Schema

    return {f"{c.__module__}:{c.__qualname__}": c for c in (Schema, TabularEncoder)}


def _allowed(spec, where: str) -> type:
    cls = _allowed_classes().get(spec) if isinstance(spec, str) else None
    if cls is None:
        raise RunError(f"{where}: class {str(spec)[:80]!r} is not one a saved model may use")
    return cls


def check_template(d, where: str) -> None:
    where = f"{where} template"
    if not isinstance(d, dict):
        raise RunError(f"{where} must be an object")
    if not isinstance(d.get("name"), str):
        raise RunError(f"{where}: 'name' must be a string")
    n = d.get("n_features")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_FEATURES:
        raise RunError(f"{where}: 'n_features' must be an integer in [0, {MAX_FEATURES}]")
    names = d.get("label_names")
    if names is not None and (not isinstance(names, list) or len(names) > 100_000
                              or not all(isinstance(v, (str, int, float, bool)) for v in names)):
        raise RunError(f"{where}: 'label_names' must be a list of strings or numbers")
    shape = d.get("image_shape")
    if shape is not None and (not isinstance(shape, list) or not 2 <= len(shape) <= 3
                              or not all(isinstance(v, int) and not isinstance(v, bool) and 0 < v <= 100_000
                                         for v in shape) or math.prod(shape) != n):
        raise RunError(f"{where}: 'image_shape' must be 2 or 3 positive integers whose product is n_features")
    if not isinstance(d.get("preprocessing_private"), bool):
        raise RunError(f"{where}: 'preprocessing_private' must be true or false")
    if not isinstance(d.get("meta", {}), dict):
        raise RunError(f"{where}: 'meta' must be an object")
    for key in ("schema", "encoder"):
        spec = d.get(key)
        if spec is None:
            continue
        if not isinstance(spec, dict):
            raise RunError(f"{where}: {key!r} must be an object")
        _allowed(spec.get("class"), f"{where} {key}")
        if "state" in spec:
            if not isinstance(spec["state"], dict):
                raise RunError(f"{where}: {key}.state must be an object")
        else:
            _allowed(spec.get("schema_class"), f"{where} {key}")
            if not isinstance(spec.get("schema"), dict) or not isinstance(spec.get("missing"), (str, type(None))):
                raise RunError(f"{where}: {key} needs a schema object and a missing-value mode")


def template_from_json(d: dict) -> Dataset:
    """The Dataset template saved by `template_to_json` (classes from a fixed allow-list only)."""
    from dpcore.errors import DPCoreError

    check_template(d, "model.json")
    extra: dict[str, Any] = {}
    try:
        for key in ("schema", "encoder"):
            spec = d.get(key)
            if not spec:
                continue
            cls = _allowed(spec["class"], "model.json")
            if "state" in spec:
                extra[key] = cls.from_dict(spec["state"])
            else:
                schema = _allowed(spec["schema_class"], "model.json").from_dict(spec["schema"])
                kw = {} if spec.get("missing") is None else {"missing": spec["missing"]}
                extra[key] = cls(schema, **kw)
    except DPCoreError as exc:
        raise RunError(f"model.json template is invalid: {exc}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise RunError(f"model.json template is invalid ({type(exc).__name__}: "
                       f"{' '.join(str(exc).split())[:120]})") from None
    return Dataset(
        name=d["name"], features=np.zeros((0, d["n_features"]), np.float32),
        labels=None if d["label_names"] is None else np.zeros(0, np.int64),
        label_names=d["label_names"],
        image_shape=None if d["image_shape"] is None else tuple(d["image_shape"]),
        preprocessing_private=d["preprocessing_private"], meta=d.get("meta", {}), **extra,
    )


def empty_template(data: Dataset) -> Dataset:
    """The schema of `data` without its rows (a model must not keep the private rows)."""
    return Dataset(name=data.name, features=np.zeros((0, data.n_features), np.float32),
                   labels=None if data.labels is None else np.zeros(0, np.int64),
                   label_names=data.label_names, schema=data.schema, encoder=data.encoder,
                   image_shape=data.image_shape, preprocessing_private=data.preprocessing_private,
                   meta=dict(data.meta))

def save_tensors(path, tensors: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save

    payload = save({k: v.detach().cpu().contiguous() for k, v in tensors.items()})
    parent = Path(path).parent
    if not parent.is_dir() and parent.parent.is_dir():
        parent.mkdir()  # the model's own folder, never its parents
    atomic_write_bytes(path, payload)


MAX_HEADER_BYTES = 100 * 2**20  # safetensors' own limit for the JSON header
_ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
             "BOOL": 1}


def max_weights_bytes() -> int:
    from dpcore.limits import _env_int

    return _env_int("DPCORE_MAX_WEIGHTS_BYTES", 2**30)


def check_safetensors(path) -> dict:
    """The header of a safetensors file, checked against the file's size before any tensor is read:
    size under DPCORE_MAX_WEIGHTS_BYTES (1 GiB), a JSON header of known dtypes and shapes, and
    each tensor's declared bytes tiling the data section exactly (no gap, no overlap, no tail).
    Returns {name: (dtype, shape)}; a sparse 2 GB file or an inflated header is refused at once."""
    import os
    import struct

    from dpcore.files import RunFileError, check_shape

    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise RunError(f"model weights missing: {path}") from None
    except OSError as exc:
        raise RunFileError(p, f"model weights unreadable ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as fh:
        size, cap = os.fstat(fh.fileno()).st_size, max_weights_bytes()
        if size > cap:
            raise RunFileError(p, f"model weights too large ({size} bytes, at most {cap}; "
                                  "set DPCORE_MAX_WEIGHTS_BYTES to change it)")
        if size < 8:
            raise RunFileError(p, "model weights unreadable (shorter than a safetensors header)")
        (n,) = struct.unpack("<Q", fh.read(8))
        if n > min(MAX_HEADER_BYTES, size - 8):
            raise RunFileError(p, f"model weights unreadable (header of {n} bytes in a {size}-byte file)")
        try:
            header = json.loads(fh.read(n).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise RunFileError(p, "model weights unreadable (the header is not JSON)") from None
    check_shape(header, p)
    if not isinstance(header, dict):
        raise RunFileError(p, "model weights unreadable (the header is not an object)")
    spans, out = [], {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        ok = (isinstance(info, dict) and info.get("dtype") in _ITEMSIZE and isinstance(info.get("shape"), list)
              and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in info["shape"])
              and isinstance(info.get("data_offsets"), list) and len(info["data_offsets"]) == 2
              and all(isinstance(v, int) and not isinstance(v, bool) for v in info["data_offsets"]))
        if not ok:
            raise RunFileError(p, f"model weights unreadable (tensor {str(name)[:40]!r} is badly declared)")
        a, b = info["data_offsets"]
        if not 0 <= a <= b or b - a != math.prod(info["shape"]) * _ITEMSIZE[info["dtype"]]:
            raise RunFileError(p, f"model weights unreadable (tensor {str(name)[:40]!r}: declared size and "
                                  "offsets disagree)")
        spans.append((a, b))
        out[name] = (info["dtype"], tuple(info["shape"]))
    end = 0
    for a, b in sorted(spans):
        if a != end:
            raise RunFileError(p, "model weights unreadable (tensors overlap or leave a gap)")
        end = b
    if end != size - 8 - n:
        raise RunFileError(p, f"model weights unreadable (tensors declare {end} bytes, the file holds "
                              f"{size - 8 - n})")
    return out


def load_tensors(path) -> dict[str, torch.Tensor]:
    """Tensors of a safetensors file (no pickle), header checked first (`check_safetensors`);
    empty, truncated, inflated or garbage files → RunError."""
    from safetensors.torch import load

    p = Path(path)
    if not p.is_file():
        raise RunError(f"model weights missing: {path}")
    check_safetensors(p)
    try:
        tensors = load(p.read_bytes())
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
        raise RunError(f"model weights unreadable: {path} ({' '.join(str(exc).split())[:120]})") from None
    import torch

    if not all(torch.isfinite(t).all() for t in tensors.values() if t.is_floating_point()):
        raise RunError(f"model weights contain NaN or infinite values: {path}")
    return tensors


def check_tensor_set(loaded: dict, expected: dict, path) -> None:
    """The weights hold exactly the tensors the model uses, with their shapes (an extra 1 M-value
    tensor or a missing one is a RunError, not silently ignored)."""
    extra = sorted(set(loaded) - set(expected))
    missing = sorted(set(expected) - set(loaded))
    if extra or missing:
        what = (f"tensors the model does not use: {', '.join(extra)[:80]}" if extra
                else f"no tensor {', '.join(missing)[:80]}")
        raise RunError(f"model weights unreadable: {path} ({what})")
    for k, v in expected.items():
        if tuple(np.shape(v)) != tuple(loaded[k].shape):
            raise RunError(f"model weights unreadable: {path} (tensor {k!r} has shape "
                           f"{tuple(loaded[k].shape)}, the model uses {tuple(np.shape(v))})")
