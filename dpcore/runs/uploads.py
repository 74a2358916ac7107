"""Uploaded CSVs kept for runs: ROOT/_uploads/STEM-HASH.csv, deleted with the last run using them.

Why here and not in the page: an upload is private data left on disk; the run store knows which
runs use it, so it is the one place that can delete it when the last of them goes. The path saved
in a run's config.json is absolute, so a run re-reads its table from any working folder.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from dpcore.errors import RunError

UPLOADS = "_uploads"


def uploads_dir(root) -> Path:
    return Path(root).resolve() / UPLOADS


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


def is_upload(root, csv: str | os.PathLike) -> bool:
    p = Path(csv)
    return p.is_absolute() and p.parent == uploads_dir(root)


def forget_upload(root, csv: str | os.PathLike) -> bool:
    """Delete an upload that no remaining run under `root` (finished or training) uses."""
    if not is_upload(root, csv):
        return False
    from dpcore.runs.store import Run

    for p in Path(root).iterdir():
        if p.name == UPLOADS or not (p / "config.json").is_file():
            continue
        try:
            other = Run(p).config.data.csv
        except Exception:  # noqa: BLE001 - an unreadable run might use it: keep the file
            return False
        if other and Path(other) == Path(csv):
            return False
    try:
        Path(csv).unlink()
    except FileNotFoundError:
        pass
    return True
