"""The one checked reader of a run's files: size capped before reading, nesting capped, no symlink.

Why: a run folder may come from someone else (a shared drive, an e-mail) or be edited by hand. Every
file of a run is read through `read_run_bytes` / `read_json` here: a file over its size cap is never
read, a symbolic link anywhere inside the run folder (the file, `model/`, …) is refused instead of
followed, and JSON deeper than MAX_DEPTH or with more than MAX_ITEMS entries is refused without
recursing. A bad file raises `RunFileError(file, reason)`, which the run listing shows as
"unreadable: <file>: <reason>" while every other run stays usable. It sits below the models and
the runs (it imports only dpcore.errors), so a saved model reads its model.json through it too.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from dpcore.errors import RunError

MAX_JSON_BYTES = 4 * 2**20          # config.json, status.json, ledger.json, evaluation.json
MAX_MODEL_JSON_BYTES = 64 * 2**20   # model.json (a tabular schema can be long)
MAX_METRICS_BYTES = 256 * 2**20     # metrics.jsonl
MAX_DEPTH = 24                      # nesting of dicts/lists in any run file
MAX_ITEMS = 200_000                 # list/dict entries in one run file


class RunFileError(RunError):
    """One file of a run cannot be used: `file` (relative to the run when known) and `reason`."""

    def __init__(self, file: str | os.PathLike, reason: str):
        self.file, self.reason = str(file), " ".join(str(reason).split())
        super().__init__(f"run file unreadable: {self.file}: {self.reason}")


def check_inside(base: Path | None, path: Path) -> None:
    """No component of `path` below the run folder `base` is a symbolic link (RunFileError)."""
    path = Path(path)
    if base is None:
        parts = [path]
    else:
        try:
            rel = path.relative_to(base)
        except ValueError:
            raise RunFileError(path, f"outside the run folder {base}") from None
        parts = [Path(base).joinpath(*rel.parts[: i + 1]) for i in range(len(rel.parts))]
    for p in parts:
        if p.is_symlink():
            raise RunFileError(p, "a symbolic link (a run folder holds plain files only)")


def read_run_bytes(path: Path, *, max_bytes: int, base: Path | None = None) -> bytes:
    """The bytes of a run file, at most `max_bytes` (checked on the open file before reading)."""
    path = Path(path)
    check_inside(base, path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RunFileError(path, exc.strerror or str(exc)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise RunFileError(path, "not a regular file")
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > max_bytes:
            raise RunFileError(path, f"too large ({st.st_size} bytes, at most {max_bytes})")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise RunFileError(path, f"too large (over {max_bytes} bytes)")
    return data


def read_json(path: Path, *, max_bytes: int = MAX_JSON_BYTES, default=None, base: Path | None = None):
    """Parse a run file (size- and depth-limited); RunFileError naming the file otherwise.

    A missing file returns `default` when one is given (RunFileError otherwise)."""
    path = Path(path)
    try:
        raw = read_run_bytes(path, max_bytes=max_bytes, base=base)
    except FileNotFoundError:
        if default is not None:
            return default
        raise RunFileError(path, "missing") from None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise RunFileError(path, "nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise RunFileError(path, f"not JSON ({' '.join(str(exc).split())[:100]})") from None
    check_shape(obj, path)
    return obj


def check_shape(obj, where) -> None:
    """Nesting depth ≤ MAX_DEPTH and ≤ MAX_ITEMS entries in total (iterative: no recursion)."""
    stack, count = [(obj, 0)], 0
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth >= MAX_DEPTH:
                raise RunFileError(where, f"nested deeper than {MAX_DEPTH}")
            items = v.values() if isinstance(v, dict) else v
            count += len(v)
            if count > MAX_ITEMS:
                raise RunFileError(where, f"more than {MAX_ITEMS} entries")
            stack.extend((x, depth + 1) for x in items)
