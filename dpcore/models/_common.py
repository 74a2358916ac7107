"""Pieces every neural synthesizer shares: device, seeded MLPs, the label block, MoG maths, I/O.

Why here: P3GM, PGM, P3GM-AE, VAE and DP-VAE differ in what they train, not in how rows enter a
network (features + one-hot label block, as in the P3GM paper: D = 784 + 10 for images) or leave it
(decoded features clipped to [0, 1], label = argmax of the decoded block).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
import typing
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from dpcore.data.dataset import Dataset
from dpcore.errors import DataError, InvalidParameter, RunError, check_int, check_positive

LOG_2PI = math.log(2 * math.pi)


# ----------------------------------------------------------------------------- config helpers
def config_help(cls) -> dict[str, str]:
    """Help string of each field of a config dataclass (the CLI's and the page's source)."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}


def config_types(cls) -> dict[str, Any]:
    """Resolved type of each field (works under `from __future__ import annotations`)."""
    return typing.get_type_hints(cls)


def config_to_dict(config) -> dict:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def config_from_dict(cls, values: dict):
    """Build `cls(**values)`; an unknown key raises InvalidParameter naming it."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise InvalidParameter(f"unknown parameter(s) for {cls.__name__}: {', '.join(unknown)}")
    # dumps() writes non-finite floats as strings (e.g. L-VAE's epsilon = inf): read them back
    return cls(**{k: as_float(v) if isinstance(v, str) and v in ("inf", "-inf", "nan") else v
                  for k, v in values.items()})


def check_common(cfg) -> None:
    """Validation shared by every neural config (raises InvalidParameter naming the field)."""
    for name in ("epochs", "batch_size", "hidden"):
        if hasattr(cfg, name):
            check_int(name, getattr(cfg, name), minimum=1)
    if hasattr(cfg, "lr"):
        check_positive("lr", cfg.lr)
    if hasattr(cfg, "seed"):
        check_int("seed", cfg.seed, minimum=0)
    if hasattr(cfg, "likelihood") and cfg.likelihood not in ("gaussian", "bernoulli"):
        raise InvalidParameter(f"likelihood must be 'gaussian' or 'bernoulli', got {cfg.likelihood!r}")
    if hasattr(cfg, "recon_scale"):
        check_positive("recon_scale", cfg.recon_scale)
    if hasattr(cfg, "device") and cfg.device not in ("cpu", "cuda", "auto"):
        raise InvalidParameter(f"device must be 'cpu', 'cuda' or 'auto', got {cfg.device!r}")


SEED_HELP = ("random seed of the public randomness (initialisation, shuffles, warm-up); a private "
             "model's mechanism noise is secret, so the same seed trains another model")
REPRODUCIBLE_NOISE_HELP = ("debug only: mechanism noise drawn from the seed; the run is NOT private "
                           "(its ledger says 'seeded')")


def hparam(default, help: str):
    """A config dataclass field with its help text (the CLI's and the Train page's source)."""
    return dataclasses.field(default=default, metadata={"help": help})


MAX_FEATURES = 10_000_000  # columns a saved model may declare (a 3000×3000 RGB image is 27M: too big)


def read_model_meta(directory, name: str) -> dict:
    """model.json of a saved model, checked field by field to hold a `name` model (one-line
    RunError otherwise: wrong types, missing keys, a list for an object, deep nesting, huge files)."""
    from dpcore.runs.safety import MAX_MODEL_JSON_BYTES, read_json

    d = Path(directory)
    meta = read_json(d / "model.json", max_bytes=MAX_MODEL_JSON_BYTES)
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
    _check_template(meta["template"], where)
    from dpcore.runs.safety import ledger_records

    ledger_records(meta["ledger"], where)
    return meta


def data_ledger(train: Dataset):
    """A fresh ledger that starts with the dataset's own preprocessing mechanisms.

    Why: bounds estimated with DP (`read_csv(..., undeclared="dp")`) spend budget on the same rows
    before the model sees them; the data layer cannot import dpcore.privacy, so it leaves those
    records in `meta["privacy_records"]` and every model's ledger must start with them.
    """
    from dpcore.privacy.ledger import MechanismRecord, PrivacyLedger

    ledger = PrivacyLedger()
    ledger.extend(MechanismRecord.from_dict(d) for d in train.meta.get("privacy_records") or [])
    return ledger


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise InvalidParameter("device 'cuda' requested but CUDA is not available")
    return torch.device(name)


# ----------------------------------------------------------------------------- networks
def seeded_mlp(sizes: list[int], generator: torch.Generator) -> nn.Sequential:
    """Linear → ReLU → … → Linear, initialised from `generator` (PyTorch's default uniform law).

    Only nn.Linear holds parameters and each Linear runs once per forward, which is what the
    DP-SGD engine's per-example book-keeping needs.
    """
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        lin = nn.Linear(a, b)
        bound = 1.0 / math.sqrt(a)
        with torch.no_grad():
            lin.weight.copy_(torch.rand(b, a, generator=generator) * 2 * bound - bound)
            lin.bias.copy_(torch.rand(b, generator=generator) * 2 * bound - bound)
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class GaussianEncoder(nn.Module):
    """x → (mean, log-variance) of q(z|x) from one MLP whose last Linear emits both halves (one call
    per forward, as DP-SGD's book-keeping needs); the log-variance is clamped to [−12, 6]."""

    def __init__(self, mlp: nn.Sequential, latent_dim: int):
        super().__init__()
        self.mlp, self.latent_dim = mlp, latent_dim

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.mlp(x)
        return h[:, :self.latent_dim], h[:, self.latent_dim:].clamp(-12.0, 6.0)


def torch_generator(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(int(seed))
    return g


# ----------------------------------------------------------------------------- rows in and out
def model_matrix(data: Dataset) -> tuple[np.ndarray, int]:
    """Features plus the one-hot label block (paper: D = 784 + 10); returns (X, n_classes)."""
    X = np.asarray(data.features, dtype=np.float32)
    if X.size and (not np.isfinite(X).all()):
        raise DataError(f"dataset {data.name!r} has non-finite feature values")
    if data.labels is None:
        return X, 0
    k = data.n_classes
    onehot = np.zeros((data.n, k), dtype=np.float32)
    onehot[np.arange(data.n), data.labels] = 1.0
    return np.concatenate([X, onehot], axis=1), k


def split_output(out: np.ndarray, n_features: int, n_classes: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Decoded rows → (features clipped to [0, 1], labels = argmax of the label block)."""
    feats = np.clip(out[:, :n_features], 0.0, 1.0).astype(np.float32)
    if n_classes == 0:
        return feats, None
    return feats, np.argmax(out[:, n_features:n_features + n_classes], axis=1).astype(np.int64)


def recon_per_example(logits: torch.Tensor, x: torch.Tensor, likelihood: str, scale: float,
                      n_features: int | None = None, label_weight: float = 1.0) -> torch.Tensor:
    """−log p(x | z) up to a constant, summed over columns: Bernoulli (decoder outputs logits) or
    Gaussian with fixed standard deviation `scale` (squared error / 2σ²; σ² = 0.5 is the official
    code's plain squared error). Columns from `n_features` on (the label block) weigh `label_weight`."""
    if likelihood == "bernoulli":
        per_col = nn.functional.binary_cross_entropy_with_logits(logits, x, reduction="none")
    else:
        per_col = (logits - x) ** 2 / (2.0 * scale * scale)
    if n_features is not None and label_weight != 1.0 and per_col.shape[1] > n_features:
        return per_col[:, :n_features].sum(1) + label_weight * per_col[:, n_features:].sum(1)
    return per_col.sum(1)


def decode_mean(logits: torch.Tensor, likelihood: str) -> torch.Tensor:
    return torch.sigmoid(logits) if likelihood == "bernoulli" else logits


# ----------------------------------------------------------------------------- mixture of Gaussians
def diag_gauss_logpdf(z: torch.Tensor, mean: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """log N(z; mean, diag exp(logvar)) summed over the last axis."""
    return -0.5 * (LOG_2PI + logvar + (z - mean) ** 2 * torch.exp(-logvar)).sum(-1)


def mog_logpdf(z: torch.Tensor, weights: torch.Tensor, means: torch.Tensor,
               variances: torch.Tensor) -> torch.Tensor:
    """log Σ_k π_k N(z; μ_k, diag σ²_k) for z (b, d) → (b,) (the P3GM prior, Eq. of the ELBO)."""
    logv = torch.log(variances)                                   # (K, d)
    diff = z[:, None, :] - means[None]                            # (b, K, d)
    comp = -0.5 * (LOG_2PI + logv[None] + diff ** 2 / variances[None]).sum(-1)
    return torch.logsumexp(comp + torch.log(weights)[None], dim=1)


def mog_sample(n: int, weights: np.ndarray, means: np.ndarray, variances: np.ndarray,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """z ~ Σ_k π_k N(μ_k, diag σ²_k): (z (n, d) float32, component index (n,))."""
    w = np.asarray(weights, dtype=np.float64)
    w = np.clip(w, 0, None)
    w = w / w.sum()
    comp = rng.choice(len(w), size=n, p=w)
    eps = rng.standard_normal((n, means.shape[1]))
    z = means[comp] + np.sqrt(variances[comp]) * eps
    return z.astype(np.float32), comp


# ----------------------------------------------------------------------------- the template
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


def _check_template(d, where: str) -> None:
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

    _check_template(d, "model.json")
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


# ----------------------------------------------------------------------------- atomic files
def atomic_write_bytes(path: str | os.PathLike, payload: bytes) -> None:
    """Write via a temporary file + os.replace, so a crash never leaves a half-written file."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except FileNotFoundError:  # never re-create a folder (e.g. a run deleted while it trains)
        raise RunError(f"cannot write {str(path)!r}: the folder {str(path.parent)!r} does not exist") from None
    except NotADirectoryError:
        raise RunError(f"cannot write {str(path)!r}: {str(path.parent)!r} is not a folder") from None
    except OSError as exc:
        raise RunError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def dumps(obj) -> str:
    """JSON with inf/nan kept as the strings "inf"/"nan" (valid JSON everywhere)."""
    def fix(v):
        if isinstance(v, float) and not math.isfinite(v):
            return "inf" if v > 0 else "-inf" if v < 0 else "nan"
        if isinstance(v, dict):
            return {str(k): fix(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [fix(x) for x in v]
        if isinstance(v, np.generic):
            return fix(v.item())
        return v
    return json.dumps(fix(obj), indent=2, default=_json_default)


def as_float(v) -> float:
    """Inverse of `dumps` for one number ("inf" → inf)."""
    return float(v)


def atomic_write_json(path, obj) -> None:
    atomic_write_bytes(path, dumps(obj).encode())


def save_tensors(path, tensors: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save

    payload = save({k: v.detach().cpu().contiguous() for k, v in tensors.items()})
    parent = Path(path).parent
    if not parent.is_dir() and parent.parent.is_dir():
        parent.mkdir()  # the model's own folder, never its parents
    atomic_write_bytes(path, payload)


def load_tensors(path) -> dict[str, torch.Tensor]:
    """Tensors of a safetensors file (no pickle); empty, truncated or garbage files → RunError."""
    from safetensors.torch import load

    p = Path(path)
    if not p.is_file():
        raise RunError(f"model weights missing: {path}")
    try:
        tensors = load(p.read_bytes())
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
        raise RunError(f"model weights unreadable: {path} ({' '.join(str(exc).split())[:120]})") from None
    if not all(torch.isfinite(t).all() for t in tensors.values() if t.is_floating_point()):
        raise RunError(f"model weights contain NaN or infinite values: {path}")
    return tensors


def check_finite(value: float, phase: str, step: int) -> None:
    if not math.isfinite(value):
        raise RunError(f"training diverged: loss is {value} in phase {phase!r} at step {step}")


def image_pool_matrix(data: Dataset, pool: int | None, label_columns: int = 0) -> np.ndarray | None:
    """(D, D') matrix averaging k×k pixel blocks of an image set (label columns kept), or None.

    `pool` None = 2 for images of side ≥ 16, else 1 (→ None). Data-independent: no privacy cost.
    Why: Gaussian noise on a D-dimensional release (DP-PCA's covariance, GS-WGAN's per-row
    gradient) has a norm growing with √D while the signal does not; images are smooth, so their
    main structure survives k×k averaging. Edge blocks of sides not divisible by k average the
    pixels they have. `(P > 0).T` copies a pooled pixel back to its block (the upsampling).
    """
    if not data.is_image:
        return None
    shape = tuple(data.image_shape)
    H, W = shape[-2:]
    k = (2 if min(H, W) >= 16 else 1) if pool is None else int(pool)
    if k <= 1:
        return None
    C_ = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    h, w = -(-H // k), -(-W // k)
    c, i, j = np.meshgrid(np.arange(C_), np.arange(H), np.arange(W), indexing="ij")
    src = (c * H * W + i * W + j).ravel()
    dst = (c * h * w + (i // k) * w + (j // k)).ravel()
    P = np.zeros((C_ * H * W + label_columns, C_ * h * w + label_columns), np.float32)
    P[src, dst] = 1.0
    P /= np.maximum(P.sum(0, keepdims=True), 1.0)  # average (edge blocks: fewer pixels)
    lab = np.arange(label_columns)
    P[C_ * H * W + lab, C_ * h * w + lab] = 1.0
    return P
