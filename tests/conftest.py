"""Shared test settings: two CPU threads (what CI has) shared by the workers, quiet, deterministic;
the CLI in-process."""
import contextlib
import io
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # `import queue_kit` (pytest runs with --import-mode=importlib)
os.environ.setdefault("DPCORE_SMALL", "1")
os.environ.setdefault("DPCORE_STORY_AUTOSTART", "0")  # the app tests would each train the Story pair

# `make test` runs two xdist workers on CI's two cores: one thread each (torch, BLAS, and the
# servers and CLIs the tests start, which inherit the variables), or four threads would spin on two
# cores; a lone `pytest` keeps two. A worker sets them outright: it inherits the controller's two.
THREADS = max(1, 2 // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    if "PYTEST_XDIST_WORKER" in os.environ:
        os.environ[_var] = str(THREADS)
    else:
        os.environ.setdefault(_var, str(THREADS))

# AIM and MST compile a few hundred small XLA programs per fit (8.6 of a 14.5 s AIM fit on credit):
# one compilation cache on disk for the run lets a worker, a CLI or a server the tests start reuse
# what another compiled. Made by the controller (the workers inherit it), removed at its end.
_JAX_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    import tempfile

    _JAX_CACHE = os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpcore-tests-jax-")
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(THREADS)


@pytest.fixture(autouse=True)
def _torch_threads():
    """Every test starts on THREADS torch threads: one that sets its own (or code under test that
    does) must not leave a worker spinning twice the threads for the rest of the session."""
    torch.set_num_threads(THREADS)


def pytest_unconfigure(config):
    if _JAX_CACHE is not None:  # this process made it: the controller, or a lone pytest
        import shutil

        shutil.rmtree(_JAX_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """Every test on the session's local Ray runs on one xdist worker (`--dist loadgroup`): a second
    Ray head on two cores costs 10–35 s to start and halves both."""
    for item in items:
        if "local_ray" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("ray"))


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
    from dpcore.jobs import sweep_ray

    pool, why = sweep_ray.connect(num_cpus=2)
    if pool is None:
        pytest.skip(why or "Ray unreachable")
    yield pool
    sweep_ray.shutdown()
