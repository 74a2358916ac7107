"""Uploaded CSVs kept for runs: ROOT/_uploads/STEM-HASH.csv, deleted with the last run using them,
and every table's secret split key beside it.

Why here and not in the page: an upload is private data left on disk; the run store knows which
runs use it, so it is the one place that can delete it when the last of them goes. The path saved
in a run's config.json is absolute, so a run re-reads its table from any working folder.

The split key (`split_key`): a file's train/test split and `--rows` decide each row by a keyed
hash (dpcore.data.split). The key is 256 bits of OS entropy written once, mode 0600, beside the
table as `.NAME.split-key`; every run on the table reads the same key (one test set), and it is
never copied into a run folder, a report or a release, nor derived from any seed.

A run reads its CSVs only from ROOT/_uploads (dpcore.runs.safety.check_data_paths): a table given by path
(the CLI's --data, an API call) is copied there when the run is created (`adopt_csvs`), so a run
folder from someone else can never point the workbench at another file on the machine.
"""
from __future__ import annotations

import hashlib
import os
import re
import secrets
import tempfile
from pathlib import Path

from dpcore.errors import RunError

UPLOADS = "_uploads"


def uploads_dir(root) -> Path:
    return Path(root).resolve() / UPLOADS


_STORED = re.compile(r"^(?P<stem>.+)-[0-9a-f]{16}\.csv$")


def display_name(csv: str | os.PathLike) -> str:
    """The name a person gave the table: `STEM.csv` for an upload kept as `STEM-HASH.csv` (the file
    name otherwise). Why: the hash is a function of every row, so a name carrying it would tell a
    file from its neighbour in model.json, the listing and the release."""
    p = Path(csv)
    m = _STORED.match(p.name) if p.parent.name == UPLOADS else None
    return f"{m.group('stem')}.csv" if m else p.name


def store_upload(root, data: bytes, filename: str) -> Path:
    """Write an uploaded table under ROOT/_uploads (named by content; kept once) → absolute path."""
    digest = hashlib.sha256(data).hexdigest()[:16]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(filename).stem).strip("._")[:40] or "upload"
    folder = uploads_dir(root)
    path = folder / f"{stem}-{digest}.csv"
    if path.is_file():
        return path
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".upload.", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise RunError(f"cannot keep the uploaded table in {str(folder)!r}: {exc.strerror or exc}") from None
    return path


def split_key_path(csv: str | os.PathLike) -> Path:
    p = Path(csv).resolve()
    return p.with_name(f".{p.name}.split-key")


def split_key(csv: str | os.PathLike) -> bytes:
    """The secret split key of table `csv` (created on first use, then read back)."""
    from dpcore.data.split import KEY_BYTES

    path = split_key_path(csv)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError as exc:
        raise RunError(f"cannot keep the split key beside {Path(csv).name!r}: {exc.strerror or exc}") from None
    else:
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(KEY_BYTES))
    for _ in range(50):  # a concurrent first use may still be writing it
        try:
            key = path.read_bytes()
        except OSError as exc:
            raise RunError(f"cannot read the split key of {Path(csv).name!r}: {exc.strerror or exc}") from None
        if len(key) == KEY_BYTES:
            return key
        import time

        time.sleep(0.01)
    raise RunError(f"the split key of {Path(csv).name!r} ({path.name}) is damaged; delete it to draw a new "
                   "split (the runs trained on the old one then no longer share its test set)")


def is_upload(root, csv: str | os.PathLike) -> bool:
    p = Path(csv)
    return p.is_absolute() and p.parent == uploads_dir(root)


def adopt_csvs(root, data):
    """`data` (a DataConfig) with its csv / test_csv kept under ROOT/_uploads (copied once, by content)."""
    import dataclasses

    from dpcore.data.csv import DEFAULT_MAX_BYTES, read_bytes

    changes = {}
    for key in ("csv", "test_csv"):
        value = getattr(data, key, None)
        if value is None or is_upload(root, value):
            continue
        raw, _ = read_bytes(value, max(DEFAULT_MAX_BYTES, _size(value)))
        changes[key] = str(store_upload(root, raw, Path(value).name))
    return dataclasses.replace(data, **changes) if changes else data


def _size(path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
