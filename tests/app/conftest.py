"""Shared by the page tests: a runs folder per test module, and bugs raised instead of shown."""
import os

import pytest


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    """A fresh runs root for the module's AppTests (DPCORE_RUNS_DIR); DPCORE_UI_RAISE makes a bug
    raise instead of becoming a friendly st.error. Both are restored afterwards."""
    root = tmp_path_factory.mktemp("runs")
    old = {k: os.environ.get(k) for k in ("DPCORE_RUNS_DIR", "DPCORE_UI_RAISE")}
    os.environ["DPCORE_RUNS_DIR"] = str(root)
    os.environ["DPCORE_UI_RAISE"] = "1"
    yield root
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
