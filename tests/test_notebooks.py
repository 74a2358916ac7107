"""The teaching notebooks: committed with outputs, executed from their current sources, and they run.

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
def _build_module():
    spec = importlib.util.spec_from_file_location("_nb_build", NOTEBOOK_DIR / "_build" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build = _build_module()
SOURCES = build.sources()


def test_every_notebook_has_a_source():
    assert {build.target(s).name for s in SOURCES} >= set(EXPECTED)


@pytest.mark.parametrize("source", SOURCES, ids=_ids(SOURCES))
def test_committed_notebook_is_the_executed_build_of_its_source(source):
    """Committed with outputs, made by build.py from the current source: cells, stamp, run order."""
    found = build.problems(build.target(source), source)
    assert not found, f"{build.target(source).name}: {'; '.join(found)} — run notebooks/_build/build.py"


def _executed_copy(tmp_path, source):
    """A notebook as build.py would commit it, without running a kernel: outputs filled in by hand."""
    nb = build.build_notebook(source)
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.execution_count = i + 1
        cell.outputs = [nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo=", "text/plain": "fig"})]
    nb = build._tidy(nb, source)
    path = tmp_path / build.target(source).name
    nbformat.write(nb, path)
    return path


def test_currency_check_passes_a_correct_build_and_catches_each_defect(tmp_path):
    """The check above must be able to fail: each way a committed notebook goes stale is flagged."""
    source = SOURCES[0]
    path = _executed_copy(tmp_path, source)
    assert build.problems(path, source) == []

    nb = nbformat.read(path, as_version=4)
    nb.cells[-1].source += "\nprint('edited in JupyterLab, not in the source')"
    nbformat.write(nb, path)
    assert any("cells differ" in p for p in build.problems(path, source))

    edited = tmp_path / source.name  # the source changed after the outputs were made
    edited.write_text(source.read_text(encoding="utf-8") + "\n# a comment\n", encoding="utf-8")
    assert any("not made from the current" in p for p in build.problems(_executed_copy(tmp_path, source), edited))

    nb = nbformat.read(_executed_copy(tmp_path, source), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    code[1].execution_count = None
    code[2].outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="x", traceback=[])]
    nbformat.write(nb, path)
    found = build.problems(path, source)
    assert any("in order" in p for p in found) and any("failed" in p for p in found)

    nb = build.build_notebook(source)  # the old committed form: no outputs at all
    nbformat.write(nb, path)
    found = build.problems(path, source)
    assert any("in order" in p for p in found) and any("no figure" in p for p in found)


def test_build_check_exits_1_naming_a_stale_notebook(tmp_path, monkeypatch, capsys):
    source = SOURCES[0]
    monkeypatch.setattr(build, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(build, "sources", lambda: [source])
    nbformat.write(build.build_notebook(source), tmp_path / build.target(source).name)
    assert build.main(["--check"]) == 1
    assert build.target(source).name in capsys.readouterr().err
    _executed_copy(tmp_path, source)
    assert build.main(["--check"]) == 0


def test_build_leaves_a_notebook_edited_since_its_build_alone(tmp_path, monkeypatch, capsys):
    """Somebody's edits in JupyterLab are not overwritten by `make notebooks`; --force would."""
    source = SOURCES[0]
    monkeypatch.setattr(build, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(build, "sources", lambda: [source])
    monkeypatch.setattr(build, "execute", lambda src: pytest.fail("must not execute an edited notebook"))
    path = _executed_copy(tmp_path, source)
    nb = nbformat.read(path, as_version=4)
    nb.cells[-1].source += "\n# my note"
    nbformat.write(nb, path)
    before = path.read_bytes()
    assert build.main([]) == 0
    assert path.read_bytes() == before
    assert "left alone" in capsys.readouterr().out


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
