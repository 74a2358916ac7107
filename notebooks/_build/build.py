"""Build the teaching notebooks from their percent-format sources and execute them.

Each `notebooks/_build/NN_name.py` is plain Python with cell markers: `# %%` starts a code cell,
`# %% [markdown]` a markdown cell whose lines are comments (`# text`). The committed
`notebooks/NN_name.ipynb` holds those cells *with their outputs*, so a class reads the plots on GitHub
or in JupyterLab before running anything. Outputs come only from this script: it executes the
notebook top to bottom in a fresh kernel on the full settings, figures as PNG (GitHub) plus plotly's
JSON (interactive in JupyterLab), and stamps the source's SHA-256 into the notebook's metadata.

    .venv/bin/python notebooks/_build/build.py           # execute the notebooks whose source changed
    .venv/bin/python notebooks/_build/build.py --force   # execute every notebook again
    .venv/bin/python notebooks/_build/build.py --check   # exit 1 if a notebook is not current

"Current" (what CI checks) means: the cells are exactly the source's, the stamp is the source's hash,
every code cell ran once in order and none failed. The numbers themselves differ from run to run —
the noise is secret — so CI cannot compare them; it executes a small version of each notebook
instead (tests/test_notebooks.py).

Why sources in .py: reviewable diffs, and a source can be run as a script while writing it
(`cd notebooks && DPCORE_SMALL=1 ../.venv/bin/python _build/01_p3gm_step_by_step.py`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat

BUILD = Path(__file__).resolve().parent
NOTEBOOKS = BUILD.parent
ROOT = NOTEBOOKS.parent
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
# PNG for GitHub's viewer, plotly's own JSON for JupyterLab: one output bundle carries both.
COMMITTED_RENDERER = "plotly_mimetype+png"
FIGURE_MIMES = ("image/png", "application/vnd.plotly.v1+json")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"  # needs a live kernel: never committed
CELL_TIMEOUT_S = 1800


def sources() -> list[Path]:
    """The notebook sources, in order (files named NN_*.py)."""
    return sorted(p for p in BUILD.glob("[0-9][0-9]_*.py"))


def target(source: Path) -> Path:
    return NOTEBOOKS / f"{source.stem}.ipynb"


def _shown(path: Path) -> Path:
    """A path relative to the repository when it is inside it (for messages)."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def source_hash(source: Path) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest()


def parse_cells(text: str) -> list[tuple[str, str]]:
    """[(kind, source)] from percent-format text; kind is "code" or "markdown"."""
    cells: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            cells.append(("markdown" if "[markdown]" in line else "code", []))
        elif cells:
            cells[-1][1].append(line)
        elif line.strip():
            raise ValueError("text before the first '# %%' marker")
    out = []
    for kind, lines in cells:
        if kind == "markdown":
            lines = [ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in lines]
        body = "\n".join(lines).strip("\n")
        if body:
            out.append((kind, body))
    return out


def build_notebook(source: Path) -> nbformat.NotebookNode:
    """The notebook's cells from its source, without outputs."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    for i, (kind, body) in enumerate(parse_cells(source.read_text(encoding="utf-8"))):
        cell = (nbformat.v4.new_markdown_cell(body) if kind == "markdown"
                else nbformat.v4.new_code_cell(body))
        cell["id"] = f"{source.stem[:2]}-{i:03d}"  # stable ids: rebuilding gives identical cells
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


# ------------------------------------------------------------------------------- execution
def _kernel_env(jupyter_path: Path) -> dict[str, str]:
    """A "python3" kernel that runs this interpreter on this checkout, searched before any other."""
    kdir = jupyter_path / "kernels" / "python3"
    kdir.mkdir(parents=True)
    (kdir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": KERNELSPEC["display_name"], "language": "python"}))
    return {"JUPYTER_PATH": str(jupyter_path), "PYTHONPATH": str(ROOT), "PLOTLY_RENDERER": COMMITTED_RENDERER,
            "PYDEVD_DISABLE_FILE_VALIDATION": "1"}


def execute(source: Path) -> nbformat.NotebookNode:
    """Run the notebook built from `source` on its full settings; return it with its outputs."""
    from nbclient import NotebookClient
    from traitlets.config import Config

    nb = build_notebook(source)
    scratch = Path(tempfile.mkdtemp(prefix="dpnb-build-"))
    saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "PYTHONPATH", "PLOTLY_RENDERER",
                                            "PYDEVD_DISABLE_FILE_VALIDATION", "DPCORE_SMALL")}
    try:
        os.environ.update(_kernel_env(scratch / "jupyter"))
        os.environ.pop("DPCORE_SMALL", None)  # the committed outputs are the full settings
        config = Config({"KernelManager": {"transport": "ipc", "ip": str(scratch / "kernel")}})
        client = NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT_S, config=config,
                                record_timing=False, store_widget_state=False,
                                resources={"metadata": {"path": str(NOTEBOOKS)}})
        client.execute()  # raises CellExecutionError (with the traceback) on any failing cell
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(scratch, ignore_errors=True)
    return _tidy(nb, source)


def _tidy(nb: nbformat.NotebookNode, source: Path) -> nbformat.NotebookNode:
    """Drop what only a live kernel can show, keep the file independent of the machine that built it."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = [o for o in cell.outputs if WIDGET_MIME not in o.get("data", {}) and not _export_noise(o)]
        cell.metadata.pop("execution", None)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata.pop("widgets", None)
    nb.metadata["dpcore"] = {"source": source.name, "source_sha256": source_hash(source)}
    nbformat.validate(nb)
    return nb


def _cannot_export_png() -> str | None:
    """Why the committed figures' PNGs cannot be made here (kaleido drives a headless Chromium)."""
    try:
        import plotly.graph_objects as go

        go.Figure(go.Scatter(x=[0, 1], y=[0, 1])).to_image(format="png", width=60, height=40)
    except Exception as e:  # noqa: BLE001 - any failure means the same thing: no PNGs on this machine
        return (f"cannot draw the figures as PNG ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}); "
                "install kaleido (requirements.txt) and chromium (scripts/install_system.sh)")
    return None


def _export_noise(output) -> bool:
    """A log line of the PNG exporter (kaleido's browser driver) on stderr: the build's, not the lesson's."""
    return (output.get("output_type") == "stream" and output.get("name") == "stderr"
            and any(word in output.get("text", "") for word in ("choreographer", "kaleido", "JSONError")))


# ------------------------------------------------------------------------------- currency check
def _stamp(notebook: Path) -> str | None:
    """The source hash a built notebook carries (None when it has none or cannot be read)."""
    try:
        return json.loads(notebook.read_text(encoding="utf-8"))["metadata"]["dpcore"]["source_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def problems(notebook: Path, source: Path) -> list[str]:
    """Why `notebook` is not the executed build of `source` (empty when it is current)."""
    if not notebook.exists():
        return ["missing"]
    nb = nbformat.read(notebook, as_version=4)
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as e:
        return [f"not a valid notebook ({e.message})"]
    found: list[str] = []
    want = build_notebook(source).cells
    have = [(c.cell_type, c.get("id"), c.source) for c in nb.cells]
    if have != [(c.cell_type, c.get("id"), c.source) for c in want]:
        found.append(f"its cells differ from {source.name}")
    if nb.metadata.get("dpcore", {}).get("source_sha256") != source_hash(source):
        found.append(f"its outputs were not made from the current {source.name}")
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in code]
    if counts != list(range(1, len(code) + 1)):
        found.append("its code cells did not all run once, in order")
    if any(o.get("output_type") == "error" for c in code for o in c.get("outputs", [])):
        found.append("a cell failed")
    if not any(m in o.get("data", {}) for c in code for o in c.get("outputs", []) for m in FIGURE_MIMES):
        found.append("it shows no figure")
    if "widgets" in nb.metadata or any(WIDGET_MIME in o.get("data", {}) for c in code
                                       for o in c.get("outputs", [])):
        found.append("it holds widget state that only a live kernel can show")
    if nb.metadata.get("kernelspec", {}).get("name") != "python3":
        found.append("its kernel is not python3")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="only check that the notebooks are current")
    mode.add_argument("--force", action="store_true", help="execute every notebook, current or not")
    args = ap.parse_args(argv)
    stale = {src: problems(target(src), src) for src in sources()}
    if args.check:
        bad = {s: p for s, p in stale.items() if p}
        for src, why in bad.items():
            print(f"{target(src).name}: " + "; ".join(why), file=sys.stderr)
        if bad:
            print("rebuild with: .venv/bin/python notebooks/_build/build.py", file=sys.stderr)
        return 1 if bad else 0
    todo = {s: w for s, w in stale.items() if w or args.force}
    # Built from this very source, changed since (edited or re-run in JupyterLab): somebody's work.
    hand_edited = [s for s in todo if not args.force and _stamp(target(s)) == source_hash(s)]
    for src in hand_edited:
        print(f"{_shown(target(src))} was edited or re-run since its build; left alone "
              f"(put the change in {_shown(src)}, or --force to rebuild it from there)")
        del todo[src]
    for src in stale:
        if src not in todo and src not in hand_edited:
            print(f"{_shown(target(src))} is current")
    if todo and (why := _cannot_export_png()):
        print(f"error: {why}", file=sys.stderr)
        return 2
    for src, why in todo.items():
        out = target(src)
        print(f"executing {_shown(out)} ({'; '.join(why) or 'forced'}) ...", flush=True)
        t0 = time.perf_counter()
        out.write_text(render(execute(src)), encoding="utf-8")
        print(f"wrote {_shown(out)} in {time.perf_counter() - t0:.0f} s "
              f"({out.stat().st_size / 1e6:.1f} MB)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
