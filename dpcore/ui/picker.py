"""Saved runs for the pages: listing them, picking one, and the scores saved with them.

Why: Compare, Privacy and Runs all start from "which finished run?"; `choose_runs` is that shared
header (empty state included), so the pages only draw what they show about the chosen runs.
"""
from __future__ import annotations

import math
from pathlib import Path

import streamlit as st

from dpcore.ui.live import live_run


def run_summaries():
    """Every run of the folder the session looks at (`dpcore.runs.list_runs`; the runs root outside
    class mode, dpcore.ui.workspace.view_root in it), newest first."""
    from dpcore.runs.store import list_runs
    from dpcore.ui.workspace import view_root

    return list_runs(view_root())


def ceiling_pairs() -> str:
    """"PGM for P3GM, VAE for DP-VAE": each model declared the noise-free twin of a private one."""
    from dpcore.models import MODELS, family

    return ", ".join(f"{n.upper()} for {family(n).upper()}" for n in MODELS
                     if family(n) != n)


def model_runs() -> list:
    """Summaries of runs that have a usable model (done or stopped), newest first."""
    out = []
    for s in run_summaries():
        if s.status in ("done", "stopped") and (Path(s.path) / "model" / "model.json").is_file():
            out.append(s)
    return out


def run_label(summary) -> str:
    """What the run pickers show for a run: its name, model and dataset, nothing that changes.

    Why not its ε: the browser sends the chosen label back, and a label that changed since it was
    drawn (a run's ε after a released usefulness score) matches no option, so the box fell back to
    the first run at the next click: the Runs page jumped to another run after a score."""
    return f"{summary.name}  ·  {summary.model} on {summary.dataset}"


def run_picker(label: str, summaries: list, key: str, *, allow_none: bool = False, default: str | None = None):
    """A select box over run names showing model and dataset (`run_label`); the chosen name or None."""
    names = [s.name for s in summaries]
    info = {s.name: s for s in summaries}
    opts = (["(none)"] if allow_none else []) + names
    live = live_run()
    if default is None and not allow_none and live is not None and live.run_name in names:
        default = live.run_name
    index = opts.index(default) if default in opts else 0
    if key in st.session_state and st.session_state[key] not in opts:  # another workspace's run
        del st.session_state[key]

    def fmt(n):
        if n == "(none)":
            return "(none)"
        return run_label(info[n])

    choice = st.selectbox(label, opts, index=index, key=key, format_func=fmt)
    return None if choice == "(none)" else choice


def choose_runs(page: str, *, compare: bool = False) -> tuple[dict, str, str | None]:
    """The header of the pages that look at finished runs: (summaries by name, run, second run).

    With no usable run it points to the Train page and stops the script. Otherwise it draws the
    "Run" select box (key `{page}.run`) and, with `compare`, next to it an optional second run
    (key `{page}.other`, None when "(none)"). Summaries keep `model_runs`' order (newest first).
    """
    runs = model_runs()
    if not runs:
        st.info("No finished runs yet. Train one on the **Train** page.", icon=":material/info:")
        st.page_link("app_pages/train.py", label="Go to Train", icon=":material/model_training:")
        st.stop()
    second = None
    if compare:
        c1, c2 = st.columns(2)
        with c1:
            first = run_picker("Run", runs, f"{page}.run")
        with c2:
            second = run_picker("Compare with (optional)", [s for s in runs if s.name != first],
                                f"{page}.other", allow_none=True)
    else:
        first = run_picker("Run", runs, f"{page}.run")
    return {s.name: s for s in runs}, first, second


def headline_missing(path) -> bool:
    """True when a run has no saved utility or attack score yet."""
    from dpcore.report import headline, load_evaluation

    h = headline(load_evaluation(path))
    return h["attack"] is None or (h["utility"] is None and h["utility_metric"] is None)


def utility_points() -> list[dict]:
    """(model, dataset, ε, utility) of every scored run: the privacy–utility curve's points."""
    from dpcore.models import family
    from dpcore.report import headline, load_evaluation
    from dpcore.ui.tables import run_data, settings_label

    out = []
    for s in run_summaries():
        h = headline(load_evaluation(s.path))
        if h["utility"] is not None and not math.isnan(s.epsilon):
            label = settings_label(s.model, s.params or {}, run_data(s.path))
            out.append({"run": s.name, "model": s.model, "dataset": s.dataset, "epsilon": s.epsilon,
                        "series": f"{family(s.model)} {label}".strip(),  # PGM: P3GM's ε = ∞ end
                        "utility": h["utility"], "metric": h["utility_metric"], "reference": h["reference"]})
    return out
