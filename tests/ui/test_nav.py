"""Paths as the sidebar shows them: short where they can be, whole where they cannot."""
from __future__ import annotations

from pathlib import Path

from dpcore.ui.nav import shown_path


def test_shown_path_relative_to_the_start_folder_then_home_then_whole(tmp_path, monkeypatch):
    home, start = tmp_path / "home", tmp_path / "home" / "project"
    (start / "runs").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(start)
    assert shown_path(Path("runs")) == "runs"
    assert shown_path(start) == "."
    assert shown_path(home / "elsewhere" / "runs") == "~/elsewhere/runs"
    assert shown_path(tmp_path / "other") == str((tmp_path / "other").resolve())
