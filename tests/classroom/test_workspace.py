"""Workspaces: one folder per member; a run name never leaves it; publishing copies built-in runs only."""
from __future__ import annotations

import os

import pytest

from dpcore.classroom import Member, run_folder, workspace_root
from dpcore.errors import DPCoreError

A, B = Member("student-01", "student"), Member("student-02", "student")


def test_each_member_has_their_own_folder(tmp_path):
    a, b = workspace_root(tmp_path, A), workspace_root(tmp_path, B)
    assert a == tmp_path / "workspaces" / "student-01" and a.is_dir() and a != b
    assert oct(a.stat().st_mode & 0o777) == "0o700"
    with pytest.raises(DPCoreError):
        workspace_root(tmp_path, Member("../published", "student"))


@pytest.mark.parametrize("name", ["../student-02/run", "..", "/etc", "a/b", ".hidden", "", "run\x00"])
def test_a_run_name_never_leaves_the_root(tmp_path, name):
    a = workspace_root(tmp_path, A)
    with pytest.raises(DPCoreError):
        run_folder(a, name)


def test_a_symbolic_link_to_another_workspace_is_not_a_run(tmp_path):
    a, b = workspace_root(tmp_path, A), workspace_root(tmp_path, B)
    (b / "secret").mkdir()
    os.symlink(b / "secret", a / "mine")
    with pytest.raises(DPCoreError, match="no run named"):
        run_folder(a, "mine")
    assert run_folder(a, "fine") == a / "fine"


def test_the_pages_caches_tell_two_workspaces_runs_of_one_name_apart(tmp_path, monkeypatch):
    """The cached bundle and scores are shared by every session: keyed by folder, not by name."""
    from dpcore.ui.cache import key

    monkeypatch.delenv("DPCORE_CLASS", raising=False)
    a, b = workspace_root(tmp_path, A), workspace_root(tmp_path, B)
    for root in (a, b):
        (root / "same-name").mkdir()
        os.utime(root / "same-name", (1, 1))
    assert key("same-name", a)[0] != key("same-name", b)[0]
    with pytest.raises(DPCoreError):
        key("../student-02/same-name", a)
