"""Shared test settings: CI's two CPU threads shared by the workers, quiet, deterministic; the CLI
in-process.

`make test` runs two pytest-xdist workers (most tests keep one core busy at most, so one process left
the other core idle): each worker and what it starts (a Streamlit server, a notebook kernel) gets one
thread, and idle OpenMP threads sleep instead of spinning (a spinning pool on a shared core slowed a
test 20-fold). Tests that share something heavy run on one worker, whole modules at a time
(`pytest_collection_modifyitems`)."""
import contextlib
import io
import os

os.environ.setdefault("DPCORE_SMALL", "1")
os.environ.setdefault("DPCORE_STORY_AUTOSTART", "0")  # the app tests would each train the Story pair
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
THREADS = max(1, 2 // WORKERS)  # CI's two cores
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(THREADS)


@pytest.fixture(autouse=True)
def _threads():
    """Every test starts on the worker's threads (a module may set its own at import or in a test)."""
    torch.set_num_threads(THREADS)


SHARED_GROUPS = {"browser": "a Streamlit server and chromium: one at a time",
                 "local_ray": "the session's local Ray (`local_ray`): started once, on one worker"}


def pytest_collection_modifyitems(config, items):
    """xdist's groups (`--dist loadgroup`): a module's tests stay together (its module fixtures run
    once), and the modules that start a browser, or use the session's Ray, share one worker each."""
    modules: dict = {}
    for item in items:
        modules.setdefault(item.module.__name__ if item.module else item.nodeid, []).append(item)
    for name, members in modules.items():
        group = name
        for key in SHARED_GROUPS:
            if any(key in m.keywords or key in getattr(m, "fixturenames", ()) for m in members):
                group = key
        for m in members:
            m.add_marker(pytest.mark.xdist_group(group))


def _run_cli(argv) -> tuple:
    """`python -m dpcore ARGV` in this process: (exit code, stdout, stderr). An exception a user would
    see as a traceback comes back as exit code "Traceback" with "Traceback: Type: message" as stderr."""
    from dpcore.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
        except Exception as exc:  # noqa: BLE001 - a traceback a user would see
            return "Traceback", out.getvalue(), f"Traceback: {type(exc).__name__}: {exc}"
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="session")
def run_cli():
    """The CLI in-process (`_run_cli`); session-scoped so module fixtures can train with it too."""
    return _run_cli


def people_csv(path, n: int = 600):
    """A small table whose target depends on its columns (age, smoker → y): the released-score tests'."""
    import numpy as np

    rng = np.random.default_rng(1)
    age = rng.integers(18, 90, n)
    smoker = rng.choice(["yes", "no"], n, p=[0.3, 0.7])
    y = (rng.random(n) < 1 / (1 + np.exp(-((age - 50) / 15 + (smoker == "yes") * 1.2 - 0.3)))).astype(int)
    path.write_text("age,smoker,y\n" + "".join(f"{a},{s},{t}\n" for a, s, t in zip(age, smoker, y)))
    return path


@pytest.fixture(scope="session")
def make_people_csv():
    """`people_csv` as a fixture (test modules are imported by path and cannot import conftest)."""
    return people_csv


@pytest.fixture(scope="session")
def local_ray():
    """One local Ray (2 CPUs, what CI has) for every test that runs on Ray, stopped at the session's
    end: a start costs 10–35 s on two cores, three starts were a minute of the suite. The code under
    test finds it running and uses it (`sweep_ray.connect`), as a class server's queue or a sweep
    finds a Ray started earlier in the same process."""
    pytest.importorskip("ray", reason="Ray is not installed")
    from dpcore.runs import sweep_ray

    pool, why = sweep_ray.connect(num_cpus=2)
    if pool is None:
        pytest.skip(why or "Ray unreachable")
    yield pool
    sweep_ray.shutdown()
