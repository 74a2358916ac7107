"""What survives going to another page and a browser reload.

Why: Streamlit forgets the state of a widget that was not drawn in a script run, so the Train
page's settings (model, ε, PCA dimension, epochs, …) were lost the moment a user opened Compare.
`restore_widgets` / `keep_widgets` copy them to and from a plain session_state key that no widget
owns. A reload starts a new session: the active dataset and model travel in the URL
(`?dataset=fashion-mnist&model=p3gm`, or `?table=TOKEN` for a stored upload), read once per session and checked against the registry's
names and the models' names (anything else is ignored with a one-line note, never an exception).
"""
from __future__ import annotations

import streamlit as st

_KEPT = "dpcore.kept_widgets"
_URL_READ = "dpcore.url_read"
_URL_NOTES = "dpcore.url_notes"
MODEL_KEY = "train.model"
_BUTTONS = ("train.start", "train.stop")  # a button's state cannot be set, only clicked


def _keepable(key, value) -> bool:
    return (isinstance(key, str) and key not in _BUTTONS
            and (value is None or isinstance(value, (bool, int, float, str, tuple, list))))


def restore_widgets(prefix: str) -> None:
    """Before a page draws its widgets: give back the values Streamlit dropped while another page ran."""
    for key, value in (st.session_state.get(_KEPT) or {}).items():
        if key.startswith(prefix) and key not in st.session_state:
            st.session_state[key] = value


def keep_widgets(prefix: str) -> None:
    """After a page drew its widgets: copy their values (keys starting with `prefix`) to a key no
    widget owns, so they outlive the page."""
    kept = dict(st.session_state.get(_KEPT) or {})
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and key.startswith(prefix):
            value = st.session_state[key]
            if _keepable(key, value):
                kept[key] = value
    st.session_state[_KEPT] = kept


def _set_model(name: str) -> None:
    st.session_state[MODEL_KEY] = name
    st.session_state[_KEPT] = {**(st.session_state.get(_KEPT) or {}), MODEL_KEY: name}


def read_url() -> None:
    """Once per session (its first run): ?dataset= and ?model= become the session's choice when
    they name an installed built-in dataset and a registered model; a bad value leaves a note."""
    if st.session_state.get(_URL_READ):
        return
    st.session_state[_URL_READ] = True
    from dpcore.errors import DPCoreError
    from dpcore.ui.data import set_data_choice
    from dpcore.ui.defaults import default_data_choice, valid_dataset

    notes = []
    params = st.query_params
    asked = params.get("dataset")
    if asked is not None:
        name = valid_dataset(asked)
        if name is None:
            notes.append(f"Ignored dataset={asked[:40]!r} in the address: not an installed built-in dataset.")
        else:
            try:
                set_data_choice(default_data_choice(name))
            except DPCoreError as exc:
                notes.append(f"Ignored dataset={name!r} in the address: {exc}")
    asked = params.get("table")
    if asked is not None and params.get("dataset") is None:
        from dpcore.runs.tables import recall_table
        from dpcore.ui.data import mark_table_gone
        from dpcore.ui.nav import runs_root

        try:
            set_data_choice(recall_table(runs_root(), asked), token=asked)
        except DPCoreError as exc:
            mark_table_gone(str(exc))
    asked = params.get("model")
    if asked is not None:
        from dpcore.models import MODELS

        if asked in MODELS:
            _set_model(asked)
        else:
            notes.append(f"Ignored model={asked[:40]!r} in the address: not a model of this workbench.")
    st.session_state[_URL_NOTES] = notes


def url_notes() -> list[str]:
    """The notes of the session's first run (shown once, then cleared)."""
    return st.session_state.pop(_URL_NOTES, None) or []


def write_url() -> None:
    """After each run: the address carries the active built-in dataset, or the stored table's random
    token (dpcore.runs.tables; never a file name or anything derived from the rows), and the Train
    page's model, so a reload or a new tab reopens them."""
    from dpcore.ui.data import data_choice, data_table_token

    want = {"dataset": data_choice().get("dataset"), "table": data_table_token()}
    kept = st.session_state.get(_KEPT) or {}
    want["model"] = st.session_state.get(MODEL_KEY) or kept.get(MODEL_KEY)
    for key, value in want.items():
        if value is None:
            if key in st.query_params:
                del st.query_params[key]
        elif st.query_params.get(key) != value:
            st.query_params[key] = value
