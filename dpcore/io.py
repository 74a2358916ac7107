"""Files that are never seen half-written: atomic writes and the workbench's JSON dialect.

Why here and not in a model or run module: run folders, saved models and reports all write through
these, and none of them should import another's private helpers to do so.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from dpcore.errors import RunError

READ_ONLY_MARK = ".published"  # in a run folder: a copy the lecturer published, read-only for everyone


def check_writable(path: Path) -> None:
    """Refuse a write into a published run (its folder, or its model/ inside it, holds the mark):
    scores, evaluations, attacks and side files stay out of what the whole class opens."""
    for folder in (path.parent, path.parent.parent):
        if (folder / READ_ONLY_MARK).is_file():
            raise RunError(f"{folder.name} is a published run and read-only: nothing is written into it "
                           "(score or export a run of your own workspace)")


def atomic_write_bytes(path: str | os.PathLike, payload: bytes) -> None:
    """Write via a temporary file + os.replace, so a crash never leaves a half-written file."""
    path = Path(path)
    check_writable(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except FileNotFoundError:  # never re-create a folder (e.g. a run deleted while it trains)
        raise RunError(f"cannot write {str(path)!r}: the folder {str(path.parent)!r} does not exist") from None
    except NotADirectoryError:
        raise RunError(f"cannot write {str(path)!r}: {str(path.parent)!r} is not a folder") from None
    except OSError as exc:
        raise RunError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh, payload, path)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):  # ENOSPC, EDQUOT, EROFS, EACCES: one line, the old file kept
            raise RunError(f"cannot write {str(path)!r}: {exc.strerror or exc}; the previous "
                           "version (if any) is unchanged") from None
        raise


def write(fh, payload: bytes | str, path=None) -> None:
    """The one place run and output files are written (`path`: the file meant; tests patch this to
    simulate a full, read-only or forbidden disk)."""
    fh.write(payload)


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def dumps(obj) -> str:
    """JSON with inf/nan kept as the strings "inf"/"nan" (valid JSON everywhere)."""
    def fix(v):
        if isinstance(v, float) and not math.isfinite(v):
            return "inf" if v > 0 else "-inf" if v < 0 else "nan"
        if isinstance(v, dict):
            return {str(k): fix(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [fix(x) for x in v]
        if isinstance(v, np.generic):
            return fix(v.item())
        return v
    return json.dumps(fix(obj), indent=2, default=_json_default)


def as_float(v) -> float:
    """Inverse of `dumps` for one number ("inf" → inf)."""
    return float(v)


def finite(v) -> float | None:
    """A stored number as a finite float, or None (missing, NaN, "nan", infinite, a bool, not a
    number): how saved scores are read, so one bad field never draws "nan" on a page."""
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def atomic_write_json(path, obj) -> None:
    atomic_write_bytes(path, dumps(obj).encode())
