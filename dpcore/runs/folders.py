"""Creating, finishing, deleting and renaming run folders, safely under concurrency.

Why a lock and a partial folder: two processes training to one name, or a process killed mid-run,
must never leave a folder that mixes two runs or looks finished when it is not. A name is reserved
by an exclusive flock on ROOT/_locks/NAME.lock (dpcore.runs.liveness.RunLock); a run trains in
ROOT/.NAME.partial-XXXX and is renamed to ROOT/NAME when training ends. `--overwrite` replaces only
a run folder (config.json + status.json) that is not training; anything else is a RunError.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from pathlib import Path

from dpcore.errors import DPCoreError, InvalidParameter, RunError
from dpcore.io import atomic_write_json
from dpcore.runs.config import RunConfig, now_iso
from dpcore.runs.liveness import RunLock
from dpcore.runs.naming import NAME_RE
from dpcore.runs.store import PARTIAL, Run
from dpcore.runs.uploads import forget_index, is_upload, split_key_path, uploads_dir


def check_run_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise InvalidParameter(f"run name must be 1-128 letters, digits or ._=+- starting with a letter or "
                               f"digit (no slashes), got {name!r}")
    return name


def _root(root) -> Path:
    """The runs root, made if missing (its own parents too); a file or unwritable place is a RunError."""
    root = Path(root)
    if str(root) == "":
        raise RunError("the runs folder must not be empty")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise RunError(f"cannot make the runs folder {str(root)!r}: a file is in the way") from None
    except OSError as exc:
        raise RunError(f"cannot make the runs folder {str(root)!r}: {exc.strerror or exc}") from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise RunError(f"the runs folder {str(root)!r} is not writable")
    return root


def check_replaceable(path: Path) -> None:
    """`--overwrite` replaces only a run folder that is not training (RunError otherwise)."""
    if path.is_symlink():
        raise RunError(f"{str(path)!r} is a symbolic link, not a run folder; not replacing it")
    if not path.is_dir():
        raise RunError(f"{str(path)!r} is not a run folder; not replacing it")
    if not ((path / "config.json").is_file() and (path / "status.json").is_file()):
        raise RunError(f"{str(path)!r} is not a run folder (no config.json/status.json); not replacing it")
    st = Run(path).status().get("status")
    if st == "running":
        raise RunError(f"run {path.name!r} is still training; stop it first")


def _reserve(root: Path, name: str | None, cfg: RunConfig, overwrite: bool) -> tuple[str, RunLock, bool]:
    """Lock a name under `root`: (name, lock, replaces_existing). An explicit name must be free
    (or a finished run with `overwrite`); an automatic one takes the first free -2, -3, … suffix."""
    given = name if name is not None else cfg.name
    if given is not None:
        base = check_run_name(given)
        lock = RunLock(root, base)
        if not lock.acquire():
            raise RunError(f"run {base!r} is being trained or changed by another process")
        path = root / base
        if os.path.lexists(path):
            try:
                if not overwrite:
                    raise RunError(f"run {str(path)!r} already exists (choose another name or overwrite)")
                check_replaceable(path)
            except BaseException:
                lock.release()
                raise
            return base, lock, True
        return base, lock, False
    base = check_run_name(cfg.default_name())
    for i in range(1, 10_000):
        cand = base if i == 1 else f"{base}-{i}"
        lock = RunLock(root, cand)
        if not lock.acquire():
            continue
        if os.path.lexists(root / cand):
            lock.release()
            continue
        return cand, lock, False
    raise RunError(f"no free run name for {base!r} in {str(root)!r}")


def _write_new(path: Path, cfg: RunConfig, name: str) -> Run:
    from dpcore.runs.uploads import adopt_csvs

    cfg = dataclasses.replace(cfg, name=name, data=adopt_csvs(path.parent, cfg.data))
    atomic_write_json(path / "config.json", cfg.to_file_dict())
    atomic_write_json(path / "status.json", {"status": "created", "created": now_iso(),
                                             "created_ts": time.time()})
    return Run(path)


def create_run(root, name: str | None, config: RunConfig | dict, *, overwrite: bool = False) -> Run:
    """Make ROOT/NAME with config.json and status.json ("created"); NAME defaults to one made
    from the config. An existing run is an error unless `overwrite` (then a run that is not
    training is replaced; anything else is an error)."""
    cfg = config if isinstance(config, RunConfig) else RunConfig.from_dict(config)
    root = _root(root)
    base, lock, replaces = _reserve(root, name, cfg, overwrite)
    try:
        path = root / base
        if replaces:
            _remove_tree(path)
        path.mkdir()
        try:
            return _write_new(path, cfg, base)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
    finally:
        lock.release()


def begin_run(root, name: str | None, config: RunConfig, *, overwrite: bool = False) -> tuple[Run, RunLock]:
    """A run that trains in ROOT/.NAME.partial-XXXX while ROOT/_locks/NAME.lock is held; `finish_run`
    moves it into place. Returns (run, lock); the caller releases the lock after finishing."""
    root = _root(root)
    base, lock, _ = _reserve(root, name, config, overwrite)
    path = None
    try:
        path = Path(tempfile.mkdtemp(prefix=f".{base}{PARTIAL}", dir=root))
        return _write_new(path, config, base), lock
    except BaseException as exc:
        if path is not None and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)  # nothing half-written is left (a full disk)
        lock.release()
        if isinstance(exc, OSError):
            raise RunError(f"cannot create run {base!r} in {str(root)!r}: {exc.strerror or exc}") from None
        raise


def finish_run(run: Run, *, replace: bool = True) -> Run:
    """Move a partial run to ROOT/NAME (replacing a finished run there when `replace`).

    With replace=False and a run already at NAME, the partial run is removed and the old one kept.
    """
    target = run.path.parent / run.target_name
    if os.path.lexists(target):
        if not replace:
            _remove_tree(run.path)
            return Run(target)
        check_replaceable(target)
        trash = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        os.replace(target, trash / "run")
        os.replace(run.path, target)
        _remove_tree(trash)
    else:
        os.replace(run.path, target)
    return Run(target)


def _remove_tree(path: Path) -> None:
    if path.is_symlink():
        raise RunError(f"{str(path)!r} is a symbolic link, not a run folder; not deleting it")
    shutil.rmtree(path)


def _check_changeable(p: Path) -> Run:
    if p.is_symlink():
        raise RunError(f"{str(p)!r} is a symbolic link, not a run folder")
    if not (p / "config.json").is_file():
        raise RunError(f"not a run: {p}")
    run = Run(p)
    if run.status().get("status") == "running":
        raise RunError(f"run {run.name!r} is still running; stop it first")
    return run


def delete_run(path) -> None:
    """Delete a run folder (not while it trains); an upload only this run used goes with it. A
    folder whose files are unreadable (edited, truncated) can be deleted too, under its name's lock."""
    p = Path(path)
    if p.is_symlink():
        raise RunError(f"{str(p)!r} is a symbolic link, not a run folder")
    try:
        run = _check_changeable(p)
    except RunError:
        if not (p.is_dir() and os.path.lexists(p / "config.json")):
            raise
        try:
            Run(p)
        except DPCoreError:  # unreadable: nothing in it can be trusted, so only the folder goes
            name = p.name[1:].split(PARTIAL, 1)[0] if p.name.startswith(".") else p.name
            with RunLock(p.parent, name):
                _remove_tree(p)
            return
        raise
    with RunLock(p.parent, run.target_name):
        _check_changeable(p)
        csv = run.config.data.csv
        _remove_tree(p)
    if csv:
        forget_upload(p.parent, csv)


def forget_upload(root, csv: str | os.PathLike) -> bool:
    """Delete an upload that no remaining run under `root` (finished or training) uses."""
    if not is_upload(root, csv):
        return False
    for p in Path(root).iterdir():
        if p.name == uploads_dir(root).name or not (p / "config.json").is_file():
            continue
        try:
            other = Run(p).config.data.csv
        except Exception:  # noqa: BLE001 - an unreadable run might use it: keep the file
            return False
        if other and Path(other) == Path(csv):
            return False
    for path in (Path(csv), split_key_path(csv)):
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    forget_index(csv)
    return True


def rename_run(path, new_name: str) -> Run:
    p = Path(path)
    run = _check_changeable(p)
    check_run_name(new_name)
    with RunLock(p.parent, run.target_name), RunLock(p.parent, new_name):
        target = p.parent / new_name
        if os.path.lexists(target):
            raise RunError(f"a run named {new_name!r} already exists")
        _check_changeable(p)
        os.replace(p, target)
        d = run.config.to_file_dict()
        d["name"] = new_name
        atomic_write_json(target / "config.json", d)
        return Run(target)


def interrupted_partials(root) -> list[Path]:
    """ROOT/.NAME.partial-XXXX folders no process trains any more (killed runs), oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    out = []
    for p in root.iterdir():
        if not (p.name.startswith(".") and PARTIAL in p.name) or p.is_symlink() or not p.is_dir():
            continue
        lock = RunLock(root, p.name[1:].split(PARTIAL, 1)[0])
        try:
            if not lock.acquire():
                continue  # its name is locked: still training
        except RunError:
            continue
        lock.release()
        out.append(p)
    return sorted(out, key=lambda p: p.stat().st_mtime)


def prune_partials(root) -> list[str]:
    """Delete the interrupted partial folders under `root` (each under its name's lock, so a run
    that starts training meanwhile is never touched); returns the names removed."""
    root = Path(root)
    removed = []
    for p in interrupted_partials(root):
        name = p.name[1:].split(PARTIAL, 1)[0]
        lock = RunLock(root, name)
        if not lock.acquire():
            continue
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
                removed.append(p.name[1:])
        finally:
            lock.release()
    return removed
