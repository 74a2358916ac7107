"""The session's active dataset: the data choice, loading it (cached), and CSV uploads.

Why: every page trains on, shows or labels the same (train, test) split; the choice lives in
st.session_state and the loaded splits are shared read-only across sessions.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import streamlit as st

from dpcore.errors import DataError
from dpcore.ui.nav import runs_root, upload_limit_bytes

_DATA_KEY = "dpcore.data"


@st.cache_resource(show_spinner="Loading dataset…", max_entries=6)
def _load_data(config_json: str, max_bytes: int):
    """(train, test) for a data choice (shared read-only across sessions; never mutate them).

    Built-ins: the seeded split `dpcore.runs.DataConfig.load` makes, called here directly so the
    first page does not import the run store. Files: `DataConfig.load` itself (the same path as a
    run: the keyed split beside the file; "estimate with DP" draws the bounds from a secret
    NoiseSource). The page shows one such draw to the data owner; every run draws its own bounds
    and records them in its ledger.
    """
    from dpcore.data import load_split

    c = json.loads(config_json)
    if c.get("dataset") is not None:
        return load_split(c["dataset"], seed=c.get("split_seed", 0), test_size=c.get("test_size", 0.1),
                          outlier=c.get("outlier", False), n=c.get("n"))
    from dpcore.runs.config import DataConfig

    return DataConfig(**{k: v for k, v in c.items() if k in data_config_fields()}).load(max_bytes=max_bytes)


def data_config_fields() -> set[str]:
    from dpcore.runs.config import DataConfig

    return {f.name for f in dataclasses.fields(DataConfig)}


def default_data_choice() -> dict:
    """Fashion-MNIST's 20 000-row demo when installed, else digits (dpcore.ui.defaults)."""
    from dpcore.ui.defaults import default_data_choice as choice

    return choice()


_TABLE_KEY = "dpcore.data_table"   # the stored table's token (dpcore.runs.tables) of a CSV choice
_GONE = "missing"                  # a choice whose table is gone: pages refuse, nothing falls back


def data_choice() -> dict:
    """The session's selected data config (a dict accepted by DataConfig)."""
    return dict(st.session_state.get(_DATA_KEY) or default_data_choice())


def data_table_token() -> str | None:
    """The address token of the session's CSV choice (None for a built-in dataset)."""
    return st.session_state.get(_TABLE_KEY) if data_choice().get("csv") else None


def load_data(choice: dict | None = None):
    """(train, test) of `choice` (default: the session's). Raises DPCoreError for bad data, and for a
    chosen table that is gone (never another dataset in its place)."""
    choice = data_choice() if choice is None else choice
    if _GONE in choice:
        raise DataError(str(choice[_GONE]))
    if choice.get("csv") and not Path(choice["csv"]).is_file():
        from dpcore.runs.tables import gone

        raise gone(data_label(choice))
    return _load_data(json.dumps(choice, sort_keys=True, default=str), upload_limit_bytes())


def set_data_choice(choice: dict, token: str | None = None):
    """Load `choice`; only when it loads does it become the session's dataset (nothing is lost). A
    CSV choice is kept as a stored table (`token`, or a new one) so a reload or a new tab reopens it."""
    train, test = load_data(choice)
    if choice.get("csv"):
        from dpcore.runs.tables import remember_table

        token = token or remember_table(runs_root(), choice)
    st.session_state[_DATA_KEY] = dict(choice)
    st.session_state[_TABLE_KEY] = token
    return train, test


def mark_table_gone(message: str) -> None:
    """The address named a table that cannot be opened: the session has no data until the user
    chooses some (the pages say why), instead of the demo dataset in its place."""
    st.session_state[_DATA_KEY] = {_GONE: message, "name": "(table not found)"}
    st.session_state[_TABLE_KEY] = None


def table_gone(choice: dict | None = None) -> bool:
    """Is `choice` (default: the session's) a table the address named that cannot be opened?"""
    return _GONE in (data_choice() if choice is None else choice)


def data_label(choice: dict | None = None) -> str:
    c = data_choice() if choice is None else choice
    if c.get("csv") and not c.get("name"):
        from dpcore.runs.uploads import display_name

        return display_name(c["csv"])
    return c.get("dataset") or c.get("name") or Path(str(c.get("csv", "table"))).name


def save_upload(data: bytes, filename: str) -> Path:
    """Keep an uploaded CSV under ROOT/_uploads (absolute path, a random name) — call this only
    when the table is used; it is deleted with the last run that uses it (dpcore.runs.uploads)."""
    from dpcore.runs.uploads import store_upload

    return store_upload(runs_root(), data, filename)


@st.cache_data(show_spinner=False, max_entries=8)
def parse_upload(data: bytes, delimiter: str, max_bytes: int, filename: str = "uploaded file"):
    """The raw text table of an upload not yet used, parsed in memory (nothing is kept on disk
    before "Use this table"); errors name the user's file, never a temporary one."""
    import io

    from dpcore.data import parse_csv

    buffer = io.BytesIO(data)
    buffer.name = Path(filename).name
    return parse_csv(buffer, delimiter=delimiter, max_bytes=max_bytes)


@st.cache_data(show_spinner=False, max_entries=8)
def parse_table(path: str, delimiter: str, max_bytes: int):
    """The raw text table of an uploaded CSV (for the schema editor)."""
    from dpcore.data import parse_csv

    return parse_csv(path, delimiter=delimiter, max_bytes=max_bytes)
