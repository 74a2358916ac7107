"""The short settings label of a run (what differs from its model's defaults) and the run name
made from it, e.g. `p3gm-fashion-mnist-eps1-share0.1-pca10-s0-20250101-120000`.

Why one module: the same label names a run's folder, heads the Compare page's columns, labels the
privacy–utility curve's lines and fills the Runs table's settings columns, so a reader sees the
same "share0.1-pca10" everywhere. Names stay within the run-name rule (`NAME_RE`:
`[A-Za-z0-9][A-Za-z0-9._=+-]{0,127}`), with room for the "-N" a name collision adds.
"""
from __future__ import annotations

import math
import re

# The settings a reader compares runs by, with their short names (in this order).
SETTINGS = (("encoder_share", "share"), ("pca_dim", "pca"), ("components", "K"), ("epochs", "epochs"))
MAX_NAME = 120  # ≤ 128 with a "-9999" collision suffix
MAX_LABEL = 48  # the dataset part
MAX_SETTINGS = 32
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._=+-]{0,127}$")  # what a run folder may be called


def model_defaults(model: str) -> dict:
    """{field: default} of a model's config; an `auto` field's default is the value `auto` stands
    for (P3GM's pca_dim None → 30), so a planned value equal to it is not "changed"."""
    try:
        from dpcore.models import get_model
        from dpcore.models.params import config_fields

        fields = config_fields(get_model(model).config_class)
    except Exception:  # noqa: BLE001 - an unknown model (a run from elsewhere) has no defaults
        return {}
    return {p.name: (p.auto if p.default is None and p.auto is not None else p.default) for p in fields}


def _short(value) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:g}"
    return str(value)


def settings_label(model: str, params: dict, data: dict | None = None) -> str:
    """The compared settings that differ from the model's defaults, e.g. "share0.1-pca10" ("" when
    none), plus "outlier" for the outlier variant of the data. Safe characters only."""
    defaults = model_defaults(model)
    parts = []
    for name, short in SETTINGS:
        if name in params and params[name] is not None and name in defaults and params[name] != defaults[name]:
            parts.append(short + _short(params[name]))
    if (data or {}).get("outlier"):
        parts.append("outlier")
    return _UNSAFE.sub("_", "-".join(parts))


def _cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters at a "-" boundary where possible."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    return (head.rsplit("-", 1)[0] if "-" in head else head).strip("-._")


def run_name(model: str, data_label: str, epsilon: float, seed: int, stamp: str, settings: str = "") -> str:
    """`<model>-<data>-eps<ε>[-<settings>]-s<seed>-<stamp>`, bounded to MAX_NAME characters (the
    settings label, then the data label, are shortened first)."""
    model = _UNSAFE.sub("_", model)
    label = _cut(_UNSAFE.sub("_", data_label).strip("._") or "data", MAX_LABEL)
    settings = _cut(_UNSAFE.sub("_", settings), MAX_SETTINGS)
    eps = "inf" if not math.isfinite(epsilon) else f"{epsilon:g}"
    tail = f"-s{seed}-{stamp}"

    def name() -> str:
        return f"{model}-{label}-eps{eps}" + (f"-{settings}" if settings else "") + tail

    if len(name()) > MAX_NAME:
        settings = _cut(settings, max(0, len(settings) - (len(name()) - MAX_NAME)))
    if len(name()) > MAX_NAME:
        label = _cut(label, max(1, len(label) - (len(name()) - MAX_NAME))) or "data"
    return name()[:MAX_NAME]
