"""The Runs page's grid-sweep panel: start a sweep (grid text, seeds, backend), follow its
progress, stop it, and draw a finished sweep's Pareto front and heatmap.

Why a job (`dpcore.jobs.sweep.sweep_job`, started by `dpcore.jobs.jobs.start`): the page must stay
responsive while the runs train (in-process or on Ray); it polls the job's handle like any other.
Which models it offers and the grid it starts from are the models' own (`sweepable_models`,
`default_grid_text`), as for the ε sweep above it.
"""
from __future__ import annotations

import streamlit as st

from dpcore.errors import DPCoreError
from dpcore.text import md
from dpcore.ui.nav import runs_root

_KEY = "dpcore.grid_sweep"
_POLL = 1.0


def parse_grid_text(text: str) -> dict:
    """One axis per line (or ';'): "epsilon=0.5,1,2,4" → {"epsilon": ["0.5", …]}."""
    from dpcore.jobs.sweep import parse_grid

    return parse_grid([line for line in text.replace(";", "\n").splitlines() if line.strip()])


def start_sweep(model: str, grid_text: str, seeds: int, backend: str, data: dict, params: dict):
    """Validate everything (one-line DPCoreError) and start the sweep's job in the background."""
    from dpcore.jobs import jobs
    from dpcore.jobs.sweep import SweepSpec, sweep_job

    spec = SweepSpec(model=model, grid=parse_grid_text(grid_text), data=data, params=params, seeds=int(seeds))
    handle = jobs.start(sweep_job(spec, runs_root(), backend=backend))  # checks every point first
    st.session_state[_KEY] = handle
    return handle


def handle():
    """This session's grid sweep (a `dpcore.jobs.jobs.JobHandle`), if one was started."""
    return st.session_state.get(_KEY)


def progress_text(p: dict) -> str:
    total = p.get("total") or 0
    left = p.get("seconds_left")
    return (f"{p.get('done', 0)} of {total or '?'} runs finished" + (f" ({p['skipped']} already done)" if p.get("skipped") else "")
            + (f" · about {left:.0f} s left" if left is not None else ""))


def sweep_panel() -> None:
    """The whole panel: start form, live progress with Stop, and the views of a finished sweep."""
    from dpcore import ui

    st.subheader("Grid sweep", divider="gray")
    st.caption("Any parameters × seeds, each point a normal run (named after the sweep, so running it again "
               "skips finished runs); in-process or one run per Ray worker.")
    h = handle()
    busy = h is not None and h.is_alive()
    from dpcore.jobs.sweep import default_grid_text, sweepable_models

    models = sweepable_models()
    c1, c2, c3 = st.columns([1, 1, 1])
    model = c1.selectbox("Model", models, key="sweep.model", format_func=lambda m: ui.model_info(m)["label"])
    seeds = c2.number_input("Seeds per point", 1, 20, 1, key="sweep.seeds")
    backend = c3.radio("Backend", ("auto", "ray", "in-process"), horizontal=True, key="sweep.backend",
                       help="auto/ray: one run per Ray worker; in-process when Ray is missing")
    grid_text = st.text_area("Grid (one parameter per line: name=v1,v2,…)", default_grid_text(model),
                             key=f"sweep.grid.{model}")
    if st.button("Start grid sweep", type="primary", icon=":material/play_arrow:", key="sweep.start", disabled=busy):
        try:
            choice = ui.data_choice()
            data = {k: v for k, v in choice.items() if k in ui.data_config_fields()}
            train, _ = ui.load_data(choice)
            fitted = fit_to_data(model, ui.remembered_params(model), train, public_rows=ui.public_size(choice, train.n))
            start_sweep(model, grid_text, seeds, backend, data, fitted[0])
            st.rerun()
        except DPCoreError as exc:
            st.error(md(exc), icon=":material/error:")
    st.fragment(run_every=_POLL if busy else None)(_live)()
    _views()


def _live() -> None:
    h = handle()
    if h is None:
        return
    p = h.snapshot()
    st.progress(p["fraction"], text=progress_text(p))
    if h.error:
        st.error(f"The sweep stopped: {md(h.error)}", icon=":material/error:")
    if h.is_alive():
        if st.button("Stop sweep", icon=":material/stop:", key="sweep.stop"):
            h.stop()
    elif h.summary is not None:
        s = h.summary
        st.caption(f"Backend: {s['backend']}" + (f" — {s['note']}" if s.get("note") else "")
                   + (" · stopped: run it again to resume" if s.get("stopped") else ""))


def _views() -> None:
    from dpcore.figures.sweeps import METRICS, heatmap_figure, pareto_figure
    from dpcore.jobs.sweep import best_on_private_data, list_sweeps, load_summary

    names = list_sweeps(runs_root())
    if not names:
        st.caption("The Pareto front and heatmap appear once a sweep has finished.")
        return
    c1, c2 = st.columns([2, 1])
    name = c1.selectbox("Sweep", names, key="sweep.view")
    metric = c2.selectbox("Score", list(METRICS), key="sweep.metric", format_func=METRICS.get)
    try:
        summary = load_summary(runs_root(), name)
    except DPCoreError as exc:
        st.error(md(exc), icon=":material/error:")
        return
    st.plotly_chart(pareto_figure(summary, metric), key="sweep.pareto")
    grid = summary["sweep"]["grid"]
    axes = [k for k in grid if k != "epsilon"]
    if axes:
        a, b, c = st.columns(3)
        x = a.selectbox("Heatmap x", axes, index=axes.index("encoder_share") if "encoder_share" in axes else 0,
                        key="sweep.hx")
        rest = [k for k in axes if k != x] or [x]
        y = b.selectbox("Heatmap y", rest, index=rest.index("pca_dim") if "pca_dim" in rest else 0, key="sweep.hy")
        eps = sorted(set(grid.get("epsilon", []))) or [None]
        at = c.selectbox("at ε", eps, index=len(eps) - 1, key="sweep.heps")
        st.plotly_chart(heatmap_figure(summary, at, x, y, metric), key="sweep.heatmap")
    best = best_on_private_data(summary, metric)
    if best is not None:
        st.warning(f"{best['label']}: **{md(best['run'])}** ({metric} {best[metric]:.3f}, ε = {best['epsilon']:.3g}). "
                   "For a choice covered by ε use `python -m dpcore sweep … --select negative-binomial`.",
                   icon=":material/warning:")


def fit_to_data(model: str, params: dict, train, *, public_rows: int | None) -> tuple[dict, list[str]]:
    """The Train page's remembered settings adjusted to the active dataset, with what changed.

    Why: the settings were remembered on whatever dataset the Train page had then; a PCA dimension
    or a batch size chosen for Fashion-MNIST does not fit an 8-column table. Clamped like the Train
    page's widgets: pca_dim to the model's columns (features + one-hot label, from the schema); a
    batch_size not below `public_rows` becomes auto. `public_rows` is a built-in's training-row count
    (`ui.public_size`, a public fact) or None for a file: a file's exact n must not decide a setting
    the runs publish (batch 300 at n = 301, auto at 300), so its batch is left as chosen: one not
    below the rows is refused by the plan, to the data owner, before any run folder exists.
    """
    from dpcore.models import get_model
    from dpcore.ui.forms import config_fields

    defaults = {p.name: p.auto if p.default is None else p.default  # None = `auto`: its value
                for p in config_fields(get_model(model).config_class)}
    out = {**{k: defaults[k] for k in ("pca_dim",) if k in defaults and k not in params}, **params}
    changed: list[str] = []
    width = train.n_features + (train.n_classes if train.labels is not None else 0)
    top = max(1, min(width, 100))
    if out.get("pca_dim") is not None and int(out["pca_dim"]) > top:  # None: the plan adapts it
        changed.append(f"pca_dim {out['pca_dim']} → {top} (this dataset has {width} model columns)")
        out["pca_dim"] = top
    if public_rows is not None and out.get("batch_size") is not None and int(out["batch_size"]) >= public_rows:
        changed.append(f"batch_size {out['batch_size']} → auto (this dataset has fewer training rows)")
        out["batch_size"] = None
    return out, changed
