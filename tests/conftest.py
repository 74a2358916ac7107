"""Shared test settings: two CPU threads (what CI has), quiet, deterministic; the CLI in-process."""
import contextlib
import io
import os

os.environ.setdefault("DPCORE_SMALL", "1")
os.environ.setdefault("DPCORE_STORY_AUTOSTART", "0")  # the app tests would each train the Story pair

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(2)


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
