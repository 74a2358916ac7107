"""The tables a user chose: each stored upload with the schema edits made for it, under a random name.

Why: a reload or a new tab starts a new Streamlit session. Without this, the session forgot the
user's upload and fell back to the demo dataset without a word, and the next "Train" trained on data
nobody chose. The Data page's "Use this table" now keeps the choice (file + target + kinds, bounds,
categories, dropped columns) as ROOT/_uploads/.tables/TOKEN.json and puts `?table=TOKEN` in the
address; the Data page lists the stored ones to pick again.

TOKEN is random (OS entropy), not derived from the rows: the address and the page never carry a
function of the data. A stored choice is data: read with the run store's checked reader, every field
checked against DataConfig's, and its file must be an upload in this ROOT — never a path elsewhere.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import tempfile
import time
from pathlib import Path

from dpcore.errors import DataError, DPCoreError, RunError
from dpcore.files import RunFileError, read_json
from dpcore.runs.uploads import display_name, is_upload, uploads_dir

TABLES = ".tables"
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{12,32}$")


@dataclasses.dataclass(frozen=True)
class StoredTable:
    token: str
    name: str           # the file name the user uploaded
    target: str | None
    saved: float        # when it was chosen (seconds since the epoch)
    available: bool     # its file is still stored (an upload goes with the last run using it)
    choice: dict


def _folder(root) -> Path:
    return uploads_dir(root) / TABLES


def _check(root, choice: dict, where: str) -> dict:
    from dpcore.runs.config import DataConfig
    from dpcore.runs.safety import check_fields

    check_fields(DataConfig, choice, where)
    try:
        DataConfig(**choice)
    except DPCoreError as exc:
        raise RunFileError(where, str(exc)) from None
    if not choice.get("csv") or not is_upload(root, choice["csv"]):
        raise RunFileError(where, "its table is not an upload of this workbench")
    if choice.get("test_csv") is not None and not is_upload(root, choice["test_csv"]):
        raise RunFileError(where, "its test table is not an upload of this workbench")
    return choice


def remember_table(root, choice: dict) -> str:
    """Keep `choice` (a CSV data choice) and return its token; the same choice keeps its token."""
    choice = _check(root, dict(choice), "the table choice")
    for table in stored_tables(root):
        if table.choice == choice:
            return table.token
    token = secrets.token_urlsafe(12)
    folder = _folder(root)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".table.", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"choice": choice, "saved": time.time()}, fh)
        os.replace(tmp, folder / f"{token}.json")
    except OSError as exc:
        raise RunError(f"cannot keep the table choice in {str(folder)!r}: {exc.strerror or exc}") from None
    return token


def recall_table(root, token: str) -> dict:
    """The choice stored under `token` (DataError naming the table when it is gone or unreadable)."""
    if not isinstance(token, str) or not _TOKEN.match(token):
        raise DataError("the address names no stored table (table=…): choose data on the Data page")
    table = _read(root, _folder(root) / f"{token}.json")
    if table is None:
        raise DataError("the table in the address is not stored here: choose data on the Data page")
    if not table.available:
        raise gone(table.name)
    return table.choice


def gone(name: str) -> DataError:
    """The one-line error of a chosen table whose file was deleted (with its last run)."""
    return DataError(f"the table {name} is no longer stored (it was deleted with its last run): "
                     "upload it again on the Data page, or choose another dataset")


def stored_tables(root) -> list[StoredTable]:
    """Every stored choice, newest first (unreadable ones are skipped)."""
    folder = _folder(root)
    if not folder.is_dir():
        return []
    out = [t for p in folder.glob("*.json") if _TOKEN.match(p.stem) and (t := _read(root, p)) is not None]
    return sorted(out, key=lambda t: -t.saved)


def _read(root, path: Path) -> StoredTable | None:
    try:
        raw = read_json(path, max_bytes=2**20)
        if not isinstance(raw, dict) or not isinstance(raw.get("choice"), dict):
            return None
        choice = _check(root, raw["choice"], path.name)
    except (RunError, OSError, ValueError):
        return None
    saved = raw.get("saved")
    return StoredTable(token=path.stem, name=str(choice.get("name") or display_name(choice["csv"])),
                       target=choice.get("target"), saved=float(saved) if isinstance(saved, (int, float)) else 0.0,
                       available=Path(choice["csv"]).is_file(), choice=choice)
