"""The teaching notebooks: committed without outputs, built from their sources, and they run.

Each notebook is executed top to bottom with nbclient in a fresh kernel, with DPCORE_SMALL=1 (tiny
models, fewer samples) and a per-cell timeout; any error fails the test. The kernel named "python3"
is pinned to the interpreter running the tests (the venv's), through a kernelspec written to a
temporary JUPYTER_PATH entry, which Jupyter searches before the user's and the system's kernels — so a
stray user-level "python3" kernel pointing at another Python cannot hijack the run.
"""
from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
EXPECTED = ("01_p3gm_step_by_step.ipynb", "02_privacy_accounting.ipynb",
            "03_attacks_and_tradeoffs.ipynb")
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
CELL_TIMEOUT_S = 120   # one cell; the whole notebook has to finish in about 60 s on two cores
NOTEBOOK_TIMEOUT_S = 300


def _ids(paths):
    return [p.stem for p in paths]


def test_the_three_notebooks_exist():
    assert {p.name for p in NOTEBOOKS} >= set(EXPECTED)


# ------------------------------------------------------------------------------- committed form
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_committed_notebook_has_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or an execution count; strip them " \
                      "(rebuild with notebooks/_build/build.py)"
    assert "widgets" not in nb.metadata, f"{path.name}: saved widget state in the metadata"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


def test_no_outputs_check_catches_an_executed_notebook(tmp_path):
    """The check above must be able to fail: a notebook with an output is flagged."""
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "P",
                                                           "language": "python"}})
    cell = nbformat.v4.new_code_cell("1 + 1", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)]
    nb.cells.append(cell)
    path = tmp_path / "99_dirty.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(AssertionError, match="outputs"):
        test_committed_notebook_has_no_outputs(path)


def _build_module():
    spec = importlib.util.spec_from_file_location("_nb_build", NOTEBOOK_DIR / "_build" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_notebooks_match_their_sources():
    build = _build_module()
    sources = build.sources()
    assert {build.target(s).name for s in sources} >= set(EXPECTED)
    for src in sources:
        assert build.target(src).read_text(encoding="utf-8") == build.render(build.build_notebook(src)), \
            f"{build.target(src).name} differs from {src.name}: run notebooks/_build/build.py"


# ------------------------------------------------------------------------------- execution
@pytest.fixture
def venv_kernel(tmp_path, monkeypatch):
    """A "python3" kernelspec that runs this interpreter, searched before any other."""
    kdir = tmp_path / "jupyter" / "kernels" / "python3"
    kdir.mkdir(parents=True)
    (kdir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (test venv)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("DPCORE_SMALL", "1")
    # The notebooks import dpcore like any user (an installed package); the kernel is pointed at the
    # working tree under test, so it never runs another checkout's installed copy.
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # torch in the kernel: two threads, like CI
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # quiet debugger warning at start-up
    return "python3"


def test_python3_kernel_resolves_to_this_interpreter(venv_kernel):
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(venv_kernel)
    assert Path(spec.argv[0]) == Path(sys.executable)


@pytest.mark.timeout(NOTEBOOK_TIMEOUT_S)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_runs_end_to_end(path, venv_kernel, record_property):
    from nbclient import NotebookClient
    from traitlets.config import Config

    nb = nbformat.read(path, as_version=4)
    # IPC sockets (absolute, short path) instead of TCP ports: no port race with other processes
    ipc_dir = Path(tempfile.mkdtemp(prefix="dpnb-"))
    config = Config({"KernelManager": {"transport": "ipc", "ip": str(ipc_dir / "kernel")}})
    client = NotebookClient(nb, kernel_name=venv_kernel, timeout=CELL_TIMEOUT_S, config=config,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    t0 = time.perf_counter()
    try:
        client.execute()  # raises CellExecutionError (with the traceback) on any failing cell
    finally:
        shutil.rmtree(ipc_dir, ignore_errors=True)
    seconds = time.perf_counter() - t0
    record_property("seconds", round(seconds, 1))
    print(f"{path.name}: {seconds:.1f} s")
    figures = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                  if "application/json" in o.get("data", {}) or
                  "application/vnd.plotly.v1+json" in o.get("data", {}))
    assert figures >= 2, f"{path.name} showed {figures} figure(s)"
    assert not any(o.get("output_type") == "error" for c in nb.cells for o in c.get("outputs", []))
