"""Where the CLI writes and reads, checked before any work starts (one-line errors, exit code 2).

Why: a bad `--out` or `--report` used to fail only after training or a whole evaluation, or wrote
into `/` or the current folder; an unreadable CSV gave a traceback.
"""
from __future__ import annotations

import os
from pathlib import Path

from dpcore.errors import DataError, InvalidParameter, RunError


def _writable_dir(folder: Path, what: str) -> None:
    """`folder` exists (or its nearest existing ancestor is a folder we can write in)."""
    probe = folder
    while not probe.exists():
        if probe.is_symlink() or probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise RunError(f"cannot write {what}: {str(probe)!r} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise RunError(f"cannot write {what}: {str(probe)!r} is not writable")


def runs_dir() -> Path:
    """The runs folder the app uses too: $DPCORE_RUNS_DIR, else ./runs."""
    return Path(os.environ.get("DPCORE_RUNS_DIR") or "runs").expanduser()


def check_run_out(out: str | None) -> tuple[str, str | None]:
    """(root, name) of `train --out ROOT/NAME` (default: the runs folder, automatic name). A bare
    NAME (no folder separator) is a run in the runs folder, as the app saves it."""
    from dpcore.runs.folders import check_run_name

    if out is None:
        _writable_dir(runs_dir(), "the run")
        return str(runs_dir()), None
    p = Path(out)
    if out.strip() == "" or p.name in ("", ".", "..") or ".." in p.parts:
        raise InvalidParameter(f"--out must name a run folder ROOT/NAME or a run NAME, got {out!r}")
    check_run_name(p.name)
    if os.sep not in out and "/" not in out:
        p = runs_dir() / out
    _writable_dir(p.parent, f"the run {out!r}")
    return str(p.parent), p.name


def check_out_file(out: str, exts: tuple[str, ...], flag: str = "--out") -> Path:
    """An output file: a known extension, not a folder, in a folder that exists and is writable."""
    p = Path(out)
    if out.strip() == "" or p.name in ("", ".", ".."):
        raise InvalidParameter(f"{flag} must name a file, got {out!r}")
    if p.suffix.lower() not in exts:
        raise InvalidParameter(f"{flag} must end in {', '.join(exts)}, got {out!r}")
    if p.is_dir():
        raise RunError(f"{flag} {out!r} is a folder, not a file")
    parent = p.parent
    if not parent.is_dir():
        raise RunError(f"{flag} {out!r}: the folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise RunError(f"{flag} {out!r}: the folder {str(parent)!r} is not writable")
    return p


def check_readable(path: str, flag: str = "--data") -> None:
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            fh.read(1)
    except FileNotFoundError:
        raise DataError(f"{flag}: no such file {path!r}") from None
    except IsADirectoryError:
        raise DataError(f"{flag}: {path!r} is a folder, not a CSV file") from None
    except OSError as exc:
        raise DataError(f"{flag}: cannot read {path!r} ({exc.strerror or exc})") from None
