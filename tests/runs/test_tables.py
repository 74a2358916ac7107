"""Stored table choices: kept under a random token, read back as data, refused when gone or foreign."""
from __future__ import annotations

import json

import pytest

from dpcore.errors import DataError
from dpcore.runs.tables import recall_table, remember_table, stored_tables
from dpcore.runs.uploads import store_upload

CSV = b"a,b,y\n" + b"".join(f"{i},{i % 3},{i % 2}\n".encode() for i in range(40))


def _choice(root, **extra):
    return {"csv": str(store_upload(root, CSV, "people.csv")), "target": "y", "name": "people.csv", **extra}


def test_a_choice_is_kept_under_a_random_token_and_read_back(tmp_path):
    choice = _choice(tmp_path, drop=["b"])
    token = remember_table(tmp_path, choice)
    assert recall_table(tmp_path, token) == choice
    assert remember_table(tmp_path, choice) == token          # the same choice keeps its token
    other = remember_table(tmp_path, {**choice, "drop": None})
    assert other != token and len(stored_tables(tmp_path)) == 2
    # the token is random, not a function of the rows (the upload's name carries a content hash)
    assert token not in choice["csv"] and other not in choice["csv"]


def test_a_gone_table_is_an_error_naming_it_not_a_fallback(tmp_path):
    choice = _choice(tmp_path)
    token = remember_table(tmp_path, choice)
    from pathlib import Path

    Path(choice["csv"]).unlink()
    with pytest.raises(DataError, match="people.csv is no longer stored"):
        recall_table(tmp_path, token)
    assert [t.available for t in stored_tables(tmp_path)] == [False]


@pytest.mark.parametrize("token", ["../../etc/passwd", "short", "a" * 40, "x/y" * 6])
def test_a_bad_token_is_refused_before_any_file_is_read(tmp_path, token):
    with pytest.raises(DataError, match="no stored table"):
        recall_table(tmp_path, token)


def test_an_edited_choice_pointing_outside_the_uploads_is_never_used(tmp_path):
    token = remember_table(tmp_path, _choice(tmp_path))
    path = next((tmp_path / "_uploads" / ".tables").glob("*.json"))
    raw = json.loads(path.read_text())
    (tmp_path / "secret.csv").write_text("a,y\n1,0\n2,1\n")
    raw["choice"]["csv"] = str(tmp_path / "secret.csv")
    path.write_text(json.dumps(raw))
    with pytest.raises(DataError, match="not stored here"):
        recall_table(tmp_path, token)
    raw["choice"] = {"csv": raw["choice"]["csv"], "evil": "__import__('os')"}
    path.write_text(json.dumps(raw))
    assert stored_tables(tmp_path) == []


@pytest.mark.parametrize("content, message", [
    (b"\x89PNG\x00binary", "people.csv is not UTF-8 text"),
    (CSV + b"1,2\n", "people.csv: data row 41 has 2 fields"),
])
def test_errors_on_a_stored_table_name_the_users_file_never_the_stored_one(tmp_path, content, message):
    from dpcore.runs.config import DataConfig

    stored = store_upload(tmp_path, content, "people.csv")  # kept as people-<random token>.csv
    with pytest.raises(DataError) as exc:
        DataConfig(csv=str(stored), target="y").load()
    assert str(exc.value).startswith(message) and stored.name not in str(exc.value)
