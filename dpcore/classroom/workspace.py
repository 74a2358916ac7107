"""Each member's folder, run names resolved only inside it, and runs the lecturer publishes.

Layout under the base runs folder (`$DPCORE_RUNS_DIR`, else ./runs):
  workspaces/NAME/      one member's runs and uploads (NAME is student-NN or lecturer, checked)
  published/RUN/        runs the lecturer published: every member opens them, only the lecturer
                        removes them

Why resolve names here: a run name reaches the pages from pickers, widgets and the address; a name
is only ever joined to the member's own root after the run store's name check (letters, digits,
._=+-, no slash, never `..`), and the result must be a real folder directly inside that root (no
symbolic link), so no name can reach another workspace. No Streamlit here.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from dpcore.classroom.classfile import _NAME, ClassFile, ClassFileError, Member
from dpcore.errors import RunError
from dpcore.io import READ_ONLY_MARK

WORKSPACES = "workspaces"
PUBLISHED = "published"


def workspace_root(base: Path, member: Member) -> Path:
    """base/"workspaces"/NAME (made, private to the server's user, on first use)."""
    if not isinstance(member, Member) or not _NAME.match(member.name):
        raise ClassFileError("not a member of the class")
    root = Path(base) / WORKSPACES / member.name
    _make(root)
    return root


def published_root(base: Path) -> Path:
    root = Path(base) / PUBLISHED
    _make(root)
    return root


def _make(root: Path) -> None:
    if root.is_symlink():
        raise RunError(f"{str(root)!r} is a symbolic link, not a workspace folder")
    root.mkdir(mode=0o700, parents=True, exist_ok=True)


def workspaces(base: Path, cf: ClassFile) -> dict[str, Path]:
    """Every member's workspace, lecturer first (what the lecturer's picker offers)."""
    return {m.name: workspace_root(base, m) for m in cf.members}


def run_folder(root: Path, name: str) -> Path:
    """ROOT/NAME for a run name, refusing anything that would leave ROOT (RunError, one line)."""
    from dpcore.runs.folders import check_run_name

    check_run_name(name)  # no slash, no leading dot: never '..', never absolute
    root = Path(root)
    path = root / name
    if path.is_symlink() or path.resolve().parent != root.resolve():
        raise RunError(f"no run named {name!r} here")
    return path


def publish_run(base: Path, run_path: Path) -> Path:
    """Copy a finished run into base/published (the lecturer's action) and return the copy.

    Only runs on built-in datasets: a published run is opened by every student, and the pages
    show a run's real rows beside its synthetic ones — an uploaded table's rows must not reach the
    class. The copy keeps no link to the source (a later change to the original changes nothing) and
    holds the read-only mark (`dpcore.io.READ_ONLY_MARK`): no write of anyone's reaches it again."""
    from dpcore.runs.store import Run

    src = Path(run_path)
    if src.is_symlink() or not src.is_dir():
        raise RunError(f"{src.name!r} is not a run folder")
    run = Run(src)
    if run.status().get("status") not in ("done", "stopped") or not run.has_model():
        raise RunError(f"{run.name} has no finished model to publish")
    if run.config.data.csv is not None or run.config.data.test_csv is not None:
        raise RunError(f"{run.name} was trained on an uploaded table; publishing it would show the table's "
                       "real rows to the class (publish runs on built-in datasets)")
    for folder, dirs, files in os.walk(src):
        if any(Path(folder, f).is_symlink() for f in dirs + files):
            raise RunError(f"{run.name} holds a symbolic link; it cannot be published")
    root = published_root(base)
    target = run_folder(root, run.name)
    if os.path.lexists(target):
        raise RunError(f"a run named {run.name!r} is published already; remove it first")
    tmp = Path(tempfile.mkdtemp(prefix=f".{run.name}.publish-", dir=root))
    try:
        shutil.copytree(src, tmp / run.name, symlinks=True)
        (tmp / run.name / READ_ONLY_MARK).write_text("published: read-only for the whole class\n")
        os.replace(tmp / run.name, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
