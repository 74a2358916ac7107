"""Shared by the page tests: a runs folder per test module, bugs raised instead of shown, and (for the
browser tests) `browser_kit` importable and a screenshots folder."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # `import browser_kit` (pytest runs with --import-mode=importlib)


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


@pytest.fixture()
def shots(tmp_path) -> Path:
    """Where a browser test saves its screenshots: $DPCORE_SCREENSHOTS (relative to the repository),
    else the test's tmp folder."""
    out = Path(os.environ.get("DPCORE_SCREENSHOTS") or tmp_path / "screenshots")
    if not out.is_absolute():
        out = Path(__file__).resolve().parents[2] / out
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A browser module's app (`streamlit run`, its own runs folder) with the Story's first-start
    training off: the journeys train their own runs. Yields (url, runs folder)."""
    from browser_kit import _need_browser, _streamlit

    _need_browser()
    runs = tmp_path_factory.mktemp("runs")
    with _streamlit(runs, DPCORE_STORY_AUTOSTART="0") as url:
        yield url, runs


@pytest.fixture(autouse=True)
def no_queue_left_behind():
    """Every page test ends with this process's class queues forgotten (`class_queue` caches one per
    runs root): under xdist a class-mode test's queue was found by a later test in the same worker."""
    yield
    from dpcore.ui import class_queue

    class_queue.forget_queues()


@pytest.fixture(autouse=True)
def no_local_ray_from_pages(monkeypatch):
    """A page test never starts a real Ray inside pytest (class mode's queue would start one on
    first use, and a driver whose local Ray goes away exits the whole process): the executor says so
    in one line. Tests of the queue pass their own executor; tests/jobs and the load bench use Ray."""
    from dpcore.errors import DPCoreError
    from dpcore.jobs import queue_ray

    def refuse(*args, **kwargs):
        raise DPCoreError("page tests do not start Ray: pass an executor to class_queue()")

    monkeypatch.setattr(queue_ray, "RayExecutor", refuse)
