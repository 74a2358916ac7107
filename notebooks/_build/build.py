"""Build the teaching notebooks from their percent-format sources (the master copies).

Each `notebooks/_build/NN_name.py` is plain Python with cell markers: `# %%` starts a code cell,
`# %% [markdown]` a markdown cell whose lines are comments (`# text`). Running this script writes
`notebooks/NN_name.ipynb` without outputs (execution_count null), which is what gets committed.

    .venv/bin/python notebooks/_build/build.py           # rebuild every notebook
    .venv/bin/python notebooks/_build/build.py --check   # exit 1 if a notebook is out of date

Why sources in .py: reviewable diffs, and a source can be run as a script while writing it
(`cd notebooks && DPCORE_SMALL=1 ../.venv/bin/python _build/01_p3gm_step_by_step.py`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

BUILD = Path(__file__).resolve().parent
NOTEBOOKS = BUILD.parent
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def sources() -> list[Path]:
    """The notebook sources, in order (files named NN_*.py)."""
    return sorted(p for p in BUILD.glob("[0-9][0-9]_*.py"))


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
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    for i, (kind, body) in enumerate(parse_cells(source.read_text(encoding="utf-8"))):
        cell = (nbformat.v4.new_markdown_cell(body) if kind == "markdown"
                else nbformat.v4.new_code_cell(body))
        cell["id"] = f"{source.stem[:2]}-{i:03d}"  # stable ids: rebuilding gives identical files
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def target(source: Path) -> Path:
    return NOTEBOOKS / f"{source.stem}.ipynb"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that the notebooks are up to date")
    args = ap.parse_args(argv)
    stale = []
    for src in sources():
        text, out = render(build_notebook(src)), target(src)
        if args.check:
            if not out.exists() or out.read_text(encoding="utf-8") != text:
                stale.append(out.name)
        else:
            out.write_text(text, encoding="utf-8")
            print(f"wrote {out.relative_to(NOTEBOOKS.parent)}")
    if stale:
        print("out of date (run notebooks/_build/build.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
