"""The Train page's model settings: one widget per config field, model facts, the noise preview.

Why: widgets are chosen from each model's config dataclass (type hints, defaults, help text and
declared choices), so a new model or field appears on the page without page code; the preview is
the model's own `plan`, the same checks and accountant calls the run will make, before it starts.
"""
from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import streamlit as st

from dpcore.ui.defaults import default_delta  # noqa: F401 (one δ rule for every page, re-exported)

DEFAULT_MODEL = "p3gm"
EPSILON_CHOICES = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0)


# ----------------------------------------------------------------------------- model settings widgets
def config_fields(cls):
    """The fields of a model's config class with their constraints (dpcore.models.params.Param)."""
    from dpcore.models.params import config_fields as fields

    return fields(cls)


def config_widget(p, key: str, container=None, default=Any, placeholder: str | None = None):
    """One widget for config field `p` (a params.Param), chosen from its type and declared choices;
    its help text is the tooltip. `default` overrides the declared default (e.g. a preset's)."""
    c = container or st
    label = p.name.replace("_", " ")
    value = p.default if default is Any else default
    if p.choices is not None:
        opts = list(p.choices)
        return c.selectbox(label, opts, index=opts.index(value) if value in opts else 0, help=p.help, key=key)
    if p.base is bool:
        return c.checkbox(label, value=bool(value), help=p.help, key=key)
    empty = placeholder or ("None" if p.optional else None)
    if p.base is int:
        return c.number_input(label, value=None if value is None else int(value), step=1,
                              help=p.help, key=key, placeholder=empty)
    if p.base is float:
        val = None if value is None else float(value)
        if val is not None and math.isinf(val):
            return c.text_input(label, value="inf", help=p.help, key=key)
        fmt = "%.1e" if val is not None and 0 < abs(val) < 1e-3 else "%g"
        step = 10.0 ** math.floor(math.log10(abs(val))) / 10 if val else 0.01  # a tenth of the magnitude
        return c.number_input(label, value=val, help=p.help, key=key, format=fmt, step=step,
                              placeholder=empty)
    return c.text_input(label, value="" if value is None else str(value), help=p.help, key=key)


def coerce_param(p, value):
    """Widget value → the field's value ("inf" text → inf, "" → None), checked: the declaration's
    own parser (dpcore.models.params.parse_value, the CLI's and the sweeps' too); a bad value is
    its one-line InvalidParameter naming the field."""
    from dpcore.models.params import parse_value

    return parse_value(p, value)


def remember_params(model: str, params: dict) -> None:
    st.session_state[f"dpcore.params.{model}"] = dict(params)


def remembered_params(model: str) -> dict:
    """The last valid settings of `model` on the Train page ({} if never opened)."""
    return dict(st.session_state.get(f"dpcore.params.{model}") or {})


# ----------------------------------------------------------------------------- models and their plan
def model_info(name: str) -> dict:
    """Label, privacy, role, notes and the one-line description a registered model gives of itself."""
    from dpcore.models import get_model

    cls = get_model(name)
    return {"name": name, "label": cls.label, "private": bool(cls.private), "description": cls.description,
            "config_class": cls.config_class, "role": cls.role, "notes": list(cls.notes)}




_RECOMMENDED_FOR = "dpcore.recommended_for"  # the data the model box was last preselected for


def recommended_model(data: dict, train):
    """The Recommendation for the session's data (dpcore.models.recommend: image or table and its
    columns, never its rows), preselected in the Train page's model box the first time the page
    sees this data. A user's own pick stays while the data stays, another dataset starts from its
    own recommendation, and a model the session already holds when the page first opens (a
    reload's ?model=) is kept."""
    from dpcore.models import MODELS
    from dpcore.models.recommend import recommend
    from dpcore.ui.persist import MODEL_KEY

    rec = recommend(train)
    here = data.get("dataset") or data.get("csv") or json.dumps(data, sort_keys=True, default=str)
    seen = st.session_state.get(_RECOMMENDED_FOR)
    if seen != here:
        st.session_state[_RECOMMENDED_FOR] = here
        if (seen is not None or st.session_state.get(MODEL_KEY) not in MODELS) and rec.model in MODELS:
            st.session_state[MODEL_KEY] = rec.model
    return rec


def data_facts_json(train) -> str:
    """What a model's plan needs of the training rows (counts, shape, DP preprocessing), as JSON."""
    from dpcore.models.synthesizer import DataFacts

    return json.dumps(dataclasses.asdict(DataFacts.of(train)), default=str)


@st.cache_data(show_spinner=False, max_entries=256)
def plan_preview(model: str, params_json: str, facts_json: str) -> dict:
    """The model's own plan for these settings on this data, before training: adapted defaults,
    limits, steps, and for a private model the calibrated noise and the accountant's ε (its ledger
    starts with the dataset's DP preprocessing and the run's noisy count ñ). The run calibrates
    with ñ instead of the exact n, so its σ's differ by the count's few-per-cent error; the ε is
    the same. Raises the plan's one-line DPCoreError for settings the data cannot take."""
    from dpcore.models import get_model
    from dpcore.models.params import config_from_dict
    from dpcore.models.synthesizer import DataFacts

    cls = get_model(model)
    facts = json.loads(facts_json)
    facts["image_shape"] = None if facts["image_shape"] is None else tuple(facts["image_shape"])
    facts["spent"] = tuple(facts["spent"])
    plan = cls.plan(config_from_dict(cls.config_class, json.loads(params_json)), DataFacts(**facts))
    return {"params": plan.params, "adapted": plan.adapted, "limits": plan.limits, "steps": plan.steps,
            "noise": plan.noise, "epsilon": plan.epsilon, "delta": plan.delta, "ledger": plan.ledger,
            "details": {k: v for k, v in plan.details.items() if k != "ledger"}, "notes": list(plan.notes)}
