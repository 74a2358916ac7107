"""The Train page's model settings: one widget per config field, model facts, the noise preview.

Why: widgets are chosen from each model's config dataclass (type hints, defaults, help text), so
a new model or field appears on the page without page code; the calibration preview makes the
same accountant call the model will make, before any data is touched.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import typing
from typing import Any

import streamlit as st

DEFAULT_MODEL = "p3gm"
EPSILON_CHOICES = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0)


# ----------------------------------------------------------------------------- model settings widgets
def config_fields(cls) -> list[tuple[str, Any, Any, str]]:
    """(name, type, default, help) of each field of a model's config dataclass."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        out.append((f.name, hints.get(f.name, type(default)), default, f.metadata.get("help", "")))
    return out


def _options_from_help(help_text: str, default) -> list[str] | None:
    opts = re.findall(r"'([^'\s]+)'", help_text or "")
    opts = list(dict.fromkeys(opts))
    if len(opts) >= 2 and default in opts:
        return opts
    return None


def config_widget(name: str, typ, default, help_text: str, key: str, container=None):
    """One widget for one config field, chosen from its type (help text shown as the tooltip)."""
    c = container or st
    label = name.replace("_", " ")
    args = typing.get_args(typ)
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), typ) if args else typ
    if base is bool:
        return c.checkbox(label, value=bool(default), help=help_text, key=key)
    if base is int:
        return c.number_input(label, value=None if default is None else int(default), step=1,
                              help=help_text, key=key, placeholder="None" if optional else None)
    if base is float:
        val = None if default is None else float(default)
        if val is not None and math.isinf(val):
            return c.text_input(label, value="inf", help=help_text, key=key)
        fmt = "%.1e" if val is not None and 0 < abs(val) < 1e-3 else "%g"
        step = 10.0 ** math.floor(math.log10(abs(val))) / 10 if val else 0.01  # a tenth of the magnitude
        return c.number_input(label, value=val, help=help_text, key=key, format=fmt,
                              step=step, placeholder="None" if optional else None)
    opts = _options_from_help(help_text, default)
    if opts:
        return c.selectbox(label, opts, index=opts.index(default), help=help_text, key=key)
    return c.text_input(label, value="" if default is None else str(default), help=help_text, key=key)


def coerce_param(typ, value):
    """Widget value → the field's type ("inf" text → inf, "" → None)."""
    args = typing.get_args(typ)
    base = next((a for a in args if a is not type(None)), typ) if args else typ
    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    if base is float:
        return float(value)
    if base is int:
        return int(value)
    return value


def remember_params(model: str, params: dict) -> None:
    st.session_state[f"dpcore.params.{model}"] = dict(params)


def remembered_params(model: str) -> dict:
    """The last valid settings of `model` on the Train page ({} if never opened)."""
    return dict(st.session_state.get(f"dpcore.params.{model}") or {})


# ----------------------------------------------------------------------------- models and calibration
MODEL_BLURBS = {
    "p3gm": "P3GM: DP-PCA encoder + DP-EM mixture prior, then a decoder trained with DP-SGD. "
            "Spends part of ε on the encoder, the rest on the decoder.",
    "pgm": "PGM: P3GM without noise (ε = ∞) — the non-private ceiling of the same architecture.",
    "p3gm-ae": "P3GM-AE: P3GM with a deterministic encoder (the PCA code itself); only the decoder learns.",
    "vae": "VAE: a plain variational autoencoder, no privacy (ε = ∞).",
    "dp-vae": "DP-VAE: the whole VAE trained with DP-SGD — the usual baseline P3GM improves on.",
    "lvae": "L-VAE: a VAE with a Lipschitz decoder, trained without DP — ε = ∞ for everything the "
            "workbench releases (its certificate covers only exact posterior re-sampling, not offered here).",
    "gs-wgan": "GS-WGAN: a Wasserstein GAN whose generator gets DP gradients through the critics.",
}


def model_info(name: str) -> dict:
    """Label, privacy and a one-line description of a registered model (imports its module)."""
    from dpcore.models import get_model

    cls = get_model(name)
    doc = (cls.__doc__ or "").strip().splitlines()
    return {"name": name, "label": getattr(cls, "label", name), "private": bool(getattr(cls, "private", True)),
            "description": MODEL_BLURBS.get(name) or (doc[0] if doc else ""), "config_class": cls.config_class,
            "certified": hasattr(cls, "privacy_claim")}


def default_delta(n: int) -> float:
    """δ default: the smaller of 1e-5 and 1/n^1.1 (δ must stay well below one person in n)."""
    return float(min(1e-5, 1.0 / max(n, 2) ** 1.1))


@st.cache_data(show_spinner=False, max_entries=256)
def calibration_preview(model: str, params_json: str, n: int, spent_json: str = "[]") -> dict | None:
    """The noise a run with these settings will use, before training (the model's own calibration
    call, made here with the same arguments, including the dataset's DP preprocessing records in
    `spent_json`, and the run's noisy-count record "dataset-size"). The run itself calibrates with
    the noisy count ñ instead of n, so its σ's differ from the preview's by the count's few-per-cent
    error; the ε is the same. None for non-private models or unknown families."""
    from dpcore.models import get_model
    from dpcore.privacy import accountant as acc
    from dpcore.privacy.ledger import PrivacyLedger

    cls = get_model(model)
    if not getattr(cls, "private", True):
        return None
    from dpcore.privacy.dataset_size import with_count

    p = json.loads(params_json)
    # The run spends its noisy row count ñ first (after any DP preprocessing), then calibrates
    # with ñ; the preview uses the owner's exact n with the same ledger, so its ε is the run's.
    spent = with_count(PrivacyLedger.from_list(json.loads(spent_json)))
    if "encoder_share" in p and "pca_dim" in p:
        cal = acc.calibrate_p3gm(p["epsilon"], p["delta"], p["encoder_share"], n, p["batch_size"],
                                 p["epochs"], components=p.get("components", 1),
                                 em_iters=p.get("em_iters", 20), center=p.get("pca_center", "noisy"),
                                 spent=spent)
    elif {"epsilon", "delta", "batch_size", "epochs"} <= set(p) and "encoder_share" not in p:
        cal = acc.calibrate_dp_vae(p["epsilon"], p["delta"], n, p["batch_size"], p["epochs"], spent=spent)
    else:
        return None
    return cal.to_dict()
