"""Uploaded CSVs kept for runs: ROOT/_uploads/STEM-TOKEN.csv, deleted with the last run using them,
and every table's secret split key (with its id) beside it.

Why here and not in the page: an upload is private data left on disk; the run store knows which
runs use it, so it is the one place that can delete it when the last of them goes.

Why a random TOKEN (64 bits of OS entropy), never a hash of the content: the stored name is in
every run's config.json, the released run of a selection and the app's config download, so a name
computed from the rows would tell a file from its neighbour (D + one row). config.json holds the
file name only (`RunConfig.to_file_dict`; an absolute path would publish where the server keeps its
files); a run resolves it inside its own ROOT/_uploads on load (dpcore.runs.safety.check_data_paths),
so a runs folder that moves keeps working. Runs saved with an absolute path or a content-hash name
(before this) still load: only the file name is ever read. Identical bytes under one file name are
kept once (every run on one table shares its split): a private index, ROOT/_uploads/.index/DIGEST
holding the stored name, is never copied into a run, a report or a release.

The split key (`split_key`): a file's train/test split and `--rows` decide each row by a keyed
hash (dpcore.data.split). The key file `.NAME.split-key` (mode 0600, written once) holds 256 bits of
OS entropy and a random 64-bit key id; every run on the table reads the same key (one test set), and
the key is never copied into a run folder, a report or a release, nor derived from any seed. Each
run records the key id it trained with (config.json's data.split_key_id): a run whose key is gone or
was replaced is refused when its rows are re-read (`split_key_for`), and its score is never composed
in parallel (dpcore.runs.run_score), since a new key puts training rows among the "held-out"
ones. A key file written before ids (32 bytes) gets one on first use; runs made before record none.

A run reads its CSVs only from ROOT/_uploads (dpcore.runs.safety.check_data_paths): a table given by path
(the CLI's --data, an API call) is copied there when the run is created (`adopt_csvs`), so a run
folder from someone else can never point the workbench at another file on the machine.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import tempfile
from pathlib import Path

from dpcore.errors import RunError

UPLOADS = "_uploads"
INDEX = ".index"  # private: content digest → stored name (dedup); never published
TOKEN_BYTES = 8  # the stored name's random part: 16 hex digits (the shape content-hash names had)
KEY_ID_BYTES = 8


def uploads_dir(root) -> Path:
    return Path(root).resolve() / UPLOADS


_STORED = re.compile(r"^(?P<stem>.+)-[0-9a-f]{16}\.csv$")


def display_name(csv: str | os.PathLike) -> str:
    """The name a person gave the table: `STEM.csv` for an upload kept as `STEM-TOKEN.csv` (the
    file name otherwise). Why: the token tells one stored copy from another; it is no part of the
    table's name in model.json, the listing and the release."""
    p = Path(csv)
    m = _STORED.match(p.name) if p.parent.name == UPLOADS else None
    return f"{m.group('stem')}.csv" if m else p.name


@contextlib.contextmanager
def _flock(path: Path, create: bool = True):
    fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0) | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write_new(folder: Path, final: Path, data: bytes) -> None:
    """`data` to `final` through a temporary file in `folder` (a reader never sees half a file)."""
    fd, tmp = tempfile.mkstemp(prefix=".upload.", dir=folder)  # mode 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def store_upload(root, data: bytes, filename: str) -> Path:
    """Write an uploaded table under ROOT/_uploads as STEM-TOKEN.csv (TOKEN random) → absolute path.
    The same bytes under the same file name are kept once (the private index finds the copy)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(filename).stem).strip("._")[:40] or "upload"
    folder = uploads_dir(root)
    index = folder / INDEX
    digest = hashlib.sha256(stem.encode() + b"\0" + data).hexdigest()
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        index.mkdir(mode=0o700, exist_ok=True)
        with _flock(index / ".lock"):
            kept = _indexed(folder, index / digest, len(data))
            if kept is not None:
                return kept
            path = folder / f"{stem}-{secrets.token_hex(TOKEN_BYTES)}.csv"
            _write_new(folder, path, data)
            _write_new(index, index / digest, path.name.encode())
    except OSError as exc:
        raise RunError(f"cannot keep the uploaded table in {str(folder)!r}: {exc.strerror or exc}") from None
    return path


def _indexed(folder: Path, entry: Path, size: int) -> Path | None:
    """The stored copy the index entry names, if it is still there with the same size."""
    try:
        name = entry.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    path = folder / name
    if not _STORED.fullmatch(name) or "/" in name or path.is_symlink() or not path.is_file():
        return None
    return path if path.stat().st_size == size else None


def forget_index(csv: str | os.PathLike) -> None:
    """Drop the index entries naming the stored copy `csv` (it is being deleted)."""
    p = Path(csv)
    index = p.parent / INDEX
    if not index.is_dir():
        return
    for entry in index.iterdir():
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if entry.name != ".lock" and entry.read_text() == p.name:
                entry.unlink()


def split_key_path(csv: str | os.PathLike) -> Path:
    p = Path(csv).resolve()
    return p.with_name(f".{p.name}.split-key")


def split_key(csv: str | os.PathLike) -> bytes:
    """The secret split key of table `csv` (created on first use, then read back)."""
    return split_key_for(csv)[0]


def split_key_id(csv: str | os.PathLike) -> str:
    """The id of table `csv`'s split key (the key is created on first use): what a run records."""
    key_id = split_key_for(csv)[1]
    assert key_id is not None  # split_key_for gives a key without an id one
    return key_id


def split_key_for(csv: str | os.PathLike, expected_id: str | None = None) -> tuple[bytes, str | None]:
    """(key, key id) of table `csv`. Without `expected_id` a missing key is drawn (a new table) and
    a key written before ids gets one. With the id a run recorded, the key must be that one: a
    missing or replaced key is a RunError saying what to do (never silently redrawn)."""
    from dpcore.data.split import KEY_BYTES

    path, name = split_key_path(csv), Path(csv).name
    if expected_id is not None:
        try:
            key, key_id = _read_key(path, name)
        except FileNotFoundError:
            raise RunError(f"the split key this run was trained with is missing beside {name!r} ({path.name}): "
                           "restore it from a backup (a new key would put training rows among the held-out "
                           "rows), or train a new run on the table") from None
        if key_id != expected_id:
            raise RunError(f"the split key beside {name!r} is not the one this run was trained with (key id "
                           f"{key_id or 'none'}, the run's {expected_id[:16]}): restore that key from a backup, "
                           "or train a new run on the table") from None
        return key, key_id
    for _ in range(3):
        try:
            key, key_id = _read_key(path, name)
        except FileNotFoundError:
            _create_key(path, name, KEY_BYTES)
            continue
        if key_id is None:
            _give_id(path, name)
            continue
        return key, key_id
    raise RunError(f"cannot keep the split key beside {name!r}: it keeps changing under this process")


def _read_key(path: Path, name: str) -> tuple[bytes, str | None]:
    from dpcore.data.split import KEY_BYTES

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RunError(f"cannot read the split key of {name!r}: {exc.strerror or exc}") from None
    if len(raw) == KEY_BYTES + KEY_ID_BYTES:
        return raw[:KEY_BYTES], raw[KEY_BYTES:].hex()
    if len(raw) == KEY_BYTES:  # written before key ids
        return raw, None
    raise RunError(f"the split key of {name!r} ({path.name}) is damaged ({len(raw)} bytes): restore it from a "
                   "backup; the runs on this table need it to re-read their held-out rows (a table kept under "
                   "another file name gets a split of its own)")


def _create_key(path: Path, name: str, key_bytes: int) -> None:
    """A new key + id, written whole: a temporary file hard-linked into place (exclusive, atomic)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".split-key.", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(key_bytes + KEY_ID_BYTES))
            with contextlib.suppress(FileExistsError):  # a concurrent first use won: read theirs
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
    except OSError as exc:
        raise RunError(f"cannot keep the split key beside {name!r}: {exc.strerror or exc}") from None


def _give_id(path: Path, name: str) -> None:
    """A key written before ids gets a random one (under a lock, so concurrent users agree)."""
    from dpcore.data.split import KEY_BYTES

    try:
        with _flock(path, create=False):  # the key file itself: a waiter re-reads the replaced file by name
            raw = path.read_bytes()
            if len(raw) != KEY_BYTES:
                return  # given an id meanwhile (or damaged: the next read says so)
            _write_new(path.parent, path, raw + secrets.token_bytes(KEY_ID_BYTES))  # mkstemp: mode 0600
    except FileNotFoundError:
        return  # gone meanwhile: the next read draws a new key
    except OSError as exc:
        raise RunError(f"cannot keep the split key beside {name!r}: {exc.strerror or exc}") from None


def is_upload(root, csv: str | os.PathLike) -> bool:
    p = Path(csv)
    return p.is_absolute() and p.parent == uploads_dir(root)


def adopt_csvs(root, data):
    """`data` (a DataConfig) with its csv / test_csv kept under ROOT/_uploads (copied once) and the
    id of the split key a new run on it trains with (the key drawn now when the table has none)."""
    import dataclasses

    from dpcore.data.csv import DEFAULT_MAX_BYTES, read_bytes

    changes = {}
    for key in ("csv", "test_csv"):
        value = getattr(data, key, None)
        if value is None or is_upload(root, value):
            continue
        raw, _ = read_bytes(value, max(DEFAULT_MAX_BYTES, _size(value)))
        changes[key] = str(store_upload(root, raw, Path(value).name))
    csv = changes.get("csv", data.csv)
    if csv is not None:
        changes["split_key_id"] = split_key_id(csv)
    return dataclasses.replace(data, **changes) if changes else data


def _size(path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
